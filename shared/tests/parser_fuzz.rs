//! Fuzzing of the parsers of client input (bad input is a 400, never a panic:
//! `docs/decisions.md`, "Panics"): datetime, `website_url`,
//! e-mail, trigger, working hours (days, times, zones, out-of-office) and query strings.
//!
//! Two properties, both with proptest (so they run in the ordinary test command, with a fixed
//! number of cases):
//!
//! - **No panic** on arbitrary input: arbitrary Unicode text, text over each parser's own
//!   alphabet, arbitrary bytes percent-encoded into query strings, arbitrary JSON for triggers.
//! - **No work superlinear in the input**: for a random short pattern `p` (from each parser's
//!   alphabet, where quadratic behaviour hides: separators, escapes, dots, digits), the parser
//!   runs on `p` repeated `SMALL` and `16 x SMALL` times. Its cost is counted, not timed: the
//!   bytes and number of heap allocations of the call on this thread (a counting global
//!   allocator). Linear work may grow 16-fold, O(n log n) about 24-fold; the bound is 64-fold plus
//!   a constant, so a quadratic parser (256-fold) fails while allocator noise does not.
//!   Allocation is a proxy: it sees every copy, split, collect and re-encoding, but not a loop
//!   that rescans the input without allocating (none of these parsers has one; the libraries
//!   they call, `url`, `email_address`, `chrono`, `serde_json`, scan linearly).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use proptest::prelude::*;
use serde_json::{json, Value};
use shared::api::{item_properties, ListQuery, QueryParams};
use shared::fields::validate::{parse_datetime_text, parse_datetime_value};
use shared::fields::{Catalogue, PropertyList};
use shared::model::{ObjectType, Record};
use shared::schedule::out_of_office::OutOfOfficeText;
use shared::schedule::{
    parse_days, parse_hhmm, IanaTimeZone, OutOfOffice, WorkingHours, WorkingHoursText,
};
use shared::trigger::Trigger;
use shared::types::{CanonicalDomain, Email};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;

// ---- the cost counter -------------------------------------------------------------------------

/// The system allocator, counting this thread's allocations (so parallel tests do not mix).
struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
    let _ = BYTES.try_with(|c| c.set(c.get() + bytes as u64));
}

// SAFETY: every call is forwarded unchanged to `System`; the counters are plain thread-local
// cells that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// (allocations, bytes allocated) by `work` on this thread.
fn cost(work: impl FnOnce()) -> (u64, u64) {
    let before = (ALLOCS.with(Cell::get), BYTES.with(Cell::get));
    work();
    (
        ALLOCS.with(Cell::get) - before.0,
        BYTES.with(Cell::get) - before.1,
    )
}

/// Repetitions of the pattern in the small input; the large one has 16 times as many.
const SMALL: usize = 64;
const GROWTH: u64 = 16;
/// Allowed growth of the cost when the input grows [`GROWTH`]-fold (linear: 16, n log n: ~24,
/// quadratic: 256).
const BOUND: u64 = 64;

/// Runs `parse` on `p` repeated [`SMALL`] and 16 x [`SMALL`] times (inside `wrap`) and checks
/// that neither the allocations nor the bytes grow more than [`BOUND`]-fold (plus a constant).
fn assert_scales_linearly(
    name: &str, pattern: &str, wrap: impl Fn(&str) -> String, parse: impl Fn(&str),
) {
    let small = wrap(&pattern.repeat(SMALL));
    let large = wrap(&pattern.repeat(SMALL * GROWTH as usize));
    parse(&small); // warm up lazily initialised statics (tz tables, regexes)
    let (small_allocs, small_bytes) = cost(|| parse(&small));
    let (large_allocs, large_bytes) = cost(|| parse(&large));
    assert!(
        large_allocs <= BOUND * small_allocs + 64,
        "{name}: allocations grew from {small_allocs} to {large_allocs} for a {GROWTH}-fold input ({pattern:?})"
    );
    assert!(
        large_bytes <= BOUND * small_bytes + 64 * 1024,
        "{name}: bytes grew from {small_bytes} to {large_bytes} for a {GROWTH}-fold input ({pattern:?})"
    );
}

fn pattern(alphabet: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(alphabet), 1..6).prop_map(|parts| parts.concat())
}

// ---- the parsers --------------------------------------------------------------------------------

fn datetime(text: &str) {
    let _ = parse_datetime_text(text);
    let _ = parse_datetime_value(&Value::String(text.to_owned()));
}

fn website_url(text: &str) {
    let _ = CanonicalDomain::parse(text);
}

fn email(text: &str) {
    let _ = Email::parse(text);
}

