//! Scale (figures in `docs/performance.md`): what a dispatch, an explain, a
//! stats call and a history page cost on DynamoDB (the emulator) in a big account, side by side
//! with the same operations in a 10-member account of the same table.
//!
//! - Big account: M members (default 10,000), R routers (default 1,000) of P members each
//!   (default 10, disjoint pools), N contacts (default 100,000), E history entries on its first
//!   router (default 100,000), spread over the last 30 days.
//! - Small account: P members, 1 router of the same shape, a few contacts, S history entries
//!   (default 150: more than a page) on its router.
//!
//! For each account, on one warm engine: a dispatch (after a warm-up dispatch) and an explain
//! on the first router, then, once the big account is complete, an explain,
//! `HistoryService::stats` over the last 30 days and one history page of 100
//! (`router_dispatches`). Measured for each: sequential rounds of store calls (`FaultyStore`'s
//! `rounds`: calls issued together share one), DynamoDB requests by operation and items read
//! (`RequestCounter`: items a `GetItem` found, a `BatchGetItem` returned, a `Query` evaluated).
//!
//! Setup, not measured: both accounts, their members and routers provisioned by `seed::load`
//! (router pools resolved to member ids as provisioning does); the small account and the big
//! account's item written by `Store::provision`, the big account's members and routers, every
//! contact and every history entry written directly with `BatchWriteItem` (25 items a request, 8
//! in flight) from the store's own item encoders (`shared::store::dynamodb::items`).
//!
//! moto deep-copies the whole table once per item of every `TransactWriteItems` (to roll a
//! cancelled one back), and the copies pile up until Python's collector frees them: a dispatch
//! commit on a table of 210,000 items took more than 12 GB of its memory (killed for it on a
//! 24 GB machine), one on 110,000 items about 35 s and 7.7 GB. So the dispatches run when the
//! big account holds `SCALE_DISPATCH_RECORDS` contacts and `SCALE_DISPATCH_ENTRIES` entries
//! (default 10,000 each: moto stays near 3.5 GB), the rest is written after them (no transaction
//! follows), and the explain, the stats and the page run at full size. The dispatch's reads are
//! the explain's (the same evaluation, without the webhook subscriptions and the commit), so the
//! full-size explain shows the dispatch's reads at full size.
//!
//! The history entries are written directly, so their stats counters (one per UTC day and
//! member, which each assignment's transaction adds to) are written directly too, computed from
//! the same entries, before the dispatches; a warning is printed when the total a stats call
//! counts differs from the entries written.
//!
//! Times are moto's, not DynamoDB's (it serializes requests and copies tables); only the counts
//! are figures.
//!
//! ```sh
//! source infra/scripts/emulator.sh          # AWS_ENDPOINT_URL
//! cargo bench -p shared --bench scale       # the default sizes, dispatches at 10,000 + 10,000
//! SCALE_DISPATCH_RECORDS=50000 SCALE_DISPATCH_ENTRIES=50000 \
//!     cargo bench -p shared --bench scale   # the figures of docs/performance.md (moto: 7.7 GB)
//! SCALE_MEMBERS=1000 SCALE_ROUTERS=100 SCALE_RECORDS=10000 SCALE_ENTRIES=10000 \
//!     cargo bench -p shared --bench scale   # a quick run
//! ```
//!
//! Variables: `SCALE_MEMBERS`, `SCALE_ROUTERS`, `SCALE_POOL` (members per router),
//! `SCALE_RECORDS`, `SCALE_ENTRIES`, `SCALE_DISPATCH_RECORDS`, `SCALE_DISPATCH_ENTRIES`,
//! `SCALE_SMALL_ENTRIES`. `cargo test --benches` (no `--bench` argument) runs tiny sizes, and
//! skips without `AWS_ENDPOINT_URL`.
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout)] // a benchmark binary

