//! The embedded store: everything in process memory behind one lock.
//!
//! Each port method runs under a single mutex, so every multi-item write is atomic and
//! conditional exactly as the DynamoDB adapter's transactions are: uniqueness guards, version
//! checks and provisioning all succeed or change nothing.
//!
//! Lists are ordered indexes kept up to date by every write, as DynamoDB's GSI1 (active items)
//! and GSI2 (all items) are: one `BTreeMap` from list position to id per list and filter. A page
//! after a position costs O(log n + limit), a page at an offset O(offset + limit) (offset is at
//! most 10,000); no request copies or sorts a whole collection.

use super::tally::Span;
use super::{
    delivery_position, dispatch_position, member_position, record_position, revision_position,
    router_position, webhook_position, Listed, Page, PageStart, Position, ProvisionReport, Store,
    StoreError, StoreResult, UniqueKey,
};
use crate::fields::definition::FieldDefinition;
use crate::idempotency::{
    ClaimOutcome, Fingerprint, IdempotencyClaim, IdempotencyCompletion, StoredResponse,
};
use crate::model::account::{Account, ApiClient, Role, Team};
use crate::model::dispatch::{
    AssignmentTally, AssignmentWrite, CrmSyncState, DispatchEntry, DispatchEntryKey, RotationState,
};
use crate::model::due::{DueChanges, DueId, DueItem, Lease, Parking, Settlement};
use crate::model::holiday_calendar::{CalendarDeletion, CalendarRefs, HolidayCalendar};
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::provision::ProvisionPlan;
use crate::model::record::Record;
use crate::model::router::{Router, RouterDraft, RouterRevision};
use crate::model::router_write::{DraftChange, RouterWrite};
use crate::model::sla::SlaStatus;
use crate::model::webhook::{
    HealthChange, SubscriptionHealth, WebhookDelivery, WebhookSubscription,
};
use crate::types::etag::ETag;
use crate::types::ids::{
    AccountId, HolidayCalendarId, MemberId, RecordId, RoleId, RouterId, TeamId, WebhookId,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

/// The maps keyed by ids, hashed with foldhash rather than SipHash: every request looks up one
/// or two of them (docs/performance.md). Their keys are UUIDs this process generated or the
/// operator provisioned; a client's id is only ever looked up, never inserted. The maps whose
/// keys a client chooses (unique-key values, `Idempotency-Key`s) keep SipHash.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A router's stats counters: (span, bucket start) -> assignments per member and reason.
type Counters = BTreeMap<(Span, DateTime<Utc>), Vec<AssignmentTally>>;

/// Days an idempotency marker is kept (as the DynamoDB adapter's TTL: longer than SQS's 14-day
/// retention).
const MARKER_LIFETIME_DAYS: i64 = 15;

/// Identity of a uniqueness guard: account, type, key name, canonical value.
type GuardKey = (AccountId, ObjectType, String, String);

/// Identity of an `Idempotency-Key`: account, route, key.
type RequestKey = (AccountId, String, String);

/// A claimed `Idempotency-Key` (BEHAVIOR 10): in flight until `response` is set.
#[derive(Debug, Clone)]
struct IdempotentRequest {
    fingerprint: Fingerprint,
    lease_id: String,
    lease_until: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    response: Option<StoredResponse>,
}

fn request_key(claim: &IdempotencyClaim) -> RequestKey {
    (
        claim.account_id,
        claim.route.clone(),
        claim.key.as_str().to_string(),
    )
}

/// The ordered indexes of one list: its active items, and all of them.
#[derive(Debug)]
struct Listing<Id> {
    active: BTreeMap<Position, Id>,
    all: BTreeMap<Position, Id>,
}

impl<Id> Default for Listing<Id> {
    fn default() -> Self {
        Self {
            active: BTreeMap::new(),
            all: BTreeMap::new(),
        }
    }
}

impl<Id: Copy> Listing<Id> {
    /// Indexes an item at `position`, moving it from `old` (its previous position) if it moved.
    fn put(&mut self, old: Option<Position>, position: Position, active: bool, id: Id) {
        if let Some(old) = old.filter(|o| *o != position) {
            self.active.remove(&old);
            self.all.remove(&old);
        }
        if active {
            self.active.insert(position.clone(), id);
        } else {
            self.active.remove(&position);
        }
        self.all.insert(position, id);
    }

    /// The ids of `page` plus one look-ahead entry, with their positions.
    fn page(&self, page: &Page) -> Vec<(Position, Id)> {
        let index = if page.include_archived {
            &self.all
        } else {
            &self.active
        };
        let wanted = page.limit.saturating_add(1);
        let entries: Box<dyn Iterator<Item = (&Position, &Id)>> = match &page.start {
            PageStart::Offset(offset) => Box::new(index.iter().skip(*offset)),
            PageStart::After(after) => {
                Box::new(index.range((Bound::Excluded(after), Bound::Unbounded)))
            }
        };
        entries
            .take(wanted)
            .map(|(p, id)| (p.clone(), *id))
            .collect()
    }
}

/// Reads `page` of `listing` (absent: empty) and resolves the ids with `get`.
fn read_page<'s, Id: Copy, T: Clone + 's>(
    listing: Option<&'s Listing<Id>>, page: &Page, get: impl Fn(&Id) -> Option<&'s T>,
) -> Listed<T> {
    let entries = listing.map(|l| l.page(page)).unwrap_or_default();
    let listed = Listed::from_lookahead(entries, page.limit, |(p, _)| p.clone());
    Listed::new(
        listed
            .items
            .iter()
            .filter_map(|(_, id)| get(id).cloned())
            .collect(),
        listed.next,
    )
}

/// `page` of a newest-first list kept in ascending `index`, plus one look-ahead entry: an offset
/// counts from the newest, a position starts at the entry just older than it.
fn newest_first(index: Option<&BTreeMap<Position, uuid::Uuid>>, page: &Page) -> Vec<uuid::Uuid> {
    let Some(index) = index else {
        return Vec::new();
    };
    let wanted = page.limit.saturating_add(1);
    let entries: Box<dyn Iterator<Item = &uuid::Uuid>> = match &page.start {
        PageStart::Offset(offset) => Box::new(index.values().rev().skip(*offset)),
        PageStart::After(after) => Box::new(index.range(..after.clone()).rev().map(|(_, id)| id)),
    };
    entries.take(wanted).copied().collect()
}

#[derive(Debug, Default)]
struct State {
    accounts: FastMap<AccountId, Account>,
    clients: HashMap<String, ApiClient>,
    roles: FastMap<RoleId, Role>,
    members: FastMap<MemberId, Member>,
    teams: FastMap<TeamId, Team>,
    field_definitions: FastMap<AccountId, Vec<FieldDefinition>>,
    routers: FastMap<RouterId, Router>,
    /// Shared, so a read hands out a reference count ([`Store::get_record_shared`]).
    records: FastMap<RecordId, Arc<Record>>,
    /// Guard -> id of the active record holding the key.
    guards: HashMap<GuardKey, RecordId>,
    rotation: FastMap<RouterId, RotationState>,
    /// (account, `YYYY-MM`) -> assignments.
    monthly: HashMap<(AccountId, String), u64>,
    /// History entries by id (BEHAVIOR 8).
    dispatches: FastMap<uuid::Uuid, DispatchEntry>,
    /// Router -> its entries by position (read newest first).
    router_dispatches: FastMap<RouterId, BTreeMap<Position, uuid::Uuid>>,
    /// (account, type, record) -> the record's entries by position (read newest first).
    record_dispatches: FastMap<(AccountId, ObjectType, RecordId), BTreeMap<Position, uuid::Uuid>>,
    /// Queue message ids of the work they did (idempotency markers) -> when they expire.
    idempotency_keys: HashMap<String, DateTime<Utc>>,
    /// Markers in the order they expire, for purging.
    marker_expiry: VecDeque<(DateTime<Utc>, String)>,
    /// History entries by expiry (DynamoDB's TTL attribute `expires_at`), for purging.
    dispatch_expiry: BTreeSet<(DateTime<Utc>, uuid::Uuid)>,
    /// (account, router) -> (span, bucket start) -> assignments per member and reason: the
    /// stats counters ([`super::tally`]), kept with the entries they count (purged entries
    /// leave them).
    tallies: FastMap<(AccountId, RouterId), Counters>,
    /// `Idempotency-Key` claims and responses.
    requests: HashMap<RequestKey, IdempotentRequest>,
    /// Claims in the order they expire (each kept the same 24 h), for purging.
    request_expiry: VecDeque<(DateTime<Utc>, RequestKey)>,
    /// (account, type) -> the records' list.
    record_lists: FastMap<(AccountId, ObjectType), Listing<RecordId>>,
    /// Account -> the members' list.
    member_lists: FastMap<AccountId, Listing<MemberId>>,
    /// Account -> the routers' list.
    router_lists: FastMap<AccountId, Listing<RouterId>>,
    /// Due items (DESIGN "Work that happens later") by id.
    due: FastMap<DueId, DueItem>,
    /// The due-work index: (resume time, id) of every due item.
    due_index: BTreeSet<(DateTime<Utc>, DueId)>,
    /// Parked due items by when they were parked.
    parked_index: BTreeSet<(DateTime<Utc>, DueId)>,
    /// Webhook subscriptions by account, then id (creation order).
    webhooks: BTreeMap<(AccountId, WebhookId), WebhookSubscription>,
    /// Webhook deliveries by subscription, then id (creation order).
    deliveries: BTreeMap<(WebhookId, String), WebhookDelivery>,
    /// Router revisions (BEHAVIOR 15) by router, then number.
    revisions: FastMap<RouterId, BTreeMap<u64, RouterRevision>>,
    /// Router drafts by router.
    drafts: FastMap<RouterId, RouterDraft>,
    /// Holiday calendars (BEHAVIOR 17) by account, then id (creation order), each with the
    /// number of things that name it.
    calendars: BTreeMap<(AccountId, HolidayCalendarId), (HolidayCalendar, i64)>,
}

impl State {
    /// The account's holiday calendars, oldest first.
    fn account_calendars(&self, account: AccountId) -> impl Iterator<Item = &HolidayCalendar> {
        self.calendars
            .range((account, HolidayCalendarId::from_uuid(uuid::Uuid::nil()))..)
            .take_while(move |((a, _), _)| *a == account)
            .map(|(_, (c, _))| c)
    }

    /// Checks that every calendar gaining a reference in `refs` is in `account`.
    fn check_calendar_refs(&self, account: AccountId, refs: &CalendarRefs) -> StoreResult<()> {
        if refs
            .gaining()
            .all(|id| self.calendars.contains_key(&(account, id)))
        {
            Ok(())
        } else {
            Err(StoreError::UnknownHolidayCalendar)
        }
    }

    /// Applies `refs` ([`Self::check_calendar_refs`] checked).
    fn apply_calendar_refs(&mut self, account: AccountId, refs: &CalendarRefs) {
        for (id, delta) in refs.changes() {
            if let Some((_, count)) = self.calendars.get_mut(&(account, id)) {
                *count += delta;
            }
        }
    }

    /// Forgets the `Idempotency-Key` claims expired at `now` (amortized O(1) per claim).
    fn purge_requests(&mut self, now: DateTime<Utc>) {
        while let Some((at, key)) = self.request_expiry.front() {
            if *at > now {
                break;
            }
            if self.requests.get(key).is_some_and(|r| r.expires_at <= now) {
                self.requests.remove(key);
            }
            self.request_expiry.pop_front();
        }
    }

    /// Whether `claim` still holds its key (its lease id is the stored one, not yet completed).
    fn holds_lease(&self, claim: &IdempotencyClaim) -> bool {
        self.requests
            .get(&request_key(claim))
            .is_some_and(|r| r.lease_id == claim.lease_id && r.response.is_none())
    }

    /// Stores the response of a claim this request holds ([`Self::holds_lease`] checked).
    fn complete_request(&mut self, completion: &IdempotencyCompletion) {
        if let Some(r) = self.requests.get_mut(&request_key(&completion.claim)) {
            r.response = Some(completion.response.clone());
        }
    }

    /// Whether the due item `changes` settles is held by the settlement's lease (checked
    /// first, as the DynamoDB adapter reports a lost lease before anything else).
    ///
    /// Errors: [`StoreError::LeaseLost`].
    fn check_due_lease(&self, changes: &DueChanges) -> StoreResult<()> {
        if let Some(settle) = &changes.settle {
            let held = self.due.get(&settle.id).is_some_and(|item| {
                item.lease
                    .as_ref()
                    .is_some_and(|lease| lease.id == settle.lease_id)
            });
            if !held {
                return Err(StoreError::LeaseLost);
            }
        }
        Ok(())
    }

    /// Whether the entry `key` has an SLA check that is `pending`.
    fn check_pending(&self, key: &DispatchEntryKey) -> bool {
        self.dispatches
            .get(&key.id)
            .filter(|e| e.router_id == key.router_id && e.dispatched_at == key.dispatched_at)
            .and_then(|e| e.sla.as_ref())
            .is_some_and(|sla| sla.status == SlaStatus::Pending)
    }

    /// Sets the status of the entry `key`'s SLA check (its check is pending).
    fn end_check(&mut self, key: &DispatchEntryKey, to: SlaStatus) {
        if let Some(sla) = self
            .dispatches
            .get_mut(&key.id)
            .and_then(|e| e.sla.as_mut())
        {
            sla.status = to;
        }
    }

    /// Whether every new due item of `changes` is absent (checked with the other conditions).
    ///
    /// Errors: [`StoreError::Conflict`].
    fn check_due_puts(&self, changes: &DueChanges) -> StoreResult<()> {
        if changes
            .put
            .iter()
            .any(|item| self.due.contains_key(&item.id))
        {
            return Err(StoreError::Conflict);
        }
        Ok(())
    }

    /// Applies `changes` (both checks passed).
    fn apply_due(&mut self, changes: &DueChanges) {
        if let Some(settle) = &changes.settle {
            self.settle(settle);
        }
        for item in &changes.put {
            self.put_due(item.clone());
        }
        for delivery in &changes.deliveries {
            self.deliveries.insert(
                (delivery.subscription_id, delivery.id.clone()),
                delivery.clone(),
            );
        }
    }

    /// Stores `item` and indexes it by its resume time (a parked item by when it was parked, in
    /// an index of its own that the sweeper does not read).
    fn put_due(&mut self, item: DueItem) {
        if let Some(old) = self.due.get(&item.id) {
            self.due_index.remove(&(old.resume_at, old.id.clone()));
            if let Some(at) = old.parked_at {
                self.parked_index.remove(&(at, old.id.clone()));
            }
        }
        match item.parked_at {
            Some(at) => self.parked_index.insert((at, item.id.clone())),
            None => self.due_index.insert((item.resume_at, item.id.clone())),
        };
        self.due.insert(item.id.clone(), item);
    }

    /// Removes the settled item or moves it to its next attempt, lease released: an attempt
    /// recorded starts its runs again (no error kept); an item left due without one keeps its
    /// runs and the error.
    fn settle(&mut self, settle: &Settlement) {
        let Some(item) = self.due.remove(&settle.id) else {
            return;
        };
        self.due_index.remove(&(item.resume_at, item.id.clone()));
        if let Some(next) = &settle.next {
            let progress = next.error.is_none();
            self.put_due(DueItem {
                due_at: next.due_at,
                attempt: next.attempt,
                resume_at: next.resume_at,
                lease: None,
                runs: if progress { 0 } else { item.runs },
                last_error: next.error.clone(),
                subject: next.subject.clone().unwrap_or(item.subject.clone()),
                ..item
            });
        }
    }

    /// Remembers queue message `key` as used for 15 days from now (as DynamoDB keeps its marker:
    /// longer than SQS keeps a message).
    fn mark_used(&mut self, key: &str) {
        let expires = Utc::now() + chrono::Duration::days(MARKER_LIFETIME_DAYS);
        self.idempotency_keys.insert(key.to_string(), expires);
        self.marker_expiry.push_back((expires, key.to_string()));
    }

    /// Forgets the history entries and the markers expired at `now`, as DynamoDB's TTL deletes
    /// them (there: lazily, up to days late; reads skip expired entries either way), so a
    /// long-running embedded store does not grow without bound.
    fn purge_expired(&mut self, now: DateTime<Utc>) {
        while let Some((at, key)) = self.marker_expiry.front() {
            if *at > now {
                break;
            }
            if self.idempotency_keys.get(key).is_some_and(|e| *e <= now) {
                self.idempotency_keys.remove(key);
            }
            self.marker_expiry.pop_front();
        }
        while let Some((at, id)) = self.dispatch_expiry.first().cloned() {
            if at > now {
                break;
            }
            self.dispatch_expiry.pop_first();
            let Some(entry) = self.dispatches.remove(&id) else {
                continue;
            };
            self.count_assignment(&entry, false);
            let position = dispatch_position(&entry);
            if let Some(index) = self.router_dispatches.get_mut(&entry.router_id) {
                index.remove(&position);
            }
            if let Some(record_id) = entry.record_id() {
                if let Some(index) = self.record_dispatches.get_mut(&(
                    entry.account_id,
                    entry.object_type,
                    record_id,
                )) {
                    index.remove(&position);
                }
            }
        }
    }

    /// Adds an assignment's entry to its day's, hour's and minute's counters, or (`added`
    /// false) takes it away.
    fn count_assignment(&mut self, entry: &DispatchEntry, added: bool) {
        let (true, Some(user), Some(reason)) = (entry.success, &entry.user, entry.reason) else {
            return;
        };
        let buckets = self
            .tallies
            .entry((entry.account_id, entry.router_id))
            .or_default();
        for span in Span::ALL {
            let bucket = (span, span.floor(entry.dispatched_at));
            let tally = buckets.entry(bucket).or_default();
            if added {
                super::tally::add(tally, user, reason, 1);
            } else if let Some(t) = tally
                .iter_mut()
                .find(|t| &t.user == user && t.reason == reason)
            {
                t.count = t.count.saturating_sub(1);
            }
            if tally.iter().all(|t| t.count == 0) {
                buckets.remove(&bucket);
            }
        }
    }

    /// Stores a history entry and indexes it in its router's and its record's history.
    fn put_dispatch(&mut self, entry: DispatchEntry) {
        self.count_assignment(&entry, true);
        self.dispatch_expiry.insert((entry.expires_at, entry.id));
        let position = dispatch_position(&entry);
        self.router_dispatches
            .entry(entry.router_id)
            .or_default()
            .insert(position.clone(), entry.id);
        if let Some(record_id) = entry.record_id() {
            self.record_dispatches
                .entry((entry.account_id, entry.object_type, record_id))
                .or_default()
                .insert(position, entry.id);
        }
        self.dispatches.insert(entry.id, entry);
    }

    /// A newest-first page of entries from `index`.
    fn dispatch_page(
        &self, index: Option<&BTreeMap<Position, uuid::Uuid>>, page: &Page,
    ) -> Listed<DispatchEntry> {
        let entries: Vec<DispatchEntry> = newest_first(index, page)
            .iter()
            .filter_map(|id| self.dispatches.get(id).cloned())
            .collect();
        Listed::from_lookahead(entries, page.limit, dispatch_position)
    }

    /// Stores `record` and indexes it in its list.
    fn put_record(&mut self, record: Record) {
        let old = self.records.get(&record.id).map(|r| record_position(r));
        self.record_lists
            .entry((record.account_id, record.object_type))
            .or_default()
            .put(old, record_position(&record), record.is_active(), record.id);
        self.records.insert(record.id, Arc::new(record));
    }

    /// Stores `member` and indexes it in its list.
    fn put_member(&mut self, member: Member) {
        let old = self.members.get(&member.id).map(member_position);
        self.member_lists.entry(member.account_id).or_default().put(
            old,
            member_position(&member),
            member.is_active(),
            member.id,
        );
        self.members.insert(member.id, member);
    }

    /// The number of non-archived routers of `account_id` (its active list).
    fn active_routers(&self, account_id: AccountId) -> u64 {
        self.router_lists
            .get(&account_id)
            .map_or(0, |l| l.active.len() as u64)
    }

    /// Whether `router_id`'s router is stored at `version`.
    fn router_at(&self, router_id: RouterId, version: u64) -> bool {
        self.routers
            .get(&router_id)
            .is_some_and(|r| r.version == version)
    }

    /// Stores `router` and indexes it in its list.
    fn put_router(&mut self, router: Router) {
        let old = self.routers.get(&router.id).map(router_position);
        self.router_lists.entry(router.account_id).or_default().put(
            old,
            router_position(&router),
            router.archived_at.is_none(),
            router.id,
        );
        self.routers.insert(router.id, router);
    }
}

/// In-process adapter of the [`Store`] port.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The store's full contents as text (a `Debug` dump of every map and index), for tests
    /// that check an operation wrote nothing (BEHAVIOR 9: explain): two snapshots of one store
    /// are equal when nothing was written in between.
    #[cfg(any(test, feature = "test-util"))]
    pub fn snapshot(&self) -> String {
        format!("{:#?}", *self.lock())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied write: every method
        // validates before it mutates. So a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn guard(record: &Record, key: &UniqueKey) -> GuardKey {
    (
        record.account_id,
        record.object_type,
        key.field.clone(),
        key.value.clone(),
    )
}

#[async_trait]
impl Store for MemoryStore {
    async fn get_account(&self, account_id: AccountId) -> StoreResult<Option<Account>> {
        Ok(self.lock().accounts.get(&account_id).cloned())
    }

    async fn get_client(&self, client_id: &str) -> StoreResult<Option<ApiClient>> {
        Ok(self.lock().clients.get(client_id).cloned())
    }

    async fn field_definitions(&self, account_id: AccountId) -> StoreResult<Vec<FieldDefinition>> {
        Ok(self
            .lock()
            .field_definitions
            .get(&account_id)
            .cloned()
            .unwrap_or_default())
    }

    async fn get_record_shared(
        &self, account_id: AccountId, object_type: ObjectType, id: RecordId,
    ) -> StoreResult<Option<Arc<Record>>> {
        Ok(self
            .lock()
            .records
            .get(&id)
            .filter(|r| r.account_id == account_id && r.object_type == object_type)
            .cloned())
    }

    async fn find_record(
        &self, account_id: AccountId, id: RecordId,
    ) -> StoreResult<Option<Record>> {
        Ok(self
            .lock()
            .records
            .get(&id)
            .filter(|r| r.account_id == account_id)
            .map(|r| Record::clone(r)))
    }

    async fn list_records(
        &self, account_id: AccountId, object_type: ObjectType, page: &Page,
    ) -> StoreResult<Listed<Record>> {
        let state = self.lock();
        Ok(read_page(
            state.record_lists.get(&(account_id, object_type)),
            page,
            |id| state.records.get(id).map(|r| &**r),
        ))
    }

    async fn create_record_completing(
        &self, record: &Record, unique_keys: &[UniqueKey],
        completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if completion.is_some_and(|c| !state.holds_lease(&c.claim)) {
            return Err(StoreError::LeaseLost);
        }
        if let Some(taken) = unique_keys
            .iter()
            .find(|k| state.guards.contains_key(&guard(record, k)))
        {
            return Err(StoreError::Duplicate {
                field: taken.field.clone(),
            });
        }
        if state.records.contains_key(&record.id) {
            return Err(StoreError::Conflict);
        }
        for key in unique_keys {
            state.guards.insert(guard(record, key), record.id);
        }
        state.put_record(record.clone());
        if let Some(c) = completion {
            state.complete_request(c);
        }
        Ok(())
    }

    async fn update_record(
        &self, record: &Record, expected_version: u64, claimed: &[UniqueKey],
        released: &[UniqueKey],
    ) -> StoreResult<()> {
        let mut state = self.lock();
        match state.records.get(&record.id) {
            Some(stored)
                if stored.version == expected_version
                    && stored.is_active()
                    && stored.account_id == record.account_id
                    && stored.object_type == record.object_type => {}
            _ => return Err(StoreError::Conflict),
        }
        let held_by_other = |k: &&UniqueKey| {
            state
                .guards
                .get(&guard(record, k))
                .is_some_and(|holder| *holder != record.id)
        };
        if let Some(taken) = claimed.iter().find(held_by_other) {
            return Err(StoreError::Duplicate {
                field: taken.field.clone(),
            });
        }
        for key in released {
            let g = guard(record, key);
            if state.guards.get(&g) == Some(&record.id) {
                state.guards.remove(&g);
            }
        }
        for key in claimed {
            state.guards.insert(guard(record, key), record.id);
        }
        state.put_record(record.clone());
        Ok(())
    }

    async fn list_members(
        &self, account_id: AccountId, page: &Page,
    ) -> StoreResult<Listed<Member>> {
        let state = self.lock();
        Ok(read_page(state.member_lists.get(&account_id), page, |id| {
            state.members.get(id)
        }))
    }

    async fn get_member(
        &self, account_id: AccountId, member_id: MemberId,
    ) -> StoreResult<Option<Member>> {
        Ok(self
            .lock()
            .members
            .get(&member_id)
            .filter(|m| m.account_id == account_id)
            .cloned())
    }

    async fn get_records(
        &self, account_id: AccountId, ids: &[RecordId],
    ) -> StoreResult<Vec<Record>> {
        let state = self.lock();
        let mut seen = std::collections::HashSet::new();
        Ok(ids
            .iter()
            .filter(|id| seen.insert(**id))
            .filter_map(|id| state.records.get(id))
            .filter(|r| r.account_id == account_id)
            .map(|r| Record::clone(r))
            .collect())
    }

    async fn get_members(
        &self, account_id: AccountId, ids: &[MemberId],
    ) -> StoreResult<Vec<Member>> {
        let state = self.lock();
        let mut seen = std::collections::HashSet::new();
        Ok(ids
            .iter()
            .filter(|id| seen.insert(**id))
            .filter_map(|id| state.members.get(id))
            .filter(|m| m.account_id == account_id)
            .cloned()
            .collect())
    }

    async fn find_member_by_email(
        &self, account_id: AccountId, email: &str,
    ) -> StoreResult<Option<Member>> {
        let wanted = email.to_lowercase();
        Ok(self
            .lock()
            .members
            .values()
            .find(|m| m.account_id == account_id && m.email.as_str() == wanted)
            .cloned())
    }

    async fn update_member(
        &self, member: &Member, expected_version: u64, calendars: &CalendarRefs,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        match state.members.get(&member.id) {
            Some(stored)
                if stored.version == expected_version
                    && stored.is_active()
                    && stored.account_id == member.account_id => {}
            _ => return Err(StoreError::Conflict),
        }
        state.check_calendar_refs(member.account_id, calendars)?;
        state.apply_calendar_refs(member.account_id, calendars);
        state.put_member(member.clone());
        Ok(())
    }

    async fn list_roles(&self, account_id: AccountId) -> StoreResult<Vec<Role>> {
        let state = self.lock();
        Ok(state
            .roles
            .values()
            .filter(|r| r.account_id == account_id)
            .cloned()
            .collect())
    }

    async fn list_teams(&self, account_id: AccountId) -> StoreResult<Vec<Team>> {
        let state = self.lock();
        let mut teams: Vec<Team> = state
            .teams
            .values()
            .filter(|t| t.account_id == account_id)
            .cloned()
            .collect();
        teams.sort_by_key(|t| (t.created_at, t.id));
        Ok(teams)
    }

    async fn list_routers(
        &self, account_id: AccountId, page: &Page,
    ) -> StoreResult<Listed<Router>> {
        let state = self.lock();
        Ok(read_page(state.router_lists.get(&account_id), page, |id| {
            state.routers.get(id)
        }))
    }

    async fn get_router(
        &self, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<Router>> {
        Ok(self
            .lock()
            .routers
            .get(&router_id)
            .filter(|r| r.account_id == account_id)
            .cloned())
    }

    async fn find_router(&self, router_id: RouterId) -> StoreResult<Option<Router>> {
        Ok(self.lock().routers.get(&router_id).cloned())
    }

    async fn find_by_unique_key(
        &self, account_id: AccountId, object_type: ObjectType, key: &UniqueKey,
    ) -> StoreResult<Option<Record>> {
        let state = self.lock();
        let guard = (
            account_id,
            object_type,
            key.field.clone(),
            key.value.clone(),
        );
        Ok(state
            .guards
            .get(&guard)
            .and_then(|id| state.records.get(id))
            .map(|r| Record::clone(r)))
    }

    async fn rotation_state(&self, router_id: RouterId) -> StoreResult<RotationState> {
        Ok(self
            .lock()
            .rotation
            .get(&router_id)
            .cloned()
            .unwrap_or_default())
    }

    async fn assignment_count(&self, account_id: AccountId, month: &str) -> StoreResult<u64> {
        Ok(self
            .lock()
            .monthly
            .get(&(account_id, month.to_string()))
            .copied()
            .unwrap_or(0))
    }

    async fn record_dispatch(
        &self, entry: &DispatchEntry, idempotency_key: Option<&str>,
        completion: Option<&IdempotencyCompletion>, due: &DueChanges,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if completion.is_some_and(|c| !state.holds_lease(&c.claim)) {
            return Err(StoreError::LeaseLost);
        }
        state.check_due_lease(due)?;
        state.purge_expired(Utc::now());
        if idempotency_key.is_some_and(|key| state.idempotency_keys.contains_key(key)) {
            return Err(StoreError::AlreadyApplied);
        }
        state.check_due_puts(due)?;
        if let Some(key) = idempotency_key {
            state.mark_used(key);
        }
        state.put_dispatch(entry.clone());
        if let Some(c) = completion {
            state.complete_request(c);
        }
        state.apply_due(due);
        Ok(())
    }

    async fn list_router_dispatches(
        &self, account_id: AccountId, router_id: RouterId, page: &Page,
    ) -> StoreResult<Listed<DispatchEntry>> {
        let state = self.lock();
        let owned = state
            .routers
            .get(&router_id)
            .is_some_and(|r| r.account_id == account_id);
        let index = state.router_dispatches.get(&router_id).filter(|_| owned);
        Ok(state.dispatch_page(index, page))
    }

    async fn list_router_dispatches_between(
        &self, account_id: AccountId, router_id: RouterId, from: DateTime<Utc>, to: DateTime<Utc>,
        after: Option<&Position>, limit: usize,
    ) -> StoreResult<Listed<DispatchEntry>> {
        let state = self.lock();
        let Some(index) = state.router_dispatches.get(&router_id) else {
            return Ok(Listed::new(Vec::new(), None));
        };
        // `<at>#<nil id>` sorts before every entry at `at` (ids are never nil): [from, to).
        let low = Position::new(super::keys::dispatch_sort_key(from, uuid::Uuid::nil()));
        let high = Position::new(super::keys::dispatch_sort_key(to, uuid::Uuid::nil()));
        use std::ops::Bound;
        let start = match after {
            Some(after) if *after >= low => Bound::Excluded(after.clone()),
            _ => Bound::Included(low),
        };
        let empty = match &start {
            Bound::Excluded(p) | Bound::Included(p) => *p >= high,
            Bound::Unbounded => false,
        };
        if empty {
            return Ok(Listed::new(Vec::new(), None));
        }
        let entries: Vec<DispatchEntry> = index
            .range((start, Bound::Excluded(high)))
            .filter_map(|(_, id)| state.dispatches.get(id))
            .filter(|e| e.account_id == account_id)
            .take(limit.saturating_add(1))
            .cloned()
            .collect();
        Ok(Listed::from_lookahead(entries, limit, dispatch_position))
    }

    async fn list_record_dispatches(
        &self, account_id: AccountId, object_type: ObjectType, record_id: RecordId, page: &Page,
    ) -> StoreResult<Listed<DispatchEntry>> {
        let state = self.lock();
        let index = state
            .record_dispatches
            .get(&(account_id, object_type, record_id));
        Ok(state.dispatch_page(index, page))
    }

    async fn get_dispatch(&self, key: &DispatchEntryKey) -> StoreResult<Option<DispatchEntry>> {
        Ok(self
            .lock()
            .dispatches
            .get(&key.id)
            .filter(|e| e.router_id == key.router_id && e.dispatched_at == key.dispatched_at)
            .cloned())
    }

    async fn update_crm_sync(
        &self, key: &DispatchEntryKey, from: &CrmSyncState, to: &CrmSyncState, due: &DueChanges,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        state.check_due_lease(due)?;
        let expected = state
            .dispatches
            .get(&key.id)
            .filter(|e| e.router_id == key.router_id && e.dispatched_at == key.dispatched_at)
            .and_then(|e| e.crm_sync.as_ref())
            .is_some_and(|stored| {
                !from.status.is_final()
                    && stored.status == from.status
                    && stored.attempts == from.attempts
            });
        if !expected {
            return Err(StoreError::Conflict);
        }
        state.check_due_puts(due)?;
        if let Some(entry) = state.dispatches.get_mut(&key.id) {
            entry.crm_sync = Some(to.clone());
        }
        state.apply_due(due);
        Ok(())
    }

    async fn end_sla_check(
        &self, key: &DispatchEntryKey, to: SlaStatus, due: &DueChanges,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        state.check_due_lease(due)?;
        if !state.check_pending(key) {
            return Err(StoreError::Conflict);
        }
        state.check_due_puts(due)?;
        state.end_check(key, to);
        state.apply_due(due);
        Ok(())
    }

    async fn get_due(&self, id: &DueId) -> StoreResult<Option<DueItem>> {
        Ok(self.lock().due.get(id).cloned())
    }

    async fn claim_due(
        &self, id: &DueId, attempt: u32, lease: &Lease, now: DateTime<Utc>,
    ) -> StoreResult<Option<DueItem>> {
        let mut state = self.lock();
        let Some(item) = state.due.get(id).cloned() else {
            return Ok(None);
        };
        if item.lease.as_ref().is_some_and(|held| held.id == lease.id) {
            return Ok(Some(item));
        }
        if item.attempt != attempt || item.leased_at(now) || item.parked_at.is_some() {
            return Ok(None);
        }
        let claimed = DueItem {
            lease: Some(lease.clone()),
            resume_at: lease.until,
            runs: item.runs + 1,
            ..item
        };
        state.put_due(claimed.clone());
        Ok(Some(claimed))
    }

    async fn settle_due(&self, settlement: &Settlement) -> StoreResult<()> {
        let mut state = self.lock();
        let changes = DueChanges::settling(settlement.clone());
        state.check_due_lease(&changes)?;
        state.apply_due(&changes);
        Ok(())
    }

    async fn park_due(&self, parking: &Parking) -> StoreResult<()> {
        let mut state = self.lock();
        let item = state
            .due
            .get(&parking.id)
            .filter(|i| i.lease.as_ref().is_some_and(|l| l.id == parking.lease_id))
            .cloned()
            .ok_or(StoreError::LeaseLost)?;
        state.due_index.remove(&(item.resume_at, item.id.clone()));
        state.put_due(DueItem {
            lease: None,
            parked_at: Some(parking.at),
            last_error: Some(parking.error.clone()),
            ..item
        });
        Ok(())
    }

    async fn parked_due_items(&self, limit: usize) -> StoreResult<Vec<DueItem>> {
        let state = self.lock();
        Ok(state
            .parked_index
            .iter()
            .take(limit)
            .filter_map(|(_, id)| state.due.get(id).cloned())
            .collect())
    }

    async fn rearm_due(
        &self, item: &DueItem, resume_at: DateTime<Utc>, now: DateTime<Utc>,
    ) -> StoreResult<bool> {
        let mut state = self.lock();
        let Some(stored) = state
            .due
            .get(&item.id)
            .filter(|s| {
                s.resume_at == item.resume_at && s.attempt == item.attempt && !s.leased_at(now)
            })
            .cloned()
        else {
            return Ok(false);
        };
        state.put_due(DueItem {
            resume_at,
            ..stored
        });
        Ok(true)
    }

    async fn overdue_due_items(
        &self, now: DateTime<Utc>, limit: usize,
    ) -> StoreResult<Vec<DueItem>> {
        let state = self.lock();
        Ok(state
            .due_index
            .iter()
            .take_while(|(resume_at, _)| *resume_at <= now)
            .take(limit)
            .filter_map(|(_, id)| state.due.get(id).cloned())
            .collect())
    }

    async fn tally_assignments(
        &self, account_id: AccountId, router_id: RouterId, from: DateTime<Utc>, to: DateTime<Utc>,
    ) -> StoreResult<Vec<AssignmentTally>> {
        let state = self.lock();
        let mut tally: Vec<AssignmentTally> = Vec::new();
        let parts = super::tally::split(from, to);
        if let Some(buckets) = state.tallies.get(&(account_id, router_id)) {
            for run in &parts.counters {
                let counted = buckets
                    .range((run.span, run.first)..=(run.span, run.last))
                    .flat_map(|(_, t)| t);
                for counted in counted {
                    super::tally::add(&mut tally, &counted.user, counted.reason, counted.count);
                }
            }
        }
        let Some(index) = state.router_dispatches.get(&router_id) else {
            return Ok(tally);
        };
        for (start, end) in parts.edges {
            let low = Position::new(super::keys::dispatch_sort_key(start, uuid::Uuid::nil()));
            let high = Position::new(super::keys::dispatch_sort_key(end, uuid::Uuid::nil()));
            for id in index.range(low..high).map(|(_, id)| id) {
                let Some(entry) = state.dispatches.get(id) else {
                    continue;
                };
                if entry.account_id != account_id || !entry.success {
                    continue;
                }
                if let (Some(user), Some(reason)) = (&entry.user, entry.reason) {
                    super::tally::add(&mut tally, user, reason, 1);
                }
            }
        }
        Ok(tally)
    }

    async fn claim_idempotency_key(&self, claim: &IdempotencyClaim) -> StoreResult<ClaimOutcome> {
        let now = claim.claimed_at;
        let mut state = self.lock();
        state.purge_requests(now);
        let key = request_key(claim);
        if let Some(held) = state.requests.get(&key).filter(|r| r.expires_at > now) {
            match &held.response {
                Some(response) => {
                    return Ok(ClaimOutcome::Completed {
                        fingerprint: held.fingerprint.clone(),
                        response: response.clone(),
                    })
                }
                None if held.lease_until > now => {
                    return Ok(ClaimOutcome::InFlight {
                        fingerprint: held.fingerprint.clone(),
                    })
                }
                None => {} // the lease lapsed: the request that held it crashed
            }
        }
        let expires_at = claim.expires_at();
        state.requests.insert(
            key.clone(),
            IdempotentRequest {
                fingerprint: claim.fingerprint.clone(),
                lease_id: claim.lease_id.clone(),
                lease_until: claim.lease_until(),
                expires_at,
                response: None,
            },
        );
        state.request_expiry.push_back((expires_at, key));
        Ok(ClaimOutcome::Claimed)
    }

    async fn complete_idempotency_key(
        &self, completion: &IdempotencyCompletion,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if !state.holds_lease(&completion.claim) {
            return Err(StoreError::LeaseLost);
        }
        state.complete_request(completion);
        Ok(())
    }

    async fn amend_idempotency_response(
        &self, completion: &IdempotencyCompletion,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        match state.requests.get_mut(&request_key(&completion.claim)) {
            Some(r) if r.lease_id == completion.claim.lease_id && r.response.is_some() => {
                r.response = Some(completion.response.clone());
                Ok(())
            }
            _ => Err(StoreError::LeaseLost),
        }
    }

    async fn release_idempotency_key(&self, claim: &IdempotencyClaim) -> StoreResult<()> {
        let mut state = self.lock();
        if state.holds_lease(claim) {
            state.requests.remove(&request_key(claim));
        }
        Ok(())
    }

    async fn idempotency_key_used(&self, key: &str) -> StoreResult<bool> {
        Ok(self.lock().idempotency_keys.contains_key(key))
    }

    async fn commit_assignment(&self, w: &AssignmentWrite) -> StoreResult<()> {
        let mut state = self.lock();
        state.purge_expired(Utc::now());
        if w.completion
            .as_ref()
            .is_some_and(|c| !state.holds_lease(&c.claim))
        {
            return Err(StoreError::LeaseLost);
        }
        state.check_due_lease(&w.due)?;
        if w.ends_check
            .as_ref()
            .is_some_and(|key| !state.check_pending(key))
        {
            return Err(StoreError::LeaseLost);
        }
        if let Some(key) = &w.idempotency_key {
            if state.idempotency_keys.contains_key(key) {
                return Err(StoreError::AlreadyApplied);
            }
        }
        let record_ok = state
            .records
            .get(&w.record.id)
            .is_some_and(|r| r.version == w.record_version && r.is_active());
        let router_ok = state.router_at(w.entry.router_id, w.router_version);
        let rotation_ok = w.rotation.as_ref().is_none_or(|(router, _, version)| {
            state.rotation.get(router).map_or(0, |r| r.version) == *version
        });
        let member_ok = w.member.as_ref().is_none_or(|(m, version)| {
            state
                .members
                .get(&m.id)
                .is_some_and(|s| s.version == *version && s.is_active())
        });
        let (chosen, chosen_version) = w.chosen;
        let chosen_ok = state.members.get(&chosen).is_some_and(|s| {
            s.version == chosen_version && s.is_active() && s.account_id == w.entry.account_id
        });
        let month_key = (w.entry.account_id, w.month.clone());
        let count = state.monthly.get(&month_key).copied().unwrap_or(0);
        let quota_ok = w.quota.is_none_or(|q| count < q);
        if !(record_ok && router_ok && rotation_ok && member_ok && chosen_ok && quota_ok) {
            return Err(StoreError::Conflict);
        }
        state.check_due_puts(&w.due)?;
        state.put_record(w.record.clone());
        if let Some((router, rotation, _)) = &w.rotation {
            state.rotation.insert(*router, rotation.clone());
        }
        if let Some((member, _)) = &w.member {
            state.put_member(member.clone());
        }
        if w.quota.is_some() {
            state.monthly.insert(month_key, count + 1);
        }
        state.put_dispatch(w.entry.clone());
        if let Some(key) = &w.ends_check {
            state.end_check(key, SlaStatus::Reassigned);
        }
        if let Some(key) = &w.idempotency_key {
            state.mark_used(key);
        }
        if let Some(c) = &w.completion {
            state.complete_request(c);
        }
        state.apply_due(&w.due);
        Ok(())
    }

    async fn create_webhook(
        &self, subscription: &WebhookSubscription, max: u64,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        let account = subscription.account_id;
        let count = state
            .webhooks
            .range((account, WebhookId::from_uuid(uuid::Uuid::nil()))..)
            .take_while(|((a, _), _)| *a == account)
            .count();
        if count as u64 >= max {
            return Err(StoreError::Rejected(format!(
                "the account has {max} subscriptions already"
            )));
        }
        if state.webhooks.contains_key(&(account, subscription.id)) {
            return Err(StoreError::Conflict);
        }
        state
            .webhooks
            .insert((account, subscription.id), subscription.clone());
        Ok(())
    }

    async fn list_webhooks(
        &self, account_id: AccountId, page: &Page,
    ) -> StoreResult<Listed<WebhookSubscription>> {
        let state = self.lock();
        let all = state
            .webhooks
            .range((account_id, WebhookId::from_uuid(uuid::Uuid::nil()))..)
            .take_while(|((a, _), _)| *a == account_id)
            .map(|(_, s)| s);
        let wanted = page.limit.saturating_add(1);
        let items: Vec<WebhookSubscription> = match &page.start {
            PageStart::Offset(offset) => all.skip(*offset).take(wanted).cloned().collect(),
            PageStart::After(after) => all
                .filter(|s| s.id.to_string().as_str() > after.as_str())
                .take(wanted)
                .cloned()
                .collect(),
        };
        Ok(Listed::from_lookahead(items, page.limit, webhook_position))
    }

    async fn get_webhook(
        &self, account_id: AccountId, id: WebhookId,
    ) -> StoreResult<Option<WebhookSubscription>> {
        Ok(self.lock().webhooks.get(&(account_id, id)).cloned())
    }

    async fn update_webhook(
        &self, subscription: &WebhookSubscription, expected_version: u64, reset_health: bool,
        due: &DueChanges,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        let key = (subscription.account_id, subscription.id);
        let failing_since = match state.webhooks.get(&key) {
            Some(stored) if stored.version == expected_version => stored.failing_since,
            _ => return Err(StoreError::Conflict),
        };
        state.check_due_lease(due)?;
        state.check_due_puts(due)?;
        let next = WebhookSubscription {
            failing_since: if reset_health { None } else { failing_since },
            ..subscription.clone()
        };
        state.webhooks.insert(key, next);
        state.apply_due(due);
        Ok(())
    }

    async fn delete_webhook(&self, account_id: AccountId, id: WebhookId) -> StoreResult<bool> {
        Ok(self.lock().webhooks.remove(&(account_id, id)).is_some())
    }

    async fn get_delivery(
        &self, subscription_id: WebhookId, delivery_id: &str,
    ) -> StoreResult<Option<WebhookDelivery>> {
        Ok(self
            .lock()
            .deliveries
            .get(&(subscription_id, delivery_id.to_string()))
            .cloned())
    }

    async fn list_deliveries(
        &self, subscription_id: WebhookId, page: &Page,
    ) -> StoreResult<Listed<WebhookDelivery>> {
        let state = self.lock();
        let newest_first = state
            .deliveries
            .range((subscription_id, String::new())..)
            .take_while(|((s, _), _)| *s == subscription_id)
            .map(|(_, d)| d)
            .collect::<Vec<_>>()
            .into_iter()
            .rev();
        let wanted = page.limit.saturating_add(1);
        let items: Vec<WebhookDelivery> = match &page.start {
            PageStart::Offset(offset) => newest_first.skip(*offset).take(wanted).cloned().collect(),
            PageStart::After(after) => newest_first
                .filter(|d| d.id.as_str() < after.as_str())
                .take(wanted)
                .cloned()
                .collect(),
        };
        Ok(Listed::from_lookahead(items, page.limit, delivery_position))
    }

    async fn record_delivery(
        &self, delivery: &WebhookDelivery, expected_attempts: u32,
        health: Option<&SubscriptionHealth>, due: &DueChanges,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        state.check_due_lease(due)?;
        let key = (delivery.subscription_id, delivery.id.clone());
        if state
            .deliveries
            .get(&key)
            .is_none_or(|d| d.attempts != expected_attempts)
        {
            return Err(StoreError::Conflict);
        }
        let healed = match health {
            Some(h) => {
                let Some(stored) = state.webhooks.get(&(h.account_id, h.subscription_id)) else {
                    return Err(StoreError::Conflict);
                };
                if let HealthChange::DisableFailing { since, .. } = h.change {
                    if stored.failing_since != Some(since) {
                        return Err(StoreError::Conflict);
                    }
                }
                Some(h.change.apply(stored))
            }
            None => None,
        };
        state.check_due_puts(due)?;
        state.deliveries.insert(key, delivery.clone());
        if let Some(next) = healed {
            state.webhooks.insert((next.account_id, next.id), next);
        }
        state.apply_due(due);
        Ok(())
    }

    async fn create_router(
        &self, router: &Router, revision: &RouterRevision, max: u64,
        completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if completion.is_some_and(|c| !state.holds_lease(&c.claim)) {
            return Err(StoreError::LeaseLost);
        }
        if state.active_routers(router.account_id) >= max {
            return Err(StoreError::Rejected(format!(
                "the account has {max} routers already"
            )));
        }
        if state.routers.contains_key(&router.id) {
            return Err(StoreError::Conflict);
        }
        let refs = router.calendar_refs();
        state.check_calendar_refs(router.account_id, &refs)?;
        state.apply_calendar_refs(router.account_id, &refs);
        state.put_router(router.clone());
        state
            .revisions
            .entry(router.id)
            .or_default()
            .insert(revision.revision, revision.clone());
        if let Some(c) = completion {
            state.complete_request(c);
        }
        Ok(())
    }

    async fn get_router_draft(
        &self, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<RouterDraft>> {
        Ok(self
            .lock()
            .drafts
            .get(&router_id)
            .filter(|d| d.account_id == account_id)
            .cloned())
    }

    async fn put_router_draft(
        &self, draft: &RouterDraft, replaces: Option<&ETag>, router_version: u64,
        calendars: &CalendarRefs, completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if completion.is_some_and(|c| !state.holds_lease(&c.claim)) {
            return Err(StoreError::LeaseLost);
        }
        let current = state.drafts.get(&draft.router_id).map(|d| &d.etag);
        if current != replaces || !state.router_at(draft.router_id, router_version) {
            return Err(StoreError::Conflict);
        }
        state.check_calendar_refs(draft.account_id, calendars)?;
        state.apply_calendar_refs(draft.account_id, calendars);
        state.drafts.insert(draft.router_id, draft.clone());
        if let Some(c) = completion {
            state.complete_request(c);
        }
        Ok(())
    }

    async fn delete_router_draft(
        &self, account_id: AccountId, router_id: RouterId, etag: &ETag, calendars: &CalendarRefs,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        match state.drafts.get(&router_id) {
            Some(d) if d.account_id == account_id && &d.etag == etag => {
                state.check_calendar_refs(account_id, calendars)?;
                state.apply_calendar_refs(account_id, calendars);
                state.drafts.remove(&router_id);
                Ok(())
            }
            _ => Err(StoreError::Conflict),
        }
    }

    async fn get_router_revision(
        &self, account_id: AccountId, router_id: RouterId, revision: u64,
    ) -> StoreResult<Option<RouterRevision>> {
        Ok(self
            .lock()
            .revisions
            .get(&router_id)
            .and_then(|r| r.get(&revision))
            .filter(|r| r.account_id == account_id)
            .cloned())
    }

    async fn list_router_revisions(
        &self, account_id: AccountId, router_id: RouterId, page: &Page,
    ) -> StoreResult<Listed<RouterRevision>> {
        let state = self.lock();
        let Some(revisions) = state.revisions.get(&router_id) else {
            return Ok(Listed::new(Vec::new(), None));
        };
        let newest_first = revisions
            .values()
            .rev()
            .filter(|r| r.account_id == account_id);
        let wanted = page.limit.saturating_add(1);
        let items: Vec<RouterRevision> = match &page.start {
            PageStart::Offset(offset) => newest_first.skip(*offset).take(wanted).cloned().collect(),
            PageStart::After(after) => newest_first
                .filter(|r| revision_position(r).as_str() < after.as_str())
                .take(wanted)
                .cloned()
                .collect(),
        };
        Ok(Listed::from_lookahead(items, page.limit, revision_position))
    }

    async fn write_router(&self, w: &RouterWrite) -> StoreResult<()> {
        let mut state = self.lock();
        if w.completion
            .as_ref()
            .is_some_and(|c| !state.holds_lease(&c.claim))
        {
            return Err(StoreError::LeaseLost);
        }
        let router_id = w.router.id;
        let router_ok = state.router_at(router_id, w.expected_version);
        let revision_ok = w.revision.as_ref().is_none_or(|r| {
            state
                .revisions
                .get(&router_id)
                .is_none_or(|stored| !stored.contains_key(&r.revision))
        });
        let draft_ok = match &w.draft {
            DraftChange::Publish(etag) => state
                .drafts
                .get(&router_id)
                .is_some_and(|d| &d.etag == etag),
            DraftChange::Drop(read) => {
                state.drafts.get(&router_id).map(|d| &d.etag) == read.as_ref()
            }
            DraftChange::Keep => true,
        };
        let rotation_ok = w.rotation.as_ref().is_none_or(|(_, version)| {
            state.rotation.get(&router_id).map_or(0, |r| r.version) == *version
        });
        if !(router_ok && revision_ok && draft_ok && rotation_ok) {
            return Err(StoreError::Conflict);
        }
        let account_id = w.router.account_id;
        state.check_calendar_refs(account_id, &w.calendars)?;
        state.apply_calendar_refs(account_id, &w.calendars);
        state.put_router(w.router.clone());
        if let Some(revision) = &w.revision {
            state
                .revisions
                .entry(router_id)
                .or_default()
                .insert(revision.revision, revision.clone());
        }
        if !matches!(w.draft, DraftChange::Keep) {
            state.drafts.remove(&router_id);
        }
        if let Some((rotation, _)) = &w.rotation {
            state.rotation.insert(router_id, rotation.clone());
        }
        if let Some(c) = &w.completion {
            state.complete_request(c);
        }
        Ok(())
    }

    async fn create_holiday_calendar(
        &self, calendar: &HolidayCalendar, max: u64,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        let account = calendar.account_id;
        if state.account_calendars(account).count() as u64 >= max {
            return Err(StoreError::Rejected(format!(
                "the account has {max} holiday calendars already"
            )));
        }
        if state.calendars.contains_key(&(account, calendar.id)) {
            return Err(StoreError::Conflict);
        }
        state
            .calendars
            .insert((account, calendar.id), (calendar.clone(), 0));
        Ok(())
    }

    async fn list_holiday_calendars(
        &self, account_id: AccountId, page: &Page,
    ) -> StoreResult<Listed<HolidayCalendar>> {
        let all = self.lock().account_calendars(account_id).cloned().collect();
        Ok(super::holiday_calendar_page(all, page))
    }

    async fn get_holiday_calendar(
        &self, account_id: AccountId, id: HolidayCalendarId,
    ) -> StoreResult<Option<HolidayCalendar>> {
        Ok(self
            .lock()
            .calendars
            .get(&(account_id, id))
            .map(|(c, _)| c.clone()))
    }

    async fn update_holiday_calendar(
        &self, calendar: &HolidayCalendar, expected_version: u64,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        match state.calendars.get_mut(&(calendar.account_id, calendar.id)) {
            Some((stored, _)) if stored.version == expected_version => {
                *stored = calendar.clone();
                Ok(())
            }
            _ => Err(StoreError::Conflict),
        }
    }

    async fn delete_holiday_calendar(
        &self, account_id: AccountId, id: HolidayCalendarId,
    ) -> StoreResult<CalendarDeletion> {
        let mut state = self.lock();
        Ok(match state.calendars.get(&(account_id, id)) {
            None => CalendarDeletion::NotFound,
            Some((_, references)) if *references > 0 => CalendarDeletion::InUse,
            Some(_) => {
                state.calendars.remove(&(account_id, id));
                CalendarDeletion::Deleted
            }
        })
    }

    async fn provision(&self, plan: &ProvisionPlan) -> StoreResult<ProvisionReport> {
        let mut state = self.lock();
        // Check first, write after: nothing is written when any record's key is taken.
        for account in &plan.accounts {
            for planned in account
                .records
                .iter()
                .filter(|p| !state.records.contains_key(&p.record.id))
            {
                if let Some(key) = planned.unique_keys.iter().find(|k| {
                    state
                        .guards
                        .get(&guard(&planned.record, k))
                        .is_some_and(|h| *h != planned.record.id)
                }) {
                    return Err(StoreError::Rejected(planned.key_taken_message(key)));
                }
            }
        }
        let mut report = ProvisionReport::default();
        let mut note = |inserted: bool, what: String| {
            if inserted {
                report.inserted += 1;
            } else {
                report.skipped.push(what);
            }
        };
        for plan in &plan.accounts {
            let a = &plan.account;
            let fresh = !state.accounts.contains_key(&a.id);
            if fresh {
                state.accounts.insert(a.id, a.clone());
            }
            note(fresh, format!("account {}", a.id));
            for c in &plan.clients {
                let fresh = !state.clients.contains_key(&c.client_id);
                if fresh {
                    state.clients.insert(c.client_id.clone(), c.clone());
                }
                note(fresh, format!("client {}", c.client_id));
            }
            for r in &plan.roles {
                let fresh = !state.roles.contains_key(&r.id);
                if fresh {
                    state.roles.insert(r.id, r.clone());
                }
                note(fresh, format!("role {}", r.id));
            }
            for c in &plan.holiday_calendars {
                let fresh = !state.calendars.contains_key(&(a.id, c.id));
                if fresh {
                    state.calendars.insert((a.id, c.id), (c.clone(), 0));
                }
                note(fresh, format!("holiday calendar {}", c.id));
            }
            for m in &plan.members {
                let fresh = !state.members.contains_key(&m.id);
                if fresh {
                    if m.is_active() {
                        state.apply_calendar_refs(
                            a.id,
                            &CalendarRefs::moving(None, m.holiday_calendar_id),
                        );
                    }
                    state.put_member(m.clone());
                }
                note(fresh, format!("member {}", m.id));
            }
            for t in &plan.teams {
                let fresh = !state.teams.contains_key(&t.id);
                if fresh {
                    state.teams.insert(t.id, t.clone());
                }
                note(fresh, format!("team {}", t.id));
            }
            let stored = state.field_definitions.entry(a.id).or_default();
            for d in &plan.field_definitions {
                let fresh = !stored
                    .iter()
                    .any(|s| s.object_type == d.object_type && s.internal_name == d.internal_name);
                if fresh {
                    stored.push(d.clone());
                }
                note(
                    fresh,
                    format!("field {}.{}", d.object_type, d.internal_name),
                );
            }
            for r in &plan.routers {
                let fresh = !state.routers.contains_key(&r.id);
                if fresh {
                    state.apply_calendar_refs(a.id, &r.calendar_refs());
                    state.put_router(r.clone());
                    let first = RouterRevision::provisioned(r);
                    state
                        .revisions
                        .entry(r.id)
                        .or_default()
                        .insert(first.revision, first);
                }
                note(fresh, format!("router {}", r.id));
            }
            for p in &plan.records {
                let fresh = !state.records.contains_key(&p.record.id);
                if fresh {
                    for key in &p.unique_keys {
                        state.guards.insert(guard(&p.record, key), p.record.id);
                    }
                    state.put_record(p.record.clone());
                }
                note(fresh, format!("record {}", p.record.id));
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::dispatch::DispatchSource;
    use crate::model::due::DueChanges;

    fn entry(at: DateTime<Utc>, expires_at: DateTime<Utc>) -> DispatchEntry {
        DispatchEntry {
            expires_at,
            ..DispatchEntry::unassigned(
                AccountId::from(uuid::Uuid::new_v4()),
                RouterId::from(uuid::Uuid::new_v4()),
                ObjectType::Contacts,
                uuid::Uuid::now_v7().to_string(),
                "Trigger did not match".into(),
                DispatchSource::Queue,
                at,
            )
        }
    }

    /// Issue 23 defect 12: a long-running embedded store forgets expired history entries and
    /// queue markers (as DynamoDB's TTL deletes them), so it does not grow without bound.
    #[tokio::test]
    async fn expired_entries_and_markers_are_forgotten_at_the_next_write() {
        let store = MemoryStore::new();
        let long_ago = Utc::now() - chrono::Duration::days(30);
        let old = entry(long_ago, long_ago + chrono::Duration::days(1));
        store
            .record_dispatch(&old, Some("old-message"), None, &DueChanges::none())
            .await
            .unwrap();
        // The marker was written 16 days ago.
        {
            let mut state = store.lock();
            let expired = Utc::now() - chrono::Duration::days(1);
            state.idempotency_keys.insert("old-message".into(), expired);
            state.marker_expiry.clear();
            state
                .marker_expiry
                .push_back((expired, "old-message".into()));
        }
        let fresh = entry(Utc::now(), Utc::now() + chrono::Duration::days(400));
        store
            .record_dispatch(&fresh, Some("fresh-message"), None, &DueChanges::none())
            .await
            .unwrap();
        assert_eq!(store.get_dispatch(&old.key()).await.unwrap(), None);
        assert!(!store.idempotency_key_used("old-message").await.unwrap());
        assert!(store.get_dispatch(&fresh.key()).await.unwrap().is_some());
        assert!(store.idempotency_key_used("fresh-message").await.unwrap());
        let state = store.lock();
        assert_eq!(state.dispatches.len(), 1);
        assert_eq!(state.dispatch_expiry.len(), 1);
        assert_eq!(state.marker_expiry.len(), 1);
        assert!(state
            .router_dispatches
            .get(&old.router_id)
            .is_none_or(|index| index.is_empty()));
    }
}
