//! `POST /dispatch/router` over HTTP and SQS batches through the dispatch function's handler
//! (spec "Dispatch", "Events"; BEHAVIOR 6), over the demo seed.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use aws_lambda_events::event::sqs::SqsEvent;
use axum::http::{Method, StatusCode};
use common::*;
use local_server::{build_app, AppConfig, DEMO_SEED};
use serde_json::{json, Value};

const INBOUND_ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const UNPUBLISHED_ROUTER: &str = "8f4a5b67-c8d9-4ea4-9fb6-c13c4d5e6f89";
const DANA: &str = "01936b2a-7c00-7a00-8000-000000000002";

fn body(router: &str, object: &str) -> Value {
    json!({"router_id": router, "object_id": object})
}

#[tokio::test]
async fn dispatch_assigns_over_http_and_answers_outcomes_as_200_messages() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let a = app
        .call(
            Method::POST,
            "/dispatch/router",
            &t,
            Some(body(INBOUND_ROUTER, DANA)),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    // Dana's e-mail domain is Contoso's website; Contoso's owner is Ana (account matching).
    assert_eq!(a.body["message"], "Owner assigned");
    assert_eq!(a.body["success"], true);
    assert_eq!(a.body["user"], "ana.lopez@northwind.example");
    assert_eq!(a.body["field_name"], "Contact owner");
    let at = a.body["owner_assigned_at"].as_str().unwrap();
    assert!(
        chrono::DateTime::parse_from_rfc2822(at).is_ok() && at.ends_with("+0000"),
        "{at}"
    );
    let contact = app
        .call(
            Method::GET,
            &format!("/contacts/{DANA}?properties=contact_owner_assigned_date"),
            &t,
            None,
        )
        .await;
    assert_eq!(contact.body["contact_owner"], "ana.lopez@northwind.example");
    assert!(contact.body["contact_owner_assigned_date"].is_string());

    let again = app
        .call(
            Method::POST,
            "/dispatch/router",
            &t,
            Some(body(INBOUND_ROUTER, DANA)),
        )
        .await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(
        again.body,
        json!({"message": "The router can not overwrite"})
    );
    let unpublished = app
        .call(
            Method::POST,
            "/dispatch/router",
            &t,
            Some(body(UNPUBLISHED_ROUTER, DANA)),
        )
        .await;
    assert_eq!(
        unpublished.body,
        json!({"message": "The router is unpublished"})
    );
    let missing = app
        .call(
            Method::POST,
            "/dispatch/router",
            &t,
            Some(body(INBOUND_ROUTER, "nope")),
        )
        .await;
    assert_eq!(missing.body, json!({"message": "Object not found"}));
    // Globex is inactive: its tokens still work, dispatch says so.
    let globex = app.token(GLOBEX, ALL_SCOPES).await;
    let inactive = app
        .call(
            Method::POST,
            "/dispatch/router",
            &globex,
            Some(body(INBOUND_ROUTER, DANA)),
        )
        .await;
    assert_eq!(inactive.body, json!({"message": "Account is not active"}));
}

#[tokio::test]
async fn dispatch_errors_are_400_401_403_and_405() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    for b in [
        json!({}),
        json!({"router_id": INBOUND_ROUTER}),
        json!({"object_id": DANA, "router_id": null}),
    ] {
        let a = app
            .call(Method::POST, "/dispatch/router", &t, Some(b))
            .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST);
        assert_eq!(
            a.body,
            json!({"message": "Invalid event: require router_id and object_id", "error": true})
        );
    }
    let a = app
        .raw(
            Method::POST,
            "/dispatch/router",
            &[],
            serde_json::to_vec(&body(INBOUND_ROUTER, DANA)).unwrap(),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    let read_only = app.token(NORTHWIND_READONLY, "service-api/read").await;
    let a = app
        .call(
            Method::POST,
            "/dispatch/router",
            &read_only,
            Some(body(INBOUND_ROUTER, DANA)),
        )
        .await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    assert_eq!(
        a.body["message"],
        "Insufficient scope: requires service-api/update"
    );
    let a = app.call(Method::GET, "/dispatch/router", &t, None).await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(a.headers["allow"], "POST");
}

