//! Every API Gateway event in `events/` is parsed as Lambda parses it
//! (`lambda_http::request::from_str`) and driven through its own function's handler, so the
//! fixtures never rot. An event of the `$default` route goes to the records function (as
//! `template.yaml` routes it) and must get the contract's 404; every other one a 2xx.
//! (`infra/template-check` checks that each event's `routeKey` is the template's route for it.)
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::body::Body;
use http_body_util::BodyExt;
use local_server::{build_app, AppConfig, DEMO_SEED};
use tower::ServiceExt;

/// The demo seed's member whose holiday calendar the delete fixture names (Dora Maier).
const DEMO_CALENDAR_MEMBER: &str = "4b0c1d23-e4f5-4a60-b172-8d9e0f1a2b45";

#[tokio::test]
async fn every_api_gateway_event_fixture_is_answered_by_its_function() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../events");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut driven = 0;
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        let text = std::fs::read_to_string(path).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        if json.get("Records").is_some() || json["source"] == "aws.events" {
            continue; // SQS batches and the schedule: driven by the dispatch function's tests.
        }
        // A fresh app per event, so a fixture's writes do not meet another's.
        crate::common::cheap_secret_hashing();
        let app = build_app(AppConfig {
            seed: DEMO_SEED.into(),
            signing_key_pem: None,
        })
        .await
        .unwrap();
        let test = common::TestApp {
            router: app.router.clone(),
        };
        let token = test.northwind().await;
        // The webhook item fixtures name a subscription and a delivery: made here first (a
        // subscription, then a dispatch whose event makes a delivery), their ids put in place.
        let text = if text.contains(FIXTURE_WEBHOOK) {
            let (webhook, delivery) = webhook_and_delivery(&test, &token).await;
            text.replace(FIXTURE_WEBHOOK, &webhook)
                .replace(FIXTURE_DELIVERY, &delivery)
        } else {
            text
        };
        // The audit fixtures name a history entry and an audit event (BEHAVIOR 18): made here
        // first (a dispatch, a member's PATCH), their ids put in place.
        let text = if text.contains(FIXTURE_ENTRY) || text.contains(FIXTURE_AUDIT_EVENT) {
            let (entry, event) = entry_and_audit_event(&test, &token).await;
            text.replace(FIXTURE_ENTRY, &entry)
                .replace(FIXTURE_AUDIT_EVENT, &event)
        } else {
            text
        };
        // The fixtures that read, delete or publish a router's draft find one (BEHAVIOR 15).
        let raw_path = json["rawPath"].as_str().unwrap_or_default();
        let method = json["requestContext"]["http"]["method"]
            .as_str()
            .unwrap_or_default();
        if raw_path.starts_with("/routers/")
            && (raw_path.ends_with("/publish") || (raw_path.ends_with("/draft") && method != "PUT"))
        {
            let draft = raw_path
                .trim_end_matches("/publish")
                .trim_end_matches("/draft")
                .to_string()
                + "/draft";
            let body =
                serde_json::json!({"name": "Draft", "settings": null, "users": [], "teams": []});
            let put = test
                .call(axum::http::Method::PUT, &draft, &token, Some(body))
                .await;
            assert_eq!(put.status, 200, "{}", put.body);
        }
        // The demo calendar's delete finds it unused (BEHAVIOR 17): its one member lets go.
        if raw_path.starts_with("/holiday-calendars/") && method == "DELETE" {
            let patch = test
                .call(
                    axum::http::Method::PATCH,
                    &format!("/users/{DEMO_CALENDAR_MEMBER}"),
                    &token,
                    Some(serde_json::json!({"holiday_calendar_id": null})),
                )
                .await;
            assert_eq!(patch.status, 200, "{}", patch.body);
        }
        let request = lambda_http::request::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (mut parts, body) = request.into_parts();
        if parts.headers.contains_key("authorization") && !parts.uri.path().starts_with("/oauth2") {
            // The fixture's token is only realistic; a live one replaces it.
            parts
                .headers
                .insert("authorization", format!("Bearer {token}").parse().unwrap());
        }
        let body = Body::from(body.to_vec());
        let segment = parts
            .uri
            .path()
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or("")
            .to_string();
        let default_route = json["routeKey"] == "$default";
        let routes = match segment.as_str() {
            _ if default_route => app.functions.records,
            "oauth2" | "openapi.json" => app.functions.token,
            "contacts" | "companies" | "deals" | "tickets" => app.functions.records,
            "users" | "holiday-calendars" => app.functions.users,
            "routers" | "audit-events" => app.functions.routers,
            "dispatch" => app.functions.dispatch,
            "webhooks" => app.functions.webhooks,
            other => panic!("{}: no function serves /{other}", path.display()),
        };
        let response = routes
            .oneshot(axum::http::Request::from_parts(parts, body))
            .await
            .unwrap();
        let status = response.status();
        let request_id = response.headers().get("x-request-id").cloned();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        if default_route {
            assert_eq!(status, 404, "{}", path.display());
            let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(
                body,
                serde_json::json!({"message": "Not found", "error": true}),
                "{}: the contract's 404, not API Gateway's",
                path.display()
            );
        } else {
            assert!(
                status.is_success(),
                "{}: {status} {}",
                path.display(),
                String::from_utf8_lossy(&bytes)
            );
        }
        let expected_id = json["requestContext"]["requestId"].as_str().unwrap();
        assert_eq!(
            request_id.unwrap(),
            expected_id,
            "{}: API Gateway's request id is echoed",
            path.display()
        );
        driven += 1;
    }
    assert!(driven >= 36, "only {driven} fixtures driven");
}

