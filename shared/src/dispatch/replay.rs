//! The what-if replay (BEHAVIOR 16): `POST /routers/{id}/simulate` runs a router's draft (or
//! any revision) over the records its history says it routed in a window, and answers what
//! would have changed. It writes nothing.
//!
//! One engine: each entry is replayed by [`steps::evaluate`], the evaluation of steps 7 to 14
//! that dispatch, the queue, SLA reassignment and explain run, after the same step 5
//! ([`steps::settings`]) and step 6 ([`steps::record`]) functions. The replay only supplies
//! the inputs differently: the instant is the entry's `dispatched_at` (availability, working
//! hours and out-of-office of [`crate::schedule::availability`] at that instant), the record's
//! owner field holds the entry's `previous_owner` (for an entry that assigned nobody, the
//! record's current owner), the rotation state lives in memory from empty and moves as each
//! rotation assignment moves it, and [`Limits::Ignored`] leaves out the quota and capacity
//! (the history does not hold their past values).
//!
//! Bounded cost (`docs/performance.md`, "What-if replay in bounded memory"): the
//! window's entries are read and replayed [`REPLAY_WINDOW`] at a time, oldest first, until
//! [`MAX_REPLAYED`] of the replay set were replayed, and never more than [`READ_FACTOR`] times
//! that many entries read, skipped ones included (then `truncated: true`). Each window's
//! records no earlier window read are read [`RECORDS_PER_READ`] at a time
//! ([`crate::store::RecordStore::get_records`]), bounded in bytes as well as in entries: at most
//! [`RECORD_READ_BYTES`] of whole records at DynamoDB's record limit are held at once, each read
//! projected before the next (the fields the evaluation reads: the trigger's, the owner field,
//! `email`; the projections kept for later windows [`MEMO_BYTES`] at most), so a record named by
//! entries of several windows is read once. A company is projected onto its owner as soon as it
//! is found ([`COMPANY_LOOKUPS_AT_ONCE`] whole companies at most in flight).
//! Members, companies (their owner alone), owners and calendars a window names are read once
//! for the replay, each set de-duplicated through hash sets, company lookups
//! [`COMPANY_LOOKUPS_AT_ONCE`] at a time, owner lookups [`steps::OWNER_LOOKUPS_AT_ONCE`] at a
//! time. Beyond that the replay keeps its running tallies and the first [`MAX_SAMPLES`] changed
//! entries.

use super::holidays;
use super::outcome::{Skip, OWNER_ASSIGNED};
use super::steps::{self, Evaluation, Limits, Stop, Trace};
use crate::clock::Clock;
use crate::error::DomainError;
use crate::fields::cache::CatalogueCache;
use crate::fields::catalogue::{Catalogue, FieldDef};
use crate::history::stats::{parse_instant, StatsWindow, WindowError, MAX_WINDOW_DAYS};
use crate::history::target_share;
use crate::model::account::Team;
use crate::model::dispatch::{DispatchEntry, DispatchSource, RotationState};
use crate::model::member::Member;
use crate::model::record::{Record, UniqueKey};
use crate::model::router::{Router, RouterSettings};
use crate::routers::manage::ROUTER_NOT_FOUND;
use crate::routers::revision::{RevisionChoice, REVISION_KEY};
use crate::routers::roster::{read_roster, Named, Roster};
use crate::schedule::availability::HolidayCalendars;
use crate::store::ReplayPorts;
use crate::store::{DispatchStore, Position, RecordStore, StoreError};
use crate::timefmt::Timestamp;
use crate::types::ids::{AccountId, HolidayCalendarId, MemberId, RecordId, RouterId};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use utoipa::ToSchema;

/// Most entries one replay replays (the oldest of the window; BEHAVIOR 16).
pub const MAX_REPLAYED: usize = 10_000;
/// Most entries one replay reads, as a multiple of the entries it may replay: skipped entries
/// (`sla`, early outcomes such as `The router is unpublished`, expired ones) count too. A replay
/// that reads this many before the window's end stops there and answers `truncated: true`.
pub const READ_FACTOR: usize = 3;
/// Entries read per page of the router's history and replayed together (their records are read
/// [`RECORDS_PER_READ`] at a time).
pub const REPLAY_WINDOW: usize = 500;
/// Bytes of whole records one read of a window's records may bring, at the record limit
/// (BEHAVIOR 12: a record's fields at most 300 KB of JSON): the records held at once between a
/// read and their projection.
pub const RECORD_READ_BYTES: usize = 16 << 20;
/// Records one read of a window's records asks for: as many as [`RECORD_READ_BYTES`] holds at
/// the record limit (53).
pub const RECORDS_PER_READ: usize = RECORD_READ_BYTES / crate::types::limits::MAX_RECORD_JSON_BYTES;
/// Bytes of record projections a replay keeps for records named again in later windows
/// (the fields the evaluation reads). Past it, a window's projections are dropped with the
/// window, and a record named again later is read again.
pub const MEMO_BYTES: usize = 16 << 20;
/// The default window: the 30 days before `to` (BEHAVIOR 16).
pub const DEFAULT_WINDOW_DAYS: i64 = 30;
/// Changed entries the answer shows (the first, oldest first).
pub const MAX_SAMPLES: usize = 20;
/// Company lookups (by domain) in flight at once.
pub const COMPANY_LOOKUPS_AT_ONCE: usize = 16;

