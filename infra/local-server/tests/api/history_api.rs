//! The routing history, stats and explain routes over HTTP (BEHAVIOR 8 and 9):
//! `GET /routers/{routerId}/dispatches`, `GET /routers/{routerId}/stats`,
//! `GET /{type}/{id}/dispatches` and `POST /dispatch/router/explain`, on the demo seed, each
//! test on the embedded store and on DynamoDB (the emulator of `bash infra/scripts/test.sh`, a
//! table of its own per test): status codes, error bodies and answer shapes, and a dispatch
//! right after an explain assigning the member it named.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{json, Value};

const INBOUND_ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const DEALS_ROUTER: &str = "7e3f4a56-b7c8-4d93-8ea5-b02b3c4d5e78";
const UNPUBLISHED_ROUTER: &str = "8f4a5b67-c8d9-4ea4-9fb6-c13c4d5e6f89";
const ARCHIVED_ROUTER: &str = "9a5b6c78-d9ea-4fb5-a0c7-d24d5e6f7a90";
const DANA: &str = "01936b2a-7c00-7a00-8000-000000000002";
const LEE: &str = "01936b2a-7c00-7a00-8000-000000000004";
const GLOBEX_CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000008";
const ANA: &str = "ana.lopez@northwind.example";
const BEN: &str = "ben.okafor@northwind.example";
const CHEN: &str = "chen.wei@northwind.example";
const DORA: &str = "dora.maier@northwind.example";

shared::on_both_stores!(
    threads = 2; with app_on:
    the_routes_need_a_token_and_the_read_scope,
    bad_ids_windows_and_cursors_are_400_and_unknown_ids_404,
    explain_answers_the_documented_shapes_and_a_dispatch_follows_it,
    explain_answers_a_bad_body_as_dispatch_does_and_writes_nothing,
    the_history_lists_and_stats_answer_their_shapes,
    an_idempotent_replay_appends_no_second_entry,
);

