//! The pool the decision chooses among: the members a run read, as they stand at its instant
//! (availability, working hours, holidays, capacity), with the member an SLA reassignment leaves
//! out. Pure: it reads nothing.

use super::run::Step;
use crate::dispatch::capacity::under_capacity;
use crate::dispatch::distribution;
use crate::dispatch::explain::{Candidate, CandidateReason};
use crate::error::DomainError;
use crate::model::account::Team;
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::router::{DistributionModel, Router, RouterSettings};
use crate::schedule::availability::{availability_on_holidays, HolidayCalendars};
use crate::types::email::Email;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// The account's active members at the instant of the run, with what steps 10 to 14 ask of
/// them: availability (step 11) and capacity (step 12). An SLA reassignment leaves the record's
/// current owner out (BEHAVIOR 14): they keep their place in pool order (the rotation walks on
/// from them) but are never eligible, for the rotation, account matching or as backup.
pub(super) struct Pool<'m> {
    /// The members read for the run, archived ones included.
    members: &'m [Member],
    /// The active members, by their address text.
    by_email: HashMap<&'m str, &'m Member>,
    now: DateTime<Utc>,
    ignore_working_hours: bool,
    /// The calendars of the account and the router's (BEHAVIOR 17).
    holidays: &'m HolidayCalendars,
    object_type: ObjectType,
    excluded: Option<&'m Email>,
    /// Whether capacity entries apply ([`Limits::Applied`]).
    capacity: bool,
}

impl<'m> Pool<'m> {
    pub(super) fn new(
        members: &'m [Member], now: DateTime<Utc>, ignore_working_hours: bool,
        holidays: &'m HolidayCalendars, object_type: ObjectType, excluded: Option<&'m Email>,
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
            excluded,
            capacity,
        }
    }

    /// Whether `email` is the member this run leaves out.
    pub(super) fn is_excluded(&self, email: &Email) -> bool {
        self.excluded == Some(email)
    }

    fn member(&self, email: &Email) -> Option<&'m Member> {
        self.by_email.get(email.as_str()).copied()
    }

    /// The e-mail of the active member whose address is exactly `text` (a record's `user`
    /// value as stored: step 10's `company_owner`); `None` when it names no active member.
    pub(super) fn named(&self, text: &str) -> Option<&'m Email> {
        self.by_email.get(text).map(|m| &m.email)
    }

    /// The chosen `email` as the owner, once it is known to be an active member's.
    ///
    /// Errors: 500 when `email` names no active member (a choice is always one).
    pub(super) fn owner(&self, email: &Email) -> Step<Email> {
        let member = self.member(email).ok_or_else(|| {
            DomainError::internal(format!("the chosen owner {email} is not an active member"))
        })?;
        Ok(member.email.clone())
    }

    /// Whether `email` is an active member's.
    pub(super) fn is_active(&self, email: &Email) -> bool {
        self.member(email).is_some()
    }

    /// How `email` stands now (BEHAVIOR 6 steps 11 and 12; BEHAVIOR 9's reasons, in order).
    fn assess(&self, email: &Email, zero_weight: bool) -> Candidate {
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
            user: email.clone(),
            eligible: reasons.is_empty() && !excluded,
            reasons,
            excluded,
        }
    }

    /// Whether `email` is an active member who is available and under capacity.
    pub(super) fn eligible(&self, email: &Email) -> bool {
        self.is_active(email) && self.assess(email, false).under_capacity()
    }

    /// Step 11's pool without archived members ([`Router::active_pool`]), each assessed (a
    /// percentage router's weight-0 users are `zero_weight`).
    pub(super) fn candidates(
        &self, router: &Router, settings: &RouterSettings, teams: &[Team],
    ) -> Vec<Candidate> {
        let percentage = settings.distribution_model == Some(DistributionModel::Percentage);
        let zero_weight = |email: &Email| {
            percentage
                && router
                    .users
                    .iter()
                    .find(|u| u.email == *email)
                    .is_none_or(|u| distribution::is_zero_weight(u.percentage))
        };
        router
            .active_pool(teams, self.members)
            .into_iter()
            .map(|email| self.assess(email, zero_weight(email)))
            .collect()
    }
}
