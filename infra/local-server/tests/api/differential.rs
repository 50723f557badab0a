//! The differential test: both stores accept exactly the same writes (BEHAVIOR 12).
//!
//! A property-based state-machine test built on proptest: each case is a random sequence of API
//! operations (record create, patch, archive, get and list with offsets and cursors, user
//! patch, get and list, dispatch) with random valid, invalid and boundary values (strings at and
//! past 65,536 characters, records past 300 KB, member texts at 256/257 characters, lists at and
//! past their limits, capacity entries nested, too wide or holding numbers at DynamoDB's range
//! edges, Unicode and IDN addresses, duplicate keys). It runs the sequence through the HTTP
//! application (`build_app` / `build_app_on`) over the embedded store and over DynamoDB on the
//! emulator, each from the demo seed, and asserts after every operation that both answer the
//! same status and the same body, ids, timestamps and cursors aside (ids of created records are
//! named by creation order, instants within an hour of now become `<now>`, `next_after`
//! becomes `<cursor>`).
//!
//! Bounded: `DIFFERENTIAL_CASES` cases (default 16) of up to 24 operations, from a fixed seed
//! (`DIFFERENTIAL_SEED`, a number, to explore others), shrinking at most 64 steps. On a
//! difference the failure names the smallest sequence found and both answers.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use chrono::{DateTime, Utc};
use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{json, Map, Value};
use shared::store::dynamodb::test_table::TestTable;
use std::collections::HashMap;

// ---- the demo seed's ids -------------------------------------------------------------------

const TYPES: [&str; 4] = ["contacts", "companies", "deals", "tickets"];

fn seed_records(ty: &str) -> &'static [&'static str] {
    match ty {
        "contacts" => &[
            "01936b2a-7c00-7a00-8000-000000000002",
            "01936b2a-7c00-7a00-8000-000000000004",
        ],
        "companies" => &[
            "01936b2a-7c00-7a00-8000-000000000001",
            "01936b2a-7c00-7a00-8000-000000000003",
        ],
        "deals" => &[
            "01936b2a-7c00-7a00-8000-000000000005",
            "01936b2a-7c00-7a00-8000-000000000006",
        ],
        _ => &["01936b2a-7c00-7a00-8000-000000000007"],
    }
}

/// Ana, Ben, Chen, Dora and the archived Eli; then an id of no member.
const USERS: [&str; 6] = [
    "1d7e8f90-a1b2-4c3d-8e4f-5a6b7c8d9e01",
    "2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12",
    "3f9a0b12-c3d4-4e5f-a061-7c8d9e0f1a23",
    "4b0c1d23-e4f5-4a60-b172-8d9e0f1a2b45",
    "5c1d2e34-f5a6-4b71-8c83-9e0f1a2b3c56",
    "00000000-0000-4000-8000-000000000000",
];

const EMAILS: [&str; 5] = [
    "ana.lopez@northwind.example",
    "ben.okafor@northwind.example",
    "chen.wei@northwind.example",
    "dora.maier@northwind.example",
    "eli.former@northwind.example",
];

/// Inbound leads (contacts), Deals by share (deals), Support tickets (tickets, unpublished),
/// Old company router (companies, no settings), and no router.
const ROUTERS: [(&str, &str); 5] = [
    ("5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45", "contacts"),
    ("7e3f4a56-b7c8-4d93-8ea5-b02b3c4d5e78", "deals"),
    ("8f4a5b67-c8d9-4ea4-9fb6-c13c4d5e6f89", "tickets"),
    ("9a5b6c78-d9ea-4fb5-a0c7-d24d5e6f7a90", "companies"),
    ("00000000-0000-4000-8000-000000000001", "contacts"),
];

const ROLES: [&str; 2] = [
    "6a1f2b3c-4d5e-4f60-8a71-92b3c4d5e6f7",
    "7b2a3c4d-5e6f-4a71-9b82-a3c4d5e6f708",
];

// ---- operations ----------------------------------------------------------------------------

