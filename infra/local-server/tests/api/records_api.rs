//! HTTP-level tests of the record routes (spec "Record collection endpoints", "Record item
//! endpoints", BEHAVIOR 2 and 3), through the real handlers over the demo seed.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{json, Value};

const DANA: &str = "01936b2a-7c00-7a00-8000-000000000002";
const GLOBEX_HANK: &str = "01936b2a-7c00-7a00-8000-000000000008";
const BEN_ID: &str = "2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12";

async fn create(app: &TestApp, token: &str, path: &str, fields: Value) -> common::Answer {
    app.call(Method::POST, path, token, Some(json!({ "fields": fields })))
        .await
}

fn assert_error(answer: &common::Answer, status: StatusCode, message: &str) {
    assert_eq!(answer.status, status, "{}", answer.body);
    assert_eq!(answer.body["message"], message, "{}", answer.body);
    assert_eq!(answer.body["error"], true);
}

#[tokio::test]
async fn a_created_contact_has_every_default_field_in_stored_form() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let a = create(
        &app,
        &t,
        "/contacts",
        json!({"email": "New.Person@Example.COM", "first_name": "New"}),
    )
    .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    let keys: Vec<&str> = a
        .body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "first_name",
            "last_name",
            "email",
            "contact_owner",
            "external_id",
            "archived",
            "created_at",
            "updated_at"
        ]
    );
    assert_eq!(a.body["email"], "new.person@example.com");
    assert_eq!(a.body["last_name"], Value::Null);
    assert_eq!(a.body["archived"], false);
    assert!(a.body.get("archived_by").is_none());
    let created = a.body["created_at"].as_str().unwrap();
    assert!(created.ends_with('Z') && created.len() == 24, "{created}");
    let id = a.body["id"].as_str().unwrap();
    assert_eq!(uuid::Uuid::parse_str(id).unwrap().get_version_num(), 7);

    let got = app
        .call(Method::GET, &format!("/contacts/{id}"), &t, None)
        .await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.body, a.body);
}

#[tokio::test]
async fn the_create_response_adds_every_field_the_request_set() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let a = create(
        &app,
        &t,
        "/companies",
        json!({"company_name": "Initech", "website_url": "https://www.Initech.example/about", "annual_revenue": 1e3, "type": "Partner", "city": null}),
    )
    .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    assert_eq!(a.body["website_url"], "initech.example");
    assert_eq!(a.body["annual_revenue"], "1000");
    assert_eq!(a.body["type"], "partner");
    assert_eq!(a.body["city"], Value::Null);
    assert_eq!(a.body["company_owner"], Value::Null);
}

#[tokio::test]
async fn required_fields_on_create_are_enforced_per_type() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let cases = [
        (
            "/contacts",
            json!({"phone": "123"}),
            "At least one of email, first_name, last_name is required",
            None,
        ),
        (
            "/contacts",
            json!({"first_name": "   "}),
            "At least one of email, first_name, last_name is required",
            None,
        ),
        (
            "/companies",
            json!({"industry": "x"}),
            "At least one of company_name, website_url is required",
            None,
        ),
        (
            "/deals",
            json!({"deal_stage": "closed_won", "pipeline": "default"}),
            "Missing required field: deal_name",
            Some("deal_name"),
        ),
        (
            "/deals",
            json!({"deal_name": "D", "pipeline": "default"}),
            "Missing required field: deal_stage",
            Some("deal_stage"),
        ),
        (
            "/deals",
            json!({"deal_name": "D", "deal_stage": "closed_won"}),
            "Missing required field: pipeline",
            Some("pipeline"),
        ),
        (
            "/tickets",
            json!({"ticket_name": "T", "pipeline": "support"}),
            "Missing required field: ticket_stage",
            Some("ticket_stage"),
        ),
        (
            "/tickets",
            json!({"ticket_stage": "new", "pipeline": "support"}),
            "Missing required field: ticket_name",
            Some("ticket_name"),
        ),
    ];
    for (path, fields, message, field) in cases {
        let a = create(&app, &t, path, fields).await;
        assert_error(&a, StatusCode::BAD_REQUEST, message);
        assert_eq!(a.body.get("field").and_then(Value::as_str), field, "{path}");
    }
    let ok = create(
        &app,
        &t,
        "/tickets",
        json!({"ticket_name": "T", "ticket_stage": "New", "pipeline": "Support Pipeline"}),
    )
    .await;
    assert_eq!(ok.status, StatusCode::CREATED, "{}", ok.body);
    assert_eq!(ok.body["pipeline"], "support");
}