fn working_hours(text: &str) {
    let _ = parse_days(text);
    let _ = parse_hhmm(text);
    let _ = IanaTimeZone::parse(text);
    for (days, start, end) in [
        (text, "09:00", "17:00"),
        ("Mon - Fri", text, "17:00"),
        ("Mon - Fri", "09:00", text),
    ] {
        let _ = WorkingHours::parse(WorkingHoursText {
            days: days.to_owned(),
            start_date: start.to_owned(),
            end_date: end.to_owned(),
        });
    }
    for (start, end) in [(text, "2026-12-24"), ("2026-12-20", text), (text, text)] {
        let _ = OutOfOffice::parse(
            OutOfOfficeText {
                start_date: start.to_owned(),
                end_date: end.to_owned(),
                created_by: None,
            },
            IanaTimeZone::parse("Europe/Berlin").unwrap(),
        );
    }
}

fn query(text: &str) {
    let _ = ListQuery::parse(Some(text));
    let _ = item_properties(Some(text));
    let params = QueryParams::parse(Some(text));
    let _ = params.all("properties");
    let _ = params.first("limit");
    let catalogue = Catalogue::standard(ObjectType::Contacts);
    let _ = PropertyList::parse(Some(text), &catalogue);
}

fn record() -> Record {
    let at = chrono::DateTime::parse_from_rfc3339("2026-01-15T10:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    Record {
        id: uuid::Uuid::from_u128(1).into(),
        account_id: uuid::Uuid::nil().into(),
        object_type: ObjectType::Contacts,
        values: BTreeMap::from([
            ("email".to_owned(), "ana@example.com".to_owned()),
            ("first_name".to_owned(), "Ana".to_owned()),
            ("lifecycle_stage".to_owned(), "lead".to_owned()),
        ]),
        created_at: at,
        updated_at: at,
        archived_at: None,
        archived_by: None,
        version: 1,
    }
}

/// A trigger as JSON text: parsed (shape), validated against the contacts catalogue (meaning)
/// and, when it parses, evaluated on a record.
fn trigger(text: &str) {
    let catalogue = Catalogue::standard(ObjectType::Contacts);
    if let Ok(trigger) = serde_json::from_str::<Trigger>(text) {
        let _ = trigger.validate(&catalogue);
        let _ = trigger.matches(&record(), &catalogue, &|_| None);
    }
}

// ---- alphabets ----------------------------------------------------------------------------------

const DATETIME: &[&str] = &[
    "2026", "-", "01", "T", ":", "00", ".", "9", "Z", "+", "02:00", " ", "e", "1", "Mon, ", "GMT",
];
const URL: &[&str] = &[
    "a", ".", "www.", "http://", "://", "/", "..", "%", "41", "@", ":", "[", "]", "xn--", "ü",
    "\u{3002}", "?", "#", "\\", "-", "80",
];
const EMAIL: &[&str] = &[
    "a", ".", "@", "\"", "\\", "(", ")", "<", ">", " ", "b", "-", "+", "com", "[", "]", "ü", ",",
];
const SCHEDULE: &[&str] = &[
    "mon", "-", " ", "fri", "sat", "09", ":", "00", "2026", "T", "Z", "/", "Europe", "Berlin", "_",
    "+",
];
const QUERY: &[&str] = &[
    "a",
    "=",
    "&",
    "%",
    "FF",
    "2C",
    "+",
    "properties",
    "limit",
    "after",
    ",",
    "email",
    "1",
    "offset",
    "archived",
    "true",
    "%E2%82",
    "&&",
    "==",
];
const TRIGGER_VALUE: &[&str] = &["a", "A", " ", "é", "\\u00e9", ".", "*", "%", "1"];

// ---- no panic on arbitrary input ----------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn datetime_never_panics(text in any::<String>(), own in pattern(DATETIME), n in any::<f64>()) {
        datetime(&text);
        datetime(&own);
        let _ = parse_datetime_value(&json!(n));
        let _ = parse_datetime_value(&json!(own));
    }

    #[test]
    fn website_url_never_panics(text in any::<String>(), own in pattern(URL)) {
        website_url(&text);
        website_url(&own);
    }

    #[test]
    fn email_never_panics(text in any::<String>(), own in pattern(EMAIL)) {
        email(&text);
        email(&own);
    }

    #[test]
    fn working_hours_never_panic(text in any::<String>(), own in pattern(SCHEDULE)) {
        working_hours(&text);
        working_hours(&own);
    }

    #[test]
    fn query_strings_never_panic(
        text in any::<String>(),
        own in pattern(QUERY),
        bytes in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        query(&text);
        query(&own);
        // Arbitrary bytes, percent-encoded as a client would send them.
        let encoded: String = bytes.iter().map(|b| format!("%{b:02X}")).collect();
        query(&format!("properties={encoded}&limit={encoded}&{encoded}={encoded}"));
    }

    #[test]
    fn triggers_never_panic(json in arbitrary_json(), shaped in trigger_json()) {
        trigger(&json.to_string());
        trigger(&shaped.to_string());
    }
}

