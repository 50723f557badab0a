//! The reads around the decision: the first round of a run (one wave of reads by key, with what
//! this instance has not cached of the account), the second round (what the first could not
//! know to read: the roster, the calendars, step 10's company, the subscriptions, the CRM token)
//! with steps 2 to 9 checked in between, and the choice of an owner made again until the chosen
//! member is known fresh.

use super::checks::{account, record, router, settings};
use super::company::{add_company_owners, matching_company};
use super::decide::{admit, decide, Decided, Evaluation, Limits};
use super::run::{Context, Run, Step, Stop, Trace};
use crate::dispatch::directory::AccountDirectory;
use crate::dispatch::hints::RouterHint;
use crate::dispatch::holidays;
use crate::dispatch::outcome::Skip;
use crate::dispatch::request::AccountContext;
use crate::error::DomainError;
use crate::fields::cache::AccountCatalogues;
use crate::fields::catalogue::{Catalogue, FieldDef};
use crate::model::dispatch::{AssignmentReason, RotationState, RotationWrite};
use crate::model::member::Member;
use crate::model::record::Record;
use crate::model::router::{Router, RouterConfig, RouterSettings};
use crate::model::webhook::WebhookSubscription;
use crate::page::PageRequest;
use crate::routers::roster::{read_roster_with, Named, Roster, RosterKeys};
use crate::schedule::availability::HolidayCalendars;
use crate::store::FirstReads;
use crate::types::email::Email;
use crate::types::ids::{AccountId, HolidayCalendarId, MemberId, RecordId, RouterId};
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// The account's webhook subscriptions for a run that writes, as its first round left them.
pub(super) enum Subscriptions {
    /// Known: those this instance kept at the version read (or none: a run that writes nothing).
    Known(Arc<Vec<WebhookSubscription>>),
    /// Not kept at the version the first round read: to list (after that read).
    Changed(u64),
}

/// The account's subscriptions listed now (strongly consistent; after `version` was read) and
/// kept at `version` ([`crate::webhooks::cache`]): the enabled ones.
pub(super) async fn listed_subscriptions(
    cx: &Context<'_>, account_id: AccountId, version: u64,
) -> Step<Arc<Vec<WebhookSubscription>>> {
    let page = PageRequest::first(crate::page::MAX_LIMIT, false);
    let listed = cx.store.list_webhooks(account_id, &page).await?.items;
    Ok(cx.subscriptions.keep(account_id, version, listed))
}

/// What the first round of reads found, for the steps to check.
pub(super) struct Found {
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
/// and the holiday calendars: [`crate::dispatch::hints`]) by key in one request
/// ([`crate::store::DispatchStore::first_round_reads`]), with them what this instance has not
/// cached of the account (the account itself in the same request, its teams and its field
/// definitions), and for a run that writes the version of the account's webhook subscriptions
/// (the same request).
pub(super) struct FirstRound {
    pub(super) account_id: AccountId,
    pub(super) found: Found,
    pub(super) subscriptions: Subscriptions,
}

pub(super) async fn first_round(
    cx: &Context<'_>, run: &Run<'_>, now: DateTime<Utc>,
) -> Step<FirstRound> {
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
pub(super) struct Checked {
    pub(super) directory: Arc<AccountDirectory>,
    pub(super) router: Router,
    pub(super) settings: RouterSettings,
    pub(super) owner_field: FieldDef,
    pub(super) catalogue: Catalogue,
    pub(super) record: Record,
    pub(super) rotation: RotationState,
    /// This month's assignments of the account (read only for an account with a quota).
    pub(super) count: u64,
    /// The router's roster and every member the run names, read in the second round.
    pub(super) roster: Roster,
    /// Step 10's company, read in the second round (contacts with `account_matching`).
    pub(super) company: Option<Record>,
    /// The holiday calendars the router and the roster name (BEHAVIOR 17), read by key in the
    /// second round with the pool ([`crate::dispatch::holidays`]).
    pub(super) holidays: HolidayCalendars,
    /// The calendar ids read (found or not), so a member added later reads only the others.
    pub(super) calendars_asked: Vec<HolidayCalendarId>,
    pub(super) month: String,
}

/// Steps 2 to 9 over what the first round found, and the second round of reads, for what the
/// first round could not know to read: the roster's members and holiday calendars that the
/// router's hint did not name (none on a warm instance whose router did not change:
/// [`crate::dispatch::hints`]), the e-mails of a roster without resolved ids and any member a trigger or an
/// SLA reassignment names ([`read_roster_with`]), step 10's company, the webhook subscriptions
/// when their version moved (`subscriptions`), and for a router with `has_integration` the
/// account's CRM token, opened. A member read in that round that names a calendar not read costs
/// one more round, for those calendars alone. The router's hint is kept for its next run.
pub(super) async fn check(
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
    let owner: Vec<&Email> = run.sla.map(|sla| &sla.owner).into_iter().collect();
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
            excluded: run.sla.map(|sla| &sla.owner),
            holidays: &self.holidays,
        }
    }
}

/// Steps 10 to 14 until the chosen member is known fresh: a member read by key in the roster
/// is; one read from the e-mail index (a router stored before its ids were resolved, step
/// 10's company owner) is read again, consistently, and a choice made on a stale copy is made
/// again with the fresh one.
pub(super) async fn choose_owner(
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