#[tokio::test]
async fn invalid_bodies_and_fields_are_400_and_write_nothing() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let before = app
        .call(Method::GET, "/contacts?limit=100", &t, None)
        .await
        .body["pagination"]["count"]
        .clone();
    let auth = format!("Bearer {t}");
    let headers = [
        ("authorization", auth.as_str()),
        ("content-type", "application/json"),
    ];
    for raw in [&b"{not json"[..], b"[1,2]", b"", b"\"x\""] {
        let a = app
            .raw(Method::POST, "/contacts", &headers, raw.to_vec())
            .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST);
        assert!(
            a.body["message"]
                .as_str()
                .unwrap()
                .starts_with("Invalid JSON"),
            "{}",
            a.body
        );
    }
    let cases = [
        (json!({"first_name": "A"}), "fields"),
        (json!({"fields": "x"}), "fields"),
        (
            json!({"fields": {"first_name": "A", "shoe_size": 44}}),
            "shoe_size",
        ),
        (
            json!({"fields": {"first_name": "A", "record_id": "x"}}),
            "record_id",
        ),
        (
            json!({"fields": {"first_name": "A", "email": "nope"}}),
            "email",
        ),
        (
            json!({"fields": {"first_name": "A", "lifecycle_stage": "alien"}}),
            "lifecycle_stage",
        ),
        (
            json!({"fields": {"first_name": "A", "contact_owner": "nobody@northwind.example"}}),
            "contact_owner",
        ),
        (
            json!({"fields": {"first_name": "A", "contact_owner": "eli.former@northwind.example"}}),
            "contact_owner",
        ),
        (
            json!({"fields": {"first_name": "A", "employee_count": "many"}}),
            "employee_count",
        ),
        (
            json!({"fields": {"first_name": {"nested": true}}}),
            "first_name",
        ),
    ];
    for (body, field) in cases {
        let a = app
            .call(Method::POST, "/contacts", &t, Some(body.clone()))
            .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(a.body["field"], field, "{body}");
        assert_eq!(a.body["error"], true);
    }
    let system = create(
        &app,
        &t,
        "/contacts",
        json!({"first_name": "A", "record_id": "1"}),
    )
    .await;
    assert_error(
        &system,
        StatusCode::BAD_REQUEST,
        "Field cannot be set: record_id",
    );
    let after = app
        .call(Method::GET, "/contacts?limit=100", &t, None)
        .await
        .body["pagination"]["count"]
        .clone();
    assert_eq!(before, after, "a rejected write must store nothing");
}

