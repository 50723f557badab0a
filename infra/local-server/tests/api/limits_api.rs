//! BEHAVIOR 12 over HTTP on both stores: the embedded store and DynamoDB on
//! the emulator accept and refuse exactly the same writes, a limit of DynamoDB is a 400 and
//! never a 500, list pages stay within Lambda's 6 MB answer, and one canonical e-mail form
//! (A-label domains) serves uniqueness and account matching.
//!
//! `shared::on_both_stores!` runs every test body once per store (`memory::<name>`,
//! `dynamodb::<name>`, the latter on a fresh table of its own; `bash infra/scripts/test.sh`
//! starts the emulator).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{json, Value};

shared::on_both_stores!(
    threads = 2; with app_on:
    a_record_string_is_at_most_65536_characters,
    a_record_is_at_most_300_kb_of_json_on_create_and_patch,
    numbers_must_be_storable_by_dynamodb,
    member_texts_and_lists_have_limits_naming_the_key,
    capacity_entries_are_flat_small_and_storable,
    a_member_is_at_most_300_kb_of_json,
    a_list_page_of_large_records_stops_at_its_byte_budget_and_continues_with_after,
    an_idn_email_matches_its_company_and_is_one_unique_key_in_both_forms,
    an_overlong_dispatch_id_is_a_400_that_records_nothing,
    an_error_answer_echoes_at_most_256_characters_and_replays_the_same,
    a_client_value_longer_than_a_dynamodb_key_is_a_4xx_on_every_route,
    an_email_longer_than_a_key_in_a_router_is_the_same_400_on_both_stores,
    a_restore_of_a_revision_longer_than_a_key_answers_as_without_an_idempotency_key,
    a_router_whose_items_pass_400_kb_as_dynamodb_sizes_them_is_router_too_large,
    a_calendar_whose_item_passes_400_kb_as_dynamodb_sizes_it_is_too_large,
);

const ANA: &str = "1d7e8f90-a1b2-4c3d-8e4f-5a6b7c8d9e01";
const BEN: &str = "2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12";
const INBOUND_ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";

fn text(n: usize) -> String {
    "é".repeat(n)
}

async fn post(app: &TestApp, t: &str, path: &str, fields: Value) -> Answer {
    app.call(Method::POST, path, t, Some(json!({ "fields": fields })))
        .await
}

fn assert_400(a: &Answer, field: Option<&str>, what: &str) {
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{what}: {}", a.body);
    assert_eq!(a.body["error"], true, "{what}");
    assert_eq!(a.body["field"].as_str(), field, "{what}: {}", a.body);
}

async fn a_record_string_is_at_most_65536_characters(app: TestApp) {
    let t = app.northwind().await;
    let ok = post(&app, &t, "/contacts", json!({"first_name": text(65_536)})).await;
    assert_eq!(ok.status, StatusCode::CREATED, "{}", ok.body);
    assert_eq!(
        ok.body["first_name"].as_str().unwrap().chars().count(),
        65_536
    );
    let long = post(&app, &t, "/contacts", json!({"first_name": text(65_537)})).await;
    assert_400(&long, Some("first_name"), "65,537 characters");
    assert_eq!(
        long.body["message"],
        "Invalid value for first_name: at most 65536 characters"
    );
    // Every type of field, the custom `region` too.
    for (path, field) in [
        ("/contacts", "region"),
        ("/contacts", "email"),
        ("/contacts", "contact_owner"),
        ("/deals", "amount"),
        ("/deals", "close_date"),
        ("/deals", "deal_stage"),
    ] {
        let a = post(&app, &t, path, json!({ field: text(65_537) })).await;
        assert_400(&a, Some(field), field);
    }
    let id = ok.body["id"].as_str().unwrap();
    let patch = app
        .call(
            Method::PATCH,
            &format!("/contacts/{id}"),
            &t,
            Some(json!({"fields": {"last_name": text(65_537)}})),
        )
        .await;
    assert_400(&patch, Some("last_name"), "PATCH");
}

