//! The window of `GET /routers/{routerId}/stats` (BEHAVIOR 8): `from` and `to`, RFC 3339
//! instants; by default the current calendar month in UTC, `[first instant of this month,
//! first instant of next month)`; `from < to` and at most 93 days, else 400 naming the
//! parameter.

use crate::api::QueryParams;
use crate::error::DomainError;
use chrono::{DateTime, Datelike, TimeZone, Utc};

/// The longest window, in days (exactly 93 days is accepted).
pub const MAX_WINDOW_DAYS: i64 = 93;

/// A stats window `[from, to)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatsWindow {
    /// Start (included).
    pub from: DateTime<Utc>,
    /// End (excluded).
    pub to: DateTime<Utc>,
}

impl StatsWindow {
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

    /// Parses the raw query string: `from` and `to` (each defaulting to the current month's
    /// bound at `now`). Unknown parameters are ignored; a repeated one counts once (the first).
    ///
    /// Errors: 400 naming `from` or `to`: not an RFC 3339 instant; `from` not before `to`, or
    /// a window longer than 93 days (naming `to` when it was given, else `from`).
    pub fn parse(raw: Option<&str>, now: DateTime<Utc>) -> Result<Self, DomainError> {
        // A value that is not percent-encoded UTF-8 is 400 naming it (BEHAVIOR 12).
        let params = QueryParams::parse(raw);
        let first = |name: &str| -> Result<Option<String>, DomainError> {
            Ok(params.first(name)?.map(str::to_owned))
        };
        let month = Self::month_of(now);
        let instant = |name: &str, value: Option<String>, default: DateTime<Utc>| {
            match value {
            None => Ok(default),
            Some(text) => DateTime::parse_from_rfc3339(text.trim())
                .map(|at| at.with_timezone(&Utc))
                .map_err(|_| {
                    DomainError::bad_field(
                        name,
                        format!("Invalid query parameter {name}: must be an RFC 3339 instant, e.g. 2026-11-01T00:00:00Z"),
                    )
                }),
        }
        };
        let given_from = first("from")?;
        let given_to = first("to")?;
        let blame = if given_to.is_some() { "to" } else { "from" };
        let from = instant("from", given_from, month.from)?;
        let to = instant("to", given_to, month.to)?;
        if from >= to {
            return Err(DomainError::bad_field(
                blame,
                format!("Invalid query parameter {blame}: from must be before to"),
            ));
        }
        if to - from > chrono::Duration::days(MAX_WINDOW_DAYS) {
            return Err(DomainError::bad_field(
                blame,
                format!("Invalid query parameter {blame}: the window may be at most {MAX_WINDOW_DAYS} days"),
            ));
        }
        Ok(Self { from, to })
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
        let w = StatsWindow::parse(None, at("2026-11-24T10:00:00Z")).unwrap();
        assert_eq!(
            (w.from, w.to),
            (at("2026-11-01T00:00:00Z"), at("2026-12-01T00:00:00Z"))
        );
        let december = StatsWindow::parse(None, at("2026-12-31T23:59:59Z")).unwrap();
        assert_eq!(december.to, at("2027-01-01T00:00:00Z"));
    }

    #[test]
    fn given_bounds_are_rfc3339_instants_converted_to_utc() {
        let w = StatsWindow::parse(
            Some("from=2026-11-01T01:00:00%2B01:00&to=2026-11-02T00:00:00Z"),
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
            Some("from=2026-01-01T00:00:00Z&to=2026-04-04T00:00:00Z"),
            now
        )
        .is_ok());
        let err = StatsWindow::parse(
            Some("from=2026-01-01T00:00:00Z&to=2026-04-04T00:00:01Z"),
            now,
        )
        .unwrap_err();
        assert_eq!(err.field(), Some("to"));
    }

    #[test]
    fn bad_windows_name_the_parameter() {
        let now = at("2026-11-24T10:00:00Z");
        let cases = [
            ("from=yesterday", "from"),
            ("to=2026-11-30", "to"),
            ("from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z", "to"),
            ("from=2026-11-01T00:00:00Z&to=2026-11-01T00:00:00Z", "to"),
            ("from=2026-12-05T00:00:00Z", "from"),
            ("to=2026-10-01T00:00:00Z", "to"),
            ("from=2020-01-01T00:00:00Z", "from"),
        ];
        for (query, field) in cases {
            let err = StatsWindow::parse(Some(query), now).unwrap_err();
            assert_eq!(err.field(), Some(field), "{query}");
        }
    }
}
