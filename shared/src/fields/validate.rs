//! Write validation and canonical stored forms (spec "Field types", BEHAVIOR 3).
//!
//! Validation of a write is all-or-nothing: [`validate_fields`] checks every key of `fields`
//! before anything is stored. `user` values need the account's members, so they come back as
//! [`FieldInput::Member`] for the caller to resolve against the store.

use super::catalogue::{Catalogue, FieldDef};
use super::definition::{EnumOption, FieldType};
use crate::error::DomainError;
use crate::model::member::{Member, MemberRef};
use crate::timefmt::rfc3339_millis;
use crate::types::canonical_domain::CanonicalDomain;
use crate::types::email::Email;
use crate::types::limits::{check_chars, MAX_FIELD_VALUE_CHARS};
use crate::types::number::is_storable;
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde_json::{Map, Value};

/// Keys that are never writable though not in the catalogue: always-present response keys.
const RESPONSE_ONLY_KEYS: [&str; 5] = ["id", "created_at", "updated_at", "archived", "archived_by"];

/// A validated value of one key of `fields`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldInput {
    /// Store this canonical text.
    Set(String),
    /// Clear the field (`null`, or a blank string).
    Clear,
    /// A `user` field: a member id or e-mail still to be resolved to an active member's e-mail.
    Member(String),
}

/// Validates every key of a `fields` object against `catalogue`, in the object's key order.
///
/// Errors (400, `field` set): `Unknown field: <name>`; `Field cannot be set: <name>` for
/// system-managed names (spec "System-managed record fields"); a type error naming the field.
pub fn validate_fields(
    catalogue: &Catalogue, fields: &Map<String, Value>,
) -> Result<Vec<(String, FieldInput)>, DomainError> {
    fields
        .iter()
        .map(|(name, value)| {
            let def = match catalogue.get(name) {
                Some(def) if def.is_system() => return Err(cannot_be_set(name)),
                Some(def) => def,
                None if RESPONSE_ONLY_KEYS.contains(&name.as_str()) => {
                    return Err(cannot_be_set(name))
                }
                None => {
                    return Err(DomainError::bad_field(
                        name,
                        format!("Unknown field: {name}"),
                    ));
                }
            };
            validate_value(def, value).map(|input| (name.clone(), input))
        })
        .collect()
}

impl FieldInput {
    /// How a `user` input names its member; `None` for other inputs.
    pub fn member_ref(&self) -> Option<MemberRef> {
        match self {
            Self::Member(given) => Some(MemberRef::parse(given)),
            _ => None,
        }
    }
}

/// Turns validated inputs into the values to write (`None` clears), each `user` input into the
/// e-mail of the active member `find` returns for its [`MemberRef`] (the records service reads
/// them from the store, provisioning from the seed's members).
///
/// Errors: 400 naming the field when `find` returns no active member.
pub fn resolve_inputs<'m>(
    inputs: Vec<(String, FieldInput)>, mut find: impl FnMut(&MemberRef) -> Option<&'m Member>,
) -> Result<Vec<(String, Option<String>)>, DomainError> {
    let mut resolved = Vec::with_capacity(inputs.len());
    for (name, input) in inputs {
        let value = match input {
            FieldInput::Set(v) => Some(v),
            FieldInput::Clear => None,
            FieldInput::Member(given) => match find(&MemberRef::parse(&given)) {
                Some(member) if member.is_active() => Some(member.email.as_str().to_string()),
                _ => return Err(no_active_member(&name, &given)),
            },
        };
        resolved.push((name, value));
    }
    Ok(resolved)
}

/// The error of a `user` field naming no active member of the account (BEHAVIOR 3): 400 naming
/// the field, `Invalid value for <name>: no active member with id or e-mail "<given>"`.
pub fn no_active_member(name: &str, given: &str) -> DomainError {
    DomainError::bad_field(
        name,
        format!("Invalid value for {name}: no active member with id or e-mail \"{given}\""),
    )
}

fn cannot_be_set(name: &str) -> DomainError {
    DomainError::bad_field(name, format!("Field cannot be set: {name}"))
}

