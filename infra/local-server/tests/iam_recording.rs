//! Every AWS call each function's code makes, recorded against the emulator (least
//! privilege: `docs/deploy.md`, "Permissions: from the code to the policies").
//!
//! Each function is built the way its Lambda `main` builds it (its cold start, with the
//! environment `template.yaml` gives it, so secrets read in init are recorded too) and driven
//! through every `events/` fixture of its routes and event sources, plus the paths fixtures do
//! not reach: CRM sync retries through the queue, a KMS-sealed CRM token opened, the sweeper
//! re-arming an overdue item, an SLA check received from the queue that reassigns a record
//! (BEHAVIOR 14; a router with an SLA is added to the demo seed here, and the dispatch function
//! gets `SLA_MINUTE_SECONDS=1` so the check is due within the test), an `Idempotency-Key`
//! released after a 5xx. The recording
//! ([`shared::store::dynamodb::recording`]) sees every request the SDK sends.
//!
//! The result must equal `infra/iam/recorded-calls.json`, from which `cargo test -p
//! template-check` derives each role's IAM actions. After a change that adds or removes a call,
//! regenerate it (the emulator running, as in the test command):
//!
//! ```sh
//! RECORD_IAM=write cargo test -p local-server --test iam_recording
//! ```
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;

use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use shared::auth::{Scope, SigningKey, TokenIssuer, DEFAULT_AUDIENCE, DEFAULT_ISSUER};
use shared::model::due::{DueChanges, DueId, DueItem, DueKind};
use shared::store::dynamodb::recording::{self, RecordedCall};
use shared::store::dynamodb::test_table::EMULATOR_MISSING;
use shared::store::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use tower::ServiceExt;

/// The generated file, beside the template checks that read it.
const RECORDED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../iam/recorded-calls.json");

const NORTHWIND: &str = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01";
const INITECH: &str = "c3e4f5a6-b7c8-4d9e-8f01-a2b3c4d5e6f7";
const CRM_ROUTER: &str = "f6b7c8d9-e0f1-4a2b-9c34-d5e6f7a8b920";
const MILTON: &str = "01936b2a-7c00-7a00-8000-000000000021";
/// A Northwind router with an SLA of one minute (added to the demo seed by [`Stack::create`]).
const SLA_ROUTER: &str = "ab5b6c78-d9ea-4fb5-a0c7-d24d5e6f7a91";
const LEE: &str = "01936b2a-7c00-7a00-8000-000000000004";

/// Every variable a function's environment may hold; each function gets its own set.
const VARIABLES: &[&str] = &[
    "JWT_SIGNING_KEY_SECRET_ARN",
    "JWT_SIGNING_KEY_PEM",
    "JWT_PUBLIC_JWKS",
    "CURSOR_SECRET",
    "CURSOR_SECRET_ARN",
    "DISPATCH_QUEUE_URL",
    "WEBHOOK_QUEUE_URL",
    "WEBHOOK_RETRY_DELAYS",
    "CRM_SYNC_RETRY_DELAYS",
    "CRM_SYNC_LIMIT_WAIT",
    "SEALING_KMS_KEY_ID",
    "LOCAL_SEALING_KEY",
    "ALLOW_INSECURE_OUTBOUND",
    "SEED_PATH",
    "SLA_MINUTE_SECONDS",
];

/// The stack's resources on the emulator.
struct Stack {
    table: String,
    queue: String,
    webhook_queue: String,
    /// The fake CRM's base URL; it also receives webhook deliveries (`/hooks`).
    receiver: String,
    signing_secret: String,
    cursor_secret: String,
    sealing_key: String,
    jwks: String,
    sqs: aws_sdk_sqs::Client,
    store: shared::store::dynamodb::DynamoStore,
    _crm: fake_crm::FakeCrm,
}