/// Seven fields of 65,536 two-byte characters are about 900 KB of JSON: a DynamoDB item of
/// more than 400 KB (a 500 before the limit), taken by the embedded store.
async fn a_record_is_at_most_300_kb_of_json_on_create_and_patch(app: TestApp) {
    let t = app.northwind().await;
    let names = [
        "first_name",
        "last_name",
        "job_title",
        "company",
        "address",
        "city",
        "country",
    ];
    let mut fields = serde_json::Map::new();
    for name in names {
        fields.insert(name.into(), json!(text(65_536)));
    }
    let too_large = post(&app, &t, "/contacts", Value::Object(fields)).await;
    assert_400(&too_large, None, "seven long fields");
    assert_eq!(too_large.body["message"], "Record too large");

    // 2 x 65,536 two-byte characters = 262,144 bytes of JSON, and a bit: within 300 KB.
    let ok = post(
        &app,
        &t,
        "/contacts",
        json!({"first_name": text(65_536), "last_name": text(65_536)}),
    )
    .await;
    assert_eq!(ok.status, StatusCode::CREATED, "{}", ok.body);
    let id = ok.body["id"].as_str().unwrap();
    let grow = app
        .call(
            Method::PATCH,
            &format!("/contacts/{id}"),
            &t,
            Some(json!({"fields": {"city": text(30_000)}})),
        )
        .await;
    assert_400(&grow, None, "PATCH past 300 KB");
    assert_eq!(grow.body["message"], "Record too large");
    let read = app
        .call(
            Method::GET,
            &format!("/contacts/{id}?properties=city"),
            &t,
            None,
        )
        .await;
    assert_eq!(read.body["city"], Value::Null, "nothing was written");
    let small = app
        .call(
            Method::PATCH,
            &format!("/contacts/{id}"),
            &t,
            Some(json!({"fields": {"city": text(10_000)}})),
        )
        .await;
    assert_eq!(small.status, StatusCode::OK, "{}", small.body);
}

async fn numbers_must_be_storable_by_dynamodb(app: TestApp) {
    let t = app.northwind().await;
    let deal = |amount: Value| json!({"deal_name": "D", "deal_stage": "qualified_to_buy", "pipeline": "default", "amount": amount});
    for ok in [
        json!(1e125),
        json!(-9.99e125),
        json!(1e-130),
        json!(0),
        json!("-1e-130"),
    ] {
        let a = post(&app, &t, "/deals", deal(ok.clone())).await;
        assert_eq!(a.status, StatusCode::CREATED, "{ok}: {}", a.body);
    }
    for bad in [
        json!(1e126),
        json!(1e200),
        json!(-1e300),
        json!(1e-131),
        json!("1e400"),
    ] {
        let a = post(&app, &t, "/deals", deal(bad.clone())).await;
        assert_400(&a, Some("amount"), &bad.to_string());
    }
}

async fn patch_user(app: &TestApp, t: &str, id: &str, body: Value) -> Answer {
    app.call(Method::PATCH, &format!("/users/{id}"), t, Some(body))
        .await
}

fn hours(n: usize) -> Value {
    json!(vec![
        json!({"days": "monday", "start_date": "09:00", "end_date": "17:00"});
        n
    ])
}

fn out_of_office(n: usize) -> Value {
    json!(vec![
        json!({"start_date": "2026-12-24", "end_date": "2026-12-26"});
        n
    ])
}

async fn member_texts_and_lists_have_limits_naming_the_key(app: TestApp) {
    let t = app.northwind().await;
    let at_limit = json!({
        "full_name": text(256), "first_name": text(256), "last_name": text(256),
        "phone": text(256), "external_id": text(256),
        "working_hours": hours(50), "out_office_dates": out_of_office(200),
        "notification_preferences": (0..50).map(|i| format!("{i:0>100}")).collect::<Vec<_>>(),
        "capacity": vec![json!({"max_capacity": 5}); 50],
    });
    let ok = patch_user(&app, &t, BEN, at_limit).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    assert_eq!(ok.body["out_office_dates"].as_array().unwrap().len(), 200);
    for key in [
        "full_name",
        "first_name",
        "last_name",
        "phone",
        "external_id",
    ] {
        let a = patch_user(&app, &t, BEN, json!({ key: text(257) })).await;
        assert_400(&a, Some(key), key);
    }
    for (key, value) in [
        ("working_hours", hours(51)),
        ("out_office_dates", out_of_office(201)),
        ("notification_preferences", json!(vec!["a"; 51])),
        ("notification_preferences", json!(["ok", "x".repeat(101)])),
        ("capacity", json!(vec![json!({"max_capacity": 5}); 51])),
    ] {
        let a = patch_user(&app, &t, BEN, json!({ key: value })).await;
        assert_400(&a, Some(key), key);
    }
    let still = app
        .call(Method::GET, &format!("/users/{BEN}"), &t, None)
        .await;
    assert_eq!(still.body["working_hours"].as_array().unwrap().len(), 50);
}

