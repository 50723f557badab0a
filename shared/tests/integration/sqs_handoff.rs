//! The SQS hand-off of due work in batches, against a scripted SQS: a
//! loopback HTTP server that answers each request as a test says (no emulator needed), so the
//! requests and the partial failures are exactly those SQS documents.
//!
//! - the webhook notifications of one dispatch (one due item per subscription) are sent in
//!   `SendMessageBatch` requests of up to 10 messages, all at once, never one `SendMessage` each;
//! - a batch answers per message: an entry SQS failed for a reason of its own (`SenderFault`
//!   false) is sent once more, alone with the others like it; one refused for a fault of the
//!   request is not, and is reported failed; so is every message of a request that failed whole;
//! - a message not handed on stays stored (the outbox is the source of truth): the sweeper
//!   finds it once its grace has passed, and the dispatch answered all the same.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use axum::http::{HeaderMap, StatusCode};
use serde_json::{json, Value};
use shared::clock::SystemClock;
use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, Outcome};
use shared::due::{DueMessage, DueSettings, DueWorker, Handoff, SqsHandoff};
use shared::fields::CatalogueCache;
use shared::model::due::{DueId, DueKind};
use shared::model::webhook::{EventType, WebhookSubscription};
use shared::store::memory::MemoryStore;
use shared::store::Store;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

const QUEUE: &str = "http://queue.example/000000000000/due";
const ACCOUNT: &str = "5d2e3f40-5b6c-4d7e-8f90-a1b2c3d4e5f6";
const ROUTER: &str = "5d2e3f40-5b6c-4d7e-8f90-a1b2c3d4e5f7";
const CONTACT: &str = "01936b2a-7c00-7a00-8000-00000000e001";

/// One request the scripted SQS received: its operation and, for a batch, its entries' ids.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    operation: String,
    ids: Vec<String>,
    bodies: Vec<String>,
}

/// What the scripted SQS answers to the `n`th request (from 0): status and JSON body.
type Script = dyn Fn(&Seen, usize) -> (u16, Value) + Send + Sync;

