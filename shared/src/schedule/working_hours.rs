//! The working-hours entry of a member: its wire form and its parsed form.

use super::days::parse_days;
use super::window::{parse_hhmm, Window};
use crate::types::raw_form;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A working-hours entry as written (spec "working_hours entry"): the shape of the PATCH body,
/// the seed file, the store and the response alike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"days": "Mon - Fri", "start_date": "09:00", "end_date": "17:30"}))]
pub struct WorkingHoursText {
    /// A day name (`monday` to `sunday`) or a range: `Mon - Fri`, `mon-fri`, `Sat - Sun`,
    /// `sat-sun` (case-insensitive).
    pub days: String,
    /// First local time inside the window, `HH:mm` in the member's time zone.
    pub start_date: String,
    /// First local time after the window, `HH:mm`; earlier than `start_date` for a window that
    /// runs past midnight.
    pub end_date: String,
}

/// A parsed working-hours entry: the text as written (read back unchanged, BEHAVIOR 4) and the
/// window it means. Built only by [`WorkingHours::parse`]; serializes as [`WorkingHoursText`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "WorkingHoursText", into = "WorkingHoursText")]
pub struct WorkingHours {
    text: WorkingHoursText,
    window: Window,
}

impl WorkingHours {
    /// Parses an entry (BEHAVIOR 4): `days` a day name or range form, `start_date` and
    /// `end_date` strictly `HH:mm` from 00:00 to 23:59 and not equal.
    ///
    /// Errors: the first problem, in the order `days`, `start_date`, `end_date`, as a message
    /// starting with that key, e.g. `start_date must be a time HH:mm from 00:00 to 23:59, got
    /// "9:00"`.
    pub fn parse(text: WorkingHoursText) -> Result<Self, String> {
        let window = validate_working_hours(&text)?;
        Ok(Self { text, window })
    }

    /// The entry as written.
    pub fn text(&self) -> &WorkingHoursText {
        &self.text
    }

    /// The local wall-clock window it means.
    pub fn window(&self) -> Window {
        self.window
    }
}

/// Validates one stored or submitted working-hours entry (spec "working_hours entry",
/// BEHAVIOR 4) and returns its meaning.
///
/// `days` per [`parse_days`]; `start_date` and `end_date` per [`parse_hhmm`]. Equal times are
/// rejected (a window cannot be empty, nor a full 24 hours: use an empty `working_hours` for
/// 24/7); `end_date` earlier than `start_date` is an overnight window.
///
/// # Errors
///
/// The first problem found, in the order `days`, `start_date`, `end_date`, as a message starting
/// with that key (e.g. `start_date must be a time HH:mm from 00:00 to 23:59, got "9:00"`), for the
/// caller to prefix with the entry's path (`working_hours[2].`).
pub fn validate_working_hours(entry: &WorkingHoursText) -> Result<Window, String> {
    let days = parse_days(&entry.days).map_err(|_| {
        format!(
            "days must be a day name (monday to sunday) or one of \"Mon - Fri\", \"mon-fri\", \
             \"Sat - Sun\", \"sat-sun\", got {:?}",
            entry.days
        )
    })?;
    let time = |key: &str, text: &str| {
        parse_hhmm(text)
            .map_err(|_| format!("{key} must be a time HH:mm from 00:00 to 23:59, got {text:?}"))
    };
    let start = time("start_date", &entry.start_date)?;
    let end = time("end_date", &entry.end_date)?;
    if start == end {
        return Err(format!(
            "end_date must differ from start_date (both {:?})",
            entry.start_date
        ));
    }
    Ok(Window { days, start, end })
}

raw_form! { WorkingHours, WorkingHoursText, WorkingHours::parse, |h: WorkingHours| h.text }

#[cfg(test)]
mod tests {
    use super::*;

    fn text(days: &str, start: &str, end: &str) -> WorkingHoursText {
        WorkingHoursText {
            days: days.into(),
            start_date: start.into(),
            end_date: end.into(),
        }
    }

    #[test]
    fn an_entry_reads_back_exactly_as_written() {
        let hours = WorkingHours::parse(text("Mon - Fri", "22:00", "02:00")).unwrap();
        assert!(hours.window().is_overnight());
        let json = serde_json::to_value(&hours).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"days": "Mon - Fri", "start_date": "22:00", "end_date": "02:00"})
        );
        let back: WorkingHours = serde_json::from_value(json).unwrap();
        assert_eq!(back, hours);
    }

    #[test]
    fn an_invalid_entry_does_not_parse_nor_deserialize() {
        assert!(WorkingHours::parse(text("weekdays", "09:00", "17:00")).is_err());
        let json =
            serde_json::json!({"days": "monday", "start_date": "09:00", "end_date": "09:00"});
        assert!(serde_json::from_value::<WorkingHours>(json).is_err());
    }
}
