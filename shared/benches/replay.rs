//! What a what-if replay costs (figures in
//! `docs/performance.md`): one router with 10,000 history entries over 30 days (each a dispatch
//! of its own contact: 10,000 contacts of about 30 KB each), its draft replayed over those 30
//! days (`POST /routers/{id}/simulate`'s [`Replayer::simulate`]), on the embedded store or on
//! DynamoDB (the emulator).
//!
//! Measured: the replay's wall time, the DynamoDB requests it sends by operation and the items
//! they read (emulator), and the peak resident memory of the process during the replay (Linux:
//! `VmHWM` after resetting it with `/proc/self/clear_refs`, so the setup does not count), and
//! the peak of the bytes the process holds allocated during the replay above those it held
//! before (a counting global allocator: memory the setup freed and the allocator kept resident
//! hides allocations from the resident set, not from this count).
//! The setup (not measured) writes the records and entries directly (`BatchWriteItem`s of 25 on
//! the emulator), not through dispatch: the replay reads them the same way.
//!
//! ```sh
//! cargo bench -p shared --bench replay                                # embedded store
//! REPLAY_BENCH_STORE=dynamodb cargo bench -p shared --bench replay    # emulator (AWS_ENDPOINT_URL)
//! REPLAY_BENCH_ENTRIES=1000 cargo bench -p shared --bench replay      # another size
//! REPLAY_BENCH_RECORD_KB=1 cargo bench -p shared --bench replay       # records of about 1 KB
//! # records and companies at the record limit (300 KB), the draft matching accounts: each
//! # contact of its own company (a window of 500 entries names 500 companies)
//! REPLAY_BENCH_ENTRIES=2000 REPLAY_BENCH_RECORD_KB=300 REPLAY_BENCH_COMPANIES=1 \
//!   cargo bench -p shared --bench replay
//! # the same, every window's records in one read (as before reads were bounded in bytes)
//! REPLAY_BENCH_RECORDS_PER_READ=500 ... cargo bench -p shared --bench replay
//! ```
//!
//! With 10,000 entries it prints whether the targets are met: the replay's peak resident memory
//! at most 128 MiB above the process's before it, and on the emulator an answer
//! within 10 s (the targets of `docs/performance.md`, "What-if replay").
//!
//! Built and run quickly (200 entries) by `cargo test --benches`.
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout)] // a benchmark binary

use chrono::{Duration, TimeZone, Utc};
use serde_json::{json, Value};
use shared::clock::FixedClock;
use shared::dispatch::replay::Replayer;
use shared::fields::CatalogueCache;
use shared::model::{DispatchEntry, DispatchSource, ObjectType, Record, RouterDraft, RouterUser};
use shared::outbound::OutboundPolicy;
use shared::store::dynamodb::test_table::TestTable;
use shared::store::memory::MemoryStore;
use shared::store::Store;
use shared::types::etag::ETag;
use shared::types::{AccountId, Email, RouterId};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use uuid::Uuid;

/// The system allocator, counting the bytes held allocated now and their peak since the last
/// [`Counting::reset_peak`].
struct Counting {
    held: AtomicUsize,
    peak: AtomicUsize,
}

impl Counting {
    fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    fn reset_peak(&self) {
        self.peak.store(self.held(), Ordering::Relaxed);
    }
}

