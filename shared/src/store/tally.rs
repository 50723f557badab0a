//! Per-router, per-member assignment counters at three spans, UTC day, hour and minute
//! (BEHAVIOR 8): what `GET /routers/{id}/stats` reads for the whole days, hours and minutes of its
//! window, so a call reads at most (days + 2 x 23 hours + 2 x 59 minutes) x members counters,
//! and history entries only for the two partial minutes at the window's edges, whatever the
//! volume. Each assignment's transaction adds one to its day's, hour's and minute's counter
//! (the history entry stays the record of truth; `shared/tests/integration/tally.rs` recounts them).

use crate::model::dispatch::{AssignmentReason, AssignmentTally};
use chrono::{DateTime, TimeDelta, Utc};

/// The length of time one counter covers; buckets start at UTC midnight, hour or minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Span {
    /// A UTC day.
    Day,
    /// An hour.
    Hour,
    /// A minute.
    Minute,
}

impl Span {
    /// Every span, longest first: an assignment adds one to a counter of each.
    pub const ALL: [Span; 3] = [Span::Day, Span::Hour, Span::Minute];

    /// The span's length in seconds.
    fn seconds(self) -> i64 {
        match self {
            Self::Day => 86_400,
            Self::Hour => 3_600,
            Self::Minute => 60,
        }
    }

    /// The span's length.
    pub fn length(self) -> TimeDelta {
        TimeDelta::seconds(self.seconds())
    }

    /// The next shorter span; `None` after a minute (what is left is read from the entries).
    fn finer(self) -> Option<Self> {
        match self {
            Self::Day => Some(Self::Hour),
            Self::Hour => Some(Self::Minute),
            Self::Minute => None,
        }
    }

    /// The start of the bucket holding `at` (Unix time has no leap seconds: UTC days, hours and
    /// minutes are whole multiples of the span since the epoch).
    pub fn floor(self, at: DateTime<Utc>) -> DateTime<Utc> {
        let start = at.timestamp().div_euclid(self.seconds()) * self.seconds();
        DateTime::from_timestamp(start, 0).unwrap_or(at)
    }

    /// The first bucket start at or after `at`.
    fn ceil(self, at: DateTime<Utc>) -> DateTime<Utc> {
        let floor = self.floor(at);
        if floor == at {
            at
        } else {
            floor + self.length()
        }
    }

    /// The bucket starting at `start` as it stands in a counter's sort key, after the span's
    /// code: `D#2026-11-25`, `H#2026-11-25T09`, `M#2026-11-25T09:30` (fixed width: the keys of
    /// one span sort as time).
    pub fn bucket(self, start: DateTime<Utc>) -> String {
        match self {
            Self::Day => format!("D#{}", start.format("%Y-%m-%d")),
            Self::Hour => format!("H#{}", start.format("%Y-%m-%dT%H")),
            Self::Minute => format!("M#{}", start.format("%Y-%m-%dT%H:%M")),
        }
    }
}

/// A run of whole buckets of one span, read from the counters: first and last bucket start,
/// both included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buckets {
    /// Their span.
    pub span: Span,
    /// Start of the first bucket.
    pub first: DateTime<Utc>,
    /// Start of the last bucket.
    pub last: DateTime<Utc>,
}

/// A stats window `[from, to)` cut into whole buckets and what is left at its edges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowParts {
    /// The whole days, then hours, then minutes, to read from the counters: at most one run of
    /// days, two of hours and two of minutes.
    pub counters: Vec<Buckets>,
    /// What no whole minute covers, `[start, end)` each, to count from the history entries:
    /// at most two ranges, each shorter than a minute.
    pub edges: Vec<(DateTime<Utc>, DateTime<Utc>)>,
}

/// Cuts `[from, to)` into whole UTC days, the whole hours and minutes around them, and the
/// partial minutes at its edges (none when `from >= to`).
pub fn split(from: DateTime<Utc>, to: DateTime<Utc>) -> WindowParts {
    let mut parts = WindowParts {
        counters: Vec::new(),
        edges: Vec::new(),
    };
    cover(from, to, Some(Span::Day), &mut parts);
    parts.counters.sort_by_key(|b| (b.span, b.first));
    parts
}

