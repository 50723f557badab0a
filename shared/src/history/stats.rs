//! The window of `GET /routers/{routerId}/stats` (BEHAVIOR 8): `from` and `to`, RFC 3339
//! instants; by default the current calendar month in UTC, `[first instant of this month,
//! first instant of next month)`; `from < to` and at most 93 days, else 400 naming the
//! parameter. The what-if replay's window (BEHAVIOR 16) keeps the same rule
//! ([`StatsWindow::new`]) with defaults and messages of its own.

use crate::error::DomainError;
use chrono::{DateTime, Datelike, TimeZone, Utc};

/// The longest window, in days (exactly 93 days is accepted).
pub const MAX_WINDOW_DAYS: i64 = 93;

/// A window `[from, to)` of the routing history: the stats' and the what-if replay's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatsWindow {
    /// Start (included).
    pub from: DateTime<Utc>,
    /// End (excluded).
    pub to: DateTime<Utc>,
}

/// Why two instants make no window ([`StatsWindow::new`]); each caller names the parameter it
/// blames in its own 400.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowError {
    /// `from` is not before `to`.
    NotBefore,
    /// The window is longer than [`MAX_WINDOW_DAYS`] days.
    TooLong,
}

/// An RFC 3339 instant (white space around it ignored), in UTC; `None` when `text` is not one.
pub fn parse_instant(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|at| at.with_timezone(&Utc))
}

impl StatsWindow {
    /// The window `[from, to)`: the one rule of the stats (BEHAVIOR 8) and the what-if replay
    /// (BEHAVIOR 16).
    ///
    /// Errors: [`WindowError::NotBefore`] unless `from < to`; [`WindowError::TooLong`] for more
    /// than [`MAX_WINDOW_DAYS`] days (exactly 93 days is accepted).
    pub fn new(from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Self, WindowError> {
        if from >= to {
            return Err(WindowError::NotBefore);
        }
        if to - from > chrono::Duration::days(MAX_WINDOW_DAYS) {
            return Err(WindowError::TooLong);
        }
        Ok(Self { from, to })
    }

    /// The calendar month (UTC) of `now`.
    pub fn month_of(now: DateTime<Utc>) -> Self {
        let start = |year: i32, month: u32| {
            Utc.with_ymd_and_hms(year, month, 1, 0, 0, 0)
                .single()
                .unwrap_or(now)
        };
        let from = start(now.year(), now.month());
        let to = if now.month() == 12 {
            start(now.year() + 1, 1)
        } else {
            start(now.year(), now.month() + 1)
        };
        Self { from, to }
    }

    /// Parses the decoded `from` and `to` parameters (each defaulting to the current month's
    /// bound at `now`; the API layer decodes the query string and picks the first of a repeated
    /// parameter).
    ///
    /// Errors: 400 naming `from` or `to`: not an RFC 3339 instant; `from` not before `to`, or
    /// a window longer than 93 days (naming `to` when it was given, else `from`).
    pub fn parse(
        given_from: Option<&str>, given_to: Option<&str>, now: DateTime<Utc>,
    ) -> Result<Self, DomainError> {
        let month = Self::month_of(now);
        let instant = |name: &str, value: Option<&str>, default: DateTime<Utc>| {
            match value {
            None => Ok(default),
            Some(text) => parse_instant(text).ok_or_else(|| {
                DomainError::bad_field(
                    name,
                    format!("Invalid query parameter {name}: must be an RFC 3339 instant, e.g. 2026-11-01T00:00:00Z"),
                )
            }),
        }
        };
        let blame = if given_to.is_some() { "to" } else { "from" };
        let from = instant("from", given_from, month.from)?;
        let to = instant("to", given_to, month.to)?;
        Self::new(from, to).map_err(|error| {
            let rule = match error {
                WindowError::NotBefore => "from must be before to".to_string(),
                WindowError::TooLong => {
                    format!("the window may be at most {MAX_WINDOW_DAYS} days")
                }
            };
            DomainError::bad_field(blame, format!("Invalid query parameter {blame}: {rule}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn the_default_window_is_the_current_calendar_month_in_utc() {
        let w = StatsWindow::parse(None, None, at("2026-11-24T10:00:00Z")).unwrap();
        assert_eq!(
            (w.from, w.to),
            (at("2026-11-01T00:00:00Z"), at("2026-12-01T00:00:00Z"))
        );
        let december = StatsWindow::parse(None, None, at("2026-12-31T23:59:59Z")).unwrap();
        assert_eq!(december.to, at("2027-01-01T00:00:00Z"));
    }

    #[test]
    fn given_bounds_are_rfc3339_instants_converted_to_utc() {
        let w = StatsWindow::parse(
            Some("2026-11-01T01:00:00+01:00"),
            Some("2026-11-02T00:00:00Z"),
            at("2026-11-24T10:00:00Z"),
        )
        .unwrap();
        assert_eq!(w.from, at("2026-11-01T00:00:00Z"));
        assert_eq!(w.to, at("2026-11-02T00:00:00Z"));
    }

    #[test]
    fn exactly_93_days_is_accepted_and_one_second_more_is_not() {
        let now = at("2026-11-24T10:00:00Z");
        assert!(StatsWindow::parse(
            Some("2026-01-01T00:00:00Z"),
            Some("2026-04-04T00:00:00Z"),
            now
        )
        .is_ok());
        let err = StatsWindow::parse(
            Some("2026-01-01T00:00:00Z"),
            Some("2026-04-04T00:00:01Z"),
            now,
        )
        .unwrap_err();
        assert_eq!(err.field(), Some("to"));
    }

    #[test]
    fn a_window_starts_before_it_ends_and_spans_at_most_93_days() {
        let from = at("2026-01-01T00:00:00Z");
        assert_eq!(StatsWindow::new(from, from), Err(WindowError::NotBefore));
        assert_eq!(
            StatsWindow::new(from, at("2025-12-31T00:00:00Z")),
            Err(WindowError::NotBefore)
        );
        let longest = at("2026-04-04T00:00:00Z");
        assert_eq!(
            StatsWindow::new(from, longest),
            Ok(StatsWindow { from, to: longest })
        );
        assert_eq!(
            StatsWindow::new(from, at("2026-04-04T00:00:01Z")),
            Err(WindowError::TooLong)
        );
    }

    #[test]
    fn instants_are_rfc3339_with_white_space_around_them_ignored() {
        assert_eq!(
            parse_instant(" 2026-11-01T01:00:00+01:00\n"),
            Some(at("2026-11-01T00:00:00Z"))
        );
        for text in ["2026-11-01", "yesterday", "", "2026-11-01T00:00:00"] {
            assert_eq!(parse_instant(text), None, "{text:?}");
        }
    }

    #[test]
    fn bad_windows_name_the_parameter() {
        let now = at("2026-11-24T10:00:00Z");
        let cases = [
            (Some("yesterday"), None, "from"),
            (None, Some("2026-11-30"), "to"),
            (
                Some("2026-11-02T00:00:00Z"),
                Some("2026-11-01T00:00:00Z"),
                "to",
            ),
            (
                Some("2026-11-01T00:00:00Z"),
                Some("2026-11-01T00:00:00Z"),
                "to",
            ),
            (Some("2026-12-05T00:00:00Z"), None, "from"),
            (None, Some("2026-10-01T00:00:00Z"), "to"),
            (Some("2020-01-01T00:00:00Z"), None, "from"),
        ];
        for (from, to, field) in cases {
            let err = StatsWindow::parse(from, to, now).unwrap_err();
            assert_eq!(err.field(), Some(field), "{from:?} {to:?}");
        }
    }
}