/// One API operation; `target` picks a record of the type (seeded or created, modulo their
/// number; an id of no record when there is none).
#[derive(Debug, Clone)]
enum Op {
    Create {
        ty: usize,
        fields: Value,
    },
    Patch {
        ty: usize,
        target: usize,
        fields: Value,
    },
    Archive {
        ty: usize,
        target: usize,
    },
    Get {
        ty: usize,
        target: usize,
        properties: Option<&'static str>,
    },
    List {
        ty: usize,
        limit: usize,
        offset: usize,
        archived: bool,
        properties: Option<&'static str>,
    },
    /// The next page after the previous list of the type (same `archived` filter).
    ListNext {
        ty: usize,
        limit: usize,
    },
    PatchUser {
        user: usize,
        body: Value,
    },
    GetUser {
        user: usize,
    },
    ListUsers {
        limit: usize,
        archived: bool,
    },
    Dispatch {
        router: usize,
        target: usize,
        /// `Some(k)`: an id this test never seeded nor created ([`UNSEEDED`], or a seeded
        /// record of another type) instead of the target.
        unseeded: Option<usize>,
    },
}

/// Object ids that name no record of the router's type: an unknown UUID, a string that is not
/// a UUID, one with spaces and a slash (and, made when used, 256 characters: the longest
/// accepted).
const UNSEEDED: [&str; 3] = [
    "01936b2a-7c00-7a00-8000-00000000dead",
    "not-a-uuid",
    "hs c/1 2",
];

// ---- values --------------------------------------------------------------------------------

fn pick(values: Vec<Value>) -> BoxedStrategy<Value> {
    proptest::sample::select(values).boxed()
}

/// Text: short ASCII or Unicode, blank, coerced scalars, and long strings at and past the
/// 65,536-character limit.
fn text() -> BoxedStrategy<Value> {
    prop_oneof![
        6 => "[a-zA-Z0-9 ]{0,12}".prop_map(Value::from),
        3 => "\\PC{0,8}".prop_map(Value::from),
        1 => pick(vec![
            json!("   "), json!(""), json!(12), json!(true), json!(-1.5), json!({"a": 1}),
            json!(["x"]), json!("Bücher 😀 東京"), json!("\u{0}\u{1f}\"\\"),
        ]),
        1 => pick(vec![
            json!("é".repeat(65_536)), json!("x".repeat(65_537)), json!("😀".repeat(65_536)),
        ]),
    ]
    .boxed()
}

fn email() -> BoxedStrategy<Value> {
    mix(
        vec![
            json!("a@x.example"),
            json!("A@X.EXAMPLE"),
            json!("ana@bücher.example"),
            json!("ANA@BÜCHER.example"),
            json!("ana@xn--bcher-kva.example"),
            json!("jo@www.bücher.example"),
            json!("b#c@x.example"),
            json!(""),
            json!(null),
        ],
        vec![json!("not an address"), json!(5), json!("a@b")],
    )
}

fn website() -> BoxedStrategy<Value> {
    mix(
        vec![
            json!("https://www.bücher.example/shop"),
            json!("xn--bcher-kva.example"),
            json!("x.example"),
            json!("HTTP://WWW.X.EXAMPLE:8080/a?b"),
            json!(null),
        ],
        vec![json!("https://"), json!("exa mple.com"), json!(12)],
    )
}

/// The largest double below `x` (for `1e126`: the largest number both stores hold).
fn below(x: f64) -> f64 {
    f64::from_bits(x.to_bits() - 1)
}

/// Numbers at and past DynamoDB's range, numeric strings, and non-numbers.
fn number() -> BoxedStrategy<Value> {
    prop_oneof![
        2 => any::<i32>().prop_map(Value::from),
        1 => (-1e6f64..1e6).prop_map(Value::from),
        2 => pick(vec![
            json!(0), json!(-0.0), json!(1e125), json!(-9.99e125), json!(below(1e126)),
            json!(1e-130), json!(-1e-130), json!("12.50"), json!("1e3"), json!(null),
        ]),
        1 => pick(vec![
            json!(1e126), json!(1e-131), json!(1e200), json!(-1e300), json!(5e-324),
            json!("1e400"), json!("abc"), json!(true), json!(""),
        ]),
    ]
    .boxed()
}