async fn capacity_entries_are_flat_small_and_storable(app: TestApp) {
    let t = app.northwind().await;
    let twenty: serde_json::Map<String, Value> = (0..20)
        .map(|i| (format!("k{i}"), json!(text(256))))
        .collect();
    let edge = json!({"a": 1e125, "b": -1e-130, "c": true, "d": null, "e": "x"});
    let ok = patch_user(&app, &t, ANA, json!({"capacity": [twenty, edge]})).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    let mut twenty_one: serde_json::Map<String, Value> =
        (0..21).map(|i| (format!("k{i}"), json!(i))).collect();
    twenty_one.insert("max_capacity".into(), json!(3));
    for (entry, what) in [
        (Value::Object(twenty_one), "21 keys"),
        (json!({"note": text(257)}), "a long value"),
        (json!({ text(257): 1 }), "a long key"),
        (json!({"n": 1e200}), "1e200"),
        (json!({"n": 1e126}), "1e126"),
        (json!({"n": 1e-131}), "1e-131"),
        (json!({"nested": {"a": {"b": 1}}}), "an object"),
        (json!({"list": [1, 2]}), "an array"),
    ] {
        let a = patch_user(&app, &t, ANA, json!({"capacity": [entry]})).await;
        assert_400(&a, Some("capacity"), what);
    }
    // Nesting deeper than DynamoDB's 32 levels is an object value like any other.
    let mut deep = json!(1);
    for _ in 0..40 {
        deep = json!({ "x": deep });
    }
    let a = patch_user(&app, &t, ANA, json!({"capacity": [{"deep": deep}]})).await;
    assert_400(&a, Some("capacity"), "40 levels");
}

/// 40 entries of 20 values of 256 four-byte characters: about 820 KB of JSON, within the 1 MiB
/// body limit and every per-entry limit, and more than DynamoDB's 400 KB item.
async fn a_member_is_at_most_300_kb_of_json(app: TestApp) {
    let t = app.northwind().await;
    let entry: serde_json::Map<String, Value> = (0..20)
        .map(|i| (format!("k{i}"), json!("😀".repeat(256))))
        .collect();
    let a = patch_user(&app, &t, ANA, json!({"capacity": vec![entry.clone(); 40]})).await;
    assert_400(&a, Some("capacity"), "820 KB of capacity");
    assert_eq!(a.body["message"], "User too large");
    let fits = patch_user(&app, &t, ANA, json!({"capacity": vec![entry; 10]})).await;
    assert_eq!(fits.status, StatusCode::OK, "{}", fits.body);
}

/// Each contact shows about 262 KB (four fields of 65,536 ASCII characters): a page of 12
/// would be over 3 MB, more than the 2.5 MiB budget: the first page stops after 9 of them.
async fn a_list_page_of_large_records_stops_at_its_byte_budget_and_continues_with_after(
    app: TestApp,
) {
    let t = app.northwind().await;
    let x = "x".repeat(65_536);
    let big = json!({"first_name": x, "last_name": x, "city": x, "job_title": x});
    for _ in 0..12 {
        let a = post(&app, &t, "/contacts", big.clone()).await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    }
    let mut seen = Vec::new();
    let mut uri = "/contacts?limit=100&properties=city,job_title".to_string();
    let mut pages = 0;
    loop {
        let raw = app
            .raw(
                Method::GET,
                &uri,
                &[("authorization", &format!("Bearer {t}"))],
                vec![],
            )
            .await;
        assert_eq!(raw.status, StatusCode::OK, "{}", raw.body);
        let bytes = serde_json::to_vec(&raw.body).unwrap().len();
        assert!(bytes < 3 * 1024 * 1024, "a page of {bytes} bytes");
        let count = raw.body["pagination"]["count"].as_u64().unwrap() as usize;
        if pages == 0 {
            assert_eq!(
                count,
                2 + 9,
                "the seed's two small contacts, then 9 large ones"
            );
        }
        assert_eq!(raw.body["data"].as_array().unwrap().len(), count);
        assert!(count >= 1);
        for item in raw.body["data"].as_array().unwrap() {
            seen.push(item["id"].as_str().unwrap().to_string());
        }
        pages += 1;
        match raw.body["pagination"]["next_after"].as_str() {
            Some(after) => {
                uri = format!("/contacts?limit=100&properties=city,job_title&after={after}")
            }
            None => break,
        }
    }
    // The demo seed's two contacts and the twelve large ones, each once, in at least 2 pages.
    assert!(pages >= 2, "{pages} pages");
    assert_eq!(seen.len(), 14);
    let unique: std::collections::HashSet<_> = seen.iter().collect();
    assert_eq!(unique.len(), 14);
}

