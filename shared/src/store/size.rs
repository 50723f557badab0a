//! The one size rule of stored items and keys (BEHAVIOR 12): how big an item
//! is as DynamoDB counts it, whether a key value fits DynamoDB's key sizes, and what the domain
//! may write. The same functions serve the DynamoDB adapter's own check (provisioning refuses a
//! plan before its first write, reads skip keys no item can have) and the domain's rule, which
//! runs before every write on both stores, so the embedded store refuses exactly what DynamoDB
//! would.
//!
//! # How an item is sized
//!
//! DynamoDB developer guide, "Item sizes and formats" and "Quotas": an item's size is the sum of
//! its attribute names (UTF-8 bytes) and values:
//!
//! - a string: its UTF-8 bytes; a binary value: its raw bytes;
//! - a number: DynamoDB stores a number as base-100 digits (each byte one pair of decimal
//!   digits, the pairs aligned on the decimal point, as Oracle's NUMBER does) after an exponent
//!   byte, with the pairs of zeros at either end dropped, and one more byte for a negative
//!   number. So a number takes one byte per pair of digits from its first significant pair to
//!   its last, plus one, plus one when negative: `1` and `12` take 2 bytes, `110` 3 (`01 10`),
//!   `12000` 3 (`01 20`, the `00` dropped), `0.011` 3 (`.01 10`), `1.5` 3, `-42` 3, `-0.5` 3,
//!   `1E125` 2, `0` 1. The guide gives "about one byte per two significant digits, plus one";
//!   counting by pairs is exact where the guide is approximate (public item-size calculators
//!   count the same way), and never less than DynamoDB's size, which is what the rule needs;
//! - a boolean or `NULL`: 1 byte;
//! - a list or a map: 3 bytes, plus for each element 1 byte and its size (a map's element also
//!   its name);
//! - a set: the sum of its members.
//!
//! Limits: an item at most 400 KB ([`MAX_ITEM_BYTES`], 409,600 bytes); a partition key value 1
//! to 2,048 bytes and a sort key value 1 to 1,024 bytes, for the table's keys and every index's;
//! a number of at most 38 significant digits whose leading digit is from 10^-130 to 10^125;
//! nesting at most 32 levels, the top-level attribute's value being level 1 (a value at level
//! 33, scalar or not, is refused: 31 lists around a string are taken, 32 are not).
//!
//! # The domain's rule
//!
//! A write stores items built from the model by the adapter's item formats
//! (`store/dynamodb/items/`): the model serialised by `serde_dynamo`, plus the key attributes
//! and `item_type`. [`StoredItem`] names that item for each kind the domain writes, and
//! [`check_write`] sizes it exactly as the adapter will send it and refuses it past
//! [`MAX_WRITE_BYTES`]: DynamoDB's 400 KB less [`RESERVE_BYTES`], the room left for what later
//! writes add to an item without a new check (a subscription's health, a history entry's CRM
//! sync and SLA states, a calendar's reference count, the `archived_by` of the client that
//! archives a router). Each caller turns a refusal into its 400 (`Record too large`, `Router too
//! large`, `Holiday calendar too large`, ...). To apply the rule to a new kind of item:
//! implement [`StoredItem`] for its model type next to its item format (the function the adapter
//! writes it with), then call [`check_write`] on the value before handing it to the store.
//!
//! # Keys
//!
//! Every value that becomes a key or a key prefix goes through [`partition_key_fits`],
//! [`sort_key_fits`] or [`keys::key_fits`]: a key built from a client's value that cannot fit is
//! hashed by the DynamoDB adapter's [`keys`] (unique-key guards, `Idempotency-Key` routes) or names no
//! item (the adapter answers a read of it as absent, as the embedded store does), never a
//! `ValidationException`.

use super::dynamodb::keys;
pub use super::dynamodb::keys::{
    partition_key_fits, sort_key_fits, MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES,
};
use super::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// An item as the DynamoDB adapter sends it (attribute name to value; the adapter's
/// `items::Item`).
pub type Item = HashMap<String, AttributeValue>;

/// Largest item, in DynamoDB's size units (bytes): 400 KB.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;
/// Deepest nesting: the level of a top-level attribute's value is 1, each list or map around a
/// value adds one.
pub const MAX_NESTING: usize = 32;
/// Largest `TransactWriteItems` request, bytes of items: 4 MB.
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
/// Most significant digits of a number.
pub const MAX_NUMBER_DIGITS: usize = 38;
/// Room a write leaves in its item for what later writes add to it without a new check (see
/// the module's documentation): 2 KB, more than the largest such addition (a 256-character
/// client id of 4-byte characters with its attribute name and a timestamp).
pub const RESERVE_BYTES: usize = 2 * 1024;
/// The most the domain writes in one item: [`MAX_ITEM_BYTES`] less [`RESERVE_BYTES`].
pub const MAX_WRITE_BYTES: usize = MAX_ITEM_BYTES - RESERVE_BYTES;

