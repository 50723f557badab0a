//! Which holiday calendars a run reads (BEHAVIOR 17): by key, only those its router and the
//! members it evaluates name, in the round that reads the pool.
//!
//! A member's calendar is known only once the member is read. So a run's first round reads, with
//! the pool, the calendars the router and its members named at the router's last run on this
//! instance ([`super::hints`]); once the router and the members are in, the run checks that every
//! calendar they name was read ([`unasked`]), and reads the others in one more round
//! ([`read_calendars`]), which happens only when one is named that the instance has not seen on
//! this router yet (the first dispatch of a router whose members have calendars, a member given a
//! calendar since). Calendars are never cached: every read is a strongly consistent read of the
//! calendar as it is now, so a calendar written a moment ago counts at the next dispatch. Most
//! routers and members name none: no calendar is read at all.

use crate::model::holiday_calendar::HolidayCalendar;
use crate::model::member::Member;
use crate::store::{CalendarStore, StoreResult};
use crate::types::ids::{AccountId, HolidayCalendarId};

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
