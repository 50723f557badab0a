//! Webhook deliveries as due work (BEHAVIOR 13; `docs/decisions.md`, "Work that happens
//! later"), on both adapters,
//! against a local receiver, every item run by hand (a fixed clock, hand-offs kept): a conflict
//! on the commit is made again on fresh reads and the attempt still counted; a `PATCH`, a
//! rotation, a create and a manual retry whose subscription or delivery changed meanwhile apply
//! again instead of failing; a manual retry that fails leaves an open delivery's own retries; a
//! secret that does not open is our failure, not the receiver's; opened secrets are kept a while;
//! disabling a subscription ends its open deliveries through due work, never inline.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;
use async_trait::async_trait;
use axum::http::StatusCode;
use chrono::{DateTime, Duration, TimeZone, Utc};
use common::Backend;
use serde_json::{json, Map, Value};
use shared::clock::{Clock, FixedClock};
use shared::due::{DueMessage, DueSettings, DueWorker, Handoff, RunOutcome};
use shared::error::BoxError;
use shared::model::account::SealedSecret;
use shared::model::due::{DueChanges, DueId, DueKind};
use shared::model::webhook::{DeliveryStatus, EventType, WebhookDelivery};
use shared::outbound::{OutboundClient, OutboundPolicy};
use shared::secrets::{LocalSealer, SealContext, Sealer};
use shared::store::faulty::FaultyStore;
use shared::store::Store;
use shared::types::{AccountId, RouterId, WebhookId};
use shared::webhooks::{
    add_deliveries, DeliveryCloser, RetrySchedule, WebhookSender, WebhookService,
};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

shared::on_both_stores!(
    a_conflicting_commit_is_made_again_and_the_attempt_still_counted,
    patch_rotate_create_and_manual_retry_apply_again_when_something_changed_meanwhile,
    a_failed_manual_retry_of_a_pending_delivery_leaves_its_own_retries,
    a_secret_that_does_not_open_costs_no_attempt_and_no_health,
    a_subscriptions_secrets_are_opened_once_for_many_deliveries,
    disabling_ends_the_open_deliveries_through_due_work,
    a_closing_whose_end_conflicts_runs_again_on_fresh_reads,
    a_410_disables_the_subscription_and_its_other_open_deliveries_end_failed,
);

/// A receiver answering `status` to every request, counting them.
#[derive(Clone)]
struct Receiver {
    status: Arc<AtomicU16>,
    requests: Arc<AtomicUsize>,
    url: String,
}

impl Receiver {
    async fn start() -> Self {
        let status = Arc::new(AtomicU16::new(200));
        let requests = Arc::new(AtomicUsize::new(0));
        let (s, r) = (status.clone(), requests.clone());
        let app = axum::Router::new().fallback(move || {
            let (s, r) = (s.clone(), r.clone());
            async move {
                r.fetch_add(1, Ordering::SeqCst);
                StatusCode::from_u16(s.load(Ordering::SeqCst)).unwrap()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hooks", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            status,
            requests,
            url,
        }
    }

    fn answer(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    fn count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// A sealer that opens only while it is not broken, counting opens.
struct Switchable {
    inner: LocalSealer,
    broken: AtomicBool,
    opens: AtomicUsize,
}

#[async_trait]
impl Sealer for Switchable {
    async fn seal(&self, p: &str, c: &SealContext) -> Result<SealedSecret, BoxError> {
        self.inner.seal(p, c).await
    }
    async fn open(&self, s: &SealedSecret, c: &SealContext) -> Result<String, BoxError> {
        self.opens.fetch_add(1, Ordering::SeqCst);
        if self.broken.load(Ordering::SeqCst) {
            return Err("KMS: ThrottlingException".into());
        }
        self.inner.open(s, c).await
    }
}

/// Hand-offs kept in a list: every item is run by the test.
#[derive(Default)]
struct Kept(Mutex<Vec<DueMessage>>);

#[async_trait]
impl Handoff for Kept {
    async fn hand_off(&self, message: &DueMessage) -> Result<(), BoxError> {
        self.0.lock().unwrap().push(message.clone());
        Ok(())
    }
    fn grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs(2)
    }
    fn reach(&self) -> Option<std::time::Duration> {
        None
    }
}

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 26, 9, 0, 0).unwrap()
}

/// The test's API client acting in `account`.
fn actor(account: AccountId) -> shared::audit::Actor<'static> {
    shared::audit::Actor {
        account_id: account,
        sub: "test",
    }
}

