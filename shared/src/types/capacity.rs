//! Capacity entries of a member (spec "User (account member) object": `capacity`; BEHAVIOR 4 and
//! BEHAVIOR 6 step 12).

use super::limits::{check_chars, MAX_CAPACITY_KEYS, MAX_CAPACITY_TEXT_CHARS};
use super::number::is_storable;
use crate::model::object_type::ObjectType;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// One capacity entry: a flat object with free-form keys, kept as sent, whose counters
/// `current_capacity` and `max_capacity`, when present, are non-negative integers. Built by
/// [`CapacityEntry::parse`]; serializes as the object.
///
/// BEHAVIOR 12: at most [`MAX_CAPACITY_KEYS`] keys, each key and each string value at most
/// [`MAX_CAPACITY_TEXT_CHARS`] characters, every value a string, a finite number within
/// DynamoDB's range ([`is_storable`]), a boolean or `null` (no objects or arrays: the entry is
/// flat, so it never nests deeper than DynamoDB's 32 levels).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CapacityEntry(Map<String, Value>);

/// Largest counter: 2^53 - 1, the largest integer every JSON reader (and a double) holds exactly.
pub const MAX_COUNTER: u64 = (1 << 53) - 1;

/// A counter's value: a non-negative integer up to [`MAX_COUNTER`], written `5` or `5.0` (JSON
/// does not tell them apart, and neither does JSON Schema's `integer`).
fn counter(value: &Value) -> Option<u64> {
    value
        .as_u64()
        .or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= MAX_COUNTER as f64)
                .map(|f| f as u64)
        })
        .filter(|n| *n <= MAX_COUNTER)
}

impl CapacityEntry {
    /// Parses one entry (BEHAVIOR 4 and 12).
    ///
    /// Errors, as `(key, why)` (`key` empty for the entry as a whole): `at most 20 keys`; a key
    /// or string value `at most 256 characters`; a value that `must be a string, a number,
    /// true, false or null` (objects, arrays); a number `out of range` ([`is_storable`]);
    /// `must be a non-negative integer` for a counter that is not an integer from 0 to
    /// [`MAX_COUNTER`].
    pub fn parse(mut entry: Map<String, Value>) -> Result<Self, (String, String)> {
        if entry.len() > MAX_CAPACITY_KEYS {
            return Err((String::new(), format!("at most {MAX_CAPACITY_KEYS} keys")));
        }
        for (key, value) in &entry {
            check_chars(key, MAX_CAPACITY_TEXT_CHARS)
                .map_err(|why| (String::new(), format!("a key of {why}")))?;
            match value {
                Value::String(s) => {
                    check_chars(s, MAX_CAPACITY_TEXT_CHARS).map_err(|why| (key.clone(), why))?
                }
                Value::Number(n) if n.as_f64().is_some_and(is_storable) => {}
                Value::Number(_) => {
                    return Err((
                        key.clone(),
                        "is out of range: zero or a magnitude from 1e-130 to below 1e126".into(),
                    ))
                }
                Value::Bool(_) | Value::Null => {}
                Value::Array(_) | Value::Object(_) => {
                    return Err((
                        key.clone(),
                        "must be a string, a number, true, false or null".into(),
                    ))
                }
            }
        }
        for key in ["current_capacity", "max_capacity"] {
            if let Some(v) = entry.get_mut(key) {
                *v = json!(counter(v)
                    .ok_or_else(|| (key.to_string(), "must be a non-negative integer".into()))?);
            }
        }
        Ok(Self(entry))
    }

    /// The entry's keys and values as sent.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// Whether the entry limits assignments of `object_type` (BEHAVIOR 6 step 12): its
    /// `assignment_type` is the type, `all`, or absent, and it has an integer `max_capacity`.
    pub fn applies_to(&self, object_type: ObjectType) -> bool {
        let type_matches = match self.0.get("assignment_type") {
            None | Some(Value::Null) => true,
            Some(Value::String(t)) => t == object_type.as_str() || t == "all",
            Some(_) => false,
        };
        type_matches && self.max().is_some()
    }

