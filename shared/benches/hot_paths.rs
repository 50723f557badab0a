//! The CPU of the request paths that do not wait on the store (figures in
//! `docs/performance.md`):
//!
//! - `token_verify`: an access token verified in full (ES256 signature with aws-lc-rs, claims)
//!   against the same token answered by the verified-token cache, and that plus the warm check
//!   of its client's key generation (BEHAVIOR 1);
//! - `record_validation`: the `fields` of a contact create body validated against the standard
//!   catalogue ([`validate_fields`]), 5 keys and as many as the standard catalogue accepts of a
//!   list of 20 (16 today);
//! - `dispatch_decision`: the decision of one dispatch once everything is read, for pools of 10,
//!   100, 1,000 and 10,000 members: each member's availability at the instant (office status,
//!   out-of-office, working hours in its own time zone), then the member whose turn it is
//!   (round robin and percentage), through the pure functions of `shared::schedule` and
//!   `shared::dispatch::distribution`.
//!
//! `cargo bench -p shared --bench hot_paths`
#![allow(missing_docs, clippy::unwrap_used)] // a benchmark binary

use chrono::{DateTime, TimeZone, Utc};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::{json, Map, Value};
use shared::auth::token::ClientGenerations;
use shared::auth::{Scope, SigningKey, TokenIssuer, TokenVerifier};
use shared::auth::{DEFAULT_AUDIENCE, DEFAULT_ISSUER, DEV_SIGNING_KEY_PEM};
use shared::clock::SystemClock;
use shared::dispatch::distribution;
use shared::fields::validate::validate_fields;
use shared::fields::Catalogue;
use shared::model::{Member, ObjectType, RotationState};
use shared::outbound::OutboundPolicy;
use shared::schedule::{
    is_available, IanaTimeZone, OutOfOffice, OutOfOfficeText, WorkingHours, WorkingHoursText,
};
use shared::store::memory::MemoryStore;
use shared::store::Store;
use shared::types::email::Email;
use shared::types::notification_preferences::NotificationPreferences;
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

fn token_verify(c: &mut Criterion) {
    let key = SigningKey::from_pem(DEV_SIGNING_KEY_PEM).unwrap();
    let now = Utc::now();
    let token = TokenIssuer::new(key.clone(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, 3600)
        .issue(
            "northwind-integration",
            Uuid::from_u128(1).into(),
            &[Scope::Read, Scope::Create, Scope::Update, Scope::Delete],
            now,
        )
        .unwrap()
        .access_token;
    let verifier = TokenVerifier::from_signing_key(&key, DEFAULT_ISSUER, DEFAULT_AUDIENCE).unwrap();
    verifier.verify(&token, now).unwrap();
    let mut group = c.benchmark_group("token_verify");
    group.bench_function("full ES256", |b| {
        b.iter(|| verifier.verify_uncached(black_box(&token), now).unwrap())
    });
    group.bench_function("cached", |b| {
        b.iter(|| verifier.verify(black_box(&token), now).unwrap())
    });
    // BEHAVIOR 1: what every request adds to check its client's key generation once the
    // instance has read it (a map look-up; the store is read once per client and minute).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let seed = json!({"accounts": [{"id": Uuid::from_u128(1), "name": "A", "clients": [
        {"client_id": "northwind-integration", "client_secret": "bench-secret-0123456789",
         "scopes": ["service-api/read"]}]}]});
    let plan = shared::seed::load(&seed.to_string(), now, OutboundPolicy::LOCAL).unwrap();
    runtime.block_on(async { store.provision(&plan).await.unwrap() });
    let checking = verifier
        .clone()
        .checking_clients(Arc::new(ClientGenerations::new(
            store,
            Arc::new(SystemClock),
        )));
    let principal = checking.verify(&token, now).unwrap();
    runtime.block_on(checking.check_client(&principal)).unwrap();
    group.bench_function("cached + client check (warm)", |b| {
        b.to_async(&runtime).iter(|| async {
            let principal = checking.verify(black_box(&token), now).unwrap();
            checking.check_client(&principal).await.unwrap();
        })
    });
    group.finish();
}