#[tokio::test]
async fn duplicate_active_keys_are_409_naming_the_first_colliding_key() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    // dana@contoso.example is seeded.
    let a = create(
        &app,
        &t,
        "/contacts",
        json!({"email": "DANA@contoso.example"}),
    )
    .await;
    assert_error(
        &a,
        StatusCode::CONFLICT,
        "A contact with this email already exists",
    );
    assert_eq!(a.body["field"], "email");
    let a = create(
        &app,
        &t,
        "/contacts",
        json!({"email": "dana@contoso.example", "external_id": "crm-contact-1001"}),
    )
    .await;
    assert_eq!(a.body["field"], "email");
    let a = create(
        &app,
        &t,
        "/contacts",
        json!({"first_name": "X", "external_id": "crm-contact-1001"}),
    )
    .await;
    assert_eq!(a.status, StatusCode::CONFLICT);
    assert_eq!(a.body["field"], "external_id");
    // Companies: scheme and www. do not make a different company.
    for url in [
        "http://contoso.example",
        "contoso.example/",
        "https://WWW.contoso.example",
    ] {
        let a = create(&app, &t, "/companies", json!({"website_url": url})).await;
        assert_eq!(a.status, StatusCode::CONFLICT, "{url}");
        assert_eq!(a.body["field"], "website_url");
    }
    // Repeating the same POST with a key does not create a second record.
    let body = json!({"deal_name": "Same", "deal_stage": "closed_won", "pipeline": "default", "external_id": "ext-1"});
    assert_eq!(
        create(&app, &t, "/deals", body.clone()).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        create(&app, &t, "/deals", body).await.status,
        StatusCode::CONFLICT
    );
    // Duplicate deal names are fine.
    let dup_name = json!({"deal_name": "Same", "deal_stage": "closed_won", "pipeline": "default"});
    assert_eq!(
        create(&app, &t, "/deals", dup_name).await.status,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn an_archived_records_keys_can_be_reused_and_archiving_twice_is_404() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let del = app
        .call(Method::DELETE, &format!("/contacts/{DANA}"), &t, None)
        .await;
    assert_eq!(del.status, StatusCode::OK, "{}", del.body);
    assert!(del.body["archived"].as_str().unwrap().ends_with('Z'));
    assert_eq!(del.body["archived_by"], "northwind-integration");
    assert_eq!(del.body["email"], "dana@contoso.example");
    let again = app
        .call(Method::DELETE, &format!("/contacts/{DANA}"), &t, None)
        .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    // GET still returns it, archived.
    let got = app
        .call(Method::GET, &format!("/contacts/{DANA}"), &t, None)
        .await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.body["archived"], del.body["archived"]);
    // PATCH on an archived record is 409.
    let patch = app
        .call(
            Method::PATCH,
            &format!("/contacts/{DANA}"),
            &t,
            Some(json!({"fields": {"first_name": "X"}})),
        )
        .await;
    assert_error(
        &patch,
        StatusCode::CONFLICT,
        "Cannot update an archived object",
    );
    // Its e-mail is free again.
    let reuse = create(
        &app,
        &t,
        "/contacts",
        json!({"email": "dana@contoso.example"}),
    )
    .await;
    assert_eq!(reuse.status, StatusCode::CREATED, "{}", reuse.body);
    // Lists hide archived records unless archived=true.
    let active = app.call(Method::GET, "/contacts?limit=100", &t, None).await;
    assert!(!active.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["id"] == DANA));
    let all = app
        .call(Method::GET, "/contacts?limit=100&archived=true", &t, None)
        .await;
    assert!(all.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["id"] == DANA));
}

