//! One SLA check (BEHAVIOR 14): when it starts, what its due item carries, and its verdict.

use crate::model::dispatch::{AssignmentReason, DispatchEntry, DispatchEntryKey};
use crate::model::due::{DueId, DueKind, Settlement};
use crate::model::holiday_calendar::HolidayCalendar;
use crate::model::record::Record;
use crate::model::router::Router;
use crate::model::sla::{SlaSetting, MAX_SLA_REASSIGNMENTS_IN_A_ROW};
use crate::timefmt::rfc3339_millis;
use crate::types::email::Email;
use crate::types::ids::AccountId;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long an SLA minute lasts (BEHAVIOR 14: `SLA_MINUTE_SECONDS` scales it for tests; default
/// 60 s): a check is due `minutes` of these after its assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlaMinute(Duration);

impl Default for SlaMinute {
    fn default() -> Self {
        Self(Duration::from_secs(60))
    }
}

impl SlaMinute {
    /// The name of the environment variable.
    pub const VARIABLE: &'static str = "SLA_MINUTE_SECONDS";

    /// The shortest minute: 0.1 s (checks are run by timers and sweeps; shorter is noise).
    pub const MIN_SECONDS: f64 = 0.1;

    /// The longest minute: 60 s, a real one.
    pub const MAX_SECONDS: f64 = 60.0;

    /// Parses seconds (`1`, `0.5`), from 0.1 to 60.
    ///
    /// Errors: a message naming the variable and the value.
    pub fn parse(text: &str) -> Result<Self, String> {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && (Self::MIN_SECONDS..=Self::MAX_SECONDS).contains(s))
            .map(|s| Self(Duration::from_secs_f64(s)))
            .ok_or_else(|| {
                format!(
                    "{}={text} is not a number of seconds from {} to {}",
                    Self::VARIABLE,
                    Self::MIN_SECONDS,
                    Self::MAX_SECONDS
                )
            })
    }

    /// The minute from the environment, 60 s when unset.
    ///
    /// Errors: as [`Self::parse`].
    pub fn from_env() -> Result<Self, String> {
        match std::env::var(Self::VARIABLE) {
            Ok(text) if !text.trim().is_empty() => Self::parse(&text),
            _ => Ok(Self::default()),
        }
    }

    /// A minute of this length.
    pub fn of(length: Duration) -> Self {
        Self(length)
    }

    /// Its length.
    pub fn duration(self) -> Duration {
        self.0
    }

    /// When a check of `setting` started by an assignment at `dispatched_at` is due.
    pub fn due_at(self, dispatched_at: DateTime<Utc>, setting: &SlaSetting) -> DateTime<Utc> {
        self.due_outside_holidays(dispatched_at, setting, None)
    }

    /// [`Self::due_at`] for a router whose holiday calendar is `holidays` (BEHAVIOR 17): the
    /// check's minutes do not run during its holidays, which are real time (not scaled), so
    /// `due_at` moves later by the overlap, and a check started inside a holiday counts from its
    /// end ([`HolidayCalendar::working_end`]).
    pub fn due_outside_holidays(
        self, dispatched_at: DateTime<Utc>, setting: &SlaSetting,
        holidays: Option<&HolidayCalendar>,
    ) -> DateTime<Utc> {
        let wait = self.0.saturating_mul(setting.minutes.get());
        let wait = chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::MAX);
        match holidays {
            Some(calendar) => calendar.working_end(dispatched_at, wait),
            None => dispatched_at + wait,
        }
    }
}

/// What an SLA check's due item names: the history entry that started it, the worked field's
/// value then, and how many SLA reassignments in a row led to that entry (0 after a dispatch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSubject {
    /// The entry of the assignment that started the check.
    pub entry: DispatchEntryKey,
    /// The worked field's value when the check started (read when `worked_values` is `null`).
    pub started: Option<String>,
    /// SLA reassignments in a row up to that entry.
    pub reassignments: u8,
}

impl CheckSubject {
    /// The due item of the check started by the entry `key`: `sla_check#<entry id>`.
    pub fn due_id(key: &DispatchEntryKey) -> DueId {
        DueId::new(DueKind::SlaCheck, key.id.to_string())
    }

    /// The item's subject.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// Whether an assignment for `reason` starts a check on a router with an SLA, and with what
/// count of SLA reassignments in a row (BEHAVIOR 14): a dispatch's rotation or backup assignment
/// starts one at 0 (account matching none); an SLA reassignment that follows `k` in a row is
/// number `k + 1`, and starts one unless that is the fifth.
pub fn starts_check(reason: AssignmentReason, after_reassignments: Option<u8>) -> Option<u8> {
    match after_reassignments {
        None => matches!(
            reason,
            AssignmentReason::Rotation | AssignmentReason::Backup
        )
        .then_some(0),
        Some(k) => {
            let this = k.saturating_add(1);
            (this < MAX_SLA_REASSIGNMENTS_IN_A_ROW).then_some(this)
        }
    }
}

/// A reassignment the check asks of the dispatch engine (BEHAVIOR 14): the record of `check`'s
/// entry dispatched again through its router, `owner` left out of the pool and never chosen as
/// backup, `overwrite` ignored, conditional on the record still being at `record_version` (the
/// version the verdict read) and on the check still being `pending` and this worker's.
#[derive(Debug, Clone, PartialEq)]
pub struct SlaRun {
    /// The router's account.
    pub account_id: AccountId,
    /// The entry whose check this is.
    pub check: DispatchEntryKey,
    /// The record's id (the entry's `object_id`).
    pub record_id: String,
    /// The current owner's e-mail (the entry's `user`).
    pub owner: Email,
    /// The record's version when the verdict was made.
    pub record_version: u64,
    /// SLA reassignments in a row before this one.
    pub reassignments: u8,
    /// The settlement of the check's claimed due item, written with the reassignment.
    pub settle: Settlement,
}

/// What a check decides before any reassignment (BEHAVIOR 14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The record was worked (tested first).
    Met,
    /// Nothing to check any more: the record or router is archived or gone, the router
    /// unpublished or without an SLA, or the owner is no longer the assigned member.
    Cancelled,
    /// Not worked, still the assigned member's: dispatch it again.
    Reassign,
}

