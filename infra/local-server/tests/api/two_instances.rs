//! What an instance keeps between dispatches never outlives a change made through the API on
//! another instance (BEHAVIOR 13 and 15): two instances of the application
//! over one store (two Lambda instances), on the embedded store and on DynamoDB (the emulator of
//! `bash infra/scripts/test.sh`). One instance dispatches, warm (it keeps each router's pool
//! keys and the account's webhook subscriptions at their version); the other changes the router
//! or the subscriptions; the first one's very next dispatch runs on the change:
//!
//! - a router published (a new pool), unpublished, published again and archived on one instance
//!   is dispatched by its live revision on the other at once: the assignment, the unassigned
//!   outcome and the history entry all name the revision live when the dispatch ran;
//! - a webhook subscription created on one instance receives the next dispatch on the other (an
//!   assignment, and an unassigned outcome), a disabled one receives nothing, an enabled one
//!   again.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{json, Value};

const ANA: &str = "ana.lopez@northwind.example";
const BEN: &str = "ben.okafor@northwind.example";
const CHEN: &str = "chen.wei@northwind.example";

shared::on_both_stores!(
    with two_apps:
    a_router_changed_on_one_instance_is_dispatched_as_changed_on_the_other,
    a_subscription_created_on_one_instance_receives_the_next_dispatch_on_the_other,
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

/// A round robin contacts router over `users`, available at any hour, that may overwrite.
fn round_robin(name: &str, users: &[&str]) -> Value {
    json!({
        "name": name,
        "object_type": "contacts",
        "settings": {
            "owner_field": "contact_owner",
            "distribution_model": "round robin",
            "ignore_working_hours": true,
            "overwrite": true
        },
        "users": users.iter().map(|e| json!({"email": e})).collect::<Vec<_>>(),
        "teams": []
    })
}

fn etag(a: &Answer) -> String {
    a.headers
        .get("etag")
        .expect("an ETag header")
        .to_str()
        .unwrap()
        .to_string()
}

/// The router's newest history entry, through `app`.
async fn newest_entry(app: &TestApp, t: &str, router: &str) -> Value {
    let a = app
        .call(
            Method::GET,
            &format!("/routers/{router}/dispatches?limit=1"),
            t,
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body["data"][0].clone()
}

/// A published round robin router over Ben and Chen, created through `app`; its id.
async fn published_router(app: &TestApp, t: &str) -> String {
    let created = app
        .call(
            Method::POST,
            "/routers",
            t,
            Some(round_robin("Two instances", &[BEN, CHEN])),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let published = app
        .call(Method::POST, &format!("/routers/{id}/publish"), t, None)
        .await;
    assert_eq!(published.status, StatusCode::OK, "{}", published.body);
    id
}

async fn a_router_changed_on_one_instance_is_dispatched_as_changed_on_the_other(apps: Apps) {
    let (one, other) = (&apps.one, &apps.other);
    let t = one.northwind().await;
    let id = published_router(one, &t).await;
    let contact = one.new_contact(&t).await;
    // The other instance dispatches, warm from its second dispatch on.
    assert_eq!(other.dispatch(&t, &id, &contact).await["user"], BEN);
    assert_eq!(other.dispatch(&t, &id, &contact).await["user"], CHEN);

    // Revision 2, published on the first instance, gives the router to Ana alone.
    let put = one
        .call(
            Method::PUT,
            &format!("/routers/{id}/draft"),
            &t,
            Some(round_robin("Two instances", &[ANA])),
        )
        .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    let published = one
        .with_headers(
            Method::POST,
            &format!("/routers/{id}/publish"),
            &t,
            &[("if-match", &etag(&put))],
            None,
        )
        .await;
    assert_eq!(published.status, StatusCode::OK, "{}", published.body);
    assert_eq!(published.body["revision"], 2);
    for _ in 0..2 {
        let answer = other.dispatch(&t, &id, &contact).await;
        assert_eq!(answer["user"], ANA, "{answer}");
        let entry = newest_entry(one, &t, &id).await;
        assert_eq!(
            (&entry["user"], &entry["router_revision"]),
            (&json!(ANA), &json!(2)),
            "{entry}"
        );
    }

    // Unpublished there: the next dispatch here stops, and its entry says so.
    let a = one
        .call(Method::POST, &format!("/routers/{id}/unpublish"), &t, None)
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let answer = other.dispatch(&t, &id, &contact).await;
    assert_eq!(answer["message"], "The router is unpublished", "{answer}");
    let entry = newest_entry(one, &t, &id).await;
    assert_eq!(
        (&entry["message"], &entry["router_revision"]),
        (&json!("The router is unpublished"), &json!(2)),
        "{entry}"
    );

    // Published again: assigned again.
    let a = one
        .call(Method::POST, &format!("/routers/{id}/publish"), &t, None)
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(other.dispatch(&t, &id, &contact).await["user"], ANA);

    // Archived there: not found here, and nothing appended.
    let a = one
        .call(Method::DELETE, &format!("/routers/{id}"), &t, None)
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let answer = other.dispatch(&t, &id, &contact).await;
    assert_eq!(answer["message"], "Router not found", "{answer}");
    let entry = newest_entry(one, &t, &id).await;
    assert_eq!(entry["user"], ANA, "the last entry is the last assignment");
}

/// The deliveries of subscription `id`, through `app`.
async fn deliveries(app: &TestApp, t: &str, id: &str) -> Vec<Value> {
    let a = app
        .call(
            Method::GET,
            &format!("/webhooks/{id}/deliveries?limit=100"),
            t,
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body["data"].as_array().unwrap().clone()
}

async fn a_subscription_created_on_one_instance_receives_the_next_dispatch_on_the_other(
    apps: Apps,
) {
    let (one, other) = (&apps.one, &apps.other);
    let t = one.northwind().await;
    let router = published_router(one, &t).await;
    let contact = one.new_contact(&t).await;
    // The other instance dispatches, warm: the account's subscriptions (none) kept.
    other.dispatch(&t, &router, &contact).await;
    other.dispatch(&t, &router, &contact).await;
    // Nothing listens there: the deliveries are made and their attempts fail (retried later).
    let subscribe = |events: Value| {
        let body = json!({"url": "http://127.0.0.1:9/hooks", "events": events});
        let t = t.clone();
        async move {
            let a = one.call(Method::POST, "/webhooks", &t, Some(body)).await;
            assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
            a.body["id"].as_str().unwrap().to_string()
        }
    };
    let assignments = subscribe(json!(["assignment.created"])).await;
    let answer = other.dispatch(&t, &router, &contact).await;
    assert_eq!(answer["message"], "Owner assigned", "{answer}");
    let made = deliveries(one, &t, &assignments).await;
    assert_eq!(made.len(), 1, "notified by the next dispatch: {made:?}");
    assert_eq!(made[0]["event_type"], "assignment.created");
    other.dispatch(&t, &router, &contact).await;
    assert_eq!(deliveries(one, &t, &assignments).await.len(), 2);

    // Disabled there: nothing more for it here; enabled again: notified again.
    for (enabled, expected) in [(false, 2), (true, 3)] {
        let a = one
            .call(
                Method::PATCH,
                &format!("/webhooks/{assignments}"),
                &t,
                Some(json!({"enabled": enabled})),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        other.dispatch(&t, &router, &contact).await;
        assert_eq!(
            deliveries(one, &t, &assignments).await.len(),
            expected,
            "enabled {enabled}"
        );
    }

    // A subscription to unassigned outcomes, created there with the router's unpublishing:
    // the next dispatch here stops, appends its entry, and notifies it.
    let unassigned = subscribe(json!(["dispatch.unassigned"])).await;
    let a = one
        .call(
            Method::POST,
            &format!("/routers/{router}/unpublish"),
            &t,
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let answer = other.dispatch(&t, &router, &contact).await;
    assert_eq!(answer["message"], "The router is unpublished", "{answer}");
    let made = deliveries(one, &t, &unassigned).await;
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(made[0]["event_type"], "dispatch.unassigned");
}
