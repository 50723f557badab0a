//! A store decorator that fails on demand: for tests of the error paths (500s, SQS retries,
//! conflict retries) without a broken backend.

use super::{
    AccountStore, AuditStore, AuthAttemptStore, CalendarStore, DispatchStore, DueStore, FirstFound,
    FirstReads, IdempotencyStore, MemberStore, PaceStore, Page, PageRequest, Position,
    ProvisionReport, ProvisionStore, RecordStore, RouterStore, Store, StoreError, StoreResult,
    UniqueKey, WebhookStore,
};
use crate::fields::definition::FieldDefinition;
use crate::idempotency::{ClaimOutcome, IdempotencyClaim, IdempotencyCompletion};
use crate::model::account::{Account, ApiClient, Role, Team};
use crate::model::audit::{AuditEvent, AuditFilter};
use crate::model::auth_attempt::{AttemptKey, FailureWindow};
use crate::model::dispatch::{
    AssignmentTally, AssignmentWrite, CrmSyncState, DecisionSnapshot, DispatchEntry,
    DispatchEntryKey, ExplainedEntry, MessageDeduplicationId, RotationState,
};
use crate::model::due::{DueChanges, DueId, DueItem, Lease, Parking, Settlement};
use crate::model::holiday_calendar::{CalendarDeletion, CalendarRefs, HolidayCalendar};
use crate::model::member::{Member, MemberIdentity};
use crate::model::object_type::ObjectType;
use crate::model::pace::{PaceKey, Turn, TurnAsk, UsageHold};
use crate::model::provision::ProvisionPlan;
use crate::model::record::Record;
use crate::model::router::{Router, RouterDraft, RouterRevision};
use crate::model::router_write::RouterWrite;
use crate::model::sla::SlaStatus;
use crate::model::webhook::{SubscriptionHealth, WebhookDelivery, WebhookSubscription};
use crate::types::email::Email;
use crate::types::etag::ETag;
use crate::types::ids::HolidayCalendarId;
use crate::types::ids::{AccountId, MemberId, RecordId, RouterId, WebhookId};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A method of the store port that [`FaultyStore`] forwards, by name: what a fault is switched
/// on for ([`Faults::conflict_next`]) and what calls, volumes and deadlines are counted by.
///
/// Each variant is spelled exactly as its method (hence snake case): the forwarding impls below
/// name the variant from the method's own identifier, so renaming a port method without its
/// variant fails to compile here, and renaming the variant fails to compile in every test that
/// injects a fault into it or counts its calls. Its `Debug` and `Display` print the method name.
/// A variant stands for the method of its name, documented on its port trait.
#[allow(non_camel_case_types, missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PortMethod {
    // AccountStore
    get_account,
    get_client,
    field_definitions,
    list_roles,
    list_teams,
    // RecordStore
    get_record,
    find_record,
    get_records,
    list_records,
    create_record_completing,
    update_record,
    find_by_unique_key,
    // MemberStore
    list_members,
    get_member,
    get_members,
    find_member_by_email,
    identify_members,
    update_member,
    // RouterStore
    list_routers,
    get_router,
    find_router,
    create_router,
    get_router_draft,
    put_router_draft,
    delete_router_draft,
    get_router_revision,
    put_first_revision,
    list_router_revisions,
    write_router,
    // DispatchStore
    rotation_state,
    first_round_reads,
    assignment_count,
    record_dispatch,
    list_router_dispatches,
    list_router_dispatches_between,
    list_record_dispatches,
    get_dispatch,
    get_explained_dispatch,
    update_crm_sync,
    end_sla_check,
    tally_assignments,
    deduplication_id_used,
    commit_assignment,
    // DueStore
    get_due,
    claim_due,
    settle_due,
    park_due,
    parked_due_items,
    rearm_due,
    overdue_due_items,
    // IdempotencyStore
    claim_idempotency_key,
    complete_idempotency_key,
    amend_idempotency_response,
    release_idempotency_key,
    // WebhookStore
    create_webhook,
    list_webhooks,
    get_webhook,
    update_webhook,
    delete_webhook,
    get_delivery,
    list_deliveries,
    record_delivery,
    // CalendarStore
    create_holiday_calendar,
    list_holiday_calendars,
    get_holiday_calendar,
    get_holiday_calendars,
    update_holiday_calendar,
    delete_holiday_calendar,
    // ProvisionStore
    provision,
    replace_client,
    // AuthAttemptStore
    failed_authentications,
    count_failed_authentication,
    // PaceStore
    take_turn,
    hold_pace,
    set_usage_hold,
    // AuditStore
    list_audit_events,
    get_audit_event,
    append_audit_event,
}