fn body(router: &str, object: &str) -> Value {
    json!({"router_id": router, "object_id": object})
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

fn sorted(mut names: Vec<&str>) -> Vec<&str> {
    names.sort_unstable();
    names
}

async fn get(app: &TestApp, token: &str, uri: &str) -> Answer {
    app.call(Method::GET, uri, token, None).await
}

async fn explain(app: &TestApp, token: &str, router: &str, object: &str) -> Answer {
    app.call(
        Method::POST,
        "/dispatch/router/explain",
        token,
        Some(body(router, object)),
    )
    .await
}

async fn dispatch(app: &TestApp, token: &str, router: &str, object: &str) -> Answer {
    app.call(
        Method::POST,
        "/dispatch/router",
        token,
        Some(body(router, object)),
    )
    .await
}

async fn the_routes_need_a_token_and_the_read_scope(app: TestApp) {
    let routers = format!("/routers/{INBOUND_ROUTER}/dispatches");
    let stats = format!("/routers/{INBOUND_ROUTER}/stats");
    let record = format!("/contacts/{DANA}/dispatches");
    let explain_body = serde_json::to_vec(&body(INBOUND_ROUTER, DANA)).unwrap();
    // No token: 401.
    for uri in [&routers, &stats, &record] {
        let a = app.raw(Method::GET, uri, &[], Vec::new()).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{uri}");
    }
    let a = app
        .raw(
            Method::POST,
            "/dispatch/router/explain",
            &[("content-type", "application/json")],
            explain_body.clone(),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    // A token without service-api/read: 403.
    let writer = app
        .token(
            NORTHWIND,
            "service-api/create service-api/update service-api/delete",
        )
        .await;
    for uri in [&routers, &stats, &record] {
        let a = get(&app, &writer, uri).await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{uri}");
        assert_eq!(
            a.body,
            json!({"message": "Insufficient scope: requires service-api/read", "error": true}),
            "{uri}"
        );
    }
    let a = explain(&app, &writer, INBOUND_ROUTER, DANA).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    assert_eq!(
        a.body["message"],
        "Insufficient scope: requires service-api/read"
    );
    // service-api/read alone is enough, explain included.
    let reader = app.token(NORTHWIND_READONLY, "service-api/read").await;
    for uri in [&routers, &stats, &record] {
        let a = get(&app, &reader, uri).await;
        assert_eq!(a.status, StatusCode::OK, "{uri}: {}", a.body);
    }
    let a = explain(&app, &reader, INBOUND_ROUTER, DANA).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["dry_run"], true);
}

async fn bad_ids_windows_and_cursors_are_400_and_unknown_ids_404(app: TestApp) {
    let t = app.token(NORTHWIND_READONLY, "service-api/read").await;
    for uri in [
        "/routers/not-a-uuid/dispatches",
        "/routers/not-a-uuid/stats",
    ] {
        let a = get(&app, &t, uri).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(a.body["error"], true);
        assert_eq!(a.body["field"], "routerId", "{uri}: {}", a.body);
    }
    let unknown = "5b1c2d34-e5f6-4a71-8c83-000000000000";
    for uri in [
        format!("/routers/{unknown}/dispatches"),
        format!("/routers/{unknown}/stats"),
    ] {
        let a = get(&app, &t, &uri).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(
            a.body,
            json!({"message": "Router not found", "error": true}),
            "{uri}"
        );
    }
    // An archived router's history and stats are readable.
    for uri in [
        format!("/routers/{ARCHIVED_ROUTER}/dispatches"),
        format!("/routers/{ARCHIVED_ROUTER}/stats"),
    ] {
        assert_eq!(get(&app, &t, &uri).await.status, StatusCode::OK, "{uri}");
    }
    // A record id that is not a UUID, of another account, or of another type: 404.
    for uri in [
        "/contacts/not-a-uuid/dispatches".to_string(),
        format!("/contacts/{GLOBEX_CONTACT}/dispatches"),
        format!("/deals/{DANA}/dispatches"),
        format!("/contacts/{unknown}/dispatches"),
    ] {
        let a = get(&app, &t, &uri).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(
            a.body,
            json!({"message": "Record not found", "error": true}),
            "{uri}"
        );
    }
    // Stats windows.
    let stats = format!("/routers/{INBOUND_ROUTER}/stats");
    for (query, field) in [
        ("from=yesterday", "from"),
        ("to=2026-11-30", "to"),
        ("from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z", "to"),
        ("from=2026-11-01T00:00:00Z&to=2026-11-01T00:00:00Z", "to"),
        ("from=2026-01-01T00:00:00Z&to=2026-04-04T00:00:01Z", "to"),
    ] {
        let a = get(&app, &t, &format!("{stats}?{query}")).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(a.body["error"], true, "{query}");
        assert_eq!(a.body["field"], field, "{query}: {}", a.body);
    }
    // Exactly 93 days is accepted; the bounds come back as given, in UTC with milliseconds.
    let a = get(
        &app,
        &t,
        &format!("{stats}?from=2026-01-01T00:00:00Z&to=2026-04-04T00:00:00Z"),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["from"], "2026-01-01T00:00:00.000Z");
    assert_eq!(a.body["to"], "2026-04-04T00:00:00.000Z");
    // Cursors and offsets of the history lists.
    for uri in [
        format!("/routers/{INBOUND_ROUTER}/dispatches?after=junk"),
        format!("/contacts/{DANA}/dispatches?after=junk"),
    ] {
        let a = get(&app, &t, &uri).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(a.body["field"], "after", "{uri}");
    }
    let a = get(
        &app,
        &t,
        &format!("/routers/{INBOUND_ROUTER}/dispatches?offset=10001"),
    )
    .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(a.body["field"], "offset");
}

async fn explain_answers_the_documented_shapes_and_a_dispatch_follows_it(app: TestApp) {
    let t = app.northwind().await;
    let reader = app.token(NORTHWIND_READONLY, "service-api/read").await;
    // Non-assignments: exactly {message, dry_run, explanation}.
    for (router, object, message) in [
        (UNPUBLISHED_ROUTER, DANA, "The router is unpublished"),
        (
            "5b1c2d34-e5f6-4a71-8c83-000000000000",
            DANA,
            "Router not found",
        ),
        (ARCHIVED_ROUTER, DANA, "Router not found"),
        (INBOUND_ROUTER, "nope", "Object not found"),
    ] {
        let a = explain(&app, &reader, router, object).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        assert_eq!(
            keys(&a.body),
            ["message", "dry_run", "explanation"],
            "{}",
            a.body
        );
        assert_eq!(
            a.body,
            json!({"message": message, "dry_run": true,
                "explanation": {"trigger": null, "candidates": null, "account_match": null, "sla": null}})
        );
    }
    // Dana: her e-mail domain is Contoso's website; Contoso's owner Ana takes it.
    let a = explain(&app, &reader, INBOUND_ROUTER, DANA).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(
        keys(&a.body),
        [
            "message",
            "success",
            "user",
            "field_name",
            "reason",
            "dry_run",
            "explanation"
        ]
    );
    assert_eq!(a.body["message"], "Owner assigned");
    assert_eq!(a.body["success"], true);
    assert_eq!(a.body["user"], ANA);
    assert_eq!(a.body["field_name"], "Contact owner");
    assert_eq!(a.body["reason"], "account_matching");
    assert_eq!(a.body["dry_run"], true);
    let explanation = &a.body["explanation"];
    assert_eq!(
        sorted(keys(explanation)),
        ["account_match", "candidates", "sla", "trigger"]
    );
    assert_eq!(
        explanation["account_match"],
        json!({"company_id": "01936b2a-7c00-7a00-8000-000000000001", "owner": ANA, "eligible": true})
    );
    assert_eq!(
        explanation["trigger"],
        json!({"matched": true, "groups": [{"matched": true, "conditions": [
            {"field": "region", "operator": "in", "value": ["emea", "amer"], "actual": "emea", "matched": true}
        ]}]})
    );
    let d = dispatch(&app, &t, INBOUND_ROUTER, DANA).await;
    assert_eq!(d.status, StatusCode::OK);
    assert_eq!(d.body["message"], a.body["message"]);
    assert_eq!(d.body["user"], a.body["user"]);
    // Lee: Fabrikam has no owner, so the rotation decides among Ana, Ben and Chen.
    let a = explain(&app, &reader, INBOUND_ROUTER, LEE).await;
    assert_eq!(a.body["reason"], "rotation", "{}", a.body);
    assert_eq!(
        a.body["explanation"]["account_match"],
        json!({"company_id": "01936b2a-7c00-7a00-8000-000000000003", "owner": null, "eligible": false})
    );
    let candidates = a.body["explanation"]["candidates"].as_array().unwrap();
    let users: Vec<&str> = candidates
        .iter()
        .map(|c| c["user"].as_str().unwrap())
        .collect();
    assert_eq!(users, [ANA, BEN, CHEN]);
    assert!(candidates
        .iter()
        .all(|c| c["eligible"] == true && c["reasons"] == json!([])));
    let d = dispatch(&app, &t, INBOUND_ROUTER, LEE).await;
    assert_eq!(d.body["message"], "Owner assigned");
    assert_eq!(d.body["user"], a.body["user"]);
    // Now that Lee has an owner, explain and dispatch agree on the refusal.
    let a = explain(&app, &reader, INBOUND_ROUTER, LEE).await;
    assert_eq!(
        keys(&a.body),
        ["message", "dry_run", "explanation"],
        "{}",
        a.body
    );
    assert_eq!(a.body["message"], "The router can not overwrite");
    let d = dispatch(&app, &t, INBOUND_ROUTER, LEE).await;
    assert_eq!(d.body, json!({"message": "The router can not overwrite"}));
}

async fn explain_answers_a_bad_body_as_dispatch_does_and_writes_nothing(app: TestApp) {
    let t = app.northwind().await;
    let auth = format!("Bearer {t}");
    let headers = [
        ("authorization", auth.as_str()),
        ("content-type", "application/json"),
    ];
    for bad in [
        "{}",
        r#"{"router_id": "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45"}"#,
        r#"{"object_id": "x", "router_id": null}"#,
        r#"{"router_id": "", "object_id": "x"}"#,
        r#"{"router_id": 5, "object_id": "x"}"#,
        "not json",
        "[]",
    ] {
        let e = app
            .raw(
                Method::POST,
                "/dispatch/router/explain",
                &headers,
                bad.as_bytes().to_vec(),
            )
            .await;
        let d = app
            .raw(
                Method::POST,
                "/dispatch/router",
                &headers,
                bad.as_bytes().to_vec(),
            )
            .await;
        assert_eq!(e.status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!((e.status, &e.body), (d.status, &d.body), "{bad}");
        assert_eq!(
            e.body,
            json!({"message": "Invalid event: require router_id and object_id", "error": true})
        );
    }
    // Explains of every kind leave no trace: no history entry, no owner.
    for (router, object) in [
        (INBOUND_ROUTER, DANA),
        (INBOUND_ROUTER, LEE),
        (UNPUBLISHED_ROUTER, DANA),
        (INBOUND_ROUTER, "nope"),
    ] {
        assert_eq!(
            explain(&app, &t, router, object).await.status,
            StatusCode::OK
        );
    }
    for uri in [
        format!("/routers/{INBOUND_ROUTER}/dispatches"),
        format!("/routers/{UNPUBLISHED_ROUTER}/dispatches"),
        format!("/contacts/{DANA}/dispatches"),
    ] {
        let a = get(&app, &t, &uri).await;
        assert_eq!(a.body["data"], json!([]), "{uri}");
    }
    let dana = get(&app, &t, &format!("/contacts/{DANA}")).await;
    assert!(dana.body["contact_owner"].is_null(), "{}", dana.body);
    // The 400 dispatches above left no entry either.
    let stats = get(&app, &t, &format!("/routers/{INBOUND_ROUTER}/stats")).await;
    assert_eq!(stats.body["total"], 0);
}

const ENTRY_KEYS: [&str; 15] = [
    "id",
    "router_id",
    "router_revision",
    "object_type",
    "object_id",
    "message",
    "success",
    "user",
    "reason",
    "previous_owner",
    "field_name",
    "source",
    "dispatched_at",
    "crm_sync",
    "sla",
];

async fn the_history_lists_and_stats_answer_their_shapes(app: TestApp) {
    let t = app.northwind().await;
    assert_eq!(
        dispatch(&app, &t, INBOUND_ROUTER, DANA).await.body["user"],
        ANA
    );
    assert_eq!(
        dispatch(&app, &t, INBOUND_ROUTER, LEE).await.body["user"],
        ANA
    );
    assert_eq!(
        dispatch(&app, &t, INBOUND_ROUTER, "nope").await.body["message"],
        "Object not found"
    );
    let a = get(&app, &t, &format!("/routers/{INBOUND_ROUTER}/dispatches")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(keys(&a.body), ["data", "pagination"]);
    assert_eq!(
        a.body["pagination"],
        json!({"limit": 10, "offset": 0, "count": 3, "next_after": null})
    );
    let data = a.body["data"].as_array().unwrap();
    for e in data {
        assert_eq!(sorted(keys(e)), sorted(ENTRY_KEYS.to_vec()), "{e}");
        assert_eq!(e["source"], "api");
        assert_eq!(e["router_id"], INBOUND_ROUTER);
        assert_eq!(e["crm_sync"], Value::Null);
        assert_eq!(e["sla"], Value::Null, "the demo's routers have no SLA");
        let at = e["dispatched_at"].as_str().unwrap();
        assert!(
            at.len() == 24 && at.ends_with('Z') && chrono::DateTime::parse_from_rfc3339(at).is_ok(),
            "{at}"
        );
    }
    let messages: Vec<&str> = data
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        ["Object not found", "Owner assigned", "Owner assigned"]
    );
    assert_eq!(data[0]["object_id"], "nope");
    assert_eq!(data[0]["success"], false);
    assert_eq!(data[0]["user"], Value::Null);
    assert_eq!(data[1]["object_id"], LEE);
    assert_eq!(data[1]["reason"], "rotation");
    assert_eq!(data[2]["object_id"], DANA);
    assert_eq!(data[2]["reason"], "account_matching");
    assert_eq!(data[2]["field_name"], "Contact owner");
    assert_eq!(data[2]["previous_owner"], Value::Null);
    // Paging with a cursor.
    let first = get(
        &app,
        &t,
        &format!("/routers/{INBOUND_ROUTER}/dispatches?limit=2"),
    )
    .await;
    assert_eq!(first.body["pagination"]["count"], 2);
    let cursor = first.body["pagination"]["next_after"].as_str().unwrap();
    let rest = get(
        &app,
        &t,
        &format!("/routers/{INBOUND_ROUTER}/dispatches?limit=2&after={cursor}"),
    )
    .await;
    assert_eq!(rest.status, StatusCode::OK, "{}", rest.body);
    assert_eq!(
        rest.body["pagination"],
        json!({"limit": 2, "offset": 0, "count": 1, "next_after": null})
    );
    assert_eq!(rest.body["data"][0], data[2]);
    // The cursor is the router list's: another router's list refuses it.
    let other = get(
        &app,
        &t,
        &format!("/routers/{DEALS_ROUTER}/dispatches?after={cursor}"),
    )
    .await;
    assert_eq!(other.status, StatusCode::BAD_REQUEST);
    assert_eq!(other.body["field"], "after");
    // The record's history.
    let dana = get(&app, &t, &format!("/contacts/{DANA}/dispatches")).await;
    assert_eq!(dana.status, StatusCode::OK);
    assert_eq!(dana.body["data"], json!([data[2]]));
    // Stats of the current month: the pool Ana, Ben (users), Chen (team Inbound; Ben once).
    let s = get(&app, &t, &format!("/routers/{INBOUND_ROUTER}/stats")).await;
    assert_eq!(s.status, StatusCode::OK, "{}", s.body);
    assert_eq!(
        keys(&s.body),
        ["router_id", "from", "to", "total", "members"]
    );
    assert_eq!(s.body["router_id"], INBOUND_ROUTER);
    assert_eq!(s.body["total"], 2);
    let third = 1.0 / 3.0;
    assert_eq!(
        s.body["members"],
        json!([
            {"user": ANA, "assigned": 2, "share": 1.0, "target_share": third,
                "by_reason": {"rotation": 1, "account_matching": 1, "backup": 0, "sla_reassignment": 0}},
            {"user": BEN, "assigned": 0, "share": 0.0, "target_share": third,
                "by_reason": {"rotation": 0, "account_matching": 0, "backup": 0, "sla_reassignment": 0}},
            {"user": CHEN, "assigned": 0, "share": 0.0, "target_share": third,
                "by_reason": {"rotation": 0, "account_matching": 0, "backup": 0, "sla_reassignment": 0}}
        ])
    );
    // A percentage router's targets are its percentages.
    let s = get(&app, &t, &format!("/routers/{DEALS_ROUTER}/stats")).await;
    let targets: Vec<(&str, &Value)> = s.body["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["user"].as_str().unwrap(), &m["target_share"]))
        .collect();
    assert_eq!(
        targets,
        [(ANA, &json!(0.5)), (BEN, &json!(0.3)), (DORA, &json!(0.2))]
    );
}

async fn an_idempotent_replay_appends_no_second_entry(app: TestApp) {
    let t = app.northwind().await;
    let auth = format!("Bearer {t}");
    for (key, object, message) in [
        ("replay-skip", "nope", "Object not found"),
        ("replay-assign", DANA, "Owner assigned"),
    ] {
        let headers = [
            ("authorization", auth.as_str()),
            ("content-type", "application/json"),
            ("idempotency-key", key),
        ];
        for _ in 0..2 {
            let a = app
                .raw(
                    Method::POST,
                    "/dispatch/router",
                    &headers,
                    serde_json::to_vec(&body(INBOUND_ROUTER, object)).unwrap(),
                )
                .await;
            assert_eq!(a.status, StatusCode::OK, "{}", a.body);
            assert_eq!(a.body["message"], message);
        }
    }
    let a = get(&app, &t, &format!("/routers/{INBOUND_ROUTER}/dispatches")).await;
    let messages: Vec<&str> = a.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages, ["Owner assigned", "Object not found"]);
}