#[tokio::test]
async fn patch_changes_only_the_sent_keys_and_refreshes_timestamps() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let before = app
        .call(
            Method::GET,
            &format!("/contacts/{DANA}?properties=region,last_modified_date"),
            &t,
            None,
        )
        .await;
    let patched = app
        .call(
            Method::PATCH,
            &format!("/contacts/{DANA}?properties=region,job_title,last_modified_date,contact_owner_assigned_date"),
            &t,
            Some(json!({"fields": {"job_title": "CTO", "last_name": null, "contact_owner": BEN_ID}})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(patched.body["job_title"], "CTO");
    assert_eq!(patched.body["last_name"], Value::Null);
    assert_eq!(patched.body["first_name"], "Dana");
    assert_eq!(patched.body["region"], "emea");
    assert_eq!(
        patched.body["contact_owner"],
        "ben.okafor@northwind.example"
    );
    assert!(patched.body["contact_owner_assigned_date"].is_string());
    assert!(patched.body["updated_at"].as_str() >= before.body["updated_at"].as_str());
    assert_eq!(
        patched.body["last_modified_date"],
        patched.body["updated_at"]
    );
    assert_eq!(patched.body["created_at"], before.body["created_at"]);
    // A failing PATCH changes nothing.
    let bad = app
        .call(
            Method::PATCH,
            &format!("/contacts/{DANA}"),
            &t,
            Some(json!({"fields": {"job_title": "CEO", "email": "broken"}})),
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let after = app
        .call(
            Method::GET,
            &format!("/contacts/{DANA}?properties=job_title"),
            &t,
            None,
        )
        .await;
    assert_eq!(after.body["job_title"], "CTO");
    // Sending the owner field, even as null, stamps its assigned date (BEHAVIOR 3).
    let fresh = create(&app, &t, "/contacts", json!({"first_name": "Nobody"})).await;
    let id = fresh.body["id"].as_str().unwrap();
    let path = format!("/contacts/{id}?properties=contact_owner_assigned_date");
    let before = app.call(Method::GET, &path, &t, None).await;
    assert_eq!(before.body["contact_owner_assigned_date"], Value::Null);
    let cleared = app
        .call(
            Method::PATCH,
            &path,
            &t,
            Some(json!({"fields": {"contact_owner": null}})),
        )
        .await;
    assert_eq!(cleared.body["contact_owner"], Value::Null);
    assert!(
        cleared.body["contact_owner_assigned_date"].is_string(),
        "{}",
        cleared.body
    );
}

#[tokio::test]
async fn patch_checks_run_in_the_contracts_order() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let missing = uuid::Uuid::now_v7();
    // 404 beats a bad body.
    let a = app
        .call(
            Method::PATCH,
            &format!("/contacts/{missing}"),
            &t,
            Some(json!({"x": 1})),
        )
        .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    // Invalid properties (400) beats 404.
    let a = app
        .call(
            Method::PATCH,
            &format!("/contacts/{missing}?properties=nope"),
            &t,
            Some(json!({"fields": {}})),
        )
        .await;
    assert_error(&a, StatusCode::BAD_REQUEST, "Invalid property name: nope");
    // Duplicate key on PATCH is 409 with field.
    let other = create(&app, &t, "/contacts", json!({"email": "other@x.example"})).await;
    let id = other.body["id"].as_str().unwrap();
    let a = app
        .call(
            Method::PATCH,
            &format!("/contacts/{id}"),
            &t,
            Some(json!({"fields": {"email": "dana@contoso.example"}})),
        )
        .await;
    assert_eq!(a.status, StatusCode::CONFLICT);
    assert_eq!(a.body["field"], "email");
    // Changing a key moves the guard: the old value is free, the new one is taken.
    let a = app
        .call(
            Method::PATCH,
            &format!("/contacts/{id}"),
            &t,
            Some(json!({"fields": {"email": "moved@x.example"}})),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(
        create(&app, &t, "/contacts", json!({"email": "other@x.example"}))
            .await
            .status,
        StatusCode::CREATED
    );
    assert_eq!(
        create(&app, &t, "/contacts", json!({"email": "moved@x.example"}))
            .await
            .status,
        StatusCode::CONFLICT
    );
}

#[tokio::test]
async fn properties_add_to_the_defaults_and_invalid_names_are_400() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let a = app
        .call(
            Method::GET,
            &format!("/contacts/{DANA}?properties=region,%20email,record_id,create_date,id,archived,phone"),
            &t,
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["region"], "emea");
    assert_eq!(a.body["record_id"], DANA);
    assert_eq!(a.body["create_date"], a.body["created_at"]);
    assert_eq!(a.body["phone"], Value::Null);
    assert_eq!(a.body["email"], "dana@contoso.example");
    for bad in ["nope", "", "region,,email", "archived_by", "deal_name"] {
        let a = app
            .call(
                Method::GET,
                &format!("/contacts/{DANA}?properties={bad}"),
                &t,
                None,
            )
            .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{bad}");
        assert!(
            a.body["message"]
                .as_str()
                .unwrap()
                .starts_with("Invalid property name: "),
            "{}",
            a.body
        );
    }
    let list = app
        .call(Method::GET, "/contacts?properties=region", &t, None)
        .await;
    assert!(list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r.get("region").is_some()));
    let bad_list = app
        .call(Method::GET, "/contacts?properties=bogus", &t, None)
        .await;
    assert_error(
        &bad_list,
        StatusCode::BAD_REQUEST,
        "Invalid property name: bogus",
    );
}

#[tokio::test]
async fn lists_page_in_creation_order_and_validate_their_parameters() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let a = create(
            &app,
            &t,
            "/deals",
            json!({"deal_name": format!("D{i}"), "deal_stage": "qualified_to_buy", "pipeline": "default"}),
        )
        .await;
        ids.push(a.body["id"].clone());
    }
    let all = app.call(Method::GET, "/deals?limit=100", &t, None).await;
    let names: Vec<&str> = all.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["deal_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Contoso renewal",
            "Fabrikam pilot",
            "D0",
            "D1",
            "D2",
            "D3",
            "D4"
        ]
    );
    let page = app
        .call(Method::GET, "/deals?limit=2&offset=3", &t, None)
        .await;
    let pagination = &page.body["pagination"];
    assert_eq!(
        (
            &pagination["limit"],
            &pagination["offset"],
            &pagination["count"]
        ),
        (&json!(2), &json!(3), &json!(2))
    );
    assert!(pagination["next_after"].is_string(), "two more follow");
    assert_eq!(page.body["data"][0]["id"], ids[1]);
    let beyond = app.call(Method::GET, "/deals?offset=50", &t, None).await;
    assert_eq!(
        beyond.body["pagination"],
        json!({"limit": 10, "offset": 50, "count": 0, "next_after": null})
    );
    for q in [
        "limit=0",
        "limit=101",
        "offset=-1",
        "offset=10001",
        "archived=maybe",
        "limit=abc",
        "after=",
        "after=junk",
    ] {
        let a = app
            .call(Method::GET, &format!("/deals?{q}"), &t, None)
            .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{q}");
        assert_eq!(a.body["error"], true);
    }
}