/// `ana@bücher.example` is `ana@xn--bcher-kva.example`, and its domain is
/// the canonical host of `https://www.bücher.example`.
async fn an_idn_email_matches_its_company_and_is_one_unique_key_in_both_forms(app: TestApp) {
    let t = app.northwind().await;
    let company = post(
        &app,
        &t,
        "/companies",
        json!({"company_name": "Bücher", "website_url": "https://www.Bücher.example/shop",
               "company_owner": "ben.okafor@northwind.example"}),
    )
    .await;
    assert_eq!(company.status, StatusCode::CREATED, "{}", company.body);
    let contact = post(
        &app,
        &t,
        "/contacts",
        json!({"email": "Ana@Bücher.example", "region": "emea"}),
    )
    .await;
    assert_eq!(contact.status, StatusCode::CREATED, "{}", contact.body);
    assert_eq!(contact.body["email"], "ana@xn--bcher-kva.example");
    let again = post(
        &app,
        &t,
        "/contacts",
        json!({"email": "ana@xn--bcher-kva.example"}),
    )
    .await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
    assert_eq!(again.body["field"], "email");

    // Rotation would give Ana (first in the pool); account matching gives Bücher's owner.
    let id = contact.body["id"].as_str().unwrap();
    let dispatched = app
        .call(
            Method::POST,
            "/dispatch/router",
            &t,
            Some(json!({"router_id": INBOUND_ROUTER, "object_id": id})),
        )
        .await;
    assert_eq!(dispatched.status, StatusCode::OK, "{}", dispatched.body);
    assert_eq!(dispatched.body["user"], "ben.okafor@northwind.example");

    // A user field finds a member by either form of its address.
    let owner = post(
        &app,
        &t,
        "/contacts",
        json!({"email": "x@example.com", "contact_owner": "BEN.OKAFOR@northwind.example"}),
    )
    .await;
    assert_eq!(owner.status, StatusCode::CREATED, "{}", owner.body);
}

/// BEHAVIOR 12: a `router_id` or `object_id` over 256 characters is answered
/// like a missing one, by dispatch and explain alike, and no history entry is written (it used
/// to be copied into the entry: a 500 on DynamoDB, a 200 on the embedded store).
async fn an_overlong_dispatch_id_is_a_400_that_records_nothing(app: TestApp) {
    let t = app.northwind().await;
    let before = app
        .call(
            Method::GET,
            &format!("/routers/{INBOUND_ROUTER}/dispatches?limit=100"),
            &t,
            None,
        )
        .await;
    for body in [
        json!({"router_id": INBOUND_ROUTER, "object_id": "x".repeat(1_000_000)}),
        json!({"router_id": INBOUND_ROUTER, "object_id": text(257)}),
        json!({"router_id": text(257), "object_id": "x"}),
    ] {
        for path in ["/dispatch/router", "/dispatch/router/explain"] {
            let a = app.call(Method::POST, path, &t, Some(body.clone())).await;
            assert_eq!(a.status, StatusCode::BAD_REQUEST, "{path}");
            assert_eq!(
                a.body,
                json!({"message": "Invalid event: require router_id and object_id", "error": true})
            );
        }
    }
    let at_limit = app
        .call(
            Method::POST,
            "/dispatch/router",
            &t,
            Some(json!({"router_id": INBOUND_ROUTER, "object_id": text(256)})),
        )
        .await;
    assert_eq!(at_limit.body, json!({"message": "Object not found"}));
    let after = app
        .call(
            Method::GET,
            &format!("/routers/{INBOUND_ROUTER}/dispatches?limit=100"),
            &t,
            None,
        )
        .await;
    let count = |page: &Value| page["data"].as_array().unwrap().len();
    assert_eq!(
        count(&after.body),
        count(&before.body) + 1,
        "only the 256-character id left an entry"
    );
}

