//! IANA time zones and local-time conversions.

use crate::types::raw_form;
use chrono::{DateTime, Duration, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A time zone of the IANA tz database (BEHAVIOR 4 `time_zone`), e.g. `Europe/Berlin`. Built
/// only by [`IanaTimeZone::parse`]; serializes as its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IanaTimeZone(Tz);

impl IanaTimeZone {
    /// UTC, the default zone of a provisioned member (`docs/seed-format.md`).
    pub const UTC: IanaTimeZone = IanaTimeZone(Tz::UTC);

    /// Parses an IANA name, matched exactly (names are case-sensitive; no trimming).
    ///
    /// Errors: `Unknown time zone: <name>`.
    pub fn parse(name: &str) -> Result<Self, String> {
        parse_time_zone(name).map(Self)
    }

    /// The zone, for local-time arithmetic.
    pub fn tz(self) -> Tz {
        self.0
    }

    /// The IANA name, e.g. `America/New_York`.
    pub fn name(self) -> &'static str {
        self.0.name()
    }
}

impl fmt::Display for IanaTimeZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

raw_form! {
    IanaTimeZone, String, |n: String| IanaTimeZone::parse(&n), |z: IanaTimeZone| z.to_string()
}

/// Parses an IANA time zone name known to the tz database shipped with chrono-tz
/// (BEHAVIOR 4 `time_zone`), e.g. `Europe/Berlin`, `America/New_York`, `UTC`.
///
/// The name is matched exactly (IANA names are case-sensitive; no trimming).
///
/// # Errors
///
/// `Unknown time zone: <name>` for any other text, including the empty string.
pub fn parse_time_zone(name: &str) -> Result<Tz, String> {
    name.parse::<Tz>()
        .map_err(|_| format!("Unknown time zone: {name}"))
}

/// The instant at which the local wall-clock time `local` occurs in `tz`.
///
/// A repeated local time (fall-back) gives its earlier occurrence. A local time skipped by a
/// spring-forward gap is read with the offset in force before the gap, which lands the same
/// distance past the gap (02:30 on a New York spring-forward day is 03:30 EDT), the usual
/// convention of tz-aware libraries.
pub(crate) fn local_to_utc(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(at) | LocalResult::Ambiguous(at, _) => at.with_timezone(&Utc),
        LocalResult::None => {
            let before = local.checked_sub_signed(Duration::days(1)).unwrap_or(local);
            let offset = tz.offset_from_utc_datetime(&before).fix();
            let naive_utc = local
                .checked_sub_signed(Duration::seconds(i64::from(offset.local_minus_utc())))
                .unwrap_or(local);
            Utc.from_utc_datetime(&naive_utc)
        }
    }
}

/// The instant at which the local day `date` starts in `tz` (its first existing local time).
pub(crate) fn start_of_day(tz: Tz, date: NaiveDate) -> DateTime<Utc> {
    local_to_utc(tz, date.and_time(chrono::NaiveTime::MIN))
}
