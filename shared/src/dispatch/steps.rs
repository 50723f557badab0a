//! The evaluation of one dispatch, as named steps in BEHAVIOR 6's order. Each step either
//! hands the next one what it found, or stops the run with a [`Skip`] (a non-error outcome) or an
//! error. [`plan`] runs them and ends with the one atomic write of an assignment.

use super::capacity::{count_assignment, under_capacity};
use super::directory::{AccountDirectory, DirectoryCache};
use super::distribution;
use super::explain::{AccountMatch, Candidate, CandidateReason, Explanation};
use super::hints::{RouterHint, RouterHints};
use super::holidays;
use super::outcome::{Assigned, Skip, OWNER_ASSIGNED};
use super::request::{AccountContext, DispatchRequest};
use crate::clock::Clock;
use crate::crm::{CrmSync, OwnerUpdate};
use crate::error::DomainError;
use crate::fields::cache::{AccountCatalogues, CatalogueCache};
use crate::fields::catalogue::{Catalogue, FieldDef};
use crate::fields::definition::FieldType;
use crate::model::account::{Account, Team};
use crate::model::dispatch::{
    AssignmentReason, AssignmentWrite, DispatchEntry, DispatchSource, MessageDeduplicationId,
    RotationState, RotationWrite,
};
use crate::model::due::DueChanges;
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::record::{Record, UniqueKey};
use crate::model::router::{DistributionModel, RotationType, Router, RouterConfig, RouterSettings};
use crate::model::sla::{SlaSetting, SlaSettingView, SlaState};
use crate::model::webhook::WebhookSubscription;
use crate::page::PageRequest;
use crate::routers::revision::RevisionChoice;
use crate::routers::roster::{members_by_email, read_roster_with, Named, Roster, RosterKeys};
use crate::schedule::availability::{availability_on_holidays, HolidayCalendars};
use crate::sla::{starts_check, CheckSubject, SlaMinute, SlaRun};
use crate::store::DispatchPorts;
use crate::store::{FirstReads, MemberStore, RecordStore, StoreError};
use crate::timefmt::rfc3339_millis;
use crate::types::email::Email;
use crate::types::ids::{AccountId, HolidayCalendarId, MemberId, RecordId, RouterId};
use crate::webhooks::{Notify, SubscriptionCache};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::Arc;
use uuid::Uuid;

/// Why a step stopped the run.
#[derive(Debug)]
pub enum Stop {
    /// A non-error outcome (200 with only `message`).
    Skip(Skip),
    /// A failure (500).
    Failed(DomainError),
    /// An SLA reassignment found the record changed since its check read it (BEHAVIOR 14):
    /// the check reads it again.
    RecordMoved,
    /// The queue message's de-duplication id was used by a committed write (its marker was
    /// found in the first round): a redelivery, answered `Already processed`.
    AlreadyProcessed,
}

impl From<DomainError> for Stop {
    fn from(e: DomainError) -> Self {
        Self::Failed(e)
    }
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        Self::Failed(e.into())
    }
}

impl From<Skip> for Stop {
    fn from(skip: Skip) -> Self {
        Self::Skip(skip)
    }
}

/// What a step gives the next one, or why the run stops.
pub type Step<T> = Result<T, Stop>;

/// What the engine hands the steps: the store, the clock, the catalogue cache and how long
/// history entries are kept.
pub struct Context<'a> {
    /// The store.
    pub store: &'a dyn DispatchPorts,
    /// The clock.
    pub clock: &'a dyn Clock,
    /// The field catalogues.
    pub catalogues: &'a CatalogueCache,
    /// The accounts and their teams (cached like the catalogues).
    pub directory: &'a DirectoryCache,
    /// What each router's last run here read after the router ([`super::hints`]).
    pub hints: &'a RouterHints,
    /// The accounts' webhook subscriptions as last read here, with their version.
    pub subscriptions: &'a SubscriptionCache,
    /// Opens the accounts' stored CRM tokens.
    pub sealer: &'a dyn crate::secrets::Sealer,
    /// How long a history entry is kept (BEHAVIOR 8: 400 days by default).
    pub history_retention: chrono::Duration,
    /// How long an SLA minute lasts (BEHAVIOR 14: `SLA_MINUTE_SECONDS`).
    pub sla_minute: SlaMinute,
}

/// One run of the engine: what is asked, by whom, and from where.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// Whose account the run is in.
    pub context: AccountContext,
    /// The request.
    pub request: &'a DispatchRequest,
    /// The queued message's de-duplication id, which makes a redelivery a no-op.
    pub deduplication_id: Option<&'a MessageDeduplicationId>,
    /// `api` or `queue` (BEHAVIOR 8 `source`).
    pub source: DispatchSource,
    /// The router as it was read before this run (an SLA check's read of it), so the first
    /// attempt does not read it again. An attempt that lost a race reads it again: a publish
    /// may have moved it on (BEHAVIOR 15).
    pub known_router: Option<&'a Router>,
    /// Whether the run writes (dispatch) and so reads the account's webhook subscriptions to
    /// make its events; explain does not.
    pub writes: bool,
    /// For an SLA reassignment (BEHAVIOR 14): the check that asks for it. The run leaves its
    /// owner out of the pool and ignores `overwrite`; `None` for dispatch and explain.
    pub sla: Option<&'a SlaRun>,
    /// For explain with `revision` (BEHAVIOR 9): the configuration evaluated instead of the
    /// live one, whatever the router's publication state; `None`: the live revision.
    pub revision: Option<RevisionChoice>,
}

impl<'a> Run<'a> {
    /// A dispatch of `request` that writes: `source` `api` with a token's context, `queue` on
    /// the queue path (whose message's `deduplication_id` makes a redelivery a no-op).
    pub fn dispatch(
        context: AccountContext, request: &'a DispatchRequest,
        deduplication_id: Option<&'a MessageDeduplicationId>,
    ) -> Self {
        Self {
            context,
            request,
            deduplication_id,
            source: match context {
                AccountContext::Token(_) => DispatchSource::Api,
                AccountContext::RouterOwner => DispatchSource::Queue,
            },
            known_router: None,
            writes: true,
            sla: None,
            revision: None,
        }
    }
}

/// What a run learned on its way, whatever its end: the router (once found and not archived:
/// the history entry of a stop from step 4 on needs it) and the [`Explanation`].
#[derive(Debug, Default)]
pub struct Trace {
    /// The router, once found in the account and not archived.
    pub router: Option<Router>,
    /// What explain shows.
    pub explanation: Explanation,
    /// The account's enabled webhook subscriptions (for a run that writes), to make the run's
    /// events (BEHAVIOR 13): those this instance kept at the version the first round read, or
    /// listed after it.
    pub subscriptions: Arc<Vec<WebhookSubscription>>,
}