/// A scripted SQS on a loopback port.
struct Scripted {
    endpoint: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Scripted {
    async fn start(script: Box<Script>) -> Self {
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let script: Arc<Script> = Arc::from(script);
        let log = seen.clone();
        let app = axum::Router::new().fallback(move |headers: HeaderMap, body: String| {
            let (log, script) = (log.clone(), script.clone());
            async move {
                let operation = headers
                    .get("x-amz-target")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .trim_start_matches("AmazonSQS.")
                    .to_string();
                let request: Value = serde_json::from_str(&body).unwrap_or_default();
                let entries = request["Entries"].as_array().cloned().unwrap_or_default();
                let seen = Seen {
                    operation,
                    ids: entries
                        .iter()
                        .map(|e| e["Id"].as_str().unwrap().to_string())
                        .collect(),
                    bodies: entries
                        .iter()
                        .map(|e| e["MessageBody"].as_str().unwrap().to_string())
                        .collect(),
                };
                let n = {
                    let mut log = log.lock().unwrap();
                    log.push(seen.clone());
                    log.len() - 1
                };
                let (status, answer) = script(&seen, n);
                (
                    StatusCode::from_u16(status).unwrap(),
                    [("content-type", "application/x-amz-json-1.0")],
                    answer.to_string(),
                )
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { endpoint, seen }
    }

    /// A hand-off to this server (the SDK's own retries off: every request is the hand-off's).
    async fn handoff(&self) -> SqsHandoff {
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(&self.endpoint)
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_sqs::config::Credentials::new(
                "test", "test", None, None, "test",
            ))
            .retry_config(aws_config::retry::RetryConfig::disabled())
            .load()
            .await;
        SqsHandoff::new(&sdk, QUEUE, Duration::from_secs(30))
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// A batch answer: every entry of `seen` successful but those of `failed` (id, sender fault).
fn batch_answer(seen: &Seen, failed: &[(&str, bool)]) -> (u16, Value) {
    let ok: Vec<Value> = seen
        .ids
        .iter()
        .filter(|id| !failed.iter().any(|(f, _)| f == id))
        .map(|id| json!({"Id": id, "MessageId": Uuid::new_v4().to_string(), "MD5OfMessageBody": "x"}))
        .collect();
    let failed: Vec<Value> = failed
        .iter()
        .filter(|(f, _)| seen.ids.iter().any(|id| id == f))
        .map(|(id, sender)| {
            json!({"Id": id, "SenderFault": sender, "Code": if *sender { "InvalidParameterValue" } else { "InternalError" }, "Message": "scripted"})
        })
        .collect();
    (200, json!({"Successful": ok, "Failed": failed}))
}

fn message(n: usize) -> DueMessage {
    DueMessage {
        kind: "due_work".into(),
        id: DueId::new(DueKind::WebhookDelivery, format!("msg_{n}")),
        attempt: 0,
        due_at: chrono::Utc::now(),
    }
}

/// The seed: one account, a router of one member, a contact.
fn seed() -> String {
    json!({"accounts": [{
        "id": ACCOUNT, "name": "Batch", "active": true,
        "users": [{"id": "5d2e3f40-5b6c-4d7e-8f90-a1b2c3d4e5f8", "email": "a@batch.example"}],
        "routers": [{
            "id": ROUTER, "name": "R", "object_type": "contacts", "is_published": true,
            "settings": {"owner_field": "contact_owner", "distribution_model": "round robin", "overwrite": true},
            "users": [{"email": "a@batch.example"}], "teams": []
        }],
        "records": {"contacts": [{"id": CONTACT, "fields": {"email": "lead@prospect.example"}}]}
    }]})
    .to_string()
}

/// An engine over a fresh embedded store holding [`seed`] and `subscriptions` subscriptions to
/// `assignment.created`, handing its due work to `handoff`.
async fn engine_with(
    subscriptions: usize, handoff: SqsHandoff,
) -> (Arc<dyn Store>, DispatchEngine) {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let plan = shared::seed::load(
        &seed(),
        chrono::Utc::now(),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .unwrap();
    store.provision(&plan).await.unwrap();
    let account: shared::types::AccountId = Uuid::parse_str(ACCOUNT).unwrap().into();
    for n in 0..subscriptions {
        let subscription = WebhookSubscription {
            id: Uuid::now_v7().into(),
            account_id: account,
            url: format!("https://hooks.example/{n}"),
            events: vec![EventType::AssignmentCreated],
            description: None,
            enabled: true,
            disabled_reason: None,
            secrets: Vec::new(),
            failing_since: None,
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
            version: 1,
        };
        store.create_webhook(&subscription, 20, None).await.unwrap();
    }
    let due = DueWorker::new(
        store.clone(),
        Arc::new(SystemClock),
        DueSettings::default(),
        Arc::new(handoff),
    );
    let engine = DispatchEngine::new(
        store.clone(),
        Arc::new(SystemClock),
        Arc::new(CatalogueCache::default()),
    )
    .with_due(due);
    (store, engine)
}

async fn dispatch(engine: &DispatchEngine) -> Outcome {
    let request = DispatchRequest {
        router_id: ROUTER.into(),
        object_id: CONTACT.into(),
        account_id: None,
    };
    let account: shared::types::AccountId = Uuid::parse_str(ACCOUNT).unwrap().into();
    engine
        .dispatch(AccountContext::Token(account), &request, None)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_twelve_notifications_of_one_dispatch_are_two_send_message_batch_requests() {
    let sqs = Scripted::start(Box::new(|seen, _| batch_answer(seen, &[]))).await;
    let (_, engine) = engine_with(12, sqs.handoff().await).await;
    assert!(matches!(dispatch(&engine).await, Outcome::Assigned(_)));
    let seen = sqs.seen();
    let operations: Vec<&str> = seen.iter().map(|s| s.operation.as_str()).collect();
    assert_eq!(
        operations,
        ["SendMessageBatch", "SendMessageBatch"],
        "{seen:?}"
    );
    let mut sizes: Vec<usize> = seen.iter().map(|s| s.ids.len()).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [2, 10]);
    // Twelve distinct deliveries' due items.
    let mut ids: Vec<String> = seen
        .iter()
        .flat_map(|s| s.bodies.iter())
        .map(|body| {
            let message = DueMessage::from_body(body).unwrap().unwrap();
            assert_eq!(message.id.kind(), DueKind::WebhookDelivery);
            message.id.to_string()
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 12);
}

#[tokio::test]
async fn an_entry_sqs_failed_is_sent_again_and_one_refused_is_reported_failed() {
    // The first batch fails entry 1 (SQS's fault) and entry 2 (the request's); the second batch
    // carries entry 1 alone and succeeds.
    let sqs = Scripted::start(Box::new(|seen, n| match n {
        0 => batch_answer(seen, &[("1", false), ("2", true)]),
        _ => batch_answer(seen, &[]),
    }))
    .await;
    let handoff = sqs.handoff().await;
    let results = handoff
        .hand_off_all(&[message(0), message(1), message(2)])
        .await;
    let ok: Vec<bool> = results.iter().map(Result::is_ok).collect();
    assert_eq!(ok, [true, true, false]);
    let seen = sqs.seen();
    let batches: Vec<Vec<String>> = seen.iter().map(|s| s.ids.clone()).collect();
    assert_eq!(batches, [vec!["0", "1", "2"], vec!["1"]]);
    // Failed twice: reported failed, not sent a third time.
    let sqs = Scripted::start(Box::new(|seen, _| batch_answer(seen, &[("0", false)]))).await;
    let results = sqs
        .handoff()
        .await
        .hand_off_all(&[message(0), message(1)])
        .await;
    let ok: Vec<bool> = results.iter().map(Result::is_ok).collect();
    assert_eq!(ok, [false, true]);
    assert_eq!(sqs.seen().len(), 2);
}

#[tokio::test]
async fn notifications_not_handed_on_stay_stored_for_the_sweeper_and_the_dispatch_answers() {
    // Every request fails whole.
    let sqs = Scripted::start(Box::new(|_, _| {
        (
            500,
            json!({"__type": "com.amazonaws.sqs#InternalError", "message": "scripted"}),
        )
    }))
    .await;
    let handoff = sqs.handoff().await;
    let results = handoff.hand_off_all(&[message(0), message(1)]).await;
    assert!(results.iter().all(Result::is_err));
    let (store, engine) = engine_with(3, handoff).await;
    assert!(matches!(dispatch(&engine).await, Outcome::Assigned(_)));
    assert!(sqs.seen().iter().all(|s| s.operation == "SendMessageBatch"));
    // Once the grace has passed, the sweeper's read finds the three deliveries' items.
    let later = chrono::Utc::now() + chrono::Duration::seconds(31);
    let overdue = store.overdue_due_items(later, 100).await.unwrap();
    let deliveries = overdue
        .iter()
        .filter(|item| item.kind() == DueKind::WebhookDelivery)
        .count();
    assert_eq!(deliveries, 3, "{overdue:?}");
}
