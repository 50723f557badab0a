//! HTTP-level tests of router management (BEHAVIOR 15): create, the draft with its `ETag`,
//! publish and unpublish, revisions and restore, archive; their status codes and messages,
//! the one validator's 400s naming JSON paths, `Idempotency-Key`, the router limit, dispatch
//! naming the revision it evaluated, the rotation state across a publish, and dispatches racing
//! a publish. Every test runs on the embedded store and on DynamoDB (the emulator of
//! `bash infra/scripts/test.sh`).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{json, Value};
use std::sync::Arc;

const INBOUND_ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const ARCHIVED_ROUTER: &str = "9a5b6c78-d9ea-4fb5-a0c7-d24d5e6f7a90";
const BEN: &str = "ben.okafor@northwind.example";
const CHEN: &str = "chen.wei@northwind.example";

// Each body `async fn name(app: TestApp)` runs on both stores, over the demo seed.
shared::on_both_stores!(
    with app_on:
    a_router_is_created_drafted_published_listed_restored_and_published_again,
    every_status_of_the_draft_and_publish_rules,
    an_archived_router_refuses_writes_keeps_its_revisions_and_dispatches_nothing,
    a_configuration_is_refused_naming_the_json_path_of_its_first_problem,
    idempotency_keys_replay_creates_and_publishes_before_any_if_match_check,
    dispatch_names_the_revision_it_evaluated_and_follows_publication,
    round_robin_continues_across_a_publish,
    a_percentage_router_restarts_its_counts_when_its_weights_change,
    dispatches_racing_a_publish_never_commit_by_the_replaced_revision,
    a_draft_is_replayed_over_http_and_explained_by_revision,
);

/// A round robin contacts router over Ben and Chen, available at any hour.
fn round_robin(name: &str) -> Value {
    json!({
        "name": name,
        "object_type": "contacts",
        "settings": {
            "owner_field": "contact_owner",
            "distribution_model": "round robin",
            "ignore_working_hours": true,
            "overwrite": true
        },
        "users": [{"email": BEN}, {"email": CHEN}],
        "teams": []
    })
}

impl TestApp {
    async fn create_router(&self, t: &str, body: Value) -> String {
        let a = self.call(Method::POST, "/routers", t, Some(body)).await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
        a.body["id"].as_str().unwrap().to_string()
    }

    /// Writes the draft and publishes it; the router as answered.
    async fn publish_config(&self, t: &str, id: &str, body: Value) -> Value {
        let put = self
            .call(Method::PUT, &format!("/routers/{id}/draft"), t, Some(body))
            .await;
        assert_eq!(put.status, StatusCode::OK, "{}", put.body);
        let etag = etag(&put);
        let published = self
            .with_headers(
                Method::POST,
                &format!("/routers/{id}/publish"),
                t,
                &[("if-match", &etag)],
                None,
            )
            .await;
        assert_eq!(published.status, StatusCode::OK, "{}", published.body);
        published.body
    }
}

fn etag(a: &Answer) -> String {
    a.headers
        .get("etag")
        .expect("an ETag header")
        .to_str()
        .unwrap()
        .to_string()
}

fn assert_error(a: &Answer, status: StatusCode, message: &str) {
    assert_eq!(a.status, status, "{}", a.body);
    assert_eq!(a.body["message"], message, "{}", a.body);
    assert_eq!(a.body["error"], true);
}

