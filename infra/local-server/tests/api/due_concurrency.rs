//! Due work under concurrency (`docs/design.md`, "Work that happens later":
//! conflicts belong to the mechanism), on the embedded store and on DynamoDB (emulator): twenty
//! items of one subject failing and recovering at the same moment, for every kind.
//!
//! - twenty deliveries to one subscription whose receiver answers 500 twice per `webhook-id`,
//!   then 200: every delivery ends `delivered` after exactly three attempts, and the receiver
//!   got exactly three requests for each (none lost, none sent more often than its attempts
//!   say); the subscription stays enabled and healthy;
//! - twenty CRM syncs on one connection whose CRM answers 500 twice per record, then 200: every
//!   sync ends `synced` after three attempts, three requests each;
//! - twenty SLA checks due at once with two processes' workers racing for them (a second
//!   application over the same store sweeps every 100 ms): every check is run once, so each
//!   check that ran reassigned its record exactly once, and none ended `expired` for want of a
//!   turn.
//!
//! Before the mechanism owned conflicts, a delivery attempt that lost the race on the
//! subscription's version was dropped: seven of eight events of a receiver's outage were never
//! sent again.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use common::TestApp;
use local_server::{build_app_with, with_local_keys, App, AppConfig};
use serde_json::{json, Value};
use shared::deps::Deps;
use shared::sla::SlaMinute;
use shared::store::harness::Backend;
use shared::store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ACCOUNT: &str = "7d2e1c4b-8e3f-4a72-9b95-1c2d3e4f5a60";
/// Round robin over m1, m2, m3, owners synced to the CRM.
const SYNCED: &str = "7d2e1c4b-8e3f-4a72-9b95-1c2d3e4f5a61";
/// Round robin over m1, m2, m3, SLA of one (scaled) minute, never worked.
const TIMED: &str = "7d2e1c4b-8e3f-4a72-9b95-1c2d3e4f5a62";
/// Round robin over m1, m2, m3, nothing else.
const PLAIN: &str = "7d2e1c4b-8e3f-4a72-9b95-1c2d3e4f5a63";
const CLIENT: (&str, &str) = ("due-client", "due-secret-0123456789");
/// Items of one subject.
const ITEMS: usize = 20;
/// Answers that fail before the first success, per `webhook-id` or record.
const FAILURES: usize = 2;

fn contact(n: usize) -> String {
    format!("01936b2a-7c00-7a00-8000-{:012x}", 0x7000 + n)
}

fn seed(receiver: &str) -> String {
    let router = |id: &str, synced: bool, sla: Value| {
        json!({"id": id, "name": id, "object_type": "contacts", "is_published": true,
               "has_integration": synced,
               "settings": {"owner_field": "contact_owner", "distribution_model": "round robin",
                            "ignore_working_hours": true, "overwrite": true, "sla": sla},
               "users": [{"email": "m1@due.example"}, {"email": "m2@due.example"}, {"email": "m3@due.example"}],
               "teams": []})
    };
    let member = |n: u32| {
        json!({"id": format!("7d2e1c4b-8e3f-4a72-9b95-1c2d3e4f5a7{n}"), "email": format!("m{n}@due.example"),
               "external_id": format!("owner-{n}")})
    };
    json!({"accounts": [{
        "id": ACCOUNT, "name": "Due", "active": true,
        "clients": [{"client_id": CLIENT.0, "client_secret": CLIENT.1,
                     "scopes": ["service-api/read", "service-api/create", "service-api/update", "service-api/delete"]}],
        "crm": {"provider": "hubspot", "base_url": receiver, "access_token": "pat-due-token"},
        "users": [member(1), member(2), member(3)],
        "routers": [
            router(SYNCED, true, Value::Null),
            router(TIMED, false, json!({"minutes": 1, "worked_field": "lead_status", "worked_values": ["connected"]})),
            router(PLAIN, false, Value::Null)
        ],
        "records": {"contacts": (0..ITEMS).map(|n| json!({"id": contact(n),
            "fields": {"email": format!("lead{n}@prospect.example"), "external_id": format!("hs-{n}")}})).collect::<Vec<_>>()}
    }]})
    .to_string()
}

/// A receiver (webhooks on `/hooks`, the CRM on any other path) that answers 500 to the first
/// [`FAILURES`] requests of each `webhook-id` (webhooks) or path (CRM records), then 200, and
/// counts every request.
#[derive(Clone, Default)]
struct Receiver {
    seen: Arc<Mutex<HashMap<String, usize>>>,
}