/// Arbitrary JSON values, nested.
fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>().prop_map(|n| json!(n)),
        any::<i64>().prop_map(|n| json!(n)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "groups",
                    "conditions",
                    "field",
                    "operator",
                    "value",
                    "x"
                ])
                .prop_map(str::to_owned),
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Triggers of the right shape with arbitrary fields, operators and values.
fn trigger_json() -> impl Strategy<Value = Value> {
    let field = prop_oneof![
        prop::sample::select(vec![
            "email",
            "first_name",
            "lifecycle_stage",
            "create_date",
            "record_id",
            "contact_owner",
            "annual_revenue",
            "nope",
        ])
        .prop_map(str::to_owned),
        any::<String>(),
    ];
    let operator = prop_oneof![
        prop::sample::select(vec![
            "equals",
            "not_equals",
            "contains",
            "not_contains",
            "starts_with",
            "ends_with",
            "in",
            "not_in",
            "is_empty",
            "is_not_empty",
            "greater_than",
            "less_than",
            "greater_than_or_equal",
            "less_than_or_equal",
        ])
        .prop_map(str::to_owned),
        any::<String>(),
    ];
    let condition = (field, operator, arbitrary_json())
        .prop_map(|(f, o, v)| json!({"field": f, "operator": o, "value": v}));
    prop::collection::vec(
        prop::collection::vec(condition, 0..4).prop_map(|c| json!({"conditions": c})),
        0..4,
    )
    .prop_map(|groups| json!({"groups": groups}))
}

// ---- no superlinear work ------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn datetime_work_is_linear(p in pattern(DATETIME)) {
        assert_scales_linearly("datetime", &p, str::to_owned, datetime);
        assert_scales_linearly("datetime after a date", &p, |r| format!("2026-01-01T00:00:00{r}"), datetime);
    }

    #[test]
    fn website_url_work_is_linear(p in pattern(URL)) {
        assert_scales_linearly("website_url", &p, str::to_owned, website_url);
        assert_scales_linearly("website_url host", &p, |r| format!("https://{r}.example/"), website_url);
    }

    #[test]
    fn email_work_is_linear(p in pattern(EMAIL)) {
        assert_scales_linearly("email local part", &p, |r| format!("{r}@example.com"), email);
        assert_scales_linearly("email domain", &p, |r| format!("ana@{r}.com"), email);
    }

    #[test]
    fn working_hours_work_is_linear(p in pattern(SCHEDULE)) {
        assert_scales_linearly("working hours", &p, str::to_owned, working_hours);
    }

    #[test]
    fn query_work_is_linear(p in pattern(QUERY)) {
        assert_scales_linearly("query", &p, str::to_owned, query);
        assert_scales_linearly("properties", &p, |r| format!("properties={r}"), query);
    }

    #[test]
    fn trigger_work_is_linear(p in pattern(TRIGGER_VALUE), op in prop::sample::select(vec!["equals", "contains", "in", "starts_with", "not_in"])) {
        // Many conditions, many groups, and one long value.
        let condition = json!({"field": "email", "operator": op, "value": if op.ends_with("in") { json!([p]) } else { json!(p) }});
        let one = condition.to_string();
        assert_scales_linearly(
            "trigger conditions",
            &format!("{one},"),
            |r| format!("{{\"groups\": [{{\"conditions\": [{}]}}]}}", r.trim_end_matches(',')),
            trigger,
        );
        let group = format!("{{\"conditions\": [{one}]}},");
        assert_scales_linearly(
            "trigger groups",
            &group,
            |r| format!("{{\"groups\": [{}]}}", r.trim_end_matches(',')),
            trigger,
        );
        assert_scales_linearly(
            "trigger value",
            &p,
            |r| json!({"groups": [{"conditions": [{"field": "email", "operator": "contains", "value": r}]}]}).to_string(),
            trigger,
        );
        assert_scales_linearly(
            "trigger in list",
            &format!("\"{p}\","),
            |r| format!("{{\"groups\": [{{\"conditions\": [{{\"field\": \"email\", \"operator\": \"in\", \"value\": [{}]}}]}}]}}", r.trim_end_matches(',')),
            trigger,
        );
    }
}

/// The counter sees quadratic work: a deliberately quadratic function fails the bound. Without
/// this the scaling tests could pass by measuring nothing.
#[test]
#[should_panic(expected = "grew from")]
fn the_cost_counter_catches_a_quadratic_parser() {
    assert_scales_linearly("quadratic", "ab", str::to_owned, |text| {
        let mut prefixes = Vec::new();
        for i in 0..text.len() {
            prefixes.push(text[..i].to_owned());
        }
        std::hint::black_box(prefixes);
    });
}

#[test]
fn the_cost_counter_passes_a_linear_parser() {
    assert_scales_linearly("linear", "ab", str::to_owned, |text| {
        std::hint::black_box(text.split('a').map(str::to_owned).collect::<Vec<_>>());
    });
}