impl std::fmt::Display for PortMethod {
    /// The method name.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

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
    /// Counts the items answered by the reads that answer many (see [`Volumes`]).
    pub volumes: Volumes,
    /// When set, `list_members` and `find_member_by_email` answer from these members (an index
    /// that lags behind the table, as DynamoDB's eventually consistent GSIs can); reads by key
    /// stay fresh.
    pub stale_members: std::sync::Mutex<Option<Vec<Member>>>,
    /// Routers read as changed by provisioning since they were loaded (routers change only
    /// through provisioning, which inserts and never updates): by id, the router as reads of
    /// it answer (e.g. archived or unpublished).
    pub routers_as: std::sync::Mutex<std::collections::HashMap<RouterId, Router>>,
    /// Every write that records an audit event (BEHAVIOR 18) meets an event already stored
    /// under its event's key (a copy without changes, stored just before by this decorator): the
    /// write's own event cannot be stored, so the write must leave nothing, neither its change
    /// nor its event. Counts the copies it stored in [`Self::audit_decoys`].
    pub audit_collides: AtomicBool,
    /// How many event copies [`Self::audit_collides`] stored.
    pub audit_decoys: std::sync::atomic::AtomicUsize,
    /// What each `first_round_reads` asked for while [`Self::rounds`] counted, in order (a test
    /// takes them with [`Self::take_first_reads`]).
    pub first_reads: std::sync::Mutex<Vec<FirstReads>>,
    /// By port method, how many of its next calls answer [`StoreError::Conflict`] (a
    /// write whose condition failed because something else changed the item meanwhile), before
    /// the call reaches the inner store ([`Self::conflict_next`]).
    pub conflicts: std::sync::Mutex<std::collections::HashMap<PortMethod, usize>>,
    /// Every call's request deadline ([`crate::store::request_deadline`]) as the call saw it:
    /// the one deadline a request passes down to each store call.
    pub deadlines: std::sync::Mutex<Vec<(PortMethod, Option<tokio::time::Instant>)>>,
}