/// An assignment ready to commit: the write and the answer it gives once committed.
pub struct Planned {
    /// Everything the assignment writes, atomically (the history entry included).
    pub write: AssignmentWrite,
    /// What the caller is told.
    pub assigned: Assigned,
    /// For a router with `has_integration`: the CRM request to send after the commit, or the
    /// `crm_error` that makes a request pointless (BEHAVIOR 7's first three rows).
    pub crm: Option<Result<OwnerUpdate, String>>,
    /// Whom the `assignment.created` event says to notify (BEHAVIOR 13).
    pub notify: Notify,
    /// The SLA check the assignment starts (BEHAVIOR 14; the entry's `sla` says `pending`):
    /// its due time and what its due item names. The engine stores the item in the write.
    pub sla_check: Option<(DateTime<Utc>, CheckSubject)>,
}

/// Runs every step of `run` and returns the assignment to commit, recording in `trace` what it
/// found. Writes nothing: dispatch commits the result, explain shows it (BEHAVIOR 9).
///
/// Errors: [`Stop::Skip`] at the first check that stops the run, [`Stop::Failed`] when the
/// store fails.
pub async fn plan(cx: &Context<'_>, run: &Run<'_>, trace: &mut Trace) -> Step<Planned> {
    let now = cx.clock.now();
    let first = first_round(cx, run, now).await?;
    let account_id = first.account_id;
    let mut subscriptions = first.subscriptions;
    if let Subscriptions::Known(known) = &subscriptions {
        trace.subscriptions = known.clone();
    }
    let planned = async {
        let checked = check(cx, run, first.found, &mut subscriptions, trace).await?; // steps 2 to 9
        let (member, reason, rotation) = choose_owner(cx, run, &checked, now, trace).await?;
        Ok(assign(cx, run, &checked, member, reason, rotation, now))
    }
    .await;
    if let Subscriptions::Known(known) = &subscriptions {
        trace.subscriptions = known.clone();
    }
    match planned {
        // A dispatch that stopped after the router was found appends a history entry, whose
        // events go to the subscriptions: read them now if the run stopped before it did.
        Err(Stop::Skip(skip)) if trace.router.is_some() && run.sla.is_none() => {
            if let Subscriptions::Changed(version) = subscriptions {
                trace.subscriptions = listed_subscriptions(cx, account_id, version).await?;
            }
            Err(Stop::Skip(skip))
        }
        planned => planned,
    }
}

/// The account's webhook subscriptions for a run that writes, as its first round left them.
enum Subscriptions {
    /// Known: those this instance kept at the version read (or none: a run that writes nothing).
    Known(Arc<Vec<WebhookSubscription>>),
    /// Not kept at the version the first round read: to list (after that read).
    Changed(u64),
}

/// The account's subscriptions listed now (strongly consistent; after `version` was read) and
/// kept at `version` ([`crate::webhooks::cache`]): the enabled ones.
async fn listed_subscriptions(
    cx: &Context<'_>, account_id: AccountId, version: u64,
) -> Step<Arc<Vec<WebhookSubscription>>> {
    let page = PageRequest::first(crate::page::MAX_LIMIT, false);
    let listed = cx.store.list_webhooks(account_id, &page).await?.items;
    Ok(cx.subscriptions.keep(account_id, version, listed))
}

/// What the first round of reads found, for the steps to check.
struct Found {
    directory: Option<Arc<AccountDirectory>>,
    /// The account's field catalogues (from the cache, or read in this round).
    catalogues: Arc<AccountCatalogues>,
    router: Option<Router>,
    record: Option<Record>,
    rotation: RotationState,
    count: u64,
    month: String,
    /// For a run with `revision`: the chosen configuration (`None` when there is none).
    chosen: Option<RouterConfig>,
    /// The members read with the first round (the router's roster as its last run here read
    /// it), each once.
    members: Vec<Member>,
    /// The holiday calendars read with the first round, found.
    calendars: Vec<crate::model::holiday_calendar::HolidayCalendar>,
    /// The calendar ids read with the first round, found or not.
    calendars_asked: Vec<HolidayCalendarId>,
}

/// The first round, the run's wave: whose account (the token's; on the queue path the router's,
/// from the router's hint on a warm instance, else read first), then at once everything the steps
/// may need that depends on no answer of theirs: router, record, rotation state, monthly count,
/// and the keys the router's last run on this instance read after the router (its pool's members
/// and the holiday calendars: [`super::hints`]) by key in one request
/// ([`crate::store::DispatchStore::first_round_reads`]), with them what this instance has not
/// cached of the account (the account itself in the same request, its teams and its field
/// definitions), and for a run that writes the version of the account's webhook subscriptions
/// (the same request).
struct FirstRound {
    account_id: AccountId,
    found: Found,
    subscriptions: Subscriptions,
}