impl Stack {
    /// Creates the table, the queue with its dead-letter queue, the two secrets and the sealing
    /// key, and provisions the demo seed (CRM token sealed with the key; Initech's CRM is a fake
    /// that answers 503 once), naming each resource with its logical id in the template.
    async fn create() -> Self {
        let sdk = shared::store::dynamodb::env::sdk_config().await;
        let table = format!("iam-{}", uuid::Uuid::new_v4().simple());
        let store = shared::store::dynamodb::DynamoStore::new(
            shared::store::dynamodb::env::client(&sdk),
            &table,
        );
        store.create_table_if_missing().await.unwrap();
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let queue = sqs
            .create_queue()
            .queue_name(format!("{table}-dispatch"))
            .send()
            .await
            .unwrap()
            .queue_url
            .unwrap();
        let webhook_queue = sqs
            .create_queue()
            .queue_name(format!("{table}-webhooks"))
            .send()
            .await
            .unwrap()
            .queue_url
            .unwrap();
        let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
        let signing_secret = secrets
            .create_secret()
            .name(format!("{table}-signing"))
            .secret_string(shared::auth::DEV_SIGNING_KEY_PEM)
            .send()
            .await
            .unwrap()
            .arn
            .unwrap();
        let cursor_secret = secrets
            .create_secret()
            .name(format!("{table}-cursor"))
            .secret_string("a-cursor-key-of-at-least-thirty-two-bytes!")
            .send()
            .await
            .unwrap()
            .arn
            .unwrap();
        let sealing_key = aws_sdk_kms::Client::new(&sdk)
            .create_key()
            .send()
            .await
            .unwrap()
            .key_metadata
            .unwrap()
            .key_id;
        let (crm, base) = fake_crm::FakeCrm::start_demo().await.unwrap();
        crm.push(
            fake_crm::Scripted::status(503)
                .body(json!({"message": "down"}))
                .for_updates(),
        );
        let seed = local_server::DEMO_SEED.replace("http://127.0.0.1:4010", &base);
        let mut seed: Value = serde_json::from_str(&seed).unwrap();
        seed["accounts"][0]["routers"].as_array_mut().unwrap().push(json!({
            "id": SLA_ROUTER, "name": "SLA leads", "object_type": "contacts",
            "is_published": true, "has_integration": false,
            "settings": {"owner_field": "contact_owner", "distribution_model": "round robin",
                         "overwrite": true, "ignore_working_hours": true,
                         "sla": {"minutes": 1, "worked_field": "lead_status", "worked_values": ["connected"]}},
            "users": [{"email": "ben.okafor@northwind.example"}, {"email": "chen.wei@northwind.example"}],
            "teams": []
        }));
        let plan = shared::seed::load(
            &seed.to_string(),
            chrono::Utc::now() - chrono::Duration::days(1),
            shared::outbound::OutboundPolicy::LOCAL,
        )
        .unwrap();
        let sealer = shared::secrets::KmsSealer::new(&sdk, &sealing_key);
        let accounts: Vec<_> = plan.accounts.iter().map(|a| a.account.id).collect();
        shared::seed::provision(&store, &sealer, plan)
            .await
            .unwrap();
        // Every member available around the clock, so what dispatch writes does not depend on
        // the hour the test runs at.
        for account in accounts {
            let page = shared::page::Page::first(100, false);
            for mut member in store.list_members(account, &page).await.unwrap().items {
                let version = member.version;
                member.working_hours.clear();
                member.out_office_dates.clear();
                member.office_status = true;
                member.version += 1;
                store
                    .update_member(&member, version, &shared::model::CalendarRefs::none(), None)
                    .await
                    .unwrap();
            }
        }
        for (physical, logical) in [
            (table.as_str(), "Table"),
            (queue.as_str(), "DispatchQueue"),
            (webhook_queue.as_str(), "WebhookQueue"),
            (signing_secret.as_str(), "SigningKeySecret"),
            (cursor_secret.as_str(), "CursorSecret"),
            (sealing_key.as_str(), "SealingKey"),
        ] {
            recording::name_resource(physical, logical);
        }
        let jwks = SigningKey::from_pem(shared::auth::DEV_SIGNING_KEY_PEM)
            .unwrap()
            .public_jwks()
            .to_string();
        Self {
            table,
            queue,
            webhook_queue,
            receiver: base.clone(),
            signing_secret,
            cursor_secret,
            sealing_key,
            jwks,
            sqs,
            store,
            _crm: crm,
        }
    }

