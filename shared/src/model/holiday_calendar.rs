//! Holiday calendars, as stored (BEHAVIOR 17), and the reference counts that keep a calendar in
//! use from being deleted.

use crate::schedule::holidays::Holidays;
use crate::schedule::zone::IanaTimeZone;
use crate::types::ids::{AccountId, HolidayCalendarId};
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most holiday calendars of one account (BEHAVIOR 17; a 400 beyond).
pub const MAX_HOLIDAY_CALENDARS: u64 = 20;

/// A holiday calendar of an account (BEHAVIOR 17). Every field holds a parsed value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HolidayCalendar {
    /// Id (UUID v7: ids sort by creation time, so lists are oldest first).
    pub id: HolidayCalendarId,
    /// Owning account.
    pub account_id: AccountId,
    /// Display name, 1 to 256 characters.
    pub name: String,
    /// The zone its dates and times are read in.
    pub time_zone: IanaTimeZone,
    /// Its holidays, as written and parsed.
    pub holidays: Holidays,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last write time.
    pub updated_at: DateTime<Utc>,
    /// Optimistic-concurrency version (1 when created).
    pub version: u64,
}

impl HolidayCalendar {
    /// Whether the instant `at` is inside one of its holidays (read in its zone).
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.holidays.contains(at, self.time_zone)
    }

    /// When `duration` of time outside its holidays has passed since `start` (BEHAVIOR 17's
    /// SLA rule; [`Holidays::working_end`]).
    pub fn working_end(&self, start: DateTime<Utc>, duration: Duration) -> DateTime<Utc> {
        self.holidays.working_end(start, duration, self.time_zone)
    }
}

/// How a write changes the number of things that name each holiday calendar: an active member's
/// `holiday_calendar_id`, the live configuration of a non-archived router, its draft
/// (BEHAVIOR 17: a calendar that anything names is `in use`). The store applies the changes in
/// the write's own transaction, each one conditional on the calendar existing; a calendar's
/// delete is conditional on its count being 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CalendarRefs(BTreeMap<HolidayCalendarId, i64>);

impl CalendarRefs {
    /// No change.
    pub fn none() -> Self {
        Self::default()
    }

    /// The change of a write that replaces what named `before` with what names `after`
    /// (either `None`): nothing when they are the same.
    pub fn moving(before: Option<HolidayCalendarId>, after: Option<HolidayCalendarId>) -> Self {
        let mut refs = Self::default();
        refs.remove(before);
        refs.add(after);
        refs
    }

    /// One more reference to `id` (nothing for `None`).
    pub fn add(&mut self, id: Option<HolidayCalendarId>) {
        self.change_by(id, 1);
    }

    /// One reference fewer to `id` (nothing for `None`).
    pub fn remove(&mut self, id: Option<HolidayCalendarId>) {
        self.change_by(id, -1);
    }

    /// The change of a write that replaces the references `before` with `after` (each the
    /// references one state holds: [`crate::model::router::Router::calendar_refs_with`]).
    pub fn change(before: &CalendarRefs, after: &CalendarRefs) -> Self {
        let mut refs = after.clone();
        for (id, held) in before.changes() {
            refs.change_by(Some(id), -held);
        }
        refs
    }

    /// Adds the changes of `other`.
    pub fn merge(&mut self, other: &CalendarRefs) {
        for (id, delta) in other.changes() {
            self.change_by(Some(id), delta);
        }
    }

    fn change_by(&mut self, id: Option<HolidayCalendarId>, delta: i64) {
        if let Some(id) = id {
            let entry = self.0.entry(id).or_default();
            *entry += delta;
            if *entry == 0 {
                self.0.remove(&id);
            }
        }
    }

    /// The non-zero changes, by calendar id.
    pub fn changes(&self) -> impl Iterator<Item = (HolidayCalendarId, i64)> + '_ {
        self.0.iter().map(|(id, delta)| (*id, *delta))
    }

    /// The calendars that gain references (they must exist when the write commits).
    pub fn gaining(&self) -> impl Iterator<Item = HolidayCalendarId> + '_ {
        self.changes().filter(|(_, d)| *d > 0).map(|(id, _)| id)
    }

    /// Whether nothing changes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What [`crate::store::CalendarStore::delete_holiday_calendar`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalendarDeletion {
    /// The calendar is gone.
    Deleted,
    /// There was no such calendar in the account.
    NotFound,
    /// Something names it (BEHAVIOR 17's 409): nothing was written.
    InUse,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_changes_cancel_out_and_name_only_what_gains() {
        let (a, b) = (HolidayCalendarId::new_v4(), HolidayCalendarId::new_v4());
        assert!(CalendarRefs::moving(Some(a), Some(a)).is_empty());
        assert!(CalendarRefs::moving(None, None).is_empty());
        let moved = CalendarRefs::moving(Some(a), Some(b));
        let mut changes: Vec<_> = moved.changes().collect();
        changes.sort();
        let mut expected = vec![(a, -1), (b, 1)];
        expected.sort();
        assert_eq!(changes, expected);
        assert_eq!(moved.gaining().collect::<Vec<_>>(), vec![b]);
        let mut merged = moved.clone();
        merged.merge(&CalendarRefs::moving(Some(b), Some(a)));
        assert!(merged.is_empty());
    }

    #[test]
    fn a_change_is_what_the_state_after_holds_less_what_the_state_before_held() {
        let (a, b) = (HolidayCalendarId::new_v4(), HolidayCalendarId::new_v4());
        let held = |ids: &[HolidayCalendarId]| {
            let mut refs = CalendarRefs::none();
            for id in ids {
                refs.add(Some(*id));
            }
            refs
        };
        // A publish: live `a` and draft `b` become live `b` (no draft).
        let publish = CalendarRefs::change(&held(&[a, b]), &held(&[b]));
        assert_eq!(publish.changes().collect::<Vec<_>>(), vec![(a, -1)]);
        assert_eq!(publish.gaining().count(), 0);
        // An archive gives back every reference; a draft naming `a` twice over adds one.
        let archive = CalendarRefs::change(&held(&[a, a]), &held(&[]));
        assert_eq!(archive.changes().collect::<Vec<_>>(), vec![(a, -2)]);
        let draft = CalendarRefs::change(&held(&[a]), &held(&[a, a]));
        assert_eq!(draft.gaining().collect::<Vec<_>>(), vec![a]);
        assert!(CalendarRefs::change(&held(&[a, b]), &held(&[b, a])).is_empty());
    }
}
