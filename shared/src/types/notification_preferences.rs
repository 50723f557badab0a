//! A member's notification categories (spec "User (account member) object"; BEHAVIOR 4 and 12).

use super::limits::{
    check_chars, check_entries, MAX_NOTIFICATION_PREFERENCES, MAX_NOTIFICATION_PREFERENCE_CHARS,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::cmp::Ordering;

/// Non-empty category strings without duplicates, in the order first given. Built by
/// [`NotificationPreferences::parse`]; serializes as a JSON array of strings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NotificationPreferences(Vec<String>);

impl NotificationPreferences {
    /// Parses the items of a `notification_preferences` array: at most
    /// [`MAX_NOTIFICATION_PREFERENCES`] items as sent, each a string with a non-blank character
    /// and at most [`MAX_NOTIFICATION_PREFERENCE_CHARS`] characters; later duplicates are
    /// dropped in O(n log n) comparisons (a pairwise check would be
    /// quadratic in the input).
    ///
    /// Errors: `(None, "at most 50 entries")`; `(Some(index), why)` for the first bad item:
    /// `must be a non-empty string`, `at most 100 characters`.
    pub fn parse(items: &[Value]) -> Result<Self, (Option<usize>, String)> {
        check_entries(items.len(), MAX_NOTIFICATION_PREFERENCES).map_err(|why| (None, why))?;
        let mut texts: Vec<&str> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) if !s.trim().is_empty() => {
                    check_chars(s, MAX_NOTIFICATION_PREFERENCE_CHARS)
                        .map_err(|why| (Some(i), why))?;
                    texts.push(s);
                }
                _ => return Err((Some(i), "must be a non-empty string".into())),
            }
        }
        Ok(Self(
            first_occurrences(&texts)
                .into_iter()
                .map(|i| texts[i].to_string())
                .collect(),
        ))
    }

    /// The categories.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }
}

/// The indices of the first occurrence of each distinct item, ascending, in O(n log n)
/// comparisons: a stable sort of the indices by item puts each item's first occurrence first
/// among its equals.
fn first_occurrences<T: Ord>(items: &[T]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| items[a].cmp(&items[b]));
    let mut firsts: Vec<usize> = Vec::with_capacity(items.len());
    let mut previous: Option<usize> = None;
    for i in order {
        if previous.is_none_or(|p| items[p].cmp(&items[i]) != Ordering::Equal) {
            firsts.push(i);
        }
        previous = Some(i);
    }
    firsts.sort_unstable();
    firsts
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::cell::Cell;

    #[test]
    fn duplicates_are_dropped_in_first_seen_order() {
        let prefs =
            NotificationPreferences::parse(&[json!("b"), json!("a"), json!("b"), json!("a")])
                .unwrap();
        assert_eq!(prefs.as_slice(), ["b", "a"]);
    }

    #[test]
    fn blank_long_or_non_string_items_name_their_index() {
        for bad in [
            json!(""),
            json!("  "),
            json!(3),
            json!(null),
            json!("x".repeat(101)),
        ] {
            let err = NotificationPreferences::parse(&[json!("ok"), bad]).unwrap_err();
            assert_eq!(err.0, Some(1));
        }
        assert!(NotificationPreferences::parse(&[json!("é".repeat(100))]).is_ok());
    }

    #[test]
    fn at_most_50_items_are_taken_as_sent() {
        let items = |n: usize| vec![json!("same"); n];
        assert!(NotificationPreferences::parse(&items(50)).is_ok());
        let err = NotificationPreferences::parse(&items(51)).unwrap_err();
        assert_eq!(err, (None, "at most 50 entries".to_string()));
    }

    /// An item that counts the comparisons made on it.
    struct Counted<'a> {
        value: u32,
        comparisons: &'a Cell<u64>,
    }

    impl PartialEq for Counted<'_> {
        fn eq(&self, other: &Self) -> bool {
            self.cmp(other) == Ordering::Equal
        }
    }
    impl Eq for Counted<'_> {}
    impl PartialOrd for Counted<'_> {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Counted<'_> {
        fn cmp(&self, other: &Self) -> Ordering {
            self.comparisons.set(self.comparisons.get() + 1);
            self.value.cmp(&other.value)
        }
    }

    /// Linear-logarithmic, without a clock: de-duplicating n items costs at most
    /// 2 n log2(n) + n comparisons (a pairwise check costs about n^2 / 2).
    #[test]
    fn deduplication_costs_n_log_n_comparisons() {
        for n in [16usize, 1_000, 20_000] {
            let comparisons = Cell::new(0);
            // Half the items are distinct, the other half repeat them in another order.
            let items: Vec<Counted> = (0..n as u32)
                .map(|i| Counted {
                    value: if i % 2 == 0 { i } else { (i * 7919) % n as u32 },
                    comparisons: &comparisons,
                })
                .collect();
            let firsts = first_occurrences(&items);
            let mut seen = std::collections::HashSet::new();
            let expected: Vec<usize> = (0..n).filter(|&i| seen.insert(items[i].value)).collect();
            assert_eq!(firsts, expected, "n = {n}");
            let bound = 2.0 * n as f64 * (n as f64).log2() + n as f64;
            assert!(
                (comparisons.get() as f64) <= bound,
                "n = {n}: {} comparisons, bound {bound}",
                comparisons.get()
            );
        }
    }
}