    /// The environment `template.yaml` gives `function` (the committed development key allowed;
    /// outbound http allowed for the fake CRM), every other variable unset; calls are recorded
    /// under `function` from now on.
    fn become_function(&self, function: &str) {
        for variable in VARIABLES {
            std::env::remove_var(variable);
        }
        let mut env: Vec<(&str, &str)> = vec![
            ("STORE_BACKEND", "dynamodb"),
            ("TABLE_NAME", &self.table),
            ("ALLOW_DEVELOPMENT_SIGNING_KEY", "true"),
        ];
        match function {
            "TokenFunction" => env.push(("JWT_SIGNING_KEY_SECRET_ARN", &self.signing_secret)),
            "DispatchFunction" => env.extend([
                ("JWT_PUBLIC_JWKS", self.jwks.as_str()),
                ("DISPATCH_QUEUE_URL", &self.queue),
                ("WEBHOOK_QUEUE_URL", &self.webhook_queue),
                ("CRM_SYNC_RETRY_DELAYS", "1,1,1"),
                ("SEALING_KMS_KEY_ID", &self.sealing_key),
                ("ALLOW_INSECURE_OUTBOUND", "true"),
                // Not in the template (60 s by default): only how soon the check is due.
                ("SLA_MINUTE_SECONDS", "1"),
            ]),
            "WebhooksFunction" => env.extend([
                ("JWT_PUBLIC_JWKS", self.jwks.as_str()),
                ("CURSOR_SECRET_ARN", &self.cursor_secret),
                ("WEBHOOK_QUEUE_URL", &self.webhook_queue),
                ("WEBHOOK_RETRY_DELAYS", "1,1,1"),
                ("SEALING_KMS_KEY_ID", &self.sealing_key),
                ("ALLOW_INSECURE_OUTBOUND", "true"),
            ]),
            _ => env.extend([
                ("JWT_PUBLIC_JWKS", self.jwks.as_str()),
                ("CURSOR_SECRET_ARN", &self.cursor_secret),
            ]),
        }
        for (name, value) in env {
            std::env::set_var(name, value);
        }
        recording::record_as(Some(function));
    }
}

/// A live token of `account` with every scope (signed locally: no AWS call).
fn token(account: &str) -> String {
    let key = SigningKey::from_pem(shared::auth::DEV_SIGNING_KEY_PEM).unwrap();
    // The account's provisioned client: every function checks that a token's client exists
    // and admits it (BEHAVIOR 1).
    let client = match account {
        INITECH => "initech-integration",
        _ => "northwind-integration",
    };
    TokenIssuer::new(key, DEFAULT_ISSUER, DEFAULT_AUDIENCE, 3600)
        .issue(
            client,
            account.parse::<uuid::Uuid>().unwrap().into(),
            &[Scope::Read, Scope::Create, Scope::Update, Scope::Delete],
            chrono::Utc::now(),
        )
        .unwrap()
        .access_token
}

/// The `events/` fixtures whose names start with one of `prefixes`.
fn fixtures(prefixes: &[&str]) -> Vec<(String, Value)> {
    let dir = format!("{}/../../events", env!("CARGO_MANIFEST_DIR"));
    let mut found: Vec<(String, Value)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            prefixes.iter().any(|prefix| name.starts_with(prefix))
        })
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (
                p.file_name().unwrap().to_string_lossy().to_string(),
                serde_json::from_str(&text).unwrap(),
            )
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// `event` (an API Gateway event) with a live token of `account`.
fn with_token(mut event: Value, account: &str) -> Value {
    if event["headers"].get("authorization").is_some() && event["rawPath"] != "/oauth2/token" {
        event["headers"]["authorization"] = json!(format!("Bearer {}", token(account)));
    }
    event
}

/// Serves an API Gateway event with `app`; answers the status.
async fn serve(app: &axum::Router, event: &Value) -> u16 {
    let request = lambda_http::request::from_str(&event.to_string()).unwrap();
    let (parts, body) = request.into_parts();
    let response = app
        .clone()
        .oneshot(axum::http::Request::from_parts(
            parts,
            Body::from(body.to_vec()),
        ))
        .await
        .unwrap();
    let status = response.status().as_u16();
    let _ = response.into_body().collect().await;
    status
}

/// An API Gateway event for `method path` with a JSON `body` and `headers`, from the shape of
/// `dispatch-router.json`.
fn api_event(
    method: &str, path: &str, body: Value, account: &str, headers: &[(&str, &str)],
) -> Value {
    let (_, mut event) = fixtures(&["dispatch-router.json"]).remove(0);
    event["routeKey"] = json!(format!("{method} {path}"));
    event["rawPath"] = json!(path);
    event["requestContext"]["http"]["method"] = json!(method);
    event["requestContext"]["http"]["path"] = json!(path);
    event["requestContext"]["routeKey"] = json!(format!("{method} {path}"));
    event["body"] = json!(body.to_string());
    event["isBase64Encoded"] = json!(false);
    for (name, value) in headers {
        event["headers"][*name] = json!(value);
    }
    with_token(event, account)
}

