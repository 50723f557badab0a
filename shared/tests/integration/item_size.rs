//! The size rule of stored items (`shared::store::size`, BEHAVIOR 12) against
//! the emulator, which enforces DynamoDB's item size, number range and nesting
//! (`infra/emulator/limits.py`): a property test generates items at the limits (strings of one-
//! to four-byte characters, numbers of every shape near the 38-digit and exponent edges, lists and
//! maps nested around the 32-level limit), padded to within a few bytes of 400 KB by the size
//! function's own count, and checks that the function and a `PutItem` agree on which are refused.
//! Needs `AWS_ENDPOINT_URL` (`source infra/scripts/emulator.sh`).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use aws_sdk_dynamodb::types::AttributeValue;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use shared::store::dynamodb::items::Item;
use shared::store::dynamodb::test_table::TestTable;
use shared::store::size;
use std::cell::Cell;

/// A character of one, two, three or four UTF-8 bytes.
fn any_width_char() -> impl Strategy<Value = char> {
    prop_oneof![
        proptest::char::range('a', 'z'),
        proptest::char::range('\u{e0}', '\u{ff}'),
        proptest::char::range('\u{4e00}', '\u{4fff}'),
        proptest::char::range('\u{1f600}', '\u{1f64f}'),
    ]
}

fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(any_width_char(), 0..max).prop_map(|c| c.into_iter().collect())
}

/// A number's text: optional sign, leading zeros, digits, a point anywhere, an exponent or none.
/// At the edges (`edge`): 1 to 40 digits (the limit is 38 significant ones) and exponents near
/// DynamoDB's range (10^-130 to 10^125); else at most 38 digits and small exponents.
fn number(edge: bool) -> impl Strategy<Value = String> {
    let (digits, exponent) = if edge {
        (
            1..41,
            prop_oneof![(-140i32..-120).prop_map(Some), (115i32..130).prop_map(Some),].boxed(),
        )
    } else {
        (1..39, proptest::option::of(-5i32..5).boxed())
    };
    (
        any::<bool>(),
        0usize..3,
        proptest::collection::vec(0u8..10, digits),
        proptest::option::of(0usize..41),
        exponent,
    )
        .prop_map(|(negative, zeros, digits, point, exponent)| {
            let mut digits: String = "0".repeat(zeros)
                + &digits
                    .iter()
                    .map(|d| char::from(b'0' + d))
                    .collect::<String>();
            if let Some(p) = point {
                let p = p.min(digits.len());
                digits.insert(p, '.');
                if digits.starts_with('.') {
                    digits.insert(0, '0');
                }
                if digits.ends_with('.') {
                    digits.push('0');
                }
            }
            let sign = if negative { "-" } else { "" };
            match exponent {
                Some(e) => format!("{sign}{digits}E{e}"),
                None => format!("{sign}{digits}"),
            }
        })
}

/// A number of one to three significant digits with zeros on either side, the shape where a zero
/// shares a base-100 digit pair with a significant digit (`110`, `12000`, `0.011`, `-0.5`,
/// `1e125`): the decimal point anywhere, an exponent or none.
fn sparse_number() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        proptest::collection::vec(1u8..10, 1..4),
        0usize..6,
        0usize..6,
        proptest::option::of(-130i32..126),
    )
        .prop_map(
            |(negative, significant, zeros_after, zeros_before, exponent)| {
                let digits: String = significant.iter().map(|d| char::from(b'0' + d)).collect();
                let sign = if negative { "-" } else { "" };
                let body = if zeros_before > 0 {
                    format!("0.{}{digits}", "0".repeat(zeros_before - 1))
                } else {
                    format!("{digits}{}", "0".repeat(zeros_after))
                };
                match exponent {
                    Some(e) => format!("{sign}{body}e{e}"),
                    None => format!("{sign}{body}"),
                }
            },
        )
}

/// A value: scalars, and lists and maps of them a few levels deep.
fn value() -> impl Strategy<Value = AttributeValue> {
    let leaf = prop_oneof![
        text(40).prop_map(AttributeValue::S),
        number(false).prop_map(AttributeValue::N),
        any::<bool>().prop_map(AttributeValue::Bool),
        Just(AttributeValue::Null(true)),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(AttributeValue::L),
            proptest::collection::hash_map(
                text(6).prop_filter("a name", |n| !n.is_empty()),
                inner,
                0..6
            )
            .prop_map(AttributeValue::M),
        ]
    })
}