async fn a_router_is_created_drafted_published_listed_restored_and_published_again(app: TestApp) {
    let t = app.northwind().await;
    let created = app
        .call(Method::POST, "/routers", &t, Some(round_robin("Web leads")))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let r = &created.body;
    assert_eq!(
        (
            &r["revision"],
            &r["is_published"],
            &r["archived"],
            &r["name"]
        ),
        (&json!(1), &json!(false), &json!(false), &json!("Web leads"))
    );
    assert_eq!(r["users"], json!([{"email": BEN}, {"email": CHEN}]));
    assert_eq!(r["settings"]["default_user"], Value::Null);
    let id = r["id"].as_str().unwrap().to_string();
    let got = app
        .call(Method::GET, &format!("/routers/{id}"), &t, None)
        .await;
    assert_eq!(got.body, created.body);
    let listed = app.call(Method::GET, "/routers?limit=100", &t, None).await;
    assert!(listed.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["id"] == id.as_str()));

    let revisions = app
        .call(Method::GET, &format!("/routers/{id}/revisions"), &t, None)
        .await;
    assert_eq!(revisions.status, StatusCode::OK);
    assert_eq!(revisions.body["data"][0]["revision"], 1);
    assert_eq!(revisions.body["data"][0]["published_by"], NORTHWIND.0);
    assert_eq!(
        revisions.body["data"][0]["users"],
        json!([{"email": BEN, "percentage": null}, {"email": CHEN, "percentage": null}])
    );

    let draft_uri = format!("/routers/{id}/draft");
    assert_error(
        &app.call(Method::GET, &draft_uri, &t, None).await,
        StatusCode::NOT_FOUND,
        "Draft not found",
    );
    let mut second = round_robin("Web leads v2");
    second["users"] = json!([{"email": CHEN}]);
    let put = app.call(Method::PUT, &draft_uri, &t, Some(second)).await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    let keys: Vec<&str> = put
        .body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "router_id",
            "based_on_revision",
            "name",
            "object_type",
            "has_integration",
            "settings",
            "users",
            "teams",
            "updated_at",
            "updated_by"
        ]
    );
    assert_eq!(put.body["based_on_revision"], 1);
    assert_eq!(put.body["updated_by"], NORTHWIND.0);
    assert_eq!(put.body["object_type"], "contacts");
    let tag = etag(&put);
    let read = app.call(Method::GET, &draft_uri, &t, None).await;
    assert_eq!(
        (read.body.clone(), etag(&read)),
        (put.body.clone(), tag.clone())
    );
    // The draft changes nothing live.
    let live = app
        .call(Method::GET, &format!("/routers/{id}"), &t, None)
        .await;
    assert_eq!(live.body["name"], "Web leads");

    let publish_uri = format!("/routers/{id}/publish");
    let published = app
        .with_headers(
            Method::POST,
            &publish_uri,
            &t,
            &[("if-match", &tag)],
            Some(json!({})),
        )
        .await;
    assert_eq!(published.status, StatusCode::OK, "{}", published.body);
    assert_eq!(
        (
            &published.body["revision"],
            &published.body["is_published"],
            &published.body["name"]
        ),
        (&json!(2), &json!(true), &json!("Web leads v2"))
    );
    assert_error(
        &app.call(Method::GET, &draft_uri, &t, None).await,
        StatusCode::NOT_FOUND,
        "Draft not found",
    );
    let revisions = app
        .call(Method::GET, &format!("/routers/{id}/revisions"), &t, None)
        .await;
    let numbers: Vec<&Value> = revisions.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["revision"])
        .collect();
    assert_eq!(numbers, [&json!(2), &json!(1)]);

    // Roll back: restore 1, then publish: revision 3 holds revision 1's configuration.
    let one = app
        .call(Method::GET, &format!("/routers/{id}/revisions/1"), &t, None)
        .await;
    assert_eq!(one.body["name"], "Web leads");
    let restored = app
        .call(
            Method::POST,
            &format!("/routers/{id}/revisions/1/restore"),
            &t,
            None,
        )
        .await;
    assert_eq!(restored.status, StatusCode::OK, "{}", restored.body);
    assert_eq!(restored.body["based_on_revision"], 1);
    assert_eq!(restored.body["name"], "Web leads");
    let tag = etag(&restored);
    let again = app
        .with_headers(Method::POST, &publish_uri, &t, &[("if-match", &tag)], None)
        .await;
    assert_eq!(again.body["revision"], 3);
    assert_eq!(
        again.body["users"],
        json!([{"email": BEN}, {"email": CHEN}])
    );
    let three = app
        .call(Method::GET, &format!("/routers/{id}/revisions/3"), &t, None)
        .await;
    assert_eq!(three.body["name"], "Web leads");
    // Pages walk newest first with offsets and cursors.
    let page = app
        .call(
            Method::GET,
            &format!("/routers/{id}/revisions?limit=1&offset=1"),
            &t,
            None,
        )
        .await;
    assert_eq!(page.body["data"][0]["revision"], 2);
    let after = page.body["pagination"]["next_after"]
        .as_str()
        .unwrap()
        .to_string();
    let next = app
        .call(
            Method::GET,
            &format!("/routers/{id}/revisions?limit=5&after={after}"),
            &t,
            None,
        )
        .await;
    assert_eq!(next.body["data"][0]["revision"], 1);
    assert_eq!(next.body["pagination"]["next_after"], Value::Null);
    // A seeded router is revision 1 by provisioning.
    let seeded = app
        .call(
            Method::GET,
            &format!("/routers/{INBOUND_ROUTER}/revisions/1"),
            &t,
            None,
        )
        .await;
    assert_eq!(seeded.body["published_by"], "provisioning");
    let seeded = app
        .call(Method::GET, &format!("/routers/{INBOUND_ROUTER}"), &t, None)
        .await;
    assert_eq!(seeded.body["revision"], 1);
}

