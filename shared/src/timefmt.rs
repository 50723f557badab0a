//! Timestamp formats of the contract.
//!
//! Responses carry RFC 3339 UTC with milliseconds and `Z` (BEHAVIOR 2), e.g.
//! `2026-11-22T09:30:00.000Z`; dispatch's `owner_assigned_at` alone is RFC 2822 (spec "Dispatch").

use chrono::{DateTime, SecondsFormat, Utc};

/// `2026-11-22T09:30:00.000Z`: RFC 3339, UTC, milliseconds.
pub fn rfc3339_millis(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `Sun, 22 Nov 2026 09:30:00 +0000`: RFC 2822 in UTC.
pub fn rfc2822(at: DateTime<Utc>) -> String {
    at.to_rfc2822()
}

/// Serde adapter writing `DateTime<Utc>` as [`rfc3339_millis`]; reads any RFC 3339 text.
pub mod serde_millis {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes as RFC 3339 with milliseconds.
    pub fn serialize<S: Serializer>(at: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&rfc3339_millis(*at))
    }

    /// Deserializes RFC 3339 text.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn response_timestamps_have_milliseconds_and_z() {
        let at = Utc.with_ymd_and_hms(2026, 11, 22, 9, 30, 0).unwrap();
        assert_eq!(rfc3339_millis(at), "2026-11-22T09:30:00.000Z");
    }

    #[test]
    fn dispatch_timestamps_are_rfc2822_utc() {
        let at = Utc.with_ymd_and_hms(2026, 11, 22, 9, 30, 0).unwrap();
        assert_eq!(rfc2822(at), "Sun, 22 Nov 2026 09:30:00 +0000");
    }
}