struct Scene {
    store: Arc<dyn Store>,
    faulty: Arc<FaultyStore>,
    clock: Arc<FixedClock>,
    worker: Arc<DueWorker>,
    service: WebhookService,
    sealer: Arc<Switchable>,
    receiver: Receiver,
    account: AccountId,
    subscription: WebhookId,
}

async fn scene(backend: Backend) -> Scene {
    let faulty = Arc::new(FaultyStore::new(backend.store().await));
    let store: Arc<dyn Store> = faulty.clone();
    let clock = Arc::new(FixedClock::new(base()));
    let worker = DueWorker::new(
        store.clone(),
        clock.clone(),
        DueSettings::default(),
        Arc::new(Kept::default()),
    );
    let sealer = Arc::new(Switchable {
        inner: LocalSealer::development(),
        broken: AtomicBool::new(false),
        opens: AtomicUsize::new(0),
    });
    let schedule = RetrySchedule::parse("5,300,1800").unwrap();
    let http = OutboundClient::new(
        OutboundPolicy::LOCAL,
        std::time::Duration::from_secs(5),
        1024,
    )
    .unwrap();
    worker.register(WebhookSender::new(
        store.clone(),
        clock.clone(),
        http,
        sealer.clone(),
        schedule.clone(),
    ));
    worker.register(DeliveryCloser::new(store.clone(), &schedule));
    let service = WebhookService::new(
        store.clone(),
        clock.clone(),
        sealer.clone(),
        OutboundPolicy::LOCAL,
        worker.clone(),
    );
    let receiver = Receiver::start().await;
    let account = AccountId::from(uuid::Uuid::new_v4());
    let created = service
        .create(
            actor(account),
            &body(json!({"url": receiver.url, "events": ["dispatch.unassigned"]})),
        )
        .await
        .unwrap();
    Scene {
        store,
        faulty,
        clock,
        worker,
        service,
        sealer,
        receiver,
        account,
        subscription: created.id,
    }
}

fn body(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

impl Scene {
    /// `n` events at once (one history entry each): one delivery each, due now. Answers the
    /// delivery ids, oldest first.
    async fn events(&self, n: usize) -> Vec<String> {
        let subscriptions = vec![self
            .store
            .get_webhook(self.account, self.subscription)
            .await
            .unwrap()
            .unwrap()];
        let mut ids = Vec::new();
        for _ in 0..n {
            let entry = shared::model::DispatchEntry::unassigned(
                self.account,
                RouterId::from(uuid::Uuid::new_v4()),
                shared::model::ObjectType::Contacts,
                "gone".into(),
                "Trigger did not match".into(),
                shared::model::DispatchSource::Api,
                self.clock.now(),
            );
            let mut changes = DueChanges::default();
            let schedule = |id, subject, at| self.worker.schedule(id, subject, at);
            add_deliveries(
                &mut changes,
                &subscriptions,
                EventType::DispatchUnassigned,
                &entry,
                None,
                self.clock.now(),
                &schedule,
            )
            .unwrap();
            ids.push(changes.deliveries[0].id.clone());
            self.store
                .record_dispatch(&entry, None, None, None, &changes)
                .await
                .unwrap();
        }
        ids
    }

    async fn delivery(&self, id: &str) -> WebhookDelivery {
        self.store
            .get_delivery(self.subscription, id)
            .await
            .unwrap()
            .unwrap()
    }

    /// Runs the automatic item of delivery `id` for its attempt `attempt`.
    async fn run(&self, id: &str, attempt: u32) -> RunOutcome {
        let item = DueId::new(DueKind::WebhookDelivery, id);
        self.worker.run(&item, attempt).await.unwrap()
    }

    /// Runs every item of `kind` stored now (manual retries, closings), whatever its id.
    async fn run_all(&self, kind: DueKind) -> usize {
        let far = self.clock.now() + Duration::days(365);
        let mut ran = 0;
        for item in self.store.overdue_due_items(far, 1_000).await.unwrap() {
            if item.kind() == kind {
                self.clock.set(self.clock.now().max(item.due_at));
                self.worker.run(&item.id, item.attempt).await.unwrap();
                ran += 1;
            }
        }
        ran
    }

    /// `PATCH {"enabled": false}` of the subscription (its closing's first page runs before the
    /// answer).
    async fn disable(&self) -> shared::webhooks::view::WebhookView {
        self.service
            .patch(
                actor(self.account),
                Some(self.subscription),
                &body(json!({"enabled": false})),
            )
            .await
            .unwrap()
    }

    async fn subscription(&self) -> shared::model::webhook::WebhookSubscription {
        self.store
            .get_webhook(self.account, self.subscription)
            .await
            .unwrap()
            .unwrap()
    }
}

async fn a_conflicting_commit_is_made_again_and_the_attempt_still_counted(backend: Backend) {
    let s = scene(backend).await;
    let ids = s.events(1).await;
    s.receiver.answer(500);
    // The outcome's write loses twice (something changed the delivery or the subscription).
    s.faulty.faults.conflict_next("record_delivery", 2);
    let RunOutcome::Ran(ran) = s.run(&ids[0], 0).await else {
        panic!("not run")
    };
    assert_eq!(ran.outcome, "retrying");
    let d = s.delivery(&ids[0]).await;
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Retrying, 1));
    assert_eq!(s.receiver.count(), 1, "one request for one attempt");
    let item = s
        .store
        .get_due(&DueId::new(DueKind::WebhookDelivery, &ids[0]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(item.attempt, 1, "the next attempt is scheduled");
    // It recovers at the next attempt.
    s.receiver.answer(204);
    s.clock.set(item.due_at);
    s.run(&ids[0], 1).await;
    let d = s.delivery(&ids[0]).await;
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Delivered, 2));
    assert_eq!(s.subscription().await.failing_since, None);
}