/// Covers `[from, to)` with whole buckets of `span` and, on each side, of the finer spans.
fn cover(from: DateTime<Utc>, to: DateTime<Utc>, span: Option<Span>, parts: &mut WindowParts) {
    if from >= to {
        return;
    }
    let Some(span) = span else {
        parts.edges.push((from, to));
        return;
    };
    let (first, end) = (span.ceil(from), span.floor(to));
    if first >= end {
        return cover(from, to, span.finer(), parts);
    }
    parts.counters.push(Buckets {
        span,
        first,
        last: end - span.length(),
    });
    cover(from, first, span.finer(), parts);
    cover(end, to, span.finer(), parts);
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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(d: u32, h: u32, m: u32, sec: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, d, h, m, sec).unwrap()
    }

    fn run(span: Span, first: DateTime<Utc>, last: DateTime<Utc>) -> Buckets {
        Buckets { span, first, last }
    }

    #[test]
    fn a_window_is_cut_into_days_hours_minutes_and_partial_minutes() {
        assert_eq!(
            split(at(3, 10, 20, 30), at(7, 5, 40, 15)),
            WindowParts {
                counters: vec![
                    run(Span::Day, at(4, 0, 0, 0), at(6, 0, 0, 0)),
                    run(Span::Hour, at(3, 11, 0, 0), at(3, 23, 0, 0)),
                    run(Span::Hour, at(7, 0, 0, 0), at(7, 4, 0, 0)),
                    run(Span::Minute, at(3, 10, 21, 0), at(3, 10, 59, 0)),
                    run(Span::Minute, at(7, 5, 0, 0), at(7, 5, 39, 0)),
                ],
                edges: vec![
                    (at(3, 10, 20, 30), at(3, 10, 21, 0)),
                    (at(7, 5, 40, 0), at(7, 5, 40, 15)),
                ],
            }
        );
        assert_eq!(
            split(at(3, 0, 0, 0), at(7, 0, 0, 0)),
            WindowParts {
                counters: vec![run(Span::Day, at(3, 0, 0, 0), at(6, 0, 0, 0))],
                edges: vec![]
            },
            "whole days: the day counters alone"
        );
        assert_eq!(
            split(at(3, 10, 0, 0), at(3, 12, 30, 0)),
            WindowParts {
                counters: vec![
                    run(Span::Hour, at(3, 10, 0, 0), at(3, 11, 0, 0)),
                    run(Span::Minute, at(3, 12, 0, 0), at(3, 12, 29, 0)),
                ],
                edges: vec![],
            },
            "no whole day: hours and minutes"
        );
        assert_eq!(
            split(at(3, 10, 0, 5), at(3, 10, 0, 50)),
            WindowParts {
                counters: vec![],
                edges: vec![(at(3, 10, 0, 5), at(3, 10, 0, 50))]
            },
            "inside a minute: all from the entries"
        );
        assert_eq!(split(at(5, 0, 0, 0), at(5, 0, 0, 0)).edges, vec![]);
        assert_eq!(split(at(6, 0, 0, 0), at(5, 0, 0, 0)).counters, vec![]);
    }

    #[test]
    fn the_parts_of_a_window_cover_it_once() {
        let windows = [
            (at(1, 0, 0, 0), at(30, 0, 0, 0)),
            (at(2, 23, 59, 59), at(3, 0, 0, 1)),
            (at(9, 7, 3, 1), at(12, 19, 58, 2)),
        ];
        for (from, to) in windows {
            let parts = split(from, to);
            let mut pieces: Vec<(DateTime<Utc>, DateTime<Utc>)> = parts.edges.clone();
            for b in &parts.counters {
                assert_eq!(b.span.floor(b.first), b.first, "{b:?} starts a bucket");
                pieces.push((b.first, b.last + b.span.length()));
            }
            pieces.sort();
            assert_eq!(pieces.first().map(|p| p.0), Some(from));
            assert_eq!(pieces.last().map(|p| p.1), Some(to));
            for pair in pieces.windows(2) {
                assert_eq!(pair[0].1, pair[1].0, "{from} .. {to}: {pieces:?}");
            }
            assert!(parts
                .edges
                .iter()
                .all(|(a, b)| *b - *a < Span::Minute.length()));
        }
    }

    #[test]
    fn bucket_names_sort_as_time() {
        let a = at(9, 9, 59, 0);
        let b = at(10, 10, 0, 0);
        for span in Span::ALL {
            assert!(
                span.bucket(span.floor(a)) < span.bucket(span.floor(b)),
                "{span:?}"
            );
        }
        assert_eq!(Span::Hour.bucket(at(9, 7, 0, 0)), "H#2026-11-09T07");
        assert_eq!(Span::Minute.floor(at(9, 7, 3, 59)), at(9, 7, 3, 0));
    }
}