fn datetime() -> BoxedStrategy<Value> {
    mix(
        vec![
            json!("2026-11-22"),
            json!("2026-11-22T09:30:00+01:00"),
            json!("Sun, 22 Nov 2026 09:30:00 +0000"),
            json!(1_795_339_800),
            json!(1_795_339_800_000_i64),
            json!(null),
        ],
        vec![
            json!(8_639_999_999_999_999_i64),
            json!("yesterday"),
            json!(1e200),
        ],
    )
}

fn option_of(options: &[&str]) -> BoxedStrategy<Value> {
    let mut values: Vec<Value> = options.iter().map(|o| json!(o)).collect();
    values.extend(options.iter().map(|o| json!(o.to_uppercase())));
    values.extend([json!("no such option"), json!(3), json!(""), json!(null)]);
    pick(values)
}

fn owner() -> BoxedStrategy<Value> {
    let mut valid: Vec<Value> = EMAILS[..4].iter().map(|e| json!(e)).collect();
    valid.extend(USERS[..4].iter().map(|u| json!(u)));
    valid.extend([json!("ANA.LOPEZ@northwind.example"), json!(""), json!(null)]);
    mix(
        valid,
        vec![
            json!(EMAILS[4]),
            json!(USERS[4]),
            json!("nobody@x.example"),
            json!(7),
        ],
    )
}

fn external_id() -> BoxedStrategy<Value> {
    pick(vec![
        json!("E1"),
        json!("E2"),
        json!("crm-contact-1001"),
        json!("crm-deal-77"),
        json!(""),
        json!(null),
        json!(3),
    ])
}

/// A field of type `ty` (index into [`TYPES`]) and a value for it; a few names no type has or
/// that no client may set.
fn field(ty: usize) -> BoxedStrategy<(String, Value)> {
    let named = |name: &'static str, values: BoxedStrategy<Value>| {
        values.prop_map(move |v| (name.to_string(), v)).boxed()
    };
    let odd = prop_oneof![
        Just("favourite_colour"),
        Just("record_id"),
        Just("create_date"),
        Just("archived"),
        Just("contact_owner_assigned_date"),
    ]
    .prop_flat_map(|name| text().prop_map(move |v| (name.to_string(), v)))
    .boxed();
    match TYPES[ty] {
        "contacts" => prop_oneof![
            3 => named("first_name", text()),
            2 => named("last_name", text()),
            3 => named("email", email()),
            2 => named("contact_owner", owner()),
            1 => named("city", text()),
            1 => named("job_title", text()),
            2 => named("region", option_of(&["emea", "amer", "apac", "Americas"])),
            1 => named("employee_count", number()),
            1 => named("lifecycle_stage", option_of(&["lead", "Customer"])),
            2 => named("external_id", external_id()),
            1 => odd,
        ]
        .boxed(),
        "companies" => prop_oneof![
            3 => named("company_name", text()),
            3 => named("website_url", website()),
            2 => named("company_owner", owner()),
            2 => named("annual_revenue", number()),
            1 => named("description", text()),
            2 => named("external_id", external_id()),
            1 => odd,
        ]
        .boxed(),
        "deals" => prop_oneof![
            3 => named("deal_name", text()),
            2 => named("deal_stage", option_of(&["qualified_to_buy", "Closed won", "on_hold"])),
            2 => named("pipeline", option_of(&["default", "Sales Pipeline"])),
            3 => named("amount", number()),
            2 => named("close_date", datetime()),
            2 => named("deal_owner", owner()),
            2 => named("external_id", external_id()),
            1 => odd,
        ]
        .boxed(),
        _ => prop_oneof![
            3 => named("ticket_name", text()),
            2 => named("ticket_stage", option_of(&["new", "Waiting on us"])),
            2 => named("pipeline", option_of(&["support"])),
            2 => named("ticket_owner", owner()),
            2 => named("external_id", external_id()),
            1 => odd,
        ]
        .boxed(),
    }
}