    /// `current_capacity`, 0 when absent.
    pub fn current(&self) -> u64 {
        self.0
            .get("current_capacity")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// `max_capacity`, when it is an integer.
    pub fn max(&self) -> Option<u64> {
        self.0.get("max_capacity").and_then(Value::as_u64)
    }

    /// Whether `current_capacity < max_capacity` (an entry without a maximum never fills).
    pub fn has_room(&self) -> bool {
        self.max().is_none_or(|max| self.current() < max)
    }

    /// The entry after one more assignment: `current_capacity` + 1.
    pub fn counted(&self) -> Self {
        let mut next = self.0.clone();
        next.insert("current_capacity".into(), json!(self.current() + 1));
        Self(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(v: Value) -> Map<String, Value> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn capacity_counters_must_be_non_negative_integers() {
        assert!(CapacityEntry::parse(entry(
            json!({"id": "c1", "current_capacity": 0, "max_capacity": 5, "x": "kept"})
        ))
        .is_ok());
        assert!(CapacityEntry::parse(entry(json!({"name": "no counters"}))).is_ok());
        let whole = CapacityEntry::parse(entry(json!({"max_capacity": 5.0}))).unwrap();
        assert_eq!(whole.as_map()["max_capacity"], json!(5));
        for bad in [
            json!(-1),
            json!(1.5),
            json!("3"),
            json!(null),
            json!(-2.0),
            json!(MAX_COUNTER + 1),
            json!(1.5e21),
        ] {
            let err = CapacityEntry::parse(entry(json!({"max_capacity": bad}))).unwrap_err();
            assert_eq!(err.0, "max_capacity");
        }
    }

    #[test]
    fn an_entry_is_a_flat_object_of_at_most_20_keys_with_short_text_and_storable_numbers() {
        let keys = |n: usize| {
            entry(Value::Object(
                (0..n).map(|i| (format!("k{i}"), json!(i))).collect(),
            ))
        };
        assert!(CapacityEntry::parse(keys(20)).is_ok());
        assert_eq!(CapacityEntry::parse(keys(21)).unwrap_err().0, "");
        let ok = json!({
            "id": "x".repeat(256), "n": 1e125, "tiny": -1e-130, "zero": 0, "on": true, "none": null
        });
        assert!(CapacityEntry::parse(entry(ok)).is_ok());
        for (bad, key) in [
            (json!({"id": "x".repeat(257)}), "id"),
            (json!({"n": 1e126}), "n"),
            (json!({"n": 1e200}), "n"),
            (json!({"n": 1e-131}), "n"),
            (json!({"deep": {"a": 1}}), "deep"),
            (json!({"list": [1]}), "list"),
        ] {
            assert_eq!(CapacityEntry::parse(entry(bad)).unwrap_err().0, key);
        }
        let mut long_key = Map::new();
        long_key.insert("k".repeat(257), json!(1));
        assert_eq!(CapacityEntry::parse(long_key).unwrap_err().0, "");
    }

    #[test]
    fn an_entry_applies_to_its_type_all_or_any_and_only_with_a_maximum() {
        let e = |v| CapacityEntry::parse(entry(v)).unwrap();
        assert!(e(json!({"max_capacity": 1})).applies_to(ObjectType::Deals));
        assert!(
            e(json!({"max_capacity": 1, "assignment_type": "all"})).applies_to(ObjectType::Deals)
        );
        assert!(
            e(json!({"max_capacity": 1, "assignment_type": "deals"})).applies_to(ObjectType::Deals)
        );
        assert!(!e(json!({"max_capacity": 1, "assignment_type": "tickets"}))
            .applies_to(ObjectType::Deals));
        assert!(!e(json!({"assignment_type": "deals"})).applies_to(ObjectType::Deals));
    }

    #[test]
    fn counting_an_assignment_increments_the_current_count() {
        let e = CapacityEntry::parse(entry(json!({"max_capacity": 2}))).unwrap();
        assert!(e.has_room());
        let e = e.counted().counted();
        assert_eq!(e.current(), 2);
        assert!(!e.has_room());
    }
}
