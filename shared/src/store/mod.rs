//! The store port: what the domain needs from persistence, as async traits, and its adapters.
//!
//! The port is shaped after what DynamoDB does well, so that adapter is a straight
//! implementation: single-item reads by key, ordered queries with a page, and atomic multi-item
//! writes with conditions (`TransactWriteItems`). Rules that must hold under concurrency are
//! enforced by the store inside one write, never by "query, then write":
//!
//! - uniqueness of record keys: guard items claimed in the same transaction as the record
//!   ([`Store::create_record`], [`Store::update_record`]);
//! - lost updates: every mutable item carries a `version`; writes are conditional on the version
//!   read ([`StoreError::Conflict`] otherwise).
//!
//! Adapters: [`memory::MemoryStore`] (embedded, in process; the local server's default and the
//! fast tests') and [`dynamodb::DynamoStore`] (production: one DynamoDB table whose keys come
//! from [`keys`]). Both pass the same contract suite (`shared/tests/store_contract.rs`).

pub mod account_cache;
pub mod dynamodb;
#[cfg(any(test, feature = "test-util"))]
pub mod faulty;
pub mod keys;
pub mod memory;
pub mod tally;

use crate::error::{BoxError, DomainError};
use crate::fields::definition::FieldDefinition;
use crate::idempotency::{ClaimOutcome, IdempotencyClaim, IdempotencyCompletion};
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
use crate::model::router_write::RouterWrite;
use crate::model::sla::SlaStatus;
use crate::model::webhook::{SubscriptionHealth, WebhookDelivery, WebhookSubscription};
use crate::types::etag::ETag;
use crate::types::ids::{AccountId, HolidayCalendarId, MemberId, RecordId, RouterId, WebhookId};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::Arc;

pub use crate::model::provision::ProvisionReport;
pub use crate::model::record::UniqueKey;
pub use crate::page::{Listed, Page, PageStart, Position};

/// The list position of a record: creation time, then id (both adapters order by it).
pub fn record_position(record: &Record) -> Position {
    Position::new(keys::by_creation(record.created_at, record.id))
}

/// The list position of a member: e-mail, then id.
pub fn member_position(member: &Member) -> Position {
    Position::new(keys::by_email(member.email.as_str(), member.id))
}

/// The list position of a history entry: dispatch time, then id (lists walk it newest first).
pub fn dispatch_position(entry: &DispatchEntry) -> Position {
    Position::new(keys::dispatch_sort_key(entry.dispatched_at, entry.id))
}

/// The list position of a webhook subscription: its id (UUID v7, creation order).
pub fn webhook_position(subscription: &WebhookSubscription) -> Position {
    Position::new(subscription.id.to_string())
}

/// The list position of a delivery: its id (`msg_<uuid v7>`, creation order; lists walk it
/// newest first).
pub fn delivery_position(delivery: &WebhookDelivery) -> Position {
    Position::new(delivery.id.clone())
}

/// The list position of a holiday calendar: its id (UUID v7, creation order).
pub fn holiday_calendar_position(calendar: &HolidayCalendar) -> Position {
    Position::new(keys::by_creation(calendar.created_at, calendar.id))
}

/// One page of an account's holiday calendars out of `all` of them (at most 20, BEHAVIOR 17:
/// both adapters read them all in one request), oldest first: by creation time, then id, so a
/// provisioned calendar whose id is not a UUID v7 still takes its place by `created_at`.
pub fn holiday_calendar_page(
    mut all: Vec<HolidayCalendar>, page: &Page,
) -> Listed<HolidayCalendar> {
    all.sort_by_key(|c| (c.created_at, c.id));
    let wanted = page.limit.saturating_add(1);
    let items: Vec<HolidayCalendar> = match &page.start {
        PageStart::Offset(offset) => all.into_iter().skip(*offset).take(wanted).collect(),
        PageStart::After(after) => all
            .into_iter()
            .filter(|c| holiday_calendar_position(c).as_str() > after.as_str())
            .take(wanted)
            .collect(),
    };
    Listed::from_lookahead(items, page.limit, holiday_calendar_position)
}