async fn every_status_of_the_draft_and_publish_rules(app: TestApp) {
    let t = app.northwind().await;
    let read_only = app.token(NORTHWIND_READONLY, "service-api/read").await;
    let id = app.create_router(&t, round_robin("Rules")).await;
    let draft = format!("/routers/{id}/draft");
    let publish = format!("/routers/{id}/publish");
    let stale = "\"00000000000000000000000000000000\"";

    // Scopes: writes need update (create: create; archive: delete).
    for (method, uri) in [
        (Method::PUT, draft.clone()),
        (Method::DELETE, draft.clone()),
        (Method::POST, publish.clone()),
        (Method::POST, format!("/routers/{id}/unpublish")),
        (Method::POST, format!("/routers/{id}/revisions/1/restore")),
        (Method::POST, "/routers".to_string()),
        (Method::DELETE, format!("/routers/{id}")),
    ] {
        let a = app
            .call(method.clone(), &uri, &read_only, Some(json!({})))
            .await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{method} {uri}");
    }
    // 400 for an id that is not a UUID; 404 for an unknown router, draft or revision.
    let a = app.call(Method::GET, "/routers/nope/draft", &t, None).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(a.body["field"], "routerId");
    let unknown = "00000000-0000-4000-8000-000000000000";
    for (method, uri) in [
        (Method::GET, format!("/routers/{unknown}/draft")),
        (Method::PUT, format!("/routers/{unknown}/draft")),
        (Method::POST, format!("/routers/{unknown}/publish")),
        (Method::GET, format!("/routers/{unknown}/revisions")),
        (Method::DELETE, format!("/routers/{unknown}")),
    ] {
        let a = app
            .call(method.clone(), &uri, &t, Some(round_robin("x")))
            .await;
        assert_error(&a, StatusCode::NOT_FOUND, "Router not found");
    }
    for n in ["0", "x", "-1", "2", "1.0"] {
        let a = app
            .call(
                Method::GET,
                &format!("/routers/{id}/revisions/{n}"),
                &t,
                None,
            )
            .await;
        assert_error(&a, StatusCode::NOT_FOUND, "Revision not found");
        let a = app
            .call(
                Method::POST,
                &format!("/routers/{id}/revisions/{n}/restore"),
                &t,
                None,
            )
            .await;
        assert_error(&a, StatusCode::NOT_FOUND, "Revision not found");
    }
    // Without a draft: DELETE is 404, any If-Match is 412; a publish only publishes.
    assert_error(
        &app.call(Method::DELETE, &draft, &t, None).await,
        StatusCode::NOT_FOUND,
        "Draft not found",
    );
    for (method, uri) in [
        (Method::DELETE, draft.clone()),
        (Method::POST, publish.clone()),
    ] {
        let a = app
            .with_headers(method, &uri, &t, &[("if-match", "*")], None)
            .await;
        assert_error(&a, StatusCode::PRECONDITION_FAILED, "Draft has changed");
    }
    let a = app
        .with_headers(
            Method::PUT,
            &draft,
            &t,
            &[("if-match", stale)],
            Some(round_robin("x")),
        )
        .await;
    assert_error(&a, StatusCode::PRECONDITION_FAILED, "Draft has changed");
    let only = app.call(Method::POST, &publish, &t, None).await;
    assert_eq!(only.status, StatusCode::OK, "{}", only.body);
    assert_eq!(
        (&only.body["is_published"], &only.body["revision"]),
        (&json!(true), &json!(1))
    );
    // With a draft: publish needs If-Match (428), a stale one is 412; PUT and DELETE check it
    // when sent; a malformed one never holds (412).
    let put = app
        .call(Method::PUT, &draft, &t, Some(round_robin("v2")))
        .await;
    let first_tag = etag(&put);
    assert_error(
        &app.call(Method::POST, &publish, &t, None).await,
        StatusCode::PRECONDITION_REQUIRED,
        "If-Match required",
    );
    assert_error(
        &app.with_headers(Method::POST, &publish, &t, &[("if-match", stale)], None)
            .await,
        StatusCode::PRECONDITION_FAILED,
        "Draft has changed",
    );
    let a = app
        .with_headers(
            Method::POST,
            &publish,
            &t,
            &[("if-match", "not quoted")],
            None,
        )
        .await;
    assert_error(&a, StatusCode::PRECONDITION_FAILED, "Draft has changed");
    let replaced = app
        .with_headers(
            Method::PUT,
            &draft,
            &t,
            &[("if-match", &first_tag)],
            Some(round_robin("v3")),
        )
        .await;
    assert_eq!(replaced.status, StatusCode::OK);
    let second_tag = etag(&replaced);
    assert_ne!(first_tag, second_tag, "every write has a new tag");
    assert_eq!(replaced.body["based_on_revision"], 1);
    for (method, body) in [
        (Method::PUT, Some(round_robin("v4"))),
        (Method::DELETE, None),
    ] {
        let a = app
            .with_headers(method, &draft, &t, &[("if-match", &first_tag)], body)
            .await;
        assert_error(&a, StatusCode::PRECONDITION_FAILED, "Draft has changed");
    }
    let a = app
        .with_headers(
            Method::POST,
            &publish,
            &t,
            &[("if-match", &first_tag)],
            None,
        )
        .await;
    assert_error(&a, StatusCode::PRECONDITION_FAILED, "Draft has changed");
    // Publish, unpublish and restore take no body.
    let a = app
        .with_headers(
            Method::POST,
            &publish,
            &t,
            &[("if-match", &second_tag)],
            Some(json!({"name": "x"})),
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(a.body["field"], "name");
    let deleted = app
        .with_headers(
            Method::DELETE,
            &draft,
            &t,
            &[("if-match", &second_tag)],
            None,
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let unpublished = app
        .call(
            Method::POST,
            &format!("/routers/{id}/unpublish"),
            &t,
            Some(json!({})),
        )
        .await;
    assert_eq!(unpublished.status, StatusCode::OK);
    assert_eq!(unpublished.body["is_published"], false);
    // Methods the paths do not define: 405 with Allow.
    let a = app
        .call(Method::PATCH, &format!("/routers/{id}"), &t, None)
        .await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(a.headers["allow"], "GET, DELETE");
    let a = app.call(Method::POST, &draft, &t, None).await;
    assert_eq!(a.headers["allow"], "GET, PUT, DELETE");
}

async fn an_archived_router_refuses_writes_keeps_its_revisions_and_dispatches_nothing(
    app: TestApp,
) {
    let t = app.northwind().await;
    let id = app.create_router(&t, round_robin("Short-lived")).await;
    app.publish_config(&t, &id, round_robin("Short-lived v2"))
        .await;
    let put = app
        .call(
            Method::PUT,
            &format!("/routers/{id}/draft"),
            &t,
            Some(round_robin("v3")),
        )
        .await;
    let tag = etag(&put);
    let contact = app.new_contact(&t).await;
    let archived = app
        .call(Method::DELETE, &format!("/routers/{id}"), &t, None)
        .await;
    assert_eq!(archived.status, StatusCode::OK, "{}", archived.body);
    assert!(archived.body["archived"].is_string());
    assert_eq!(archived.body["archived_by"], NORTHWIND.0);
    assert_error(
        &app.call(Method::DELETE, &format!("/routers/{id}"), &t, None)
            .await,
        StatusCode::NOT_FOUND,
        "Router not found",
    );
    // The draft is dropped; every write is 409, before any If-Match check.
    assert_error(
        &app.call(Method::GET, &format!("/routers/{id}/draft"), &t, None)
            .await,
        StatusCode::NOT_FOUND,
        "Draft not found",
    );
    for (method, uri) in [
        (Method::PUT, format!("/routers/{id}/draft")),
        (Method::DELETE, format!("/routers/{id}/draft")),
        (Method::POST, format!("/routers/{id}/publish")),
        (Method::POST, format!("/routers/{id}/unpublish")),
        (Method::POST, format!("/routers/{id}/revisions/1/restore")),
    ] {
        let a = app
            .with_headers(
                method.clone(),
                &uri,
                &t,
                &[("if-match", &tag)],
                Some(round_robin("x")),
            )
            .await;
        assert_error(&a, StatusCode::CONFLICT, "Router is archived");
    }
    let revisions = app
        .call(Method::GET, &format!("/routers/{id}/revisions"), &t, None)
        .await;
    assert_eq!(revisions.body["data"].as_array().unwrap().len(), 2);
    let answer = app.dispatch(&t, &id, &contact).await;
    assert_eq!(answer, json!({"message": "Router not found"}));
    // A seeded archived router too.
    let a = app
        .call(
            Method::POST,
            &format!("/routers/{ARCHIVED_ROUTER}/unpublish"),
            &t,
            None,
        )
        .await;
    assert_error(&a, StatusCode::CONFLICT, "Router is archived");
}

async fn a_configuration_is_refused_naming_the_json_path_of_its_first_problem(app: TestApp) {
    let t = app.northwind().await;
    let id = app.create_router(&t, round_robin("Valid")).await;
    let before = app
        .call(Method::GET, "/routers?limit=100&archived=true", &t, None)
        .await;
    let percent = |users: Value| {
        let mut b = round_robin("P");
        b["settings"]["distribution_model"] = json!("percentage");
        b["users"] = users;
        b
    };
    let edit = |f: fn(&mut Value)| {
        let mut b = round_robin("R");
        f(&mut b);
        b
    };
    let cases: Vec<(Value, &str)> = vec![
        (edit(|b| b["name"] = json!("")), "name"),
        (edit(|b| b["name"] = json!("n".repeat(257))), "name"),
        (
            edit(|b| b["users"][1]["email"] = json!("ghost@northwind.example")),
            "users[1].email",
        ),
        (edit(|b| b["users"][0]["percentage"] = json!(50)), "users"),
        (
            percent(json!([{"email": BEN, "percentage": 60}, {"email": CHEN, "percentage": 30}])),
            "users",
        ),
        (
            percent(json!([{"email": BEN, "percentage": 150}, {"email": CHEN}])),
            "users",
        ),
        (
            percent(json!([{"email": BEN, "percentage": 100}, {"email": CHEN}])),
            "users",
        ),
        (
            edit(|b| b["teams"] = json!([{"name": "Nope"}])),
            "teams[0].name",
        ),
        (
            edit(|b| b["settings"]["owner_field"] = json!("first_name")),
            "settings.owner_field",
        ),
        (
            edit(|b| b["settings"]["default_user"] = json!("ghost@x.example")),
            "settings.default_user",
        ),
        (
            edit(
                |b| b["settings"]["trigger"] = json!({"groups": [{"conditions": [{"field": "country", "operator": "eq", "value": "US"}]}]}),
            ),
            "settings.trigger.groups[0].conditions[0].operator",
        ),
        (
            edit(
                |b| b["settings"]["trigger"] = json!({"groups": [{"conditions": [{"field": "nope", "operator": "equals", "value": "US"}]}]}),
            ),
            "settings.trigger.groups[0].conditions[0].field",
        ),
        (
            edit(|b| b["settings"]["sla"] = json!({"minutes": 0, "worked_field": "lead_status"})),
            "settings.sla.minutes",
        ),
        (
            edit(|b| b["settings"]["rotation_type"] = json!("teams")),
            "settings.rotation_type",
        ),
        (
            edit(|b| b["settings"]["surprise"] = json!(1)),
            "settings.surprise",
        ),
        (edit(|b| b["surprise"] = json!(1)), "surprise"),
        (edit(|b| b["users"] = json!("x")), "users"),
        (edit(|b| b["object_type"] = json!("leads")), "object_type"),
        (
            edit(|b| drop(b.as_object_mut().unwrap().remove("teams"))),
            "teams",
        ),
        (
            edit(|b| drop(b.as_object_mut().unwrap().remove("settings"))),
            "settings",
        ),
        (
            edit(|b| {
                b["users"] = json!((0..501).map(|_| json!({"email": BEN})).collect::<Vec<_>>())
            }),
            "users",
        ),
        (
            edit(|b| {
                b["teams"] = json!((0..51)
                    .map(|_| json!({"name": "Inbound"}))
                    .collect::<Vec<_>>())
            }),
            "teams",
        ),
    ];
    for (body, field) in &cases {
        let a = app
            .call(Method::POST, "/routers", &t, Some(body.clone()))
            .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{field}: {}", a.body);
        assert_eq!(a.body["field"], *field, "{}", a.body);
        if *field != "object_type" {
            let a = app
                .call(
                    Method::PUT,
                    &format!("/routers/{id}/draft"),
                    &t,
                    Some(body.clone()),
                )
                .await;
            assert_eq!(
                a.status,
                StatusCode::BAD_REQUEST,
                "draft {field}: {}",
                a.body
            );
            assert_eq!(a.body["field"], *field, "{}", a.body);
        }
    }
    // The draft may name the router's type, and no other.
    let mut other = round_robin("R");
    other["object_type"] = json!("deals");
    let a = app
        .call(
            Method::PUT,
            &format!("/routers/{id}/draft"),
            &t,
            Some(other),
        )
        .await;
    assert_eq!(
        (a.status, a.body["field"].clone()),
        (StatusCode::BAD_REQUEST, json!("object_type"))
    );
    // Nothing was written.
    let after = app
        .call(Method::GET, "/routers?limit=100&archived=true", &t, None)
        .await;
    assert_eq!(before.body, after.body);
    assert_error(
        &app.call(Method::GET, &format!("/routers/{id}/draft"), &t, None)
            .await,
        StatusCode::NOT_FOUND,
        "Draft not found",
    );
    // Valid shapes: settings null, a teams rotation, an archived member, a percentage router.
    for body in [
        edit(|b| b["settings"] = Value::Null),
        edit(|b| {
            b["users"] = json!([]);
            b["teams"] = json!([{"name": "Inbound"}]);
            b["settings"]["rotation_type"] = json!("teams");
        }),
        edit(|b| b["users"][0]["email"] = json!("ELI.FORMER@northwind.example")),
        percent(json!([{"email": BEN, "percentage": 70.5}, {"email": CHEN, "percentage": 29.5}])),
    ] {
        let a = app.call(Method::POST, "/routers", &t, Some(body)).await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    }
}

async fn idempotency_keys_replay_creates_and_publishes_before_any_if_match_check(app: TestApp) {
    let t = app.northwind().await;
    let key = [("idempotency-key", "create-once")];
    let first = app
        .with_headers(
            Method::POST,
            "/routers",
            &t,
            &key,
            Some(round_robin("Once")),
        )
        .await;
    assert_eq!(first.status, StatusCode::CREATED);
    let again = app
        .with_headers(
            Method::POST,
            "/routers",
            &t,
            &key,
            Some(round_robin("Once")),
        )
        .await;
    assert_eq!(
        (again.status, &again.body),
        (StatusCode::CREATED, &first.body)
    );
    assert_eq!(again.headers["idempotent-replayed"], "true");
    let other = app
        .with_headers(
            Method::POST,
            "/routers",
            &t,
            &key,
            Some(round_robin("Twice")),
        )
        .await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);
    let id = first.body["id"].as_str().unwrap();
    let put = app
        .call(
            Method::PUT,
            &format!("/routers/{id}/draft"),
            &t,
            Some(round_robin("Once v2")),
        )
        .await;
    let tag = etag(&put);
    let publish = format!("/routers/{id}/publish");
    let key = [
        ("idempotency-key", "publish-once"),
        ("if-match", tag.as_str()),
    ];
    let published = app
        .with_headers(Method::POST, &publish, &t, &key, None)
        .await;
    assert_eq!(published.body["revision"], 2);
    // The tag is stale now, and absent: the replay answers first.
    for headers in [&key[..], &key[..1]] {
        let replay = app
            .with_headers(Method::POST, &publish, &t, headers, None)
            .await;
        assert_eq!(
            (replay.status, &replay.body),
            (StatusCode::OK, &published.body)
        );
        assert_eq!(replay.headers["idempotent-replayed"], "true");
    }
    let revisions = app
        .call(Method::GET, &format!("/routers/{id}/revisions"), &t, None)
        .await;
    assert_eq!(revisions.body["data"].as_array().unwrap().len(), 2);
    // Restore and unpublish replay too.
    let restore = format!("/routers/{id}/revisions/1/restore");
    let key = [("idempotency-key", "restore-once")];
    let restored = app
        .with_headers(Method::POST, &restore, &t, &key, None)
        .await;
    assert_eq!(restored.status, StatusCode::OK);
    let replay = app
        .with_headers(Method::POST, &restore, &t, &key, None)
        .await;
    assert_eq!(replay.body, restored.body);
    let unpublish = format!("/routers/{id}/unpublish");
    let key = [("idempotency-key", "unpublish-once")];
    let first = app
        .with_headers(Method::POST, &unpublish, &t, &key, None)
        .await;
    let replay = app
        .with_headers(Method::POST, &unpublish, &t, &key, None)
        .await;
    assert_eq!(
        (first.body["is_published"].clone(), replay.body),
        (json!(false), first.body.clone())
    );
}

async fn dispatch_names_the_revision_it_evaluated_and_follows_publication(app: TestApp) {
    let t = app.northwind().await;
    let id = app.create_router(&t, round_robin("Named")).await;
    let contact = app.new_contact(&t).await;
    assert_eq!(
        app.dispatch(&t, &id, &contact).await,
        json!({"message": "The router is unpublished"})
    );
    let mut only_chen = round_robin("Named v2");
    only_chen["users"] = json!([{"email": CHEN}]);
    app.publish_config(&t, &id, only_chen).await;
    let assigned = app.dispatch(&t, &id, &contact).await;
    assert_eq!(assigned["user"], CHEN);
    let history = app
        .call(Method::GET, &format!("/routers/{id}/dispatches"), &t, None)
        .await;
    let revisions: Vec<(&Value, &Value)> = history.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (&e["message"], &e["router_revision"]))
        .collect();
    assert_eq!(
        revisions,
        [
            (&json!("Owner assigned"), &json!(2)),
            (&json!("The router is unpublished"), &json!(1)),
        ]
    );
    let unpublished = app
        .call(Method::POST, &format!("/routers/{id}/unpublish"), &t, None)
        .await;
    assert_eq!(unpublished.body["revision"], 2);
    assert_eq!(
        app.dispatch(&t, &id, &contact).await,
        json!({"message": "The router is unpublished"})
    );
}