async fn patch_rotate_create_and_manual_retry_apply_again_when_something_changed_meanwhile(
    backend: Backend,
) {
    let s = scene(backend).await;
    let id = Some(s.subscription);
    s.faulty.faults.conflict_next("update_webhook", 3);
    let patched = s
        .service
        .patch(
            actor(s.account),
            id,
            &body(json!({"description": "after a race"})),
        )
        .await
        .unwrap();
    assert_eq!(patched.description.as_deref(), Some("after a race"));
    s.faulty.faults.conflict_next("update_webhook", 2);
    let rotated = s.service.rotate_secret(actor(s.account), id).await.unwrap();
    assert!(rotated.secret.is_some());
    assert_eq!(s.subscription().await.secrets.len(), 2);
    s.faulty.faults.conflict_next("create_webhook", 2);
    let url = s.receiver.url.clone();
    let created = s
        .service
        .create(
            actor(s.account),
            &body(json!({"url": url, "events": ["dispatch.unassigned"]})),
        )
        .await
        .unwrap();
    assert!(s
        .store
        .get_webhook(s.account, created.id)
        .await
        .unwrap()
        .is_some());
    let ids = s.events(1).await;
    s.faulty.faults.conflict_next("record_delivery", 2);
    let retried = s.service.retry(s.account, id, &ids[0]).await.unwrap();
    assert_eq!(retried.id, ids[0]);
    // A race that never ends is a 409 with the contract's body, never a 500.
    s.faulty.faults.conflict_next("update_webhook", 100);
    let refused = s
        .service
        .patch(actor(s.account), id, &body(json!({"description": "x"})))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, shared::error::DomainError::Conflict { .. }),
        "{refused:?}"
    );
}

async fn a_failed_manual_retry_of_a_pending_delivery_leaves_its_own_retries(backend: Backend) {
    let s = scene(backend).await;
    let ids = s.events(1).await;
    s.receiver.answer(503);
    // Retried by hand before its own first attempt ran: the manual attempt fails.
    s.service
        .retry(s.account, Some(s.subscription), &ids[0])
        .await
        .unwrap();
    assert_eq!(
        s.run_all(DueKind::WebhookDelivery).await,
        2,
        "manual and automatic"
    );
    let d = s.delivery(&ids[0]).await;
    assert_eq!(d.attempts, 2);
    assert_eq!(
        d.status,
        DeliveryStatus::Retrying,
        "its own schedule goes on"
    );
    let automatic = s
        .store
        .get_due(&DueId::new(DueKind::WebhookDelivery, &ids[0]))
        .await
        .unwrap()
        .expect("the automatic item is still due");
    s.receiver.answer(200);
    s.clock.set(automatic.due_at);
    s.run(&ids[0], automatic.attempt).await;
    let d = s.delivery(&ids[0]).await;
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Delivered, 3));
}

async fn a_secret_that_does_not_open_costs_no_attempt_and_no_health(backend: Backend) {
    let s = scene(backend).await;
    let ids = s.events(1).await;
    s.sealer.broken.store(true, Ordering::SeqCst);
    let RunOutcome::Ran(ran) = s.run(&ids[0], 0).await else {
        panic!("not run")
    };
    assert_eq!(ran.outcome, "error");
    assert_eq!(s.receiver.count(), 0, "nothing sent");
    let d = s.delivery(&ids[0]).await;
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Pending, 0));
    assert_eq!(
        s.subscription().await.failing_since,
        None,
        "not the receiver's failure"
    );
    let item = s
        .store
        .get_due(&DueId::new(DueKind::WebhookDelivery, &ids[0]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((item.attempt, item.runs), (0, 1));
    assert!(item.last_error.unwrap().contains("ThrottlingException"));
    // KMS is back: the same attempt is made and delivered.
    s.sealer.broken.store(false, Ordering::SeqCst);
    s.clock.set(item.due_at);
    s.run(&ids[0], 0).await;
    let d = s.delivery(&ids[0]).await;
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Delivered, 1));
}