/// The ids of a list answer's page, in order.
fn ids_of(list: &Value) -> Vec<Value> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].clone())
        .collect()
}

/// Walks `path` with `after`; the ids in walk order and the number of pages.
async fn walk(app: &TestApp, t: &str, path: &str, limit: usize) -> (Vec<Value>, usize) {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut url = format!("{path}{sep}limit={limit}");
    let mut ids = Vec::new();
    let mut pages = 0;
    loop {
        let a = app.call(Method::GET, &url, t, None).await;
        assert_eq!(a.status, StatusCode::OK, "{url}: {}", a.body);
        pages += 1;
        let data = a.body["data"].as_array().unwrap();
        assert!(data.len() <= limit);
        assert_eq!(a.body["pagination"]["offset"], 0);
        ids.extend(data.iter().map(|d| d["id"].clone()));
        match a.body["pagination"]["next_after"].as_str() {
            Some(next) => url = format!("{path}{sep}limit={limit}&after={next}"),
            None => return (ids, pages),
        }
    }
}

#[tokio::test]
async fn lists_walk_with_after_cursors_that_are_tamper_evident() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    for i in 0..9 {
        let made = create(
            &app,
            &t,
            "/deals",
            json!({"deal_name": format!("W{i}"), "deal_stage": "qualified_to_buy", "pipeline": "default"}),
        )
        .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    }
    let offset_order = ids_of(
        &app.call(Method::GET, "/deals?limit=100", &t, None)
            .await
            .body,
    );
    assert!(offset_order.len() >= 9);
    for limit in [1, 2, 4, 100] {
        let (walked, pages) = walk(&app, &t, "/deals", limit).await;
        assert_eq!(walked, offset_order, "limit {limit}");
        assert_eq!(pages, offset_order.len().div_ceil(limit).max(1));
    }
    let first = app.call(Method::GET, "/deals?limit=2", &t, None).await;
    let cursor = first.body["pagination"]["next_after"]
        .as_str()
        .unwrap()
        .to_string();
    // The cursor is a position: the next page starts after the second item, with any limit.
    let next = app
        .call(
            Method::GET,
            &format!("/deals?limit=3&after={cursor}"),
            &t,
            None,
        )
        .await;
    assert_eq!(next.status, StatusCode::OK);
    assert_eq!(next.body["data"][0]["id"], offset_order[2]);
    assert_eq!(next.body["pagination"]["limit"], 3);
    // offset 0 may accompany after; any other offset may not.
    let zero = app
        .call(
            Method::GET,
            &format!("/deals?offset=0&after={cursor}"),
            &t,
            None,
        )
        .await;
    assert_eq!(zero.status, StatusCode::OK);
    let both = app
        .call(
            Method::GET,
            &format!("/deals?offset=1&after={cursor}"),
            &t,
            None,
        )
        .await;
    assert_eq!(both.status, StatusCode::BAD_REQUEST);
    assert_eq!(both.body["field"], "offset");
    // Altered in any one character, from another list, another filter or another account: 400
    // naming after.
    let mut refused = Vec::new();
    for i in 0..cursor.len() {
        let mut altered = cursor.clone().into_bytes();
        altered[i] = if altered[i] == b'A' { b'B' } else { b'A' };
        refused.push(format!(
            "/deals?after={}",
            String::from_utf8(altered).unwrap()
        ));
    }
    refused.push(format!("/tickets?after={cursor}"));
    refused.push(format!("/deals?archived=true&after={cursor}"));
    refused.push(format!("/users?after={cursor}"));
    for url in &refused {
        let a = app.call(Method::GET, url, &t, None).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{url}");
        assert_eq!(a.body["error"], true);
        assert_eq!(a.body["field"], "after", "{url}");
    }
    let globex = app.token(GLOBEX, ALL_SCOPES).await;
    let other = app
        .call(
            Method::GET,
            &format!("/deals?after={cursor}"),
            &globex,
            None,
        )
        .await;
    assert_eq!(other.status, StatusCode::BAD_REQUEST);
    assert_eq!(other.body["field"], "after");
    let deep = app.call(Method::GET, "/deals?offset=10001", &t, None).await;
    assert_eq!(deep.status, StatusCode::BAD_REQUEST);
    assert_eq!(deep.body["field"], "offset");
    assert!(deep.body["message"].as_str().unwrap().contains("after"));
    // Users and routers walk the same way.
    for (list, path) in [
        ("/users?archived=true&limit=100", "/users?archived=true"),
        ("/routers?limit=100", "/routers"),
    ] {
        let one_page = app.call(Method::GET, list, &t, None).await;
        let (walked, _) = walk(&app, &t, path, 1).await;
        assert_eq!(walked, ids_of(&one_page.body), "{path}");
    }
}

