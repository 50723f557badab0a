//! Writes that survive a lost answer, on DynamoDB (the emulator; `bash infra/scripts/test.sh`).
//!
//! DynamoDB may apply a write and answer 500 (`InternalServerError`: "may or may not have
//! succeeded") or not answer in time; the SDK then sends the same request again. Here every write
//! request the application sends to its table has its first answer lost after the write was
//! applied (`recording::lose_first_answers`, a fault-injecting HTTP layer under the SDK), and
//! every route that writes must answer as if the first answer had arrived: a create is 201 once
//! (not 500, not a second record), an archive 200 (not 404), a claim of an `Idempotency-Key` is
//! its own (not 409 "being processed"), a publish 200, a dispatch assigns once. Single-item
//! writes carry a write token of their own (`store::dynamodb::write_token`); transactions carry
//! the client request token the SDK keeps across its retries, which the emulator honours as
//! DynamoDB does (`infra/emulator/client_tokens.py`).
//!
//! The embedded store cannot lose an answer (a call returns what it did), so this is DynamoDB's
//! test alone.

use crate::common::{self, TestApp};
use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use shared::store::dynamodb::recording;
use shared::store::dynamodb::test_table::TestTable;
use std::sync::Arc;

const DEALS_BY_SHARE: &str = "7e3f4a56-b7c8-4d93-8ea5-b02b3c4d5e78";
const BEN_ID: &str = "2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12";
const BEN: &str = "ben.okafor@northwind.example";
const CHEN: &str = "chen.wei@northwind.example";

/// The demo application on a fresh table whose writes lose their first answer from now on.
async fn losing_app() -> (TestApp, String, String) {
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let name = table.store.table_name().to_string();
    let app = common::app_on(Arc::new(table.store)).await;
    let token = app.northwind().await;
    recording::lose_first_answers(&name);
    (app, token, name)
}