use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
use chrono::{DateTime, Duration, Utc};
use futures_util::{stream, StreamExt};
use serde_json::{json, Value};
use shared::clock::SystemClock;
use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, Outcome, Preview};
use shared::fields::CatalogueCache;
use shared::history::{HistoryService, StatsWindow};
use shared::model::dispatch::{AssignmentReason, DispatchEntry, DispatchSource};
use shared::model::{Member, ObjectType, PlannedRecord, ProvisionPlan, Record, Router};
use shared::outbound::OutboundPolicy;
use shared::page::cursor::{CursorKey, ListRequest, RequestedStart};
use shared::secrets::LocalSealer;
use shared::store::dynamodb::items::{self, Item};
use shared::store::dynamodb::keys;
use shared::store::dynamodb::test_table::TestTable;
use shared::store::dynamodb::RequestCounter;
use shared::store::faulty::{FaultyStore, PortMethod};
use shared::store::Store;
use shared::types::email::Email;
use shared::types::ids::{AccountId, RecordId, RouterId};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use uuid::Uuid;

/// `BatchWriteItem` requests in flight while seeding.
const IN_FLIGHT: usize = 8;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The sizes of a run.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    members: usize,
    routers: usize,
    pool: usize,
    records: usize,
    entries: usize,
    /// Contacts and entries of the big account written when the dispatches run (the rest is
    /// written after them: moto copies the whole table for every item of a transaction).
    records_at_dispatch: usize,
    entries_at_dispatch: usize,
    small_entries: usize,
}

/// One account of the run: ids, its first router (the one measured) and pool, its contacts.
struct Account {
    id: Uuid,
    router: Uuid,
    pool: Vec<Email>,
    contacts: Vec<RecordId>,
    /// History entries written on the router (all in the stats window).
    entries: usize,
}

/// The seed of an account: `members` members, `routers` round-robin routers of `pool` members
/// each (router r: members r*pool .. r*pool+pool-1), with a monthly quota so the month's count
/// is read too.
fn seed(name: &str, id: Uuid, routers: &[Uuid], members: usize, pool: usize) -> String {
    let email = |i: usize| format!("m{i:05}@{name}.example");
    json!({"accounts": [{
        "id": id, "name": name, "active": true, "assignment_quota": 1_000_000_000u64,
        "users": (0..members).map(|i| json!({"id": Uuid::new_v4(), "email": email(i)})).collect::<Vec<Value>>(),
        "routers": routers.iter().enumerate().map(|(r, router)| json!({
            "id": router, "name": format!("R{r}"), "object_type": "contacts", "is_published": true,
            "settings": {"owner_field": "contact_owner", "distribution_model": "round robin"},
            "users": (r * pool..(r + 1) * pool).map(|i| json!({"email": email(i % members)})).collect::<Vec<Value>>(),
            "teams": []
        })).collect::<Vec<Value>>(),
    }]})
    .to_string()
}

/// Contacts `range` of `account`, contact n created n ms after `from`.
fn contacts(account: Uuid, from: DateTime<Utc>, range: std::ops::Range<usize>) -> Vec<Record> {
    range
        .map(|n| {
            let at = from + Duration::milliseconds(n as i64);
            Record {
                id: Uuid::now_v7().into(),
                account_id: account.into(),
                object_type: ObjectType::Contacts,
                values: BTreeMap::from([("first_name".to_string(), format!("Lead {n}"))]),
                created_at: at,
                updated_at: at,
                archived_at: None,
                archived_by: None,
                version: 1,
            }
        })
        .collect()
}

/// History entries `range` of `count` on `account`'s router: assignments in rotation over the
/// pool, spread evenly over the 30 days before `now` (the stats window).
fn entries(
    account: &Account, now: DateTime<Utc>, count: usize, range: std::ops::Range<usize>,
) -> Vec<DispatchEntry> {
    let span = Duration::days(30) - Duration::hours(2);
    let start = now - Duration::days(30) + Duration::hours(1);
    range
        .map(|n| {
            let at = start + span * (n as i32) / (count.max(1) as i32);
            DispatchEntry {
                id: Uuid::now_v7(),
                account_id: account.id.into(),
                router_id: account.router.into(),
                router_revision: 1,
                object_type: ObjectType::Contacts,
                object_id: account.contacts[n % account.contacts.len()].to_string(),
                message: "Owner assigned".into(),
                success: true,
                user: Some(account.pool[n % account.pool.len()].clone()),
                reason: Some(AssignmentReason::Rotation),
                previous_owner: None,
                field_name: Some("Contact owner".into()),
                owner_field: Some("contact_owner".into()),
                source: DispatchSource::Api,
                dispatched_at: at,
                crm_sync: None,
                sla: None,
                expires_at: at + Duration::days(400),
            }
        })
        .collect()
}