async fn first_round(cx: &Context<'_>, run: &Run<'_>, now: DateTime<Utc>) -> Step<FirstRound> {
    let request = run.request;
    let router_id = RouterId::try_parse(&request.router_id);
    let month = now.format("%Y-%m").to_string();
    let hint = router_id.and_then(|id| cx.hints.get(id));
    let (account_id, owning_router) = match (run.context, run.known_router, &hint) {
        (AccountContext::Token(account_id), _, _) => (account_id, None),
        // The queue path on a warm instance: a router's account never changes, so its hint
        // names it, and the router is read in the wave with the rest (step 3 finds it there or
        // not, as a read of it would).
        (AccountContext::RouterOwner, None, Some(hint)) => {
            let expected = request.account_id.as_deref().map(AccountId::try_parse);
            if expected.is_some_and(|e| e != Some(hint.account_id)) {
                return Err(Skip::RouterNotFound.into());
            }
            (hint.account_id, None)
        }
        (AccountContext::RouterOwner, _, _) => {
            let router = owning_router(cx, run, router_id).await?;
            (router.account_id, Some(router))
        }
    };
    let hint = hint.filter(|h| h.account_id == account_id);
    let cached = cx.directory.cached(account_id);
    let catalogues = cx.catalogues.cached(account_id);
    let known = run.known_router.cloned().or(owning_router);
    // The count matters only to an account with a quota; a cold instance does not know yet
    // whether it has one, and reads it with the account rather than after it.
    let count_wanted = cached
        .as_ref()
        .is_none_or(|d| d.account.assignment_quota.is_some());
    let (members, calendars) = match &hint {
        Some(hint) => (hint.members.clone(), hint.calendars.clone()),
        None => (Vec::new(), Vec::new()),
    };
    let reads = FirstReads {
        account: cached.is_none(),
        router: router_id.filter(|_| known.is_none()),
        record: RecordId::try_parse(&request.object_id),
        rotation: router_id,
        month: count_wanted.then(|| month.clone()),
        members,
        calendars,
        webhooks_version: run.writes,
        marker: run.deduplication_id.cloned(),
        ..FirstReads::of(account_id)
    };
    let (found, teams, definitions, chosen) = tokio::try_join!(
        cx.store.first_round_reads(&reads),
        async {
            match cached {
                Some(_) => Ok(None),
                None => cx.store.list_teams(account_id).await.map(Some),
            }
        },
        async {
            match catalogues {
                Some(_) => Ok(None),
                None => cx.store.field_definitions(account_id).await.map(Some),
            }
        },
        async {
            match (run.revision, router_id) {
                (Some(choice), Some(id)) => choice.read(cx.store, account_id, id).await,
                _ => Ok(None),
            }
        },
    )?;
    if found.marker_used {
        return Err(Stop::AlreadyProcessed);
    }
    let directory = match cached {
        Some(directory) => Some(directory),
        None => cx
            .directory
            .fill(account_id, found.account, teams.unwrap_or_default()),
    };
    let catalogues = match (catalogues, definitions) {
        (Some(catalogues), _) => catalogues,
        // Kept only for an account that exists (one provisioned a moment later is read again).
        (None, Some(definitions)) if directory.is_some() => {
            cx.catalogues.insert(account_id, &definitions)
        }
        (None, definitions) => Arc::new(AccountCatalogues::build(&definitions.unwrap_or_default())),
    };
    let subscriptions = match run.writes {
        false => Subscriptions::Known(Arc::default()),
        true => match cx.subscriptions.at(account_id, found.webhooks_version) {
            Some(kept) => Subscriptions::Known(kept),
            None => Subscriptions::Changed(found.webhooks_version),
        },
    };
    let quota = directory.as_ref().and_then(|d| d.account.assignment_quota);
    Ok(FirstRound {
        account_id,
        found: Found {
            directory,
            catalogues,
            router: found.router.or(known),
            record: found.record,
            rotation: found.rotation,
            count: quota.map_or(0, |_| found.count),
            month,
            chosen,
            members: found.members,
            calendars: found.calendars,
            calendars_asked: reads.calendars,
        },
        subscriptions,
    })
}

/// Everything steps 2 to 9 established, for the choice of an owner.
struct Checked {
    directory: Arc<AccountDirectory>,
    router: Router,
    settings: RouterSettings,
    owner_field: FieldDef,
    catalogue: Catalogue,
    record: Record,
    rotation: RotationState,
    /// This month's assignments of the account (read only for an account with a quota).
    count: u64,
    /// The router's roster and every member the run names, read in the second round.
    roster: Roster,
    /// Step 10's company, read in the second round (contacts with `account_matching`).
    company: Option<Record>,
    /// The holiday calendars the router and the roster name (BEHAVIOR 17), read by key in the
    /// second round with the pool ([`super::holidays`]).
    holidays: HolidayCalendars,
    /// The calendar ids read (found or not), so a member added later reads only the others.
    calendars_asked: Vec<HolidayCalendarId>,
    month: String,
}

/// Steps 2 to 9 over what the first round found, and the second round of reads, for what the
/// first round could not know to read: the roster's members and holiday calendars that the
/// router's hint did not name (none on a warm instance whose router did not change:
/// [`super::hints`]), the e-mails of a roster without resolved ids and any member a trigger or an
/// SLA reassignment names ([`read_roster_with`]), step 10's company, the webhook subscriptions
/// when their version moved (`subscriptions`), and for a router with `has_integration` the
/// account's CRM token, opened. A member read in that round that names a calendar not read costs
/// one more round, for those calendars alone. The router's hint is kept for its next run.
async fn check(
    cx: &Context<'_>, run: &Run<'_>, found: Found, subscriptions: &mut Subscriptions,
    trace: &mut Trace,
) -> Step<Checked> {
    let directory = found.directory;
    account(directory.as_deref())?; // step 2
    let directory = directory.ok_or(Skip::AccountNotFound)?;
    let account = &directory.account;
    let router = self::router(
        found.router.filter(|r| r.account_id == account.id),
        run.revision.map(|choice| (choice, found.chosen.as_ref())),
        trace,
    )?; // steps 3, 4
    let catalogue = found.catalogues.get(router.object_type).clone();
    let (settings, owner_field) = settings(&router, &catalogue)?; // step 5
    let (settings, owner_field) = (settings.clone(), owner_field.clone());
    let record = self::record(found.record, &router)?; // step 6
    if run
        .sla
        .is_some_and(|sla| sla.record_version != record.version)
    {
        return Err(Stop::RecordMoved);
    }
    let trigger_ids = trigger_member_ids(&settings, &record, &catalogue);
    let owner: Vec<&str> = run.sla.map(|sla| sla.owner.as_str()).into_iter().collect();
    let named = Named {
        ids: &trigger_ids,
        emails: &owner,
    };
    let keys = RosterKeys::of(&router, &directory.teams, named);
    let router_calendar = settings.holiday_calendar_id;
    // The calendars known to be named now: the router's and those of the members already read
    // that the roster wants.
    let mut asked = found.calendars_asked;
    let mut named_now: Vec<HolidayCalendarId> = router_calendar.into_iter().collect();
    for id in holidays::named_by(found.members.iter().filter(|m| keys.ids.contains(&m.id))) {
        if !named_now.contains(&id) {
            named_now.push(id);
        }
    }
    let changed = match subscriptions {
        Subscriptions::Changed(version) => Some(*version),
        Subscriptions::Known(_) => None,
    };
    let (roster, company, more_calendars, listed, ()) = tokio::try_join!(
        async {
            read_roster_with(cx.store, account.id, &keys, found.members)
                .await
                .map_err(Stop::from)
        },
        matching_company(cx, account.id, &router, &settings, &record),
        async {
            holidays::read_calendars(cx.store, account.id, &named_now, &mut asked)
                .await
                .map_err(Stop::from)
        },
        async {
            match changed {
                Some(version) => listed_subscriptions(cx, account.id, version)
                    .await
                    .map(Some),
                None => Ok(None),
            }
        },
        async {
            if router.has_integration {
                directory.crm(cx.sealer).await;
            }
            Ok(())
        },
    )?;
    if let Some(listed) = listed {
        *subscriptions = Subscriptions::Known(listed);
    }
    let mut calendars = found.calendars;
    calendars.extend(more_calendars);
    let missing = holidays::unasked(&roster.members, &asked);
    calendars.extend(holidays::read_calendars(cx.store, account.id, &missing, &mut asked).await?);
    if run.revision.is_none() {
        // The live configuration's keys, for the router's next run here.
        let mut named_calendars: Vec<HolidayCalendarId> = router_calendar.into_iter().collect();
        let roster_ids = keys.roster_ids();
        let roster_members = roster.members.iter().filter(|m| roster_ids.contains(&m.id));
        for id in holidays::named_by(roster_members) {
            if !named_calendars.contains(&id) {
                named_calendars.push(id);
            }
        }
        cx.hints.remember(
            router.id,
            RouterHint {
                account_id: account.id,
                version: router.version,
                members: roster_ids.to_vec(),
                calendars: named_calendars,
            },
        );
    }
    let checked = Checked {
        directory,
        router,
        settings,
        owner_field,
        catalogue,
        record,
        rotation: found.rotation,
        count: found.count,
        roster,
        company,
        holidays: HolidayCalendars::new(calendars, router_calendar),
        calendars_asked: asked,
        month: found.month,
    };
    admit(
        &checked.evaluation(run, &checked.roster.members, cx.clock.now()),
        trace,
    )?; // 7 to 9
    Ok(checked)
}

