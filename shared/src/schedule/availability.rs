//! Whether a member can take an assignment now (BEHAVIOR 6 step 11).

use crate::model::holiday_calendar::HolidayCalendar;
use crate::model::member::Member;
use crate::types::ids::HolidayCalendarId;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::Arc;

/// The holiday calendars a run evaluates (BEHAVIOR 17): those its router and the members it
/// evaluates name, by id (read by key with the pool), and the router's calendar. Cheap to
/// clone.
#[derive(Debug, Clone, Default)]
pub struct HolidayCalendars {
    by_id: Arc<HashMap<HolidayCalendarId, HolidayCalendar>>,
    router: Option<HolidayCalendarId>,
}

impl HolidayCalendars {
    /// No calendars: nobody is ever on holiday.
    pub fn none() -> Self {
        Self::default()
    }

    /// The `calendars` read, with `router` the router's calendar (an id that is not among
    /// them names no holidays).
    pub fn new(calendars: Vec<HolidayCalendar>, router: Option<HolidayCalendarId>) -> Self {
        Self {
            by_id: Arc::new(calendars.into_iter().map(|c| (c.id, c)).collect()),
            router,
        }
    }

    /// The same calendars and `more` (read later: a member read after the others names them).
    pub fn extended(&self, more: Vec<HolidayCalendar>) -> Self {
        if more.is_empty() {
            return self.clone();
        }
        let mut by_id = (*self.by_id).clone();
        by_id.extend(more.into_iter().map(|c| (c.id, c)));
        Self {
            by_id: Arc::new(by_id),
            router: self.router,
        }
    }

    /// The calendar `id`, if it was read.
    pub fn get(&self, id: HolidayCalendarId) -> Option<&HolidayCalendar> {
        self.by_id.get(&id)
    }

    /// The ids of the calendars read, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = HolidayCalendarId> + '_ {
        self.by_id.keys().copied()
    }

    /// The router's calendar, if it has one.
    pub fn router_calendar(&self) -> Option<&HolidayCalendar> {
        self.router.and_then(|id| self.get(id))
    }

    /// Whether `at` is a holiday for `member` on this router: one of its own calendar's or of
    /// the router's.
    pub fn is_holiday(&self, member: &Member, at: DateTime<Utc>) -> bool {
        [member.holiday_calendar_id, self.router]
            .into_iter()
            .flatten()
            .filter_map(|id| self.get(id))
            .any(|calendar| calendar.contains(at))
    }
}

/// Why a member is unavailable (BEHAVIOR 6 step 11). Reported in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnavailableReason {
    /// `office_status` is false.
    OfficeStatusOff,
    /// The instant is inside one of the member's `out_office_dates` ranges.
    OutOfOffice,
    /// The instant is inside a holiday of the member's calendar or of the router's
    /// (BEHAVIOR 17).
    Holiday,
    /// The member has `working_hours` and the instant's local time (in `time_zone`) is in none
    /// of them.
    OutsideWorkingHours,
}

/// The result of [`availability`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// The member can take an assignment (capacity aside).
    Available,
    /// Every reason that applies, in the order of [`UnavailableReason`]'s variants; never empty.
    Unavailable(Vec<UnavailableReason>),
}

impl Availability {
    /// Whether this is [`Availability::Available`].
    pub fn is_available(&self) -> bool {
        matches!(self, Availability::Available)
    }

    /// The reasons; empty when available.
    pub fn reasons(&self) -> &[UnavailableReason] {
        match self {
            Availability::Available => &[],
            Availability::Unavailable(reasons) => reasons,
        }
    }
}

/// Whether `member` is available at the instant `at` (BEHAVIOR 6 step 11), with every reason
/// that applies when not.
///
/// Available when all hold:
/// 1. `office_status` is true;
/// 2. `at` is inside no `out_office_dates` range (start included, end excluded; dates read in
///    the member's zone, see [`OutOfOffice::range`](super::OutOfOffice::range));
/// 3. unless `ignore_working_hours` (the router setting), `working_hours` is empty (available
///    24/7) or `at`'s local wall-clock time in `time_zone` is inside one of the windows
///    (per [`Window::contains_local`](super::Window::contains_local)).
///
/// Archived members and capacity are not considered here (dispatch filters and counts them).
pub fn availability(
    member: &Member, at: DateTime<Utc>, ignore_working_hours: bool,
) -> Availability {
    availability_on_holidays(member, at, ignore_working_hours, &HolidayCalendars::none())
}

/// [`availability`] with holidays (BEHAVIOR 17, the engine's evaluation): the member is also
/// unavailable ([`UnavailableReason::Holiday`], after out-of-office) while `at` is inside a
/// holiday of its own calendar or of the router's, among `holidays`.
pub fn availability_on_holidays(
    member: &Member, at: DateTime<Utc>, ignore_working_hours: bool, holidays: &HolidayCalendars,
) -> Availability {
    let tz = member.time_zone.tz();
    let mut reasons = Vec::new();
    if !member.office_status {
        reasons.push(UnavailableReason::OfficeStatusOff);
    }
    let out_of_office = member.out_office_dates.iter().any(|entry| {
        entry
            .range(tz)
            .is_some_and(|(start, end)| start <= at && at < end)
    });
    if out_of_office {
        reasons.push(UnavailableReason::OutOfOffice);
    }
    if holidays.is_holiday(member, at) {
        reasons.push(UnavailableReason::Holiday);
    }
    if !ignore_working_hours && !member.working_hours.is_empty() {
        let local = at.with_timezone(&tz).naive_local();
        if !member
            .working_hours
            .iter()
            .any(|entry| entry.window().contains_local(local))
        {
            reasons.push(UnavailableReason::OutsideWorkingHours);
        }
    }
    if reasons.is_empty() {
        Availability::Available
    } else {
        Availability::Unavailable(reasons)
    }
}

/// Shorthand for `availability(member, at, ignore_working_hours).is_available()`.
pub fn is_available(member: &Member, at: DateTime<Utc>, ignore_working_hours: bool) -> bool {
    availability(member, at, ignore_working_hours).is_available()
}
