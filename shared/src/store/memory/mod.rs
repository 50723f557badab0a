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
//!
//! One file per aggregate of the port (`records.rs` implements [`crate::store::RecordStore`],
//! ...), each with the `State` helpers only its writes use; this file holds the state, its
//! indexes and the lock.

mod accounts;
mod audit;
mod auth_attempts;
mod calendars;
mod dispatch;
mod due;
mod idempotency;
mod members;
mod pace;
mod provisioning;
mod records;
mod routers;
mod webhooks;

use crate::fields::definition::FieldDefinition;
use crate::idempotency::{Fingerprint, StoredResponse};
use crate::model::account::{Account, ApiClient, Role, Team};
use crate::model::audit::{AuditEvent, AuditTarget};
use crate::model::auth_attempt::{AttemptKey, FailureWindow};
use crate::model::dispatch::{AssignmentTally, DecisionSnapshot, DispatchEntry, RotationState};
use crate::model::due::{DueId, DueItem};
use crate::model::holiday_calendar::HolidayCalendar;
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::record::Record;
use crate::model::router::{Router, RouterDraft, RouterRevision};
use crate::model::webhook::{WebhookDelivery, WebhookSubscription};
use crate::store::tally::Span;
use crate::store::{Listed, Page, PageStart, Position};
use crate::types::ids::{
    AccountId, HolidayCalendarId, MemberId, RecordId, RoleId, RouterId, TeamId, WebhookId,
};
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
    /// Failed client authentications per client id and source (BEHAVIOR 1); the keys are the
    /// client's choice (SipHash).
    auth_failures: HashMap<AttemptKey, FailureWindow>,
    roles: FastMap<RoleId, Role>,
    members: FastMap<MemberId, Member>,
    teams: FastMap<TeamId, Team>,
    field_definitions: FastMap<AccountId, Vec<FieldDefinition>>,
    routers: FastMap<RouterId, Router>,
    /// Shared, so a read hands out a reference count
    /// ([`crate::store::RecordStore::get_record_shared`]).
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
    /// Due items (`docs/design.md`, "Work that happens later") by id.
    due: FastMap<DueId, DueItem>,
    /// The due-work index: (resume time, id) of every due item.
    due_index: BTreeSet<(DateTime<Utc>, DueId)>,
    /// Parked due items by when they were parked.
    parked_index: BTreeSet<(DateTime<Utc>, DueId)>,
    /// Webhook subscriptions by account, then id (creation order).
    webhooks: BTreeMap<(AccountId, WebhookId), WebhookSubscription>,
    /// By account, the version of its webhook subscriptions: every write that changes what a
    /// dispatch makes of them adds 1 (absent: 0).
    webhooks_versions: FastMap<AccountId, u64>,
    /// Webhook deliveries by subscription, then id (creation order).
    deliveries: BTreeMap<(WebhookId, String), WebhookDelivery>,
    /// Router revisions (BEHAVIOR 15) by router, then number.
    revisions: FastMap<RouterId, BTreeMap<u64, RouterRevision>>,
    /// Router drafts by router.
    drafts: FastMap<RouterId, RouterDraft>,
    /// Holiday calendars (BEHAVIOR 17) by account, then id (creation order), each with the
    /// number of things that name it.
    calendars: BTreeMap<(AccountId, HolidayCalendarId), (HolidayCalendar, i64)>,
    /// Decision snapshots (BEHAVIOR 18) by history entry id, kept and purged with their entry.
    explanations: FastMap<uuid::Uuid, DecisionSnapshot>,
    /// Audit events (BEHAVIOR 18) by id.
    audit_events: FastMap<uuid::Uuid, AuditEvent>,
    /// Account -> its events by position (read newest first).
    audit_by_account: FastMap<AccountId, BTreeMap<Position, uuid::Uuid>>,
    /// (account, target) -> the target's events by position (read newest first).
    audit_by_target: HashMap<(AccountId, AuditTarget), BTreeMap<Position, uuid::Uuid>>,
    /// Events by expiry (DynamoDB's TTL attribute `expires_at`), for purging.
    audit_expiry: BTreeSet<(DateTime<Utc>, uuid::Uuid)>,
}

/// In-process adapter of the [`crate::store::Store`] port.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
    /// The CRM pace of each account ([`crate::store::PaceStore`]), apart from the rest: every
    /// CRM request takes it, and nothing else ever waits for it.
    pace: Mutex<HashMap<crate::model::pace::PaceKey, crate::model::pace::PaceState>>,
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
