//! Per-router, per-day, per-member assignment counters (issue 23 point 2): what
//! `GET /routers/{id}/stats` reads for the whole UTC days of its window, so a call costs
//! O(days x members) items whatever the volume. Each assignment's transaction adds one to its
//! counter (the history entry stays the record of truth; `shared/tests/tally.rs` recounts
//! them); the partial days at the window's edges are counted from the entries themselves.

use crate::model::dispatch::{AssignmentReason, AssignmentTally};
use chrono::{DateTime, Days, NaiveDate, NaiveTime, Utc};

/// A stats window `[from, to)` cut at UTC midnights.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowParts {
    /// The partial days, `[start, end)` each, to count from the history entries: none, one
    /// (the window's start and/or end inside one day, or the whole window inside a day) or two.
    pub edges: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    /// The whole days, first and last inclusive, to read from the counters.
    pub days: Option<(NaiveDate, NaiveDate)>,
}

/// The UTC day of an assignment at `at`: the counter it adds to.
pub fn day_of(at: DateTime<Utc>) -> NaiveDate {
    at.date_naive()
}

fn midnight(day: NaiveDate) -> DateTime<Utc> {
    day.and_time(NaiveTime::MIN).and_utc()
}

/// Cuts `[from, to)` into whole UTC days and the partial days at its edges.
pub fn split(from: DateTime<Utc>, to: DateTime<Utc>) -> WindowParts {
    if from >= to {
        return WindowParts {
            edges: Vec::new(),
            days: None,
        };
    }
    let first_midnight = if midnight(day_of(from)) == from {
        from
    } else {
        midnight(day_of(from) + Days::new(1))
    };
    let last_midnight = midnight(day_of(to));
    if first_midnight >= last_midnight {
        return WindowParts {
            edges: vec![(from, to)],
            days: None,
        };
    }
    let mut edges = Vec::new();
    if from < first_midnight {
        edges.push((from, first_midnight));
    }
    if last_midnight < to {
        edges.push((last_midnight, to));
    }
    WindowParts {
        edges,
        days: Some((day_of(first_midnight), day_of(last_midnight) - Days::new(1))),
    }
}

/// Adds `count` assignments of `user` for `reason` to `tally`.
pub fn add(tally: &mut Vec<AssignmentTally>, user: &str, reason: AssignmentReason, count: u64) {
    if count == 0 {
        return;
    }
    match tally
        .iter_mut()
        .find(|t| t.user == user && t.reason == reason)
    {
        Some(t) => t.count += count,
        None => tally.push(AssignmentTally {
            user: user.to_string(),
            reason,
            count,
        }),
    }
}

/// The attribute name of a reason's count in a counter item (its serialized name).
pub fn reason_name(reason: AssignmentReason) -> &'static str {
    match reason {
        AssignmentReason::Rotation => "rotation",
        AssignmentReason::AccountMatching => "account_matching",
        AssignmentReason::Backup => "backup",
        AssignmentReason::SlaReassignment => "sla_reassignment",
    }
}

/// Every reason, in the order of `by_reason`.
pub const REASONS: [AssignmentReason; 4] = [
    AssignmentReason::Rotation,
    AssignmentReason::AccountMatching,
    AssignmentReason::Backup,
    AssignmentReason::SlaReassignment,
];

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(d: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, d, h, 0, 0).unwrap()
    }

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, d).unwrap()
    }

    #[test]
    fn a_window_is_cut_at_utc_midnights() {
        assert_eq!(
            split(at(3, 10), at(7, 5)),
            WindowParts {
                edges: vec![(at(3, 10), at(4, 0)), (at(7, 0), at(7, 5))],
                days: Some((day(4), day(6))),
            }
        );
        assert_eq!(
            split(at(3, 0), at(7, 0)),
            WindowParts {
                edges: vec![],
                days: Some((day(3), day(6))),
            }
        );
        assert_eq!(
            split(at(3, 10), at(4, 5)),
            WindowParts {
                edges: vec![(at(3, 10), at(4, 5))],
                days: None,
            },
            "no whole day: all from the entries"
        );
        assert_eq!(
            split(at(3, 10), at(5, 0)),
            WindowParts {
                edges: vec![(at(3, 10), at(4, 0))],
                days: Some((day(4), day(4))),
            }
        );
        assert_eq!(split(at(5, 0), at(5, 0)).edges, vec![]);
        assert_eq!(split(at(6, 0), at(5, 0)).days, None);
    }
}