/// The body of `POST /routers/{id}/simulate`: `{revision?, from?, to?}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimulateRequest {
    /// The configuration replayed (default: the draft).
    pub revision: RevisionChoice,
    /// The window: `to` defaults to now, `from` to `to` minus 30 days; a `to` in the future is
    /// accepted (BEHAVIOR 16).
    pub window: StatsWindow,
}

impl SimulateRequest {
    /// Parses the body (an empty body is `{}`) at `now`.
    ///
    /// Errors: 400 naming the key: `revision` not `"draft"` nor a positive integer; `from` /
    /// `to` not an RFC 3339 instant (a string); `from` not before `to` (naming `from`); a
    /// window over 93 days (naming `to`); any other key (`Unknown field: <key>`).
    pub fn parse(body: &Map<String, Value>, now: DateTime<Utc>) -> Result<Self, DomainError> {
        if let Some(key) = body
            .keys()
            .find(|k| ![REVISION_KEY, "from", "to"].contains(&k.as_str()))
        {
            return Err(DomainError::bad_field(
                key.clone(),
                format!("Unknown field: {key}"),
            ));
        }
        let revision = match body.get(REVISION_KEY) {
            Some(value) => RevisionChoice::parse(value)?,
            None => RevisionChoice::Draft,
        };
        let instant = |name: &str| -> Result<Option<DateTime<Utc>>, DomainError> {
            let Some(value) = body.get(name) else {
                return Ok(None);
            };
            value.as_str().and_then(parse_instant).map(Some).ok_or_else(|| {
                DomainError::bad_field(
                    name,
                    format!("Invalid {name}: must be an RFC 3339 instant, e.g. 2026-11-01T00:00:00Z"),
                )
            })
        };
        let to = instant("to")?.unwrap_or(now);
        let from = match instant("from")? {
            Some(from) => from,
            None => to - chrono::Duration::days(DEFAULT_WINDOW_DAYS),
        };
        let window = StatsWindow::new(from, to).map_err(|error| match error {
            WindowError::NotBefore => {
                DomainError::bad_field("from", "Invalid from: must be before to")
            }
            WindowError::TooLong => DomainError::bad_field(
                "to",
                format!("Invalid to: the window may be at most {MAX_WINDOW_DAYS} days"),
            ),
        })?;
        Ok(Self { revision, window })
    }
}

/// The body of `POST /routers/{id}/simulate` (BEHAVIOR 16): every key optional; an unknown
/// key is 400. Only describes it: the handler reads it with `SimulateRequest::parse`.
#[derive(ToSchema, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[schema(
    example = json!({"revision": 1, "from": "2026-10-23T09:30:00Z", "to": "2026-11-22T09:30:00Z"})
)]
#[allow(dead_code)]
pub struct SimulateBody {
    /// The configuration to replay: `"draft"` (default) or a revision number.
    #[schema(nullable = false)]
    revision: Option<RevisionChoice>,
    /// Start of the window (RFC 3339; default `to` minus 30 days); before `to`.
    #[schema(value_type = String, format = DateTime, required = false)]
    from: Option<String>,
    /// End of the window, excluded (RFC 3339; default now; a future instant is accepted); at
    /// most 93 days after `from`.
    #[schema(value_type = String, format = DateTime, required = false)]
    to: Option<String>,
}

/// One member's line of a replay: the replayed entries' real assignments and the replay's.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ReplayMember {
    /// The member's e-mail.
    #[schema(format = Email)]
    pub user: String,
    /// The replayed entries that really assigned this member.
    pub actual: u64,
    /// The replay's assignments to this member.
    pub simulated: u64,
    /// `actual` over the replayed entries' real assignments (0 when none).
    pub actual_share: f64,
    /// `simulated` over the replay's assignments (0 when none).
    pub simulated_share: f64,
    /// What the replayed configuration's distribution model aims at, as in the stats: its
    /// percentage / 100 for a percentage router, 1 / (pool size) for round robin; `null` for
    /// someone outside its pool.
    pub target_share: Option<f64>,
}