async fn count(app: &TestApp, t: &str, list: &str) -> usize {
    let a = app.call(Method::GET, list, t, None).await;
    assert_eq!(a.status, StatusCode::OK, "{list}: {}", a.body);
    a.body["data"].as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_writes_answer_as_if_the_first_answer_had_arrived() {
    let (app, t, table) = losing_app().await;
    // A create with a unique key (a transaction with its guard) and one without (a single put).
    let contacts = count(&app, &t, "/contacts?limit=100").await;
    let created = app
        .call(
            Method::POST,
            "/contacts",
            &t,
            Some(json!({"fields": {"email": "lost.answer@example.com"}})),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(count(&app, &t, "/contacts?limit=100").await, contacts + 1);
    let deals = count(&app, &t, "/deals?limit=100").await;
    let deal = app
        .call(
            Method::POST,
            "/deals",
            &t,
            Some(json!({"fields": {
                "deal_name": "No unique key", "pipeline": "default", "deal_stage": "qualified_to_buy"
            }})),
        )
        .await;
    assert_eq!(deal.status, StatusCode::CREATED, "{}", deal.body);
    assert_eq!(count(&app, &t, "/deals?limit=100").await, deals + 1);
    // A patch and an archive.
    let id = created.body["id"].as_str().unwrap();
    let patched = app
        .call(
            Method::PATCH,
            &format!("/contacts/{id}"),
            &t,
            Some(json!({"fields": {"first_name": "Lost"}})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    let deal_id = deal.body["id"].as_str().unwrap();
    for uri in [format!("/contacts/{id}"), format!("/deals/{deal_id}")] {
        let archived = app.call(Method::DELETE, &uri, &t, None).await;
        assert_eq!(archived.status, StatusCode::OK, "{uri}: {}", archived.body);
        let read = app.call(Method::GET, &uri, &t, None).await;
        assert_ne!(read.body["archived"], json!(false), "{}", read.body);
    }
    // An Idempotency-Key: the claim is the request's own, the answer kept and replayed.
    let body = json!({"fields": {"email": "keyed@example.com"}});
    let headers = [("Idempotency-Key", "lost-answer-key-1")];
    let first = app
        .with_headers(Method::POST, "/contacts", &t, &headers, Some(body.clone()))
        .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let again = app
        .with_headers(Method::POST, "/contacts", &t, &headers, Some(body))
        .await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.body);
    assert_eq!(again.body, first.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert!(
        recording::lost_answers(&table) >= 8,
        "only {} answers lost",
        recording::lost_answers(&table)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn member_router_calendar_and_subscription_writes_answer_as_if_the_first_answer_had_arrived()
{
    let (app, t, table) = losing_app().await;
    let patched = app
        .call(
            Method::PATCH,
            &format!("/users/{BEN_ID}"),
            &t,
            Some(json!({"phone": "+1 555 0199"})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(patched.body["phone"], "+1 555 0199");

    let router = json!({
        "name": "Lost answers",
        "object_type": "contacts",
        "settings": {
            "owner_field": "contact_owner",
            "distribution_model": "round robin",
            "ignore_working_hours": true,
            "overwrite": true
        },
        "users": [{"email": BEN}, {"email": CHEN}],
        "teams": []
    });
    let created = app
        .call(Method::POST, "/routers", &t, Some(router.clone()))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let id = created.body["id"].as_str().unwrap();
    // The first publish (no draft), then a draft published as revision 2.
    let published = app
        .call(Method::POST, &format!("/routers/{id}/publish"), &t, None)
        .await;
    assert_eq!(published.status, StatusCode::OK, "{}", published.body);
    let mut renamed = router;
    renamed["name"] = json!("Lost answers, renamed");
    let draft = app
        .call(
            Method::PUT,
            &format!("/routers/{id}/draft"),
            &t,
            Some(renamed),
        )
        .await;
    assert_eq!(draft.status, StatusCode::OK, "{}", draft.body);
    let etag = draft.headers["etag"].to_str().unwrap().to_string();
    let published = app
        .with_headers(
            Method::POST,
            &format!("/routers/{id}/publish"),
            &t,
            &[("If-Match", etag.as_str())],
            None,
        )
        .await;
    assert_eq!(published.status, StatusCode::OK, "{}", published.body);
    assert_eq!(published.body["revision"], 2);
    assert_eq!(published.body["name"], "Lost answers, renamed");

    let calendars = count(&app, &t, "/holiday-calendars").await;
    let calendar = app
        .call(
            Method::POST,
            "/holiday-calendars",
            &t,
            Some(json!({"name": "Lost", "time_zone": "UTC", "holidays": []})),
        )
        .await;
    assert_eq!(calendar.status, StatusCode::CREATED, "{}", calendar.body);
    assert_eq!(count(&app, &t, "/holiday-calendars").await, calendars + 1);

    let webhooks = count(&app, &t, "/webhooks").await;
    let subscription = app
        .call(
            Method::POST,
            "/webhooks",
            &t,
            Some(
                json!({"url": "https://hooks.example.com/lost", "events": ["assignment.created"]}),
            ),
        )
        .await;
    assert_eq!(
        subscription.status,
        StatusCode::CREATED,
        "{}",
        subscription.body
    );
    assert_eq!(count(&app, &t, "/webhooks").await, webhooks + 1);
    // Each change is one audit event, written with it.
    assert_eq!(count(&app, &t, "/audit-events?limit=100").await, 7);
    assert!(recording::lost_answers(&table) >= 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatch_answers_as_if_the_first_answer_had_arrived_and_assigns_once() {
    let (app, t, table) = losing_app().await;
    let mut deals = Vec::new();
    for name in ["First", "Second"] {
        let deal = app
            .call(
                Method::POST,
                "/deals",
                &t,
                Some(json!({"fields": {
                    "deal_name": name, "pipeline": "default", "deal_stage": "qualified_to_buy",
                    "amount": 5000
                }})),
            )
            .await;
        assert_eq!(deal.status, StatusCode::CREATED, "{}", deal.body);
        deals.push(deal.body["id"].as_str().unwrap().to_string());
    }
    let body = json!({"router_id": DEALS_BY_SHARE, "object_id": deals[0]});
    let headers = [("Idempotency-Key", "lost-dispatch-1")];
    let first = app
        .with_headers(
            Method::POST,
            "/dispatch/router",
            &t,
            &headers,
            Some(body.clone()),
        )
        .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(first.body["message"], "Owner assigned", "{}", first.body);
    let again = app
        .with_headers(Method::POST, "/dispatch/router", &t, &headers, Some(body))
        .await;
    assert_eq!(again.body, first.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    // A plain dispatch (no key) of the second deal: the rotation moved once, so 50/30/20 gives
    // the second turn to the 30 % member.
    let second = app.dispatch(&t, DEALS_BY_SHARE, &deals[1]).await;
    assert_eq!(second["message"], "Owner assigned", "{second}");
    assert_eq!(first.body["user"], "ana.lopez@northwind.example");
    assert_eq!(second["user"], BEN, "{second}");
    let entries: Value = app
        .call(
            Method::GET,
            &format!("/routers/{DEALS_BY_SHARE}/dispatches"),
            &t,
            None,
        )
        .await
        .body;
    assert_eq!(entries["data"].as_array().unwrap().len(), 2, "{entries}");
    assert!(recording::lost_answers(&table) >= 4);
}
