//! The dispatch port: rotation state, the assignment's commit, the routing history (BEHAVIOR 8)
//! with its CRM sync and SLA states, the queue messages' markers and the stats counters.

use crate::idempotency::IdempotencyCompletion;
use crate::model::account::Account;
use crate::model::dispatch::{
    AssignmentTally, AssignmentWrite, CrmSyncState, DecisionSnapshot, DispatchEntry,
    DispatchEntryKey, ExplainedEntry, MessageDeduplicationId, RotationState,
};
use crate::model::due::DueChanges;
use crate::model::holiday_calendar::HolidayCalendar;
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::record::Record;
use crate::model::router::Router;
use crate::model::sla::SlaStatus;
#[cfg(doc)]
use crate::store::{dispatch_position, tally, StoreError};
use crate::store::{Page, PageRequest, Position, StoreResult};
use crate::types::ids::{AccountId, HolidayCalendarId, MemberId, RecordId, RouterId};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// The reads by key of a dispatch's first round of reads, its wave (BEHAVIOR 6;
/// `docs/performance.md`, "Dispatch: store round trips"): each optional, all sent at once, in one
/// request where the store can (DynamoDB: one `BatchGetItem` per 100 keys, all sent together).
/// Besides what the run names (router, record, rotation state, count), a warm instance adds the
/// keys its last run of the router read ([`crate::dispatch::RouterHints`]): the pool's members,
/// the holiday calendars, and the version of the account's webhook subscriptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstReads {
    /// The account the reads are scoped to (a router or record of another account is absent).
    pub account_id: AccountId,
    /// Whether to read the account itself (an instance that has not cached it yet).
    pub account: bool,
    /// The router to read.
    pub router: Option<RouterId>,
    /// The record to read, of any type.
    pub record: Option<RecordId>,
    /// The router whose rotation state to read.
    pub rotation: Option<RouterId>,
    /// The calendar month (`YYYY-MM`, UTC) whose assignment count to read.
    pub month: Option<String>,
    /// Members to read by key (of the account; archived ones too), as `get_members` reads them.
    pub members: Vec<MemberId>,
    /// Holiday calendars of the account to read by key, as `get_holiday_calendars` reads them.
    pub calendars: Vec<HolidayCalendarId>,
    /// Whether to read the version of the account's webhook subscriptions
    /// ([`crate::store::WebhookStore`]: every write of a subscription moves it).
    pub webhooks_version: bool,
    /// The queued message whose de-duplication marker to look for, as
    /// [`DispatchStore::deduplication_id_used`] does.
    pub marker: Option<MessageDeduplicationId>,
}

impl FirstReads {
    /// Reads of nothing but in `account_id` (each read is then asked for by setting it).
    pub fn of(account_id: AccountId) -> Self {
        Self {
            account_id,
            account: false,
            router: None,
            record: None,
            rotation: None,
            month: None,
            members: Vec::new(),
            calendars: Vec::new(),
            webhooks_version: false,
            marker: None,
        }
    }
}

/// What [`DispatchStore::first_round_reads`] found: what each read alone would answer
/// (`get_account`, `get_router`, `find_record`, `rotation_state`, `assignment_count`,
/// `get_members`, `get_holiday_calendars`); the default for a read not asked.
#[derive(Debug, Clone, Default)]
pub struct FirstFound {
    /// The account, when asked and found.
    pub account: Option<Account>,
    /// The router of the account, when asked and found.
    pub router: Option<Router>,
    /// The record of the account, when asked and found.
    pub record: Option<Record>,
    /// The rotation state (the default, version 0, before the first rotation or when not asked).
    pub rotation: RotationState,
    /// The month's assignment count (0 when none or not asked).
    pub count: u64,
    /// The members asked for that exist in the account, in the order asked, each once.
    pub members: Vec<Member>,
    /// The holiday calendars asked for that exist in the account (in no particular order).
    pub calendars: Vec<HolidayCalendar>,
    /// The version of the account's webhook subscriptions (0 before the first write of one, or
    /// when not asked).
    pub webhooks_version: u64,
    /// Whether the de-duplication id asked for was used ([`DispatchStore::deduplication_id_used`]).
    pub marker_used: bool,
}

