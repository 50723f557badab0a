//! The stats counters (BEHAVIOR 8) against a recount of the history entries they count,
//! on both stores: for windows cut anywhere (whole UTC days, hours and minutes from the
//! counters, partial minutes at the edges from the entries), `tally_assignments` equals counting
//! the router's entries one by one. On DynamoDB, a stats window of whole days reads the counters, not the entries.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;
use chrono::{DateTime, Duration, TimeZone, Utc};
use common::Backend;
use serde_json::{json, Value};
use shared::clock::FixedClock;
use shared::dispatch::engine::DEFAULT_HISTORY_RETENTION_DAYS;
use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, Outcome};
use shared::fields::CatalogueCache;
use shared::model::dispatch::AssignmentTally;
use shared::outbound::OutboundPolicy;
use shared::page::PageRequest;
use shared::secrets::LocalSealer;
use shared::store::Store;
use shared::types::{AccountId, RouterId};
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

shared::on_both_stores!(the_counters_equal_a_recount_of_the_entries_for_any_window);

const ACCOUNT: &str = "7a1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f71";
const ROUTER: &str = "0e1f2a3b-4c5d-4e6f-8a7b-9c0d1e2f3a41";
const BACKED: &str = "0e1f2a3b-4c5d-4e6f-8a7b-9c0d1e2f3a42";

fn contact(n: usize) -> String {
    Uuid::from_u128(0x01936b2a_7c00_7a00_8000_000000000000 + n as u128).to_string()
}

fn seed(contacts: usize) -> Value {
    let members: Vec<Value> = (1..=3)
        .map(|n| json!({"id": Uuid::from_u128(0x7a00 + n), "email": format!("m{n}@acme.example")}))
        .chain([json!({"id": Uuid::from_u128(0x7a04), "email": "away@acme.example", "office_status": false})])
        .collect();
    let records: Vec<Value> = (0..contacts)
        .map(
            |n| json!({"id": contact(n), "fields": {"email": format!("lead{n}@prospect.example")}}),
        )
        .collect();
    json!({"accounts": [{
        "id": ACCOUNT, "name": "Acme", "active": true,
        "users": members,
        "routers": [
            {"id": ROUTER, "name": "R", "object_type": "contacts", "is_published": true,
             "settings": {"owner_field": "contact_owner", "distribution_model": "round robin",
                          "ignore_working_hours": true, "overwrite": true},
             "users": [{"email": "m1@acme.example"}, {"email": "m2@acme.example"}, {"email": "m3@acme.example"}],
             "teams": []},
            // Nobody available: every assignment goes to the backup user (another reason).
            {"id": BACKED, "name": "B", "object_type": "contacts", "is_published": true,
             "settings": {"owner_field": "contact_owner", "distribution_model": "round robin",
                          "overwrite": true, "default_user": "m2@acme.example"},
             "users": [{"email": "away@acme.example"}], "teams": []}
        ],
        "records": {"contacts": records}
    }]})
}

fn id<T: std::str::FromStr>(text: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    text.parse().unwrap()
}

/// Every assignment among the router's entries in `[from, to)`, counted one by one.
async fn recount(
    store: &dyn Store, router: RouterId, from: DateTime<Utc>, to: DateTime<Utc>,
) -> BTreeMap<(String, String), u64> {
    let mut counted = BTreeMap::new();
    let mut page = PageRequest::first(100, false);
    loop {
        let listed = store
            .list_router_dispatches(id(ACCOUNT), router, &page)
            .await
            .unwrap();
        for e in &listed.items {
            if e.success && e.dispatched_at >= from && e.dispatched_at < to {
                let key = (
                    e.user.clone().unwrap().into_string(),
                    format!("{:?}", e.reason.unwrap()),
                );
                *counted.entry(key).or_default() += 1;
            }
        }
        match listed.next {
            Some(position) => page = PageRequest::after(100, position, false),
            None => return counted,
        }
    }
}

