//! Timestamp formats of the contract.
//!
//! Responses carry RFC 3339 UTC with milliseconds and `Z` (BEHAVIOR 2), e.g.
//! `2026-11-22T09:30:00.000Z`; dispatch's `owner_assigned_at` alone is RFC 2822 (spec "Dispatch").

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Serialize, Serializer};
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, SchemaFormat, SchemaType, Type};
use utoipa::openapi::{KnownFormat, RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

/// An instant written as RFC 3339 UTC with milliseconds (BEHAVIOR 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(pub DateTime<Utc>);

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&rfc3339_millis(self.0))
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
            Some(at) => s.serialize_str(&rfc3339_millis(at)),
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
