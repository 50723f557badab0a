//! The what-if replay (BEHAVIOR 16): `POST /routers/{id}/simulate` runs a router's draft (or
//! any revision) over the records its history says it routed in a window, and answers what
//! would have changed. It writes nothing.
//!
//! One engine: each entry is replayed by [`steps::evaluate`], the evaluation of steps 7 to 14
//! that dispatch, the queue, SLA reassignment and explain run, after the same step 5
//! ([`steps::settings`]) and step 6 ([`steps::record`]) functions. The replay only supplies
//! the inputs differently: the instant is the entry's `dispatched_at` (availability, working
//! hours and out-of-office of [`crate::schedule::availability`] at that instant), the record's
//! owner field holds the entry's `previous_owner`, the rotation state lives in memory from empty
//! and moves as each rotation assignment moves it, and [`Limits::Ignored`] leaves out the
//! quota and capacity (the history does not hold their past values).
//!
//! Cost: one pass over the window's entries (pages of [`REPLAY_PAGE`] of the router's
//! history, oldest first, until [`MAX_REPLAYED`] + 1 entries of the replay set are found), each
//! replayed record read once ([`crate::store::RecordStore::get_records`]: `BatchGetItem`s of 100
//! keys in parallel waves), the configuration's roster and every member a trigger names read once
//! by key, each distinct company domain looked up once (routers with `account_matching`), the
//! account's teams and field catalogue once.

use super::outcome::{Skip, OWNER_ASSIGNED};
use super::steps::{self, Evaluation, Limits, Stop, Trace};
use crate::calendars::read_holiday_calendars;
use crate::clock::Clock;
use crate::error::DomainError;
use crate::fields::cache::CatalogueCache;
use crate::history::stats::{parse_instant, StatsWindow, WindowError, MAX_WINDOW_DAYS};
use crate::history::target_share;
use crate::model::dispatch::{DispatchEntry, DispatchSource, RotationState};
use crate::model::record::{Record, UniqueKey};
use crate::model::router::Router;
use crate::routers::manage::ROUTER_NOT_FOUND;
use crate::routers::revision::{RevisionChoice, REVISION_KEY};
use crate::routers::roster::{read_roster, Named};
use crate::store::{Position, Store};
use crate::timefmt::Timestamp;
use crate::types::ids::{AccountId, MemberId, RecordId, RouterId};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use utoipa::ToSchema;

/// Most entries one replay replays (the oldest of the window; BEHAVIOR 16).
pub const MAX_REPLAYED: usize = 10_000;
/// Entries read per page of the router's history.
pub const REPLAY_PAGE: usize = 1_000;
/// The default window: the 30 days before `to` (BEHAVIOR 16).
pub const DEFAULT_WINDOW_DAYS: i64 = 30;
/// Changed entries the answer shows (the first, oldest first).
pub const MAX_SAMPLES: usize = 20;
/// Company lookups (by domain) sent at once.
const COMPANY_LOOKUPS_AT_ONCE: usize = 16;

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
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    catalogues: Arc<CatalogueCache>,
    /// Most entries replayed ([`MAX_REPLAYED`]).
    cap: usize,
}

/// What one replay read before it evaluates anything.
struct Inputs {
    /// The replay set, oldest first.
    entries: Vec<DispatchEntry>,
    /// Whether the window held more.
    truncated: bool,
}

impl Replayer {
    /// A replayer reading `store`, taking "now" (the default `to`, expired entries) from
    /// `clock` and field catalogues through `catalogues`.
    pub fn new(
        store: Arc<dyn Store>, clock: Arc<dyn Clock>, catalogues: Arc<CatalogueCache>,
    ) -> Self {
        Self {
            store,
            clock,
            catalogues,
            cap: MAX_REPLAYED,
        }
    }

    /// The same replayer replaying at most `cap` entries instead of [`MAX_REPLAYED`] (tests
    /// show the cap's rule on a small window).
    pub fn with_cap(mut self, cap: usize) -> Self {
        self.cap = cap;
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
        let (config, teams, catalogues, inputs) = tokio::try_join!(
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
            self.replay_set(account_id, router_id, request.window, now),
        )?;
        let router = request.revision.apply(&router, config.as_ref())?;
        let catalogue = catalogues.get(router.object_type);
        let simulated = self
            .replay(account_id, &router, catalogue, &teams, &inputs.entries)
            .await?;
        let pool = simulated.pool;
        Ok(answer(
            &router,
            request,
            &inputs,
            &simulated.outcomes,
            &pool,
        ))
    }