impl Checked {
    /// The evaluation of steps 7 to 14 over what the run read, with `members` (the roster, or
    /// the roster as read again) at `now`.
    fn evaluation<'a>(
        &'a self, run: &'a Run<'_>, members: &'a [Member], now: DateTime<Utc>,
    ) -> Evaluation<'a> {
        Evaluation {
            router: &self.router,
            settings: &self.settings,
            owner_field: &self.owner_field,
            catalogue: &self.catalogue,
            record: &self.record,
            members,
            teams: &self.directory.teams,
            company: self.company.as_ref(),
            rotation: &self.rotation,
            now,
            limits: Limits::Applied {
                quota: self.directory.account.assignment_quota,
                count: self.count,
            },
            excluded: run.sla.map(|sla| sla.owner.as_str()),
            holidays: &self.holidays,
        }
    }
}

/// Company owners looked up by e-mail at once ([`add_company_owners`]; the what-if replay
/// may name thousands).
pub const OWNER_LOOKUPS_AT_ONCE: usize = 16;

/// Step 10's company owners outside `roster`: the `company_owner` of each of `companies` that
/// names no member read yet, each once, added from the e-mail index (eventually consistent: a
/// chosen one is read again before it is written, [`choose_owner`]). Dispatch, explain and the
/// what-if replay read them through this, after the roster and the companies.
///
/// Errors: the store's.
pub(crate) async fn add_company_owners<'c>(
    store: &dyn MemberStore, account_id: AccountId, roster: &mut Roster,
    companies: impl IntoIterator<Item = &'c Record>,
) -> Result<(), StoreError> {
    let mut owners: Vec<&str> = companies
        .into_iter()
        .filter_map(|c| c.value("company_owner"))
        .filter(|owner| roster.by_email(owner).is_none())
        .collect();
    owners.sort_unstable();
    owners.dedup();
    for chunk in owners.chunks(OWNER_LOOKUPS_AT_ONCE) {
        for member in members_by_email(store, account_id, chunk).await? {
            roster.add_indexed(member);
        }
    }
    Ok(())
}

/// Steps 10 to 14 until the chosen member is known fresh: a member read by key in the roster
/// is; one read from the e-mail index (a router stored before its ids were resolved, step
/// 10's company owner) is read again, consistently, and a choice made on a stale copy is made
/// again with the fresh one.
async fn choose_owner(
    cx: &Context<'_>, run: &Run<'_>, checked: &Checked, now: DateTime<Utc>, trace: &mut Trace,
) -> Step<(Member, AssignmentReason, Option<RotationWrite>)> {
    let account = &checked.directory.account;
    let mut roster = checked.roster.clone();
    add_company_owners(cx.store, account.id, &mut roster, checked.company.as_ref()).await?;
    let mut holidays = checked.holidays.clone();
    let mut asked = checked.calendars_asked.clone();
    for _ in 0..MAX_STALE_CHOICES {
        // A member added since the second round (a company owner, a member read again) may
        // name a calendar not read yet.
        let missing = holidays::unasked(&roster.members, &asked);
        if !missing.is_empty() {
            let more = holidays::read_calendars(cx.store, account.id, &missing, &mut asked).await?;
            holidays = holidays.extended(more);
        }
        let evaluation = Evaluation {
            holidays: &holidays,
            ..checked.evaluation(run, &roster.members, now)
        };
        let Decided {
            owner: email,
            reason,
            rotation,
        } = decide(&evaluation, trace)?;
        let Some(listed) = roster
            .members
            .iter()
            .find(|m| m.email == email && m.is_active())
            .cloned()
        else {
            return Err(DomainError::internal(format!(
                "the chosen owner {email} is not an active member"
            ))
            .into());
        };
        if roster.is_consistent(listed.id) {
            return Ok((listed, reason, rotation));
        }
        let fresh = cx.store.get_member(account.id, listed.id).await?;
        roster.members.retain(|m| m.id != listed.id);
        match fresh {
            Some(fresh) if fresh.version == listed.version => return Ok((fresh, reason, rotation)),
            Some(fresh) => {
                roster.consistent.insert(fresh.id);
                roster.members.push(fresh);
            }
            None => {}
        }
    }
    Err(
        DomainError::internal("the account's members kept changing while an owner was chosen")
            .into(),
    )
}