/// Validates one value for a (writable) field definition.
///
/// Errors: 400 naming the field, e.g. `Invalid value for amount: expected a finite number`, or
/// `Invalid value for city: at most 65536 characters` for a string longer than
/// [`MAX_FIELD_VALUE_CHARS`] (BEHAVIOR 12).
pub fn validate_value(def: &FieldDef, value: &Value) -> Result<FieldInput, DomainError> {
    let name = def.internal_name.as_str();
    let invalid =
        |why: String| DomainError::bad_field(name, format!("Invalid value for {name}: {why}"));
    if value.is_null() {
        return Ok(FieldInput::Clear);
    }
    // BEHAVIOR 12: no field takes a longer string, whatever its type (checked before any parser
    // reads it).
    if let Value::String(s) = value {
        check_chars(s, MAX_FIELD_VALUE_CHARS).map_err(invalid)?;
    }
    match def.field_type {
        FieldType::String => {
            // An address or a URL is text: the coercion of numbers and booleans is for plain text
            // fields (docs/decisions.md).
            let text = match (name, value) {
                ("email" | "website_url", Value::String(s)) => s.clone(),
                ("email" | "website_url", _) => return Err(invalid("expected a string".into())),
                _ => scalar_text(value).ok_or_else(|| invalid("expected a string".into()))?,
            };
            if text.trim().is_empty() {
                return Ok(FieldInput::Clear);
            }
            let stored = match name {
                "email" => Email::parse(&text).map_err(invalid)?.into_string(),
                "website_url" => CanonicalDomain::parse(&text)
                    .map_err(invalid)?
                    .into_string(),
                _ => text,
            };
            Ok(FieldInput::Set(stored))
        }
        FieldType::Number => canonical_number(value)
            .map(FieldInput::Set)
            .map_err(invalid),
        FieldType::Bool => canonical_bool(value).map(FieldInput::Set).map_err(invalid),
        FieldType::Datetime => {
            if is_blank(value) {
                return Ok(FieldInput::Clear);
            }
            parse_datetime_value(value)
                .map(|at| FieldInput::Set(rfc3339_millis(at)))
                .map_err(invalid)
        }
        FieldType::Enumeration => {
            let Some(text) = scalar_text(value) else {
                return Err(invalid("expected one of the options".into()));
            };
            if text.trim().is_empty() {
                return Ok(FieldInput::Clear);
            }
            canonical_option(&text, &def.options)
                .map(FieldInput::Set)
                .map_err(invalid)
        }
        FieldType::User => match value {
            Value::String(s) if s.trim().is_empty() => Ok(FieldInput::Clear),
            Value::String(s) => Ok(FieldInput::Member(s.trim().to_string())),
            _ => Err(invalid("expected a member id or e-mail".into())),
        },
    }
}

fn is_blank(value: &Value) -> bool {
    matches!(value, Value::String(s) if s.trim().is_empty())
}

/// Text of a scalar: strings as they are, numbers and booleans as their JSON text; `None` for
/// objects and arrays.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A finite number (JSON number or numeric string) as its shortest decimal text without exponent
/// (BEHAVIOR 3): `1e3` -> `1000`, `12.50` -> `12.5`, `-0` -> `0`. It must be storable
/// (BEHAVIOR 12, [`is_storable`]): zero, or a magnitude from 1e-130 to below 1e126.
pub fn canonical_number(value: &Value) -> Result<String, String> {
    let number = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let t = s.trim();
            // Rust also parses `inf`, `NaN` and `infinity`; only digits, sign, point, exponent here.
            if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c)) {
                None
            } else {
                t.parse::<f64>().ok()
            }
        }
        _ => None,
    };
    match number {
        Some(n) if is_storable(n) => Ok(if n == 0.0 {
            "0".to_string()
        } else {
            format!("{n}")
        }),
        Some(n) if n.is_finite() => {
            Err("the number is out of range: zero or a magnitude from 1e-130 to below 1e126".into())
        }
        _ => Err("expected a finite number".into()),
    }
}