/// What dispatch writes and reads: a router's rotation state, the account's monthly count, the
/// one atomic write of an assignment, the history entries (and the markers of the queue messages
/// that made them), and their tallies.
#[async_trait]
pub trait DispatchStore: Send + Sync + 'static {
    /// The router's rotation state (the default, version 0, before the first rotation).
    async fn rotation_state(&self, router_id: RouterId) -> StoreResult<RotationState>;

    /// The reads of `reads` at once, strongly consistent, each answered as its own method
    /// answers it (the account as `get_account`, the router as `get_router`, the record as
    /// `find_record`, [`Self::rotation_state`], [`Self::assignment_count`], the members as
    /// `get_members`, the calendars as `get_holiday_calendars`, the marker as
    /// [`Self::deduplication_id_used`], and the webhook subscriptions' version). Dispatch, explain and SLA reassignment read their first round through it (with
    /// the account on a cold instance). DynamoDB: consistent `BatchGetItem`s of up to 100 keys,
    /// all sent at once (one request for up to 100 keys: a pool of up to 93 members besides the
    /// router, record, rotation state, count, account and subscriptions' version); nothing
    /// asked, no request.
    async fn first_round_reads(&self, reads: &FirstReads) -> StoreResult<FirstFound>;

    /// The account's assignments in calendar month `month` (`YYYY-MM`, UTC).
    async fn assignment_count(&self, account_id: AccountId, month: &str) -> StoreResult<u64>;

    /// Appends the history entry of a dispatch that assigned nothing (BEHAVIOR 8: one write
    /// after the evaluation). With `deduplication_id` (a queued message's) the message's marker is
    /// written in the same atomic write, so a redelivered message appends no second entry; with
    /// `completion` the `Idempotency-Key` answer (BEHAVIOR 10) is stored in it, conditional on its
    /// lease; `due` (work the entry causes, e.g. an event to deliver) and `snapshot` (the entry's
    /// decision snapshot, BEHAVIOR 18) are written in it too.
    ///
    /// Errors: [`StoreError::LeaseLost`] when the completion's or a settled item's lease is
    /// gone; [`StoreError::AlreadyApplied`] when the de-duplication id was used. Nothing is
    /// written then.
    async fn record_dispatch(
        &self, entry: &DispatchEntry, snapshot: Option<&DecisionSnapshot>,
        deduplication_id: Option<&MessageDeduplicationId>,
        completion: Option<&IdempotencyCompletion>, due: &DueChanges,
    ) -> StoreResult<()>;

    /// A page of the router's history entries, newest first (position:
    /// [`crate::store::time_then_id`]; a page after a position holds the entries older
    /// than it). Only the router's account sees them.
    async fn list_router_dispatches(
        &self, account_id: AccountId, router_id: RouterId, page: &PageRequest,
    ) -> StoreResult<Page<DispatchEntry>>;

    /// Up to `limit` of the router's history entries with `dispatched_at` in `[from, to)`,
    /// oldest first, after `after` when given (a position from [`dispatch_position`]: the
    /// entries newer than it); `next` is the position of the page's last entry when more of the
    /// window follow. Only the router's account sees them. The what-if replay walks a window
    /// with it, once (BEHAVIOR 16). DynamoDB: one `Query` (`BETWEEN` on the sort key, ascending;
    /// a page per 1 MB) reading at most `limit` + 1 entries.
    async fn list_router_dispatches_between(
        &self, account_id: AccountId, router_id: RouterId, from: DateTime<Utc>, to: DateTime<Utc>,
        after: Option<&Position>, limit: usize,
    ) -> StoreResult<Page<DispatchEntry>>;

    /// A page of one record's history entries from every router of its type, newest first
    /// (as [`Self::list_router_dispatches`]).
    async fn list_record_dispatches(
        &self, account_id: AccountId, object_type: ObjectType, record_id: RecordId,
        page: &PageRequest,
    ) -> StoreResult<Page<DispatchEntry>>;

    /// A history entry by key (CRM sync retries read it).
    async fn get_dispatch(&self, key: &DispatchEntryKey) -> StoreResult<Option<DispatchEntry>>;

    /// The router's history entry `entry_id` with its decision snapshot (BEHAVIOR 18: `GET
    /// /routers/{routerId}/dispatches/{entryId}`); `None` for an unknown id or an entry of
    /// another router or account. An entry written before snapshots existed has none. DynamoDB:
    /// the snapshot's `GetItem` by entry id, then the entry's by the key it names (an older
    /// entry, without a snapshot, is looked up by the time its UUIDv7 id carries:
    /// `docs/dynamodb.md`).
    async fn get_explained_dispatch(
        &self, account_id: AccountId, router_id: RouterId, entry_id: uuid::Uuid,
    ) -> StoreResult<Option<ExplainedEntry>>;

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

    /// The router's assignments with `dispatched_at` in `[from, to)`, counted per member and
    /// reason (`GET /routers/{id}/stats`): the window's whole UTC days, hours and minutes from
    /// the counters each assignment's transaction adds to ([`tally`]), its partial edge minutes
    /// from the history entries. Cost: at most (days + 46 hours + 118 minutes) x members
    /// counters plus the entries of two partial minutes, whatever the router's volume
    /// (`docs/decisions.md`, "Cost that follows the router, not the account").
    async fn tally_assignments(
        &self, account_id: AccountId, router_id: RouterId, from: DateTime<Utc>, to: DateTime<Utc>,
    ) -> StoreResult<Vec<AssignmentTally>>;

    /// Whether a committed assignment or history entry already used the queued message's
    /// de-duplication id (its marker exists).
    async fn deduplication_id_used(&self, id: &MessageDeduplicationId) -> StoreResult<bool>;

    /// Commits one assignment atomically: the record (conditional on its version and being
    /// active), the router (a condition only: still at `write.router_version`, so the revision
    /// the run evaluated is still live, BEHAVIOR 15), the rotation state (conditional on its
    /// version), the member's counters (conditional on its version and being active), the account's
    /// monthly count (+1, conditional on staying within the quota; only for an account with a
    /// quota), the history entry and its decision snapshot (BEHAVIOR 18), the de-duplication
    /// marker of `write.deduplication_id` (conditional on not existing), and the
    /// due-item changes of `write.due` (new items conditional on not existing; a settlement on its
    /// lease).
    ///
    /// Errors: [`StoreError::Conflict`] when any condition but the marker's and the leases'
    /// failed (re-read and retry); [`StoreError::AlreadyApplied`] when the de-duplication id was
    /// used. Nothing is written then. With `write.completion` the `Idempotency-Key` response is
    /// stored in the same write; [`StoreError::LeaseLost`] first when its lease, or the lease of
    /// the due item settled, is gone, or the ended check is no longer `pending`.
    async fn commit_assignment(&self, write: &AssignmentWrite) -> StoreResult<()>;
}