    /// The window's replay set (BEHAVIOR 16): entries of `source` `api` or `queue` whose
    /// outcome is `Trigger did not match` or later in BEHAVIOR 6's order, not expired, oldest
    /// first, at most the cap ([`MAX_REPLAYED`]); read in pages until one more is found or the window
    /// ends.
    async fn replay_set(
        &self, account_id: AccountId, router_id: RouterId, window: StatsWindow, now: DateTime<Utc>,
    ) -> Result<Inputs, DomainError> {
        let mut entries: Vec<DispatchEntry> = Vec::new();
        let mut after: Option<Position> = None;
        loop {
            let page = self
                .store
                .list_router_dispatches_between(
                    account_id,
                    router_id,
                    window.from,
                    window.to,
                    after.as_ref(),
                    REPLAY_PAGE,
                )
                .await?;
            for entry in page.items {
                if !is_replayed(&entry, now) {
                    continue;
                }
                if entries.len() == self.cap {
                    return Ok(Inputs {
                        entries,
                        truncated: true,
                    });
                }
                entries.push(entry);
            }
            match page.next {
                Some(next) => after = Some(next),
                None => {
                    return Ok(Inputs {
                        entries,
                        truncated: false,
                    })
                }
            }
        }
    }

    /// Replays `entries` in order through `router`'s configuration: each one's outcome, and the
    /// configuration's pool (active members, pool order).
    async fn replay(
        &self, account_id: AccountId, router: &Router, catalogue: &crate::fields::Catalogue,
        teams: &[crate::model::account::Team], entries: &[DispatchEntry],
    ) -> Result<Replayed, DomainError> {
        let settings = steps::settings(router, catalogue);
        let (settings, owner_field) = match settings {
            Ok((settings, owner_field)) => (settings, owner_field),
            Err(stop) => {
                // Step 5 stops every run of this configuration; no record is read.
                let skip = skip_of(stop)?;
                let roster = read_roster(
                    self.store.as_ref(),
                    account_id,
                    router,
                    teams,
                    Named::default(),
                )
                .await?;
                return Ok(Replayed {
                    outcomes: entries.iter().map(|_| Replay::stopped(skip)).collect(),
                    pool: router
                        .active_pool(teams, &roster.members)
                        .into_iter()
                        .map(str::to_string)
                        .collect(),
                });
            }
        };
        // Each record once, as the replay sees it: its current fields, the owner field holding
        // the entry's `previous_owner`.
        let mut ids: Vec<RecordId> = entries
            .iter()
            .filter_map(DispatchEntry::record_id)
            .collect();
        let mut seen = HashSet::new();
        ids.retain(|id| seen.insert(*id));
        let records: HashMap<RecordId, Record> = self
            .store
            .get_records(account_id, &ids)
            .await?
            .into_iter()
            .map(|r| (r.id, r))
            .collect();
        let owner = owner_field.internal_name.clone();
        let replayed_record = |entry: &DispatchEntry| -> Option<Record> {
            let mut record = records.get(&entry.record_id()?)?.clone();
            match &entry.previous_owner {
                Some(previous) => record.values.insert(owner.clone(), previous.clone()),
                None => record.values.remove(&owner),
            };
            Some(record)
        };
        // Every member a trigger names, over every replayed record, with the roster: one read.
        let mut named: Vec<MemberId> = Vec::new();
        let mut domains: Vec<UniqueKey> = Vec::new();
        for entry in entries {
            if let Some(record) = replayed_record(entry) {
                for id in steps::trigger_member_ids(settings, &record, catalogue) {
                    if !named.contains(&id) {
                        named.push(id);
                    }
                }
                if let Some(key) = steps::company_key(router, settings, &record) {
                    if !domains.contains(&key) {
                        domains.push(key);
                    }
                }
            }
        }
        let (mut roster, companies, holidays) = tokio::try_join!(
            async {
                let named = Named {
                    ids: &named,
                    emails: &[],
                };
                Ok::<_, DomainError>(
                    read_roster(self.store.as_ref(), account_id, router, teams, named).await?,
                )
            },
            self.companies(account_id, &domains),
            read_holiday_calendars(
                self.store.as_ref(),
                account_id,
                settings.holiday_calendar_id
            ),
        )?;
        steps::add_company_owners(
            self.store.as_ref(),
            account_id,
            &mut roster,
            companies.values(),
        )
        .await?;
        let members = roster.members;
        let mut rotation = RotationState::default();
        let mut outcomes = Vec::with_capacity(entries.len());
        for entry in entries {
            let record = replayed_record(entry);
            let record = match steps::record(record, router) {
                Ok(record) => record,
                Err(stop) => {
                    outcomes.push(Replay::stopped(skip_of(stop)?));
                    continue;
                }
            };
            let company = steps::company_key(router, settings, &record)
                .and_then(|key| companies.get(&key.value));
            let evaluation = Evaluation {
                router,
                settings,
                owner_field,
                catalogue,
                record: &record,
                members: &members,
                teams,
                company,
                rotation: &rotation,
                now: entry.dispatched_at,
                limits: Limits::Ignored,
                excluded: None,
                holidays: &holidays,
            };
            let mut trace = Trace::default();
            match steps::evaluate(&evaluation, &mut trace) {
                Ok((user, _, moved)) => {
                    if let Some((_, next, _)) = moved {
                        rotation = next;
                    }
                    outcomes.push(Replay {
                        user: Some(user),
                        message: OWNER_ASSIGNED,
                    });
                }
                Err(stop) => outcomes.push(Replay::stopped(skip_of(stop)?)),
            }
        }
        Ok(Replayed {
            outcomes,
            pool: router
                .active_pool(teams, &members)
                .into_iter()
                .map(str::to_string)
                .collect(),
        })
    }