/// `{fields}` of a create or patch: a few random fields, often over a valid create base, and
/// sometimes long texts near or past 300 KB of JSON.
fn fields(ty: usize) -> BoxedStrategy<Value> {
    let base = match TYPES[ty] {
        "contacts" => json!({"first_name": "Jo"}),
        "companies" => json!({"company_name": "Acme"}),
        "deals" => {
            json!({"deal_name": "D", "deal_stage": "qualified_to_buy", "pipeline": "default"})
        }
        _ => json!({"ticket_name": "T", "ticket_stage": "new", "pipeline": "support"}),
    };
    // Contacts and companies have enough text fields to come near the 300 KB limit (four of
    // 65,536 ASCII characters, about 262 KB of JSON: ten of them make a list page past its byte
    // budget) and to pass it (seven of 65,536 two-byte characters, about 917 KB: a DynamoDB item
    // of more than 400 KB). Deals and tickets get their base instead.
    let texts: &[&str] = match TYPES[ty] {
        "contacts" => &[
            "city",
            "phone",
            "job_title",
            "company",
            "address",
            "state",
            "country",
        ],
        "companies" => &[
            "description",
            "industry",
            "phone",
            "city",
            "state",
            "country",
            "company_name",
        ],
        _ => &[],
    };
    let near: Map<String, Value> = texts
        .iter()
        .take(4)
        .map(|k| (k.to_string(), json!("x".repeat(65_536))))
        .collect();
    let past: Map<String, Value> = texts
        .iter()
        .map(|k| (k.to_string(), json!("é".repeat(65_536))))
        .collect();
    (
        proptest::collection::vec(field(ty), 0..4),
        prop_oneof![3 => Just(0u8), 6 => Just(1u8), 1 => Just(2u8), 1 => Just(3u8)],
    )
        .prop_map(move |(pairs, extra)| {
            let mut map = match extra {
                0 => Map::new(),
                _ => base.as_object().cloned().unwrap_or_default(),
            };
            match extra {
                2 => map.extend(near.clone()),
                3 => map.extend(past.clone()),
                _ => {}
            }
            for (k, v) in pairs {
                map.insert(k, v);
            }
            Value::Object(map)
        })
        .boxed()
}

fn hours(n: usize) -> Value {
    json!(vec![
        json!({"days": "Mon - Fri", "start_date": "09:00", "end_date": "17:00"});
        n
    ])
}

/// Ranges far from now (or around all of it), so the instant of the run never matters.
fn out_of_office(n: usize, start: &str, end: &str) -> Value {
    json!(vec![json!({"start_date": start, "end_date": end}); n])
}

/// Valid values three times as often as refused ones.
fn mix(valid: Vec<Value>, refused: Vec<Value>) -> BoxedStrategy<Value> {
    prop_oneof![3 => pick(valid), 1 => pick(refused)].boxed()
}

