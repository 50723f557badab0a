//! A store decorator that fails on demand: for tests of the error paths (500s, SQS retries,
//! conflict retries) without a broken backend.

use super::{Listed, Page, ProvisionReport, Store, StoreError, StoreResult, UniqueKey};
use crate::fields::definition::FieldDefinition;
use crate::idempotency::{ClaimOutcome, IdempotencyClaim, IdempotencyCompletion};
use crate::model::account::{Account, ApiClient, Role, Team};
use crate::model::dispatch::{
    AssignmentTally, AssignmentWrite, CrmSyncState, DispatchEntry, DispatchEntryKey, RotationState,
};
use crate::model::due::{DueChanges, DueId, DueItem, Lease, Settlement};
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::provision::ProvisionPlan;
use crate::model::record::Record;
use crate::model::router::Router;
use crate::model::sla::SlaStatus;
use crate::model::webhook::{WebhookDelivery, WebhookSubscription};
use crate::types::ids::{AccountId, MemberId, RecordId, RouterId, WebhookId};
use async_trait::async_trait;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What the decorator makes fail.
#[derive(Debug, Default)]
pub struct Faults {
    /// Every call answers [`StoreError::Backend`].
    pub backend_down: AtomicBool,
    /// `commit_assignment` answers [`StoreError::Conflict`] (a race that never ends).
    pub commits_conflict: AtomicBool,
    /// Record creation answers [`StoreError::Backend`] (everything else works).
    pub creates_fail: AtomicBool,
    /// `complete_idempotency_key` answers [`StoreError::Backend`] (storing an answer on its own
    /// fails).
    pub completions_fail: AtomicBool,
    /// `update_crm_sync` answers [`StoreError::Backend`]: the process "dies" after a CRM
    /// request and before its outcome is stored.
    pub crm_sync_updates_fail: AtomicBool,
    /// Counts the rounds of store calls (see [`Rounds`]).
    pub rounds: Rounds,
    /// When set, `list_members` and `find_member_by_email` answer from these members (an index
    /// that lags behind the table, as DynamoDB's eventually consistent GSIs can); reads by key
    /// stay fresh.
    pub stale_members: std::sync::Mutex<Option<Vec<Member>>>,
    /// Routers read as changed by provisioning since they were loaded (routers change only
    /// through provisioning, which inserts and never updates): by id, the router as reads of
    /// it answer (e.g. archived or unpublished).
    pub routers_as: std::sync::Mutex<std::collections::HashMap<RouterId, Router>>,
}

impl Faults {
    /// `router` as a read of it answers.
    fn router_as(&self, router: Option<Router>) -> Option<Router> {
        let router = router?;
        let changed = self.routers_as.lock().unwrap_or_else(|e| e.into_inner());
        Some(changed.get(&router.id).cloned().unwrap_or(router))
    }