/// The assignment of `member` (steps 15 on): the writes and the answer.
fn assign(
    cx: &Context<'_>, run: &Run<'_>, checked: &Checked, member: Member, reason: AssignmentReason,
    rotation: Option<RotationWrite>, now: DateTime<Utc>,
) -> Planned {
    let member_write = match reason {
        AssignmentReason::Backup => None,
        _ => count_assignment(&member, checked.router.object_type, now),
    };
    // The member the record is taken from by an SLA reassignment (BEHAVIOR 13's `notify`).
    let previous = run.sla.and_then(|sla| checked.roster.by_email(&sla.owner));
    let check = checked
        .settings
        .sla
        .as_ref()
        .zip(starts_check(reason, run.sla.map(|sla| sla.reassignments)));
    let reason = match run.sla {
        Some(_) => AssignmentReason::SlaReassignment,
        None => reason,
    };
    let crm = checked.router.has_integration.then(|| {
        let connection = checked.directory.opened_crm();
        CrmSync::prepare(
            connection,
            checked.router.object_type,
            &checked.record,
            &member,
        )
    });
    assignment(AssignmentParts {
        cx,
        run,
        account: &checked.directory.account,
        router: &checked.router,
        record: checked.record.clone(),
        owner_field: &checked.owner_field,
        member: &member,
        reason,
        rotation,
        member_write,
        now,
        month: checked.month.clone(),
        crm,
        previous,
        check,
        holidays: &checked.holidays,
    })
}

/// The member ids step 7 resolves: the trigger read once with a resolver that notes what it
/// is asked (a `user` value that is a member id, in a condition or in the record).
pub(crate) fn trigger_member_ids(
    settings: &RouterSettings, record: &Record, catalogue: &Catalogue,
) -> Vec<MemberId> {
    let Some(trigger) = &settings.trigger else {
        return Vec::new();
    };
    let asked = std::cell::RefCell::new(Vec::new());
    let note = |id: &str| {
        if let Some(id) = MemberId::try_parse(id) {
            let mut asked = asked.borrow_mut();
            if !asked.contains(&id) {
                asked.push(id);
            }
        }
        None
    };
    trigger.explain(record, catalogue, &note);
    asked.into_inner()
}

/// Choices made again when the consistent read of the chosen member shows the list was stale.
const MAX_STALE_CHOICES: usize = 5;

/// What the run applies of the account's quota and the members' capacity (BEHAVIOR 6 steps 9
/// and 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limits {
    /// Dispatch and explain: the account's monthly `quota` (`None`: no quota) with `count`,
    /// this month's assignments; the members' capacity entries.
    Applied {
        /// The account's monthly assignment quota.
        quota: Option<u64>,
        /// This month's assignments so far.
        count: u64,
    },
    /// The what-if replay (BEHAVIOR 16): neither (the history does not hold their past values).
    Ignored,
}

/// Everything steps 7 to 14 decide over, once the reads are done: the one evaluation of
/// dispatch, the queue, SLA reassignment, explain and the what-if replay (BEHAVIOR 16), so that
/// none of them can drift from the others. Steps 2 to 6 (who, which router, which record) are
/// the callers' own; steps 7 to 9 are [`admit`], 10 to 14 [`decide`], both [`evaluate`].
pub struct Evaluation<'a> {
    /// The router, running the configuration evaluated (live, a draft or a revision).
    pub router: &'a Router,
    /// Its settings (step 5 found them assignable).
    pub settings: &'a RouterSettings,
    /// Its owner field (step 5).
    pub owner_field: &'a FieldDef,
    /// The field catalogue of the router's object type.
    pub catalogue: &'a Catalogue,
    /// The record (step 6 found it active), its owner field as the run sees it.
    pub record: &'a Record,
    /// The members the run read: the router's roster and every member the trigger or the
    /// matched company names (archived ones included; inactive ones are never chosen).
    pub members: &'a [Member],
    /// The account's teams.
    pub teams: &'a [Team],
    /// Step 10's company (contacts of a router with `account_matching`), when one matched.
    pub company: Option<&'a Record>,
    /// The rotation state the distribution model walks on from.
    pub rotation: &'a RotationState,
    /// The instant of the run: availability (working hours, out of office) is evaluated at it.
    pub now: DateTime<Utc>,
    /// Whether the quota and capacity apply.
    pub limits: Limits,
    /// The member an SLA reassignment leaves out (the record's current owner; BEHAVIOR 14): the
    /// run ignores `overwrite` then.
    pub excluded: Option<&'a str>,
    /// The holiday calendars the members and the router name (BEHAVIOR 17): a member is
    /// unavailable during a holiday of either, at `now`.
    pub holidays: &'a HolidayCalendars,
}

/// What the evaluation decides (steps 10 to 14).
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    /// The e-mail of the member who gets the record (a member of the evaluation's `members`).
    pub owner: Email,
    /// Why them.
    pub reason: AssignmentReason,
    /// The rotation state it moves to (`None` for account matching and backup, which move no
    /// rotation).
    pub rotation: Option<RotationWrite>,
}

/// Steps 7 to 14 of one run: [`admit`], then [`decide`]. The what-if replay runs exactly this
/// for each entry it replays.
///
/// Errors: the [`Stop::Skip`] of the first step that stops the run.
pub fn evaluate(e: &Evaluation<'_>, trace: &mut Trace) -> Step<Decided> {
    admit(e, trace)?;
    decide(e, trace)
}

/// Steps 7 to 9: the trigger holds, the router may overwrite the record's owner (an SLA
/// reassignment ignores it), the account's quota is not used up (when it applies).
///
/// Errors: [`Skip::TriggerDidNotMatch`], [`Skip::CannotOverwrite`], [`Skip::LimitReached`].
pub fn admit(e: &Evaluation<'_>, trace: &mut Trace) -> Step<()> {
    trigger(e.settings, e.record, e.catalogue, e.members, trace)?; // step 7
    if e.excluded.is_none() {
        overwrite(e.settings, e.record, e.owner_field)?; // step 8
    }
    if let Limits::Applied { quota, count } = e.limits {
        self::quota(quota, count)?; // step 9
    }
    Ok(())
}

/// Steps 10 to 14 over `e.members`: who gets the record, why, and the rotation state to write.
///
/// Errors: [`Skip::LimitReached`] (everyone available at capacity, or only weight-0 members),
/// [`Skip::NoUsersAvailable`].
pub fn decide(e: &Evaluation<'_>, trace: &mut Trace) -> Step<Decided> {
    let pool = Pool::new(
        e.members,
        e.now,
        e.settings.ignore_working_hours,
        e.holidays,
        e.router.object_type,
        e.excluded,
        matches!(e.limits, Limits::Applied { .. }),
    );
    trace.explanation.account_match = None;
    trace.explanation.candidates = None;
    Ok(match account_matching(e.company, &pool, trace) {
        // step 10
        Some(owner) => Decided {
            owner: pool.email_of(&owner)?,
            reason: AssignmentReason::AccountMatching,
            rotation: None,
        },
        None => {
            let teams = team_members(e.router, e.teams, &pool);
            let candidates = pool.candidates(e.router, e.settings, e.teams); // step 11
            trace.explanation.candidates = Some(candidates.clone());
            if candidates.iter().any(Candidate::available) {
                if !candidates.iter().any(Candidate::under_capacity) {
                    return Err(Skip::LimitReached.into()); // step 12
                }
                let state = e.rotation;
                let (chosen, next) = choose(e.router, e.settings, &candidates, &teams, state)?; // step 14
                Decided {
                    owner: pool.email_of(&chosen)?,
                    reason: AssignmentReason::Rotation,
                    rotation: Some(RotationWrite {
                        router_id: e.router.id,
                        next,
                        read_version: state.version,
                    }),
                }
            } else {
                // step 13
                Decided {
                    owner: pool.email_of(&backup(e.settings, &pool)?)?,
                    reason: AssignmentReason::Backup,
                    rotation: None,
                }
            }
        }
    })
}