fn as_map(tally: Vec<AssignmentTally>) -> BTreeMap<(String, String), u64> {
    tally
        .into_iter()
        .map(|t| ((t.user, format!("{:?}", t.reason)), t.count))
        .collect()
}

/// Provisions the seed (a contact per instant of `at`) into `store`, then dispatches contact `n`
/// at `at[n]` by the router `router_of(n)`, history entries kept for `retention`: each must
/// assign.
async fn dispatch_all(
    store: &Arc<dyn Store>, at: &[DateTime<Utc>], router_of: impl Fn(usize) -> &'static str,
    retention: Duration,
) {
    let plan = shared::seed::load(
        &seed(at.len()).to_string(),
        at[0] - Duration::days(1),
        OutboundPolicy::LOCAL,
    )
    .unwrap();
    shared::seed::provision(store.as_ref(), &LocalSealer::development(), plan)
        .await
        .unwrap();
    let clock = Arc::new(FixedClock::new(at[0]));
    let engine = DispatchEngine::new(
        store.clone(),
        clock.clone(),
        Arc::new(CatalogueCache::default()),
    )
    .with_history_retention(retention);
    for (n, instant) in at.iter().enumerate() {
        clock.set(*instant);
        let request = DispatchRequest {
            router_id: router_of(n).into(),
            object_id: contact(n),
            account_id: None,
        };
        let outcome = engine
            .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
            .await
            .unwrap();
        assert!(matches!(outcome, Outcome::Assigned(_)), "{outcome:?}");
    }
}

/// `count` instants `step` apart from `start`.
fn every(start: DateTime<Utc>, step: Duration, count: usize) -> Vec<DateTime<Utc>> {
    (0..count).map(|n| start + step * n as i32).collect()
}

/// The time between two dispatches of [`dispatched`]: 7 h 13 min 17 s, so that they land on
/// every hour and at many minutes and seconds.
fn step() -> Duration {
    Duration::hours(7) + Duration::minutes(13) + Duration::seconds(17)
}

/// A store with `contacts` contacts dispatched by both routers (every fourth by the backup
/// one), one every [`step`] from 2026-11-02 05:00 UTC (so across several days).
async fn dispatched(backend: Backend, contacts: usize) -> (Arc<dyn Store>, DateTime<Utc>) {
    let start = Utc.with_ymd_and_hms(2026, 11, 2, 5, 0, 0).unwrap();
    let store = backend.store().await;
    let router_of = |n: usize| if n % 4 == 3 { BACKED } else { ROUTER };
    let kept = Duration::days(DEFAULT_HISTORY_RETENTION_DAYS);
    dispatch_all(&store, &every(start, step(), contacts), router_of, kept).await;
    (store, start)
}

