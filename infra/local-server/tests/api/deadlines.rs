//! One deadline per request, and no 500 from a write that kept meeting others.
//!
//! - The HTTP layer gives each request one deadline ([`shared::store::REQUEST_DEADLINE`] from
//!   its start outside Lambda), and every store call of the request sees that same deadline
//!   (`shared::store::retry`): a retry nested in another never starts a fresh one. Shown with the
//!   fault-injecting store, which notes the deadline each call saw.
//! - A router action that changes nothing (a publish of a published router without a draft)
//!   still writes its audit event; when that write keeps meeting others it answers 409, never
//!   500 (BEHAVIOR 12).

use crate::common::{self};
use axum::http::{Method, StatusCode};
use serde_json::json;
use shared::store::faulty::PortMethod;
use shared::store::REQUEST_DEADLINE;

const INBOUND_ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const BEN_ID: &str = "2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12";

#[tokio::test]
async fn every_store_call_of_a_request_sees_the_requests_one_deadline() {
    let (app, faulty) = common::spawn_on_faulty_store().await;
    let t = app.northwind().await;
    for (method, uri, body) in [
        (
            Method::PATCH,
            format!("/users/{BEN_ID}"),
            Some(json!({"phone": "+1 555 0123"})),
        ),
        (
            Method::POST,
            "/contacts".to_string(),
            Some(json!({"fields": {"email": "deadline@example.com"}})),
        ),
        (
            Method::POST,
            format!("/routers/{INBOUND_ROUTER}/unpublish"),
            None,
        ),
    ] {
        faulty.faults.deadlines.lock().unwrap().clear();
        let before = tokio::time::Instant::now();
        let answer = app.call(method.clone(), &uri, &t, body).await;
        assert!(
            answer.status.is_success(),
            "{method} {uri}: {}",
            answer.body
        );
        let seen = faulty.faults.deadlines.lock().unwrap().clone();
        assert!(seen.len() >= 2, "{method} {uri}: {seen:?}");
        let first = seen[0].1.expect("a deadline");
        for (call, deadline) in &seen {
            assert_eq!(
                *deadline,
                Some(first),
                "{method} {uri}: {call} saw another deadline"
            );
        }
        assert!(
            first > before
                && first <= before + REQUEST_DEADLINE + std::time::Duration::from_secs(1)
        );
    }
    // Outside a request (a background job, a test calling the store), none.
    assert_eq!(shared::store::request_deadline(), None);
}

#[tokio::test]
async fn a_router_action_that_changes_nothing_and_keeps_meeting_writes_is_409() {
    let (app, faulty) = common::spawn_on_faulty_store().await;
    let t = app.northwind().await;
    faulty
        .faults
        .conflict_next(PortMethod::append_audit_event, 1);
    let answer = app
        .call(
            Method::POST,
            &format!("/routers/{INBOUND_ROUTER}/publish"),
            &t,
            None,
        )
        .await;
    assert_eq!(answer.status, StatusCode::CONFLICT, "{}", answer.body);
    assert_eq!(answer.body["error"], true);
    // Once the writes let it through, the same action succeeds.
    let again = app
        .call(
            Method::POST,
            &format!("/routers/{INBOUND_ROUTER}/publish"),
            &t,
            None,
        )
        .await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
}