/// Why DynamoDB would refuse an item (the messages name DynamoDB's figure).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// The item is larger than the limit asked for.
    #[error("item of {bytes} bytes, more than DynamoDB's {max}")]
    TooLarge {
        /// The item's size.
        bytes: usize,
        /// The limit it passes.
        max: usize,
    },
    /// A key attribute is empty or longer than DynamoDB's key size.
    #[error("key {attribute} of {bytes} bytes: DynamoDB takes 1 to {max}")]
    Key {
        /// The key attribute (`PK`, `GSI2SK`, ...).
        attribute: String,
        /// Its length in bytes.
        bytes: usize,
        /// Its limit.
        max: usize,
    },
    /// A number DynamoDB cannot hold (not a decimal number, or its magnitude out of range).
    #[error("number {0:?} is outside DynamoDB's range")]
    NumberRange(String),
    /// A number of more than [`MAX_NUMBER_DIGITS`] significant digits.
    #[error("number {0:?} has more than DynamoDB's {MAX_NUMBER_DIGITS} significant digits")]
    NumberDigits(String),
    /// A value nested deeper than [`MAX_NESTING`] levels.
    #[error("nesting deeper than DynamoDB's {MAX_NESTING} levels")]
    TooDeep,
    /// The model value does not make an item (a bug: our types always serialise).
    #[error("the item cannot be built: {0}")]
    Unbuildable(String),
}

/// The size of `item` as DynamoDB counts it (attribute names and values, bytes), after checking
/// its key attributes (`PK`, `SK` and the index keys: 1 to 2,048 bytes for a partition key, 1 to
/// 1,024 for a sort key), its numbers and its nesting. Not compared with [`MAX_ITEM_BYTES`]:
/// [`check_item`] does that.
///
/// Errors: the first limit the item breaks but its size ([`SizeError`]).
pub fn item_size(item: &Item) -> Result<usize, SizeError> {
    for (name, max) in KEY_ATTRIBUTES {
        if let Some(AttributeValue::S(key)) = item.get(name) {
            if key.is_empty() || key.len() > max {
                return Err(SizeError::Key {
                    attribute: name.to_string(),
                    bytes: key.len(),
                    max,
                });
            }
        }
    }
    let mut size = 0;
    for (name, value) in item {
        size += name.len() + sized(value, 1)?;
    }
    Ok(size)
}

/// [`item_size`], and the item at most [`MAX_ITEM_BYTES`]: what DynamoDB takes.
///
/// Errors: the first limit the item breaks, e.g. `item of 512000 bytes, more than DynamoDB's
/// 409600` or `number "1e200" is outside DynamoDB's range`.
pub fn check_item(item: &Item) -> Result<usize, SizeError> {
    let bytes = item_size(item)?;
    if bytes > MAX_ITEM_BYTES {
        return Err(SizeError::TooLarge {
            bytes,
            max: MAX_ITEM_BYTES,
        });
    }
    Ok(bytes)
}

/// The key attributes of the table and its indexes, with their limits.
const KEY_ATTRIBUTES: [(&str, usize); 6] = [
    (keys::PK, MAX_PARTITION_KEY_BYTES),
    (keys::SK, MAX_SORT_KEY_BYTES),
    (keys::GSI1PK, MAX_PARTITION_KEY_BYTES),
    (keys::GSI1SK, MAX_SORT_KEY_BYTES),
    (keys::GSI2PK, MAX_PARTITION_KEY_BYTES),
    (keys::GSI2SK, MAX_SORT_KEY_BYTES),
];

/// The size of one attribute value (a top-level attribute's, without its name).
///
/// Errors: a number DynamoDB cannot hold, nesting past [`MAX_NESTING`].
pub fn value_size(value: &AttributeValue) -> Result<usize, SizeError> {
    sized(value, 1)
}

/// A value's size; `level` is its nesting level (a top-level attribute's value is 1).
fn sized(value: &AttributeValue, level: usize) -> Result<usize, SizeError> {
    if level > MAX_NESTING {
        return Err(SizeError::TooDeep);
    }
    Ok(match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number_size(n)?,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(items) => items.iter().map(String::len).sum(),
        AttributeValue::Ns(items) => items
            .iter()
            .map(|n| number_size(n))
            .sum::<Result<usize, SizeError>>()?,
        AttributeValue::Bs(items) => items.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(items) => {
            let mut size = 3;
            for item in items {
                size += 1 + sized(item, level + 1)?;
            }
            size
        }
        AttributeValue::M(map) => {
            let mut size = 3;
            for (name, item) in map {
                size += 1 + name.len() + sized(item, level + 1)?;
            }
            size
        }
        // A type this SDK version does not know: count it as its debug text, an overestimate.
        other => format!("{other:?}").len(),
    })
}