/// The list position of a router: creation time, then id.
pub fn router_position(router: &Router) -> Position {
    Position::new(keys::by_creation(router.created_at, router.id))
}

/// The list position of a router revision: its number, zero-padded to 20 digits (lists walk it
/// newest first).
pub fn revision_position(revision: &RouterRevision) -> Position {
    Position::new(keys::revision_number(revision.revision))
}

/// The most `BatchGetItem` requests [`Store::get_records`] has in flight at once (a wave of
/// up to 800 keys).
pub const RECORD_BATCH_WAVE: usize = 8;

/// Result of a store call.
pub type StoreResult<T> = Result<T, StoreError>;

/// Why a store call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An active record of the same account and type already holds this unique key.
    #[error("duplicate value for unique key {field}")]
    Duplicate {
        /// The first colliding key, in the order the keys were given.
        field: String,
    },
    /// The item changed (or was archived) since it was read: the conditional write failed.
    #[error("the item changed concurrently")]
    Conflict,
    /// The idempotency key of the write was already used: the work was done before.
    #[error("already applied")]
    AlreadyApplied,
    /// The write completes a claim whose lease this request no longer holds: an
    /// `Idempotency-Key` claim that outlived [`crate::idempotency::LEASE`] and another request
    /// took over, or a due item ([`crate::model::due`]) whose lease lapsed and another worker
    /// claimed. Nothing is written.
    #[error("the claim's lease was lost")]
    LeaseLost,
    /// Provisioning found an item that contradicts the store (e.g. a key held by another record).
    #[error("{0}")]
    Rejected(String),
    /// The write names a holiday calendar (BEHAVIOR 17) that is not in the account (any more):
    /// nothing was written.
    #[error("no such holiday calendar")]
    UnknownHolidayCalendar,
    /// The backend failed (I/O, throttling after retries, malformed item).
    #[error("store backend failure")]
    Backend(#[source] BoxError),
}

impl From<StoreError> for DomainError {
    /// Store failures the caller did not map itself are internal errors; a lost
    /// `Idempotency-Key` lease is the 409 of a key in flight.
    fn from(e: StoreError) -> Self {
        match e {
            // Another request holds the key now (BEHAVIOR 10's 409).
            StoreError::LeaseLost => DomainError::conflict(crate::idempotency::KEY_IN_FLIGHT),
            e => DomainError::internal(e),
        }
    }
}