    /// The active company of each of `keys` (distinct domains), looked up
    /// [`COMPANY_LOOKUPS_AT_ONCE`] at a time, by domain.
    async fn companies(
        &self, account_id: AccountId, keys: &[UniqueKey],
    ) -> Result<HashMap<String, Record>, DomainError> {
        let mut found = HashMap::new();
        for chunk in keys.chunks(COMPANY_LOOKUPS_AT_ONCE) {
            let companies = futures_util::future::try_join_all(
                chunk
                    .iter()
                    .map(|key| steps::find_company(self.store.as_ref(), account_id, key)),
            )
            .await?;
            for (key, company) in chunk.iter().zip(companies) {
                if let Some(company) = company {
                    found.insert(key.value.clone(), company);
                }
            }
        }
        Ok(found)
    }
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

/// The replay of one entry.
struct Replay {
    /// Whom it assigns.
    user: Option<String>,
    /// Its outcome.
    message: &'static str,
}

impl Replay {
    fn stopped(skip: Skip) -> Self {
        Self {
            user: None,
            message: skip.message(),
        }
    }
}

/// What a replay found: each entry's outcome (in order) and the configuration's pool.
struct Replayed {
    outcomes: Vec<Replay>,
    pool: Vec<String>,
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
    }
}

/// The answer: counts, shares, changes and samples of `outcomes` against `inputs`' entries.
fn answer(
    router: &Router, request: SimulateRequest, inputs: &Inputs, outcomes: &[Replay],
    pool: &[String],
) -> Simulation {
    let mut counted: BTreeMap<String, u64> = BTreeMap::new();
    let mut actual: HashMap<&str, u64> = HashMap::new();
    let mut simulated: HashMap<&str, u64> = HashMap::new();
    let mut changed = 0u64;
    let mut samples = Vec::new();
    for (entry, replay) in inputs.entries.iter().zip(outcomes) {
        *counted.entry(replay.message.to_string()).or_default() += 1;
        let real = entry.user.as_deref().filter(|_| entry.success);
        if let Some(user) = real {
            *actual.entry(user).or_default() += 1;
        }
        if let Some(user) = &replay.user {
            *simulated.entry(user.as_str()).or_default() += 1;
        }
        if real != replay.user.as_deref() {
            changed += 1;
            if samples.len() < MAX_SAMPLES {
                samples.push(ReplaySample {
                    entry_id: entry.id,
                    object_id: entry.object_id.clone(),
                    dispatched_at: Timestamp(entry.dispatched_at),
                    actual_user: real.map(str::to_string),
                    simulated_user: replay.user.clone(),
                    simulated_message: replay.message.to_string(),
                });
            }
        }
    }
    let actual_total: u64 = actual.values().sum();
    let simulated_total: u64 = simulated.values().sum();
    let mut others: Vec<&str> = actual
        .keys()
        .chain(simulated.keys())
        .copied()
        .filter(|e| !pool.iter().any(|p| p == e))
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
    let members = pool
        .iter()
        .map(String::as_str)
        .chain(others)
        .map(|email| {
            let a = actual.get(email).copied().unwrap_or(0);
            let s = simulated.get(email).copied().unwrap_or(0);
            ReplayMember {
                user: email.to_string(),
                actual: a,
                simulated: s,
                actual_share: share(a, actual_total),
                simulated_share: share(s, simulated_total),
                target_share: target_share(router, pool, email),
            }
        })
        .collect();
    Simulation {
        router_id: router.id,
        revision: request.revision,
        from: Timestamp(request.window.from),
        to: Timestamp(request.window.to),
        replayed: inputs.entries.len() as u64,
        truncated: inputs.truncated,
        changed,
        outcomes: counted,
        members,
        samples,
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