impl Receiver {
    async fn start() -> (Self, String) {
        let receiver = Self::default();
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(receiver.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (receiver, base)
    }

    /// Requests per `webhook-id` (webhooks) or per path (the CRM).
    fn counts(&self, webhooks: bool) -> HashMap<String, usize> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with("msg_") == webhooks)
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }
}

async fn answer(
    State(receiver): State<Receiver>, uri: Uri, headers: HeaderMap, _body: Bytes,
) -> (StatusCode, &'static str) {
    let key = match headers.get("webhook-id").and_then(|v| v.to_str().ok()) {
        Some(id) => id.to_string(),
        None => uri.path().to_string(),
    };
    let count = {
        let mut seen = receiver.seen.lock().unwrap();
        let count = seen.entry(key).or_default();
        *count += 1;
        *count
    };
    if count <= FAILURES {
        (StatusCode::INTERNAL_SERVER_ERROR, "down for a moment")
    } else {
        (StatusCode::OK, "{}")
    }
}

/// An application over `store` (retries after 0.3 s, SLA minutes of 1 s).
async fn app_over(store: Arc<dyn Store>, receiver: &str) -> App {
    let deps = with_local_keys(Deps::new(store), None)
        .unwrap()
        .with_outbound(shared::outbound::OutboundPolicy::LOCAL)
        .with_sla_minute(SlaMinute::parse("1").unwrap())
        .with_webhook_retry_delays(shared::webhooks::RetrySchedule::parse("0.3,0.3,0.3").unwrap())
        .with_crm_retry_delays(shared::crm::RetryDelays::parse("0.3,0.3,0.3").unwrap());
    crate::common::cheap_secret_hashing();
    build_app_with(
        AppConfig {
            seed: seed(receiver),
            signing_key_pem: None,
        },
        deps,
    )
    .await
    .unwrap()
}

struct Scene {
    app: TestApp,
    token: String,
    receiver: Receiver,
    base: String,
    built: App,
}

async fn scene(backend: Backend) -> Scene {
    let (receiver, base) = Receiver::start().await;
    let built = app_over(backend.store().await, &base).await;
    let app = TestApp {
        router: built.router.clone(),
    };
    let token = app.token(CLIENT, common::ALL_SCOPES).await;
    Scene {
        app,
        token,
        receiver,
        base,
        built,
    }
}

impl Scene {
    async fn call(&self, method: Method, uri: &str, body: Option<Value>) -> common::Answer {
        self.app.call(method, uri, &self.token, body).await
    }

    /// Dispatches every contact through `router` at once.
    async fn dispatch_all(&self, router: &str) {
        let answers = futures_util::future::join_all((0..ITEMS).map(|n| {
            self.call(
                Method::POST,
                "/dispatch/router",
                Some(json!({"router_id": router, "object_id": contact(n)})),
            )
        }))
        .await;
        for a in answers {
            assert_eq!(a.status, StatusCode::OK, "{}", a.body);
            assert_eq!(a.body["message"], "Owner assigned", "{}", a.body);
        }
    }