/// Persistence of the routing domain. All reads and writes are scoped to an account; an item of
/// another account is reported as absent.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// An account by id.
    async fn get_account(&self, account_id: AccountId) -> StoreResult<Option<Account>>;

    /// An API client by `client_id` (unique across the store).
    async fn get_client(&self, client_id: &str) -> StoreResult<Option<ApiClient>>;

    /// The account's stored field definitions, all record types.
    async fn field_definitions(&self, account_id: AccountId) -> StoreResult<Vec<FieldDefinition>>;

    /// A record of the account and type by id, archived or not: [`Store::find_record`] of that
    /// type (record ids are unique across types).
    async fn get_record(
        &self, account_id: AccountId, object_type: ObjectType, id: RecordId,
    ) -> StoreResult<Option<Record>> {
        Ok(self
            .find_record(account_id, id)
            .await?
            .filter(|r| r.object_type == object_type))
    }

    /// [`Store::get_record`] for a reader that only looks at the record (`GET /{type}/{id}`): the
    /// embedded store hands out its shared copy instead of a deep one (docs/performance.md);
    /// DynamoDB reads the item as [`Store::get_record`] does.
    async fn get_record_shared(
        &self, account_id: AccountId, object_type: ObjectType, id: RecordId,
    ) -> StoreResult<Option<Arc<Record>>> {
        Ok(self
            .get_record(account_id, object_type, id)
            .await?
            .map(Arc::new))
    }

    /// A record of the account by id, of any type, archived or not (dispatch reads it before it
    /// knows the router's type, in the same round as the router; record ids are unique across
    /// types).
    async fn find_record(&self, account_id: AccountId, id: RecordId)
        -> StoreResult<Option<Record>>;

    /// The records of `ids` that exist in the account, of any type, archived or not, in the
    /// order of `ids` (each once): how the what-if replay reads the records of a window of
    /// history, each once (BEHAVIOR 16). DynamoDB: consistent `BatchGetItem`s of at most 100
    /// keys (the service's limit), [`RECORD_BATCH_WAVE`] of them in flight at once, unprocessed
    /// keys sent again after a backoff. Cost: `ceil(unique ids / 100)` requests (plus retries of
    /// unprocessed keys), one item read per record found.
    async fn get_records(
        &self, account_id: AccountId, ids: &[RecordId],
    ) -> StoreResult<Vec<Record>>;

    /// A page of the records of the account and type, by creation time then id (position:
    /// [`keys::by_creation`]). A page after a position reads O(limit) items.
    async fn list_records(
        &self, account_id: AccountId, object_type: ObjectType, page: &Page,
    ) -> StoreResult<Listed<Record>>;

    /// Creates `record` and claims its `unique_keys` atomically.
    ///
    /// Errors: [`StoreError::Duplicate`] naming the first key (in the given order) held by an
    /// active record of the same account and type; nothing is written then.
    async fn create_record(&self, record: &Record, unique_keys: &[UniqueKey]) -> StoreResult<()> {
        self.create_record_completing(record, unique_keys, None)
            .await
    }

    /// [`Self::create_record`], also storing `completion` (the 201 of an `Idempotency-Key`
    /// request, BEHAVIOR 10) in the same atomic write, conditional on its lease.
    ///
    /// Errors: [`StoreError::LeaseLost`] first, then as [`Self::create_record`].
    async fn create_record_completing(
        &self, record: &Record, unique_keys: &[UniqueKey],
        completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()>;

    /// Replaces the stored record with `record` when the stored one is active and at
    /// `expected_version`, releasing the `released` keys and claiming the `claimed` ones in the
    /// same atomic write. Archiving is such an update (with `archived_at` set, releasing every key).
    ///
    /// Errors: [`StoreError::Duplicate`] for a claimed key held by another active record;
    /// [`StoreError::Conflict`] when the stored record changed, was archived or is gone.
    async fn update_record(
        &self, record: &Record, expected_version: u64, claimed: &[UniqueKey],
        released: &[UniqueKey],
    ) -> StoreResult<()>;

    /// A page of the members of the account, by e-mail then id (position: [`keys::by_email`]).
    async fn list_members(&self, account_id: AccountId, page: &Page)
        -> StoreResult<Listed<Member>>;

    /// A member by id, archived or not.
    async fn get_member(
        &self, account_id: AccountId, member_id: MemberId,
    ) -> StoreResult<Option<Member>>;

    /// The members of `ids` that exist in the account, archived or not, in the order of
    /// `ids` (each once), read consistently in one wave (DynamoDB: `BatchGetItem`s of up to 100
    /// keys): how dispatch and stats read a router's pool, at a cost that follows the pool, not
    /// the account (issue 23).
    async fn get_members(
        &self, account_id: AccountId, ids: &[MemberId],
    ) -> StoreResult<Vec<Member>>;

    /// A member by e-mail (case-insensitive), archived or not.
    async fn find_member_by_email(
        &self, account_id: AccountId, email: &str,
    ) -> StoreResult<Option<Member>>;

    /// Replaces the stored member when it is active and at `expected_version`, and applies
    /// `calendars` (the move of its `holiday_calendar_id`, BEHAVIOR 17) in the same atomic write.
    ///
    /// Errors: [`StoreError::Conflict`] when the member changed;
    /// [`StoreError::UnknownHolidayCalendar`] when a calendar that gains a reference is not in
    /// the account. Nothing is written then.
    async fn update_member(
        &self, member: &Member, expected_version: u64, calendars: &CalendarRefs,
    ) -> StoreResult<()>;

    /// The account's roles.
    async fn list_roles(&self, account_id: AccountId) -> StoreResult<Vec<Role>>;

    /// The account's teams, by creation time.
    async fn list_teams(&self, account_id: AccountId) -> StoreResult<Vec<Team>>;

    /// A page of the routers of the account, by creation time then id (position:
    /// [`keys::by_creation`]).
    async fn list_routers(&self, account_id: AccountId, page: &Page)
        -> StoreResult<Listed<Router>>;

    /// A router by id, archived or not.
    async fn get_router(
        &self, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<Router>>;

    /// A router by id in any account (router ids are unique across the store); the queue path
    /// resolves a message's account through it.
    async fn find_router(&self, router_id: RouterId) -> StoreResult<Option<Router>>;

    /// The active record of the account and type holding unique key `field` = `value`, if any
    /// (a lookup of the uniqueness guard; account matching finds a company by domain with it).
    async fn find_by_unique_key(
        &self, account_id: AccountId, object_type: ObjectType, key: &UniqueKey,
    ) -> StoreResult<Option<Record>>;

    /// The router's rotation state (the default, version 0, before the first rotation).
    async fn rotation_state(&self, router_id: RouterId) -> StoreResult<RotationState>;

    /// The account's assignments in calendar month `month` (`YYYY-MM`, UTC).
    async fn assignment_count(&self, account_id: AccountId, month: &str) -> StoreResult<u64>;

    /// Appends the history entry of a dispatch that assigned nothing (BEHAVIOR 8: one write
    /// after the evaluation). With `idempotency_key` (a queue message id) the message's marker is
    /// written in the same atomic write, so a redelivered message appends no second entry; with
    /// `completion` the `Idempotency-Key` answer (BEHAVIOR 10) is stored in it, conditional on its
    /// lease; `due` (work the entry causes, e.g. an event to deliver) is written in it too.
    ///
    /// Errors: [`StoreError::LeaseLost`] when the completion's or a settled item's lease is
    /// gone; [`StoreError::AlreadyApplied`] when the idempotency key was used. Nothing is
    /// written then.
    async fn record_dispatch(
        &self, entry: &DispatchEntry, idempotency_key: Option<&str>,
        completion: Option<&IdempotencyCompletion>, due: &DueChanges,
    ) -> StoreResult<()>;

    /// A page of the router's history entries, newest first (position:
    /// [`keys::dispatch_sort_key`]; a page after a position holds the entries older than it).
    /// Only the router's account sees them.
    async fn list_router_dispatches(
        &self, account_id: AccountId, router_id: RouterId, page: &Page,
    ) -> StoreResult<Listed<DispatchEntry>>;

    /// Up to `limit` of the router's history entries with `dispatched_at` in `[from, to)`,
    /// oldest first, after `after` when given (a position from [`dispatch_position`]: the
    /// entries newer than it); `next` is the position of the page's last entry when more of the
    /// window follow. Only the router's account sees them. The what-if replay walks a window
    /// with it, once (BEHAVIOR 16). DynamoDB: one `Query` (`BETWEEN` on the sort key, ascending;
    /// a page per 1 MB) reading at most `limit` + 1 entries.
    async fn list_router_dispatches_between(
        &self, account_id: AccountId, router_id: RouterId, from: DateTime<Utc>, to: DateTime<Utc>,
        after: Option<&Position>, limit: usize,
    ) -> StoreResult<Listed<DispatchEntry>>;

    /// A page of one record's history entries from every router of its type, newest first
    /// (as [`Self::list_router_dispatches`]).
    async fn list_record_dispatches(
        &self, account_id: AccountId, object_type: ObjectType, record_id: RecordId, page: &Page,
    ) -> StoreResult<Listed<DispatchEntry>>;

    /// A history entry by key (CRM sync retries read it).
    async fn get_dispatch(&self, key: &DispatchEntryKey) -> StoreResult<Option<DispatchEntry>>;

    /// Replaces the CRM sync state of an entry whose stored state has the status and attempt
    /// count of `from` (its error aside), which must be `pending` or `retrying` (BEHAVIOR 7:
    /// final states never change again; a duplicate attempt finds another count), with `to`;
    /// `due` (the settlement of the attempt's due item) in the same atomic write.
    ///
    /// Errors: [`StoreError::Conflict`] when the stored state is not `from` (or the entry is
    /// gone); [`StoreError::LeaseLost`] when the due item's lease is gone. Nothing is written.
    async fn update_crm_sync(
        &self, key: &DispatchEntryKey, from: &CrmSyncState, to: &CrmSyncState, due: &DueChanges,
    ) -> StoreResult<()>;

    /// Ends the SLA check started by the entry `key` (BEHAVIOR 14) with `to` (`met`,
    /// `cancelled` or `expired`) when the entry's stored check is `pending`, writing `due` (the
    /// settlement of the check's due item) in the same atomic write. (`reassigned` is written by
    /// the reassignment's own transaction, [`AssignmentWrite::ends_check`].)
    ///
    /// Errors: [`StoreError::LeaseLost`] when the due item's lease is gone;
    /// [`StoreError::Conflict`] when the entry's check is not `pending` (or the entry is gone).
    /// Nothing is written then.
    async fn end_sla_check(
        &self, key: &DispatchEntryKey, to: SlaStatus, due: &DueChanges,
    ) -> StoreResult<()>;

    /// A due item by id (DESIGN "Work that happens later").
    async fn get_due(&self, id: &DueId) -> StoreResult<Option<DueItem>>;

    /// Claims due item `id` for its attempt after `attempt` attempts: when it exists, has made
    /// exactly `attempt` attempts and no lease holds it at `now`, stores `lease` on it (its
    /// `resume_at` becomes the lease's end) and returns it as stored; otherwise `None` (another
    /// worker holds it, the attempt was made, or the work is over). One conditional write: of
    /// racing claims at most one gets the item. A claim whose `lease` the item already holds
    /// returns it as stored: a request retried after its first attempt applied (a lost response,
    /// a timeout) still learns that it holds the item, instead of leaving it to lapse.
    async fn claim_due(
        &self, id: &DueId, attempt: u32, lease: &Lease, now: DateTime<Utc>,
    ) -> StoreResult<Option<DueItem>>;

    /// Settles a claimed due item when its attempt writes nothing else (removed, or moved to its
    /// next attempt), conditional on the claim's lease.
    ///
    /// Errors: [`StoreError::LeaseLost`] when the lease is no longer held (nothing written).
    async fn settle_due(&self, settlement: &Settlement) -> StoreResult<()>;

    /// Parks a claimed due item ([`crate::model::due::DueItem::MAX_RUNS`] runs without
    /// progress): keeps it with `parking.error` as its last error and `parking.at` as when it was
    /// parked, its lease released, out of the sweeper's index (nothing claims it any more),
    /// conditional on the claim's lease.
    ///
    /// Errors: [`StoreError::LeaseLost`] when the lease is no longer held (nothing written).
    async fn park_due(&self, parking: &Parking) -> StoreResult<()>;

    /// Up to `limit` parked due items, parked longest ago first, for an operator to inspect
    /// (`docs/operations.md`).
    async fn parked_due_items(&self, limit: usize) -> StoreResult<Vec<DueItem>>;

    /// Moves an overdue due item's `resume_at` (the sweeper, before it hands the item on), only
    /// while the item still has the `resume_at` and `attempt` of `item` and no lease holds it at
    /// `now`. Returns whether it moved: of racing sweepers exactly one does.
    async fn rearm_due(
        &self, item: &DueItem, resume_at: DateTime<Utc>, now: DateTime<Utc>,
    ) -> StoreResult<bool>;

    /// Up to `limit` due items whose `resume_at` is at or before `now`, oldest first: the
    /// sweeper's read of the due-work index.
    async fn overdue_due_items(
        &self, now: DateTime<Utc>, limit: usize,
    ) -> StoreResult<Vec<DueItem>>;

    /// The router's assignments with `dispatched_at` in `[from, to)`, counted per member and
    /// reason (`GET /routers/{id}/stats`): the window's whole UTC days, hours and minutes from
    /// the counters each assignment's transaction adds to ([`tally`]), its partial edge minutes
    /// from the history entries. Cost: at most (days + 46 hours + 118 minutes) x members
    /// counters plus the entries of two partial minutes, whatever the router's volume (issue 23
    /// point 2).
    async fn tally_assignments(
        &self, account_id: AccountId, router_id: RouterId, from: DateTime<Utc>, to: DateTime<Utc>,
    ) -> StoreResult<Vec<AssignmentTally>>;

    /// Claims an `Idempotency-Key` (BEHAVIOR 10): when no live claim holds the key of
    /// (account, route, key) (none, expired after [`crate::idempotency::RETENTION`], or an
    /// in-flight claim whose lease lapsed), stores `claim` in flight and answers
    /// [`ClaimOutcome::Claimed`]; otherwise answers what holds it. One atomic conditional write:
    /// of concurrent claims exactly one is `Claimed`.
    async fn claim_idempotency_key(&self, claim: &IdempotencyClaim) -> StoreResult<ClaimOutcome>;

    /// Stores the response of a claim that had no effect to write (a 4xx, a dispatch that
    /// assigned nothing), conditional on the claim's lease.
    ///
    /// Errors: [`StoreError::LeaseLost`] when another request holds the key now.
    async fn complete_idempotency_key(&self, completion: &IdempotencyCompletion)
        -> StoreResult<()>;

    /// Replaces the stored response of a completed claim that this request holds (the same lease
    /// id): an assignment's answer gains what became known after its transaction (the CRM
    /// sync's outcome, BEHAVIOR 7), so a replay answers what the first request answered.
    ///
    /// Errors: [`StoreError::LeaseLost`] when the key is no longer this request's.
    async fn amend_idempotency_response(
        &self, completion: &IdempotencyCompletion,
    ) -> StoreResult<()>;

    /// Frees a claimed key (its request failed with a 5xx, which is not stored), when the
    /// claim's lease is still held; otherwise does nothing.
    async fn release_idempotency_key(&self, claim: &IdempotencyClaim) -> StoreResult<()>;

    /// Whether the idempotency key was already used by a committed assignment.
    async fn idempotency_key_used(&self, key: &str) -> StoreResult<bool>;

    /// Commits one assignment atomically: the record (conditional on its version and being
    /// active), the router (a condition only: still at `write.router_version`, so the revision
    /// the run evaluated is still live, BEHAVIOR 15), the rotation state (conditional on its version), the member's counters
    /// (conditional on its version and being active), the account's monthly count (+1,
    /// conditional on staying within the quota; only for an account with a quota), the history
    /// entry, the idempotency marker (conditional on not existing), and the due-item changes
    /// of `write.due` (new items conditional on not existing; a settlement on its lease).
    ///
    /// Errors: [`StoreError::Conflict`] when any condition but the marker's and the leases'
    /// failed (re-read and retry); [`StoreError::AlreadyApplied`] when the idempotency key was
    /// used. Nothing is written then. With `write.completion` the `Idempotency-Key` response is
    /// stored in the same write; [`StoreError::LeaseLost`] first when its lease, or the lease of
    /// the due item settled, is gone, or the ended check is no longer `pending`.
    async fn commit_assignment(&self, write: &AssignmentWrite) -> StoreResult<()>;

    /// Creates a webhook subscription (BEHAVIOR 13) when its account has fewer than `max`: the
    /// account's count goes up in the same atomic write.
    ///
    /// Errors: [`StoreError::Rejected`] when the account has `max` already (nothing written).
    async fn create_webhook(&self, subscription: &WebhookSubscription, max: u64)
        -> StoreResult<()>;

    /// A page of the account's subscriptions, by creation time (position: the id, UUID v7).
    /// Strongly consistent: dispatch reads them to make its events.
    async fn list_webhooks(
        &self, account_id: AccountId, page: &Page,
    ) -> StoreResult<Listed<WebhookSubscription>>;

    /// A subscription of the account by id.
    async fn get_webhook(
        &self, account_id: AccountId, id: WebhookId,
    ) -> StoreResult<Option<WebhookSubscription>>;

    /// Replaces a subscription stored at `expected_version` with `subscription`, all but its
    /// health: the stored `failing_since` is kept (delivery attempts write it, without moving the
    /// version: [`crate::model::webhook::HealthChange`]), or removed when `reset_health` (a
    /// subscription enabled again starts healthy). `due` (e.g. the item that ends the open
    /// deliveries of a subscription this write disables) is written in the same atomic write.
    ///
    /// Errors: [`StoreError::Conflict`] when it changed or is gone (nothing written).
    async fn update_webhook(
        &self, subscription: &WebhookSubscription, expected_version: u64, reset_health: bool,
        due: &DueChanges,
    ) -> StoreResult<()>;

    /// Deletes a subscription (its deliveries are left to expire; nothing delivers them any
    /// more) and lowers the account's count, in one atomic write. Returns whether it existed.
    async fn delete_webhook(&self, account_id: AccountId, id: WebhookId) -> StoreResult<bool>;

    /// A delivery of a subscription by id.
    async fn get_delivery(
        &self, subscription_id: WebhookId, delivery_id: &str,
    ) -> StoreResult<Option<WebhookDelivery>>;

    /// A page of a subscription's deliveries, newest first (position: the delivery id; a page
    /// after a position holds the deliveries older than it).
    async fn list_deliveries(
        &self, subscription_id: WebhookId, page: &Page,
    ) -> StoreResult<Listed<WebhookDelivery>>;

    /// Stores a delivery's new state (conditional on its stored attempt count being
    /// `expected_attempts`), the attempt's change to its subscription's health when it made one
    /// (conditional on the subscription existing, and for
    /// [`crate::model::webhook::HealthChange::DisableFailing`] on its `failing_since` alone),
    /// and `due` (the attempt's settlement, new items), in one atomic write.
    ///
    /// Errors: [`StoreError::LeaseLost`] when a settled item's lease is gone;
    /// [`StoreError::Conflict`] when the delivery changed, the subscription is gone or its health
    /// moved (nothing written).
    async fn record_delivery(
        &self, delivery: &WebhookDelivery, expected_attempts: u32,
        health: Option<&SubscriptionHealth>, due: &DueChanges,
    ) -> StoreResult<()>;

    /// Creates `router` (BEHAVIOR 15: `POST /routers`) with its first revision `revision`, when
    /// the account has fewer than `max` non-archived routers, and stores `completion` (the
    /// `Idempotency-Key` answer) in the same atomic write. The account's count of non-archived
    /// routers (provisioned ones included) goes up in it.
    ///
    /// Errors: [`StoreError::Rejected`] when the account has `max` already;
    /// [`StoreError::Conflict`] when the id exists; [`StoreError::LeaseLost`] when the
    /// completion's lease is gone. Nothing is written then.
    async fn create_router(
        &self, router: &Router, revision: &RouterRevision, max: u64,
        completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()>;

    /// A router's draft, if it has one (only the router's account sees it).
    async fn get_router_draft(
        &self, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<RouterDraft>>;

    /// Stores `draft` as its router's draft, replacing the draft tagged `replaces` (`None`: only
    /// when the router has no draft), only while the router item is at `router_version` (not
    /// published, unpublished or archived since it was read); `completion` in the same atomic
    /// write (a restore's `Idempotency-Key` answer), and `calendars`, the change of the
    /// references to holiday calendars (BEHAVIOR 17: the replaced draft's calendar gives its
    /// reference back, the new draft's takes one).
    ///
    /// Errors: [`StoreError::Conflict`] when the draft or the router changed;
    /// [`StoreError::UnknownHolidayCalendar`] when a calendar gaining a reference is gone;
    /// [`StoreError::LeaseLost`] when the completion's lease is gone. Nothing is written then.
    async fn put_router_draft(
        &self, draft: &RouterDraft, replaces: Option<&ETag>, router_version: u64,
        calendars: &CalendarRefs, completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()>;

    /// Deletes a router's draft while its tag is `etag`, with `calendars` (the draft's
    /// calendar reference given back; BEHAVIOR 17) in the same atomic write.
    ///
    /// Errors: [`StoreError::Conflict`] when there is no draft or it has another tag.
    async fn delete_router_draft(
        &self, account_id: AccountId, router_id: RouterId, etag: &ETag, calendars: &CalendarRefs,
    ) -> StoreResult<()>;

    /// Revision `revision` of a router (only the router's account sees it).
    async fn get_router_revision(
        &self, account_id: AccountId, router_id: RouterId, revision: u64,
    ) -> StoreResult<Option<RouterRevision>>;

    /// A page of a router's revisions, newest first (position: [`revision_position`]; a page
    /// after a position holds the revisions older than it). A page reads at most `limit` + 1
    /// items after a position (an offset's skipped items are read too: the service turns an
    /// offset into a position, revisions being numbered without gaps).
    async fn list_router_revisions(
        &self, account_id: AccountId, router_id: RouterId, page: &Page,
    ) -> StoreResult<Listed<RouterRevision>>;

    /// Writes a router item (publish, unpublish, archive: [`RouterWrite`]) in one atomic
    /// write: the router conditional on its version, the new revision (if absent), the draft's
    /// removal (a publish's conditional on its tag), the rotation state (conditional on its
    /// version), the account's router count (archive), the holiday calendars' references
    /// (BEHAVIOR 17) and the `Idempotency-Key` answer.
    ///
    /// Errors: [`StoreError::Conflict`] when the router, the draft or the rotation state changed
    /// (or the revision exists); [`StoreError::UnknownHolidayCalendar`] when a calendar gaining
    /// a reference is gone; [`StoreError::LeaseLost`] when the completion's lease is gone.
    /// Nothing is written then.
    async fn write_router(&self, write: &RouterWrite) -> StoreResult<()>;

    /// Creates a holiday calendar (BEHAVIOR 17) when its account has fewer than `max`: the
    /// account's count goes up in the same atomic write. The calendar starts with no references.
    ///
    /// Errors: [`StoreError::Rejected`] when the account has `max` already;
    /// [`StoreError::Conflict`] when the id exists. Nothing is written then.
    async fn create_holiday_calendar(
        &self, calendar: &HolidayCalendar, max: u64,
    ) -> StoreResult<()>;

    /// A page of the account's holiday calendars, oldest first (position: the id, UUID v7).
    /// Strongly consistent: dispatch reads them with the pool, so a calendar written a moment
    /// ago counts at the next dispatch.
    async fn list_holiday_calendars(
        &self, account_id: AccountId, page: &Page,
    ) -> StoreResult<Listed<HolidayCalendar>>;

    /// A holiday calendar of the account by id.
    async fn get_holiday_calendar(
        &self, account_id: AccountId, id: HolidayCalendarId,
    ) -> StoreResult<Option<HolidayCalendar>>;

    /// Replaces a holiday calendar stored at `expected_version` (its references are kept).
    ///
    /// Errors: [`StoreError::Conflict`] when it changed or is gone (nothing written).
    async fn update_holiday_calendar(
        &self, calendar: &HolidayCalendar, expected_version: u64,
    ) -> StoreResult<()>;

    /// Deletes a holiday calendar that nothing names (its reference count is 0: BEHAVIOR 17's
    /// 409 otherwise) and lowers the account's count, in one atomic write.
    async fn delete_holiday_calendar(
        &self, account_id: AccountId, id: HolidayCalendarId,
    ) -> StoreResult<CalendarDeletion>;

    /// Loads a validated provisioning plan: insert-if-absent by id (`client_id` for clients),
    /// all-or-nothing. A router is stored with its first revision (`published_by`
    /// `provisioning`, made at its creation time) and counts against its account's router limit
    /// unless archived.
    ///
    /// Errors: [`StoreError::Rejected`] when an inserted record's unique key is held by an
    /// existing active record; nothing is written then.
    async fn provision(&self, plan: &ProvisionPlan) -> StoreResult<ProvisionReport>;
}