/// The verdict on the check started by `entry`, the worked field holding `started` then, from
/// the router and record as they are now.
pub fn verdict(
    entry: &DispatchEntry, router: Option<&Router>, record: Option<&Record>, started: Option<&str>,
) -> Verdict {
    let setting = router.and_then(|r| r.settings.as_ref()?.sla.as_ref());
    let (Some(setting), Some(record)) = (setting, record) else {
        return Verdict::Cancelled;
    };
    if worked(setting, record, started) {
        return Verdict::Met;
    }
    let router_live = router.is_some_and(|r| r.archived_at.is_none() && r.is_published);
    if !router_live || !record.is_active() || !still_assigned(entry, record) {
        return Verdict::Cancelled;
    }
    Verdict::Reassign
}

/// Whether `record` was worked (BEHAVIOR 14): its `worked_field` holds one of `worked_values`
/// (compared with the stored form, case-insensitively), or, without values, a non-null value
/// other than `started`.
pub fn worked(setting: &SlaSetting, record: &Record, started: Option<&str>) -> bool {
    let Some(now) = record.field(&setting.worked_field) else {
        return false;
    };
    match &setting.worked_values {
        Some(values) => values.contains(&now),
        None => Some(now.as_ref()) != started,
    }
}

/// Whether the record is still the assignment's: its owner field holds the assigned member and
/// its `<owner field>_assigned_date` is still the assignment's time (any write of the owner
/// field, even with the same member, and any later dispatch change it).
fn still_assigned(entry: &DispatchEntry, record: &Record) -> bool {
    let (Some(field), Some(user)) = (entry.owner_field.as_deref(), entry.user.as_ref()) else {
        return false;
    };
    let assigned_date = format!("{field}_assigned_date");
    record.value(field) == Some(user.as_str())
        && record.value(&assigned_date) == Some(rfc3339_millis(entry.dispatched_at).as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dispatch_starts_the_count_and_the_fifth_reassignment_starts_no_check() {
        assert_eq!(starts_check(AssignmentReason::Rotation, None), Some(0));
        assert_eq!(starts_check(AssignmentReason::Backup, None), Some(0));
        assert_eq!(starts_check(AssignmentReason::AccountMatching, None), None);
        let chain: Vec<Option<u8>> = (0..5)
            .map(|k| starts_check(AssignmentReason::SlaReassignment, Some(k)))
            .collect();
        assert_eq!(chain, vec![Some(1), Some(2), Some(3), Some(4), None]);
    }

    /// BEHAVIOR 17: the minutes do not run during the router's holidays (real time, whatever
    /// the scale): a check overlapping a holiday is due later by the overlap, one started inside
    /// it counts from its end.
    #[test]
    fn a_checks_minutes_do_not_run_during_the_routers_holidays() {
        use crate::model::holiday_calendar::HolidayCalendar;
        use chrono::TimeZone;
        let holidays = serde_json::from_value(serde_json::json!([
            {"name": "Drill", "date": "2026-03-10", "start": "10:00", "end": "11:00"}
        ]))
        .unwrap();
        let calendar = HolidayCalendar {
            id: crate::types::ids::HolidayCalendarId::new_v7(),
            account_id: uuid::Uuid::new_v4().into(),
            name: "Office".into(),
            time_zone: crate::schedule::zone::IanaTimeZone::parse("UTC").unwrap(),
            holidays,
            created_at: Utc::now(),
            updated_at: Utc::now(),
            version: 1,
        };
        let setting: SlaSetting = serde_json::from_value(serde_json::json!({
            "minutes": 30, "worked_field": "lead_status", "worked_values": null
        }))
        .unwrap();
        let at = |h, m, s| Utc.with_ymd_and_hms(2026, 3, 10, h, m, s).unwrap();
        let minute = SlaMinute::default();
        let due = |from| minute.due_outside_holidays(from, &setting, Some(&calendar));
        assert_eq!(due(at(9, 0, 0)), at(9, 30, 0), "before: untouched");
        assert_eq!(due(at(9, 45, 0)), at(11, 15, 0), "overlap: one hour later");
        assert_eq!(due(at(10, 30, 0)), at(11, 30, 0), "inside: from the end");
        assert_eq!(due(at(11, 0, 0)), at(11, 30, 0), "the end is outside");
        let scaled = SlaMinute::parse("1").unwrap();
        assert_eq!(
            scaled.due_outside_holidays(at(10, 59, 0), &setting, Some(&calendar)),
            at(11, 0, 30),
            "holidays are real time: 30 scaled minutes of 1 s after the end"
        );
        assert_eq!(minute.due_at(at(10, 30, 0), &setting), at(11, 0, 0));
    }

    #[test]
    fn the_minute_reads_seconds_in_range() {
        assert_eq!(
            SlaMinute::parse(" 1 ").unwrap().duration(),
            Duration::from_secs(1)
        );
        assert_eq!(
            SlaMinute::parse("0.5").unwrap().duration(),
            Duration::from_millis(500)
        );
        for bad in ["0", "0.05", "61", "x", "", "NaN", "inf"] {
            assert!(SlaMinute::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(SlaMinute::default().duration(), Duration::from_secs(60));
    }
}