/// A value nested 29 to 34 levels deep (the limit is 32, a top-level attribute's value being 1).
fn deep() -> impl Strategy<Value = AttributeValue> {
    (28usize..34, any::<bool>(), value()).prop_map(|(levels, maps, leaf)| {
        let mut v = leaf;
        for _ in 0..levels {
            v = if maps {
                AttributeValue::M([("d".to_string(), v)].into_iter().collect())
            } else {
                AttributeValue::L(vec![v])
            };
        }
        v
    })
}

/// An item of a few generated attributes, padded by a string of mixed-width characters to
/// `MAX_ITEM_BYTES + slack` bytes as the size function counts (when it counts at all).
fn item() -> impl Strategy<Value = Item> {
    (
        proptest::collection::vec(value(), 0..8),
        proptest::option::weighted(0.3, deep()),
        proptest::collection::vec(number(false), 0..200),
        proptest::collection::vec(number(true), 0..2),
        proptest::collection::vec(sparse_number(), 0..200),
        -8i64..8,
        any::<u64>(),
    )
        .prop_map(|(values, deep, mut numbers, edge, sparse, slack, seed)| {
            numbers.extend(edge);
            numbers.extend(sparse);
            let mut item: Item = Item::new();
            item.insert("PK".into(), AttributeValue::S(format!("p{seed}")));
            item.insert("SK".into(), AttributeValue::S("s".into()));
            for (i, v) in values.into_iter().enumerate() {
                item.insert(format!("a{i}"), v);
            }
            if let Some(d) = deep {
                item.insert("deep".into(), d);
            }
            item.insert(
                "numbers".into(),
                AttributeValue::L(numbers.into_iter().map(AttributeValue::N).collect()),
            );
            if let Ok(bytes) = size::item_size(&item) {
                let target =
                    size::MAX_ITEM_BYTES as i64 + slack - bytes as i64 - "pad".len() as i64;
                item.insert(
                    "pad".into(),
                    AttributeValue::S(padding(target.max(0) as usize, seed)),
                );
            }
            item
        })
}

/// A string of exactly `bytes` UTF-8 bytes, mixing one- to four-byte characters.
fn padding(bytes: usize, seed: u64) -> String {
    let widths = ['x', 'é', '中', '😀'];
    let mut out = String::with_capacity(bytes);
    let mut i = seed as usize;
    while out.len() < bytes {
        let left = bytes - out.len();
        let c = widths[i % 4];
        i = i.wrapping_mul(31).wrapping_add(7);
        out.push(if c.len_utf8() <= left { c } else { 'x' });
    }
    out
}

#[test]
fn the_size_function_and_the_emulator_refuse_the_same_items() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let table = runtime
        .block_on(TestTable::create())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut runner = TestRunner::new(Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    });
    let (taken, refused) = (Cell::new(0), Cell::new(0));
    runner
        .run(&item(), |item| {
            let ours = size::check_item(&item);
            let put = runtime.block_on(
                table
                    .store
                    .client()
                    .put_item()
                    .table_name(table.store.table_name())
                    .set_item(Some(item.clone()))
                    .send(),
            );
            let theirs = match put {
                Ok(_) => Ok(()),
                Err(e) => {
                    let e = e.into_service_error();
                    prop_assert!(
                        e.meta().code() == Some("ValidationException"),
                        "not a validation error: {e:?}"
                    );
                    Err(e.meta().message().unwrap_or_default().to_string())
                }
            };
            match (&ours, &theirs) {
                (Ok(_), Ok(())) => taken.set(taken.get() + 1),
                (Err(_), Err(_)) => refused.set(refused.get() + 1),
                _ => {
                    return Err(TestCaseError::fail(format!(
                        "size function {ours:?}, emulator {theirs:?}"
                    )))
                }
            }
            Ok(())
        })
        .unwrap();
    // Both sides of the limit were tried.
    let (taken, refused) = (taken.get(), refused.get());
    assert!(taken > 5 && refused > 5, "taken {taken}, refused {refused}");
}