/// An entry whose replay assigned someone else (or nobody, or someone where nobody was).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ReplaySample {
    /// The history entry's id.
    #[schema(value_type = String, format = Uuid)]
    pub entry_id: uuid::Uuid,
    /// The record's id, as the entry holds it.
    pub object_id: String,
    /// When the entry's dispatch ran (the instant it was replayed at).
    pub dispatched_at: Timestamp,
    /// Whom the dispatch assigned; `null` when it assigned nobody.
    #[schema(format = Email)]
    pub actual_user: Option<String>,
    /// Whom the replay assigns; `null` when nobody.
    #[schema(format = Email)]
    pub simulated_user: Option<String>,
    /// The replay's outcome (`Owner assigned` or the message of the step that stopped it).
    pub simulated_message: String,
}

/// The 200 body of `POST /routers/{id}/simulate` (BEHAVIOR 16).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(example = json!({
    "router_id": "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45",
    "revision": "draft",
    "from": "2026-10-23T09:30:00.000Z",
    "to": "2026-11-22T09:30:00.000Z",
    "replayed": 3,
    "truncated": false,
    "changed": 1,
    "outcomes": {"Owner assigned": 3},
    "members": [
        {"user": "ana.lopez@northwind.example", "actual": 2, "simulated": 1, "actual_share": 0.6666666666666666, "simulated_share": 0.3333333333333333, "target_share": 0.3333333333333333},
        {"user": "ben.okafor@northwind.example", "actual": 1, "simulated": 1, "actual_share": 0.3333333333333333, "simulated_share": 0.3333333333333333, "target_share": 0.3333333333333333},
        {"user": "chloe.martin@northwind.example", "actual": 0, "simulated": 1, "actual_share": 0.0, "simulated_share": 0.3333333333333333, "target_share": 0.3333333333333333}
    ],
    "samples": [
        {"entry_id": "01936b2a-7c00-7a00-8000-0000000000e3", "object_id": "01936b2a-7c00-7a00-8000-000000000002", "dispatched_at": "2026-11-20T14:05:00.000Z", "actual_user": "ana.lopez@northwind.example", "simulated_user": "chloe.martin@northwind.example", "simulated_message": "Owner assigned"}
    ]
}))]
pub struct Simulation {
    /// The router.
    pub router_id: RouterId,
    /// The configuration replayed: `"draft"` or its revision number.
    pub revision: RevisionChoice,
    /// Start of the window (included).
    pub from: Timestamp,
    /// End of the window (excluded).
    pub to: Timestamp,
    /// The entries replayed (at most 10,000).
    pub replayed: u64,
    /// Whether the window held more entries to replay than the 10,000 replayed (the oldest).
    pub truncated: bool,
    /// The entries whose replay assigned another member than the dispatch did (`null`
    /// included on either side).
    pub changed: u64,
    /// Each outcome `message` of the replay and how many entries ended with it.
    pub outcomes: BTreeMap<String, u64>,
    /// The replayed configuration's pool in pool order, then anyone else assigned in either
    /// column (by e-mail).
    pub members: Vec<ReplayMember>,
    /// The first 20 changed entries, oldest first.
    pub samples: Vec<ReplaySample>,
}

/// Runs what-if replays over the store.
pub struct Replayer {
    store: Arc<dyn ReplayPorts>,
    clock: Arc<dyn Clock>,
    catalogues: Arc<CatalogueCache>,
    /// Most entries replayed ([`MAX_REPLAYED`]).
    cap: usize,
    /// Entries read and replayed together ([`REPLAY_WINDOW`]).
    window: usize,
    /// Bytes of record projections kept ([`MEMO_BYTES`]).
    memo_bytes: usize,
    /// Records asked for in one read ([`RECORDS_PER_READ`]).
    records_per_read: usize,
}

impl Replayer {
    /// A replayer reading `store`, taking "now" (the default `to`, expired entries) from
    /// `clock` and field catalogues through `catalogues`.
    pub fn new(
        store: Arc<dyn ReplayPorts>, clock: Arc<dyn Clock>, catalogues: Arc<CatalogueCache>,
    ) -> Self {
        Self {
            store,
            clock,
            catalogues,
            cap: MAX_REPLAYED,
            window: REPLAY_WINDOW,
            memo_bytes: MEMO_BYTES,
            records_per_read: RECORDS_PER_READ,
        }
    }

    /// The same replayer replaying at most `cap` entries instead of [`MAX_REPLAYED`], and so
    /// reading at most [`READ_FACTOR`] times `cap` (tests show the rules on a small window).
    pub fn with_cap(mut self, cap: usize) -> Self {
        self.cap = cap;
        self
    }

    /// The same replayer reading and replaying `window` entries at a time instead of
    /// [`REPLAY_WINDOW`] (at least 1; tests show that a record named in several windows is
    /// still read once).
    pub fn with_window(mut self, window: usize) -> Self {
        self.window = window.max(1);
        self
    }

    /// The same replayer keeping at most `bytes` of record projections instead of
    /// [`MEMO_BYTES`] (tests show what happens past it: records named again are read again, the
    /// answer is the same).
    pub fn with_memo_bytes(mut self, bytes: usize) -> Self {
        self.memo_bytes = bytes;
        self
    }

