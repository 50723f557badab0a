//! A member's notification categories (spec "User (account member) object"; BEHAVIOR 4).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Non-empty category strings without duplicates, in the order first given. Built by
/// [`NotificationPreferences::parse`]; serializes as a JSON array of strings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NotificationPreferences(Vec<String>);

impl NotificationPreferences {
    /// Parses the items of a `notification_preferences` array: each a string with a
    /// non-blank character; later duplicates are dropped.
    ///
    /// Errors: `(index, "must be a non-empty string")` for the first bad item.
    pub fn parse(items: &[Value]) -> Result<Self, (usize, String)> {
        let mut prefs: Vec<String> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) if !s.trim().is_empty() => {
                    if !prefs.iter().any(|p| p == s) {
                        prefs.push(s.to_string());
                    }
                }
                _ => return Err((i, "must be a non-empty string".into())),
            }
        }
        Ok(Self(prefs))
    }

    /// The categories.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn duplicates_are_dropped_in_first_seen_order() {
        let prefs = NotificationPreferences::parse(&[json!("b"), json!("a"), json!("b")]).unwrap();
        assert_eq!(prefs.as_slice(), ["b", "a"]);
    }

    #[test]
    fn blank_or_non_string_items_name_their_index() {
        for bad in [json!(""), json!("  "), json!(3), json!(null)] {
            let err = NotificationPreferences::parse(&[json!("ok"), bad]).unwrap_err();
            assert_eq!(err.0, 1);
        }
    }
}
