//! Concurrent valid writes are each applied, never a 500 (BEHAVIOR 12's last
//! bullet, BEHAVIOR 6's retries with jitter until a deadline): 16 requests at once, half through
//! one instance of the application and half through another over the same store (two Lambda
//! instances: their writes race in the store, where one instance's writes to one item take
//! turns), on the embedded store and on DynamoDB (the emulator of `bash infra/scripts/test.sh`,
//! which cancels transactions that meet as DynamoDB does).
//!
//! - creates that all move one count item of the account (routers, holiday calendars, webhook
//!   subscriptions): every one is 201 and the list holds them all;
//! - PATCHes of one member (without and with `holiday_calendar_id`, the latter moving the
//!   calendars' reference counts in the member's transaction, with other members naming the
//!   same calendar at the same time): every one is 200, and the reference counts are exact
//!   afterwards (the calendar is in use until the last member lets go, then deleted: 204);
//! - PATCHes of one record: every one is 200 and the record holds one of the values written.
//!
//! Before the adapter retried `TransactionConflict` cancellations until a deadline and the
//! services re-read and re-applied a lost version race until one, these answered 500 on
//! DynamoDB ("the item changed concurrently", "member update kept conflicting with concurrent
//! writes", "record update kept conflicting with concurrent writes").
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use futures_util::future::join_all;
use serde_json::{json, Value};

/// Requests sent at once.
const AT_ONCE: usize = 16;
const ANA_ID: &str = "1d7e8f90-a1b2-4c3d-8e4f-5a6b7c8d9e01";
const BEN_ID: &str = "2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12";
const CHEN_ID: &str = "3f9a0b12-c3d4-4e5f-a061-7c8d9e0f1a23";
const DORA_ID: &str = "4b0c1d23-e4f5-4a60-b172-8d9e0f1a2b45";
const BEN: &str = "ben.okafor@northwind.example";
const CHEN: &str = "chen.wei@northwind.example";
/// The demo seed's "Berlin office" calendar (Dora's).
const DEMO_CALENDAR: &str = "7d3e4f50-a1b2-4c3d-9e4f-0a1b2c3d4e5f";

// Each body `async fn name(apps: Apps)` runs on both stores, over the demo seed.
shared::on_both_stores!(
    with two_apps:
    concurrent_router_creates_all_succeed,
    concurrent_holiday_calendar_creates_all_succeed,
    concurrent_webhook_subscription_creates_all_succeed,
    concurrent_patches_of_one_member_all_succeed,
    concurrent_calendar_patches_of_members_all_succeed_and_count_exactly,
    concurrent_patches_of_one_record_all_succeed,
);

/// Two instances of the application over one store.
struct Apps {
    one: TestApp,
    other: TestApp,
}

async fn two_apps(store: std::sync::Arc<dyn shared::store::Store>) -> Apps {
    Apps {
        one: app_on(store.clone()).await,
        other: app_on(store).await,
    }
}

/// Sends the requests `make(i)` for `i` in `0..AT_ONCE` at once, the even ones through one
/// instance and the odd ones through the other; their answers in order.
async fn at_once(
    apps: &Apps, token: &str, make: impl Fn(usize) -> (Method, String, Value),
) -> Vec<Answer> {
    let started = std::time::Instant::now();
    let answers = join_all((0..AT_ONCE).map(|i| {
        let (method, uri, body) = make(i);
        let app = if i % 2 == 0 { &apps.one } else { &apps.other };
        async move { app.call(method, &uri, token, Some(body)).await }
    }))
    .await;
    eprintln!("TIMING {:?}", started.elapsed());
    answers
}

/// Every answer is `status`; otherwise the statuses and the first other answer's body.
fn assert_all(answers: &[Answer], status: StatusCode) {
    let statuses: Vec<u16> = answers.iter().map(|a| a.status.as_u16()).collect();
    if let Some(other) = answers.iter().find(|a| a.status != status) {
        panic!("statuses {statuses:?}; e.g. {}", other.body);
    }
}

