//! `Idempotency-Key` over HTTP (BEHAVIOR 10) on `POST /{type}` and `POST /dispatch/router`,
//! each test on the embedded store and on DynamoDB (the emulator of `bash
//! infra/scripts/test.sh`, a table of its own per test).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::json;
use shared::idempotency::{ClaimOutcome, Fingerprint, IdempotencyClaim, IdempotencyKey};
use shared::store::Store;
use std::sync::atomic::Ordering;
use std::sync::Arc;

const INBOUND_ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const DANA: &str = "01936b2a-7c00-7a00-8000-000000000002";
const REPLAYED: &str = "idempotent-replayed";

shared::on_both_stores!(
    threads = 2; with app_and_store:
    a_retried_create_answers_the_first_response_and_creates_once,
    a_reused_key_with_another_body_is_422_and_keys_are_per_route,
    invalid_keys_are_400_naming_the_header_and_write_nothing,
    client_errors_are_stored_and_replayed,
    twenty_concurrent_creates_with_one_key_have_exactly_one_effect,
    a_retried_dispatch_replays_its_assignment_and_assigns_once,
    a_key_whose_first_request_is_running_is_409_and_with_another_body_422,
    a_replayed_dispatch_repeats_the_crm_sync_failure_its_first_answer_reported,
);

/// The application over `store` with Initech's CRM unreachable, and the store (what each body
/// takes).
async fn app_and_store(store: Arc<dyn Store>) -> (TestApp, Arc<dyn Store>) {
    crate::common::cheap_secret_hashing();
    let built = local_server::build_app_on(
        local_server::AppConfig {
            // Initech's CRM on a port where nothing listens (the discard port): every sync fails.
            seed: local_server::DEMO_SEED.replace("http://127.0.0.1:4010", "http://127.0.0.1:9"),
            signing_key_pem: None,
        },
        store.clone(),
    )
    .await
    .expect("app builds");
    let app = TestApp {
        router: built.router,
    };
    (app, store)
}

/// `POST path` with a bearer token, a raw JSON body and an optional `Idempotency-Key`.
async fn post(app: &TestApp, token: &str, path: &str, body: &str, key: Option<&str>) -> Answer {
    let auth = format!("Bearer {token}");
    let mut headers = vec![
        ("authorization", auth.as_str()),
        ("content-type", "application/json"),
    ];
    if let Some(k) = key {
        headers.push(("idempotency-key", k));
    }
    app.raw(Method::POST, path, &headers, body.as_bytes().to_vec())
        .await
}

async fn count_contacts_with(app: &TestApp, token: &str, field: &str, value: &str) -> usize {
    let mut n = 0;
    let mut url = "/contacts?limit=100&archived=true".to_string();
    loop {
        let a = app.call(Method::GET, &url, token, None).await;
        assert_eq!(a.status, StatusCode::OK);
        n += a.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c[field] == value)
            .count();
        match a.body["pagination"]["next_after"].as_str() {
            Some(next) => url = format!("/contacts?limit=100&archived=true&after={next}"),
            None => return n,
        }
    }
}

async fn a_retried_create_answers_the_first_response_and_creates_once(
    (app, _store): (TestApp, Arc<dyn Store>),
) {
    let t = app.northwind().await;
    let body =
        r#"{"fields": {"email": "retry@example.com", "first_name": "Re", "last_name": "Try"}}"#;
    let first = post(&app, &t, "/contacts", body, Some("create-1")).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    assert!(first.headers.get(REPLAYED).is_none());
    // The same body with keys reordered and other whitespace is the same request.
    let reordered = "{ \"fields\" : {\"last_name\":\"Try\",\n\"first_name\":\"Re\", \"email\":\"retry@example.com\"} }";
    for again in [body, reordered] {
        let replay = post(&app, &t, "/contacts", again, Some("create-1")).await;
        assert_eq!(replay.status, StatusCode::CREATED);
        assert_eq!(replay.headers[REPLAYED], "true");
        assert_eq!(replay.headers["content-type"], "application/json");
        assert_eq!(
            replay.body, first.body,
            "the stored body, byte for byte the same JSON"
        );
    }
    assert_eq!(
        count_contacts_with(&app, &t, "email", "retry@example.com").await,
        1
    );
    // Without the header nothing changes: the unique e-mail is a 409.
    let plain = post(&app, &t, "/contacts", body, None).await;
    assert_eq!(plain.status, StatusCode::CONFLICT);
    assert!(plain.headers.get(REPLAYED).is_none());
}