    /// The same replayer asking for at most `records` records in one read instead of
    /// [`RECORDS_PER_READ`] (at least 1; the bench compares the whole window at once, as before
    /// reads were bounded in bytes).
    pub fn with_records_per_read(mut self, records: usize) -> Self {
        self.records_per_read = records.max(1);
        self
    }

    /// `POST /routers/{id}/simulate` (BEHAVIOR 16): replays `body`'s configuration over the
    /// window's entries. Writes nothing.
    ///
    /// Errors (in this order): 404 `Router not found`; `body`'s own error (not a JSON object)
    /// and the 400s of [`SimulateRequest::parse`]; 404 `Draft not found` / `Revision not
    /// found`; 500 when the store fails.
    pub async fn simulate(
        &self, account_id: AccountId, router_id: RouterId,
        body: Result<Map<String, Value>, DomainError>,
    ) -> Result<Simulation, DomainError> {
        let router = self
            .store
            .get_router(account_id, router_id)
            .await?
            .ok_or_else(|| DomainError::not_found(ROUTER_NOT_FOUND))?;
        let now = self.clock.now();
        let request = SimulateRequest::parse(&body?, now)?;
        let (config, teams, catalogues) = tokio::try_join!(
            async {
                Ok::<_, DomainError>(
                    request
                        .revision
                        .read(self.store.as_ref(), account_id, router_id)
                        .await?,
                )
            },
            async { Ok(self.store.list_teams(account_id).await?) },
            async { Ok(self.catalogues.get(self.store.as_ref(), account_id).await?) },
        )?;
        let router = request.revision.apply(&router, config.as_ref())?;
        let catalogue = catalogues.get(router.object_type);
        let roster = read_roster(
            self.store.as_ref(),
            account_id,
            &router,
            &teams,
            Named::default(),
        )
        .await?;
        let mut tally = Tally::default();
        let mut walk = Walk {
            store: self.store.as_ref(),
            account_id,
            router_id: router.id,
            window: request.window,
            now,
            page: self.window,
            cap: self.cap,
            budget: self.cap.saturating_mul(READ_FACTOR),
            read: 0,
            replayed: 0,
            after: None,
            ended: None,
        };
        match steps::settings(&router, catalogue) {
            Ok((settings, owner_field)) => {
                let config = Configuration {
                    router: &router,
                    settings,
                    owner_field,
                    catalogue,
                    teams: &teams,
                };
                let mut replay =
                    Replay::new(self.store.as_ref(), account_id, config, roster).await?;
                replay.memo_bytes = self.memo_bytes;
                replay.records_per_read = self.records_per_read;
                while let Some(entries) = walk.next().await? {
                    replay.window(&entries, &mut tally).await?;
                }
                tally.pool = replay.pool();
            }
            Err(stop) => {
                // Step 5 stops every run of this configuration: no record is read.
                let message = skip_of(stop)?.message();
                while let Some(entries) = walk.next().await? {
                    for entry in &entries {
                        tally.add(entry, None, message);
                    }
                }
                tally.pool = pool_of(&router, &teams, &roster.members);
            }
        }
        let truncated = walk.ended == Some(true);
        Ok(tally.answer(&router, request, truncated))
    }
}

/// The walk of a window's replay set (BEHAVIOR 16): entries of `source` `api` or `queue` whose
/// outcome is `Trigger did not match` or later in BEHAVIOR 6's order, not expired, oldest
/// first, one page of the router's history at a time, until the cap's worth were handed on or
/// the window ends, reading at most [`READ_FACTOR`] times the cap in entries (skipped ones
/// included).
struct Walk<'a> {
    store: &'a dyn DispatchStore,
    account_id: AccountId,
    router_id: RouterId,
    window: StatsWindow,
    now: DateTime<Utc>,
    /// Entries per page (the replay's window).
    page: usize,
    cap: usize,
    /// Most entries read.
    budget: usize,
    read: usize,
    replayed: usize,
    after: Option<Position>,
    /// `Some(truncated)` once the walk is over: whether it stopped before the window's end, at
    /// the cap (more entries of the set follow) or at the read bound (the window goes on).
    ended: Option<bool>,
}