async fn token_function() {
    let deps = token_function::deps_from_env().await.unwrap();
    let app = token_function::app(&deps).unwrap();
    for (name, event) in fixtures(&["token-", "openapi-"]) {
        assert_eq!(serve(&app, &event).await, 200, "{name}");
    }
    // A wrong secret: the failure is counted in the table (BEHAVIOR 1, an UpdateItem).
    let (_, mut wrong) = fixtures(&["token-"]).remove(0);
    wrong["body"] = json!(
        "grant_type=client_credentials&client_id=northwind-integration&client_secret=not-the-secret-0123&scope=service-api%2Fread"
    );
    assert_eq!(serve(&app, &wrong).await, 401);
}

async fn records_function() {
    let deps = shared::deps::Deps::from_env().await.unwrap();
    let app = records_function::app(&deps).unwrap();
    for (name, event) in fixtures(&["records-", "default-"]) {
        let status = serve(&app, &with_token(event, NORTHWIND)).await;
        assert!(status < 500, "{name}: {status}");
    }
    // An `Idempotency-Key` create whose write fails: the claim is released (a 5xx is not kept).
    recording::fail_next("TransactWriteItems");
    let create = api_event(
        "POST",
        "/contacts",
        json!({"fields": {"email": "released@example.com"}}),
        NORTHWIND,
        &[("idempotency-key", "iam-release-records")],
    );
    assert_eq!(serve(&app, &create).await, 500);
}

async fn users_function() {
    let deps = shared::deps::Deps::from_env().await.unwrap();
    let app = users_function::app(&deps).unwrap();
    // Holiday calendars are routes of the users function (BEHAVIOR 17); in file order the
    // demo calendar's delete meets its member (409: the transaction's refusal is recorded), and
    // the member PATCH moves a calendar reference in the member's transaction.
    for (name, event) in fixtures(&["holiday-calendars-", "users-"]) {
        let status = serve(&app, &with_token(event, NORTHWIND)).await;
        assert!(status < 500, "{name}: {status}");
    }
}

async fn routers_function() {
    let deps = shared::deps::Deps::from_env().await.unwrap();
    let app = routers_function::app(&deps).unwrap();
    let fixtures = fixtures(&["routers-"]);
    for (name, event) in &fixtures {
        let status = serve(&app, &with_token(event.clone(), NORTHWIND)).await;
        assert!(status < 500, "{name}: {status}");
    }
    // In file order the draft is deleted before one exists; the restore made one since
    // (BEHAVIOR 15): delete it now, so its write is recorded too.
    let (_, delete) = fixtures
        .iter()
        .find(|(name, _)| name == "routers-draft-delete.json")
        .unwrap();
    assert_eq!(
        serve(&app, &with_token(delete.clone(), NORTHWIND)).await,
        204
    );
}

