//! The body of a record write and what it changes (spec "POST", "PATCH"; BEHAVIOR 3).

use crate::error::DomainError;
use crate::fields::catalogue::Catalogue;
use crate::idempotency::IdempotencyCompletion;
use crate::model::object_type::ObjectType;
use crate::model::record::{Record, UniqueKey};
use crate::store::size;
use crate::timefmt::rfc3339_millis;
use crate::types::limits::{fits, json_size, MAX_RECORD_JSON_BYTES};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The body of `POST /{type}` and `PATCH /{type}/{id}`: `{fields: {<internal_name>: <value>}}`
/// with `fields` an object. Other top-level keys are ignored (`docs/decisions.md`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RecordWrite {
    /// The `fields` object, keys in the order sent.
    pub fields: Map<String, Value>,
}

impl RecordWrite {
    /// Reads the body object.
    ///
    /// Errors: 400 with `field: "fields"` when `fields` is missing or not an object.
    pub fn from_body(mut body: Map<String, Value>) -> Result<Self, DomainError> {
        match body.remove("fields") {
            Some(Value::Object(fields)) => Ok(Self { fields }),
            Some(_) => Err(DomainError::bad_field(
                "fields",
                "Invalid fields: must be an object",
            )),
            None => Err(DomainError::bad_field(
                "fields",
                "Missing required property: fields",
            )),
        }
    }
}

/// Writes resolved values into `values` (`None` removes) and stamps the owner-assigned date of
/// every owner field included, even as `null` (BEHAVIOR 3).
pub fn apply(
    values: &mut BTreeMap<String, String>, catalogue: &Catalogue,
    inputs: &[(String, Option<String>)], now: DateTime<Utc>,
) {
    for (name, value) in inputs {
        match value {
            Some(v) => values.insert(name.clone(), v.clone()),
            None => values.remove(name),
        };
        if catalogue.get(name).is_some_and(|f| f.is_owner_field()) {
            values.insert(format!("{name}_assigned_date"), rfc3339_millis(now));
        }
    }
}

/// Required-on-create per type (spec "POST" table).
///
/// Errors: 400 `At least one of ... is required` (contacts, companies) or `Missing required
/// field: <name>` with `field` (deals, tickets).
pub fn check_required(
    object_type: ObjectType, values: &BTreeMap<String, String>,
) -> Result<(), DomainError> {
    let any_of = |names: &[&str]| -> Result<(), DomainError> {
        if names.iter().any(|n| values.contains_key(*n)) {
            Ok(())
        } else {
            Err(DomainError::bad_request(format!(
                "At least one of {} is required",
                names.join(", ")
            )))
        }
    };
    let all_of = |names: &[&str]| -> Result<(), DomainError> {
        match names.iter().find(|n| !values.contains_key(**n)) {
            Some(missing) => Err(DomainError::bad_field(
                *missing,
                format!("Missing required field: {missing}"),
            )),
            None => Ok(()),
        }
    };
    match object_type {
        ObjectType::Contacts | ObjectType::Companies => any_of(required_any_of(object_type)),
        ObjectType::Deals | ObjectType::Tickets => all_of(required_all_of(object_type)),
    }
}

/// The fields a create of `object_type` needs at least one of to hold a value (spec "POST"
/// table): contacts `email`, `first_name` or `last_name`; companies `company_name` or
/// `website_url`; none for deals and tickets ([`required_all_of`]).
pub fn required_any_of(object_type: ObjectType) -> &'static [&'static str] {
    match object_type {
        ObjectType::Contacts => &["email", "first_name", "last_name"],
        ObjectType::Companies => &["company_name", "website_url"],
        ObjectType::Deals | ObjectType::Tickets => &[],
    }
}

/// The fields a create of `object_type` needs each to hold a value (spec "POST" table): deals
/// `deal_name`, `deal_stage`, `pipeline`; tickets `ticket_name`, `ticket_stage`, `pipeline`;
/// none for contacts and companies ([`required_any_of`]).
pub fn required_all_of(object_type: ObjectType) -> &'static [&'static str] {
    match object_type {
        ObjectType::Contacts | ObjectType::Companies => &[],
        ObjectType::Deals => &["deal_name", "deal_stage", "pipeline"],
        ObjectType::Tickets => &["ticket_name", "ticket_stage", "pipeline"],
    }
}

/// The message of a record past [`MAX_RECORD_JSON_BYTES`] (BEHAVIOR 12).
pub const RECORD_TOO_LARGE: &str = "Record too large";