/// One key of a user PATCH and its value.
fn user_key() -> BoxedStrategy<(String, Value)> {
    let named = |name: &'static str, values: BoxedStrategy<Value>| {
        values.prop_map(move |v| (name.to_string(), v)).boxed()
    };
    let name_text = || {
        mix(
            vec![
                json!("Ana"),
                json!("Ána 😀"),
                json!("é".repeat(256)),
                json!(""),
                json!(null),
            ],
            vec![json!("x".repeat(257)), json!(5)],
        )
    };
    let wide: Map<String, Value> = (0..21).map(|i| (format!("k{i}"), json!(i))).collect();
    let widest_ok: Map<String, Value> = (0..20)
        .map(|i| (format!("k{i}"), json!("é".repeat(256))))
        .collect();
    let mut deep = json!(1);
    for _ in 0..40 {
        deep = json!({ "x": deep });
    }
    let huge: Map<String, Value> = (0..20)
        .map(|i| (format!("k{i}"), json!("😀".repeat(256))))
        .collect();
    let capacity = mix(
        vec![
            json!([]),
            json!([{"id": "c1", "current_capacity": 0, "max_capacity": 2, "assignment_type": "contacts"}]),
            json!([{"current_capacity": 1, "max_capacity": 1, "assignment_type": "all"}]),
            json!([{"max_capacity": 5.0, "n": 1e125, "m": -1e-130, "b": true, "z": null}]),
            json!([{"n": below(1e126), "t": 1e-130}]),
            json!([Value::Object(widest_ok.clone())]),
            json!(vec![Value::Object(widest_ok); 10]),
            json!(vec![json!({"max_capacity": 3}); 50]),
        ],
        vec![
            json!([{"n": 1e126}]),
            json!([{"n": 1e200}]),
            json!([{"n": 1e-131}]),
            json!([{"n": 5e-324}]),
            json!([{"max_capacity": -1}]),
            json!([{"max_capacity": 9_007_199_254_740_992_u64}]),
            json!([{"nested": {"a": 1}}]),
            json!([{ "deep": deep }]),
            json!([{"list": [1, 2]}]),
            json!([Value::Object(wide)]),
            json!(vec![Value::Object(huge); 40]),
            json!([{ "k".repeat(257): 1 }]),
            json!([{"v": "x".repeat(257)}]),
            json!(vec![json!({"max_capacity": 3}); 51]),
            json!([1]),
            json!({"max_capacity": 1}),
        ],
    );
    prop_oneof![
        2 => named("full_name", name_text()),
        1 => named("first_name", name_text()),
        1 => named("last_name", name_text()),
        1 => named("phone", name_text()),
        1 => named("external_id", name_text()),
        2 => named("office_status", mix(vec![json!(true), json!(false)], vec![json!("yes")])),
        1 => named("can_receive_notifications", mix(vec![json!(true), json!(false)], vec![json!(1)])),
        1 => named(
            "time_zone",
            mix(vec![json!("Europe/Berlin"), json!("Asia/Tokyo")], vec![json!("Mars/Olympus"), json!(null)])
        ),
        1 => named(
            "working_hours",
            mix(
                vec![hours(0), hours(1), hours(50)],
                vec![
                    hours(51),
                    json!([{"days": "weekdays", "start_date": "09:00", "end_date": "17:00"}]),
                    json!("9-5"),
                ],
            )
        ),
        1 => named(
            "out_office_dates",
            mix(
                vec![
                    out_of_office(0, "", ""),
                    out_of_office(1, "2020-01-01", "2020-01-02"),
                    out_of_office(1, "2020-01-01", "2099-12-31"),
                    out_of_office(200, "2099-01-01", "2099-01-02"),
                ],
                vec![
                    out_of_office(201, "2099-01-01", "2099-01-02"),
                    out_of_office(1, "2099-01-02", "2099-01-01"),
                    json!([{"start_date": "2099-01-01"}]),
                ],
            )
        ),
        1 => named(
            "notification_preferences",
            mix(
                vec![
                    json!([]),
                    json!(["b", "a", "b"]),
                    json!((0..50).map(|i| format!("{i:0>100}")).collect::<Vec<_>>()),
                    json!(["Bücher", "😀"]),
                ],
                vec![json!(vec!["a"; 51]), json!(["x".repeat(101)]), json!(["ok", ""]), json!("all")],
            )
        ),
        3 => named("capacity", capacity),
        1 => named(
            "role_id",
            mix(vec![json!(ROLES[0]), json!(ROLES[1]), json!(null)], vec![json!("nope"), json!(USERS[0])])
        ),
        1 => named("nickname", pick(vec![json!("x")])),
        1 => named("email", pick(vec![json!("x@y.example")])),
    ]
    .boxed()
}

fn user_body() -> BoxedStrategy<Value> {
    proptest::collection::vec(user_key(), 1..3)
        .prop_map(|pairs| Value::Object(pairs.into_iter().collect()))
        .boxed()
}

/// No `properties`, names every type has, or a name no type has.
fn properties() -> BoxedStrategy<Option<&'static str>> {
    proptest::sample::select(vec![
        None,
        Some("record_id,create_date,last_modified_date"),
        Some("favourite_colour"),
    ])
    .boxed()
}

