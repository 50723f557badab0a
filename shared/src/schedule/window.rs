//! Working-hours windows.

use super::days::DaySet;
use chrono::{DateTime, Datelike, NaiveDateTime, NaiveTime, Utc};
use chrono_tz::Tz;

/// Parses a working-hours time: strictly `HH:mm`, two digits each, `00:00` to `23:59`
/// (spec "working_hours entry", BEHAVIOR 4). No seconds, no surrounding whitespace, no
/// single-digit hours (`9:00` is rejected).
///
/// # Errors
///
/// A message quoting the text and naming the expected form.
pub fn parse_hhmm(text: &str) -> Result<NaiveTime, String> {
    let error = || format!("Invalid time {text:?}: expected HH:mm from 00:00 to 23:59");
    let bytes = text.as_bytes();
    if bytes.len() != 5 || bytes[2] != b':' {
        return Err(error());
    }
    let two_digits = |hi: u8, lo: u8| -> Option<u32> {
        (hi.is_ascii_digit() && lo.is_ascii_digit())
            .then(|| u32::from(hi - b'0') * 10 + u32::from(lo - b'0'))
    };
    let (Some(hour), Some(minute)) = (
        two_digits(bytes[0], bytes[1]),
        two_digits(bytes[3], bytes[4]),
    ) else {
        return Err(error());
    };
    NaiveTime::from_hms_opt(hour, minute, 0).ok_or_else(error)
}

/// A validated working-hours window: local wall-clock times `start..end` (start included, end
/// excluded) on each day of `days`, in the member's time zone (BEHAVIOR 4).
///
/// When `end` is earlier than `start` the window runs past midnight and belongs to the day it
/// starts: `friday 22:00-02:00` covers Friday 22:00 to Saturday 02:00 local time, and not
/// Friday 00:00-02:00.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The days on which the window starts.
    pub days: DaySet,
    /// First local time inside the window.
    pub start: NaiveTime,
    /// First local time after the window (on the next day when `end < start`). A hand-built
    /// window with `end == start` is empty; [`validate_working_hours`](super::working_hours::validate_working_hours) never produces one.
    pub end: NaiveTime,
}

impl Window {
    /// Whether the window runs past midnight (`end < start`).
    pub fn is_overnight(&self) -> bool {
        self.end < self.start
    }

    /// Whether the local wall-clock time `local` is inside the window. Seconds and fractions
    /// count: with an end of 17:00, 16:59:59 is inside and 17:00:00 is not.
    pub fn contains_local(&self, local: NaiveDateTime) -> bool {
        let time = local.time();
        let day = local.weekday();
        if self.is_overnight() {
            (self.days.contains(day) && time >= self.start)
                || (self.days.contains(day.pred()) && time < self.end)
        } else {
            self.days.contains(day) && self.start <= time && time < self.end
        }
    }

    /// Whether the instant `at` is inside the window, reading its local time in `tz`.
    pub fn contains(&self, at: DateTime<Utc>, tz: Tz) -> bool {
        self.contains_local(at.with_timezone(&tz).naive_local())
    }
}