/// The history entry of a run that stopped at `skip` after the router was found (BEHAVIOR 8:
/// from `The router is unpublished` on), at `now`.
pub fn stop_entry(
    cx: &Context<'_>, run: &Run<'_>, router: &Router, skip: Skip, now: DateTime<Utc>,
) -> DispatchEntry {
    DispatchEntry {
        expires_at: now + cx.history_retention,
        router_revision: router.revision,
        ..DispatchEntry::unassigned(
            router.account_id,
            router.id,
            router.object_type,
            run.request.object_id.clone(),
            skip.message().to_string(),
            run.source,
            now,
        )
    }
}

/// The router named by a queue message, in any account (router ids are unique): the queue
/// path's account is the router's own. A message's `account_id` that differs finds no router.
async fn owning_router(
    cx: &Context<'_>, run: &Run<'_>, router_id: Option<RouterId>,
) -> Step<Router> {
    if let Some(known) = run.known_router {
        return Ok(known.clone());
    }
    let router = match router_id {
        Some(id) => cx.store.find_router(id).await?,
        None => None,
    };
    let Some(router) = router else {
        return Err(Skip::RouterNotFound.into());
    };
    let expected = run.request.account_id.as_deref().map(AccountId::try_parse);
    if expected.is_some_and(|e| e != Some(router.account_id)) {
        return Err(Skip::RouterNotFound.into());
    }
    Ok(router)
}

/// Step 2: the account of the context exists and is active.
fn account(directory: Option<&AccountDirectory>) -> Step<&Account> {
    let account = &directory.ok_or(Skip::AccountNotFound)?.account;
    if !account.active {
        return Err(Skip::AccountNotActive.into());
    }
    Ok(account)
}

/// Steps 3 and 4: the router exists in the account, is not archived, and is published. A
/// router that exists and is not archived goes into `trace` (its history takes the entry).
/// With `chosen` (explain with `revision`, BEHAVIOR 9: the choice and the configuration it
/// found) the router runs that configuration, published or not.
///
/// Errors: [`Skip::RouterNotFound`], [`Skip::RouterUnpublished`]; with `chosen`, 404 `Draft not
/// found` / `Revision not found` when it found none.
fn router(
    router: Option<Router>, chosen: Option<(RevisionChoice, Option<&RouterConfig>)>,
    trace: &mut Trace,
) -> Step<Router> {
    let router = router
        .filter(|r| r.archived_at.is_none())
        .ok_or(Skip::RouterNotFound)?;
    let router = match chosen {
        Some((choice, config)) => choice.apply(&router, config)?,
        None => router,
    };
    trace.explanation.sla = router
        .settings
        .as_ref()
        .and_then(|s| s.sla.as_ref())
        .map(SlaSettingView::new);
    trace.router = Some(router.clone());
    if !router.is_published && chosen.is_none() {
        return Err(Skip::RouterUnpublished.into());
    }
    Ok(router)
}

/// Step 5: the router has settings with a `distribution_model` and an `owner_field` that is a
/// writable `user` field of its type.
pub(crate) fn settings<'r, 'c>(
    router: &'r Router, catalogue: &'c Catalogue,
) -> Step<(&'r RouterSettings, &'c FieldDef)> {
    let settings = router
        .settings
        .as_ref()
        .filter(|s| s.distribution_model.is_some())
        .ok_or(Skip::NoSettings)?;
    let owner_field = settings
        .owner_field
        .as_deref()
        .and_then(|f| catalogue.get(f))
        .filter(|d| d.field_type == FieldType::User && !d.is_system())
        .ok_or(Skip::NoSettings)?;
    Ok((settings, owner_field))
}

/// Step 6: the record is an active record of the router's type in the account.
pub(crate) fn record(record: Option<Record>, router: &Router) -> Step<Record> {
    Ok(record
        .filter(|r| r.object_type == router.object_type && r.is_active())
        .ok_or(Skip::ObjectNotFound)?)
}

/// Step 7: the trigger holds for the record (no trigger matches every record). A member id in
/// a `user` value is resolved among `members`, which hold every id the trigger asks for
/// ([`trigger_member_ids`], read with the roster), archived members included. Every condition is read
/// (no short-circuit) and the reading goes into `trace`.
fn trigger(
    settings: &RouterSettings, record: &Record, catalogue: &Catalogue, members: &[Member],
    trace: &mut Trace,
) -> Step<()> {
    let Some(trigger) = &settings.trigger else {
        return Ok(());
    };
    let resolve = |id: &str| {
        let id = MemberId::try_parse(id)?;
        members
            .iter()
            .find(|m| m.id == id)
            .map(|m| m.email.as_str().to_string())
    };
    let explained = trigger.explain(record, catalogue, &resolve);
    let matched = explained.matched;
    trace.explanation.trigger = Some(explained);
    if matched {
        Ok(())
    } else {
        Err(Skip::TriggerDidNotMatch.into())
    }
}

/// Step 8: a record that has an owner is assigned again only when the router may overwrite.
fn overwrite(settings: &RouterSettings, record: &Record, owner_field: &FieldDef) -> Step<()> {
    if record.value(&owner_field.internal_name).is_some() && !settings.overwrite {
        return Err(Skip::CannotOverwrite.into());
    }
    Ok(())
}

/// Step 9: the account's monthly `quota` (calendar month, UTC) is not used up; `count` is this
/// month's assignments (read only for an account with a quota).
fn quota(quota: Option<u64>, count: u64) -> Step<()> {
    if quota.is_some_and(|quota| count >= quota) {
        return Err(Skip::LimitReached.into());
    }
    Ok(())
}