fn op() -> BoxedStrategy<Op> {
    let ty = 0..TYPES.len();
    prop_oneof![
        6 => ty.clone().prop_flat_map(|ty| fields(ty).prop_map(move |fields| Op::Create { ty, fields })),
        4 => (ty.clone(), any::<usize>())
            .prop_flat_map(|(ty, target)| fields(ty).prop_map(move |fields| Op::Patch { ty, target, fields })),
        2 => (ty.clone(), any::<usize>()).prop_map(|(ty, target)| Op::Archive { ty, target }),
        1 => (ty.clone(), any::<usize>(), properties())
            .prop_map(|(ty, target, properties)| Op::Get { ty, target, properties }),
        2 => (ty.clone(), 1..12usize, 0..4usize, any::<bool>(), properties())
            .prop_map(|(ty, limit, offset, archived, properties)| Op::List { ty, limit, offset, archived, properties }),
        1 => (ty.clone(), 1..5usize).prop_map(|(ty, limit)| Op::ListNext { ty, limit }),
        4 => (0..USERS.len(), user_body()).prop_map(|(user, body)| Op::PatchUser { user, body }),
        1 => (0..USERS.len()).prop_map(|user| Op::GetUser { user }),
        1 => (1..8usize, any::<bool>()).prop_map(|(limit, archived)| Op::ListUsers { limit, archived }),
        3 => (0..ROUTERS.len(), any::<usize>(), proptest::option::weighted(0.3, 0..UNSEEDED.len() + 2))
            .prop_map(|(router, target, unseeded)| Op::Dispatch { router, target, unseeded }),
    ]
    .boxed()
}

// ---- running a sequence on both stores -----------------------------------------------------

/// One store's side: the app, its token, the ids of the records it created (by type, in
/// creation order) and the cursor of each type's last list.
struct Side {
    app: TestApp,
    token: String,
    created: HashMap<usize, Vec<String>>,
    names: HashMap<String, String>,
    cursor: HashMap<usize, (Option<String>, bool)>,
}

impl Side {
    async fn new(app: TestApp) -> Self {
        let token = app.northwind().await;
        Self {
            app,
            token,
            created: HashMap::new(),
            names: HashMap::new(),
            cursor: HashMap::new(),
        }
    }

    fn record_id(&self, ty: usize, target: usize) -> String {
        let seeded = seed_records(TYPES[ty]);
        let created = self.created.get(&ty).map(Vec::as_slice).unwrap_or(&[]);
        let n = seeded.len() + created.len();
        let i = target % n;
        if i < seeded.len() {
            seeded[i].to_string()
        } else {
            created[i - seeded.len()].clone()
        }
    }