/// `true`, `false`, `"true"`, `"false"` (strings case-insensitive) as `true` / `false`.
pub fn canonical_bool(value: &Value) -> Result<String, String> {
    match value {
        Value::Bool(b) => Ok(b.to_string()),
        Value::String(s) if s.trim().eq_ignore_ascii_case("true") => Ok("true".into()),
        Value::String(s) if s.trim().eq_ignore_ascii_case("false") => Ok("false".into()),
        _ => Err("expected true or false".into()),
    }
}

/// An enumeration option by `internal_name` or display `name`, case-insensitive, as its
/// `internal_name`. The error lists the allowed internal names.
pub fn canonical_option(input: &str, options: &[EnumOption]) -> Result<String, String> {
    let wanted = input.trim();
    options
        .iter()
        .find(|o| {
            o.internal_name.eq_ignore_ascii_case(wanted) || o.name.eq_ignore_ascii_case(wanted)
        })
        .map(|o| o.internal_name.clone())
        .ok_or_else(|| {
            let allowed: Vec<&str> = options.iter().map(|o| o.internal_name.as_str()).collect();
            format!(
                "\"{wanted}\" is not an option; allowed: {}",
                allowed.join(", ")
            )
        })
}

/// Parses a datetime input (BEHAVIOR 3): RFC 3339 / ISO 8601 (a date alone is midnight UTC, a
/// time without offset is UTC, an offset is converted), RFC 2822, or a numeric timestamp (number
/// or numeric string; absolute values below 10^11 are seconds, otherwise milliseconds).
pub fn parse_datetime_value(value: &Value) -> Result<DateTime<Utc>, String> {
    let bad = || "expected an ISO 8601 or RFC 2822 date-time or a numeric timestamp".to_string();
    match value {
        Value::Number(n) => n.as_f64().and_then(from_timestamp).ok_or_else(bad),
        Value::String(s) => parse_datetime_text(s).ok_or_else(bad),
        _ => Err(bad()),
    }
}

/// [`parse_datetime_value`] for text.
pub fn parse_datetime_text(text: &str) -> Option<DateTime<Utc>> {
    let t = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(t) {
        return Some(at.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%dT%H:%M%z",
        "%Y-%m-%d %H:%M:%S%.f%z",
    ] {
        if let Ok(at) = DateTime::parse_from_str(t, format) {
            return Some(at.with_timezone(&Utc));
        }
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(at) = NaiveDateTime::parse_from_str(t, format) {
            return Some(at.and_utc());
        }
    }
    if let Ok(date) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return date.and_hms_opt(0, 0, 0).map(|d| d.and_utc());
    }
    if let Ok(at) = DateTime::parse_from_rfc2822(t) {
        return Some(at.with_timezone(&Utc));
    }
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || "+-.".contains(c)) {
        return t.parse::<f64>().ok().and_then(from_timestamp);
    }
    None
}

/// Smallest timestamp in milliseconds a datetime field takes: the earliest instant chrono holds.
pub const MIN_TIMESTAMP_MILLIS: i64 = DateTime::<Utc>::MIN_UTC.timestamp_millis();
/// Largest timestamp in milliseconds a datetime field takes: the latest instant chrono holds.
pub const MAX_TIMESTAMP_MILLIS: i64 = DateTime::<Utc>::MAX_UTC.timestamp_millis();