/// The subscription id the webhook fixtures use.
const FIXTURE_WEBHOOK: &str = "4c1d2e3f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";
/// The delivery id the webhook fixtures use.
const FIXTURE_DELIVERY: &str = "msg_01936b2a7c007a008000000000000099";

/// The history entry id the entry fixture uses (BEHAVIOR 18).
const FIXTURE_ENTRY: &str = "01936b2a-7c00-7a00-8000-0000000000aa";
/// The audit event id the audit event fixture uses (BEHAVIOR 18).
const FIXTURE_AUDIT_EVENT: &str = "01936b2a-7c00-7a00-8000-0000000000e1";

/// A history entry of the inbound router (a dispatch of Dana) and an audit event (a PATCH of
/// Ben's phone).
async fn entry_and_audit_event(app: &common::TestApp, token: &str) -> (String, String) {
    use axum::http::Method;
    let router = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
    let dispatched = app
        .call(
            Method::POST,
            "/dispatch/router",
            token,
            Some(serde_json::json!({"router_id": router, "object_id": "01936b2a-7c00-7a00-8000-000000000002"})),
        )
        .await;
    assert_eq!(dispatched.status, 200, "{}", dispatched.body);
    let list = app
        .call(
            Method::GET,
            &format!("/routers/{router}/dispatches?limit=1"),
            token,
            None,
        )
        .await;
    let entry = list.body["data"][0]["id"].as_str().unwrap().to_string();
    let patched = app
        .call(
            Method::PATCH,
            "/users/2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12",
            token,
            Some(serde_json::json!({"phone": "+1 555 0142"})),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let events = app
        .call(Method::GET, "/audit-events?limit=1", token, None)
        .await;
    let event = events.body["data"][0]["id"].as_str().unwrap().to_string();
    (entry, event)
}

/// A subscription of Northwind and a delivery of it (the event of a dispatch).
async fn webhook_and_delivery(app: &common::TestApp, token: &str) -> (String, String) {
    use axum::http::Method;
    let created = app
        .call(
            Method::POST,
            "/webhooks",
            token,
            Some(serde_json::json!({"url": "http://127.0.0.1:9/hooks", "events": ["assignment.created"]})),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let webhook = created.body["id"].as_str().unwrap().to_string();
    let dispatched = app
        .call(
            Method::POST,
            "/dispatch/router",
            token,
            Some(serde_json::json!({"router_id": "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45", "object_id": "01936b2a-7c00-7a00-8000-000000000002"})),
        )
        .await;
    assert_eq!(dispatched.body["success"], true, "{}", dispatched.body);
    let log = app
        .call(
            Method::GET,
            &format!("/webhooks/{webhook}/deliveries"),
            token,
            None,
        )
        .await;
    let delivery = log.body["data"][0]["id"].as_str().unwrap().to_string();
    (webhook, delivery)
}