async fn dispatch_function(stack: &Stack) {
    let deps = shared::deps::Deps::from_env().await.unwrap();
    let handler = dispatch_function::LambdaHandler::new(&deps).unwrap();
    let handle = |event: Value| {
        let handler = handler.clone();
        async move {
            handler
                .handle(lambda_runtime::LambdaEvent::new(
                    event,
                    lambda_runtime::Context::default(),
                ))
                .await
                .unwrap()
        }
    };
    for (_, event) in fixtures(&["dispatch-", "sqs-", "schedule-"]) {
        handle(with_token(event, NORTHWIND)).await;
    }
    // A CRM-synced router: the token opened with KMS, the first attempt answered 503, the retry
    // handed to the dispatch queue, then received and made.
    let dispatch = api_event(
        "POST",
        "/dispatch/router",
        json!({"router_id": CRM_ROUTER, "object_id": MILTON}),
        INITECH,
        &[],
    );
    let answer = handle(dispatch).await;
    assert!(answer.to_string().contains("CRM answered 503"), "{answer}");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    deliver_queued(stack, &stack.queue, "DispatchFunction", &handle).await;
    // An overdue item the sweeper re-arms and hands on, then made (its entry is gone).
    recording::record_as(None);
    let now = chrono::Utc::now();
    let account = NORTHWIND.parse::<uuid::Uuid>().unwrap().into();
    let entry = common::unassigned_entry(account, CRM_ROUTER, now);
    let overdue = DueItem {
        id: DueId::new(DueKind::CrmSync, "iam-overdue"),
        subject: serde_json::to_value(shared::model::DispatchEntryKey {
            router_id: entry.router_id,
            dispatched_at: now - chrono::Duration::hours(1),
            id: uuid::Uuid::now_v7(),
        })
        .unwrap(),
        due_at: now - chrono::Duration::minutes(10),
        attempt: 1,
        resume_at: now - chrono::Duration::minutes(9),
        ..DueItem::new(
            DueId::new(DueKind::CrmSync, "iam-overdue"),
            serde_json::Value::Null,
            now,
            now,
        )
    };
    stack
        .store
        .record_dispatch(
            &entry,
            None,
            None,
            None,
            &DueChanges {
                put: vec![overdue],
                ..DueChanges::default()
            },
        )
        .await
        .unwrap();
    recording::record_as(Some("DispatchFunction"));
    let (_, schedule) = fixtures(&["schedule-sweep.json"]).remove(0);
    handle(schedule).await;
    deliver_queued(stack, &stack.queue, "DispatchFunction", &handle).await;
    // An SLA router: the check is stored with the assignment and handed to the dispatch queue;
    // received when due, it finds the record unworked and reassigns it (BEHAVIOR 14).
    let sla = api_event(
        "POST",
        "/dispatch/router",
        json!({"router_id": SLA_ROUTER, "object_id": LEE}),
        NORTHWIND,
        &[],
    );
    let answer = handle(sla).await;
    assert!(answer.to_string().contains("Owner assigned"), "{answer}");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    deliver_queued(stack, &stack.queue, "DispatchFunction", &handle).await;
    recording::record_as(None);
    let history = stack
        .store
        .list_record_dispatches(
            NORTHWIND.parse::<uuid::Uuid>().unwrap().into(),
            shared::model::ObjectType::Contacts,
            LEE.parse::<uuid::Uuid>().unwrap().into(),
            &shared::page::Page::first(1, false),
        )
        .await
        .unwrap()
        .items;
    assert_eq!(
        history[0].source,
        shared::model::DispatchSource::Sla,
        "the check reassigned the record: {history:?}"
    );
    recording::record_as(Some("DispatchFunction"));
    // An `Idempotency-Key` dispatch whose write fails: the claim is released.
    recording::fail_next("TransactWriteItems");
    let release = api_event(
        "POST",
        "/dispatch/router",
        json!({"router_id": "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45", "object_id": "01936b2a-7c00-7a00-8000-000000000004"}),
        NORTHWIND,
        &[("idempotency-key", "iam-release-dispatch")],
    );
    let answer = handle(release).await;
    assert_eq!(answer["statusCode"], 500, "{answer}");
}

/// The webhooks function's Lambda handler over the environment of `become_function`.
async fn webhooks_handler(
) -> impl Fn(Value) -> std::pin::Pin<Box<dyn std::future::Future<Output = Value>>> {
    let deps = shared::deps::Deps::from_env().await.unwrap();
    let handler = webhooks_function::LambdaHandler::new(&deps).unwrap();
    move |event: Value| {
        let handler = handler.clone();
        Box::pin(async move {
            handler
                .handle(lambda_runtime::LambdaEvent::new(
                    event,
                    lambda_runtime::Context::default(),
                ))
                .await
                .unwrap()
        })
    }
}

/// The webhooks function, first part: every fixture, then a subscription of Northwind to the
/// fake receiver that the dispatch function's events go to. Returns its id.
async fn webhooks_function_subscribes(stack: &Stack) -> String {
    let handle = webhooks_handler().await;
    for (name, event) in fixtures(&["webhooks-", "sqs-webhook-"]) {
        let answer = handle(with_token(event, NORTHWIND)).await;
        let status = answer["statusCode"].as_u64().unwrap_or(200);
        assert!(status < 500, "{name}: {answer}");
    }
    let create = api_event(
        "POST",
        "/webhooks",
        json!({"url": format!("{}/hooks", stack.receiver), "events": ["assignment.created", "dispatch.unassigned"]}),
        NORTHWIND,
        &[],
    );
    let answer = handle(create).await;
    assert_eq!(answer["statusCode"], 201, "{answer}");
    let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
    body["id"].as_str().unwrap().to_string()
}

