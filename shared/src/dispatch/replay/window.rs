//! The replay of one window's entries: the records no earlier window read (projected onto the
//! fields the evaluation reads, kept within [`super::MEMO_BYTES`]), the members, companies,
//! owners and calendars they name read once for the whole replay, then each entry evaluated by
//! the dispatch's own evaluation ([`crate::dispatch::steps::evaluate`]) at its instant, the
//! rotation moving on in memory.

use super::answer::Tally;
use super::bounds::{COMPANY_LOOKUPS_AT_ONCE, MEMO_BYTES, RECORDS_PER_READ};
use crate::dispatch::holidays;
use crate::dispatch::outcome::{Skip, OWNER_ASSIGNED};
use crate::dispatch::steps::{self, Evaluation, Limits, Stop, Trace};
use crate::error::DomainError;
use crate::fields::catalogue::{Catalogue, FieldDef};
use crate::model::account::Team;
use crate::model::dispatch::{DispatchEntry, RotationState};
use crate::model::member::Member;
use crate::model::record::{Record, UniqueKey};
use crate::model::router::{Router, RouterSettings};
use crate::routers::roster::Roster;
use crate::schedule::availability::HolidayCalendars;
use crate::store::ReplayPorts;
use crate::store::{RecordStore, StoreError};
use crate::types::ids::{AccountId, HolidayCalendarId, MemberId, RecordId};
use std::collections::{HashMap, HashSet};

/// The configuration replayed: the router (its draft or revision applied) with what step 5
/// found, the catalogue of its type and the account's teams.
#[derive(Clone, Copy)]
pub(super) struct Configuration<'a> {
    pub(super) router: &'a Router,
    pub(super) settings: &'a RouterSettings,
    pub(super) owner_field: &'a FieldDef,
    pub(super) catalogue: &'a Catalogue,
    pub(super) teams: &'a [Team],
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
pub(super) struct Replay<'a> {
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
    pub(super) memo_bytes: usize,
    /// Records asked for in one read ([`RECORDS_PER_READ`]).
    pub(super) records_per_read: usize,
    rotation: RotationState,
}

impl<'a> Replay<'a> {
    /// A replay of `config` whose roster (pool and backup) is `roster`: reads the calendars
    /// the router and the roster name.
    pub(super) async fn new(
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
    pub(super) async fn window(
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
    pub(super) fn pool(&self) -> Vec<String> {
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
pub(super) fn pool_of(router: &Router, teams: &[Team], members: &[Member]) -> Vec<String> {
    router
        .active_pool(teams, members)
        .into_iter()
        .map(|email| email.as_str().to_string())
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

/// The outcome of a step that stopped a replayed run.
///
/// Errors: the store failure or internal error the step stopped with.
pub(super) fn skip_of(stop: Stop) -> Result<Skip, DomainError> {
    match stop {
        Stop::Skip(skip) => Ok(skip),
        Stop::Failed(error) => Err(error),
        Stop::RecordMoved => Err(DomainError::internal(
            "a replayed run is not an SLA reassignment",
        )),
        Stop::AlreadyProcessed => Err(DomainError::internal("a replayed run has no queue message")),
    }
}