async fn a_reused_key_with_another_body_is_422_and_keys_are_per_route(
    (app, _store): (TestApp, Arc<dyn Store>),
) {
    let t = app.northwind().await;
    let first = post(
        &app,
        &t,
        "/contacts",
        r#"{"fields": {"first_name": "One"}}"#,
        Some("shared-key"),
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let other = post(
        &app,
        &t,
        "/contacts",
        r#"{"fields": {"first_name": "Two"}}"#,
        Some("shared-key"),
    )
    .await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        other.body,
        json!({"message": "Idempotency-Key was used with a different request", "error": true})
    );
    assert_eq!(count_contacts_with(&app, &t, "first_name", "Two").await, 0);
    // The same key on another route is another key.
    let company = post(
        &app,
        &t,
        "/companies",
        r#"{"fields": {"company_name": "Keyed Ltd"}}"#,
        Some("shared-key"),
    )
    .await;
    assert_eq!(company.status, StatusCode::CREATED, "{}", company.body);
    assert!(company.headers.get(REPLAYED).is_none());
}

async fn invalid_keys_are_400_naming_the_header_and_write_nothing(
    (app, _store): (TestApp, Arc<dyn Store>),
) {
    let t = app.northwind().await;
    let long = "k".repeat(256);
    for key in ["", long.as_str(), "tab\there"] {
        let a = post(
            &app,
            &t,
            "/contacts",
            r#"{"fields": {"first_name": "Badkey"}}"#,
            Some(key),
        )
        .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{key:?}");
        assert_eq!(
            a.body,
            json!({"message": "Invalid Idempotency-Key", "error": true, "field": "Idempotency-Key"})
        );
    }
    let max = "k".repeat(255);
    let ok = post(
        &app,
        &t,
        "/contacts",
        r#"{"fields": {"first_name": "Longkey"}}"#,
        Some(&max),
    )
    .await;
    assert_eq!(ok.status, StatusCode::CREATED);
    assert_eq!(
        count_contacts_with(&app, &t, "first_name", "Badkey").await,
        0
    );
    // The header sent twice is one invalid header.
    let auth = format!("Bearer {t}");
    let twice = app
        .raw(
            Method::POST,
            "/contacts",
            &[
                ("authorization", auth.as_str()),
                ("content-type", "application/json"),
                ("idempotency-key", "a"),
                ("idempotency-key", "b"),
            ],
            br#"{"fields": {"first_name": "Badkey"}}"#.to_vec(),
        )
        .await;
    assert_eq!(twice.status, StatusCode::BAD_REQUEST);
    assert_eq!(twice.body["field"], "Idempotency-Key");
    // 401 and 403 come first.
    let none = app
        .raw(
            Method::POST,
            "/contacts",
            &[("idempotency-key", "")],
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
}

async fn client_errors_are_stored_and_replayed((app, _store): (TestApp, Arc<dyn Store>)) {
    let t = app.northwind().await;
    let body = r#"{"fields": {"no_such_field": 1}}"#;
    let first = post(&app, &t, "/contacts", body, Some("bad-body")).await;
    assert_eq!(first.status, StatusCode::BAD_REQUEST);
    let again = post(&app, &t, "/contacts", body, Some("bad-body")).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST);
    assert_eq!(again.body, first.body);
    assert_eq!(again.headers[REPLAYED], "true");
    // Not JSON at all: fingerprinted by its bytes.
    let junk = post(&app, &t, "/contacts", "{not json", Some("junk")).await;
    assert_eq!(junk.status, StatusCode::BAD_REQUEST);
    let junk_again = post(&app, &t, "/contacts", "{not json", Some("junk")).await;
    assert_eq!(junk_again.headers[REPLAYED], "true");
    let fixed = post(&app, &t, "/contacts", "{not  json", Some("junk")).await;
    assert_eq!(fixed.status, StatusCode::UNPROCESSABLE_ENTITY);
}