#[tokio::test]
async fn another_accounts_records_are_not_found() {
    let app = TestApp::spawn().await;
    let northwind = app.northwind().await;
    let globex = app.token(GLOBEX, ALL_SCOPES).await;
    for method in [Method::GET, Method::DELETE] {
        let a = app
            .call(
                method,
                &format!("/contacts/{GLOBEX_HANK}"),
                &northwind,
                None,
            )
            .await;
        assert_eq!(a.status, StatusCode::NOT_FOUND);
    }
    let a = app
        .call(
            Method::PATCH,
            &format!("/contacts/{GLOBEX_HANK}"),
            &northwind,
            Some(json!({"fields": {"first_name": "X"}})),
        )
        .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let list = app
        .call(Method::GET, "/contacts?limit=100", &globex, None)
        .await;
    let ids: Vec<&Value> = list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["id"])
        .collect();
    assert_eq!(ids, [&json!(GLOBEX_HANK)]);
    // Keys are per account: Globex may hold an e-mail Northwind holds.
    let a = create(
        &app,
        &globex,
        "/contacts",
        json!({"email": "dana@contoso.example"}),
    )
    .await;
    assert_eq!(a.status, StatusCode::CREATED);
    // The custom field of Northwind does not exist for Globex.
    let a = create(
        &app,
        &globex,
        "/contacts",
        json!({"first_name": "R", "region": "emea"}),
    )
    .await;
    assert_eq!(a.body["field"], "region");
    // A malformed id names no record.
    let a = app
        .call(Method::GET, "/contacts/not-a-uuid", &northwind, None)
        .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn routes_answer_400_405_404_and_413_in_the_contract_shape() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let a = app
        .call(Method::PATCH, "/contacts", &t, Some(json!({"fields": {}})))
        .await;
    assert_error(
        &a,
        StatusCode::BAD_REQUEST,
        "Missing path parameter: contactId",
    );
    let a = app.call(Method::DELETE, "/companies", &t, None).await;
    assert_error(
        &a,
        StatusCode::BAD_REQUEST,
        "Missing path parameter: companyId",
    );
    let a = app.call(Method::GET, "/deals/", &t, None).await;
    assert_error(
        &a,
        StatusCode::BAD_REQUEST,
        "Missing path parameter: dealId",
    );
    let a = app
        .call(
            Method::PUT,
            &format!("/contacts/{DANA}"),
            &t,
            Some(json!({})),
        )
        .await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(a.headers["allow"], "GET, PATCH, DELETE");
    assert_eq!(a.body["error"], true);
    // PATCH and DELETE are answered on the collection too (400 `Missing path parameter`), but
    // no request to them succeeds: `Allow` lists the collection's operations only.
    let a = app.call(Method::PUT, "/tickets", &t, None).await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(a.headers["allow"], "GET, POST");
    let a = app.call(Method::GET, "/widgets", &t, None).await;
    assert_error(&a, StatusCode::NOT_FOUND, "Not found");
    let auth = format!("Bearer {t}");
    let big = vec![b' '; 1024 * 1024 + 1];
    let a = app
        .raw(
            Method::POST,
            "/contacts",
            &[("authorization", auth.as_str())],
            big,
        )
        .await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(a.body["error"], true);
    assert!(a.headers.contains_key("x-request-id"));
}