/// The `data` of a list (at most 100 items).
async fn list(app: &TestApp, token: &str, uri: &str) -> Vec<Value> {
    let a = app.call(Method::GET, uri, token, None).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body["data"].as_array().unwrap().clone()
}

fn ids(answers: &[Answer]) -> Vec<String> {
    answers
        .iter()
        .map(|a| a.body["id"].as_str().unwrap().to_string())
        .collect()
}

async fn concurrent_router_creates_all_succeed(apps: Apps) {
    let app = &apps.one;
    let t = app.northwind().await;
    let before = list(app, &t, "/routers?limit=100").await.len();
    let answers = at_once(&apps, &t, |i| {
        let body = json!({
            "name": format!("Concurrent {i}"),
            "object_type": "contacts",
            "settings": {"owner_field": "contact_owner", "distribution_model": "round robin",
                         "ignore_working_hours": true},
            "users": [{"email": BEN}, {"email": CHEN}],
            "teams": []
        });
        (Method::POST, "/routers".into(), body)
    })
    .await;
    assert_all(&answers, StatusCode::CREATED);
    let listed = list(app, &t, "/routers?limit=100").await;
    assert_eq!(listed.len(), before + AT_ONCE);
    for id in ids(&answers) {
        assert!(listed.iter().any(|r| r["id"] == id.as_str()), "{id}");
        // Each is revision 1, listed in its revisions.
        let revisions = list(app, &t, &format!("/routers/{id}/revisions")).await;
        assert_eq!(revisions.len(), 1, "{id}");
        assert_eq!(revisions[0]["revision"], 1);
    }
}

