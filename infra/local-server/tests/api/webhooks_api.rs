//! Signed webhooks (BEHAVIOR 13) over HTTP, on the embedded store and on DynamoDB (emulator):
//! the subscription routes and their validation, the events dispatch makes (one per history
//! entry, none for explain or a replay), Standard Webhooks signatures checked here with `hmac`
//! and `sha2` (not with the code under test), retries that keep the `webhook-id`, `Retry-After`,
//! 410 disabling, the delivery log, manual retries, deletion dropping what is pending, and a
//! delivery whose process died between the commit and the send completed by the sweeper of the
//! next process. The receiver is `fake-crm` (it records every request, raw body included).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use base64::Engine as _;
use common::{TestApp, ALL_SCOPES, INITECH, NORTHWIND, NORTHWIND_READONLY};
use fake_crm::{FakeCrm, Recorded, Scripted};
use hmac::{Hmac, Mac};
use local_server::{build_app_with, with_local_keys, AppConfig, DEMO_SEED};
use serde_json::{json, Value};
use shared::deps::Deps;
use shared::due::{DueMessage, DueSettings, DueWorker, Handoff};
use shared::store::harness::Backend;
use shared::store::memory::MemoryStore;
use shared::store::Store;
use shared::webhooks::RetrySchedule;
use std::sync::Arc;
use std::time::Duration;

const INBOUND_ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const DANA: &str = "01936b2a-7c00-7a00-8000-000000000002";
const ANA: &str = "ana.lopez@northwind.example";

/// Deps of a local server over `store` with webhook retries after `delays` seconds.
fn deps(store: Arc<dyn Store>, delays: &str) -> Deps {
    with_local_keys(Deps::new(store), None)
        .unwrap()
        .with_outbound(shared::outbound::OutboundPolicy::LOCAL)
        .with_webhook_retry_delays(RetrySchedule::parse(delays).unwrap())
}

struct Hooks {
    app: TestApp,
    token: String,
    fake: FakeCrm,
    base: String,
    store: Arc<dyn Store>,
}

async fn spawn_with(deps: Deps) -> Hooks {
    let (fake, base) = FakeCrm::start().await.unwrap();
    spawn_on(deps, DEMO_SEED.into(), NORTHWIND, fake, base).await
}

/// The demo seed with Initech's CRM pointed at the fake (which receives the webhooks too).
async fn spawn_initech(backend: Backend) -> Hooks {
    let (fake, base) = FakeCrm::start_demo().await.unwrap();
    let seed = DEMO_SEED.replace("http://127.0.0.1:4010", &base);
    let deps = deps(backend.store().await, "0.2,0.2,0.2")
        .with_crm_retry_delays(shared::crm::RetryDelays::parse("0.2,0.2,0.2").unwrap());
    spawn_on(deps, seed, INITECH, fake, base).await
}

async fn spawn_on(
    deps: Deps, seed: String, client: (&str, &str), fake: FakeCrm, base: String,
) -> Hooks {
    crate::common::cheap_secret_hashing();
    let built = build_app_with(
        AppConfig {
            seed,
            signing_key_pem: None,
        },
        deps,
    )
    .await
    .unwrap();
    let store = built.store.clone();
    let app = TestApp {
        router: built.router,
    };
    let token = app.token(client, ALL_SCOPES).await;
    Hooks {
        app,
        token,
        fake,
        base,
        store,
    }
}

async fn spawn(backend: Backend) -> Hooks {
    spawn_with(deps(backend.store().await, "0.2,0.2,0.2")).await
}

impl Hooks {
    async fn call(&self, method: Method, uri: &str, body: Option<Value>) -> common::Answer {
        self.app.call(method, uri, &self.token, body).await
    }