fn from_timestamp(n: f64) -> Option<DateTime<Utc>> {
    if !n.is_finite() {
        return None;
    }
    let millis = (if n.abs() < 1e11 { n * 1000.0 } else { n }).round();
    if millis < MIN_TIMESTAMP_MILLIS as f64 || millis > MAX_TIMESTAMP_MILLIS as f64 {
        return None;
    }
    DateTime::from_timestamp_millis(millis as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectType;
    use serde_json::json;

    #[test]
    fn numbers_are_stored_as_shortest_decimal_text() {
        let cases = [
            (json!(1e3), Some("1000")),
            (json!(12.50), Some("12.5")),
            (json!(-0.0), Some("0")),
            (json!("42"), Some("42")),
            (json!(" 7.25 "), Some("7.25")),
            (json!("1e3"), Some("1000")),
            (json!(1e21), Some("1000000000000000000000")),
            (json!(1e125), Some(&*format!("1{}", "0".repeat(125)))),
            (json!(1e200), None),
            (json!(-1e126), None),
            (json!(1e-131), None),
            (json!("1e300"), None),
            (json!(-3), Some("-3")),
            (json!("inf"), None),
            (json!("NaN"), None),
            (json!("12abc"), None),
            (json!(true), None),
            (json!([1]), None),
        ];
        for (input, expected) in cases {
            assert_eq!(
                canonical_number(&input).ok().as_deref(),
                expected,
                "{input}"
            );
        }
    }

    #[test]
    fn a_string_of_any_field_is_at_most_65536_characters() {
        let contacts = Catalogue::standard(ObjectType::Contacts);
        let deals = Catalogue::standard(ObjectType::Deals);
        let fields = [
            contacts.get("city").unwrap(),
            contacts.get("email").unwrap(),
            contacts.get("contact_owner").unwrap(),
            deals.get("amount").unwrap(),
            deals.get("deal_stage").unwrap(),
            deals.get("close_date").unwrap(),
        ];
        for def in fields {
            let err =
                validate_value(def, &json!("é".repeat(MAX_FIELD_VALUE_CHARS + 1))).unwrap_err();
            assert_eq!(err.field(), Some(def.internal_name.as_str()));
            assert!(
                err.to_string().ends_with("at most 65536 characters"),
                "{err}"
            );
        }
        let city = contacts.get("city").unwrap();
        let longest = "é".repeat(MAX_FIELD_VALUE_CHARS);
        assert_eq!(
            validate_value(city, &json!(longest)).unwrap(),
            FieldInput::Set(longest)
        );
    }

    #[test]
    fn addresses_and_urls_must_be_text_while_other_text_fields_coerce_scalars() {
        let c = Catalogue::standard(ObjectType::Companies);
        let url = c.get("website_url").unwrap();
        assert_eq!(
            validate_value(url, &json!("https://www.Example.com/x")).unwrap(),
            FieldInput::Set("example.com".into())
        );
        for not_text in [json!(5), json!(true), json!(1.5)] {
            let err = validate_value(url, &not_text).unwrap_err();
            assert_eq!(err.field(), Some("website_url"), "{not_text}");
        }
        let c = Catalogue::standard(ObjectType::Contacts);
        assert!(validate_value(c.get("email").unwrap(), &json!(5)).is_err());
    }

    #[test]
    fn numeric_timestamps_are_accepted_within_the_instants_chrono_holds() {
        assert!(parse_datetime_value(&json!(MAX_TIMESTAMP_MILLIS)).is_ok());
        assert!(parse_datetime_value(&json!(MIN_TIMESTAMP_MILLIS)).is_ok());
        assert!(parse_datetime_value(&json!(MAX_TIMESTAMP_MILLIS + 1)).is_err());
        assert!(parse_datetime_value(&json!(8_639_999_999_999_999_i64)).is_err());
    }

    #[test]
    fn booleans_accept_json_and_text_forms() {
        let cases = [
            (json!(true), Some("true")),
            (json!(false), Some("false")),
            (json!("TRUE"), Some("true")),
            (json!("false"), Some("false")),
            (json!("yes"), None),
            (json!(1), None),
        ];
        for (input, expected) in cases {
            assert_eq!(canonical_bool(&input).ok().as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn datetimes_in_every_accepted_format_become_rfc3339_utc_millis() {
        let cases = [
            (
                json!("2026-11-22T09:30:00Z"),
                Some("2026-11-22T09:30:00.000Z"),
            ),
            (
                json!("2026-11-22T10:30:00+01:00"),
                Some("2026-11-22T09:30:00.000Z"),
            ),
            (
                json!("2026-11-22T09:30:00.123456Z"),
                Some("2026-11-22T09:30:00.123Z"),
            ),
            (
                json!("2026-11-22T09:30:00"),
                Some("2026-11-22T09:30:00.000Z"),
            ),
            (json!("2026-11-22"), Some("2026-11-22T00:00:00.000Z")),
            (
                json!("Sun, 22 Nov 2026 09:30:00 +0000"),
                Some("2026-11-22T09:30:00.000Z"),
            ),
            (
                json!("Sun, 22 Nov 2026 10:30:00 +0100"),
                Some("2026-11-22T09:30:00.000Z"),
            ),
            (json!(1_795_339_800), Some("2026-11-22T09:30:00.000Z")),
            (
                json!(1_795_339_800_000_i64),
                Some("2026-11-22T09:30:00.000Z"),
            ),
            (json!("1795339800"), Some("2026-11-22T09:30:00.000Z")),
            (json!("yesterday"), None),
            (json!("2026-13-01"), None),
            (json!(true), None),
        ];
        for (input, expected) in cases {
            let got = parse_datetime_value(&input).ok().map(rfc3339_millis);
            assert_eq!(got.as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn enumerations_accept_internal_or_display_name_case_insensitively() {
        let c = Catalogue::standard(ObjectType::Deals);
        let stage = c.get("deal_stage").unwrap();
        for input in ["closed_won", "Closed Won", "CLOSED_WON", "closed won"] {
            assert_eq!(
                validate_value(stage, &json!(input)).unwrap(),
                FieldInput::Set("closed_won".into()),
                "{input}"
            );
        }
        let err = validate_value(stage, &json!("won-ish")).unwrap_err();
        assert!(
            err.to_string().contains("allowed: appointment_scheduled"),
            "{err}"
        );
    }

    #[test]
    fn strings_coerce_scalars_and_blank_strings_clear() {
        let c = Catalogue::standard(ObjectType::Contacts);
        let city = c.get("city").unwrap();
        assert_eq!(
            validate_value(city, &json!(12)).unwrap(),
            FieldInput::Set("12".into())
        );
        assert_eq!(
            validate_value(city, &json!(true)).unwrap(),
            FieldInput::Set("true".into())
        );
        assert_eq!(
            validate_value(city, &json!("   ")).unwrap(),
            FieldInput::Clear
        );
        assert_eq!(
            validate_value(city, &Value::Null).unwrap(),
            FieldInput::Clear
        );
        assert!(validate_value(city, &json!({"a": 1})).is_err());
        assert!(validate_value(city, &json!(["a"])).is_err());
    }

    #[test]
    fn user_fields_take_an_id_or_email_to_resolve() {
        let c = Catalogue::standard(ObjectType::Contacts);
        let owner = c.get("contact_owner").unwrap();
        assert_eq!(
            validate_value(owner, &json!(" ana@x.example ")).unwrap(),
            FieldInput::Member("ana@x.example".into())
        );
        assert!(validate_value(owner, &json!(5)).is_err());
    }

    #[test]
    fn unknown_and_system_managed_names_are_rejected_with_the_field() {
        let c = Catalogue::standard(ObjectType::Contacts);
        let cases = [
            ("favourite_colour", "Unknown field: favourite_colour"),
            ("record_id", "Field cannot be set: record_id"),
            ("create_date", "Field cannot be set: create_date"),
            (
                "last_modified_date",
                "Field cannot be set: last_modified_date",
            ),
            (
                "contact_owner_assigned_date",
                "Field cannot be set: contact_owner_assigned_date",
            ),
            ("id", "Field cannot be set: id"),
            ("created_at", "Field cannot be set: created_at"),
            ("updated_at", "Field cannot be set: updated_at"),
            ("archived", "Field cannot be set: archived"),
            ("archived_by", "Field cannot be set: archived_by"),
        ];
        for (name, message) in cases {
            let mut fields = Map::new();
            fields.insert("first_name".into(), json!("Ana"));
            fields.insert(name.into(), json!("x"));
            let err = validate_fields(&c, &fields).unwrap_err();
            assert_eq!(err.to_string(), message);
            assert_eq!(err.field(), Some(name));
        }
    }
}
