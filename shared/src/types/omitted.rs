//! JSON values kept within a byte budget by construction (BEHAVIOR 12 and 18): an audit event
//! holds `before` and `after` of values that may each be hundreds of KB (a router's trigger, a
//! member's capacity), and a decision snapshot holds a trigger and a pool of up to 500 members.
//! Stored whole, either could pass DynamoDB's 400 KB item limit, and a valid write must never
//! fail because of what it records about itself.
//!
//! The rule, as CloudTrail elides large request parameters: when a value's compact JSON passes
//! its budget, its largest omittable parts are replaced, largest first, by a placeholder
//! `{"omitted": "too large", "json_bytes": n, "sha256": "<hex>"}` naming the size of the part's
//! compact JSON and its SHA-256 (so a client holding the value can tell whether it is the one
//! omitted) until the whole fits. `docs/decisions.md` ("Audit sizes") gives the budgets.

use crate::types::limits::json_size;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

/// The text of [`Omitted::omitted`].
pub const TOO_LARGE: &str = "too large";

/// What stands in for a value too large to keep (`{"omitted": "too large", "json_bytes": n,
/// "sha256": "<hex>"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[schema(example = json!({"omitted": "too large", "json_bytes": 301544, "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}))]
pub struct Omitted {
    /// Always `too large`.
    pub omitted: &'static str,
    /// Bytes of the omitted value's compact JSON.
    pub json_bytes: usize,
    /// SHA-256 of the omitted value's compact JSON, lowercase hex.
    pub sha256: String,
}

impl Omitted {
    /// The placeholder of `value`.
    pub fn of(value: &Value) -> Self {
        let bytes = serde_json::to_vec(value).unwrap_or_default();
        let digest = Sha256::digest(&bytes);
        Self {
            omitted: TOO_LARGE,
            json_bytes: bytes.len(),
            sha256: digest.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }

    /// The placeholder as a JSON value.
    pub fn value_of(value: &Value) -> Value {
        serde_json::to_value(Self::of(value)).unwrap_or(Value::Null)
    }

    /// Whether `value` is a placeholder.
    pub fn is_placeholder(value: &Value) -> bool {
        value.get("omitted").and_then(Value::as_str) == Some(TOO_LARGE)
            && value.get("sha256").is_some()
    }
}

/// Fits `value` within `budget` bytes of compact JSON: while it is larger, the largest of the
/// parts at `parts` (JSON pointers, RFC 6901) that is not yet a placeholder and is larger than
/// its placeholder is replaced by its [`Omitted`] placeholder. Parts absent from `value` are
/// skipped. Returns the value's size after.
///
/// When every part is a placeholder and the value is still too large, it is left so: the
/// budgets are chosen so that what is not omittable always fits (`docs/decisions.md`).
pub fn fit_within(value: &mut Value, parts: &[String], budget: usize) -> usize {
    let mut size = json_size(value);
    while size > budget {
        let largest = parts
            .iter()
            .filter_map(|p| value.pointer(p).map(|v| (p, v)))
            .filter(|(_, v)| !Omitted::is_placeholder(v))
            .map(|(p, v)| (json_size(v), p))
            .max_by_key(|(bytes, _)| *bytes);
        let Some((bytes, pointer)) = largest else {
            break;
        };
        let Some(part) = value.pointer_mut(pointer) else {
            break;
        };
        let placeholder = Omitted::value_of(part);
        if json_size(&placeholder) >= bytes {
            break;
        }
        *part = placeholder;
        size = json_size(value);
    }
    size
}

/// A JSON pointer (RFC 6901) of the path `segments`, each escaped (`~` as `~0`, `/` as `~1`).
pub fn pointer(segments: &[&str]) -> String {
    segments
        .iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_within_its_budget_is_left_as_it_is() {
        let mut v = json!({"a": "x".repeat(100), "b": 1});
        let before = v.clone();
        let size = fit_within(&mut v, &[pointer(&["a"])], 1000);
        assert_eq!(v, before);
        assert_eq!(size, json_size(&before));
    }

    #[test]
    fn the_largest_parts_go_first_until_the_value_fits() {
        let big = json!("b".repeat(5000));
        let mut v = json!({"a": "a".repeat(3000), "b": big, "c": "c".repeat(100)});
        let parts = [pointer(&["a"]), pointer(&["b"]), pointer(&["c"])];
        let size = fit_within(&mut v, &parts, 4000);
        assert!(size <= 4000, "{size}");
        assert_eq!(v["b"], Omitted::value_of(&big), "the largest part went");
        assert_eq!(v["a"], json!("a".repeat(3000)), "what fits after it stays");
        assert_eq!(v["b"]["json_bytes"], json!(5002));
        assert_eq!(
            v["b"]["sha256"].as_str().unwrap(),
            format!("{:x}", Sha256::digest(serde_json::to_vec(&big).unwrap()))
        );
        let size = fit_within(&mut v, &parts, 500);
        assert!(size <= 500, "{size}");
        assert!(Omitted::is_placeholder(&v["a"]) && Omitted::is_placeholder(&v["b"]));
        assert_eq!(v["c"], json!("c".repeat(100)), "small parts stay");
    }

    #[test]
    fn pointers_escape_their_segments_and_absent_parts_are_skipped() {
        assert_eq!(pointer(&["changes", "0", "a/b~c"]), "/changes/0/a~1b~0c");
        let mut v = json!({"a/b": "x".repeat(400)});
        fit_within(&mut v, &[pointer(&["missing"]), pointer(&["a/b"])], 100);
        assert!(Omitted::is_placeholder(&v["a/b"]));
    }
}