/// BEHAVIOR 12: a 400 quotes at most 256 characters of the input, so the
/// answer stored for an `Idempotency-Key` is small and the same on both stores.
async fn an_error_answer_echoes_at_most_256_characters_and_replays_the_same(app: TestApp) {
    let t = app.northwind().await;
    let name = "x".repeat(1_000_000);
    let body = json!({"fields": {name.clone(): "x"}}).to_string();
    let auth = format!("Bearer {t}");
    let headers = [
        ("authorization", auth.as_str()),
        ("content-type", "application/json"),
        ("idempotency-key", "echo-1"),
    ];
    let first = app
        .raw(
            Method::POST,
            "/contacts",
            &headers,
            body.clone().into_bytes(),
        )
        .await;
    assert_eq!(first.status, StatusCode::BAD_REQUEST);
    let message = first.body["message"].as_str().unwrap();
    assert!(message.starts_with("Unknown field: xxxx"), "{message}");
    assert!(
        message.chars().count() <= 256,
        "{} characters",
        message.chars().count()
    );
    assert!(first.body["field"].as_str().unwrap().chars().count() <= 256);
    let replay = app
        .raw(Method::POST, "/contacts", &headers, body.into_bytes())
        .await;
    assert_eq!(replay.body, first.body);
    let list = app
        .call(
            Method::GET,
            &format!("/contacts?properties={}", "p".repeat(10_000)),
            &t,
            None,
        )
        .await;
    assert_eq!(list.status, StatusCode::BAD_REQUEST);
    assert!(list.body["message"].as_str().unwrap().chars().count() <= 256);
}