    /// The request of `op` on this side.
    fn request(&self, op: &Op) -> (Method, String, Option<Value>) {
        match op {
            Op::Create { ty, fields } => (
                Method::POST,
                format!("/{}", TYPES[*ty]),
                Some(json!({ "fields": fields })),
            ),
            Op::Patch { ty, target, fields } => (
                Method::PATCH,
                format!("/{}/{}", TYPES[*ty], self.record_id(*ty, *target)),
                Some(json!({ "fields": fields })),
            ),
            Op::Archive { ty, target } => (
                Method::DELETE,
                format!("/{}/{}", TYPES[*ty], self.record_id(*ty, *target)),
                None,
            ),
            Op::Get {
                ty,
                target,
                properties,
            } => (
                Method::GET,
                format!(
                    "/{}/{}{}",
                    TYPES[*ty],
                    self.record_id(*ty, *target),
                    properties
                        .map(|p| format!("?properties={p}"))
                        .unwrap_or_default()
                ),
                None,
            ),
            Op::List {
                ty,
                limit,
                offset,
                archived,
                properties,
            } => (
                Method::GET,
                format!(
                    "/{}?limit={limit}&offset={offset}&archived={archived}{}",
                    TYPES[*ty],
                    properties
                        .map(|p| format!("&properties={p}"))
                        .unwrap_or_default()
                ),
                None,
            ),
            Op::ListNext { ty, limit } => {
                let uri = match self.cursor.get(ty) {
                    Some((Some(after), archived)) => {
                        format!(
                            "/{}?limit={limit}&archived={archived}&after={after}",
                            TYPES[*ty]
                        )
                    }
                    _ => format!("/{}?limit={limit}", TYPES[*ty]),
                };
                (Method::GET, uri, None)
            }
            Op::PatchUser { user, body } => (
                Method::PATCH,
                format!("/users/{}", USERS[*user]),
                Some(body.clone()),
            ),
            Op::GetUser { user } => (Method::GET, format!("/users/{}", USERS[*user]), None),
            Op::ListUsers { limit, archived } => (
                Method::GET,
                format!("/users?limit={limit}&archived={archived}"),
                None,
            ),
            Op::Dispatch {
                router,
                target,
                unseeded,
            } => {
                let (router_id, object_type) = ROUTERS[*router];
                let ty = TYPES.iter().position(|t| *t == object_type).unwrap_or(0);
                let object_id = match unseeded {
                    None => self.record_id(ty, *target),
                    Some(k) if *k < UNSEEDED.len() => UNSEEDED[*k].to_string(),
                    Some(k) if *k == UNSEEDED.len() => "a".repeat(256),
                    // A seeded record of another type: not the router's object.
                    Some(_) => seed_records(TYPES[(ty + 1) % TYPES.len()])[0].to_string(),
                };
                (
                    Method::POST,
                    "/dispatch/router".to_string(),
                    Some(json!({"router_id": router_id, "object_id": object_id})),
                )
            }
        }
    }

    /// Remembers what `op` created and where its list stopped.
    fn observe(&mut self, op: &Op, answer: &Answer) {
        match op {
            Op::Create { ty, .. } if answer.status == StatusCode::CREATED => {
                if let Some(id) = answer.body["id"].as_str() {
                    let list = self.created.entry(*ty).or_default();
                    list.push(id.to_string());
                    self.names
                        .insert(id.to_string(), format!("<{} {}>", TYPES[*ty], list.len()));
                }
            }
            Op::List { ty, archived, .. } if answer.status == StatusCode::OK => {
                let next = answer.body["pagination"]["next_after"]
                    .as_str()
                    .map(str::to_string);
                self.cursor.insert(*ty, (next, *archived));
            }
            Op::ListNext { ty, .. } if answer.status == StatusCode::OK => {
                let next = answer.body["pagination"]["next_after"]
                    .as_str()
                    .map(str::to_string);
                let archived = self.cursor.get(ty).is_some_and(|(_, a)| *a);
                self.cursor.insert(*ty, (next, archived));
            }
            _ => {}
        }
    }

    /// `body` with this side's ids named, instants near `now` and cursors masked.
    fn normalize(&self, body: &Value, now: DateTime<Utc>) -> Value {
        match body {
            Value::String(s) => {
                if let Some(name) = self.names.get(s) {
                    return json!(name);
                }
                let near = |t: DateTime<Utc>| (t - now).num_minutes().abs() < 60;
                let instant = DateTime::parse_from_rfc3339(s)
                    .or_else(|_| DateTime::parse_from_rfc2822(s))
                    .map(|t| t.with_timezone(&Utc));
                match instant {
                    Ok(t) if near(t) => json!("<now>"),
                    _ => body.clone(),
                }
            }
            Value::Array(items) => items.iter().map(|v| self.normalize(v, now)).collect(),
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| {
                    let v = if k == "next_after" && v.is_string() {
                        json!("<cursor>")
                    } else {
                        self.normalize(v, now)
                    };
                    (k.clone(), v)
                })
                .collect(),
            other => other.clone(),
        }
    }
}

/// A short form of a request body for failure messages (long strings cut).
fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.len() > 600 {
        let cut: String = text.chars().take(300).collect();
        format!("{cut}... ({} bytes)", text.len())
    } else {
        text
    }
}