impl Faults {
    /// What the `first_round_reads` calls since the last take asked for, in order.
    pub fn take_first_reads(&self) -> Vec<FirstReads> {
        std::mem::take(&mut *self.first_reads.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The next `times` calls of the port method `method` answer [`StoreError::Conflict`].
    pub fn conflict_next(&self, method: PortMethod, times: usize) {
        self.conflicts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(method, times);
    }

    /// Whether this call of `method` is one of those made to conflict (counting it down).
    fn conflicts_now(&self, method: PortMethod) -> bool {
        let mut conflicts = self.conflicts.lock().unwrap_or_else(|e| e.into_inner());
        match conflicts.get_mut(&method) {
            Some(left) if *left > 0 => {
                *left -= 1;
                true
            }
            _ => false,
        }
    }

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
/// first yields to the executor once and then waits a few milliseconds, so calls issued together
/// are seen together even on the embedded store (whose calls complete at once) and on a machine
/// so loaded that the wait has passed before it is first polled.
#[derive(Debug, Default)]
pub struct Rounds {
    counting: AtomicBool,
    /// Whether each counted call waits first (rounds are counted); off: calls only.
    spaced: AtomicBool,
    in_flight: std::sync::atomic::AtomicUsize,
    rounds: std::sync::atomic::AtomicUsize,
    calls: std::sync::atomic::AtomicUsize,
    by_method: std::sync::Mutex<std::collections::BTreeMap<PortMethod, usize>>,
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
    pub fn stop(&self) -> (usize, std::collections::BTreeMap<PortMethod, usize>) {
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

/// The items answered by the reads that answer many items (`get_records`,
/// `list_router_dispatches_between`), by port method, always counted: what a bounded reader
/// (the what-if replay) read, and at most how much at once.
#[derive(Debug, Default)]
pub struct Volumes {
    by_method: std::sync::Mutex<std::collections::BTreeMap<PortMethod, Volume>>,
}

/// The items one port method answered since [`Volumes::take`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Volume {
    /// Its calls.
    pub calls: usize,
    /// The items they answered in all.
    pub items: usize,
    /// The most items one call answered.
    pub largest: usize,
}

impl Volumes {
    fn note(&self, method: PortMethod, items: usize) {
        let mut by_method = self.by_method.lock().unwrap_or_else(|e| e.into_inner());
        let volume = by_method.entry(method).or_default();
        volume.calls += 1;
        volume.items += items;
        volume.largest = volume.largest.max(items);
    }

    /// The volumes since the last call (by port method), counting from zero again.
    pub fn take(&self) -> std::collections::BTreeMap<PortMethod, Volume> {
        std::mem::take(&mut *self.by_method.lock().unwrap_or_else(|e| e.into_inner()))
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
        &self, method: PortMethod, call: impl std::future::Future<Output = T>,
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
            // The yield always leaves once, so the calls polled together (a join) have all begun
            // before any ends; the sleep alone did not: on a loaded machine the thread can lose
            // its core for longer than the sleep between making it and polling it, and the sleep
            // then completes at once (CI saw two rounds where one was made).
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let out = call.await;
        rounds.in_flight.fetch_sub(1, Ordering::SeqCst);
        out
    }

    /// The faults switched on for `method` that strike before its call (not counted as a call).
    fn check(&self, method: PortMethod) -> StoreResult<()> {
        self.faults
            .deadlines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((method, crate::store::request_deadline()));
        let on = |switch: &AtomicBool| switch.load(Ordering::SeqCst);
        let faults = &self.faults;
        let failure = if on(&faults.backend_down) {
            "injected backend failure"
        } else {
            match method {
                PortMethod::create_record_completing if on(&faults.creates_fail) => {
                    "injected create failure"
                }
                PortMethod::complete_idempotency_key if on(&faults.completions_fail) => {
                    "injected completion failure"
                }
                PortMethod::update_crm_sync if on(&faults.crm_sync_updates_fail) => {
                    "injected CRM sync update failure"
                }
                _ => return Ok(()),
            }
        };
        Err(StoreError::Backend(failure.into()))
    }

    /// With [`Faults::audit_collides`], stores a copy of `audit` without changes under its key
    /// first (through the inner store), so that the write carrying it finds its key taken.
    async fn occupy(&self, audit: Option<&AuditEvent>) -> StoreResult<()> {
        let Some(event) = audit else {
            return Ok(());
        };
        if !self.faults.audit_collides.load(Ordering::SeqCst) {
            return Ok(());
        }
        let decoy = AuditEvent {
            changes: Vec::new(),
            ..event.clone()
        };
        self.inner.append_audit_event(&decoy, None).await?;
        self.faults.audit_decoys.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// The faults switched on for `method` that strike during its (counted) call.
    fn race(&self, method: PortMethod) -> StoreResult<()> {
        match method {
            PortMethod::commit_assignment
                if self.faults.commits_conflict.load(Ordering::SeqCst) =>
            {
                Err(StoreError::Conflict)
            }
            _ if self.faults.conflicts_now(method) => Err(StoreError::Conflict),
            _ => Ok(()),
        }
    }
}

/// Implements one trait of the port for [`FaultyStore`]: each listed method checks the faults,
/// then runs the inner store's method as one counted call; an `audited` method (a write that
/// records an audit event, named by the expression after `=>`) first meets
/// [`Faults::audit_collides`]; the items after the last `;` are written out (the methods whose
/// answers a fault changes).
macro_rules! delegate_store {
    (impl $trait:ident; $(fn $method:ident($($arg:ident: $ty:ty),*) -> $out:ty;)* ;
     $(audited fn $amethod:ident($($aarg:ident: $aty:ty),*) -> $aout:ty => $audit:expr;)* ;
     $($written:item)*) => {
        #[async_trait]
        impl $trait for FaultyStore {
            $(async fn $method(&self, $($arg: $ty),*) -> StoreResult<$out> {
                self.check(PortMethod::$method)?;
                self.observed(PortMethod::$method, async {
                    self.race(PortMethod::$method)?;
                    self.inner.$method($($arg),*).await
                })
                .await
            })*
            $(async fn $amethod(&self, $($aarg: $aty),*) -> StoreResult<$aout> {
                self.check(PortMethod::$amethod)?;
                self.occupy($audit).await?;
                self.observed(PortMethod::$amethod, async {
                    self.race(PortMethod::$amethod)?;
                    self.inner.$amethod($($aarg),*).await
                })
                .await
            })*
            $($written)*
        }
    };
}

delegate_store! {
    impl AccountStore;
    fn get_account(account_id: AccountId) -> Option<Account>;
    fn get_client(client_id: &str) -> Option<ApiClient>;
    fn field_definitions(account_id: AccountId) -> Vec<FieldDefinition>;
    fn list_roles(account_id: AccountId) -> Vec<Role>;
    fn list_teams(account_id: AccountId) -> Vec<Team>;
    ;
    ;
}

delegate_store! {
    impl RecordStore;
    fn get_record(account_id: AccountId, object_type: ObjectType, id: RecordId) -> Option<Record>;
    fn find_record(account_id: AccountId, id: RecordId) -> Option<Record>;
    fn list_records(account_id: AccountId, object_type: ObjectType, page: &PageRequest) -> Page<Record>;
    fn create_record_completing(
        record: &Record, keys: &[UniqueKey], completion: Option<&IdempotencyCompletion>
    ) -> ();
    fn update_record(
        record: &Record, version: u64, claimed: &[UniqueKey], released: &[UniqueKey]
    ) -> ();
    fn find_by_unique_key(account_id: AccountId, object_type: ObjectType, key: &UniqueKey)
        -> Option<Record>;
    ;
    ;
    /// Counted in [`Faults::volumes`].
    async fn get_records(&self, account_id: AccountId, ids: &[RecordId]) -> StoreResult<Vec<Record>> {
        self.check(PortMethod::get_records)?;
        let call = self.inner.get_records(account_id, ids);
        let records = self.observed(PortMethod::get_records, call);
        let records = records.await?;
        self.faults.volumes.note(PortMethod::get_records, records.len());
        Ok(records)
    }
}

delegate_store! {
    impl MemberStore;
    fn get_member(account_id: AccountId, member_id: MemberId) -> Option<Member>;
    fn get_members(account_id: AccountId, ids: &[MemberId]) -> Vec<Member>;
    fn identify_members(account_id: AccountId, emails: &[Email]) -> Vec<MemberIdentity>;
    ;
    audited fn update_member(
        member: &Member, version: u64, calendars: &CalendarRefs, audit: Option<&AuditEvent>
    ) -> () => audit;
    ;
    /// A lagging index ([`Faults::stale_members`]) answers in place of the inner store.
    async fn list_members(&self, account_id: AccountId, page: &PageRequest) -> StoreResult<Page<Member>> {
        self.check(PortMethod::list_members)?;
        match self.faults.stale_members() {
            Some(members) => {
                let members = members.into_iter().filter(|m| m.account_id == account_id);
                Ok(Page::new(members.collect(), None))
            }
            None => {
                let call = self.inner.list_members(account_id, page);
                self.observed(PortMethod::list_members, call).await
            }
        }
    }

    /// A lagging index ([`Faults::stale_members`]) answers in place of the inner store.
    async fn find_member_by_email(&self, account_id: AccountId, email: &str) -> StoreResult<Option<Member>> {
        self.check(PortMethod::find_member_by_email)?;
        let Some(members) = self.faults.stale_members() else {
            let call = self.inner.find_member_by_email(account_id, email);
            return self.observed(PortMethod::find_member_by_email, call).await;
        };
        let wanted = email.to_lowercase();
        let found = members
            .into_iter()
            .find(|m| m.account_id == account_id && m.email.as_str() == wanted);
        self.observed(PortMethod::find_member_by_email, async move { Ok(found) }).await
    }
}

delegate_store! {
    impl RouterStore;
    fn list_routers(account_id: AccountId, page: &PageRequest) -> Page<Router>;
    fn get_router_draft(account_id: AccountId, router_id: RouterId) -> Option<RouterDraft>;
    fn get_router_revision(account_id: AccountId, router_id: RouterId, revision: u64)
        -> Option<RouterRevision>;
    fn list_router_revisions(account_id: AccountId, router_id: RouterId, page: &PageRequest)
        -> Page<RouterRevision>;
    fn put_first_revision(revision: &RouterRevision) -> bool;
    ;
    audited fn create_router(
        router: &Router, revision: &RouterRevision, max: u64,
        completion: Option<&IdempotencyCompletion>, audit: Option<&AuditEvent>
    ) -> () => audit;
    audited fn put_router_draft(
        draft: &RouterDraft, replaces: Option<&ETag>, router_version: u64,
        calendars: &CalendarRefs, completion: Option<&IdempotencyCompletion>,
        audit: Option<&AuditEvent>
    ) -> () => audit;
    audited fn delete_router_draft(
        account_id: AccountId, router_id: RouterId, etag: &ETag, calendars: &CalendarRefs,
        audit: Option<&AuditEvent>
    ) -> () => audit;
    audited fn write_router(write: &RouterWrite) -> () => write.audit.as_ref();
    ;
    /// Answers the router as changed ([`Faults::routers_as`]).
    async fn get_router(&self, account_id: AccountId, router_id: RouterId) -> StoreResult<Option<Router>> {
        self.check(PortMethod::get_router)?;
        let call = self.inner.get_router(account_id, router_id);
        let router = self.observed(PortMethod::get_router, call);
        Ok(self.faults.router_as(router.await?))
    }

    /// Answers the router as changed ([`Faults::routers_as`]).
    async fn find_router(&self, router_id: RouterId) -> StoreResult<Option<Router>> {
        self.check(PortMethod::find_router)?;
        let router = self.observed(PortMethod::find_router, self.inner.find_router(router_id));
        Ok(self.faults.router_as(router.await?))
    }
}

delegate_store! {
    impl DispatchStore;
    fn rotation_state(router_id: RouterId) -> RotationState;
    fn assignment_count(account_id: AccountId, month: &str) -> u64;
    fn record_dispatch(
        entry: &DispatchEntry, snapshot: Option<&DecisionSnapshot>,
        deduplication_id: Option<&MessageDeduplicationId>,
        completion: Option<&IdempotencyCompletion>, due: &DueChanges
    ) -> ();
    fn list_router_dispatches(account_id: AccountId, router_id: RouterId, page: &PageRequest)
        -> Page<DispatchEntry>;
    fn list_record_dispatches(
        account_id: AccountId, object_type: ObjectType, record_id: RecordId, page: &PageRequest
    ) -> Page<DispatchEntry>;
    fn get_dispatch(key: &DispatchEntryKey) -> Option<DispatchEntry>;
    fn get_explained_dispatch(account_id: AccountId, router_id: RouterId, entry_id: uuid::Uuid)
        -> Option<ExplainedEntry>;
    fn update_crm_sync(
        key: &DispatchEntryKey, from: &CrmSyncState, to: &CrmSyncState, due: &DueChanges
    ) -> ();
    fn end_sla_check(key: &DispatchEntryKey, to: SlaStatus, due: &DueChanges) -> ();
    fn tally_assignments(
        account_id: AccountId, router_id: RouterId, from: DateTime<Utc>, to: DateTime<Utc>
    ) -> Vec<AssignmentTally>;
    fn deduplication_id_used(id: &MessageDeduplicationId) -> bool;
    fn commit_assignment(write: &AssignmentWrite) -> ();
    ;
    ;
    /// Counted in [`Faults::volumes`].
    async fn list_router_dispatches_between(
        &self, account_id: AccountId, router_id: RouterId, from: DateTime<Utc>, to: DateTime<Utc>,
        after: Option<&Position>, limit: usize,
    ) -> StoreResult<Page<DispatchEntry>> {
        self.check(PortMethod::list_router_dispatches_between)?;
        let call = self
            .inner
            .list_router_dispatches_between(account_id, router_id, from, to, after, limit);
        let listed = self.observed(PortMethod::list_router_dispatches_between, call).await?;
        self.faults
            .volumes
            .note(PortMethod::list_router_dispatches_between, listed.items.len());
        Ok(listed)
    }

    /// Answers the router as changed ([`Faults::routers_as`]).
    async fn first_round_reads(&self, reads: &FirstReads) -> StoreResult<FirstFound> {
        self.check(PortMethod::first_round_reads)?;
        if self.faults.rounds.counting.load(Ordering::SeqCst) {
            self.faults
                .first_reads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(reads.clone());
        }
        let call = self.inner.first_round_reads(reads);
        let found = self.observed(PortMethod::first_round_reads, call);
        let mut found = found.await?;
        found.router = self.faults.router_as(found.router);
        Ok(found)
    }
}

delegate_store! {
    impl DueStore;
    fn get_due(id: &DueId) -> Option<DueItem>;
    fn claim_due(id: &DueId, attempt: u32, lease: &Lease, now: DateTime<Utc>) -> Option<DueItem>;
    fn settle_due(settlement: &Settlement) -> ();
    fn park_due(parking: &Parking) -> ();
    fn parked_due_items(limit: usize) -> Vec<DueItem>;
    fn rearm_due(item: &DueItem, resume_at: DateTime<Utc>, now: DateTime<Utc>) -> bool;
    fn overdue_due_items(now: DateTime<Utc>, limit: usize) -> Vec<DueItem>;
    ;
    ;
}

delegate_store! {
    impl IdempotencyStore;
    fn claim_idempotency_key(claim: &IdempotencyClaim) -> ClaimOutcome;
    fn complete_idempotency_key(completion: &IdempotencyCompletion) -> ();
    fn amend_idempotency_response(completion: &IdempotencyCompletion) -> ();
    fn release_idempotency_key(claim: &IdempotencyClaim) -> ();
    ;
    ;
}

delegate_store! {
    impl WebhookStore;
    fn list_webhooks(account_id: AccountId, page: &PageRequest) -> Page<WebhookSubscription>;
    fn get_webhook(account_id: AccountId, id: WebhookId) -> Option<WebhookSubscription>;
    fn get_delivery(subscription_id: WebhookId, delivery_id: &str) -> Option<WebhookDelivery>;
    fn list_deliveries(subscription_id: WebhookId, page: &PageRequest) -> Page<WebhookDelivery>;
    fn record_delivery(
        delivery: &WebhookDelivery, attempts: u32, health: Option<&SubscriptionHealth>,
        due: &DueChanges
    ) -> ();
    ;
    audited fn create_webhook(
        subscription: &WebhookSubscription, max: u64, audit: Option<&AuditEvent>
    ) -> () => audit;
    audited fn update_webhook(
        subscription: &WebhookSubscription, version: u64, reset_health: bool, due: &DueChanges,
        audit: Option<&AuditEvent>
    ) -> () => audit;
    audited fn delete_webhook(
        account_id: AccountId, id: WebhookId, version: u64, audit: Option<&AuditEvent>
    ) -> bool => audit;
    ;
}

delegate_store! {
    impl CalendarStore;
    fn list_holiday_calendars(account_id: AccountId, page: &PageRequest) -> Page<HolidayCalendar>;
    fn get_holiday_calendar(account_id: AccountId, id: HolidayCalendarId)
        -> Option<HolidayCalendar>;
    fn get_holiday_calendars(account_id: AccountId, ids: &[HolidayCalendarId])
        -> Vec<HolidayCalendar>;
    ;
    audited fn create_holiday_calendar(
        calendar: &HolidayCalendar, max: u64, audit: Option<&AuditEvent>
    ) -> () => audit;
    audited fn update_holiday_calendar(
        calendar: &HolidayCalendar, version: u64, audit: Option<&AuditEvent>
    ) -> () => audit;
    audited fn delete_holiday_calendar(
        account_id: AccountId, id: HolidayCalendarId, version: u64, audit: Option<&AuditEvent>
    ) -> CalendarDeletion => audit;
    ;
}

delegate_store! {
    impl ProvisionStore;
    fn provision(plan: &ProvisionPlan) -> ProvisionReport;
    fn replace_client(client: &ApiClient, expected_generation: u64) -> bool;
    ;
    ;
}

delegate_store! {
    impl AuthAttemptStore;
    fn failed_authentications(key: &AttemptKey, now: DateTime<Utc>) -> Option<FailureWindow>;
    fn count_failed_authentication(
        key: &AttemptKey, now: DateTime<Utc>, window: chrono::Duration
    ) -> FailureWindow;
    ;
    ;
}

delegate_store! {
    impl PaceStore;
    fn take_turn(key: &PaceKey, ask: &TurnAsk) -> Turn;
    fn hold_pace(key: &PaceKey, tat_us: i64) -> ();
    fn set_usage_hold(key: &PaceKey, hold: Option<&UsageHold>) -> ();
    ;
    ;
}

delegate_store! {
    impl AuditStore;
    fn list_audit_events(account_id: AccountId, filter: &AuditFilter, page: &PageRequest)
        -> Page<AuditEvent>;
    fn get_audit_event(account_id: AccountId, id: uuid::Uuid) -> Option<AuditEvent>;
    ;
    audited fn append_audit_event(
        event: &AuditEvent, completion: Option<&IdempotencyCompletion>
    ) -> () => Some(event);
    ;
}