/// BEHAVIOR 12: a record's stored fields together take at most [`MAX_RECORD_JSON_BYTES`] of
/// compact JSON once written (`after`), unless the write does not grow them (`before`, empty
/// on create): a record past the limit by what dispatch added stays writable.
///
/// Errors: 400 `Record too large` (no single field to blame, so no `field`).
pub fn check_size(
    before: &BTreeMap<String, String>, after: &BTreeMap<String, String>,
) -> Result<(), DomainError> {
    let size = json_size(after);
    if size <= MAX_RECORD_JSON_BYTES || fits(size, json_size(before), MAX_RECORD_JSON_BYTES) {
        Ok(())
    } else {
        Err(DomainError::bad_request(RECORD_TOO_LARGE))
    }
}

/// BEHAVIOR 12: the record's stored item (and, with `answer`, the stored answer of its
/// `Idempotency-Key` request) within the size rule of every stored item
/// ([`size::check_write`]), unless the write does not grow the item (`before`: the record as
/// stored), as [`check_size`] allows. Records within [`MAX_RECORD_JSON_BYTES`] of fields always
/// pass (JSON text is never smaller than DynamoDB's count of the same strings); this is the
/// rule every store write meets.
///
/// Errors: 400 `Record too large`.
pub fn check_item(
    record: &Record, before: Option<&Record>, answer: Option<&IdempotencyCompletion>,
) -> Result<(), DomainError> {
    let too_large = || DomainError::bad_request(RECORD_TOO_LARGE);
    let after = size::stored_size(record).map_err(|_| too_large())?;
    let before = before
        .map_or(Ok(0), size::stored_size)
        .map_err(|_| too_large())?;
    if !fits(after, before, size::MAX_WRITE_BYTES) {
        return Err(too_large());
    }
    if let Some(answer) = answer {
        size::check_write(answer).map_err(|_| too_large())?;
    }
    Ok(())
}

/// The unique keys a record holds, in the spec's order (BEHAVIOR 3).
pub fn unique_keys(catalogue: &Catalogue, record: &Record) -> Vec<UniqueKey> {
    catalogue
        .unique_keys()
        .iter()
        .filter_map(|field| {
            record.value(field).map(|value| UniqueKey {
                field: field.to_string(),
                value: value.to_string(),
            })
        })
        .collect()
}

/// The keys an update claims and releases.
pub fn key_changes(
    catalogue: &Catalogue, before: &Record, after: &Record,
) -> (Vec<UniqueKey>, Vec<UniqueKey>) {
    let old = unique_keys(catalogue, before);
    let new = unique_keys(catalogue, after);
    let claimed = new.iter().filter(|k| !old.contains(k)).cloned().collect();
    let released = old.iter().filter(|k| !new.contains(k)).cloned().collect();
    (claimed, released)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_body_needs_a_fields_object() {
        let ok = RecordWrite::from_body(object(json!({"fields": {"a": 1}, "other": 2}))).unwrap();
        assert_eq!(ok.fields.len(), 1);
        for body in [json!({}), json!({"fields": []}), json!({"fields": "x"})] {
            let err = RecordWrite::from_body(object(body)).unwrap_err();
            assert_eq!(err.field(), Some("fields"));
        }
    }

    #[test]
    fn a_record_is_at_most_300_kb_of_json_unless_a_write_does_not_grow_it() {
        let empty = BTreeMap::new();
        // {"a":"<n x>"} is n + 8 bytes.
        let of = |n: usize| BTreeMap::from([("a".to_string(), "x".repeat(n))]);
        assert!(check_size(&empty, &of(MAX_RECORD_JSON_BYTES - 8)).is_ok());
        let err = check_size(&empty, &of(MAX_RECORD_JSON_BYTES - 7)).unwrap_err();
        assert_eq!(err.to_string(), RECORD_TOO_LARGE);
        assert_eq!(err.field(), None);
        let past = of(MAX_RECORD_JSON_BYTES);
        assert!(check_size(&past, &past).is_ok());
        assert!(check_size(&past, &of(MAX_RECORD_JSON_BYTES + 1)).is_err());
    }

    #[test]
    fn required_fields_follow_the_specs_table() {
        let values = |keys: &[&str]| -> BTreeMap<String, String> {
            keys.iter().map(|k| (k.to_string(), "x".into())).collect()
        };
        assert!(check_required(ObjectType::Contacts, &values(&["last_name"])).is_ok());
        assert!(check_required(ObjectType::Contacts, &values(&["phone"])).is_err());
        assert!(check_required(ObjectType::Companies, &values(&["website_url"])).is_ok());
        let err =
            check_required(ObjectType::Deals, &values(&["deal_name", "pipeline"])).unwrap_err();
        assert_eq!(err.field(), Some("deal_stage"));
        assert!(check_required(
            ObjectType::Tickets,
            &values(&["ticket_name", "ticket_stage", "pipeline"])
        )
        .is_ok());
    }
}