/// The account's active members at the instant of the run, with what steps 10 to 14 ask of
/// them: availability (step 11) and capacity (step 12). An SLA reassignment leaves the record's
/// current owner out (BEHAVIOR 14): they keep their place in pool order (the rotation walks on
/// from them) but are never eligible, for the rotation, account matching or as backup.
struct Pool<'m> {
    /// The members read for the run, archived ones included.
    members: &'m [Member],
    by_email: HashMap<&'m str, &'m Member>,
    now: DateTime<Utc>,
    ignore_working_hours: bool,
    /// The calendars of the account and the router's (BEHAVIOR 17).
    holidays: &'m HolidayCalendars,
    object_type: ObjectType,
    excluded: Option<String>,
    /// Whether capacity entries apply ([`Limits::Applied`]).
    capacity: bool,
}

impl<'m> Pool<'m> {
    fn new(
        members: &'m [Member], now: DateTime<Utc>, ignore_working_hours: bool,
        holidays: &'m HolidayCalendars, object_type: ObjectType, excluded: Option<&str>,
        capacity: bool,
    ) -> Self {
        let by_email = members
            .iter()
            .filter(|m| m.is_active())
            .map(|m| (m.email.as_str(), m))
            .collect();
        Self {
            members,
            by_email,
            now,
            ignore_working_hours,
            holidays,
            object_type,
            excluded: excluded.map(str::to_string),
            capacity,
        }
    }

    /// Whether `email` is the member this run leaves out.
    fn is_excluded(&self, email: &str) -> bool {
        self.excluded.as_deref() == Some(email)
    }

    fn member(&self, email: &str) -> Option<&'m Member> {
        self.by_email.get(email).copied()
    }

    /// The e-mail of the active member `email` names, as the member holds it.
    ///
    /// Errors: 500 when `email` names no active member (a choice is always one).
    fn email_of(&self, email: &str) -> Step<Email> {
        let member = self.member(email).ok_or_else(|| {
            DomainError::internal(format!("the chosen owner {email} is not an active member"))
        })?;
        Ok(member.email.clone())
    }

    fn is_active(&self, email: &str) -> bool {
        self.by_email.contains_key(email)
    }

    /// How `email` stands now (BEHAVIOR 6 steps 11 and 12; BEHAVIOR 9's reasons, in order).
    fn assess(&self, email: &str, zero_weight: bool) -> Candidate {
        let mut reasons: Vec<CandidateReason> = Vec::new();
        if let Some(m) = self.member(email) {
            reasons.extend(
                availability_on_holidays(m, self.now, self.ignore_working_hours, self.holidays)
                    .reasons()
                    .iter()
                    .map(|r| CandidateReason::from(*r)),
            );
            if self.capacity && !under_capacity(m, self.object_type) {
                reasons.push(CandidateReason::AtCapacity);
            }
        }
        if zero_weight {
            reasons.push(CandidateReason::ZeroWeight);
        }
        let excluded = self.is_excluded(email);
        Candidate {
            user: email.to_string(),
            eligible: reasons.is_empty() && !excluded,
            reasons,
            excluded,
        }
    }

    /// Whether `email` is an active member who is available and under capacity.
    fn eligible(&self, email: &str) -> bool {
        self.is_active(email) && self.assess(email, false).under_capacity()
    }

    /// Step 11's pool without archived members ([`Router::active_pool`]), each assessed (a
    /// percentage router's weight-0 users are `zero_weight`).
    fn candidates(
        &self, router: &Router, settings: &RouterSettings, teams: &[Team],
    ) -> Vec<Candidate> {
        let percentage = settings.distribution_model == Some(DistributionModel::Percentage);
        let zero_weight = |email: &str| {
            percentage
                && router
                    .users
                    .iter()
                    .find(|u| u.email.as_str() == email)
                    .is_none_or(|u| distribution::is_zero_weight(u.percentage))
        };
        router
            .active_pool(teams, self.members)
            .into_iter()
            .map(|email| self.assess(email, zero_weight(email)))
            .collect()
    }
}

/// Step 10's read (contacts only, with `account_matching`): the oldest active company whose
/// `website_url` is the contact's e-mail domain, found by the uniqueness guard in one read.
async fn matching_company(
    cx: &Context<'_>, account_id: AccountId, router: &Router, settings: &RouterSettings,
    contact: &Record,
) -> Step<Option<Record>> {
    match company_key(router, settings, contact) {
        Some(key) => Ok(find_company(cx.store, account_id, &key).await?),
        None => Ok(None),
    }
}

/// Step 10's key (contacts of a router with `account_matching` only): the contact's e-mail
/// domain in the form `website_url` is stored in (A-labels, no `www.`;
/// `docs/decisions.md`, "E-mail addresses").
pub(crate) fn company_key(
    router: &Router, settings: &RouterSettings, contact: &Record,
) -> Option<UniqueKey> {
    if !settings.account_matching || router.object_type != ObjectType::Contacts {
        return None;
    }
    let domain = contact
        .value("email")
        .and_then(crate::types::email::Email::canonical_domain_of)?;
    Some(UniqueKey {
        field: "website_url".into(),
        value: domain.to_string(),
    })
}

/// The active company holding `key` (a [`company_key`]), by its uniqueness guard.
///
/// Errors: the store's.
pub(crate) async fn find_company(
    store: &dyn RecordStore, account_id: AccountId, key: &UniqueKey,
) -> Result<Option<Record>, StoreError> {
    let company = store
        .find_by_unique_key(account_id, ObjectType::Companies, key)
        .await?;
    Ok(company.filter(|c| c.is_active()))
}

/// Step 10: the matched `company`'s `company_owner`, when that owner is an active member who
/// is available and under capacity, in the router's pool or not. The match goes into `trace`.
fn account_matching(
    company: Option<&Record>, pool: &Pool<'_>, trace: &mut Trace,
) -> Option<String> {
    let company = company?;
    let owner = company.value("company_owner").map(str::to_string);
    let eligible = owner.as_deref().is_some_and(|o| pool.eligible(o));
    trace.explanation.account_match = Some(AccountMatch {
        company_id: company.id,
        owner: owner.clone(),
        eligible,
    });
    owner.filter(|_| eligible)
}

/// The router's teams, in router order, each with its active members in team order.
fn team_members(router: &Router, teams: &[Team], pool: &Pool<'_>) -> Vec<(String, Vec<String>)> {
    router
        .teams
        .iter()
        .map(|name| {
            let members = teams
                .iter()
                .find(|t| &t.name == name)
                .map(|t| {
                    t.members
                        .iter()
                        .map(|e| e.as_str().to_string())
                        .filter(|e| pool.is_active(e))
                        .collect()
                })
                .unwrap_or_default();
            (name.clone(), members)
        })
        .collect()
}