    /// The members a lagging index answers, when set ([`Self::stale_members`]).
    fn stale_members(&self) -> Option<Vec<Member>> {
        self.stale_members
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Counts sequential rounds of store calls: a round starts when a call begins while no other
/// call is in flight; calls made together (concurrently) share one. When counting, every call
/// also waits a few milliseconds first, so calls issued together are seen together even on the
/// embedded store (whose calls complete at once).
#[derive(Debug, Default)]
pub struct Rounds {
    counting: AtomicBool,
    /// Whether each counted call waits first (rounds are counted); off: calls only.
    spaced: AtomicBool,
    in_flight: std::sync::atomic::AtomicUsize,
    rounds: std::sync::atomic::AtomicUsize,
    calls: std::sync::atomic::AtomicUsize,
    by_method: std::sync::Mutex<std::collections::BTreeMap<&'static str, usize>>,
}

impl Rounds {
    /// Starts counting from zero.
    pub fn start(&self) {
        self.rounds.store(0, Ordering::SeqCst);
        self.calls.store(0, Ordering::SeqCst);
        self.by_method
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.spaced.store(true, Ordering::SeqCst);
        self.counting.store(true, Ordering::SeqCst);
    }

    /// Starts counting calls by port method from zero, without the wait before each call (the
    /// rounds are then meaningless, the timings are not distorted: benchmarks).
    pub fn start_calls_only(&self) {
        self.start();
        self.spaced.store(false, Ordering::SeqCst);
    }

    /// Stops counting; returns (rounds, calls by port method) since [`Self::start`].
    pub fn stop(&self) -> (usize, std::collections::BTreeMap<&'static str, usize>) {
        self.counting.store(false, Ordering::SeqCst);
        (
            self.rounds.load(Ordering::SeqCst),
            self.by_method
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }
}

/// Delegates to `inner` unless a fault is switched on.
pub struct FaultyStore {
    inner: Arc<dyn Store>,
    /// The switches.
    pub faults: Arc<Faults>,
}

impl FaultyStore {
    /// Wraps `inner` with every fault off.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Self {
            inner,
            faults: Arc::new(Faults::default()),
        }
    }

    /// Runs one delegated call, counting its round when counting.
    async fn observed<T>(
        &self, method: &'static str, call: impl std::future::Future<Output = T>,
    ) -> T {
        let rounds = &self.faults.rounds;
        if !rounds.counting.load(Ordering::SeqCst) {
            return call.await;
        }
        if rounds.in_flight.fetch_add(1, Ordering::SeqCst) == 0 {
            rounds.rounds.fetch_add(1, Ordering::SeqCst);
        }
        rounds.calls.fetch_add(1, Ordering::SeqCst);
        *rounds
            .by_method
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(method)
            .or_default() += 1;
        if rounds.spaced.load(Ordering::SeqCst) {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let out = call.await;
        rounds.in_flight.fetch_sub(1, Ordering::SeqCst);
        out
    }

    fn check(&self) -> StoreResult<()> {
        if self.faults.backend_down.load(Ordering::SeqCst) {
            return Err(StoreError::Backend("injected backend failure".into()));
        }
        Ok(())
    }
}

#[async_trait]
impl Store for FaultyStore {
    async fn get_account(&self, a: AccountId) -> StoreResult<Option<Account>> {
        self.check()?;
        self.observed("get_account", self.inner.get_account(a))
            .await
    }
    async fn get_client(&self, c: &str) -> StoreResult<Option<ApiClient>> {
        self.check()?;
        self.observed("get_client", self.inner.get_client(c)).await
    }
    async fn field_definitions(&self, a: AccountId) -> StoreResult<Vec<FieldDefinition>> {
        self.check()?;
        self.observed("field_definitions", self.inner.field_definitions(a))
            .await
    }
    async fn get_record(
        &self, a: AccountId, t: ObjectType, id: RecordId,
    ) -> StoreResult<Option<Record>> {
        self.check()?;
        self.observed("get_record", self.inner.get_record(a, t, id))
            .await
    }
    async fn find_record(&self, a: AccountId, id: RecordId) -> StoreResult<Option<Record>> {
        self.check()?;
        self.observed("find_record", self.inner.find_record(a, id))
            .await
    }
    async fn list_records(
        &self, a: AccountId, t: ObjectType, p: &Page,
    ) -> StoreResult<Listed<Record>> {
        self.check()?;
        self.observed("list_records", self.inner.list_records(a, t, p))
            .await
    }
    async fn create_record_completing(
        &self, r: &Record, k: &[UniqueKey], c: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()> {
        self.check()?;
        if self.faults.creates_fail.load(Ordering::SeqCst) {
            return Err(StoreError::Backend("injected create failure".into()));
        }
        self.observed(
            "create_record_completing",
            self.inner.create_record_completing(r, k, c),
        )
        .await
    }
    async fn update_record(
        &self, r: &Record, v: u64, c: &[UniqueKey], x: &[UniqueKey],
    ) -> StoreResult<()> {
        self.check()?;
        self.observed("update_record", self.inner.update_record(r, v, c, x))
            .await
    }
    async fn list_members(&self, a: AccountId, p: &Page) -> StoreResult<Listed<Member>> {
        self.check()?;
        let stale = self.faults.stale_members();
        match stale {
            Some(members) => Ok(Listed::new(
                members.into_iter().filter(|m| m.account_id == a).collect(),
                None,
            )),
            None => {
                self.observed("list_members", self.inner.list_members(a, p))
                    .await
            }
        }
    }
    async fn get_member(&self, a: AccountId, m: MemberId) -> StoreResult<Option<Member>> {
        self.check()?;
        self.observed("get_member", self.inner.get_member(a, m))
            .await
    }
    async fn get_members(&self, a: AccountId, ids: &[MemberId]) -> StoreResult<Vec<Member>> {
        self.check()?;
        self.observed("get_members", self.inner.get_members(a, ids))
            .await
    }
    async fn find_member_by_email(&self, a: AccountId, e: &str) -> StoreResult<Option<Member>> {
        self.check()?;
        let stale = self.faults.stale_members();
        if let Some(members) = stale {
            let wanted = e.to_lowercase();
            let found = members
                .into_iter()
                .find(|m| m.account_id == a && m.email.as_str() == wanted);
            return self
                .observed("find_member_by_email", async move { Ok(found) })
                .await;
        }
        self.observed(
            "find_member_by_email",
            self.inner.find_member_by_email(a, e),
        )
        .await
    }
    async fn update_member(&self, m: &Member, v: u64) -> StoreResult<()> {
        self.check()?;
        self.observed("update_member", self.inner.update_member(m, v))
            .await
    }
    async fn list_roles(&self, a: AccountId) -> StoreResult<Vec<Role>> {
        self.check()?;
        self.observed("list_roles", self.inner.list_roles(a)).await
    }
    async fn list_teams(&self, a: AccountId) -> StoreResult<Vec<Team>> {
        self.check()?;
        self.observed("list_teams", self.inner.list_teams(a)).await
    }
    async fn list_routers(&self, a: AccountId, p: &Page) -> StoreResult<Listed<Router>> {
        self.check()?;
        self.observed("list_routers", self.inner.list_routers(a, p))
            .await
    }
    async fn get_router(&self, a: AccountId, r: RouterId) -> StoreResult<Option<Router>> {
        self.check()?;
        let router = self
            .observed("get_router", self.inner.get_router(a, r))
            .await?;
        Ok(self.faults.router_as(router))
    }
    async fn find_router(&self, r: RouterId) -> StoreResult<Option<Router>> {
        self.check()?;
        let router = self
            .observed("find_router", self.inner.find_router(r))
            .await?;
        Ok(self.faults.router_as(router))
    }
    async fn find_by_unique_key(
        &self, a: AccountId, t: ObjectType, k: &UniqueKey,
    ) -> StoreResult<Option<Record>> {
        self.check()?;
        self.observed("find_by_unique_key", self.inner.find_by_unique_key(a, t, k))
            .await
    }
    async fn rotation_state(&self, r: RouterId) -> StoreResult<RotationState> {
        self.check()?;
        self.observed("rotation_state", self.inner.rotation_state(r))
            .await
    }
    async fn assignment_count(&self, a: AccountId, m: &str) -> StoreResult<u64> {
        self.check()?;
        self.observed("assignment_count", self.inner.assignment_count(a, m))
            .await
    }
    async fn record_dispatch(
        &self, e: &DispatchEntry, k: Option<&str>, c: Option<&IdempotencyCompletion>,
        due: &DueChanges,
    ) -> StoreResult<()> {
        self.check()?;
        self.observed("record_dispatch", self.inner.record_dispatch(e, k, c, due))
            .await
    }
    async fn list_router_dispatches(
        &self, a: AccountId, r: RouterId, p: &Page,
    ) -> StoreResult<Listed<DispatchEntry>> {
        self.check()?;
        self.observed(
            "list_router_dispatches",
            self.inner.list_router_dispatches(a, r, p),
        )
        .await
    }
    async fn list_record_dispatches(
        &self, a: AccountId, t: ObjectType, r: RecordId, p: &Page,
    ) -> StoreResult<Listed<DispatchEntry>> {
        self.check()?;
        self.observed(
            "list_record_dispatches",
            self.inner.list_record_dispatches(a, t, r, p),
        )
        .await
    }
    async fn get_dispatch(&self, k: &DispatchEntryKey) -> StoreResult<Option<DispatchEntry>> {
        self.check()?;
        self.observed("get_dispatch", self.inner.get_dispatch(k))
            .await
    }
    async fn update_crm_sync(
        &self, k: &DispatchEntryKey, from: &CrmSyncState, to: &CrmSyncState, due: &DueChanges,
    ) -> StoreResult<()> {
        self.check()?;
        if self.faults.crm_sync_updates_fail.load(Ordering::SeqCst) {
            return Err(StoreError::Backend(
                "injected CRM sync update failure".into(),
            ));
        }
        self.observed(
            "update_crm_sync",
            self.inner.update_crm_sync(k, from, to, due),
        )
        .await
    }
    async fn end_sla_check(
        &self, k: &DispatchEntryKey, to: SlaStatus, due: &DueChanges,
    ) -> StoreResult<()> {
        self.check()?;
        self.observed("end_sla_check", self.inner.end_sla_check(k, to, due))
            .await
    }
    async fn get_due(&self, id: &DueId) -> StoreResult<Option<DueItem>> {
        self.check()?;
        self.observed("get_due", self.inner.get_due(id)).await
    }
    async fn claim_due(
        &self, id: &DueId, attempt: u32, lease: &Lease, now: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<Option<DueItem>> {
        self.check()?;
        self.observed("claim_due", self.inner.claim_due(id, attempt, lease, now))
            .await
    }
    async fn settle_due(&self, settlement: &Settlement) -> StoreResult<()> {
        self.check()?;
        self.observed("settle_due", self.inner.settle_due(settlement))
            .await
    }
    async fn rearm_due(
        &self, item: &DueItem, resume_at: chrono::DateTime<chrono::Utc>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<bool> {
        self.check()?;
        self.observed("rearm_due", self.inner.rearm_due(item, resume_at, now))
            .await
    }
    async fn overdue_due_items(
        &self, now: chrono::DateTime<chrono::Utc>, limit: usize,
    ) -> StoreResult<Vec<DueItem>> {
        self.check()?;
        self.observed(
            "overdue_due_items",
            self.inner.overdue_due_items(now, limit),
        )
        .await
    }
    async fn tally_assignments(
        &self, a: AccountId, r: RouterId, from: chrono::DateTime<chrono::Utc>,
        to: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<Vec<AssignmentTally>> {
        self.check()?;
        self.observed(
            "tally_assignments",
            self.inner.tally_assignments(a, r, from, to),
        )
        .await
    }
    async fn claim_idempotency_key(&self, c: &IdempotencyClaim) -> StoreResult<ClaimOutcome> {
        self.check()?;
        self.observed("claim_idempotency_key", self.inner.claim_idempotency_key(c))
            .await
    }
    async fn complete_idempotency_key(&self, c: &IdempotencyCompletion) -> StoreResult<()> {
        self.check()?;
        if self.faults.completions_fail.load(Ordering::SeqCst) {
            return Err(StoreError::Backend("injected completion failure".into()));
        }
        self.observed(
            "complete_idempotency_key",
            self.inner.complete_idempotency_key(c),
        )
        .await
    }
    async fn amend_idempotency_response(&self, c: &IdempotencyCompletion) -> StoreResult<()> {
        self.check()?;
        self.observed(
            "amend_idempotency_response",
            self.inner.amend_idempotency_response(c),
        )
        .await
    }
    async fn release_idempotency_key(&self, c: &IdempotencyClaim) -> StoreResult<()> {
        self.check()?;
        self.observed(
            "release_idempotency_key",
            self.inner.release_idempotency_key(c),
        )
        .await
    }
    async fn idempotency_key_used(&self, k: &str) -> StoreResult<bool> {
        self.check()?;
        self.observed("idempotency_key_used", self.inner.idempotency_key_used(k))
            .await
    }
    async fn commit_assignment(&self, w: &AssignmentWrite) -> StoreResult<()> {
        self.check()?;
        self.observed("commit_assignment", async {
            if self.faults.commits_conflict.load(Ordering::SeqCst) {
                return Err(StoreError::Conflict);
            }
            self.inner.commit_assignment(w).await
        })
        .await
    }
    async fn create_webhook(&self, s: &WebhookSubscription, max: u64) -> StoreResult<()> {
        self.check()?;
        self.observed("create_webhook", self.inner.create_webhook(s, max))
            .await
    }
    async fn list_webhooks(
        &self, a: AccountId, p: &Page,
    ) -> StoreResult<Listed<WebhookSubscription>> {
        self.check()?;
        self.observed("list_webhooks", self.inner.list_webhooks(a, p))
            .await
    }
    async fn get_webhook(
        &self, a: AccountId, id: WebhookId,
    ) -> StoreResult<Option<WebhookSubscription>> {
        self.check()?;
        self.observed("get_webhook", self.inner.get_webhook(a, id))
            .await
    }
    async fn update_webhook(&self, s: &WebhookSubscription, v: u64) -> StoreResult<()> {
        self.check()?;
        self.observed("update_webhook", self.inner.update_webhook(s, v))
            .await
    }
    async fn delete_webhook(&self, a: AccountId, id: WebhookId) -> StoreResult<bool> {
        self.check()?;
        self.observed("delete_webhook", self.inner.delete_webhook(a, id))
            .await
    }
    async fn get_delivery(&self, s: WebhookId, d: &str) -> StoreResult<Option<WebhookDelivery>> {
        self.check()?;
        self.observed("get_delivery", self.inner.get_delivery(s, d))
            .await
    }
    async fn list_deliveries(
        &self, s: WebhookId, p: &Page,
    ) -> StoreResult<Listed<WebhookDelivery>> {
        self.check()?;
        self.observed("list_deliveries", self.inner.list_deliveries(s, p))
            .await
    }
    async fn record_delivery(
        &self, d: &WebhookDelivery, attempts: u32, s: Option<(&WebhookSubscription, u64)>,
        due: &DueChanges,
    ) -> StoreResult<()> {
        self.check()?;
        self.observed(
            "record_delivery",
            self.inner.record_delivery(d, attempts, s, due),
        )
        .await
    }
    async fn provision(&self, p: &ProvisionPlan) -> StoreResult<ProvisionReport> {
        self.check()?;
        self.observed("provision", self.inner.provision(p)).await
    }
}