    /// Subscribes the fake (path `/hooks`) to `events`; returns the answer's body.
    async fn subscribe(&self, events: &[&str]) -> Value {
        let a = self
            .call(
                Method::POST,
                "/webhooks",
                Some(json!({"url": format!("{}/hooks", self.base), "events": events})),
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
        a.body
    }

    async fn dispatch(&self, router: &str, record: &str) -> Value {
        let a = self
            .call(
                Method::POST,
                "/dispatch/router",
                Some(json!({"router_id": router, "object_id": record})),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        a.body
    }

    /// The webhook requests received, once there are at least `n` (at most 15 s).
    async fn received(&self, n: usize) -> Vec<Recorded> {
        for _ in 0..150 {
            let got = self.deliveries_received();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "expected {n} webhook requests, got {:?}",
            self.deliveries_received()
        );
    }

    fn deliveries_received(&self) -> Vec<Recorded> {
        self.fake
            .requests()
            .into_iter()
            .filter(|r| r.path == "/hooks")
            .collect()
    }

    async fn log(&self, webhook: &str) -> Vec<Value> {
        let a = self
            .call(
                Method::GET,
                &format!("/webhooks/{webhook}/deliveries"),
                None,
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        a.body["data"].as_array().unwrap().clone()
    }

    /// The delivery log once its newest delivery has `status` (at most 15 s).
    async fn log_when(&self, webhook: &str, status: &str) -> Vec<Value> {
        for _ in 0..150 {
            let log = self.log(webhook).await;
            if log.first().is_some_and(|d| d["status"] == status) {
                return log;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("never {status}: {:?}", self.log(webhook).await);
    }
}

/// Checks a request's Standard Webhooks v1 signature with `secret`, independently of the code
/// under test: `v1,` + base64 HMAC-SHA256 over `{id}.{timestamp}.{body}` keyed with the
/// base64-decoded part of `whsec_...`.
fn signed_by(request: &Recorded, secret: &str) -> bool {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let id = &request.headers["webhook-id"];
    let timestamp = &request.headers["webhook-timestamp"];
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.{}", request.raw_body).as_bytes());
    let expected = format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    );
    request.headers["webhook-signature"]
        .split(' ')
        .any(|s| s == expected)
}

shared::on_both_stores!(
    subscriptions_are_created_read_changed_listed_and_deleted,
    invalid_subscriptions_are_400_naming_the_key_and_write_nothing,
    an_assignment_is_delivered_once_signed_with_the_entry_and_notify_flags,
    explain_and_an_idempotent_replay_make_no_event,
    failed_attempts_are_retried_with_the_same_webhook_id_and_retry_after_honoured,
    a_410_disables_the_subscription_and_enabling_clears_the_reason,
    a_delivery_that_fails_every_retry_ends_failed,
    a_final_crm_sync_failure_makes_one_crm_sync_failed_event,
    a_subscription_failing_for_five_days_is_disabled_failing,
    a_manual_retry_sends_the_delivery_again_with_its_webhook_id,
    deleting_a_subscription_drops_its_pending_deliveries,
    disabling_a_subscription_ends_its_open_deliveries_failed,
    a_rotated_secret_signs_beside_the_new_one,
    many_rotations_keep_one_previous_secret_and_two_signatures,
    a_delivery_lost_between_the_commit_and_the_send_is_completed_by_the_sweeper,
);

async fn subscriptions_are_created_read_changed_listed_and_deleted(backend: Backend) {
    let h = spawn(backend).await;
    let created = h
        .subscribe(&[
            "assignment.created",
            "assignment.created",
            "crm_sync.failed",
        ])
        .await;
    let id = created["id"].as_str().unwrap().to_string();
    let secret = created["secret"].as_str().unwrap();
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    assert_eq!(key.len(), 32);
    assert_eq!(
        created["events"],
        json!(["assignment.created", "crm_sync.failed"])
    );
    assert_eq!(created["enabled"], true);
    assert_eq!(created["disabled_reason"], Value::Null);
    assert_eq!(created["description"], Value::Null);
    for key in ["created_at", "updated_at"] {
        assert!(created[key].as_str().unwrap().ends_with('Z'), "{created}");
    }

    let read = h.call(Method::GET, &format!("/webhooks/{id}"), None).await;
    assert_eq!(read.status, StatusCode::OK);
    assert!(read.body.get("secret").is_none(), "{}", read.body);
    assert_eq!(read.body["url"], created["url"]);

    let patched = h
        .call(
            Method::PATCH,
            &format!("/webhooks/{id}"),
            Some(json!({"description": "Slack bot", "events": ["dispatch.unassigned"], "enabled": false})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(patched.body["description"], "Slack bot");
    assert_eq!(patched.body["events"], json!(["dispatch.unassigned"]));
    assert_eq!(patched.body["enabled"], false);
    assert!(patched.body.get("secret").is_none());

    let second = h.subscribe(&["dispatch.unassigned"]).await;
    let list = h.call(Method::GET, "/webhooks?limit=1", None).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    assert_eq!(list.body["data"][0]["id"], id.as_str(), "oldest first");
    assert!(list.body["data"][0].get("secret").is_none());
    let after = list.body["pagination"]["next_after"].as_str().unwrap();
    let rest = h
        .call(
            Method::GET,
            &format!("/webhooks?limit=1&after={after}"),
            None,
        )
        .await;
    assert_eq!(rest.body["data"][0]["id"], second["id"]);

    let deleted = h
        .call(Method::DELETE, &format!("/webhooks/{id}"), None)
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    for (method, uri) in [
        (Method::GET, format!("/webhooks/{id}")),
        (Method::DELETE, format!("/webhooks/{id}")),
        (Method::GET, format!("/webhooks/{id}/deliveries")),
        (Method::POST, format!("/webhooks/{id}/rotate-secret")),
        (Method::GET, "/webhooks/not-a-uuid".to_string()),
    ] {
        let a = h.call(method.clone(), &uri, None).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{method} {uri}");
        assert_eq!(a.body["message"], "Webhook not found", "{method} {uri}");
    }

    // Scopes: reading needs read, creating create.
    let read_only = h.app.token(NORTHWIND_READONLY, "service-api/read").await;
    let refused = h
        .app
        .call(
            Method::POST,
            "/webhooks",
            &read_only,
            Some(json!({"url": format!("{}/hooks", h.base), "events": ["assignment.created"]})),
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let listed = h.app.call(Method::GET, "/webhooks", &read_only, None).await;
    assert_eq!(listed.status, StatusCode::OK);
}

async fn invalid_subscriptions_are_400_naming_the_key_and_write_nothing(backend: Backend) {
    let h = spawn(backend).await;
    let long = format!("https://example.com/{}", "a".repeat(2049));
    let cases = [
        (json!({"events": ["assignment.created"]}), "url"),
        (json!({"url": "https://example.com/h"}), "events"),
        (
            json!({"url": "ftp://example.com/h", "events": ["assignment.created"]}),
            "url",
        ),
        (
            json!({"url": "https://user:pw@example.com/h", "events": ["assignment.created"]}),
            "url",
        ),
        (
            json!({"url": "https://169.254.169.254/latest", "events": ["assignment.created"]}),
            "url",
        ),
        (
            json!({"url": "https://10.1.2.3/h", "events": ["assignment.created"]}),
            "url",
        ),
        (
            json!({"url": "https://[::]/h", "events": ["assignment.created"]}),
            "url",
        ),
        (
            json!({"url": long, "events": ["assignment.created"]}),
            "url",
        ),
        (
            json!({"url": "https://example.com/h", "events": []}),
            "events",
        ),
        (
            json!({"url": "https://example.com/h", "events": ["record.deleted"]}),
            "events",
        ),
        (
            json!({"url": "https://example.com/h", "events": ["assignment.created"], "secret": "x"}),
            "secret",
        ),
    ];
    for (body, field) in cases {
        let a = h.call(Method::POST, "/webhooks", Some(body.clone())).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{body}: {}", a.body);
        assert_eq!(a.body["field"], field, "{body}: {}", a.body);
    }
    let list = h.call(Method::GET, "/webhooks", None).await;
    assert_eq!(list.body["data"], json!([]), "nothing written");

    // Twenty per account, the 21st refused.
    for _ in 0..20 {
        h.subscribe(&["assignment.created"]).await;
    }
    let over = h
        .call(
            Method::POST,
            "/webhooks",
            Some(json!({"url": format!("{}/hooks", h.base), "events": ["assignment.created"]})),
        )
        .await;
    assert_eq!(over.status, StatusCode::BAD_REQUEST, "{}", over.body);
    let all = h.call(Method::GET, "/webhooks?limit=100", None).await;
    assert_eq!(all.body["data"].as_array().unwrap().len(), 20);
    // A change is checked the same way; an empty one is 400.
    let id = all.body["data"][0]["id"].as_str().unwrap();
    for (body, field) in [
        (
            json!({"url": "https://127.0.0.1.nip.io@10.0.0.1/"}),
            Some("url"),
        ),
        (json!({"enabled": "yes"}), Some("enabled")),
        (json!({}), None),
    ] {
        let a = h
            .call(
                Method::PATCH,
                &format!("/webhooks/{id}"),
                Some(body.clone()),
            )
            .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{body}: {}", a.body);
        if let Some(field) = field {
            assert_eq!(a.body["field"], field, "{body}");
        }
    }
}

async fn an_assignment_is_delivered_once_signed_with_the_entry_and_notify_flags(backend: Backend) {
    let h = spawn(backend).await;
    let sub = h
        .subscribe(&["assignment.created", "dispatch.unassigned"])
        .await;
    let secret = sub["secret"].as_str().unwrap();
    let before = chrono::Utc::now().timestamp();
    let answer = h.dispatch(INBOUND_ROUTER, DANA).await;
    assert_eq!(answer["user"], ANA);
    let got = h.received(1).await;
    let first = &got[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.headers["content-type"], "application/json");
    assert!(first.headers["webhook-id"].starts_with("msg_"), "{first:?}");
    let timestamp: i64 = first.headers["webhook-timestamp"].parse().unwrap();
    assert!((before - 1..=before + 10).contains(&timestamp));
    assert!(signed_by(first, secret), "{first:?}");
    let body = &first.body;
    assert_eq!(body["type"], "assignment.created");
    assert!(body["timestamp"].as_str().unwrap().ends_with('Z'));
    let data = &body["data"];
    assert_eq!(data["account_id"], "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01");
    assert_eq!(data["router_id"], INBOUND_ROUTER);
    assert_eq!(data["object_id"], DANA);
    assert_eq!(data["user"], ANA);
    assert_eq!(
        data["notify"],
        json!({"user": true, "previous_owner": false})
    );
    // The payload's entry is the history entry the dispatch appended.
    let history = h
        .call(Method::GET, &format!("/contacts/{DANA}/dispatches"), None)
        .await;
    let entry = &history.body["data"][0];
    assert_eq!(data["id"], entry["id"], "{data} vs {entry}");

    // A dispatch that appends an entry without assigning makes dispatch.unassigned.
    let second = h.dispatch(INBOUND_ROUTER, DANA).await;
    assert_eq!(second["message"], "The router can not overwrite");
    let got = h.received(2).await;
    assert_eq!(got[1].body["type"], "dispatch.unassigned");
    assert_eq!(
        got[1].body["data"]["message"],
        "The router can not overwrite"
    );
    assert!(got[1].body["data"].get("notify").is_none());
    assert_ne!(got[0].headers["webhook-id"], got[1].headers["webhook-id"]);

    let log = h.log_when(sub["id"].as_str().unwrap(), "delivered").await;
    assert_eq!(log.len(), 2, "{log:?}");
    let newest = &log[0];
    assert_eq!(
        newest["id"].as_str(),
        Some(got[1].headers["webhook-id"].as_str())
    );
    assert_eq!(newest["event_type"], "dispatch.unassigned");
    assert_eq!(newest["attempts"], 1);
    assert_eq!(newest["last_status_code"], 204);
    assert!(newest["delivered_at"].is_string());
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(h.deliveries_received().len(), 2, "each event once");
}

async fn explain_and_an_idempotent_replay_make_no_event(backend: Backend) {
    let h = spawn(backend).await;
    h.subscribe(&["assignment.created", "dispatch.unassigned"])
        .await;
    let body = json!({"router_id": INBOUND_ROUTER, "object_id": DANA});
    let explained = h
        .call(Method::POST, "/dispatch/router/explain", Some(body.clone()))
        .await;
    assert_eq!(explained.status, StatusCode::OK);
    let auth = format!("Bearer {}", h.token);
    let headers = [
        ("authorization", auth.as_str()),
        ("content-type", "application/json"),
        ("idempotency-key", "hook-once"),
    ];
    let bytes = serde_json::to_vec(&body).unwrap();
    let first = h
        .app
        .raw(Method::POST, "/dispatch/router", &headers, bytes.clone())
        .await;
    let replay = h
        .app
        .raw(Method::POST, "/dispatch/router", &headers, bytes)
        .await;
    assert_eq!(replay.headers["idempotent-replayed"], "true");
    assert_eq!(first.body, replay.body);
    h.received(1).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let got = h.deliveries_received();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].body["type"], "assignment.created");
}

async fn failed_attempts_are_retried_with_the_same_webhook_id_and_retry_after_honoured(
    backend: Backend,
) {
    let h = spawn(backend).await;
    let sub = h.subscribe(&["assignment.created"]).await;
    h.fake.push(Scripted::status(500));
    h.fake.push(Scripted::status(503).retry_after("2"));
    h.dispatch(INBOUND_ROUTER, DANA).await;
    let got = h.received(3).await;
    let id = &got[0].headers["webhook-id"];
    assert!(
        got.iter().all(|r| &r.headers["webhook-id"] == id),
        "{got:?}"
    );
    assert!(got
        .iter()
        .all(|r| signed_by(r, sub["secret"].as_str().unwrap())));
    let first_gap = got[1].at_ms - got[0].at_ms;
    let second_gap = got[2].at_ms - got[1].at_ms;
    assert!(
        first_gap >= 150,
        "the first retry waits its delay: {first_gap} ms"
    );
    assert!(
        second_gap >= 1_900,
        "Retry-After: 2 is longer than the 0.2 s delay: {second_gap} ms"
    );
    let log = h.log_when(sub["id"].as_str().unwrap(), "delivered").await;
    assert_eq!(log[0]["attempts"], 3);
    assert_eq!(log[0]["last_status_code"], 204);
}

async fn a_410_disables_the_subscription_and_enabling_clears_the_reason(backend: Backend) {
    let h = spawn(backend).await;
    let sub = h
        .subscribe(&["assignment.created", "dispatch.unassigned"])
        .await;
    let id = sub["id"].as_str().unwrap();
    h.fake.push(Scripted::status(410));
    h.dispatch(INBOUND_ROUTER, DANA).await;
    h.received(1).await;
    let log = h.log_when(id, "failed").await;
    assert_eq!(log[0]["last_status_code"], 410);
    let read = h.call(Method::GET, &format!("/webhooks/{id}"), None).await;
    assert_eq!(read.body["enabled"], false);
    assert_eq!(read.body["disabled_reason"], "gone");
    // Disabled: nothing new is delivered.
    h.dispatch(INBOUND_ROUTER, DANA).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(h.deliveries_received().len(), 1);
    assert_eq!(h.log(id).await.len(), 1, "no delivery made while disabled");
    let enabled = h
        .call(
            Method::PATCH,
            &format!("/webhooks/{id}"),
            Some(json!({"enabled": true})),
        )
        .await;
    assert_eq!(enabled.body["enabled"], true);
    assert_eq!(enabled.body["disabled_reason"], Value::Null);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        h.deliveries_received().len(),
        1,
        "nothing sent from the disabled time"
    );
}

async fn a_delivery_that_fails_every_retry_ends_failed(backend: Backend) {
    let h = spawn(backend).await;
    let sub = h.subscribe(&["assignment.created"]).await;
    h.fake.push(Scripted::status(500).times(10));
    h.dispatch(INBOUND_ROUTER, DANA).await;
    let log = h.log_when(sub["id"].as_str().unwrap(), "failed").await;
    assert_eq!(log[0]["attempts"], 4, "the first attempt and 3 retries");
    assert_eq!(log[0]["last_status_code"], 500);
    assert!(log[0]["last_error"].is_string());
    assert_eq!(log[0]["delivered_at"], Value::Null);
    assert_eq!(h.deliveries_received().len(), 4);
}

async fn a_final_crm_sync_failure_makes_one_crm_sync_failed_event(backend: Backend) {
    const CRM_ROUTER: &str = "f6b7c8d9-e0f1-4a2b-9c34-d5e6f7a8b920";
    const MILTON: &str = "01936b2a-7c00-7a00-8000-000000000021";
    const NINA: &str = "01936b2a-7c00-7a00-8000-000000000023";
    let h = spawn_initech(backend).await;
    h.subscribe(&["crm_sync.failed"]).await;
    // Nina has no HubSpot id: the sync fails at once, without a request.
    let nina = h.dispatch(CRM_ROUTER, NINA).await;
    assert_eq!(nina["crm_error"], "Record has no external_id", "{nina}");
    let got = h.received(1).await;
    assert_eq!(got[0].body["type"], "crm_sync.failed");
    assert_eq!(got[0].body["data"]["object_id"], NINA);
    assert_eq!(got[0].body["data"]["crm_sync"]["status"], "failed");
    // Milton's CRM is down for good: the event comes once, after the last retry.
    h.fake.push(Scripted::status(503).times(4).for_updates());
    h.dispatch(CRM_ROUTER, MILTON).await;
    let got = h.received(2).await;
    assert_eq!(got[1].body["type"], "crm_sync.failed");
    assert_eq!(got[1].body["data"]["object_id"], MILTON);
    assert_eq!(got[1].body["data"]["crm_sync"]["status"], "failed");
    assert_eq!(got[1].body["data"]["crm_sync"]["attempts"], 4);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        h.deliveries_received().len(),
        2,
        "one event per final failure"
    );
}

async fn a_subscription_failing_for_five_days_is_disabled_failing(backend: Backend) {
    let h = spawn(backend).await;
    let sub = h.subscribe(&["assignment.created"]).await;
    let id: uuid::Uuid = sub["id"].as_str().unwrap().parse().unwrap();
    let account: uuid::Uuid = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01".parse().unwrap();
    // Its deliveries have all failed since five days and a minute ago: an earlier delivery's
    // failed attempt wrote it (the only writer of a subscription's health).
    let since = chrono::Utc::now() - chrono::Duration::days(5) - chrono::Duration::minutes(1);
    failed_earlier(&h.store, account.into(), id.into(), since).await;
    h.fake.push(Scripted::status(500).times(10));
    h.dispatch(INBOUND_ROUTER, DANA).await;
    let log = h.log_when(&id.to_string(), "failed").await;
    assert_eq!(log[0]["attempts"], 1, "no retry once disabled: {log:?}");
    let read = h.call(Method::GET, &format!("/webhooks/{id}"), None).await;
    assert_eq!(read.body["enabled"], false, "{}", read.body);
    assert_eq!(read.body["disabled_reason"], "failing");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(h.deliveries_received().len(), 1);
}

/// Stores a delivery of subscription `id` made at `at` whose one attempt failed then: the
/// subscription's `failing_since` becomes `at` (a history entry that assigned nobody carries it,
/// as the outbox does).
async fn failed_earlier(
    store: &Arc<dyn Store>, account: shared::types::AccountId, id: shared::types::WebhookId,
    at: chrono::DateTime<chrono::Utc>,
) {
    use shared::model::due::DueChanges;
    use shared::model::webhook::{
        DeliveryStatus, EventType, HealthChange, SubscriptionHealth, WebhookDelivery,
    };
    let delivery = WebhookDelivery {
        id: WebhookDelivery::new_id(),
        subscription_id: id,
        account_id: account,
        event_type: EventType::AssignmentCreated,
        payload: "{}".into(),
        status: DeliveryStatus::Pending,
        attempts: 0,
        last_status_code: None,
        last_error: None,
        created_at: at,
        delivered_at: None,
        expires_at: at + chrono::Duration::days(30),
    };
    let entry = common::unassigned_entry(account, INBOUND_ROUTER, at);
    let outbox = DueChanges {
        deliveries: vec![delivery.clone()],
        ..DueChanges::default()
    };
    store
        .record_dispatch(&entry, None, None, None, &outbox)
        .await
        .unwrap();
    let failed = WebhookDelivery {
        status: DeliveryStatus::Failed,
        attempts: 1,
        last_status_code: Some(500),
        last_error: Some("Receiver answered 500".into()),
        ..delivery
    };
    let health = SubscriptionHealth {
        account_id: account,
        subscription_id: id,
        change: HealthChange::Failing { at },
    };
    store
        .record_delivery(&failed, 0, Some(&health), &DueChanges::none())
        .await
        .unwrap();
}

async fn a_manual_retry_sends_the_delivery_again_with_its_webhook_id(backend: Backend) {
    let h = spawn(backend).await;
    let sub = h.subscribe(&["assignment.created"]).await;
    let id = sub["id"].as_str().unwrap();
    h.dispatch(INBOUND_ROUTER, DANA).await;
    let log = h.log_when(id, "delivered").await;
    let delivery = log[0]["id"].as_str().unwrap();
    let retried = h
        .call(
            Method::POST,
            &format!("/webhooks/{id}/deliveries/{delivery}/retry"),
            None,
        )
        .await;
    assert_eq!(retried.status, StatusCode::ACCEPTED, "{}", retried.body);
    assert_eq!(retried.body["id"], delivery);
    let got = h.received(2).await;
    assert_eq!(got[1].headers["webhook-id"], delivery);
    let log = h.log_when(id, "delivered").await;
    assert_eq!(log[0]["attempts"], 2, "{log:?}");
    let unknown = h
        .call(
            Method::POST,
            &format!("/webhooks/{id}/deliveries/msg_unknown/retry"),
            None,
        )
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.body["message"], "Delivery not found");
}

async fn deleting_a_subscription_drops_its_pending_deliveries(backend: Backend) {
    let h = spawn_with(deps(backend.store().await, "1,1,1")).await;
    let sub = h.subscribe(&["assignment.created"]).await;
    h.fake.push(Scripted::status(500).times(10));
    h.dispatch(INBOUND_ROUTER, DANA).await;
    h.received(1).await;
    let deleted = h
        .call(
            Method::DELETE,
            &format!("/webhooks/{}", sub["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    assert_eq!(
        h.deliveries_received().len(),
        1,
        "no retry after the delete"
    );
}

async fn disabling_a_subscription_ends_its_open_deliveries_failed(backend: Backend) {
    let h = spawn_with(deps(backend.store().await, "1,1,1")).await;
    let sub = h.subscribe(&["assignment.created"]).await;
    let id = sub["id"].as_str().unwrap();
    h.fake.push(Scripted::status(500).times(10));
    h.dispatch(INBOUND_ROUTER, DANA).await;
    h.received(1).await;
    let retrying = h.log_when(id, "retrying").await;
    assert_eq!(retrying[0]["attempts"], 1);
    let disabled = h
        .call(
            Method::PATCH,
            &format!("/webhooks/{id}"),
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(disabled.status, StatusCode::OK, "{}", disabled.body);
    assert_eq!(disabled.body["enabled"], false);
    let log = h.log(id).await;
    assert_eq!(log[0]["status"], "failed", "{log:?}");
    assert_eq!(log[0]["last_error"], "Subscription disabled");
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    assert_eq!(
        h.deliveries_received().len(),
        1,
        "no attempt after disabling"
    );
}

async fn a_rotated_secret_signs_beside_the_new_one(backend: Backend) {
    let h = spawn(backend).await;
    let sub = h.subscribe(&["assignment.created"]).await;
    let id = sub["id"].as_str().unwrap();
    let rotated = h
        .call(Method::POST, &format!("/webhooks/{id}/rotate-secret"), None)
        .await;
    assert_eq!(rotated.status, StatusCode::OK, "{}", rotated.body);
    let new_secret = rotated.body["secret"].as_str().unwrap();
    assert_ne!(new_secret, sub["secret"].as_str().unwrap());
    h.dispatch(INBOUND_ROUTER, DANA).await;
    let got = h.received(1).await;
    assert!(signed_by(&got[0], new_secret));
    assert!(signed_by(&got[0], sub["secret"].as_str().unwrap()));
    assert_eq!(got[0].headers["webhook-signature"].split(' ').count(), 2);
}

/// BEHAVIOR 13: rotating again retires the older previous secret at once, so
/// however many rotations there were, a delivery carries two signatures: the newest secret's and
/// the one it replaced; none of the older secrets signs.
async fn many_rotations_keep_one_previous_secret_and_two_signatures(backend: Backend) {
    let h = spawn(backend).await;
    let sub = h.subscribe(&["assignment.created"]).await;
    let id = sub["id"].as_str().unwrap();
    let mut secrets = vec![sub["secret"].as_str().unwrap().to_owned()];
    for _ in 0..6 {
        let rotated = h
            .call(Method::POST, &format!("/webhooks/{id}/rotate-secret"), None)
            .await;
        assert_eq!(rotated.status, StatusCode::OK, "{}", rotated.body);
        secrets.push(rotated.body["secret"].as_str().unwrap().to_owned());
    }
    h.dispatch(INBOUND_ROUTER, DANA).await;
    let got = h.received(1).await;
    let header = &got[0].headers["webhook-signature"];
    assert_eq!(header.split(' ').count(), 2, "{header}");
    let (older, kept) = secrets.split_at(secrets.len() - 2);
    for secret in kept {
        assert!(signed_by(&got[0], secret), "the last two secrets sign");
    }
    for secret in older {
        assert!(!signed_by(&got[0], secret), "an older secret is retired");
    }
}

/// A hand-off that loses every message: the process died right after the commit.
struct Lost;

#[async_trait::async_trait]
impl Handoff for Lost {
    async fn hand_off(&self, _message: &DueMessage) -> Result<(), shared::error::BoxError> {
        Ok(())
    }
    fn grace(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn reach(&self) -> Option<Duration> {
        None
    }
}

async fn a_delivery_lost_between_the_commit_and_the_send_is_completed_by_the_sweeper(
    backend: Backend,
) {
    let settings = DueSettings {
        lease: Duration::from_secs(1),
    };
    let store = backend.store().await;
    let mut dying = deps(store.clone(), "0.2,0.2,0.2");
    dying.due = DueWorker::new(store.clone(), dying.clock.clone(), settings, Arc::new(Lost));
    let h = spawn_with(dying).await;
    let sub = h.subscribe(&["assignment.created"]).await;
    h.dispatch(INBOUND_ROUTER, DANA).await;
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert_eq!(h.deliveries_received().len(), 0, "the send never happened");
    let log = h.log(sub["id"].as_str().unwrap()).await;
    assert_eq!(log[0]["status"], "pending", "the event is stored: {log:?}");

    // The next process, over the same store, sweeps at start.
    crate::common::cheap_secret_hashing();
    let next = build_app_with(
        AppConfig {
            seed: DEMO_SEED.into(),
            signing_key_pem: None,
        },
        deps(store.clone(), "0.2,0.2,0.2").with_due_in_process(settings),
    )
    .await
    .unwrap();
    let fake = h.fake.clone();
    let report = next.deps.due.sweep(100).await.unwrap();
    assert_eq!(report.handed_on, 1, "{report:?}");
    for _ in 0..100 {
        if !h.deliveries_received().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got: Vec<Recorded> = fake
        .requests()
        .into_iter()
        .filter(|r| r.path == "/hooks")
        .collect();
    assert_eq!(got.len(), 1, "delivered once: {got:?}");
    assert!(signed_by(&got[0], sub["secret"].as_str().unwrap()));
    assert_eq!(got[0].body["type"], "assignment.created");
    // A second sweep finds nothing.
    assert_eq!(next.deps.due.sweep(100).await.unwrap().found, 0);
    let log = h.log_when(sub["id"].as_str().unwrap(), "delivered").await;
    assert_eq!(log[0]["attempts"], 1);
}

/// The webhook queue's fixture through the function's Lambda handler: a message of a delivery
/// that no longer exists is done (not retried); a body that is not due work is reported failed
/// (partial batch response), and only it.
#[tokio::test]
async fn the_webhook_queue_answers_a_partial_batch_response() {
    let deps = deps(Arc::new(MemoryStore::new()), "0.2");
    let handler = webhooks_function::LambdaHandler::new(&deps).unwrap();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../events/sqs-webhook-delivery.json"
    );
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut invalid = event["Records"][0].clone();
    invalid["messageId"] = json!("not-due-work");
    invalid["body"] = json!("{\"router_id\": 1}");
    event["Records"].as_array_mut().unwrap().push(invalid);
    let answer = handler
        .handle(lambda_runtime::LambdaEvent::new(
            event,
            lambda_runtime::Context::default(),
        ))
        .await
        .unwrap();
    assert_eq!(
        answer["batchItemFailures"],
        json!([{"itemIdentifier": "not-due-work"}])
    );
}