async fn concurrent_holiday_calendar_creates_all_succeed(apps: Apps) {
    let app = &apps.one;
    let t = app.northwind().await;
    let before = list(app, &t, "/holiday-calendars?limit=100").await.len();
    let answers = at_once(&apps, &t, |i| {
        let body = json!({"name": format!("Office {i}"), "time_zone": "UTC",
                          "holidays": [{"name": "New Year", "date": "2026-01-01", "yearly": true}]});
        (Method::POST, "/holiday-calendars".into(), body)
    })
    .await;
    assert_all(&answers, StatusCode::CREATED);
    let listed = list(app, &t, "/holiday-calendars?limit=100").await;
    assert_eq!(listed.len(), before + AT_ONCE);
    // The account's count is exact: up to the limit of 20 and no further.
    let room = 20 - listed.len();
    for i in 0..room {
        let a = app
            .call(
                Method::POST,
                "/holiday-calendars",
                &t,
                Some(json!({"name": format!("More {i}"), "time_zone": "UTC", "holidays": []})),
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    }
    let a = app
        .call(
            Method::POST,
            "/holiday-calendars",
            &t,
            Some(json!({"name": "One too many", "time_zone": "UTC", "holidays": []})),
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
}

async fn concurrent_webhook_subscription_creates_all_succeed(apps: Apps) {
    let app = &apps.one;
    let t = app.northwind().await;
    let before = list(app, &t, "/webhooks?limit=100").await.len();
    let answers = at_once(&apps, &t, |i| {
        let body = json!({"url": format!("https://hooks.example.com/{i}"),
                          "events": ["assignment.created"]});
        (Method::POST, "/webhooks".into(), body)
    })
    .await;
    assert_all(&answers, StatusCode::CREATED);
    let listed = list(app, &t, "/webhooks?limit=100").await;
    assert_eq!(listed.len(), before + AT_ONCE);
    // The same subscriptions changed at once: every PATCH applied.
    let created = ids(&answers);
    let patched = at_once(&apps, &t, |i| {
        (
            Method::PATCH,
            format!("/webhooks/{}", created[i]),
            json!({"description": format!("hook {i}")}),
        )
    })
    .await;
    assert_all(&patched, StatusCode::OK);
}

async fn concurrent_patches_of_one_member_all_succeed(apps: Apps) {
    let app = &apps.one;
    let t = app.northwind().await;
    let answers = at_once(&apps, &t, |i| {
        (
            Method::PATCH,
            format!("/users/{BEN_ID}"),
            json!({"full_name": format!("Ben {i}")}),
        )
    })
    .await;
    assert_all(&answers, StatusCode::OK);
    let ben = app
        .call(Method::GET, &format!("/users/{BEN_ID}"), &t, None)
        .await;
    let name = ben.body["full_name"].as_str().unwrap();
    assert!(
        (0..AT_ONCE).any(|i| name == format!("Ben {i}")),
        "{}",
        ben.body
    );
}

async fn concurrent_calendar_patches_of_members_all_succeed_and_count_exactly(apps: Apps) {
    let app = &apps.one;
    let t = app.northwind().await;
    let created = app
        .call(
            Method::POST,
            "/holiday-calendars",
            &t,
            Some(json!({"name": "Paris office", "time_zone": "Europe/Paris", "holidays": []})),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let paris = created.body["id"].as_str().unwrap().to_string();
    // Ben moves between the two calendars and none; Ana and Chen name the demo calendar (Dora's)
    // at the same time, and Paris, and none.
    let answers = at_once(&apps, &t, |i| {
        let member = [BEN_ID, BEN_ID, ANA_ID, CHEN_ID][i % 4];
        let calendar = match i % 3 {
            0 => json!(DEMO_CALENDAR),
            1 => json!(paris),
            _ => Value::Null,
        };
        (
            Method::PATCH,
            format!("/users/{member}"),
            json!({"holiday_calendar_id": calendar}),
        )
    })
    .await;
    assert_all(&answers, StatusCode::OK);
    // Whatever each member was left naming, the counts follow it: each calendar is in use while
    // someone names it and deletable once nobody does.
    for member in [ANA_ID, BEN_ID, CHEN_ID, DORA_ID] {
        let a = app
            .call(
                Method::PATCH,
                &format!("/users/{member}"),
                &t,
                Some(json!({"holiday_calendar_id": paris})),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    }
    let demo = app
        .call(
            Method::DELETE,
            &format!("/holiday-calendars/{DEMO_CALENDAR}"),
            &t,
            None,
        )
        .await;
    assert_eq!(demo.status, StatusCode::NO_CONTENT, "{}", demo.body);
    for (n, member) in [ANA_ID, BEN_ID, CHEN_ID, DORA_ID].iter().enumerate() {
        let in_use = app
            .call(
                Method::DELETE,
                &format!("/holiday-calendars/{paris}"),
                &t,
                None,
            )
            .await;
        assert_eq!(in_use.status, StatusCode::CONFLICT, "{n}: {}", in_use.body);
        let a = app
            .call(
                Method::PATCH,
                &format!("/users/{member}"),
                &t,
                Some(json!({"holiday_calendar_id": null})),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    }
    let deleted = app
        .call(
            Method::DELETE,
            &format!("/holiday-calendars/{paris}"),
            &t,
            None,
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.body);
}

async fn concurrent_patches_of_one_record_all_succeed(apps: Apps) {
    let app = &apps.one;
    let t = app.northwind().await;
    let created = app
        .call(
            Method::POST,
            "/contacts",
            &t,
            Some(json!({"fields": {"first_name": "Lead", "email": "lead@concurrent.example"}})),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let answers = at_once(&apps, &t, |i| {
        (
            Method::PATCH,
            format!("/contacts/{id}"),
            json!({"fields": {"first_name": format!("Lead {i}")}}),
        )
    })
    .await;
    assert_all(&answers, StatusCode::OK);
    let read = app
        .call(Method::GET, &format!("/contacts/{id}"), &t, None)
        .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    let name = read.body["first_name"].as_str().unwrap_or_default();
    assert!(
        (0..AT_ONCE).any(|i| name == format!("Lead {i}")),
        "{}",
        read.body
    );
}