async fn a_subscriptions_secrets_are_opened_once_for_many_deliveries(backend: Backend) {
    let s = scene(backend).await;
    let ids = s.events(5).await;
    for id in &ids {
        s.run(id, 0).await;
    }
    for id in &ids {
        assert_eq!(s.delivery(id).await.status, DeliveryStatus::Delivered);
    }
    assert_eq!(
        s.sealer.opens.load(Ordering::SeqCst),
        1,
        "one open, kept for the others"
    );
}

async fn disabling_ends_the_open_deliveries_through_due_work(backend: Backend) {
    let s = scene(backend).await;
    // More open deliveries than a page: the oldest five are beyond the first page.
    let ids = s.events(105).await;
    s.receiver.answer(500);
    for id in &ids[100..] {
        s.run(id, 0).await;
    }
    assert_eq!(s.delivery(&ids[104]).await.status, DeliveryStatus::Retrying);
    assert!(!s.disable().await.enabled);
    // The answer ended the newest page itself; the rest is due work, not the answer's.
    let still_open = |d: &WebhookDelivery| {
        matches!(d.status, DeliveryStatus::Pending | DeliveryStatus::Retrying)
    };
    let mut open = 0;
    for id in &ids {
        open += usize::from(still_open(&s.delivery(id).await));
    }
    assert_eq!(open, 5, "one page ended before the answer");
    assert_eq!(s.run_all(DueKind::CloseDeliveries).await, 1);
    for id in &ids {
        let d = s.delivery(id).await;
        assert_eq!(d.status, DeliveryStatus::Failed, "{id}");
        assert_eq!(d.last_error.as_deref(), Some("Subscription disabled"));
    }
    // Their own items, when they come, end quietly: nothing is sent.
    let before = s.receiver.count();
    s.run_all(DueKind::WebhookDelivery).await;
    assert_eq!(s.receiver.count(), before);
    // Enabling again sends nothing made before; the subscription starts healthy.
    let enabled = s
        .service
        .patch(
            actor(s.account),
            Some(s.subscription),
            &body(json!({"enabled": true})),
        )
        .await
        .unwrap();
    assert!(enabled.enabled);
    assert_eq!(s.subscription().await.failing_since, None);
}

/// Conflicts belong to the mechanism (`docs/design.md`, "Work that happens later"): a delivery that
/// moved while its page was closing (here a write made to conflict) fails the closing's round,
/// which runs again on a fresh read of the page; it is not left open for its own next attempt.
async fn a_closing_whose_end_conflicts_runs_again_on_fresh_reads(backend: Backend) {
    let s = scene(backend).await;
    let ids = s.events(3).await;
    s.receiver.answer(500);
    for id in &ids {
        s.run(id, 0).await;
    }
    s.faulty.faults.conflict_next("record_delivery", 2);
    // The PATCH runs the closing's first (and only) page before answering.
    s.disable().await;
    for id in &ids {
        let d = s.delivery(id).await;
        assert_eq!(d.status, DeliveryStatus::Failed, "{id}");
        assert_eq!(d.last_error.as_deref(), Some("Subscription disabled"));
        assert_eq!(d.attempts, 1, "{id}: no attempt made by the closing");
    }
    assert_eq!(
        s.run_all(DueKind::CloseDeliveries).await,
        0,
        "the closing settled in its run"
    );
}

async fn a_410_disables_the_subscription_and_its_other_open_deliveries_end_failed(
    backend: Backend,
) {
    let s = scene(backend).await;
    let ids = s.events(3).await;
    s.receiver.answer(410);
    let RunOutcome::Ran(ran) = s.run(&ids[0], 0).await else {
        panic!("not run")
    };
    assert_eq!(ran.outcome, "gone");
    assert_eq!(ran.spawned.len(), 1, "the closing item, handed on");
    let sub = s.subscription().await;
    assert!(!sub.enabled);
    assert_eq!(
        serde_json::to_value(sub.disabled_reason).unwrap(),
        json!("gone")
    );
    assert_eq!(s.run_all(DueKind::CloseDeliveries).await, 1);
    for id in &ids {
        assert_eq!(s.delivery(id).await.status, DeliveryStatus::Failed, "{id}");
    }
    assert_eq!(s.receiver.count(), 1);
}