async fn round_robin_continues_across_a_publish(app: TestApp) {
    let t = app.northwind().await;
    let id = app.create_router(&t, round_robin("Turns")).await;
    app.call(Method::POST, &format!("/routers/{id}/publish"), &t, None)
        .await;
    let first = app.new_contact(&t).await;
    assert_eq!(app.dispatch(&t, &id, &first).await["user"], BEN);
    app.publish_config(&t, &id, round_robin("Turns, renamed"))
        .await;
    let second = app.new_contact(&t).await;
    assert_eq!(
        app.dispatch(&t, &id, &second).await["user"],
        CHEN,
        "the rotation goes on after Ben"
    );
}

async fn a_percentage_router_restarts_its_counts_when_its_weights_change(app: TestApp) {
    let t = app.northwind().await;
    let weighted = |a: f64, b: f64| {
        let mut body = round_robin("Shares");
        body["settings"]["distribution_model"] = json!("percentage");
        body["users"] = json!([{"email": BEN, "percentage": a}, {"email": CHEN, "percentage": b}]);
        body
    };
    // Unchanged weights: counts go on (Ben 1 of 1, so Chen's turn); changed: N = 0 again, so
    // the largest share (Ben's 60 %) first.
    for (next, expected) in [(weighted(50.0, 50.0), CHEN), (weighted(60.0, 40.0), BEN)] {
        let id = app.create_router(&t, weighted(50.0, 50.0)).await;
        app.call(Method::POST, &format!("/routers/{id}/publish"), &t, None)
            .await;
        let first = app.new_contact(&t).await;
        assert_eq!(app.dispatch(&t, &id, &first).await["user"], BEN);
        app.publish_config(&t, &id, next).await;
        let second = app.new_contact(&t).await;
        assert_eq!(app.dispatch(&t, &id, &second).await["user"], expected);
    }
}