impl Walk<'_> {
    /// The replay set's entries of the next page (possibly none), oldest first; `None` once
    /// the walk is over.
    ///
    /// Errors: the store's.
    async fn next(&mut self) -> Result<Option<Vec<DispatchEntry>>, StoreError> {
        if self.ended.is_some() {
            return Ok(None);
        }
        let page = self
            .store
            .list_router_dispatches_between(
                self.account_id,
                self.router_id,
                self.window.from,
                self.window.to,
                self.after.as_ref(),
                self.page.min(self.budget - self.read).max(1),
            )
            .await?;
        self.read += page.items.len();
        let mut entries = Vec::with_capacity(page.items.len());
        let mut full = false;
        for entry in page.items {
            if !is_replayed(&entry, self.now) {
                continue;
            }
            if self.replayed == self.cap {
                full = true;
                break;
            }
            self.replayed += 1;
            entries.push(entry);
        }
        match page.next {
            _ if full => self.ended = Some(true),
            None => self.ended = Some(false),
            Some(_) if self.read >= self.budget => self.ended = Some(true),
            Some(next) => self.after = Some(next),
        }
        Ok(Some(entries))
    }
}

/// The configuration replayed: the router (its draft or revision applied) with what step 5
/// found, the catalogue of its type and the account's teams.
#[derive(Clone, Copy)]
struct Configuration<'a> {
    router: &'a Router,
    settings: &'a RouterSettings,
    owner_field: &'a FieldDef,
    catalogue: &'a Catalogue,
    teams: &'a [Team],
}

/// A record as the replay keeps it once read: only what the evaluation reads of it
/// ([`Replay::projection`]), or `None` when it is gone (not found, or another account's).
type Kept = Option<Record>;

/// What one replay holds while it walks the window: the rotation state, and what it read once
/// for the whole replay, each bounded by the account or by the cap, never by the records'
/// size: the members (the configuration's roster, those the records' triggers name, the
/// matched companies' owners), the holiday calendars they and the router name, the companies
/// of the contacts' domains (their owner alone), and the records' projections
/// ([`MEMO_BYTES`] in all). The window's whole records are dropped as soon as projected.
struct Replay<'a> {
    store: &'a dyn ReplayPorts,
    account_id: AccountId,
    config: Configuration<'a>,
    /// The fields the evaluation reads of a record: the trigger's, the owner field, `email`.
    fields: HashSet<String>,
    roster: Roster,
    /// Member ids read (found or not).
    ids_asked: HashSet<MemberId>,
    /// By domain: its active company (id and `company_owner` only), or `None`.
    companies: HashMap<String, Option<Record>>,
    holidays: HolidayCalendars,
    calendars_asked: Vec<HolidayCalendarId>,
    /// Records read, projected, by id.
    records: HashMap<RecordId, Kept>,
    /// The bytes the projections in `records` hold (`memo_bytes` at most).
    kept_bytes: usize,
    /// Most bytes of projections kept ([`MEMO_BYTES`]).
    memo_bytes: usize,
    /// Records asked for in one read ([`RECORDS_PER_READ`]).
    records_per_read: usize,
    rotation: RotationState,
}