async fn the_counters_equal_a_recount_of_the_entries_for_any_window(backend: Backend) {
    let (store, start) = dispatched(backend, 24).await; // 7 days of dispatches
    let midnight = Utc.with_ymd_and_hms(2026, 11, 2, 0, 0, 0).unwrap();
    let windows = [
        (
            "all of it",
            start - Duration::days(2),
            start + Duration::days(9),
        ),
        (
            "whole days only",
            midnight + Duration::days(1),
            midnight + Duration::days(5),
        ),
        (
            "partial days at both edges",
            start + Duration::hours(3),
            start + Duration::hours(100),
        ),
        (
            "inside one day",
            midnight + Duration::hours(26),
            midnight + Duration::hours(47),
        ),
        (
            "a partial day then whole days",
            start + Duration::hours(1),
            midnight + Duration::days(6),
        ),
        (
            "from the instant of an assignment",
            start + step() * 3,
            start + Duration::hours(70),
        ),
        (
            "cut inside minutes at both edges",
            start + Duration::hours(3) + Duration::minutes(20) + Duration::seconds(30),
            start + step() * 9 + Duration::seconds(5),
        ),
        (
            "inside one minute, around an assignment",
            start + step() * 2 - Duration::seconds(10),
            start + step() * 2 + Duration::seconds(20),
        ),
        (
            "whole hours and minutes, no whole day",
            start + step() * 5 - Duration::minutes(90),
            start + step() * 5 + Duration::minutes(75),
        ),
        (
            "up to the instant of an assignment (excluded)",
            start - Duration::hours(1),
            start + step() * 4,
        ),
        ("empty", start, start),
    ];
    for router in [ROUTER, BACKED] {
        let router: RouterId = id(router);
        for (name, from, to) in windows {
            let tally = store
                .tally_assignments(id::<AccountId>(ACCOUNT), router, from, to)
                .await
                .unwrap();
            assert_eq!(
                as_map(tally),
                recount(store.as_ref(), router, from, to).await,
                "{name}"
            );
        }
    }
    let all = store
        .tally_assignments(
            id::<AccountId>(ACCOUNT),
            id(BACKED),
            start - Duration::days(2),
            start + Duration::days(9),
        )
        .await
        .unwrap();
    assert_eq!(
        as_map(all),
        BTreeMap::from([(("m2@acme.example".to_string(), "Backup".to_string()), 6)]),
        "the backup reason is counted apart"
    );
    // Another account sees nothing of this router.
    let other = store
        .tally_assignments(
            AccountId::from(Uuid::new_v4()),
            id(ROUTER),
            start - Duration::days(2),
            start + Duration::days(9),
        )
        .await
        .unwrap();
    assert!(other.is_empty());
}

/// On DynamoDB a window of whole days reads the day counters (one per member and day), not the
/// entries: 60 assignments in one day cost 3 items, the day's 3 counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stats_window_of_whole_days_reads_the_counters_not_the_entries() {
    use shared::store::dynamodb::test_table::TestTable;
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let start = Utc.with_ymd_and_hms(2026, 11, 2, 5, 0, 0).unwrap();
    let store: Arc<dyn Store> = Arc::new(table.store.clone());
    let at = every(start, Duration::minutes(1), 60);
    dispatch_all(
        &store,
        &at,
        |_| ROUTER,
        Duration::days(DEFAULT_HISTORY_RETENTION_DAYS),
    )
    .await;
    let midnight = Utc.with_ymd_and_hms(2026, 11, 2, 0, 0, 0).unwrap();
    table.counter.take();
    table.counter.take_items_read();
    let tally = store
        .tally_assignments(
            id(ACCOUNT),
            id(ROUTER),
            midnight - Duration::days(29),
            midnight + Duration::days(1),
        )
        .await
        .unwrap();
    assert_eq!(tally.iter().map(|t| t.count).sum::<u64>(), 60);
    assert_eq!(table.counter.take_items_read(), 3, "the day's 3 counters");
    table.delete().await;
}

/// The embedded store purges expired entries (as DynamoDB's TTL deletes them) and takes each
/// off its day's, hour's and minute's counters: a window over the purged day counts what the
/// entries still hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purged_entry_leaves_its_counter_on_the_embedded_store() {
    let store: Arc<dyn Store> = Arc::new(shared::store::memory::MemoryStore::new());
    let now = Utc::now();
    let long_ago = now - Duration::days(3);
    dispatch_all(&store, &[long_ago, now], |_| ROUTER, Duration::days(1)).await;
    // The second commit purged the first entry (expired two days ago).
    let (from, to) = (long_ago - Duration::days(2), now + Duration::days(2));
    let tally = store
        .tally_assignments(id(ACCOUNT), id(ROUTER), from, to)
        .await
        .unwrap();
    assert_eq!(
        as_map(tally.clone()),
        recount(store.as_ref(), id(ROUTER), from, to).await
    );
    assert_eq!(tally.iter().map(|t| t.count).sum::<u64>(), 1, "{tally:?}");
}