/// BEHAVIOR 15 (an assignment commits only while its revision is live): 100 dispatches on threads,
/// a publish in the middle. Every entry names a revision that was live when it committed: revision
/// 1 only for runs that ended before the publish answered, revision 2 only for runs whose
/// evaluation started after the publish began (the entry's `dispatched_at` is the instant of the
/// evaluation that committed); and none that started after the publish answered names revision 1.
async fn dispatches_racing_a_publish_never_commit_by_the_replaced_revision(app: TestApp) {
    let t = app.northwind().await;
    let id = app.create_router(&t, round_robin("Race")).await;
    app.call(Method::POST, &format!("/routers/{id}/publish"), &t, None)
        .await;
    let app = Arc::new(app);
    let creates: Vec<_> = (0..100)
        .map(|_| {
            let (app, t) = (app.clone(), t.clone());
            tokio::spawn(async move { app.new_contact(&t).await })
        })
        .collect();
    let mut contacts = Vec::new();
    for create in creates {
        contacts.push(create.await.unwrap());
    }
    let put = app
        .call(
            Method::PUT,
            &format!("/routers/{id}/draft"),
            &t,
            Some(round_robin("Race v2")),
        )
        .await;
    let tag = etag(&put);
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for contact in contacts {
        let (app, t, id, done) = (app.clone(), t.clone(), id.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let started = chrono::Utc::now();
            let answer = app.dispatch(&t, &id, &contact).await;
            done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            (contact, started, chrono::Utc::now(), answer)
        }));
    }
    while done.load(std::sync::atomic::Ordering::SeqCst) < 40 {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let publish_started = chrono::Utc::now();
    let published = app
        .with_headers(
            Method::POST,
            &format!("/routers/{id}/publish"),
            &t,
            &[("if-match", &tag)],
            None,
        )
        .await;
    let publish_answered = chrono::Utc::now();
    assert_eq!(published.body["revision"], 2, "{}", published.body);
    let mut runs = Vec::new();
    for task in tasks {
        runs.push(task.await.unwrap());
    }
    let mut by_revision = [0usize; 3];
    for (contact, started, ended, answer) in &runs {
        assert_eq!(answer["message"], "Owner assigned", "{answer}");
        let history = app
            .call(
                Method::GET,
                &format!("/contacts/{contact}/dispatches"),
                &t,
                None,
            )
            .await;
        let entries = history.body["data"].as_array().unwrap();
        assert_eq!(entries.len(), 1, "one entry per dispatch");
        let entry = &entries[0];
        let revision = entry["router_revision"].as_u64().unwrap();
        let at: chrono::DateTime<chrono::Utc> =
            entry["dispatched_at"].as_str().unwrap().parse().unwrap();
        by_revision[revision as usize] += 1;
        match revision {
            1 => {
                assert!(
                    *started < publish_answered,
                    "revision 1 after the publish answered"
                );
                assert!(at <= publish_answered);
            }
            2 => {
                assert!(*ended >= publish_started);
                assert!(at + chrono::Duration::milliseconds(1) >= publish_started);
            }
            other => panic!("revision {other}"),
        }
    }
    assert!(by_revision[1] >= 40, "{by_revision:?}");
    assert_eq!(by_revision[1] + by_revision[2], 100);
}