fn contact_fields(keys: usize) -> Map<String, Value> {
    let all = [
        ("email", json!("Jo.Doe@Example.com")),
        ("first_name", json!("Jo")),
        ("last_name", json!("Doe")),
        ("phone", json!("+44 20 7946 0000")),
        ("job_title", json!("CTO")),
        ("website", json!("https://www.example.com/about")),
        ("city", json!("London")),
        ("country", json!("United Kingdom")),
        ("state", json!("England")),
        ("zip", json!("SW1A 1AA")),
        ("address", json!("1 Example Street")),
        ("company", json!("Example Ltd")),
        ("mobile_phone", json!("+44 7700 900000")),
        ("lifecycle_stage", json!("lead")),
        ("lead_status", json!("new")),
        ("industry", json!("Software")),
        ("fax", json!("+44 20 7946 0001")),
        ("salutation", json!("Dr")),
        ("twitter_handle", json!("@jodoe")),
        ("linkedin_url", json!("https://www.linkedin.com/in/jodoe")),
    ];
    let catalogue = Catalogue::standard(ObjectType::Contacts);
    // Only names the standard catalogue knows and accepts with these values: a benchmark of
    // the happy path.
    let accepted: Map<String, Value> = all
        .into_iter()
        .filter(|(name, value)| {
            let one = Map::from_iter([(name.to_string(), value.clone())]);
            validate_fields(&catalogue, &one).is_ok()
        })
        .map(|(n, v)| (n.to_string(), v))
        .collect();
    // Pad with the accepted ones' values under the catalogue's other writable string fields
    // when the list above has fewer than `keys` accepted names.
    let mut fields: Map<String, Value> = accepted.into_iter().take(keys).collect();
    for def in catalogue.fields() {
        if fields.len() >= keys {
            break;
        }
        let name = def.internal_name.clone();
        if fields.contains_key(&name) {
            continue;
        }
        let one = Map::from_iter([(name.clone(), json!("text value"))]);
        if validate_fields(&catalogue, &one).is_ok() {
            fields.insert(name, json!("text value"));
        }
    }
    fields
}

fn record_validation(c: &mut Criterion) {
    let catalogue = Catalogue::standard(ObjectType::Contacts);
    let mut group = c.benchmark_group("record_validation");
    for keys in [5, 20] {
        let fields = contact_fields(keys);
        assert!(validate_fields(&catalogue, &fields).is_ok());
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{} fields", fields.len())),
            &fields,
            |b, fields| b.iter(|| validate_fields(&catalogue, black_box(fields)).unwrap()),
        );
    }
    group.finish();
}

const ZONES: [&str; 5] = [
    "Europe/Berlin",
    "America/New_York",
    "Asia/Tokyo",
    "Australia/Sydney",
    "UTC",
];

/// A member in one of five zones, with office hours on weekdays and one out-of-office range.
fn member(i: usize, at: DateTime<Utc>) -> Member {
    let zone = IanaTimeZone::parse(ZONES[i % ZONES.len()]).unwrap();
    let hours = WorkingHours::parse(WorkingHoursText {
        days: "Mon - Fri".into(),
        start_date: "08:00".into(),
        end_date: "18:00".into(),
    })
    .unwrap();
    let away = OutOfOffice::parse(
        OutOfOfficeText {
            start_date: "2026-08-01".into(),
            end_date: "2026-08-15".into(),
            created_by: None,
        },
        zone,
    )
    .unwrap();
    Member {
        id: Uuid::from_u128(i as u128).into(),
        account_id: Uuid::nil().into(),
        email: Email::parse(&format!("member{i}@example.com")).unwrap(),
        full_name: None,
        first_name: None,
        last_name: None,
        role_id: None,
        external_id: None,
        phone: None,
        office_status: !i.is_multiple_of(7),
        time_zone: zone,
        working_hours: vec![hours],
        out_office_dates: vec![away],
        calendars: BTreeMap::new(),
        holiday_calendar_id: None,
        capacity: Vec::new(),
        can_receive_notifications: false,
        notification_preferences: NotificationPreferences::default(),
        created_at: at,
        updated_at: at,
        archived_at: None,
        archived_by: None,
        version: 1,
    }
}

fn dispatch_decision(c: &mut Criterion) {
    // A Wednesday when the European and American members are at work.
    let at = Utc.with_ymd_and_hms(2026, 3, 11, 14, 30, 0).unwrap();
    let mut group = c.benchmark_group("dispatch_decision");
    for n in [10usize, 100, 1_000, 10_000] {
        let members: Vec<Member> = (0..n).map(|i| member(i, at)).collect();
        let pool: Vec<Email> = members.iter().map(|m| m.email.clone()).collect();
        let weighted: Vec<(Email, f64)> =
            pool.iter().map(|e| (e.clone(), 100.0 / n as f64)).collect();
        let state = RotationState {
            last_member: Some(pool[n / 2].clone()),
            total: 3 * n as u64,
            counts: pool.iter().map(|e| (e.clone(), 3)).collect(),
            ..RotationState::default()
        };
        let available = |members: &[Member]| -> std::collections::HashSet<Email> {
            members
                .iter()
                .filter(|m| is_available(m, at, false))
                .map(|m| m.email.clone())
                .collect()
        };
        assert!(!available(&members).is_empty());
        group.bench_with_input(BenchmarkId::new("round robin", n), &n, |b, _| {
            b.iter(|| {
                let eligible = available(black_box(&members));
                distribution::round_robin(
                    &pool,
                    &|e| eligible.contains(e),
                    state.last_member.as_ref(),
                )
                .cloned()
            })
        });
        group.bench_with_input(BenchmarkId::new("percentage", n), &n, |b, _| {
            b.iter(|| {
                let eligible = available(black_box(&members));
                distribution::percentage(&weighted, &|e| eligible.contains(e), &state).cloned()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, token_verify, record_validation, dispatch_decision);
criterion_main!(benches);
