//! Which holiday calendars a run reads (BEHAVIOR 17): by key, only those its router and the
//! members it evaluates name, in the round that reads the pool.
//!
//! A member's calendar is known only once the member is read, and the members are read in that
//! same round. So the round reads the router's calendar and the calendars this instance saw the
//! router's members name the last time ([`CalendarHints`]); once the members are in, the run
//! checks that every calendar they name was read ([`unasked`]), and reads the others in one
//! more round ([`read_calendars`]), which happens only when a member names a calendar the
//! instance has not seen on this router yet (the first dispatch of a router whose members have
//! calendars, a member given a calendar since). Calendars are never cached: every read is a
//! strongly consistent read of the calendar as it is now, so a calendar written a moment ago
//! counts at the next dispatch. Most routers and members name none: no calendar is read at all.

use crate::model::holiday_calendar::HolidayCalendar;
use crate::model::member::Member;
use crate::store::{CalendarStore, StoreResult};
use crate::types::ids::{AccountId, HolidayCalendarId, RouterId};
use std::collections::HashMap;
use std::sync::Mutex;

/// Routers whose members' calendars an instance remembers; past this the hints start again
/// (a hint only saves a round: forgetting one costs the next dispatch of that router one).
pub const MAX_HINTED_ROUTERS: usize = 4_096;

/// Per instance: by router, the calendars its members named at the router's last run here.
#[derive(Debug, Default)]
pub struct CalendarHints {
    by_router: Mutex<HashMap<RouterId, Vec<HolidayCalendarId>>>,
}

impl CalendarHints {
    /// The calendars the members of `router_id` named at its last run on this instance.
    pub fn predicted(&self, router_id: RouterId) -> Vec<HolidayCalendarId> {
        self.lock().get(&router_id).cloned().unwrap_or_default()
    }

    /// Remembers that the members of `router_id` name `calendars` (each once).
    pub fn remember(&self, router_id: RouterId, calendars: Vec<HolidayCalendarId>) {
        let mut hints = self.lock();
        if hints.get(&router_id) == Some(&calendars) {
            return;
        }
        if hints.len() >= MAX_HINTED_ROUTERS && !hints.contains_key(&router_id) {
            hints.clear();
        }
        hints.insert(router_id, calendars);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RouterId, Vec<HolidayCalendarId>>> {
        self.by_router.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The calendars the active `members` name, each once, in the members' order.
pub fn named_by<'m>(members: impl IntoIterator<Item = &'m Member>) -> Vec<HolidayCalendarId> {
    let mut named = Vec::new();
    for id in members
        .into_iter()
        .filter(|m| m.is_active())
        .filter_map(|m| m.holiday_calendar_id)
    {
        if !named.contains(&id) {
            named.push(id);
        }
    }
    named
}

/// The calendars the active `members` name that are not among `asked` (each once).
pub fn unasked<'m>(
    members: impl IntoIterator<Item = &'m Member>, asked: &[HolidayCalendarId],
) -> Vec<HolidayCalendarId> {
    let mut missing = named_by(members);
    missing.retain(|id| !asked.contains(id));
    missing
}

/// The calendars `ids` of the account, by key (strongly consistent), recording them in `asked`
/// (found or not: an id of a deleted calendar is not asked again). No ids: no request.
///
/// Errors: the store's.
pub async fn read_calendars(
    store: &dyn CalendarStore, account_id: AccountId, ids: &[HolidayCalendarId],
    asked: &mut Vec<HolidayCalendarId>,
) -> StoreResult<Vec<HolidayCalendar>> {
    let ids: Vec<HolidayCalendarId> = ids
        .iter()
        .copied()
        .filter(|id| !asked.contains(id))
        .collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    asked.extend(ids.iter().copied());
    store.get_holiday_calendars(account_id, &ids).await
}