/// The webhooks function, second part: the deliveries the dispatch function handed to the
/// webhook queue (signed with a KMS-opened secret), then every route on the real subscription:
/// read, log, manual retry (handed to its own queue), rotation, change and deletion.
async fn webhooks_function_delivers(stack: &Stack, id: &str) {
    let handle = webhooks_handler().await;
    deliver_queued(stack, &stack.webhook_queue, "WebhooksFunction", &handle).await;
    let log = api_event(
        "GET",
        &format!("/webhooks/{id}/deliveries"),
        json!(null),
        NORTHWIND,
        &[],
    );
    let answer = handle(log).await;
    assert_eq!(answer["statusCode"], 200, "{answer}");
    let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
    let delivery = body["data"][0]["id"].as_str().unwrap().to_string();
    let steps = [
        ("GET", format!("/webhooks/{id}"), json!(null), 200),
        ("GET", "/webhooks".to_string(), json!(null), 200),
        (
            "POST",
            format!("/webhooks/{id}/deliveries/{delivery}/retry"),
            json!(null),
            202,
        ),
        (
            "POST",
            format!("/webhooks/{id}/rotate-secret"),
            json!(null),
            200,
        ),
        (
            "PATCH",
            format!("/webhooks/{id}"),
            json!({"enabled": false}),
            200,
        ),
        ("DELETE", format!("/webhooks/{id}"), json!(null), 204),
    ];
    for (method, path, body, status) in steps {
        let mut event = api_event(method, &path, body.clone(), NORTHWIND, &[]);
        if body.is_null() {
            event["body"] = Value::Null;
        }
        let answer = handle(event).await;
        assert_eq!(answer["statusCode"], status, "{method} {path}: {answer}");
    }
}

/// Receives what waits on `queue` (as the event source mapping would, not recorded) and hands
/// it to `function` as one SQS batch.
async fn deliver_queued<F, Fut>(stack: &Stack, queue: &str, function: &str, handle: &F)
where
    F: Fn(Value) -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    recording::record_as(None);
    let received = stack
        .sqs
        .receive_message()
        .queue_url(queue)
        .max_number_of_messages(10)
        .wait_time_seconds(2)
        .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert!(!received.is_empty(), "a message was handed to the queue");
    let records: Vec<Value> = received
        .iter()
        .map(|m| {
            json!({
                "messageId": m.message_id(),
                "receiptHandle": m.receipt_handle(),
                "body": m.body(),
                "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "0", "SenderId": "x", "ApproximateFirstReceiveTimestamp": "0"},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:dispatch",
                "awsRegion": "us-east-1"
            })
        })
        .collect();
    recording::record_as(Some(function));
    let answer = handle(json!({"Records": records})).await;
    assert_eq!(answer["batchItemFailures"], json!([]), "{answer}");
}

/// Every function's handler run once, in one process, as in Lambda: on a thread with Lambda's
/// 8 MiB main-thread stack (a debug build's handler futures are several times a release build's,
/// and all six functions' futures nest here under one test; the test harness's thread has 2 MiB).
#[test]
fn every_aws_call_of_every_function_is_the_recorded_set() {
    const LAMBDA_MAIN_THREAD_STACK: usize = 8 << 20;
    let run = std::thread::Builder::new()
        .stack_size(LAMBDA_MAIN_THREAD_STACK)
        .spawn(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_stack_size(LAMBDA_MAIN_THREAD_STACK)
                .enable_all()
                .build()
                .expect("a tokio runtime")
                .block_on(record_every_function())
        })
        .expect("a thread for the functions");
    if let Err(panic) = run.join() {
        std::panic::resume_unwind(panic);
    }
}

async fn record_every_function() {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        panic!("{EMULATOR_MISSING}");
    }
    let stack = Stack::create().await;
    stack.become_function("TokenFunction");
    token_function().await;
    stack.become_function("RecordsFunction");
    records_function().await;
    stack.become_function("UsersFunction");
    users_function().await;
    stack.become_function("RoutersFunction");
    routers_function().await;
    stack.become_function("WebhooksFunction");
    let subscription = webhooks_function_subscribes(&stack).await;
    stack.become_function("DispatchFunction");
    dispatch_function(&stack).await;
    stack.become_function("WebhooksFunction");
    webhooks_function_delivers(&stack, &subscription).await;
    recording::record_as(None);

    let recorded: BTreeMap<String, BTreeSet<RecordedCall>> = recording::recorded();
    let text = format!("{}\n", serde_json::to_string_pretty(&recorded).unwrap());
    if std::env::var("RECORD_IAM").as_deref() == Ok("write") {
        std::fs::write(RECORDED, &text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(RECORDED).unwrap_or_default();
    assert!(
        committed == text,
        "the AWS calls of the functions changed: regenerate infra/iam/recorded-calls.json with \
         `RECORD_IAM=write cargo test -p local-server --test iam_recording` (emulator running) \
         and update the roles of template.yaml (cargo test -p template-check says how).\n\
         recorded now:\n{text}"
    );
}