// SAFETY: every call is the system allocator's with the same arguments; the counts are only
// arithmetic beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = System.alloc(layout);
        if !ptr.is_null() {
            let held = self.held.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            self.peak.fetch_max(held, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        self.held.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = System.realloc(ptr, layout, new_size);
        if !new.is_null() {
            self.held.fetch_sub(layout.size(), Ordering::Relaxed);
            let held = self.held.fetch_add(new_size, Ordering::Relaxed) + new_size;
            self.peak.fetch_max(held, Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static ALLOCATED: Counting = Counting {
    held: AtomicUsize::new(0),
    peak: AtomicUsize::new(0),
};

const ACCOUNT: &str = "7a1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f71";
const ROUTER: &str = "7a1e0c3b-7d2f-4e61-9a84-000000000301";
const MEMBERS: usize = 6;

fn email(n: usize) -> String {
    format!("rep{n}@bench.example")
}

fn id<T: From<Uuid>>(text: &str) -> T {
    Uuid::parse_str(text).unwrap().into()
}

/// The account: `MEMBERS` members (the first works weekdays 08:00-18:00 UTC), a round-robin
/// router over all of them with a trigger on `country`.
fn seed() -> String {
    let members: Vec<Value> = (0..MEMBERS)
        .map(|n| {
            let mut m = json!({"id": Uuid::from_u128(0x7b00 + n as u128), "email": email(n), "time_zone": "UTC"});
            if n == 0 {
                m["working_hours"] = json!([{"days": "mon-fri", "start_date": "08:00", "end_date": "18:00"}]);
            }
            m
        })
        .collect();
    json!({"accounts": [{
        "id": ACCOUNT, "name": "Bench", "active": true,
        "users": members,
        "routers": [{
            "id": ROUTER, "name": "Inbound", "object_type": "contacts", "is_published": true,
            "settings": {"owner_field": "contact_owner", "distribution_model": "round robin",
                         "trigger": {"groups": [{"conditions": [{"field": "country", "operator": "not_equals", "value": "FR"}]}]}},
            "users": (0..MEMBERS).map(|n| json!({"email": email(n)})).collect::<Vec<Value>>(), "teams": []
        }]
    }]})
    .to_string()
}

/// Contact `n`, as dispatch left it (owned by whom its entry assigned), with `notes` of
/// `notes_bytes` characters (the bulk of the record: a long text the trigger never reads).
fn contact(
    n: usize, owner: Option<&str>, at: chrono::DateTime<Utc>, notes_bytes: usize, domains: usize,
) -> Record {
    let mut values: std::collections::BTreeMap<String, String> = [
        ("first_name", format!("Lead {n}")),
        ("last_name", "Bench".to_string()),
        ("email", format!("lead{n}@leads{}.example", n % domains)),
        ("country", if n % 10 == 9 { "FR" } else { "US" }.to_string()),
        ("job_title", "Head of Operations".to_string()),
        ("company_name", format!("Company {}", n % 211)),
        ("lifecycle_stage", "lead".to_string()),
        ("lead_status", "new".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    if let Some(owner) = owner {
        values.insert("contact_owner".into(), owner.to_string());
    }
    if notes_bytes > 0 {
        let line = format!("Call notes of lead {n}: asked about pricing, follow up next week. ");
        let notes: String = line.chars().cycle().take(notes_bytes).collect();
        values.insert("notes".into(), notes);
    }
    Record {
        id: Uuid::from_u128(0x01936b2a_7c00_7a00_8000_000000100000 + n as u128).into(),
        account_id: id(ACCOUNT),
        object_type: ObjectType::Contacts,
        values: values.into_iter().collect(),
        created_at: at - Duration::minutes(5),
        updated_at: at,
        archived_at: None,
        archived_by: None,
        version: 2,
    }
}

/// Company `k` of the domain `leads<k>.example`, owned by a member, with `notes` of
/// `notes_bytes` characters (for account matching: the replay reads it, keeps its owner).
fn company(k: usize, notes_bytes: usize) -> Record {
    let line = format!("Account notes of company {k}: renewal in March, two open tickets. ");
    let values = [
        ("name", format!("Company {k}")),
        ("website_url", format!("leads{k}.example")),
        ("company_owner", email(k % MEMBERS)),
        ("notes", line.chars().cycle().take(notes_bytes).collect()),
    ];
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    Record {
        id: Uuid::from_u128(0x01936b2a_7c00_7a00_8000_000000900000 + k as u128).into(),
        account_id: id(ACCOUNT),
        object_type: ObjectType::Companies,
        values: values
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        created_at: at,
        updated_at: at,
        archived_at: None,
        archived_by: None,
        version: 1,
    }
}

/// The history: `entries` dispatches spread evenly over the 30 days before `end`, each of its
/// own contact; every tenth contact is from France (`Trigger did not match`), the others were
/// assigned in turn.
fn history(
    entries: usize, end: chrono::DateTime<Utc>, notes_bytes: usize, domains: usize,
) -> (Vec<Record>, Vec<DispatchEntry>) {
    let span = Duration::days(30).num_milliseconds() - 1;
    let mut records = Vec::with_capacity(entries);
    let mut log = Vec::with_capacity(entries);
    let mut turn = 0usize;
    for n in 0..entries {
        let at =
            end - Duration::days(30) + Duration::milliseconds(span * n as i64 / entries as i64);
        let assigned = n % 10 != 9;
        let user = assigned.then(|| {
            turn += 1;
            email(turn % MEMBERS)
        });
        records.push(contact(n, user.as_deref(), at, notes_bytes, domains));
        log.push(DispatchEntry {
            id: Uuid::now_v7(),
            account_id: id(ACCOUNT),
            router_id: id(ROUTER),
            router_revision: 1,
            object_type: ObjectType::Contacts,
            object_id: records[n].id.to_string(),
            message: if assigned {
                "Owner assigned"
            } else {
                "Trigger did not match"
            }
            .into(),
            success: assigned,
            user: user.as_deref().map(|u| Email::parse(u).unwrap()),
            reason: assigned.then_some(shared::model::AssignmentReason::Rotation),
            previous_owner: None,
            field_name: assigned.then(|| "Contact owner".to_string()),
            owner_field: assigned.then(|| "contact_owner".to_string()),
            source: if n % 2 == 0 {
                DispatchSource::Api
            } else {
                DispatchSource::Queue
            },
            dispatched_at: at,
            crm_sync: None,
            sla: None,
            expires_at: at + Duration::days(400),
        });
    }
    (records, log)
}

/// Writes `items` with `BatchWriteItem`s of 25 (the service's limit), unprocessed ones again.
async fn batch_write(table: &TestTable, items: Vec<shared::store::dynamodb::items::Item>) {
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    for chunk in items.chunks(25) {
        let mut writes: Vec<WriteRequest> = chunk
            .iter()
            .map(|item| {
                WriteRequest::builder()
                    .put_request(
                        PutRequest::builder()
                            .set_item(Some(item.clone()))
                            .build()
                            .unwrap(),
                    )
                    .build()
            })
            .collect();
        while !writes.is_empty() {
            let out = table
                .store
                .client()
                .batch_write_item()
                .request_items(table.store.table_name(), writes)
                .send()
                .await
                .unwrap();
            writes = out
                .unprocessed_items
                .and_then(|mut u| u.remove(table.store.table_name()))
                .unwrap_or_default();
        }
    }
}

/// The process's peak resident set since the last [`reset_peak`], in MiB (Linux; 0 elsewhere).
fn peak_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The current resident set, in MiB.
fn resident_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Resets the peak resident set to the current one (Linux `clear_refs` 5).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let entries: usize = std::env::var("REPLAY_BENCH_ENTRIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 10_000 } else { 200 });
    let record_kb: usize = std::env::var("REPLAY_BENCH_RECORD_KB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let on_dynamodb = std::env::var("REPLAY_BENCH_STORE").as_deref() == Ok("dynamodb");
    // With companies, each contact is of its own domain and company (at most 500 in a window,
    // every one read); without, 97 domains and no company.
    let with_companies = std::env::var("REPLAY_BENCH_COMPANIES").as_deref() == Ok("1");
    let domains = if with_companies { entries.max(1) } else { 97 };
    let table = if on_dynamodb {
        Some(TestTable::create().await.unwrap_or_else(|e| panic!("{e}")))
    } else {
        None
    };
    let store: Arc<dyn Store> = match &table {
        Some(table) => Arc::new(table.store.clone()),
        None => Arc::new(MemoryStore::new()),
    };
    // Setup (not measured).
    let end = Utc.with_ymd_and_hms(2026, 11, 24, 12, 0, 0).unwrap();
    let plan =
        shared::seed::load(&seed(), end - Duration::days(60), OutboundPolicy::LOCAL).unwrap();
    store.provision(&plan).await.unwrap();
    let notes_bytes = (record_kb * 1000).saturating_sub(400);
    let (records, log) = history(entries, end, notes_bytes, domains);
    if with_companies {
        let catalogue = shared::fields::catalogue::Catalogue::standard(ObjectType::Companies);
        for k in 0..domains {
            let c = company(k, notes_bytes);
            let keys = shared::records::unique_keys(&catalogue, &c);
            store.create_record(&c, &keys).await.unwrap();
        }
    }
    let record_bytes = records
        .iter()
        .map(|r| serde_json::to_vec(&r.values).map_or(0, |v| v.len()))
        .sum::<usize>()
        / records.len().max(1);
    let setup = Instant::now();
    match &table {
        Some(table) => {
            let mut items = Vec::with_capacity(entries * 2);
            for r in &records {
                items.push(shared::store::dynamodb::items::record(r).unwrap().1);
            }
            for e in &log {
                items.push(shared::store::dynamodb::items::dispatch_entry(e).unwrap().1);
            }
            batch_write(table, items).await;
        }
        None => {
            for r in &records {
                store.create_record(r, &[]).await.unwrap();
            }
            for e in &log {
                store
                    .record_dispatch(e, None, None, None, &Default::default())
                    .await
                    .unwrap();
            }
        }
    }
    // The draft: the rotation without the last two members.
    let router = store
        .get_router(id(ACCOUNT), id(ROUTER))
        .await
        .unwrap()
        .unwrap();
    let mut config = router.config();
    config.users = (0..MEMBERS - 2)
        .map(|n| RouterUser {
            email: Email::parse(&email(n)).unwrap(),
            percentage: None,
        })
        .collect();
    config
        .member_ids
        .retain(|m| config.users.iter().any(|u| u.email == m.email));
    if with_companies {
        if let Some(settings) = config.settings.as_mut() {
            settings.account_matching = true;
        }
    }
    let draft = RouterDraft {
        router_id: router.id,
        account_id: router.account_id,
        based_on_revision: 1,
        config,
        updated_at: end,
        updated_by: "bench".into(),
        etag: ETag::new_random(),
    };
    store
        .put_router_draft(
            &draft,
            None,
            router.version,
            &Default::default(),
            None,
            None,
        )
        .await
        .unwrap();
    println!(
        "What-if replay: {entries} history entries of one router over 30 days, records of {:.1} KB of fields each{}, {} store (setup {:.1} s)",
        record_bytes as f64 / 1000.0,
        if with_companies {
            format!(", matching {domains} companies of the same size")
        } else {
            String::new()
        },
        if on_dynamodb { "DynamoDB (emulator)" } else { "embedded" },
        setup.elapsed().as_secs_f64()
    );
    drop((records, log, plan));

    // Its two reads alone, for the breakdown: the window's entries, then their records.
    let walk = Instant::now();
    let mut after = None;
    let mut ids = Vec::new();
    loop {
        let page = store
            .list_router_dispatches_between(
                id(ACCOUNT),
                id(ROUTER),
                end - Duration::days(30),
                end,
                after.as_ref(),
                shared::dispatch::replay::REPLAY_WINDOW,
            )
            .await
            .unwrap();
        ids.extend(page.items.iter().filter_map(DispatchEntry::record_id));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let walked = walk.elapsed();
    let read = Instant::now();
    let mut found = 0;
    for window in ids.chunks(shared::dispatch::replay::REPLAY_WINDOW) {
        found += store.get_records(id(ACCOUNT), window).await.unwrap().len();
    }
    let records_read = read.elapsed();
    println!(
        "  alone: the history walk {:.3} s ({} entries), the records {:.3} s ({} records, a window at a time)",
        walked.as_secs_f64(),
        ids.len(),
        records_read.as_secs_f64(),
        found
    );
    drop(ids);

    // The replay, measured.
    let clock = Arc::new(FixedClock::new(end));
    let mut replayer = Replayer::new(store.clone(), clock, Arc::new(CatalogueCache::default()));
    // REPLAY_BENCH_RECORDS_PER_READ=500: the whole window's records in one read, as before
    // reads were bounded in bytes (for the side-by-side figure of docs/performance.md).
    if let Some(n) = std::env::var("REPLAY_BENCH_RECORDS_PER_READ")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        replayer = replayer.with_records_per_read(n);
        println!("  records per read: {n}");
    }
    if let Some(table) = &table {
        table.counter.take();
        table.counter.take_items_read();
    }
    let before = resident_mib();
    let held_before = ALLOCATED.held();
    reset_peak();
    ALLOCATED.reset_peak();
    let started = Instant::now();
    let answer = replayer
        .simulate(
            id::<AccountId>(ACCOUNT),
            id::<RouterId>(ROUTER),
            Ok(serde_json::Map::new()),
        )
        .await
        .unwrap();
    let time = started.elapsed();
    let peak = peak_mib();
    let heap_above = ALLOCATED.peak().saturating_sub(held_before) as f64 / (1 << 20) as f64;
    assert_eq!(answer.replayed as usize, entries.min(10_000));
    println!(
        "  replayed {} (truncated {}), changed {}, outcomes {:?}",
        answer.replayed, answer.truncated, answer.changed, answer.outcomes
    );
    println!(
        "  wall time: {:.3} s ({:.1} µs per entry)",
        time.as_secs_f64(),
        time.as_secs_f64() * 1e6 / entries.max(1) as f64
    );
    let above = (peak - before).max(0.0);
    println!("  resident memory: {before:.1} MiB before, peak {peak:.1} MiB during the replay (+{above:.1} MiB)");
    println!(
        "  allocated: {:.1} MiB held before, peak {:.1} MiB above it during the replay",
        held_before as f64 / (1 << 20) as f64,
        heap_above
    );
    if benching && entries >= 10_000 {
        println!(
            "  target: at most 128 MiB above the memory before the replay: {}",
            if above <= 128.0 && heap_above <= 128.0 {
                "met"
            } else {
                "NOT met"
            }
        );
    }
    if let Some(table) = table {
        let requests = table.counter.take();
        let items = table.counter.take_items_read();
        let total: u64 = requests.values().sum();
        println!(
            "  DynamoDB requests: {total}: {}",
            requests
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!(
            "  items read: {items} ({:.2} per entry)",
            items as f64 / entries.max(1) as f64
        );
        if benching && entries >= 10_000 {
            println!(
                "  target: an answer within 10 s on the emulator: {}",
                if time.as_secs_f64() <= 10.0 {
                    "met"
                } else {
                    "NOT met"
                }
            );
        }
        table.delete().await;
    }
}