fn read_event(name: &str) -> String {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

fn sqs_fixture(name: &str) -> SqsEvent {
    serde_json::from_str(&read_event(name)).unwrap()
}

#[tokio::test]
async fn a_valid_sqs_message_assigns_and_is_not_reported_failed() {
    crate::common::cheap_secret_hashing();
    let app = build_app(AppConfig {
        seed: DEMO_SEED.into(),
        signing_key_pem: None,
    })
    .await
    .unwrap();
    let response =
        dispatch_function::handle_sqs_batch(&app.engine, sqs_fixture("sqs-dispatch-valid.json"))
            .await;
    assert!(response.batch_item_failures.is_empty());
    let test = TestApp {
        router: app.router.clone(),
    };
    let t = test.northwind().await;
    let contact = test
        .call(Method::GET, &format!("/contacts/{DANA}"), &t, None)
        .await;
    assert_eq!(contact.body["contact_owner"], "ana.lopez@northwind.example");
}

/// `sqs-due-work.json`: a well-formed due-work hand-off whose item does not exist is processed
/// (nothing to claim), a malformed one is reported failed.
#[tokio::test]
async fn due_work_messages_are_processed_or_reported_failed_when_malformed() {
    crate::common::cheap_secret_hashing();
    let app = build_app(AppConfig {
        seed: DEMO_SEED.into(),
        signing_key_pem: None,
    })
    .await
    .unwrap();
    let response =
        dispatch_function::handle_sqs_batch(&app.engine, sqs_fixture("sqs-due-work.json")).await;
    let failed: Vec<&str> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    assert_eq!(failed, ["8b2d0f31-4c5e-4f60-9b7c-8d9e0f1a2b33"]);
}

/// `schedule-sweep.json` (EventBridge, every minute): the dispatch function sweeps due work
/// whose hand-off was lost and hands it on; the item then runs (a CRM sync whose entry is gone
/// ends at once).
#[tokio::test]
async fn the_scheduled_event_sweeps_overdue_due_work() {
    use shared::model::due::{DueChanges, DueId, DueItem, DueKind};
    crate::common::cheap_secret_hashing();
    let app = build_app(AppConfig {
        seed: DEMO_SEED.into(),
        signing_key_pem: None,
    })
    .await
    .unwrap();
    let now = chrono::Utc::now();
    let account = shared::types::AccountId::from(uuid::Uuid::new_v4());
    let entry = unassigned_entry(account, INBOUND_ROUTER, now);
    let lost = DueItem {
        id: DueId::new(DueKind::CrmSync, "gone"),
        subject: serde_json::to_value(entry.key()).unwrap(),
        due_at: now - chrono::Duration::minutes(5),
        attempt: 1,
        resume_at: now - chrono::Duration::minutes(4),
        ..DueItem::new(
            DueId::new(DueKind::CrmSync, "gone"),
            serde_json::Value::Null,
            now,
            now,
        )
    };
    app.store
        .record_dispatch(
            &entry,
            None,
            None,
            None,
            &DueChanges {
                put: vec![lost.clone()],
                ..DueChanges::default()
            },
        )
        .await
        .unwrap();
    let handler = dispatch_function::LambdaHandler::new(&app.deps).unwrap();
    let event: Value = serde_json::from_str(&read_event("schedule-sweep.json")).unwrap();
    let answer = handler
        .handle(lambda_runtime::LambdaEvent::new(
            event,
            lambda_runtime::Context::default(),
        ))
        .await
        .unwrap();
    assert_eq!(answer, json!({"found": 1, "handed_on": 1}));
    for _ in 0..50 {
        if app.store.get_due(&lost.id).await.unwrap().is_none() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the swept item never ran");
}

#[tokio::test]
async fn invalid_sqs_bodies_are_reported_failed_so_they_reach_the_dead_letter_queue() {
    crate::common::cheap_secret_hashing();
    let app = build_app(AppConfig {
        seed: DEMO_SEED.into(),
        signing_key_pem: None,
    })
    .await
    .unwrap();
    let response =
        dispatch_function::handle_sqs_batch(&app.engine, sqs_fixture("sqs-dispatch-invalid.json"))
            .await;
    let failed: Vec<&str> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    assert_eq!(
        failed,
        [
            "5a7d4b2f-1c8e-4d66-8b2f-7e8f9a0b1c22",
            "6b8e5c3a-2d9f-4e77-9c3a-8f9a0b1c2d33"
        ]
    );
    let json = serde_json::to_value(&response).unwrap();
    assert_eq!(
        json["batchItemFailures"][0]["itemIdentifier"],
        "5a7d4b2f-1c8e-4d66-8b2f-7e8f9a0b1c22"
    );
}

#[tokio::test]
async fn a_redelivered_sqs_message_assigns_once() {
    let seed = DEMO_SEED.replace("\"overwrite\": false", "\"overwrite\": true");
    crate::common::cheap_secret_hashing();
    let app = build_app(AppConfig {
        seed,
        signing_key_pem: None,
    })
    .await
    .unwrap();
    let response = dispatch_function::handle_sqs_batch(
        &app.engine,
        sqs_fixture("sqs-dispatch-duplicate.json"),
    )
    .await;
    assert!(response.batch_item_failures.is_empty());
    let account = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01".parse().unwrap();
    let log: Vec<_> = app
        .store
        .list_record_dispatches(
            account,
            shared::model::ObjectType::Contacts,
            DANA.parse().unwrap(),
            &shared::page::Page::first(100, false),
        )
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.success)
        .collect();
    assert_eq!(
        log.len(),
        1,
        "the overwriting router would assign again without the idempotency key"
    );
}

#[test]
fn sqs_and_api_gateway_events_are_told_apart() {
    let sqs: Value = serde_json::to_value(sqs_fixture("sqs-dispatch-valid.json")).unwrap();
    assert!(dispatch_function::is_sqs_event(&sqs));
    let path = format!(
        "{}/../../events/dispatch-router.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let http: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(!dispatch_function::is_sqs_event(&http));
}

#[tokio::test]
async fn a_store_failure_reports_the_message_failed_for_redelivery() {
    use shared::clock::SystemClock;
    use shared::dispatch::DispatchEngine;
    use shared::fields::CatalogueCache;
    use shared::store::faulty::FaultyStore;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    crate::common::cheap_secret_hashing();
    let app = build_app(AppConfig {
        seed: DEMO_SEED.into(),
        signing_key_pem: None,
    })
    .await
    .unwrap();
    let faulty = Arc::new(FaultyStore::new(app.store.clone()));
    faulty.faults.backend_down.store(true, Ordering::SeqCst);
    let engine = DispatchEngine::new(
        faulty,
        Arc::new(SystemClock),
        Arc::new(CatalogueCache::default()),
    );
    let response =
        dispatch_function::handle_sqs_batch(&engine, sqs_fixture("sqs-dispatch-valid.json")).await;
    let failed: Vec<&str> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    assert_eq!(failed, ["2f6c3a1e-0b7d-4c55-9a1e-6d7f8e9a0b11"]);
}

/// The dispatch binary's handler, in process: an SQS fixture is routed to the batch handler (the
/// answer is a partial batch response), an API Gateway fixture to the HTTP app.
mod lambda_handler {
    use super::*;
    use dispatch_function::LambdaHandler;
    use lambda_runtime::{Context, LambdaEvent};
    use serde_json::Value;

    async fn handler() -> (LambdaHandler, TestApp) {
        crate::common::cheap_secret_hashing();
        let app = build_app(AppConfig {
            seed: DEMO_SEED.into(),
            signing_key_pem: None,
        })
        .await
        .unwrap();
        let handler = LambdaHandler::new(&app.deps).unwrap();
        (
            handler,
            TestApp {
                router: app.router.clone(),
            },
        )
    }

    fn fixture(name: &str) -> Value {
        let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    async fn handle(handler: &LambdaHandler, event: Value) -> Value {
        handler
            .handle(LambdaEvent::new(event, Context::default()))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn an_sqs_event_gets_a_partial_batch_response() {
        let (handler, test) = handler().await;
        let answer = handle(&handler, fixture("sqs-dispatch-valid.json")).await;
        assert_eq!(answer, serde_json::json!({"batchItemFailures": []}));
        let t = test.northwind().await;
        let contact = test
            .call(Method::GET, &format!("/contacts/{DANA}"), &t, None)
            .await;
        assert_eq!(contact.body["contact_owner"], "ana.lopez@northwind.example");

        let answer = handle(&handler, fixture("sqs-dispatch-invalid.json")).await;
        assert_eq!(answer["batchItemFailures"].as_array().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn an_api_gateway_event_is_served_by_the_http_app() {
        let (handler, test) = handler().await;
        let mut event = fixture("dispatch-router.json");
        let token = test.northwind().await;
        event["headers"]["authorization"] = Value::String(format!("Bearer {token}"));
        let answer = handle(&handler, event).await;
        assert_eq!(answer["statusCode"], 200, "{answer}");
        let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
        assert_eq!(body["message"], "Owner assigned", "{body}");
        assert_eq!(body["success"], true);

        // Without a token the same event is refused by the app, in the contract's shape.
        let mut anonymous = fixture("dispatch-router.json");
        anonymous["headers"]
            .as_object_mut()
            .unwrap()
            .remove("authorization");
        let answer = handle(&handler, anonymous).await;
        assert_eq!(answer["statusCode"], 401, "{answer}");
    }
}

/// The demo's CRM credentials are stored sealed (BEHAVIOR 7); no byte of the embedded store
/// holds them in the clear.
#[tokio::test]
async fn the_embedded_store_holds_no_crm_token_in_the_clear() {
    let memory = std::sync::Arc::new(shared::store::memory::MemoryStore::new());
    crate::common::cheap_secret_hashing();
    local_server::build_app_on(
        AppConfig {
            seed: DEMO_SEED.into(),
            signing_key_pem: None,
        },
        memory.clone(),
    )
    .await
    .unwrap();
    // Initech's HubSpot app: an OAuth client secret and a refresh token (BEHAVIOR 7).
    let stored = memory.snapshot();
    assert!(stored.contains("local:"), "a sealed credential is stored");
    for credential in ["initech-routing-app-secret", "initech-demo-refresh-token"] {
        assert!(
            DEMO_SEED.contains(credential),
            "the seed provisions {credential}"
        );
        assert!(
            !stored.contains(credential),
            "{credential} is stored in the clear"
        );
    }
}