impl<'a> Replay<'a> {
    /// A replay of `config` whose roster (pool and backup) is `roster`: reads the calendars
    /// the router and the roster name.
    async fn new(
        store: &'a dyn ReplayPorts, account_id: AccountId, config: Configuration<'a>,
        roster: Roster,
    ) -> Result<Replay<'a>, DomainError> {
        let mut fields: HashSet<String> = config
            .settings
            .trigger
            .iter()
            .flat_map(|t| &t.groups)
            .flat_map(|g| &g.conditions)
            .map(|c| c.field.clone())
            .collect();
        fields.insert(config.owner_field.internal_name.clone());
        fields.insert("email".into());
        let mut calendars_asked = Vec::new();
        let router_calendar = config.settings.holiday_calendar_id;
        let mut wanted: Vec<HolidayCalendarId> = router_calendar.into_iter().collect();
        wanted.extend(holidays::unasked(&roster.members, &wanted));
        let calendars =
            holidays::read_calendars(store, account_id, &wanted, &mut calendars_asked).await?;
        Ok(Replay {
            store,
            account_id,
            config,
            fields,
            ids_asked: roster.members.iter().map(|m| m.id).collect(),
            roster,
            companies: HashMap::new(),
            holidays: HolidayCalendars::new(calendars, router_calendar),
            calendars_asked,
            records: HashMap::new(),
            kept_bytes: 0,
            memo_bytes: MEMO_BYTES,
            records_per_read: RECORDS_PER_READ,
            rotation: RotationState::default(),
        })
    }

    /// Replays `entries` (a window, oldest first) after the rotation so far, into `tally`:
    /// reads the records no earlier window read (one [`RecordStore::get_records`] of at most
    /// the window's entries), then the members, companies, owners and calendars they name that
    /// no earlier window read, then evaluates each entry in order.
    ///
    /// Errors: the store's.
    async fn window(
        &mut self, entries: &[DispatchEntry], tally: &mut Tally,
    ) -> Result<(), DomainError> {
        let mut wanted = Vec::new();
        let mut seen = HashSet::new();
        for id in entries.iter().filter_map(DispatchEntry::record_id) {
            if !self.records.contains_key(&id) && seen.insert(id) {
                wanted.push(id);
            }
        }
        // The window's own projections when the memo is full (read again if named again).
        let mut this_window: HashMap<RecordId, Kept> = HashMap::new();
        if !wanted.is_empty() {
            let mut found: HashMap<RecordId, Record> = HashMap::with_capacity(wanted.len());
            for chunk in wanted.chunks(self.records_per_read) {
                for record in self.store.get_records(self.account_id, chunk).await? {
                    found.insert(record.id, self.projection(record));
                }
            }
            for id in wanted {
                let kept = found.remove(&id);
                let bytes = kept.as_ref().map_or(0, projection_bytes);
                if self.kept_bytes + bytes <= self.memo_bytes {
                    self.kept_bytes += bytes;
                    self.records.insert(id, kept);
                } else {
                    this_window.insert(id, kept);
                }
            }
        }
        // What the window's records name that no earlier window read.
        let config = self.config;
        let mut ids = Vec::new();
        let mut domains: Vec<UniqueKey> = Vec::new();
        let mut domains_seen = HashSet::new();
        for entry in entries {
            let found = entry
                .record_id()
                .and_then(|id| kept(&self.records, &this_window, id));
            let Some(record) = found else {
                continue;
            };
            let record = replayed(record, entry, config.owner_field);
            for id in steps::trigger_member_ids(config.settings, &record, config.catalogue) {
                if self.ids_asked.insert(id) {
                    ids.push(id);
                }
            }
            if let Some(key) = steps::company_key(config.router, config.settings, &record) {
                if !self.companies.contains_key(&key.value)
                    && domains_seen.insert(key.value.clone())
                {
                    domains.push(key);
                }
            }
        }
        let (members, companies) = tokio::try_join!(
            async {
                match ids.is_empty() {
                    true => Ok(Vec::new()),
                    false => self.store.get_members(self.account_id, &ids).await,
                }
            },
            companies(self.store, self.account_id, &domains),
        )?;
        for member in members {
            self.roster.consistent.insert(member.id);
            self.roster.add_indexed(member);
        }
        steps::add_company_owners(
            self.store,
            self.account_id,
            &mut self.roster,
            companies.iter().filter_map(|(_, c)| c.as_ref()),
        )
        .await?;
        for (domain, company) in companies {
            self.companies.insert(domain, company);
        }
        let missing = holidays::unasked(&self.roster.members, &self.calendars_asked);
        if !missing.is_empty() {
            let more = holidays::read_calendars(
                self.store,
                self.account_id,
                &missing,
                &mut self.calendars_asked,
            )
            .await?;
            self.holidays = self.holidays.extended(more);
        }
        for entry in entries {
            let record = entry
                .record_id()
                .and_then(|id| kept(&self.records, &this_window, id))
                .map(|r| replayed(r, entry, config.owner_field));
            let (user, message) = match self.evaluate(entry, record) {
                Ok(decided) => decided,
                Err(stop) => (None, skip_of(stop)?.message()),
            };
            tally.add(entry, user, message);
        }
        Ok(())
    }

    /// The replay of one entry on its record as the replay sees it (`None`: gone): steps 6 to
    /// 14 at the entry's instant, the rotation moving on. Whom it assigns and its outcome.
    fn evaluate(
        &mut self, entry: &DispatchEntry, record: Option<Record>,
    ) -> Result<(Option<String>, &'static str), Stop> {
        let config = self.config;
        let record = steps::record(record, config.router)?;
        let company = steps::company_key(config.router, config.settings, &record)
            .and_then(|key| self.companies.get(&key.value))
            .and_then(Option::as_ref);
        let evaluation = Evaluation {
            router: config.router,
            settings: config.settings,
            owner_field: config.owner_field,
            catalogue: config.catalogue,
            record: &record,
            members: &self.roster.members,
            teams: config.teams,
            company,
            rotation: &self.rotation,
            now: entry.dispatched_at,
            limits: Limits::Ignored,
            excluded: None,
            holidays: &self.holidays,
        };
        let mut trace = Trace::default();
        let decided = steps::evaluate(&evaluation, &mut trace)?;
        if let Some(moved) = decided.rotation {
            self.rotation = moved.next;
        }
        Ok((Some(decided.owner.into_string()), OWNER_ASSIGNED))
    }

    /// What the replay keeps of `record`: its metadata and the values of the fields the
    /// evaluation reads (a trigger reads only its conditions' fields; step 8 the owner field;
    /// step 10 `email`), so a record named again in a later window is evaluated exactly as if
    /// read again.
    fn projection(&self, mut record: Record) -> Record {
        record.values.retain(|field, _| self.fields.contains(field));
        record
    }

    /// The configuration's pool in pool order (active members).
    fn pool(&self) -> Vec<String> {
        pool_of(self.config.router, self.config.teams, &self.roster.members)
    }
}