/// A number's size (module documentation: one byte per base-100 digit pair from the first
/// significant pair to the last, the pairs aligned on the decimal point, one byte more, one more
/// when negative), after checking on its decimal text (not a rounded double) that DynamoDB holds
/// it: zero, or at most 38 significant digits with the leading one from 10^-130 to 10^125.
///
/// Errors: [`SizeError::NumberRange`] for a text that is not a decimal number or is out of
/// range; [`SizeError::NumberDigits`] past 38 significant digits.
pub fn number_size(text: &str) -> Result<usize, SizeError> {
    let out_of_range = || SizeError::NumberRange(text.to_string());
    let t = text.trim();
    let negative = t.starts_with('-');
    let unsigned = t.strip_prefix(['-', '+']).unwrap_or(t);
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().map_err(|_| out_of_range())?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |p: &str| p.bytes().all(|c| c.is_ascii_digit());
    if whole.len() + fraction.len() == 0 || !all_digits(whole) || !all_digits(fraction) {
        return Err(out_of_range());
    }
    let digits = format!("{whole}{fraction}");
    let leading_zeros = digits.len() - digits.trim_start_matches('0').len();
    let significant = digits.trim_matches('0').len();
    if significant == 0 {
        return Ok(1);
    }
    // The power of ten of the leading significant digit.
    let leading = exponent
        .saturating_add(whole.len() as i64)
        .saturating_sub(1 + leading_zeros as i64);
    if !(-130..=125).contains(&leading) {
        return Err(out_of_range());
    }
    if significant > MAX_NUMBER_DIGITS {
        return Err(SizeError::NumberDigits(text.to_string()));
    }
    // The digit of power p is in pair floor(p / 2): pairs run from the leading digit's to the
    // last significant digit's (its power `leading - significant + 1`).
    let last = leading - significant as i64 + 1;
    let pairs = (leading.div_euclid(2) - last.div_euclid(2) + 1) as usize;
    Ok(pairs + 1 + usize::from(negative))
}

/// A kind of item the domain writes: the item the DynamoDB adapter stores for the value, built
/// by the adapter's own item format (so [`stored_size`] is what the adapter sends). Implemented
/// next to each item format in `store/dynamodb/items/`.
pub trait StoredItem {
    /// The item as the adapter writes it.
    ///
    /// Errors: the value does not serialise (a bug).
    fn stored_item(&self) -> Result<Item, StoreError>;
}

/// The size of `value`'s item as DynamoDB counts it ([`item_size`] of [`StoredItem::stored_item`]).
///
/// Errors: the item breaks a key, number or nesting limit; [`SizeError::Unbuildable`].
pub fn stored_size<T: StoredItem + ?Sized>(value: &T) -> Result<usize, SizeError> {
    let item = value
        .stored_item()
        .map_err(|e| SizeError::Unbuildable(e.to_string()))?;
    item_size(&item)
}