#[tokio::test]
async fn missing_bad_and_underprivileged_tokens_are_401_and_403() {
    let app = TestApp::spawn().await;
    let a = app.raw(Method::GET, "/contacts", &[], vec![]).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert_eq!(a.body["error"], true);
    assert!(a.headers.contains_key("www-authenticate"));
    let a = app.call(Method::GET, "/contacts", "not.a.jwt", None).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    let a = app
        .raw(
            Method::GET,
            "/contacts",
            &[("authorization", "Basic abc")],
            vec![],
        )
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);

    let read_only = app.token(NORTHWIND_READONLY, "service-api/read").await;
    assert_eq!(
        app.call(Method::GET, "/contacts", &read_only, None)
            .await
            .status,
        StatusCode::OK
    );
    let cases = [
        (Method::POST, "/contacts".to_string(), "service-api/create"),
        (
            Method::PATCH,
            format!("/contacts/{DANA}"),
            "service-api/update",
        ),
        (
            Method::DELETE,
            format!("/contacts/{DANA}"),
            "service-api/delete",
        ),
        (Method::PATCH, "/contacts".to_string(), "service-api/update"),
    ];
    for (method, path, scope) in cases {
        let a = app
            .call(
                method,
                &path,
                &read_only,
                Some(json!({"fields": {"first_name": "x"}})),
            )
            .await;
        assert_error(
            &a,
            StatusCode::FORBIDDEN,
            &format!("Insufficient scope: requires {scope}"),
        );
    }
    // 401 comes before 404 and 400.
    let a = app
        .raw(
            Method::GET,
            "/contacts/not-a-uuid?properties=bad",
            &[],
            vec![],
        )
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn twenty_concurrent_creates_with_one_email_give_one_201_and_nineteen_409s() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let router = app.router.clone();
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            let app = TestApp { router };
            create(
                &app,
                &t,
                "/contacts",
                json!({"email": "race@x.example", "first_name": format!("R{i}")}),
            )
            .await
            .status
        }));
    }
    let mut created = 0;
    let mut conflicts = 0;
    for task in tasks {
        match task.await.unwrap() {
            StatusCode::CREATED => created += 1,
            StatusCode::CONFLICT => conflicts += 1,
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((created, conflicts), (1, 19));
}

#[tokio::test]
async fn datetime_number_and_enumeration_fields_are_stored_canonically() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let a = create(
        &app,
        &t,
        "/deals",
        json!({"deal_name": "Canon", "deal_stage": "Contract Sent", "pipeline": "Sales pipeline",
               "close_date": "Sun, 22 Nov 2026 10:30:00 +0100", "amount": "12.50", "deal_type": "NEW BUSINESS"}),
    )
    .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    assert_eq!(a.body["deal_stage"], "contract_sent");
    assert_eq!(a.body["pipeline"], "default");
    assert_eq!(a.body["close_date"], "2026-11-22T09:30:00.000Z");
    assert_eq!(a.body["amount"], "12.5");
    assert_eq!(a.body["deal_type"], "new_business");
    // An option the account added to a standard enumeration is accepted.
    let a = create(
        &app,
        &t,
        "/deals",
        json!({"deal_name": "Hold", "deal_stage": "On hold", "pipeline": "default"}),
    )
    .await;
    assert_eq!(a.body["deal_stage"], "on_hold");
}

#[tokio::test]
async fn a_store_failure_is_an_opaque_500_in_the_error_shape() {
    use std::sync::atomic::Ordering;
    let (app, faulty) = spawn_on_faulty_store().await;
    let t = app.northwind().await;
    faulty.faults.backend_down.store(true, Ordering::SeqCst);
    let a = app
        .call(Method::GET, &format!("/contacts/{DANA}"), &t, None)
        .await;
    assert_eq!(a.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        a.body,
        json!({"message": "Internal server error", "error": true})
    );
    let token = app
        .raw(
            Method::POST,
            "/oauth2/token",
            &[("content-type", "application/x-www-form-urlencoded")],
            b"grant_type=client_credentials&client_id=northwind-integration&client_secret=x&scope=service-api%2Fread"
                .to_vec(),
        )
        .await;
    assert_eq!(token.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(token.body["error"], "server_error");
}