/// BEHAVIOR 12: DynamoDB refuses a partition key over 2,048 bytes and a sort
/// key over 1,024 bytes with a ValidationException (the emulator enforces it as DynamoDB does).
/// Every route that puts a client's value into a key answers such a value as the embedded store
/// does: 404 or 400 in the error shape, never a 500.
async fn a_client_value_longer_than_a_dynamodb_key_is_a_4xx_on_every_route(app: TestApp) {
    let t = app.northwind().await;
    let long = "a".repeat(3_000);
    let subscription = app
        .call(
            Method::POST,
            "/webhooks",
            &t,
            Some(json!({"url": "http://127.0.0.1:9/hooks", "events": ["assignment.created"]})),
        )
        .await;
    assert_eq!(
        subscription.status,
        StatusCode::CREATED,
        "{}",
        subscription.body
    );
    let webhook = subscription.body["id"].as_str().unwrap();
    let patch = Some(json!({"fields": {"job_title": "x"}}));
    let cases: Vec<(Method, String, Option<Value>, StatusCode)> = vec![
        (
            Method::GET,
            format!("/contacts/{long}"),
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            Method::PATCH,
            format!("/contacts/{long}"),
            patch.clone(),
            StatusCode::NOT_FOUND,
        ),
        (
            Method::DELETE,
            format!("/contacts/{long}"),
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            Method::GET,
            format!("/contacts/{long}/dispatches"),
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            Method::GET,
            format!("/users/{long}"),
            None,
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::PATCH,
            format!("/users/{long}"),
            Some(json!({"phone": "1"})),
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            format!("/routers/{long}"),
            None,
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            format!("/routers/{long}/dispatches"),
            None,
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            format!("/routers/{long}/stats"),
            None,
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            format!("/webhooks/{long}"),
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            Method::PATCH,
            format!("/webhooks/{long}"),
            Some(json!({"enabled": false})),
            StatusCode::NOT_FOUND,
        ),
        (
            Method::DELETE,
            format!("/webhooks/{long}"),
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            Method::POST,
            format!("/webhooks/{long}/rotate-secret"),
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            Method::GET,
            format!("/webhooks/{long}/deliveries"),
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            Method::POST,
            format!("/webhooks/{webhook}/deliveries/msg_{long}/retry"),
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            Method::POST,
            "/contacts".into(),
            Some(
                json!({"fields": {"email": "new@x.example", "contact_owner": format!("{long}@x.example")}}),
            ),
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::POST,
            "/dispatch/router".into(),
            Some(json!({"router_id": long, "object_id": "x"})),
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (method, uri, body, status) in cases {
        let a = app.call(method.clone(), &uri, &t, body).await;
        let shown = &uri[..uri.len().min(60)];
        assert_eq!(a.status, status, "{method} {shown}...: {}", a.body);
        assert_eq!(a.body["error"], true, "{method} {shown}...: {}", a.body);
    }
    // The token endpoint: an unknown client, whatever the length of its id.
    let form = format!(
        "grant_type=client_credentials&client_id={long}&client_secret=x&scope=service-api%2Fread"
    );
    let a = app
        .raw(
            Method::POST,
            "/oauth2/token",
            &[("content-type", "application/x-www-form-urlencoded")],
            form.into_bytes(),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{}", a.body);
    assert_eq!(a.body["error"], "invalid_client");
}

/// A round robin contacts router over Ben (a member of the demo's Northwind account).
fn router_body(name: &str) -> Value {
    json!({
        "name": name,
        "object_type": "contacts",
        "settings": {"owner_field": "contact_owner", "distribution_model": "round robin"},
        "users": [{"email": "ben.okafor@northwind.example"}],
        "teams": []
    })
}

/// BEHAVIOR 12: a 1,100-character e-mail was a sort-key prefix over 1,024 bytes on DynamoDB (500).
async fn an_email_longer_than_a_key_in_a_router_is_the_same_400_on_both_stores(app: TestApp) {
    let t = app.northwind().await;
    let long = format!("{}@northwind.example", "a".repeat(1_100));
    let mut user = router_body("Long user");
    user["users"][0]["email"] = json!(long);
    let a = app.call(Method::POST, "/routers", &t, Some(user)).await;
    assert_400(&a, Some("users[0].email"), "a long users[0].email");
    let mut default_user = router_body("Long default user");
    default_user["settings"]["default_user"] = json!(long);
    let a = app
        .call(Method::POST, "/routers", &t, Some(default_user))
        .await;
    assert_400(&a, Some("settings.default_user"), "a long default_user");
    // Not an address at all, and as long: the same answers.
    let mut user = router_body("Long text");
    user["users"][0]["email"] = json!("é".repeat(1_100));
    let a = app.call(Method::POST, "/routers", &t, Some(user)).await;
    assert_400(&a, Some("users[0].email"), "a long non-address");
}

/// BEHAVIOR 12: the raw path segment went into the idempotency item's sort key (500 on DynamoDB).
async fn a_restore_of_a_revision_longer_than_a_key_answers_as_without_an_idempotency_key(
    app: TestApp,
) {
    let t = app.northwind().await;
    let created = app
        .call(Method::POST, "/routers", &t, Some(router_body("Restored")))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let id = created.body["id"].as_str().unwrap();
    let digits = "9".repeat(1_100);
    let path = format!("/routers/{id}/revisions/{digits}/restore");
    let without = app.call(Method::POST, &path, &t, None).await;
    assert!(
        [StatusCode::NOT_FOUND, StatusCode::BAD_REQUEST].contains(&without.status),
        "{}",
        without.body
    );
    for key in ["restore-1", "restore-1", "restore-2"] {
        let with = app
            .with_headers(Method::POST, &path, &t, &[("idempotency-key", key)], None)
            .await;
        assert_eq!(with.status, without.status, "{key}: {}", with.body);
        assert_eq!(with.body, without.body, "{key}");
    }
    // The router's own revision restores under a key as before.
    let path = format!("/routers/{id}/revisions/1/restore");
    let restored = app
        .with_headers(
            Method::POST,
            &path,
            &t,
            &[("idempotency-key", "restore-3")],
            None,
        )
        .await;
    assert_eq!(restored.status, StatusCode::OK, "{}", restored.body);
}

/// BEHAVIOR 12: 150,000 small numbers are 300 KB of JSON but about 450 KB as DynamoDB sizes a
/// list of numbers (3 bytes each); the router, draft and revision items each hold them.
async fn a_router_whose_items_pass_400_kb_as_dynamodb_sizes_them_is_router_too_large(app: TestApp) {
    let t = app.northwind().await;
    let trigger = |n: usize| {
        let values: Vec<u32> = (0..n).map(|i| (i % 9 + 1) as u32).collect();
        json!({"groups": [{"conditions": [
            {"field": "first_name", "operator": "in", "value": values}
        ]}]})
    };
    let mut big = router_body("Numbers");
    big["settings"]["trigger"] = trigger(150_000);
    assert!(serde_json::to_vec(&big).unwrap().len() < 300 * 1024);
    let a = app
        .call(Method::POST, "/routers", &t, Some(big.clone()))
        .await;
    assert_400(&a, None, "150,000 numbers");
    assert_eq!(a.body["message"], "Router too large");
    // The same as a draft of an existing router; nothing written.
    let created = app
        .call(Method::POST, "/routers", &t, Some(router_body("Numbers")))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let id = created.body["id"].as_str().unwrap();
    let draft = app
        .call(Method::PUT, &format!("/routers/{id}/draft"), &t, Some(big))
        .await;
    assert_400(&draft, None, "150,000 numbers as a draft");
    assert_eq!(draft.body["message"], "Router too large");
    let none = app
        .call(Method::GET, &format!("/routers/{id}/draft"), &t, None)
        .await;
    assert_eq!(none.status, StatusCode::NOT_FOUND, "{}", none.body);
    // A list that fits is taken.
    let mut fits = router_body("Numbers that fit");
    fits["settings"]["trigger"] = trigger(100_000);
    let a = app.call(Method::POST, "/routers", &t, Some(fits)).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
}

/// BEHAVIOR 12: 500 holidays named with 200 four-byte characters are about 430 KB (names were
/// counted in characters): 201 on the embedded store, 500 on DynamoDB.
async fn a_calendar_whose_item_passes_400_kb_as_dynamodb_sizes_it_is_too_large(app: TestApp) {
    let t = app.northwind().await;
    let calendar = |chars: usize| {
        let holidays: Vec<Value> = (0..500)
            .map(|i| {
                let date =
                    chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + chrono::Days::new(i);
                json!({"name": "😀".repeat(chars), "date": date.to_string()})
            })
            .collect();
        json!({"name": "Emoji", "time_zone": "UTC", "holidays": holidays})
    };
    let a = app
        .call(Method::POST, "/holiday-calendars", &t, Some(calendar(200)))
        .await;
    assert_400(&a, None, "500 holidays of 200 four-byte characters");
    assert_eq!(a.body["message"], "Holiday calendar too large");
    let listed = app.call(Method::GET, "/holiday-calendars", &t, None).await;
    let names: Vec<&Value> = listed.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert!(!names.contains(&&json!("Emoji")), "{names:?}");
    // 180 characters each fit (about 380 KB); replacing them by 200 does not.
    let a = app
        .call(Method::POST, "/holiday-calendars", &t, Some(calendar(180)))
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    let id = a.body["id"].as_str().unwrap();
    let a = app
        .call(
            Method::PUT,
            &format!("/holiday-calendars/{id}"),
            &t,
            Some(calendar(200)),
        )
        .await;
    assert_400(&a, None, "a replacement of 200 four-byte characters");
    assert_eq!(a.body["message"], "Holiday calendar too large");
}

/// Router validation reads members by key, boundedly, counted at the port
/// (every store call) and, on DynamoDB, by request.
mod member_reads {
    use super::*;
    use shared::store::faulty::FaultyStore;
    use shared::store::harness::Backend;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    shared::on_both_stores!(
        threads = 2;
        a_body_naming_50000_members_is_refused_before_any_member_is_read,
        a_roster_of_500_users_is_read_by_key_in_batches_of_100,
    );

    /// The app over `backend`'s store behind a counting [`FaultyStore`], and on DynamoDB the
    /// table's request counter.
    async fn counted(
        backend: Backend,
    ) -> (
        TestApp,
        Arc<FaultyStore>,
        Option<shared::store::dynamodb::RequestCounter>,
    ) {
        let (inner, counter): (Arc<dyn shared::store::Store>, _) = match backend {
            Backend::Memory => (backend.store().await, None),
            Backend::Dynamo => {
                let table = shared::store::dynamodb::test_table::TestTable::create()
                    .await
                    .unwrap();
                (Arc::new(table.store.clone()), Some(table.counter))
            }
        };
        let faulty = Arc::new(FaultyStore::new(inner));
        let app = app_on(faulty.clone()).await;
        (app, faulty, counter)
    }

    fn member_reads(calls: &BTreeMap<&'static str, usize>) -> usize {
        [
            "identify_members",
            "find_member_by_email",
            "get_members",
            "get_member",
            "list_members",
        ]
        .iter()
        .map(|m| calls.get(m).copied().unwrap_or(0))
        .sum()
    }

    async fn a_body_naming_50000_members_is_refused_before_any_member_is_read(backend: Backend) {
        let (app, faulty, counter) = counted(backend).await;
        let t = app.northwind().await;
        // Short distinct addresses (`0a@b.io`): 50,000 users stay under the 1 MiB body limit.
        const CHARS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
        let address = |i: usize| {
            let (a, b, c) = (i % 62, (i / 62) % 62, (i / 3_844) % 26);
            let (a, b, c) = (CHARS[a] as char, CHARS[b] as char, (b'a' + c as u8) as char);
            format!("{a}{b}@{c}.io")
        };
        let emails: Vec<String> = (0..50_000).map(address).collect();
        let mut users = router_body("Crowd");
        users["users"] = emails.iter().map(|e| json!({"email": e})).collect();
        let mut worked = router_body("Crowd worked");
        worked["settings"]["sla"] = json!({
            "minutes": 10, "worked_field": "contact_owner", "worked_values": emails
        });
        for (body, field) in [(users, "users"), (worked, "settings.sla.worked_values")] {
            assert!(serde_json::to_vec(&body).unwrap().len() < 1024 * 1024);
            if let Some(c) = &counter {
                c.take();
            }
            faulty.faults.rounds.start_calls_only();
            let a = app.call(Method::POST, "/routers", &t, Some(body)).await;
            let (_, calls) = faulty.faults.rounds.stop();
            assert_400(&a, Some(field), field);
            assert_eq!(member_reads(&calls), 0, "{field}: {calls:?}");
            let total: usize = calls.values().sum();
            assert!(total <= 4, "{field}: {calls:?}");
            if let Some(c) = &counter {
                let requests = c.take();
                let sent: u64 = requests.values().sum();
                assert!(sent <= 4, "{field}: {requests:?}");
            }
        }
    }

    async fn a_roster_of_500_users_is_read_by_key_in_batches_of_100(backend: Backend) {
        let (app, faulty, counter) = counted(backend).await;
        let t = app.northwind().await;
        let mut body = router_body("Five hundred");
        let mut users: Vec<Value> = (0..499)
            .map(|i| json!({"email": format!("nobody{i}@northwind.example")}))
            .collect();
        users.push(json!({"email": "ben.okafor@northwind.example"}));
        body["users"] = json!(users);
        body["settings"]["default_user"] = json!("ana.lopez@northwind.example");
        // A worked value of an enumeration field is a value, not a member to read.
        body["settings"]["sla"] = json!({
            "minutes": 10, "worked_field": "lead_status", "worked_values": ["in_progress"]
        });
        if let Some(c) = &counter {
            c.take();
        }
        faulty.faults.rounds.start_calls_only();
        let a = app.call(Method::POST, "/routers", &t, Some(body)).await;
        let (_, calls) = faulty.faults.rounds.stop();
        // 499 addresses that no member has: the first is named.
        assert_400(&a, Some("users[0].email"), "unknown users");
        assert_eq!(calls.get("identify_members"), Some(&1), "{calls:?}");
        assert_eq!(member_reads(&calls), 1, "{calls:?}");
        if let Some(c) = &counter {
            let requests = c.take();
            // 501 e-mails and the account's marker: 6 BatchGetItem requests of at most 100 keys.
            assert_eq!(requests.get("BatchGetItem"), Some(&6), "{requests:?}");
            // The teams' and the field catalogue's, none by e-mail (that would be 499).
            let queries = requests.get("Query").copied().unwrap_or(0);
            assert!(queries <= 2, "{requests:?}");
        }
    }
}
