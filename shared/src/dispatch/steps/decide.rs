//! The pure decision: steps 7 to 14 of BEHAVIOR 6 over what a run read ([`Evaluation`]), with
//! no read and no write. Dispatch, the queue, SLA reassignment, explain and the what-if replay
//! all run it, so none of them can drift from the others: [`admit`] (steps 7 to 9), then
//! [`decide`] (10 to 14: account matching, the pool, capacity, backup, the distribution model),
//! which answers who gets the record, why, and the rotation state to write ([`Decided`]).

use super::checks::{overwrite, quota, trigger};
use super::company::account_matching;
use super::pool::Pool;
use super::run::{Step, Trace};
use crate::dispatch::distribution;
use crate::dispatch::explain::Candidate;
use crate::dispatch::outcome::Skip;
use crate::fields::catalogue::{Catalogue, FieldDef};
use crate::model::account::Team;
use crate::model::dispatch::{AssignmentReason, RotationState, RotationWrite};
use crate::model::member::Member;
use crate::model::record::Record;
use crate::model::router::{DistributionModel, RotationType, Router, RouterSettings};
use crate::schedule::availability::HolidayCalendars;
use crate::types::email::Email;
use chrono::{DateTime, Utc};

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
    pub excluded: Option<&'a Email>,
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
            owner: pool.owner(&owner)?,
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
                    owner: pool.owner(&chosen)?,
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
                    owner: pool.owner(&backup(e.settings, &pool)?)?,
                    reason: AssignmentReason::Backup,
                    rotation: None,
                }
            }
        }
    })
}

/// The router's teams, in router order, each with its active members in team order.
fn team_members(router: &Router, teams: &[Team], pool: &Pool<'_>) -> Vec<(String, Vec<Email>)> {
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
                        .filter(|e| pool.is_active(e))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            (name.clone(), members)
        })
        .collect()
}

/// Step 13: nobody in the pool is available; the backup user takes it when set, enabled and
/// still an active member (availability and capacity are not checked for the backup).
fn backup(settings: &RouterSettings, pool: &Pool<'_>) -> Step<Email> {
    settings
        .default_user
        .as_ref()
        .filter(|_| !settings.disable_default_assignment)
        .filter(|b| pool.is_active(b) && !pool.is_excluded(b))
        .cloned()
        .ok_or(Skip::NoUsersAvailable.into())
}

/// Step 14: the distribution model picks among the eligible members, and the rotation state
/// moves on. A router whose weights leave nobody (every eligible member at 0 %) has nobody to
/// give it to: `Assignment limit reached`.
fn choose(
    router: &Router, settings: &RouterSettings, assessed: &[Candidate],
    teams: &[(String, Vec<Email>)], state: &RotationState,
) -> Step<(Email, RotationState)> {
    let eligible = |email: &Email| assessed.iter().any(|c| c.user == *email && c.eligible);
    let candidates: Vec<Email> = assessed.iter().map(|c| c.user.clone()).collect();
    let mut next = state.clone();
    let chosen = match (settings.distribution_model, settings.rotation_type) {
        (Some(DistributionModel::Percentage), _) => {
            let weighted: Vec<(Email, f64)> = router
                .users
                .iter()
                .filter(|u| candidates.contains(&u.email))
                .map(|u| (u.email.clone(), u.percentage.unwrap_or(0.0)))
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
                distribution::round_robin(&candidates, &eligible, state.last_member.as_ref())
                    .cloned();
            next.last_member = chosen.clone();
            chosen
        }
    };
    let chosen = chosen.ok_or(Skip::LimitReached)?;
    next.version = state.version + 1;
    Ok((chosen, next))
}