    /// The history of contact `n`, newest first.
    async fn history(&self, n: usize) -> Vec<Value> {
        let a = self
            .call(
                Method::GET,
                &format!("/contacts/{}/dispatches?limit=100", contact(n)),
                None,
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        a.body["data"].as_array().unwrap().clone()
    }
}

/// Polls `check` every 100 ms until it holds or `within` passed; answers whether it held.
async fn eventually<F, Fut>(within: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while started.elapsed() < within {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

shared::on_both_stores!(
    twenty_deliveries_failing_together_are_each_delivered_after_three_attempts,
    twenty_crm_syncs_failing_together_each_end_synced_after_three_attempts,
    twenty_sla_checks_due_together_with_two_racing_workers_each_reassign_once,
);

async fn twenty_deliveries_failing_together_are_each_delivered_after_three_attempts(
    backend: Backend,
) {
    let s = scene(backend).await;
    let sub = s
        .call(
            Method::POST,
            "/webhooks",
            Some(json!({"url": format!("{}/hooks", s.base), "events": ["assignment.created"]})),
        )
        .await;
    assert_eq!(sub.status, StatusCode::CREATED, "{}", sub.body);
    let id = sub.body["id"].as_str().unwrap().to_string();
    s.dispatch_all(PLAIN).await;
    let log = || async {
        let a = s
            .call(
                Method::GET,
                &format!("/webhooks/{id}/deliveries?limit=100"),
                None,
            )
            .await;
        a.body["data"].as_array().unwrap().clone()
    };
    let settled = eventually(Duration::from_secs(40), || async {
        let log = log().await;
        log.len() == ITEMS && log.iter().all(|d| d["status"] == "delivered")
    })
    .await;
    let log = log().await;
    assert!(settled, "not every delivery was delivered: {log:#?}");
    let counts = s.receiver.counts(true);
    assert_eq!(counts.len(), ITEMS, "{counts:?}");
    for delivery in &log {
        let webhook_id = delivery["id"].as_str().unwrap();
        assert_eq!(delivery["attempts"], 3, "{delivery}");
        assert_eq!(
            counts[webhook_id], 3,
            "{webhook_id} was sent {} times",
            counts[webhook_id]
        );
    }
    let read = s.call(Method::GET, &format!("/webhooks/{id}"), None).await;
    assert_eq!(read.body["enabled"], true, "{}", read.body);
    assert_eq!(read.body["disabled_reason"], Value::Null);
    // Nothing more arrives: each delivery's item ended with its success.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(s.receiver.counts(true).values().sum::<usize>(), 3 * ITEMS);
}

async fn twenty_crm_syncs_failing_together_each_end_synced_after_three_attempts(backend: Backend) {
    let s = scene(backend).await;
    s.dispatch_all(SYNCED).await;
    let synced = eventually(Duration::from_secs(40), || async {
        let mut all = true;
        for n in 0..ITEMS {
            let history = s.history(n).await;
            all &= history
                .first()
                .is_some_and(|e| e["crm_sync"]["status"] == "synced");
        }
        all
    })
    .await;
    let mut states = Vec::new();
    for n in 0..ITEMS {
        states.push(s.history(n).await[0]["crm_sync"].clone());
    }
    assert!(synced, "not every sync ended synced: {states:#?}");
    for state in &states {
        assert_eq!(state["attempts"], 3, "{state}");
        assert_eq!(state["error"], Value::Null, "{state}");
    }
    let counts = s.receiver.counts(false);
    assert_eq!(counts.len(), ITEMS, "one path per record: {counts:?}");
    assert!(counts.values().all(|c| *c == 3), "{counts:?}");
}

async fn twenty_sla_checks_due_together_with_two_racing_workers_each_reassign_once(
    backend: Backend,
) {
    let s = scene(backend).await;
    // A second process over the same store, whose sweeper races the first one's timers.
    let second = app_over(s.built.store.clone(), &s.base).await;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let sweeper = tokio::spawn(local_server::sweep_periodically(
        second.deps.due.clone(),
        Duration::from_millis(100),
        stopped,
    ));
    s.dispatch_all(TIMED).await;
    // Every first check reassigns its record (nobody works them). A check's `reassigned` and the
    // entry of its reassignment are one write, so a history read at any moment shows each check
    // that ran followed by exactly one entry: two workers running one check would show two.
    let reassigned = eventually(Duration::from_secs(120), || async {
        let mut all = true;
        for n in 0..ITEMS {
            all &= s.history(n).await.len() >= 2;
        }
        all
    })
    .await;
    let _ = stop.send(true);
    sweeper.await.unwrap();
    let mut late = Vec::new();
    for n in 0..ITEMS {
        let mut history = s.history(n).await;
        history.reverse();
        if history.len() < 2 {
            late.push((n, history.clone()));
            continue;
        }
        assert_eq!(history[0]["source"], "api", "record {n}");
        for (i, entry) in history.iter().enumerate() {
            let status = &entry["sla"]["status"];
            if i > 0 {
                assert_eq!(entry["source"], "sla", "record {n}: {history:#?}");
                // Each reassignment took the record from the owner the entry before gave it.
                assert_eq!(
                    entry["previous_owner"],
                    history[i - 1]["user"],
                    "record {n}"
                );
            }
            if i + 1 < history.len() {
                assert_eq!(status, "reassigned", "record {n}: {history:#?}");
            } else {
                // The newest: its check is still to run, or it was the fifth in a row.
                assert!(
                    status == "pending" || entry["sla"].is_null(),
                    "record {n}: {history:#?}"
                );
            }
        }
    }
    let mut items = Vec::new();
    for (_, history) in &late {
        let entry: shared::model::DispatchEntryKey = serde_json::from_value(json!({
            "router_id": history[0]["router_id"],
            "dispatched_at": history[0]["dispatched_at"],
            "id": history[0]["id"],
        }))
        .unwrap();
        let id = shared::sla::CheckSubject::due_id(&entry);
        items.push(s.built.store.get_due(&id).await.unwrap());
    }
    assert!(
        reassigned && late.is_empty(),
        "records whose first check never reassigned them: {late:#?}; their items: {items:#?}"
    );
}