/// The domain's rule (BEHAVIOR 12): `value`'s item sized as DynamoDB counts it, and at most
/// [`MAX_WRITE_BYTES`]. Call it before every write of the value, on either store; the size is
/// returned for callers that size several items.
///
/// Errors: [`SizeError::TooLarge`] past [`MAX_WRITE_BYTES`]; the other limits of
/// [`item_size`].
pub fn check_write<T: StoredItem + ?Sized>(value: &T) -> Result<usize, SizeError> {
    let bytes = stored_size(value)?;
    if bytes > MAX_WRITE_BYTES {
        return Err(SizeError::TooLarge {
            bytes,
            max: MAX_WRITE_BYTES,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(pairs: Vec<(&str, AttributeValue)>) -> Item {
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    fn s(text: &str) -> AttributeValue {
        AttributeValue::S(text.to_string())
    }

    #[test]
    fn an_items_size_counts_names_and_values() {
        let i = item(vec![
            ("PK", s("ab")),
            ("n", AttributeValue::N("12345".into())),
            ("ok", AttributeValue::Bool(true)),
            ("m", AttributeValue::M(item(vec![("x", s("yz"))]))),
            (
                "é",
                AttributeValue::L(vec![s("😀"), AttributeValue::Null(true)]),
            ),
        ]);
        // PK 2+2, n 1+(5 digits -> 3+1), ok 2+1, m 1+(3 + 1 + 1 + 2), é 2+(3 + 1+4 + 1+1).
        assert_eq!(check_item(&i), Ok(4 + 5 + 3 + 8 + 12));
    }

    #[test]
    fn numbers_are_sized_by_their_base_100_digit_pairs() {
        // Byte counts measured at DynamoDB's 400 KB gate (module documentation).
        for (n, bytes) in [
            ("1", 2),
            ("12", 2),
            ("123", 3),
            ("1234", 3),
            ("12345678901234567890123456789012345678", 20),
            ("0042", 2),
            ("100", 2),
            ("1010", 3),
            ("0.0000001", 2),
            ("0", 1),
            ("1E125", 2),
            ("1E-100", 2),
            ("1.5", 3),
            ("1.200", 3),
            ("1.234", 4),
            ("3.14159", 5),
            ("100.5", 4),
            ("0.15", 2),
            ("-42", 3),
            ("-12345", 5),
            ("-1E125", 3),
            ("-0.15", 3),
            ("-0", 1),
            ("+7", 2),
            ("12.5e3", 3),
            // Zeros inside a digit pair are stored: 01 10, 01 20 (00 dropped), .01 10, .50.
            ("110", 3),
            ("12000", 3),
            ("0.011", 3),
            ("1e125", 2),
            ("-0.5", 3),
            ("10", 2),
            ("1000", 2),
            ("0.1", 2),
            ("0.01", 2),
            ("0.001", 2),
            ("101", 3),
            ("10.01", 3),
            ("9.9999999999999999999999999999999999999E+125", 20),
            ("-1E-130", 3),
        ] {
            assert_eq!(number_size(n), Ok(bytes), "{n}");
        }
    }

    #[test]
    fn items_past_dynamodbs_limits_are_refused_with_the_reason() {
        let big = item(vec![("PK", s("a")), ("v", s(&"x".repeat(MAX_ITEM_BYTES)))]);
        assert!(check_item(&big)
            .unwrap_err()
            .to_string()
            .contains("item of"));
        let exact = item(vec![("v", s(&"x".repeat(MAX_ITEM_BYTES - 1)))]);
        assert_eq!(check_item(&exact), Ok(MAX_ITEM_BYTES));
        let long_pk = item(vec![("PK", s(&"k".repeat(2049)))]);
        assert!(check_item(&long_pk)
            .unwrap_err()
            .to_string()
            .contains("key PK"));
        let long_sk = item(vec![("PK", s("a")), ("GSI2SK", s(&"é".repeat(513)))]);
        assert!(check_item(&long_sk)
            .unwrap_err()
            .to_string()
            .contains("key GSI2SK of 1026 bytes"));
        let empty_key = item(vec![("SK", s(""))]);
        assert!(check_item(&empty_key).is_err());
        for n in [
            "1e200",
            "1e126",
            "10E125",
            "1e-131",
            "0.01e-129",
            "NaN",
            "inf",
            "x",
            "",
            "1e",
            "--1",
        ] {
            let i = item(vec![("n", AttributeValue::N(n.into()))]);
            assert_eq!(check_item(&i), Err(SizeError::NumberRange(n.into())), "{n}");
        }
        let digits = item(vec![("n", AttributeValue::N("1".repeat(39)))]);
        assert!(matches!(
            check_item(&digits),
            Err(SizeError::NumberDigits(_))
        ));
    }

    #[test]
    fn thirty_one_lists_around_a_value_are_taken_and_thirty_two_are_not() {
        let wrapped = |levels: usize, leaf: AttributeValue| {
            let mut v = leaf;
            for _ in 0..levels {
                v = AttributeValue::L(vec![v]);
            }
            item(vec![("d", v)])
        };
        assert!(check_item(&wrapped(31, s("leaf"))).is_ok());
        assert_eq!(check_item(&wrapped(32, s("leaf"))), Err(SizeError::TooDeep));
        // An empty list at level 32 holds nothing at level 33.
        assert!(check_item(&wrapped(31, AttributeValue::L(vec![]))).is_ok());
        let map = AttributeValue::M(item(vec![("x", s("y"))]));
        assert_eq!(check_item(&wrapped(31, map)), Err(SizeError::TooDeep));
    }

    #[test]
    fn numbers_at_the_edges_of_dynamodbs_range_are_accepted() {
        for n in [
            "0",
            "-0.0",
            "1e125",
            "9.9999999999999999999999999999999999999E+125",
            "1E-130",
            "12345678901234567890123456789012345678",
            "1000000000000000000000000000000000000000000000",
            "0.000100",
            "-12.5e3",
        ] {
            let i = item(vec![("n", AttributeValue::N(n.into()))]);
            assert!(check_item(&i).is_ok(), "{n}: {:?}", check_item(&i));
        }
    }

    #[test]
    fn key_values_fit_between_one_byte_and_dynamodbs_key_sizes() {
        assert!(partition_key_fits(&"é".repeat(1024)));
        assert!(!partition_key_fits(&format!("{}x", "é".repeat(1024))));
        assert!(sort_key_fits(&"x".repeat(1024)));
        assert!(!sort_key_fits(&"x".repeat(1025)));
        assert!(!sort_key_fits("") && !partition_key_fits(""));
    }
}
