//! Timestamp formats of the contract.
//!
//! Responses carry RFC 3339 UTC with milliseconds and `Z` (BEHAVIOR 2), e.g.
//! `2026-11-22T09:30:00.000Z`; dispatch's `owner_assigned_at` alone is RFC 2822 (spec "Dispatch").

use chrono::{DateTime, Datelike, SecondsFormat, Timelike, Utc};
use serde::{Serialize, Serializer};
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, SchemaFormat, SchemaType, Type};
use utoipa::openapi::{KnownFormat, RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

/// An instant written as RFC 3339 UTC with milliseconds (BEHAVIOR 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(pub DateTime<Utc>);

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_millis(self.0, s)
    }
}

fn date_time_schema() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
}

impl PartialSchema for Timestamp {
    fn schema() -> RefOr<Schema> {
        date_time_schema()
            .description(Some("RFC 3339 UTC with milliseconds"))
            .examples([serde_json::json!("2026-11-22T09:30:00.000Z")])
            .into()
    }
}

impl ToSchema for Timestamp {}

/// The `archived` value of a response (spec "Common record rules"): `false` while active, the
/// archive time (RFC 3339 UTC with milliseconds) once archived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Archived(pub Option<DateTime<Utc>>);

impl Serialize for Archived {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            None => s.serialize_bool(false),
            Some(at) => serialize_millis(at, s),
        }
    }
}

impl PartialSchema for Archived {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .schema_type(SchemaType::Type(Type::Boolean))
                    .enum_values(Some([false])),
            )
            .item(date_time_schema())
            .description(Some("`false` while active, the archive time once archived"))
            .into()
    }
}

impl ToSchema for Archived {}

/// `2026-11-22T09:30:00.000Z`: RFC 3339, UTC, milliseconds.
pub fn rfc3339_millis(at: DateTime<Utc>) -> String {
    match MillisText::new(at) {
        Some(text) => text.as_str().to_owned(),
        None => at.to_rfc3339_opts(SecondsFormat::Millis, true),
    }
}

/// Writes `at` as [`rfc3339_millis`] text with `s`, without a `String` in between.
pub fn serialize_millis<S: Serializer>(at: DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    match MillisText::new(at) {
        Some(text) => s.serialize_str(text.as_str()),
        None => s.serialize_str(&rfc3339_millis(at)),
    }
}

/// The 24 bytes of [`rfc3339_millis`] (`YYYY-MM-DDTHH:MM:SS.mmmZ`) in a stack buffer: every
/// response writes two to four timestamps, and chrono's general formatter (`to_rfc3339_opts`)
/// costs about ten times as much and a `String` each (docs/performance.md). chrono still
/// computes the calendar fields; this only lays out their digits. A unit test checks it against
/// `to_rfc3339_opts` over instants spread across the years it covers.
struct MillisText([u8; 24]);

impl MillisText {
    /// The text of `at`; `None` for the instants the fixed layout does not cover, which
    /// [`rfc3339_millis`] leaves to chrono: a year outside 0000-9999, a leap second.
    fn new(at: DateTime<Utc>) -> Option<Self> {
        // The UTC fields once: each accessor of `DateTime` converts to local time again.
        let utc = at.naive_utc();
        let (date, time) = (utc.date(), utc.time());
        let year = u32::try_from(date.year()).ok().filter(|y| *y <= 9999)?;
        let nanos = time.nanosecond();
        if nanos >= 1_000_000_000 {
            return None;
        }
        let mut text = *b"0000-00-00T00:00:00.000Z";
        let mut digits = |at: usize, width: usize, mut value: u32| {
            for i in (at..at + width).rev() {
                text[i] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        digits(0, 4, year);
        digits(5, 2, date.month());
        digits(8, 2, date.day());
        digits(11, 2, time.hour());
        digits(14, 2, time.minute());
        digits(17, 2, time.second());
        digits(20, 3, nanos / 1_000_000);
        Some(Self(text))
    }

    fn as_str(&self) -> &str {
        // Only ASCII digits and the separators above are ever written.
        std::str::from_utf8(&self.0).unwrap_or("")
    }
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
        serialize_millis(*at, s)
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
    fn the_fixed_layout_writes_what_chrono_writes() {
        // Instants spread over the years 0000-9999 with every kind of sub-second part, plus the
        // edges of the layout.
        let mut seconds: i64 = -62_167_219_200; // 0000-01-01T00:00:00Z
        let last: i64 = 253_402_300_799; // 9999-12-31T23:59:59Z
        let mut checked = 0;
        let mut nanos: u32 = 0;
        while seconds <= last {
            let at = DateTime::from_timestamp(seconds, nanos).unwrap();
            let text = MillisText::new(at).expect("inside the layout");
            assert_eq!(
                text.as_str(),
                at.to_rfc3339_opts(SecondsFormat::Millis, true)
            );
            checked += 1;
            seconds += 9_876_543_211; // about 313 years and an odd number of seconds
            nanos = (nanos + 123_456_789) % 1_000_000_000;
        }
        for (seconds, nanos) in [
            (-62_167_219_200, 0),
            (last, 999_999_999),
            (0, 0),
            (951_782_400, 1_000_000), // 2000-02-29T00:00:00.001Z
            (1_795_339_800, 999_000_000),
        ] {
            let at = DateTime::from_timestamp(seconds, nanos).unwrap();
            assert_eq!(
                rfc3339_millis(at),
                at.to_rfc3339_opts(SecondsFormat::Millis, true)
            );
            checked += 1;
        }
        assert!(checked > 30);
    }

    #[test]
    fn instants_outside_the_layout_are_left_to_chrono() {
        let before_year_zero = DateTime::from_timestamp(-62_167_219_201, 0).unwrap();
        assert!(MillisText::new(before_year_zero).is_none());
        assert_eq!(
            rfc3339_millis(before_year_zero),
            before_year_zero.to_rfc3339_opts(SecondsFormat::Millis, true)
        );
        let year_ten_thousand = DateTime::from_timestamp(253_402_300_800, 0).unwrap();
        assert!(MillisText::new(year_ten_thousand).is_none());
        assert_eq!(
            rfc3339_millis(year_ten_thousand),
            "+10000-01-01T00:00:00.000Z"
        );
        let leap_second = DateTime::from_timestamp(1_483_228_799, 1_500_000_000).unwrap();
        assert!(MillisText::new(leap_second).is_none());
        assert_eq!(rfc3339_millis(leap_second), "2016-12-31T23:59:60.500Z");
    }

    #[test]
    fn timestamps_serialise_as_the_same_text() {
        let at = Utc.with_ymd_and_hms(2026, 11, 22, 9, 30, 0).unwrap()
            + chrono::Duration::milliseconds(7);
        assert_eq!(
            serde_json::to_string(&Timestamp(at)).unwrap(),
            r#""2026-11-22T09:30:00.007Z""#
        );
        assert_eq!(
            serde_json::to_string(&Archived(Some(at))).unwrap(),
            r#""2026-11-22T09:30:00.007Z""#
        );
        assert_eq!(serde_json::to_string(&Archived(None)).unwrap(), "false");
    }

    #[test]
    fn dispatch_timestamps_are_rfc2822_utc() {
        let at = Utc.with_ymd_and_hms(2026, 11, 22, 9, 30, 0).unwrap();
        assert_eq!(rfc2822(at), "Sun, 22 Nov 2026 09:30:00 +0000");
    }
}