/// Step 13: nobody in the pool is available; the backup user takes it when set, enabled and
/// still an active member (availability and capacity are not checked for the backup).
fn backup(settings: &RouterSettings, pool: &Pool<'_>) -> Step<String> {
    settings
        .default_user
        .as_ref()
        .map(Email::as_str)
        .filter(|_| !settings.disable_default_assignment)
        .filter(|b| pool.is_active(b) && !pool.is_excluded(b))
        .map(str::to_string)
        .ok_or(Skip::NoUsersAvailable.into())
}

/// Step 14: the distribution model picks among the eligible members, and the rotation state
/// moves on. A router whose weights leave nobody (every eligible member at 0 %) has nobody to
/// give it to: `Assignment limit reached`.
fn choose(
    router: &Router, settings: &RouterSettings, assessed: &[Candidate],
    teams: &[(String, Vec<String>)], state: &RotationState,
) -> Step<(String, RotationState)> {
    let eligible = |email: &str| assessed.iter().any(|c| c.user == email && c.eligible);
    let candidates: Vec<String> = assessed.iter().map(|c| c.user.clone()).collect();
    let mut next = state.clone();
    let chosen = match (settings.distribution_model, settings.rotation_type) {
        (Some(DistributionModel::Percentage), _) => {
            let weighted: Vec<(String, f64)> = router
                .users
                .iter()
                .filter(|u| candidates.iter().any(|c| c == u.email.as_str()))
                .map(|u| (u.email.as_str().to_string(), u.percentage.unwrap_or(0.0)))
                .collect();
            let chosen = distribution::percentage(&weighted, &eligible, state).cloned();
            if let Some(c) = &chosen {
                *next.counts.entry(c.clone()).or_default() += 1;
                next.total += 1;
            }
            chosen
        }
        (_, RotationType::Teams) => {
            let chosen =
                distribution::teams(teams, &eligible, state).map(|(t, m)| (t.clone(), m.clone()));
            chosen.map(|(team, member)| {
                next.last_team = Some(team.clone());
                next.team_last_member.insert(team, member.clone());
                member
            })
        }
        (_, RotationType::Users) => {
            let chosen =
                distribution::round_robin(&candidates, &eligible, state.last_member.as_deref())
                    .cloned();
            next.last_member = chosen.clone();
            chosen
        }
    };
    let chosen = chosen.ok_or(Skip::LimitReached)?;
    next.version = state.version + 1;
    Ok((chosen, next))
}

struct AssignmentParts<'a> {
    cx: &'a Context<'a>,
    run: &'a Run<'a>,
    account: &'a Account,
    router: &'a Router,
    record: Record,
    owner_field: &'a FieldDef,
    member: &'a Member,
    reason: AssignmentReason,
    rotation: Option<RotationWrite>,
    member_write: Option<(Member, u64)>,
    now: DateTime<Utc>,
    month: String,
    crm: Option<Result<OwnerUpdate, String>>,
    /// For an SLA reassignment: the member the record is taken from.
    previous: Option<&'a Member>,
    /// The SLA check the assignment starts, with its count of SLA reassignments in a row.
    check: Option<(&'a SlaSetting, u8)>,
    /// The calendars of the run: the router's holidays move the check's `due_at` (BEHAVIOR 17).
    holidays: &'a HolidayCalendars,
}

/// The one atomic write of an assignment (BEHAVIOR 6, "Assignment writes"), its history entry
/// (BEHAVIOR 8) included.
fn assignment(p: AssignmentParts<'_>) -> Planned {
    let email = p.member.email.as_str().to_string();
    let owner = &p.owner_field.internal_name;
    let previous_owner = p.record.value(owner).map(str::to_string);
    let mut next_record = p.record.clone();
    next_record.values.insert(owner.clone(), email.clone());
    next_record
        .values
        .insert(format!("{owner}_assigned_date"), rfc3339_millis(p.now));
    next_record.updated_at = p.now.max(p.record.updated_at);
    next_record.version = p.record.version + 1;
    let assigned = Assigned {
        user: email.clone(),
        member_id: p.member.id,
        previous_member_id: p.previous.map(|m| m.id),
        field_name: p.owner_field.name.clone(),
        owner_assigned_at: p.now,
        reason: p.reason,
        record_id: p.record.id,
        previous_owner: previous_owner.clone(),
        crm: None,
    };
    let mut entry = DispatchEntry {
        id: Uuid::now_v7(),
        account_id: p.account.id,
        router_id: p.router.id,
        router_revision: p.router.revision,
        object_type: p.router.object_type,
        object_id: p.record.id.to_string(),
        message: OWNER_ASSIGNED.to_string(),
        success: true,
        user: Some(email),
        reason: Some(p.reason),
        previous_owner,
        field_name: Some(p.owner_field.name.clone()),
        owner_field: Some(owner.clone()),
        source: p.run.source,
        dispatched_at: p.now,
        crm_sync: p.crm.as_ref().map(CrmSync::initial_state),
        sla: None,
        expires_at: p.now + p.cx.history_retention,
    };
    let sla_check = p.check.map(|(setting, reassignments)| {
        let due_at =
            p.cx.sla_minute
                .due_outside_holidays(p.now, setting, p.holidays.router_calendar());
        entry.sla = Some(SlaState::pending(due_at));
        let subject = CheckSubject {
            entry: entry.key(),
            started: next_record
                .field(&setting.worked_field)
                .map(|v| v.into_owned()),
            reassignments,
        };
        (due_at, subject)
    });
    let write = AssignmentWrite {
        record: next_record,
        record_version: p.record.version,
        router_version: p.router.version,
        rotation: p.rotation,
        chosen: (p.member.id, p.member.version),
        member: p.member_write,
        month: p.month,
        quota: p.account.assignment_quota,
        entry,
        // The engine adds the run's explanation once the run is over (BEHAVIOR 18).
        snapshot: None,
        deduplication_id: p.run.deduplication_id.cloned(),
        completion: None,
        due: DueChanges {
            settle: p.run.sla.map(|sla| sla.settle.clone()),
            ..DueChanges::default()
        },
        ends_check: p.run.sla.map(|sla| sla.check.clone()),
    };
    Planned {
        write,
        assigned,
        crm: p.crm,
        notify: Notify::of(p.member, p.previous),
        sla_check,
    }
}
