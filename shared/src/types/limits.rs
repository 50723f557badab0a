//! Size limits of writes (BEHAVIOR 12): what both stores accept, so that a limit of DynamoDB
//! (400 KB per item, its number range, 32 levels of nesting) is a 400 for the client, checked
//! in the domain before any store is asked, and never a 500. `docs/decisions.md` ("Size
//! limits") explains each figure.
//!
//! Characters are Unicode scalar values (`str::chars`), as JSON Schema's `maxLength` counts
//! them; bytes are bytes of compact JSON (`serde_json::to_writer`).

use serde::Serialize;

/// Longest string a record field takes, in characters (HubSpot's property value limit).
pub const MAX_FIELD_VALUE_CHARS: usize = 65_536;

/// Largest stored form of a record's fields together: the compact JSON of the object of
/// stored values (system-managed ones included), in bytes. 300 KB (of 1,024 bytes) leaves room
/// under DynamoDB's 400 KB item for the keys, timestamps and what dispatch adds.
pub const MAX_RECORD_JSON_BYTES: usize = 300 * 1024;

/// Largest stored form of a member (the compact JSON of the whole member), in bytes: the
/// record's figure, for the same reason. Only `capacity` (or a seed's `calendars`) can reach it.
pub const MAX_MEMBER_JSON_BYTES: usize = 300 * 1024;

/// Largest other item a seed provisions (account, client, role, team, field definition,
/// router), as compact JSON: the record's figure, so every item fits DynamoDB's 400 KB.
pub const MAX_ITEM_JSON_BYTES: usize = 300 * 1024;

/// Longest text a seed puts into a key (a client id, a field's internal name): DynamoDB keys
/// are at most 1,024 bytes (sort keys), and 256 characters are at most 1,024 bytes of UTF-8.
pub const MAX_KEY_TEXT_CHARS: usize = 256;

/// Longest `full_name`, `first_name`, `last_name`, `phone` and `external_id` of a member.
pub const MAX_MEMBER_TEXT_CHARS: usize = 256;

/// Most `working_hours` entries of a member.
pub const MAX_WORKING_HOURS: usize = 50;

/// Most `out_office_dates` entries of a member.
pub const MAX_OUT_OF_OFFICE: usize = 200;

/// Most `notification_preferences` strings of a member, as sent (before duplicates are dropped).
pub const MAX_NOTIFICATION_PREFERENCES: usize = 50;

/// Longest `notification_preferences` string.
pub const MAX_NOTIFICATION_PREFERENCE_CHARS: usize = 100;

/// Most `capacity` entries of a member.
pub const MAX_CAPACITY_ENTRIES: usize = 50;

/// Most keys of one `capacity` entry.
pub const MAX_CAPACITY_KEYS: usize = 20;

/// Longest key, and longest string value, of a `capacity` entry.
pub const MAX_CAPACITY_TEXT_CHARS: usize = 256;

/// `Err("at most <max> characters")` when `text` is longer than `max` characters. Counting
/// stops at `max + 1`, so a long text costs no more than the limit.
pub fn check_chars(text: &str, max: usize) -> Result<(), String> {
    if text.chars().nth(max).is_some() {
        Err(format!("at most {max} characters"))
    } else {
        Ok(())
    }
}

/// `Err("at most <max> entries")` when a list has more than `max` entries.
pub fn check_entries(len: usize, max: usize) -> Result<(), String> {
    if len > max {
        Err(format!("at most {max} entries"))
    } else {
        Ok(())
    }
}

/// A member's `full_name`, `first_name`, `last_name`, `phone` or `external_id`, as sent
/// (`None` clears it): at most [`MAX_MEMBER_TEXT_CHARS`] characters. Used by the PATCH and the
/// provisioning loader alike.
///
/// Errors: `at most 256 characters`.
pub fn member_text(value: Option<String>) -> Result<Option<String>, String> {
    if let Some(text) = &value {
        check_chars(text, MAX_MEMBER_TEXT_CHARS)?;
    }
    Ok(value)
}

/// The length in bytes of `value`'s compact JSON, without building it.
pub fn json_size<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Serializing our own types into a sink that never fails cannot fail; a type that refuses
    // to serialize would count as empty, which the stores would then refuse loudly.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Whether a write whose result takes `after` bytes (before: `before`) passes a `max`: a
/// result within `max`, or one no larger than what is stored, so a write that does not grow an
/// item already past the limit (dispatch adds an owner after the check) is never locked out.
pub fn fits(after: usize, before: usize, max: usize) -> bool {
    after <= max || after <= before
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn characters_are_counted_as_unicode_scalar_values() {
        assert!(check_chars(&"é".repeat(256), 256).is_ok());
        assert!(check_chars(&"é".repeat(257), 256).is_err());
        assert!(check_chars(&"😀".repeat(256), 256).is_ok());
        assert!(check_chars("", 0).is_ok());
        assert_eq!(
            member_text(Some("x".repeat(257))).unwrap_err(),
            "at most 256 characters"
        );
        assert_eq!(member_text(None), Ok(None));
    }

    #[test]
    fn json_size_is_the_length_of_the_compact_json() {
        let v = json!({"a": "x\"y", "b": [1, 2.5, null]});
        assert_eq!(json_size(&v), serde_json::to_vec(&v).unwrap().len());
    }

    #[test]
    fn a_write_past_the_limit_passes_only_when_it_does_not_grow() {
        assert!(fits(10, 0, 10));
        assert!(!fits(11, 0, 10));
        assert!(fits(12, 12, 10));
        assert!(fits(11, 12, 10));
        assert!(!fits(13, 12, 10));
    }
}
