//! Out-of-office ranges.

use super::zone::{local_to_utc, start_of_day, IanaTimeZone};
use crate::types::raw_form;
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// An out-of-office entry as written (spec "User (account member) object"): the shape of the
/// seed file, the store and the response. A PATCH reads only `start_date` and `end_date`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"start_date": "2026-12-24", "end_date": "2026-12-26"}))]
pub struct OutOfOfficeText {
    /// ISO date (the start of that day in the member's zone) or timestamp.
    pub start_date: String,
    /// ISO date (covers that whole day) or timestamp.
    pub end_date: String,
    /// Who recorded it, when known (from provisioning; never read from a PATCH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
}

/// A parsed out-of-office entry: the text as written (read back unchanged, BEHAVIOR 4) and the
/// meaning of its two dates. Built by [`OutOfOffice::parse`]; serializes as [`OutOfOfficeText`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "OutOfOfficeText", into = "OutOfOfficeText")]
pub struct OutOfOffice {
    text: OutOfOfficeText,
    start: EdgeValue,
    end: EdgeValue,
}

impl OutOfOffice {
    /// Parses an entry for a member whose zone is `zone` (BEHAVIOR 4): both dates ISO dates or
    /// timestamps, the range not running backwards in that zone.
    ///
    /// Errors: as [`validate_out_of_office_parts`].
    pub fn parse(text: OutOfOfficeText, zone: IanaTimeZone) -> Result<Self, String> {
        validate_out_of_office(&text, zone.tz())?;
        Self::from_text(text)
    }

    /// Whether the range still runs forwards when read in `zone` (a member's zone may change
    /// after the entry was written).
    ///
    /// Errors: as [`validate_out_of_office_parts`].
    pub fn check_in(&self, zone: IanaTimeZone) -> Result<(), String> {
        validate_out_of_office(&self.text, zone.tz()).map(|_| ())
    }

    fn from_text(text: OutOfOfficeText) -> Result<Self, String> {
        let edge = |key: &str, value: &str| {
            EdgeValue::parse(value).ok_or_else(|| format!("{key} is not a date or timestamp"))
        };
        Ok(Self {
            start: edge("start_date", &text.start_date)?,
            end: edge("end_date", &text.end_date)?,
            text,
        })
    }

    /// The entry as written.
    pub fn text(&self) -> &OutOfOfficeText {
        &self.text
    }

    /// The range as instants `(start, end)`, start included, end excluded, read in `tz`;
    /// `None` when an edge lies outside the representable dates.
    pub fn range(&self, tz: Tz) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        Some((
            self.start.at(tz, RangeEdge::Start)?,
            self.end.at(tz, RangeEdge::End)?,
        ))
    }
}

// A stored entry: its syntax is read; its order was checked when it was written.
raw_form! { OutOfOffice, OutOfOfficeText, OutOfOffice::from_text, |e: OutOfOffice| e.text }

/// What one edge value says, before a zone gives it an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EdgeValue {
    /// A date alone.
    Date(NaiveDate),
    /// A timestamp with an offset.
    Instant(DateTime<Utc>),
    /// A wall-clock time in the member's zone.
    Local(NaiveDateTime),
}

impl EdgeValue {
    fn parse(text: &str) -> Option<Self> {
        let trimmed = text.trim();
        if let Some(date) = date_only(trimmed) {
            return Some(Self::Date(date));
        }
        if let Ok(at) = DateTime::parse_from_rfc3339(trimmed) {
            return Some(Self::Instant(at.with_timezone(&Utc)));
        }
        let with_z = trimmed
            .strip_suffix(['Z', 'z'])
            .map(|rest| format!("{rest}+00:00"));
        let candidate = with_z.as_deref().unwrap_or(trimmed);
        for layout in OFFSET_LAYOUTS {
            if let Ok(at) = DateTime::parse_from_str(candidate, layout) {
                return Some(Self::Instant(at.with_timezone(&Utc)));
            }
        }
        for layout in LOCAL_LAYOUTS {
            if let Ok(local) = NaiveDateTime::parse_from_str(trimmed, layout) {
                return Some(Self::Local(local));
            }
        }
        None
    }

    fn at(self, tz: Tz, edge: RangeEdge) -> Option<DateTime<Utc>> {
        match (self, edge) {
            (Self::Date(date), RangeEdge::Start) => Some(start_of_day(tz, date)),
            (Self::Date(date), RangeEdge::End) => {
                date.succ_opt().map(|next| start_of_day(tz, next))
            }
            (Self::Instant(at), _) => Some(at),
            (Self::Local(local), _) => Some(local_to_utc(tz, local)),
        }
    }
}