/// BEHAVIOR 16 and 9's `revision` over HTTP: the route, its defaults, its 400s naming the key,
/// its 404s in BEHAVIOR 2's order, and explain of a draft and of a revision.
async fn a_draft_is_replayed_over_http_and_explained_by_revision(app: TestApp) {
    let t = app.northwind().await;
    let id = app.create_router(&t, round_robin("Replayed")).await;
    app.call(Method::POST, &format!("/routers/{id}/publish"), &t, None)
        .await;
    let mut contacts = Vec::new();
    for _ in 0..4 {
        let contact = app.new_contact(&t).await;
        app.dispatch(&t, &id, &contact).await; // Ben, Chen, Ben, Chen
        contacts.push(contact);
    }
    let simulate = format!("/routers/{id}/simulate");
    // No draft yet: the default revision is the draft.
    let none = app.call(Method::POST, &simulate, &t, None).await;
    assert_error(&none, StatusCode::NOT_FOUND, "Draft not found");
    let mut only_chen = round_robin("Only Chen");
    only_chen["users"] = json!([{"email": CHEN}]);
    let put = app
        .call(
            Method::PUT,
            &format!("/routers/{id}/draft"),
            &t,
            Some(only_chen),
        )
        .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);

    // An empty body: the draft over the last 30 days.
    let draft = app.call(Method::POST, &simulate, &t, None).await;
    assert_eq!(draft.status, StatusCode::OK, "{}", draft.body);
    let body = &draft.body;
    assert_eq!(body["router_id"], id.as_str());
    assert_eq!(body["revision"], "draft");
    assert_eq!(
        (body["replayed"].clone(), body["truncated"].clone()),
        (json!(4), json!(false))
    );
    assert_eq!(body["changed"], 2);
    assert_eq!(body["outcomes"], json!({"Owner assigned": 4}));
    assert_eq!(
        body["members"],
        json!([
            {"user": CHEN, "actual": 2, "simulated": 4, "actual_share": 0.5, "simulated_share": 1.0, "target_share": 1.0},
            {"user": BEN, "actual": 2, "simulated": 0, "actual_share": 0.5, "simulated_share": 0.0, "target_share": null}
        ])
    );
    let samples = body["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2);
    assert_eq!(samples[0]["object_id"], contacts[0].as_str());
    assert_eq!(samples[0]["actual_user"], BEN);
    assert_eq!(samples[0]["simulated_user"], CHEN);
    assert_eq!(samples[0]["simulated_message"], "Owner assigned");
    let from = chrono::DateTime::parse_from_rfc3339(body["from"].as_str().unwrap()).unwrap();
    let to = chrono::DateTime::parse_from_rfc3339(body["to"].as_str().unwrap()).unwrap();
    assert_eq!(to - from, chrono::Duration::days(30));

    // The live revision over the same window: it decided these, nothing changes.
    let live = app
        .call(Method::POST, &simulate, &t, Some(json!({"revision": 1})))
        .await;
    assert_eq!(live.status, StatusCode::OK, "{}", live.body);
    assert_eq!(
        (live.body["revision"].clone(), live.body["changed"].clone()),
        (json!(1), json!(0))
    );

    // 400s name the key; 404s come first for the router, after the body for the revision.
    let bad = [
        (json!({"revision": 0}), "revision"),
        (json!({"revision": "live"}), "revision"),
        (json!({"from": "yesterday"}), "from"),
        (
            json!({"from": "2026-11-02T00:00:00Z", "to": "2026-11-01T00:00:00Z"}),
            "from",
        ),
        (
            json!({"from": "2026-01-01T00:00:00Z", "to": "2026-04-04T00:00:01Z"}),
            "to",
        ),
        (json!({"window": 30}), "window"),
    ];
    for (sent, field) in bad {
        let a = app
            .call(Method::POST, &simulate, &t, Some(sent.clone()))
            .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{sent}: {}", a.body);
        assert_eq!(a.body["field"], field, "{sent}: {}", a.body);
        assert_eq!(a.body["error"], true);
    }
    let not_object = app
        .with_headers(Method::POST, &simulate, &t, &[], Some(json!([1])))
        .await;
    assert_eq!(
        not_object.status,
        StatusCode::BAD_REQUEST,
        "{}",
        not_object.body
    );
    let missing = app
        .call(Method::POST, &simulate, &t, Some(json!({"revision": 9})))
        .await;
    assert_error(&missing, StatusCode::NOT_FOUND, "Revision not found");
    let unknown = format!("/routers/{}/simulate", uuid::Uuid::now_v7());
    let a = app
        .call(Method::POST, &unknown, &t, Some(json!({"revision": 0})))
        .await;
    assert_error(&a, StatusCode::NOT_FOUND, "Router not found");
    let a = app
        .call(Method::POST, "/routers/not-a-uuid/simulate", &t, None)
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    let a = app.call(Method::GET, &simulate, &t, None).await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
    let a = app.raw(Method::POST, &simulate, &[], Vec::new()).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);

    // Explain with `revision`: the draft names Chen, revision 1 names whom the rotation
    // gives next (Ben), and the answer says which.
    let explain = |revision: Value| {
        let mut body = json!({"router_id": id, "object_id": contacts[0]});
        if !revision.is_null() {
            body["revision"] = revision;
        }
        let app = &app;
        let t = &t;
        async move {
            app.call(Method::POST, "/dispatch/router/explain", t, Some(body))
                .await
        }
    };
    let a = explain(json!("draft")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(
        (a.body["user"].clone(), a.body["revision"].clone()),
        (json!(CHEN), json!("draft"))
    );
    let a = explain(json!(1)).await;
    assert_eq!(
        (a.body["user"].clone(), a.body["revision"].clone()),
        (json!(BEN), json!(1))
    );
    let a = explain(Value::Null).await;
    assert!(a.body.get("revision").is_none(), "{}", a.body);
    let a = explain(json!(1.5)).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    assert_eq!(a.body["field"], "revision");
    let a = explain(json!(7)).await;
    assert_error(&a, StatusCode::NOT_FOUND, "Revision not found");
    let deleted = app
        .call(Method::DELETE, &format!("/routers/{id}/draft"), &t, None)
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let a = explain(json!("draft")).await;
    assert_error(&a, StatusCode::NOT_FOUND, "Draft not found");
}