/// What the sequences covered: answers by operation kind and status (printed at the end, so a
/// run shows that the invalid and boundary values did reach both stores).
type Tally = std::sync::Mutex<std::collections::BTreeMap<String, u32>>;

fn kind(op: &Op) -> &'static str {
    match op {
        Op::Create { .. } => "create",
        Op::Patch { .. } => "patch",
        Op::Archive { .. } => "archive",
        Op::Get { .. } => "get",
        Op::List { .. } => "list",
        Op::ListNext { .. } => "list after",
        Op::PatchUser { .. } => "user patch",
        Op::GetUser { .. } => "user get",
        Op::ListUsers { .. } => "user list",
        Op::Dispatch { .. } => "dispatch",
    }
}

async fn run_sequence(ops: &[Op], table: &TestTable, tally: &Tally) -> Result<(), TestCaseError> {
    let memory = Side::new(TestApp::spawn().await).await;
    crate::common::cheap_secret_hashing();
    let built = local_server::build_app_on(
        local_server::AppConfig {
            seed: local_server::DEMO_SEED.into(),
            signing_key_pem: None,
        },
        std::sync::Arc::new(table.store.clone()),
    )
    .await
    .map_err(|e| TestCaseError::fail(format!("the DynamoDB app did not build: {e:#}")))?;
    let dynamo = Side::new(TestApp {
        router: built.router,
    })
    .await;
    let mut sides = [memory, dynamo];
    for (i, op) in ops.iter().enumerate() {
        let mut answers = Vec::with_capacity(2);
        for side in &sides {
            let (method, uri, body) = side.request(op);
            answers.push(side.app.call(method, &uri, &side.token, body).await);
        }
        *tally
            .lock()
            .unwrap()
            .entry(format!("{} {}", kind(op), answers[0].status.as_u16()))
            .or_insert(0) += 1;
        // Created ids get their names before the answers are compared.
        for (side, answer) in sides.iter_mut().zip(&answers) {
            side.observe(op, answer);
        }
        let now = Utc::now();
        let bodies: Vec<Value> = sides
            .iter()
            .zip(&answers)
            .map(|(side, a)| side.normalize(&a.body, now))
            .collect();
        if answers[0].status != answers[1].status || bodies[0] != bodies[1] {
            let (method, uri, body) = sides[0].request(op);
            return Err(TestCaseError::fail(format!(
                "operation {i} ({method} {uri} {}): the embedded store answered {} {}, \
                 DynamoDB {} {}",
                body.as_ref().map(short).unwrap_or_default(),
                answers[0].status,
                short(&bodies[0]),
                answers[1].status,
                short(&bodies[1]),
            )));
        }
        if answers[0].status.is_server_error() {
            return Err(TestCaseError::fail(format!(
                "operation {i}: both stores answered {} {}",
                answers[0].status,
                short(&bodies[0])
            )));
        }
    }
    Ok(())
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

#[test]
fn both_stores_answer_every_sequence_of_operations_alike() {
    let cases = env_number("DIFFERENTIAL_CASES", 16) as u32;
    let seed = env_number("DIFFERENTIAL_SEED", 13);
    let config = Config {
        cases,
        max_shrink_iters: 64,
        failure_persistence: None,
        ..Config::default()
    };
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tally = Tally::default();
    let result = runner.run(&proptest::collection::vec(op(), 1..24), |ops| {
        rt.block_on(async {
            let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
            let outcome = run_sequence(&ops, &table, &tally).await;
            table.delete().await;
            outcome
        })
    });
    let tally = tally.into_inner().unwrap();
    eprintln!("answers by operation and status (both stores alike): {tally:?}");
    if let Err(e) = result {
        panic!("{e}");
    }
    // The sequences reached the stores with refusals and successes of every kind.
    for expected in [
        "create 201",
        "create 400",
        "user patch 200",
        "user patch 400",
        "dispatch 200",
    ] {
        assert!(tally.contains_key(expected), "no {expected:?} in {tally:?}");
    }
}
