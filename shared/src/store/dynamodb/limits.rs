//! DynamoDB's own limits on an item, checked before provisioning writes anything (issue 13
//! defect 12): a plan that DynamoDB would reject at its third item must be refused before the
//! first, not leave a half-built account. The domain's limits (BEHAVIOR 12,
//! [`crate::types::limits`]) keep every item the API and the seed loader build far inside these;
//! this is the adapter's own check of what it is about to send.
//!
//! Figures from the DynamoDB developer guide ("Service, account, and table quotas", "Item
//! sizes"): an item at most 400 KB, a partition key value at most 2,048 bytes and a sort key
//! value at most 1,024 bytes (table and index keys alike), numbers of at most 38 significant
//! digits with a magnitude from 1E-130 to 9.99...E+125, at most 32 levels of nested lists and
//! maps, and at most 4 MB in one `TransactWriteItems`.

use super::items::Item;
use crate::store::keys;
use aws_sdk_dynamodb::types::AttributeValue;

/// Largest item, in DynamoDB's size units (bytes).
pub const MAX_ITEM_BYTES: usize = 400 * 1024;
/// Largest partition key value, bytes.
pub const MAX_PARTITION_KEY_BYTES: usize = 2048;
/// Largest sort key value, bytes.
pub const MAX_SORT_KEY_BYTES: usize = 1024;
/// Deepest nesting of lists and maps.
pub const MAX_NESTING: usize = 32;
/// Largest `TransactWriteItems` request, bytes of items: 4 MB.
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
/// Most significant digits of a number.
const MAX_DIGITS: usize = 38;

/// The size of `item` as DynamoDB counts it (attribute names and values, in bytes).
///
/// Errors: the first limit the item breaks, e.g. `item of 512000 bytes, more than DynamoDB's
/// 409600` or `number "1e200" is outside DynamoDB's range`.
pub fn check_item(item: &Item) -> Result<usize, String> {
    for (name, max) in [
        (keys::PK, MAX_PARTITION_KEY_BYTES),
        (keys::SK, MAX_SORT_KEY_BYTES),
        (keys::GSI1PK, MAX_PARTITION_KEY_BYTES),
        (keys::GSI1SK, MAX_SORT_KEY_BYTES),
        (keys::GSI2PK, MAX_PARTITION_KEY_BYTES),
        (keys::GSI2SK, MAX_SORT_KEY_BYTES),
    ] {
        if let Some(AttributeValue::S(key)) = item.get(name) {
            if key.is_empty() || key.len() > max {
                return Err(format!(
                    "key {name} of {} bytes: DynamoDB takes 1 to {max}",
                    key.len()
                ));
            }
        }
    }
    let mut size = 0;
    for (name, value) in item {
        size += name.len() + value_size(value, 1)?;
    }
    if size > MAX_ITEM_BYTES {
        return Err(format!(
            "item of {size} bytes, more than DynamoDB's {MAX_ITEM_BYTES}"
        ));
    }
    Ok(size)
}

/// A value's size; `depth` is its nesting level (a top-level attribute is 1).
fn value_size(value: &AttributeValue, depth: usize) -> Result<usize, String> {
    let nested = |depth: usize| {
        if depth > MAX_NESTING {
            Err(format!(
                "nesting deeper than DynamoDB's {MAX_NESTING} levels"
            ))
        } else {
            Ok(())
        }
    };
    Ok(match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number_size(n)?,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(items) => items.iter().map(String::len).sum(),
        AttributeValue::Ns(items) => items
            .iter()
            .map(|n| number_size(n))
            .sum::<Result<usize, String>>()?,
        AttributeValue::Bs(items) => items.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(items) => {
            nested(depth)?;
            let mut size = 3;
            for item in items {
                size += 1 + value_size(item, depth + 1)?;
            }
            size
        }
        AttributeValue::M(map) => {
            nested(depth)?;
            let mut size = 3;
            for (name, item) in map {
                size += 1 + name.len() + value_size(item, depth + 1)?;
            }
            size
        }
        // A type this SDK version does not know: count it as its debug text, an overestimate.
        other => format!("{other:?}").len(),
    })
}

/// A number's size (about one byte per two significant digits, plus one), after checking, on
/// its decimal text (not a rounded double), that DynamoDB holds it: zero, or at most 38
/// significant digits with the leading one from 10^-130 to 10^125.
fn number_size(text: &str) -> Result<usize, String> {
    let out_of_range = || format!("number {text:?} is outside DynamoDB's range");
    let t = text.trim();
    let unsigned = t.strip_prefix(['-', '+']).unwrap_or(t);
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().map_err(|_| out_of_range())?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |p: &str| p.chars().all(|c| c.is_ascii_digit());
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
    let leading = exponent + whole.len() as i64 - 1 - leading_zeros as i64;
    if !(-130..=125).contains(&leading) {
        return Err(out_of_range());
    }
    if significant > MAX_DIGITS {
        return Err(format!(
            "number {text:?} has more than DynamoDB's {MAX_DIGITS} significant digits"
        ));
    }
    Ok(significant.div_ceil(2) + 1)
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
        ]);
        // PK 2+2, n 1+(5 digits -> 3+1), ok 2+1, m 1+(3 + 1 + 1 + 2).
        assert_eq!(check_item(&i), Ok(4 + 5 + 3 + 8));
    }

    #[test]
    fn items_past_dynamodbs_limits_are_refused_with_the_reason() {
        let big = item(vec![("PK", s("a")), ("v", s(&"x".repeat(MAX_ITEM_BYTES)))]);
        assert!(check_item(&big).unwrap_err().contains("item of"));
        let long_pk = item(vec![("PK", s(&"k".repeat(2049)))]);
        assert!(check_item(&long_pk).unwrap_err().contains("key PK"));
        let long_sk = item(vec![("PK", s("a")), ("GSI2SK", s(&"k".repeat(1025)))]);
        assert!(check_item(&long_sk).unwrap_err().contains("key GSI2SK"));
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
        ] {
            let i = item(vec![("n", AttributeValue::N(n.into()))]);
            assert!(check_item(&i).unwrap_err().contains("range"), "{n}");
        }
        let digits = item(vec![("n", AttributeValue::N("1".repeat(39)))]);
        assert!(check_item(&digits).unwrap_err().contains("significant"));
        let mut deep = s("leaf");
        for _ in 0..MAX_NESTING {
            deep = AttributeValue::L(vec![deep]);
        }
        assert!(check_item(&item(vec![("d", deep.clone())])).is_ok());
        let deeper = AttributeValue::M(item(vec![("x", deep)]));
        assert!(check_item(&item(vec![("d", deeper)]))
            .unwrap_err()
            .contains("nesting"));
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
}