/// The record `id` as the replay keeps it: from the memo, or from the window's own projections.
fn kept<'m>(
    records: &'m HashMap<RecordId, Kept>, this_window: &'m HashMap<RecordId, Kept>, id: RecordId,
) -> Option<&'m Record> {
    match records.get(&id) {
        Some(kept) => kept.as_ref(),
        None => this_window.get(&id).and_then(Option::as_ref),
    }
}

/// `router`'s active pool among `members`, in pool order.
fn pool_of(router: &Router, teams: &[Team], members: &[Member]) -> Vec<String> {
    router
        .active_pool(teams, members)
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// The record as the replay of `entry` sees it (BEHAVIOR 16): its current fields, the owner
/// field holding the entry's `previous_owner` for an entry that assigned someone (absent when
/// that is `null`), and the record's current owner for an entry that assigned nobody.
fn replayed(record: &Record, entry: &DispatchEntry, owner_field: &FieldDef) -> Record {
    let mut record = record.clone();
    let owner = &owner_field.internal_name;
    match (&entry.previous_owner, entry.success) {
        (Some(previous), _) => {
            record.values.insert(owner.clone(), previous.clone());
        }
        (None, true) => {
            record.values.remove(owner);
        }
        (None, false) => {}
    }
    record
}

/// The bytes a projection holds, roughly: its values and a fixed share for the rest.
fn projection_bytes(record: &Record) -> usize {
    const FIXED: usize = 256;
    FIXED
        + record
            .values
            .iter()
            .map(|(k, v)| k.len() + v.len() + 48)
            .sum::<usize>()
}

/// What step 10 reads of a matched company: its id and `company_owner`.
fn company_projection(mut company: Record) -> Record {
    company.values.retain(|field, _| field == "company_owner");
    company
}

/// The active company of each of `keys` (distinct domains), by domain, looked up
/// [`COMPANY_LOOKUPS_AT_ONCE`] at a time (a buffered stream: never more in flight).
///
/// Errors: the store's.
async fn companies(
    store: &dyn RecordStore, account_id: AccountId, keys: &[UniqueKey],
) -> Result<Vec<(String, Option<Record>)>, StoreError> {
    use futures_util::stream::{self, StreamExt, TryStreamExt};
    // The lookups as values (not a closure over borrowed keys), so the future stays `Send`.
    let lookups: Vec<_> = keys
        .iter()
        .map(|key| company_of(store, account_id, key))
        .collect();
    stream::iter(lookups)
        .buffered(COMPANY_LOOKUPS_AT_ONCE)
        .try_collect()
        .await
}

/// The active company holding `key`, projected onto its owner ([`company_projection`]: the
/// whole company is dropped at once), with the domain it was looked up by.
async fn company_of(
    store: &dyn RecordStore, account_id: AccountId, key: &UniqueKey,
) -> Result<(String, Option<Record>), StoreError> {
    let company = steps::find_company(store, account_id, key).await?;
    Ok((key.value.clone(), company.map(company_projection)))
}

/// Whether `entry` belongs to a replay set at `now`: not expired (BEHAVIOR 8: the store may
/// delete it late), from `api` or `queue`, outcome `Trigger did not match` or later.
fn is_replayed(entry: &DispatchEntry, now: DateTime<Utc>) -> bool {
    const REPLAYED: [Skip; 4] = [
        Skip::TriggerDidNotMatch,
        Skip::CannotOverwrite,
        Skip::LimitReached,
        Skip::NoUsersAvailable,
    ];
    entry.expires_at > now
        && matches!(entry.source, DispatchSource::Api | DispatchSource::Queue)
        && (entry.message == OWNER_ASSIGNED
            || REPLAYED.iter().any(|s| s.message() == entry.message))
}

/// The outcome of a step that stopped a replayed run.
///
/// Errors: the store failure or internal error the step stopped with.
fn skip_of(stop: Stop) -> Result<Skip, DomainError> {
    match stop {
        Stop::Skip(skip) => Ok(skip),
        Stop::Failed(error) => Err(error),
        Stop::RecordMoved => Err(DomainError::internal(
            "a replayed run is not an SLA reassignment",
        )),
        Stop::AlreadyProcessed => Err(DomainError::internal("a replayed run has no queue message")),
    }
}

/// The running tallies of a replay, all it keeps of the entries it replayed: counts by outcome
/// and by member, the changed count and the first [`MAX_SAMPLES`] changed entries.
#[derive(Default)]
struct Tally {
    replayed: u64,
    outcomes: BTreeMap<&'static str, u64>,
    /// By e-mail: the replayed entries' real assignments.
    actual: HashMap<String, u64>,
    /// By e-mail: the replay's assignments.
    simulated: HashMap<String, u64>,
    changed: u64,
    samples: Vec<ReplaySample>,
    /// The configuration's pool, in pool order.
    pool: Vec<String>,
}

impl Tally {
    /// Counts `entry`, whose replay assigned `user` (or nobody) with `message`.
    fn add(&mut self, entry: &DispatchEntry, user: Option<String>, message: &'static str) {
        self.replayed += 1;
        *self.outcomes.entry(message).or_default() += 1;
        let real = entry.user.as_deref().filter(|_| entry.success);
        if let Some(real) = real {
            *self.actual.entry(real.to_string()).or_default() += 1;
        }
        if let Some(user) = &user {
            *self.simulated.entry(user.clone()).or_default() += 1;
        }
        if real != user.as_deref() {
            self.changed += 1;
            if self.samples.len() < MAX_SAMPLES {
                self.samples.push(ReplaySample {
                    entry_id: entry.id,
                    object_id: entry.object_id.clone(),
                    dispatched_at: Timestamp(entry.dispatched_at),
                    actual_user: real.map(str::to_string),
                    simulated_user: user,
                    simulated_message: message.to_string(),
                });
            }
        }
    }

    /// The answer: counts, shares, changes and samples.
    fn answer(self, router: &Router, request: SimulateRequest, truncated: bool) -> Simulation {
        let actual_total: u64 = self.actual.values().sum();
        let simulated_total: u64 = self.simulated.values().sum();
        let pool: HashSet<&str> = self.pool.iter().map(String::as_str).collect();
        let mut others: Vec<&str> = self
            .actual
            .keys()
            .chain(self.simulated.keys())
            .map(String::as_str)
            .filter(|e| !pool.contains(e))
            .collect();
        others.sort_unstable();
        others.dedup();
        let share = |n: u64, total: u64| {
            if total == 0 {
                0.0
            } else {
                n as f64 / total as f64
            }
        };
        let members = self
            .pool
            .iter()
            .map(String::as_str)
            .chain(others)
            .map(|email| {
                let a = self.actual.get(email).copied().unwrap_or(0);
                let s = self.simulated.get(email).copied().unwrap_or(0);
                ReplayMember {
                    user: email.to_string(),
                    actual: a,
                    simulated: s,
                    actual_share: share(a, actual_total),
                    simulated_share: share(s, simulated_total),
                    target_share: target_share(router, &self.pool, email),
                }
            })
            .collect();
        Simulation {
            router_id: router.id,
            revision: request.revision,
            from: Timestamp(request.window.from),
            to: Timestamp(request.window.to),
            replayed: self.replayed,
            truncated,
            changed: self.changed,
            outcomes: self
                .outcomes
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            members,
            samples: self.samples,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    fn parse(body: Value) -> Result<SimulateRequest, DomainError> {
        let body = body.as_object().cloned().unwrap();
        SimulateRequest::parse(&body, at("2026-11-22T09:30:00Z"))
    }

    #[test]
    fn the_defaults_are_the_draft_over_the_30_days_before_now() {
        let r = parse(json!({})).unwrap();
        assert_eq!(r.revision, RevisionChoice::Draft);
        assert_eq!(r.window.to, at("2026-11-22T09:30:00Z"));
        assert_eq!(r.window.from, at("2026-10-23T09:30:00Z"));
        let only_to = parse(json!({"to": "2026-11-01T00:00:00+01:00", "revision": 2})).unwrap();
        assert_eq!(only_to.revision, RevisionChoice::Number(2));
        assert_eq!(only_to.window.from, at("2026-10-01T23:00:00Z"));
        let future = parse(json!({"from": "2026-11-20T00:00:00Z", "to": "2027-01-01T00:00:00Z"}));
        assert!(future.is_ok(), "a future to is accepted");
    }

    #[test]
    fn bad_windows_and_keys_name_the_key() {
        let cases = [
            (json!({"from": "yesterday"}), "from"),
            (json!({"to": 5}), "to"),
            (json!({"from": null}), "from"),
            (
                json!({"from": "2026-11-02T00:00:00Z", "to": "2026-11-01T00:00:00Z"}),
                "from",
            ),
            (
                json!({"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T00:00:00Z"}),
                "from",
            ),
            (json!({"from": "2026-12-01T00:00:00Z"}), "from"),
            (
                json!({"from": "2026-01-01T00:00:00Z", "to": "2026-04-04T00:00:01Z"}),
                "to",
            ),
            (json!({"from": "2026-01-01T00:00:00Z"}), "to"),
            (json!({"revision": 0}), "revision"),
            (json!({"revision": "live"}), "revision"),
            (json!({"window": 30}), "window"),
        ];
        for (body, field) in cases {
            let err = parse(body.clone()).unwrap_err();
            assert_eq!(err.field(), Some(field), "{body}");
        }
        let exactly = json!({"from": "2026-01-01T00:00:00Z", "to": "2026-04-04T00:00:00Z"});
        assert!(parse(exactly).is_ok(), "exactly 93 days");
    }
}