async fn twenty_concurrent_creates_with_one_key_have_exactly_one_effect(
    (app, _store): (TestApp, Arc<dyn Store>),
) {
    let t = app.northwind().await;
    let app = Arc::new(app);
    let body = r#"{"fields": {"first_name": "Racer", "external_id": "race-1"}}"#;
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let app = app.clone();
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            post(&app, &t, "/contacts", body, Some("race-key")).await
        }));
    }
    let mut created = Vec::new();
    let mut replays = Vec::new();
    for task in tasks {
        let a = task.await.unwrap();
        match (a.status, a.headers.get(REPLAYED)) {
            (StatusCode::CREATED, None) => created.push(a.body),
            (StatusCode::CREATED, Some(_)) => replays.push(a.body),
            (StatusCode::CONFLICT, None) => {
                assert_eq!(
                    a.body["message"],
                    "A request with this Idempotency-Key is being processed"
                )
            }
            (status, _) => panic!("unexpected {status}: {}", a.body),
        }
    }
    assert_eq!(created.len(), 1, "exactly one request ran");
    for r in &replays {
        assert_eq!(r, &created[0]);
    }
    assert_eq!(
        count_contacts_with(&app, &t, "first_name", "Racer").await,
        1
    );
    // Afterwards every retry is a replay.
    let late = post(&app, &t, "/contacts", body, Some("race-key")).await;
    assert_eq!(late.headers[REPLAYED], "true");
    assert_eq!(late.body, created[0]);
}

async fn a_retried_dispatch_replays_its_assignment_and_assigns_once(
    (app, _store): (TestApp, Arc<dyn Store>),
) {
    let t = app.northwind().await;
    let body = json!({"router_id": INBOUND_ROUTER, "object_id": DANA}).to_string();
    let first = post(&app, &t, "/dispatch/router", &body, Some("dispatch-1")).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(first.body["message"], "Owner assigned", "{}", first.body);
    let owner = app
        .call(Method::GET, &format!("/contacts/{DANA}"), &t, None)
        .await
        .body;
    let replay = post(&app, &t, "/dispatch/router", &body, Some("dispatch-1")).await;
    assert_eq!(replay.status, StatusCode::OK);
    assert_eq!(replay.headers[REPLAYED], "true");
    assert_eq!(replay.body, first.body);
    let after = app
        .call(Method::GET, &format!("/contacts/{DANA}"), &t, None)
        .await
        .body;
    assert_eq!(after, owner, "the replay changed nothing");
    // A dispatch that assigns nothing is stored too.
    let missing =
        json!({"router_id": INBOUND_ROUTER, "object_id": uuid::Uuid::new_v4()}).to_string();
    let skipped = post(&app, &t, "/dispatch/router", &missing, Some("dispatch-2")).await;
    assert_eq!(skipped.body, json!({"message": "Object not found"}));
    let skipped_again = post(&app, &t, "/dispatch/router", &missing, Some("dispatch-2")).await;
    assert_eq!(skipped_again.headers[REPLAYED], "true");
    assert_eq!(skipped_again.body, skipped.body);
    let reused = post(&app, &t, "/dispatch/router", &body, Some("dispatch-2")).await;
    assert_eq!(reused.status, StatusCode::UNPROCESSABLE_ENTITY);
}

/// BEHAVIOR 10 with BEHAVIOR 7: the CRM is called after the assignment's transaction (which
/// stored the answer known then); a replay still repeats the first answer's `crm_sync_failed`
/// and `crm_error`.
async fn a_replayed_dispatch_repeats_the_crm_sync_failure_its_first_answer_reported(
    (app, _store): (TestApp, Arc<dyn Store>),
) {
    let t = app
        .token(INITECH, "service-api/read service-api/update")
        .await;
    let body = json!({
        "router_id": "f6b7c8d9-e0f1-4a2b-9c34-d5e6f7a8b920",
        "object_id": "01936b2a-7c00-7a00-8000-000000000021"
    })
    .to_string();
    let first = post(&app, &t, "/dispatch/router", &body, Some("crm-1")).await;
    assert_eq!(first.body["message"], "Owner assigned", "{}", first.body);
    assert_eq!(first.body["crm_sync_failed"], true, "{}", first.body);
    let error = first.body["crm_error"].as_str().unwrap();
    assert!(error.starts_with("CRM request failed: "), "{error}");
    let replay = post(&app, &t, "/dispatch/router", &body, Some("crm-1")).await;
    assert_eq!(replay.headers[REPLAYED], "true");
    assert_eq!(replay.body, first.body);
    // A sync that fails before any request (no external_id) too.
    let bare = json!({
        "router_id": "f6b7c8d9-e0f1-4a2b-9c34-d5e6f7a8b920",
        "object_id": "01936b2a-7c00-7a00-8000-000000000023"
    })
    .to_string();
    let first = post(&app, &t, "/dispatch/router", &bare, Some("crm-2")).await;
    assert_eq!(
        first.body["crm_error"], "Record has no external_id",
        "{}",
        first.body
    );
    let replay = post(&app, &t, "/dispatch/router", &bare, Some("crm-2")).await;
    assert_eq!(replay.headers[REPLAYED], "true");
    assert_eq!(replay.body, first.body);
}