/// Writes `items` directly, 25 a `BatchWriteItem`, [`IN_FLIGHT`] requests at once (unprocessed
/// items sent again).
async fn batch_write(table: &TestTable, items: Vec<Item>) {
    let client = table.store.client().clone();
    let name = table.store.table_name().to_string();
    let chunks: Vec<Vec<Item>> = items.chunks(25).map(<[Item]>::to_vec).collect();
    stream::iter(chunks)
        .map(|chunk| {
            let client = client.clone();
            let name = name.clone();
            async move {
                let mut writes: Vec<WriteRequest> = chunk
                    .into_iter()
                    .map(|item| {
                        WriteRequest::builder()
                            .put_request(
                                PutRequest::builder().set_item(Some(item)).build().unwrap(),
                            )
                            .build()
                    })
                    .collect();
                while !writes.is_empty() {
                    let out = client
                        .batch_write_item()
                        .request_items(&name, writes)
                        .send()
                        .await
                        .unwrap();
                    writes = out
                        .unprocessed_items()
                        .and_then(|u| u.get(&name))
                        .cloned()
                        .unwrap_or_default();
                }
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
}

/// Writes the items `range` made by `make(slice)`, in slices of 10,000, printing the pace.
async fn seed_directly<F>(table: &TestTable, what: &str, range: std::ops::Range<usize>, make: F)
where
    F: Fn(std::ops::Range<usize>) -> Vec<Item>,
{
    const SLICE: usize = 10_000;
    let started = Instant::now();
    let mut done = range.start;
    while done < range.end {
        let end = (done + SLICE).min(range.end);
        batch_write(table, make(done..end)).await;
        done = end;
        if range.len() > SLICE {
            println!(
                "    {what}: {} of {} written ({:.0} s)",
                done - range.start,
                range.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    println!(
        "  {what} {range:?}: {} written in {:.1} s",
        range.len(),
        started.elapsed().as_secs_f64()
    );
}

/// Every one of `all` written directly, as the item `item` makes of it.
async fn seed_all<T>(table: &TestTable, what: &str, all: &[T], item: impl Fn(&T) -> Item) {
    seed_directly(table, what, 0..all.len(), |r| {
        all[r].iter().map(&item).collect()
    })
    .await;
}

/// The big account's contacts `range` written directly, the first ones being `first` (the
/// contacts dispatched).
async fn write_contacts(
    table: &TestTable, first: &[Record], from: DateTime<Utc>, range: std::ops::Range<usize>,
) {
    let account = first[0].account_id.as_uuid();
    seed_directly(table, "big account's contacts", range, |r| {
        let mut made = contacts(account, from, r.start.max(first.len())..r.end);
        if r.start == 0 {
            made.splice(0..0, first.iter().cloned());
        }
        made.iter().map(|x| items::record(x).unwrap().1).collect()
    })
    .await;
}

/// History entries `range` of `count` on `account`'s router, written directly.
async fn write_entries(
    table: &TestTable, account: &Account, now: DateTime<Utc>, what: &str, count: usize,
    range: std::ops::Range<usize>,
) {
    seed_directly(table, what, range, |r| {
        entries(account, now, count, r)
            .iter()
            .map(|e| items::dispatch_entry(e).unwrap().1)
            .collect()
    })
    .await;
}

/// The stats counters (`shared::store::tally`: one item per router, member and UTC day, hour
/// and minute) that the assignment transactions of all `count` entries of `account`'s router
/// would have written: the entries are written directly, so their counters are too, before any
/// dispatch adds to them.
fn counters(account: &Account, now: DateTime<Utc>, count: usize) -> Vec<Item> {
    use aws_sdk_dynamodb::types::AttributeValue;
    use shared::store::tally::Span;
    type Bucket = (Span, DateTime<Utc>, String);
    let mut by_bucket: BTreeMap<Bucket, (u64, DateTime<Utc>)> = BTreeMap::new();
    for entry in entries(account, now, count, 0..count) {
        for span in Span::ALL {
            let start = span.floor(entry.dispatched_at);
            let counted = by_bucket
                .entry((span, start, entry.user.clone().unwrap().into_string()))
                .or_insert((0, entry.expires_at));
            counted.0 += 1;
            counted.1 = counted.1.max(entry.expires_at);
        }
    }
    let s = |v: String| AttributeValue::S(v);
    by_bucket
        .into_iter()
        .map(|((span, start, user), (rotation, expires))| {
            let key = keys::tally_counter(account.router.into(), span, start, &user);
            Item::from([
                (keys::PK.to_string(), s(key.pk)),
                (keys::SK.to_string(), s(key.sk)),
                (keys::ITEM_TYPE.to_string(), s("tally".into())),
                ("account_id".to_string(), s(account.id.to_string())),
                ("user".to_string(), s(user)),
                ("bucket".to_string(), s(span.bucket(start))),
                (
                    "rotation".to_string(),
                    AttributeValue::N(rotation.to_string()),
                ),
                (
                    items::EXPIRES_AT.to_string(),
                    AttributeValue::N(expires.timestamp().to_string()),
                ),
            ])
        })
        .collect()
}

/// What one operation cost.
#[derive(Debug, Clone, Default)]
struct Cost {
    rounds: usize,
    calls: BTreeMap<PortMethod, usize>,
    requests: BTreeMap<String, u64>,
    items_read: u64,
    seconds: f64,
}

impl Cost {
    fn requests_total(&self) -> u64 {
        self.requests.values().sum()
    }

    fn requests_text(&self) -> String {
        self.requests
            .iter()
            .map(|(op, n)| format!("{n} {op}"))
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

/// The store as the services see it (counting rounds) and the request counter under it.
struct Meter {
    faulty: Arc<FaultyStore>,
    counter: RequestCounter,
}

impl Meter {
    async fn measure<T, Fut: std::future::Future<Output = T>>(&self, run: Fut) -> (T, Cost) {
        self.counter.take();
        self.counter.take_items_read();
        self.faulty.faults.rounds.start();
        let started = Instant::now();
        let out = run.await;
        let seconds = started.elapsed().as_secs_f64();
        let (rounds, calls) = self.faulty.faults.rounds.stop();
        let cost = Cost {
            rounds,
            calls,
            requests: self.counter.take(),
            items_read: self.counter.take_items_read(),
            seconds,
        };
        (out, cost)
    }
}

/// The measured operations of one account.
#[derive(Default)]
struct Costs {
    /// At the dispatch phase's sizes.
    dispatch: Cost,
    explain_then: Cost,
    /// At full size.
    explain: Cost,
    stats: Cost,
    page: Cost,
    stats_total: u64,
    page_items: usize,
}

fn request(account: &Account, n: usize) -> DispatchRequest {
    DispatchRequest {
        router_id: account.router.to_string(),
        object_id: account.contacts[n].to_string(),
        account_id: None,
    }
}

/// A warm-up dispatch (the account, its teams and catalogue cached, as on a warm instance),
/// then the measured dispatch of another contact and an explain of a third.
async fn dispatch_phase(
    meter: &Meter, engine: &DispatchEngine, account: &Account, costs: &mut Costs,
) {
    let context = || AccountContext::Token(account.id.into());
    let warm = engine
        .dispatch(context(), &request(account, 0), None)
        .await
        .unwrap();
    assert!(matches!(warm, Outcome::Assigned(_)), "{warm:?}");
    // On moto a dispatch on a big table can outlast the instance caches (60 s): an explain
    // (which writes nothing) warms them again just before.
    engine
        .explain(account.id.into(), &request(account, 2))
        .await
        .unwrap();
    let (outcome, dispatch) = meter
        .measure(engine.dispatch(context(), &request(account, 1), None))
        .await;
    let outcome = outcome.unwrap();
    assert!(matches!(outcome, Outcome::Assigned(_)), "{outcome:?}");
    costs.dispatch = dispatch;
    costs.explain_then = explain(meter, engine, account).await;
}

/// An explain after another one (the caches warm whatever the time since the last call).
async fn explain(meter: &Meter, engine: &DispatchEngine, account: &Account) -> Cost {
    engine
        .explain(account.id.into(), &request(account, 2))
        .await
        .unwrap();
    let (explained, cost) = meter
        .measure(engine.explain(account.id.into(), &request(account, 2)))
        .await;
    let (preview, _) = explained.unwrap();
    assert!(matches!(preview, Preview::Assign { .. }), "{preview:?}");
    cost
}

/// At full size: an explain, the stats of the last 30 days and the first history page of 100.
async fn read_phase(
    meter: &Meter, engine: &DispatchEngine, history: &HistoryService, account: &Account,
    costs: &mut Costs,
) {
    costs.explain = explain(meter, engine, account).await;
    let now = Utc::now();
    let window = StatsWindow {
        from: now - Duration::days(30),
        to: now + Duration::minutes(1),
    };
    let account_id: AccountId = account.id.into();
    let router_id: RouterId = account.router.into();
    let (stats_out, stats) = meter
        .measure(history.stats(account_id, router_id, window))
        .await;
    costs.stats = stats;
    costs.stats_total = stats_out.unwrap().total;
    let written = account.entries as u64 + 2; // and the two dispatches'
    if costs.stats_total != written {
        println!(
            "  WARNING: stats counted {} assignments where {written} entries were written: the \
             seeding no longer writes what stats read, its figures are not the account's",
            costs.stats_total
        );
    }

    let page_request = ListRequest {
        limit: 100,
        start: RequestedStart::Offset(0),
        include_archived: false,
    };
    let cursors = CursorKey::random();
    let (page_out, page) = meter
        .measure(history.router_dispatches(account_id, router_id, &page_request, &cursors))
        .await;
    costs.page = page;
    costs.page_items = page_out.unwrap().data.len();
}

fn ratio(big: f64, small: f64) -> String {
    if small == 0.0 {
        "-".into()
    } else {
        format!("{:.2}", big / small)
    }
}

fn print_table(sizes: &Sizes, small: &Costs, big: &Costs) {
    println!();
    println!(
        "| operation | measure | small account ({} members, 1 router, 5 contacts, {} entries) | big account ({} members, {} routers of {}, {} contacts, {} entries on the router) | big / small |",
        sizes.pool,
        sizes.small_entries + 2,
        sizes.members,
        sizes.routers,
        sizes.pool,
        sizes.records,
        sizes.entries + 2
    );
    println!("|---|---|---|---|---|");
    let dispatch = format!(
        "dispatch (warm; big account then at {} contacts, {} entries)",
        sizes.records_at_dispatch, sizes.entries_at_dispatch
    );
    let explain_then = format!(
        "explain (warm; big account then at {} contacts, {} entries)",
        sizes.records_at_dispatch, sizes.entries_at_dispatch
    );
    let ops: [(&str, &Cost, &Cost); 5] = [
        (&dispatch, &small.dispatch, &big.dispatch),
        (&explain_then, &small.explain_then, &big.explain_then),
        ("explain (warm, full size)", &small.explain, &big.explain),
        ("stats, 30 days", &small.stats, &big.stats),
        ("history page of 100", &small.page, &big.page),
    ];
    for (what, s, b) in ops {
        println!(
            "| {what} | sequential store rounds | {} | {} | {} |",
            s.rounds,
            b.rounds,
            ratio(b.rounds as f64, s.rounds as f64)
        );
        println!(
            "| | DynamoDB requests | {} ({}) | {} ({}) | {} |",
            s.requests_total(),
            s.requests_text(),
            b.requests_total(),
            b.requests_text(),
            ratio(b.requests_total() as f64, s.requests_total() as f64)
        );
        println!(
            "| | items read | {} | {} | {} |",
            s.items_read,
            b.items_read,
            ratio(b.items_read as f64, s.items_read as f64)
        );
    }
    println!();
    for (name, c) in [("small", small), ("big", big)] {
        for (what, cost) in [
            ("dispatch", &c.dispatch),
            ("explain (dispatch phase)", &c.explain_then),
            ("explain", &c.explain),
            ("stats", &c.stats),
            ("history page", &c.page),
        ] {
            println!(
                "  {name} {what}: store calls {:?}; {:.2} s on moto (calls spaced 5 ms to count rounds)",
                cost.calls, cost.seconds
            );
        }
        println!(
            "  {name} stats: {} assignments in the window; history page: {} entries",
            c.stats_total, c.page_items
        );
    }
}

/// Provisions an account's seed (`seed::load`, then `seed::provision`) with `records`; when
/// `direct`, without its members and routers (written directly by the caller). Returns the
/// whole plan.
async fn provision(
    store: &dyn Store, text: &str, records: &[Record], direct: bool,
) -> ProvisionPlan {
    let mut plan =
        shared::seed::load(text, Utc::now() - Duration::days(40), OutboundPolicy::LOCAL).unwrap();
    plan.accounts[0].records = records
        .iter()
        .enumerate()
        .map(|(i, r)| PlannedRecord {
            record: r.clone(),
            unique_keys: vec![],
            path: format!("records[{i}]"),
        })
        .collect();
    let mut provisioned = plan.clone();
    if direct {
        for a in &mut provisioned.accounts {
            a.members.clear();
            a.routers.clear();
        }
    }
    shared::seed::provision(store, &LocalSealer::development(), provisioned)
        .await
        .unwrap();
    plan
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing and must stay quick.
    let benching = std::env::args().any(|a| a == "--bench");
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        println!("scale: AWS_ENDPOINT_URL is not set (the emulator: source infra/scripts/emulator.sh); skipped");
        return;
    }
    let full = |n: usize, tiny: usize| if benching { n } else { tiny };
    let pool = env("SCALE_POOL", 10).max(1);
    let routers = env("SCALE_ROUTERS", full(1_000, 3)).max(1);
    let record_count = env("SCALE_RECORDS", full(100_000, 300)).max(3);
    let entry_count = env("SCALE_ENTRIES", full(100_000, 300));
    let sizes = Sizes {
        members: env("SCALE_MEMBERS", full(10_000, 30)).max(routers * pool),
        routers,
        pool,
        records: record_count,
        entries: entry_count,
        records_at_dispatch: env("SCALE_DISPATCH_RECORDS", 10_000).clamp(3, record_count),
        entries_at_dispatch: env("SCALE_DISPATCH_ENTRIES", 10_000).min(entry_count),
        small_entries: env("SCALE_SMALL_ENTRIES", 150),
    };
    println!(
        "Scale on DynamoDB (emulator): big account of {} members, {} routers of {} members, {} contacts, {} history entries on one router ({} and {} when dispatching); small account of {} members, 1 router, 5 contacts, {} history entries",
        sizes.members, sizes.routers, sizes.pool, sizes.records, sizes.entries, sizes.records_at_dispatch, sizes.entries_at_dispatch, sizes.pool, sizes.small_entries
    );

    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let setup = Instant::now();

    // Small account: provisioned as a seed file is (the table is still empty: transactions are
    // quick on moto).
    let small_id = Uuid::new_v4();
    let small_router = Uuid::new_v4();
    let started = Instant::now();
    let small_contacts = contacts(small_id, Utc::now() - Duration::days(35), 0..5);
    let small_plan = provision(
        &table.store,
        &seed("small", small_id, &[small_router], sizes.pool, sizes.pool),
        &small_contacts,
        false,
    )
    .await;
    println!(
        "  small account provisioned in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Big account: the account item provisioned, members and routers (pools resolved by
    // `seed::load`) written directly.
    let big_id = Uuid::new_v4();
    let big_routers: Vec<Uuid> = (0..sizes.routers).map(|_| Uuid::new_v4()).collect();
    let started = Instant::now();
    let big_plan = provision(
        &table.store,
        &seed("big", big_id, &big_routers, sizes.members, sizes.pool),
        &[],
        true,
    )
    .await;
    let plan = &big_plan.accounts[0];
    assert_eq!(plan.routers[0].member_ids.len(), sizes.pool);
    println!(
        "  big account loaded and provisioned in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let member_item = |m: &Member| items::member(m).unwrap().1;
    seed_all(&table, "big account's members", &plan.members, member_item).await;
    let router_item = |r: &Router| items::router(r).unwrap().1;
    seed_all(&table, "big account's routers", &plan.routers, router_item).await;
    let records_from = Utc::now() - Duration::days(35);
    let first_contacts = contacts(big_id, records_from, 0..3);
    write_contacts(
        &table,
        &first_contacts,
        records_from,
        0..sizes.records_at_dispatch,
    )
    .await;

    let pool_of = |plan: &ProvisionPlan| -> Vec<Email> {
        plan.accounts[0].members[..sizes.pool]
            .iter()
            .map(|m| m.email.clone())
            .collect()
    };
    let big = Account {
        id: big_id,
        router: big_routers[0],
        pool: pool_of(&big_plan),
        contacts: first_contacts.iter().map(|r| r.id).collect(),
        entries: sizes.entries,
    };
    let small = Account {
        id: small_id,
        router: small_router,
        pool: pool_of(&small_plan),
        contacts: small_contacts.iter().map(|r| r.id).collect(),
        entries: sizes.small_entries,
    };
    let now = Utc::now();
    write_entries(
        &table,
        &big,
        now,
        "big router's history entries",
        sizes.entries,
        0..sizes.entries_at_dispatch,
    )
    .await;
    write_entries(
        &table,
        &small,
        now,
        "small router's history entries",
        sizes.small_entries,
        0..sizes.small_entries,
    )
    .await;
    // Every entry's counter, the ones written after the dispatches included.
    batch_write(&table, counters(&big, now, sizes.entries)).await;
    batch_write(&table, counters(&small, now, sizes.small_entries)).await;
    println!(
        "  setup of the dispatch phase: {:.1} s",
        setup.elapsed().as_secs_f64()
    );

    let faulty = Arc::new(FaultyStore::new(Arc::new(table.store.clone())));
    let meter = Meter {
        faulty: faulty.clone(),
        counter: table.counter.clone(),
    };
    let store: Arc<dyn Store> = faulty;
    let engine = DispatchEngine::new(
        store.clone(),
        Arc::new(SystemClock),
        Arc::new(CatalogueCache::default()),
    );
    let history = HistoryService::new(store, Arc::new(SystemClock));
    let mut small_costs = Costs::default();
    let mut big_costs = Costs::default();
    let started = Instant::now();
    dispatch_phase(&meter, &engine, &small, &mut small_costs).await;
    dispatch_phase(&meter, &engine, &big, &mut big_costs).await;
    println!(
        "  dispatch phase (4 dispatches, 2 explains) in {:.1} s (moto copies the table for every transaction item)",
        started.elapsed().as_secs_f64()
    );

    // The rest of the big account, written directly: no transaction follows.
    let started = Instant::now();
    write_contacts(
        &table,
        &first_contacts,
        records_from,
        sizes.records_at_dispatch..sizes.records,
    )
    .await;
    write_entries(
        &table,
        &big,
        now,
        "big router's history entries",
        sizes.entries,
        sizes.entries_at_dispatch..sizes.entries,
    )
    .await;
    println!(
        "  the rest of the big account written in {:.1} s; setup in all {:.1} s",
        started.elapsed().as_secs_f64(),
        setup.elapsed().as_secs_f64()
    );
    read_phase(&meter, &engine, &history, &small, &mut small_costs).await;
    read_phase(&meter, &engine, &history, &big, &mut big_costs).await;
    print_table(&sizes, &small_costs, &big_costs);
    table.delete().await;
}