/// Which edge of an out-of-office range a value gives; it decides what a date alone means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeEdge {
    /// `start_date`: a date alone is the start of that day in the member's zone.
    Start,
    /// `end_date`: a date alone covers that whole day, so the (exclusive) range end is the start
    /// of the next day in the member's zone.
    End,
}

/// Timestamp layouts without an offset, read in the member's zone.
const LOCAL_LAYOUTS: [&str; 4] = [
    "%Y-%m-%dT%H:%M:%S%.f",
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%d %H:%M:%S%.f",
    "%Y-%m-%d %H:%M",
];

/// Timestamp layouts with an offset but without seconds (RFC 3339 proper needs seconds).
const OFFSET_LAYOUTS: [&str; 2] = ["%Y-%m-%dT%H:%M%:z", "%Y-%m-%d %H:%M%:z"];

fn date_only(text: &str) -> Option<NaiveDate> {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()
}

/// Reads one edge of an out-of-office range (BEHAVIOR 4 `out_office_dates`) as an instant.
///
/// Accepted (surrounding whitespace ignored):
/// - an ISO date `2026-12-24`: for [`RangeEdge::Start`] the start of that day in `tz`; for
///   [`RangeEdge::End`] the start of the next day in `tz` (the day is covered entirely);
/// - an RFC 3339 timestamp with an offset or `Z` (`2026-12-24T09:00:00+09:00`; seconds may be
///   left out, `2026-12-24T09:00Z`);
/// - a timestamp without an offset (`2026-12-24T09:00:00`, `2026-12-24T09:00`, fractions of a
///   second allowed, `T` or a space between date and time): a wall-clock time in `tz`. A time
///   repeated by a fall-back transition means its first occurrence; a time skipped by a
///   spring-forward gap is read with the offset before the gap.
///
/// # Errors
///
/// A message quoting the text and naming the accepted forms.
pub fn parse_range_edge(text: &str, tz: Tz, edge: RangeEdge) -> Result<DateTime<Utc>, String> {
    EdgeValue::parse(text)
        .and_then(|value| value.at(tz, edge))
        .ok_or_else(|| {
            format!(
            "Invalid date or timestamp {text:?}: expected an ISO date (2026-12-24) or timestamp \
                 (2026-12-24T09:00:00, with an optional offset)"
        )
        })
}

/// Validates one out-of-office entry (BEHAVIOR 4) and returns its range as instants
/// `(start, end)`, start included and end excluded, for a member whose zone is `tz`.
///
/// Same as [`validate_out_of_office_parts`] with both dates present (a stored or deserialized
/// [`OutOfOfficeText`] always has both; `created_by` is ignored).
///
/// # Errors
///
/// See [`validate_out_of_office_parts`].
pub fn validate_out_of_office(
    entry: &OutOfOfficeText, tz: Tz,
) -> Result<(DateTime<Utc>, DateTime<Utc>), String> {
    validate_out_of_office_parts(Some(&entry.start_date), Some(&entry.end_date), tz)
}

/// Validates the two dates of an out-of-office entry as read from a request body, where either
/// key may be missing (`None`), and returns the range `(start, end)`: start included, end
/// excluded (BEHAVIOR 4).
///
/// Each value per [`parse_range_edge`]: a date-only `end_date` covers that whole day in `tz`;
/// a timestamp without an offset is in `tz`. The range must not run backwards: `start_date`
/// must not be later than `end_date` (equal timestamps give an empty range, accepted; a date-only
/// `end_date` accepts any start before the end of that day).
///
/// # Errors
///
/// The first problem, as a message starting with the key, for the caller to prefix with the
/// entry's path (`out_office_dates[0].`):
/// - `start_date is required` / `end_date is required` when a value is `None`;
/// - `start_date must be an ISO date (2026-12-24) or timestamp ..., got "..."` (same for
///   `end_date`);
/// - `start_date must not be later than end_date`.
pub fn validate_out_of_office_parts(
    start: Option<&str>, end: Option<&str>, tz: Tz,
) -> Result<(DateTime<Utc>, DateTime<Utc>), String> {
    let start_text = start.ok_or("start_date is required")?;
    let end_text = end.ok_or("end_date is required")?;
    let parse = |key: &str, text: &str, edge| {
        parse_range_edge(text, tz, edge).map_err(|_| {
            format!(
                "{key} must be an ISO date (2026-12-24) or timestamp (RFC 3339, or without an \
                 offset in the member's time zone), got {text:?}"
            )
        })
    };
    let start_at = parse("start_date", start_text, RangeEdge::Start)?;
    let end_at = parse("end_date", end_text, RangeEdge::End)?;
    let in_order = if date_only(end_text.trim()).is_some() {
        start_at < end_at
    } else {
        start_at <= end_at
    };
    if !in_order {
        return Err("start_date must not be later than end_date".to_string());
    }
    Ok((start_at, end_at))
}