/// A dispatch that assigns nothing writes its history entry and its stored
/// answer in one write: when storing an answer on its own fails, the skip still answers (its
/// answer was stored with the entry), a retry replays it, and the history holds one entry.
#[tokio::test]
async fn a_skip_and_its_stored_answer_are_one_write() {
    let (app, faulty) = spawn_on_faulty_store().await;
    let t = app.northwind().await;
    let body = json!({"router_id": INBOUND_ROUTER, "object_id": uuid::Uuid::now_v7()}).to_string();
    faulty.faults.completions_fail.store(true, Ordering::SeqCst);
    let first = post(&app, &t, "/dispatch/router", &body, Some("skip-once")).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(first.body, json!({"message": "Object not found"}));
    let again = post(&app, &t, "/dispatch/router", &body, Some("skip-once")).await;
    assert_eq!(again.headers[REPLAYED], "true");
    assert_eq!(again.body, first.body);
    let history = app
        .call(
            axum::http::Method::GET,
            &format!("/routers/{INBOUND_ROUTER}/dispatches?limit=100"),
            &t,
            None,
        )
        .await;
    let entries = history.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"] == "Object not found")
        .count();
    assert_eq!(entries, 1, "{}", history.body);
}

/// A 5xx is not stored: the key is released, and a retry runs.
#[tokio::test]
async fn a_server_error_is_not_stored_and_a_retry_runs() {
    let (app, faulty) = spawn_on_faulty_store().await;
    let t = app.northwind().await;
    let body = r#"{"fields": {"first_name": "Flaky"}}"#;
    faulty.faults.creates_fail.store(true, Ordering::SeqCst);
    let failed = post(&app, &t, "/contacts", body, Some("flaky")).await;
    assert_eq!(failed.status, StatusCode::INTERNAL_SERVER_ERROR);
    faulty.faults.creates_fail.store(false, Ordering::SeqCst);
    let retried = post(&app, &t, "/contacts", body, Some("flaky")).await;
    assert_eq!(retried.status, StatusCode::CREATED, "{}", retried.body);
    assert!(retried.headers.get(REPLAYED).is_none());
    let replay = post(&app, &t, "/contacts", body, Some("flaky")).await;
    assert_eq!(replay.headers[REPLAYED], "true");
}

async fn a_key_whose_first_request_is_running_is_409_and_with_another_body_422(
    (app, store): (TestApp, Arc<dyn Store>),
) {
    let t = app.northwind().await;
    let seed: serde_json::Value = serde_json::from_str(local_server::DEMO_SEED).unwrap();
    let northwind: shared::types::AccountId = seed["accounts"][0]["id"]
        .as_str()
        .unwrap()
        .parse::<uuid::Uuid>()
        .unwrap()
        .into();
    let body = r#"{"fields": {"first_name": "Slow"}}"#;
    // The first request holds the key and has not finished.
    let running = IdempotencyClaim::new(
        northwind,
        "POST /contacts",
        IdempotencyKey::parse(b"slow-key").unwrap(),
        Fingerprint::of_body(body.as_bytes()),
        chrono::Utc::now(),
    );
    assert_eq!(
        store.claim_idempotency_key(&running).await.unwrap(),
        ClaimOutcome::Claimed
    );
    let same = post(&app, &t, "/contacts", body, Some("slow-key")).await;
    assert_eq!(same.status, StatusCode::CONFLICT);
    assert_eq!(
        same.body,
        json!({"message": "A request with this Idempotency-Key is being processed", "error": true})
    );
    let other = post(
        &app,
        &t,
        "/contacts",
        r#"{"fields": {"first_name": "Other"}}"#,
        Some("slow-key"),
    )
    .await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(count_contacts_with(&app, &t, "first_name", "Slow").await, 0);
    assert_eq!(
        count_contacts_with(&app, &t, "first_name", "Other").await,
        0
    );
    // The same key for another account is another key.
    let globex = app.token(GLOBEX, ALL_SCOPES).await;
    let theirs = post(&app, &globex, "/contacts", body, Some("slow-key")).await;
    assert_ne!(theirs.status, StatusCode::CONFLICT, "{}", theirs.body);
    assert!(theirs.headers.get(REPLAYED).is_none());
}
