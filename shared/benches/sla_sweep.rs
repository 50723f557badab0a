//! What SLA checks cost (figures in `docs/performance.md`): N checks due at once
//! (default 10,000), spread over R routers (default 20), swept and run as the local server's
//! sweeper and timers would, on the embedded store or on DynamoDB (the emulator).
//!
//! On the emulator the full run defaults to 100 checks: moto copies its tables for every
//! `TransactWriteItems` (to roll a cancelled one back) and serializes DynamoDB requests, so
//! 10,000 dispatches and reassignments take most of an hour and many GB of its memory. The sweep
//! of 10,000 checks due at once is measured there on its own (`SLA_BENCH_SWEPT`, default
//! 10,000): that many check items written directly (`BatchWriteItem`), due at one instant, then
//! one `sweep_all` over them.
//!
//! 1. Setup (not measured): an account with 3 members, R round-robin routers with an SLA of one
//!    minute, N contacts, each dispatched once (each dispatch stores its check).
//! 2. The clock moves past the due time, and one sweep hands every check on (`sweep_all`, rounds
//!    of 500 as the local server and the dispatch function do): its store calls and requests, and
//!    its time.
//! 3. Every handed-on check runs, 16 at once (as the local server's timers and a queue's
//!    batches bound them): store calls and requests per check, and the time to run them all.
//!    Every check must end `reassigned` (the record unworked, another member free).
//!
//! ```sh
//! cargo bench -p shared --bench sla_sweep                               # embedded store
//! SLA_BENCH_STORE=dynamodb cargo bench -p shared --bench sla_sweep      # emulator (AWS_ENDPOINT_URL):
//!                                                                       # 10,000 swept, 100 run
//! SLA_BENCH_CHECKS=1000 SLA_BENCH_ROUTERS=10 cargo bench -p shared --bench sla_sweep
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout)] // a benchmark binary

use chrono::{Duration, Utc};
use serde_json::{json, Value};
use shared::clock::{Clock, FixedClock};
use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, Outcome};
use shared::due::{DueMessage, DueSettings, DueWorker, Handoff, RunOutcome};
use shared::fields::CatalogueCache;
use shared::outbound::OutboundPolicy;
use shared::secrets::LocalSealer;
use shared::sla::{SlaChecks, SlaMinute};
use shared::store::dynamodb::test_table::TestTable;
use shared::store::dynamodb::RequestCounter;
use shared::store::faulty::FaultyStore;
use shared::store::memory::MemoryStore;
use shared::store::Store;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use uuid::Uuid;

const ACCOUNT: &str = "7a1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f70";

/// Hand-offs kept for the bench to run (the local server's timers, a queue).
#[derive(Default)]
struct Collected(Mutex<Vec<DueMessage>>);

#[async_trait::async_trait]
impl Handoff for Collected {
    async fn hand_off(&self, message: &DueMessage) -> Result<(), shared::error::BoxError> {
        self.0.lock().unwrap().push(message.clone());
        Ok(())
    }
    fn grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs(2)
    }
    fn reach(&self) -> Option<std::time::Duration> {
        None
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn router_id(r: usize) -> String {
    format!("7a1e0c3b-7d2f-4e61-9a84-{:012x}", 0x100 + r)
}

fn contact(n: usize) -> String {
    format!("01936b2a-7c00-7a00-8000-{:012x}", 0x7_0000 + n)
}

fn seed(checks: usize, routers: usize) -> String {
    let members = ["a@bench.example", "b@bench.example", "c@bench.example"];
    json!({"accounts": [{
        "id": ACCOUNT, "name": "Bench", "active": true,
        "users": members.iter().enumerate().map(|(i, m)| json!({"id": Uuid::from_u128(0x7a00 + i as u128), "email": m})).collect::<Vec<Value>>(),
        "routers": (0..routers).map(|r| json!({
            "id": router_id(r), "name": format!("R{r}"), "object_type": "contacts", "is_published": true,
            "settings": {"owner_field": "contact_owner", "distribution_model": "round robin", "ignore_working_hours": true,
                         "sla": {"minutes": 1, "worked_field": "lead_status", "worked_values": ["connected"]}},
            "users": members.iter().map(|m| json!({"email": m})).collect::<Vec<Value>>(), "teams": []
        })).collect::<Vec<Value>>(),
        // No unique key: one item per record to provision.
        "records": {"contacts": (0..checks).map(|n| json!({"id": contact(n), "fields": {"first_name": format!("Lead {n}")}})).collect::<Vec<Value>>()}
    }]})
    .to_string()
}

/// Port calls (by method) counted by the decorator, and DynamoDB requests (by operation).
struct Counters {
    faulty: Arc<FaultyStore>,
    requests: Option<RequestCounter>,
}

impl Counters {
    fn start(&self) {
        if let Some(r) = &self.requests {
            r.take();
        }
        self.faulty.faults.rounds.start_calls_only();
    }

    fn stop(&self) -> (BTreeMap<&'static str, usize>, BTreeMap<String, u64>) {
        let (_, calls) = self.faulty.faults.rounds.stop();
        let requests = self.requests.as_ref().map(|r| r.take()).unwrap_or_default();
        (calls, requests)
    }
}

fn per(n: usize, total: u64) -> String {
    format!("{:.2}", total as f64 / n as f64)
}

fn print_counts(
    title: &str, n: usize, calls: &BTreeMap<&'static str, usize>, requests: &BTreeMap<String, u64>,
) {
    println!("  {title}");
    let total_calls: usize = calls.values().sum();
    if total_calls > 0 {
        println!(
            "    store calls: {total_calls} ({} per check): {}",
            per(n, total_calls as u64),
            calls
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !requests.is_empty() {
        let total: u64 = requests.values().sum();
        println!(
            "    DynamoDB requests: {total} ({} per check): {}",
            per(n, total),
            requests
                .iter()
                .map(|(k, v)| format!("{k} {v} ({})", per(n, *v)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// The sweep of `swept` SLA check items due at one instant, on a table of their own (emulator):
/// the items written directly, then one `sweep_all` as the sweeper makes it.
async fn sweep_alone(swept: usize) {
    use shared::model::due::{DueId, DueItem, DueKind};
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let store: Arc<dyn Store> = Arc::new(table.store.clone());
    let due_at = Utc::now() - Duration::minutes(5);
    let items: Vec<DueItem> = (0..swept)
        .map(|n| {
            DueItem::new(
                DueId::new(DueKind::SlaCheck, Uuid::now_v7().to_string()),
                json!({"entry": {"router_id": router_id(n % 20), "dispatched_at": due_at, "id": Uuid::now_v7()}, "started": null, "reassignments": 0}),
                due_at,
                due_at,
            )
        })
        .collect();
    for chunk in items.chunks(25) {
        let writes = chunk
            .iter()
            .map(|item| {
                let (_, attributes) = shared::store::dynamodb::items::due::due_item(item).unwrap();
                aws_sdk_dynamodb::types::WriteRequest::builder()
                    .put_request(
                        aws_sdk_dynamodb::types::PutRequest::builder()
                            .set_item(Some(attributes))
                            .build()
                            .unwrap(),
                    )
                    .build()
            })
            .collect();
        table
            .store
            .client()
            .batch_write_item()
            .request_items(table.store.table_name(), writes)
            .send()
            .await
            .unwrap();
    }
    table.counter.take();
    let handed = Arc::new(Collected::default());
    let worker = DueWorker::new(
        store,
        Arc::new(shared::clock::SystemClock),
        DueSettings::default(),
        handed.clone(),
    );
    let started = Instant::now();
    let report = worker
        .sweep_all(500, std::time::Duration::from_secs(3600))
        .await
        .unwrap();
    let time = started.elapsed();
    let requests = table.counter.take();
    let scanned = table.counter.take_scanned();
    assert_eq!(report.handed_on, swept, "{report:?}");
    println!(
        "SLA checks: {swept} due at once, swept alone on DynamoDB (emulator): handed on in {:.2} s ({:.2} ms per check)",
        time.as_secs_f64(),
        time.as_secs_f64() * 1000.0 / swept as f64
    );
    print_counts(
        "sweep (index reads and re-arms)",
        swept,
        &BTreeMap::new(),
        &requests,
    );
    println!(
        "    index items read by the Queries: {scanned} ({} per check)",
        per(swept, scanned)
    );
    table.delete().await;
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing and must stay quick.
    let benching = std::env::args().any(|a| a == "--bench");
    let on_dynamodb = std::env::var("SLA_BENCH_STORE").as_deref() == Ok("dynamodb");
    let full = match (benching, on_dynamodb) {
        (false, _) => 30,
        (true, false) => 10_000,
        (true, true) => 100,
    };
    let checks = env("SLA_BENCH_CHECKS", full);
    let routers = env("SLA_BENCH_ROUTERS", 20).clamp(1, checks.max(1));
    let table = if on_dynamodb {
        let swept = env("SLA_BENCH_SWEPT", if benching { 10_000 } else { 30 });
        sweep_alone(swept).await;
        Some(TestTable::create().await.unwrap_or_else(|e| panic!("{e}")))
    } else {
        None
    };
    let (inner, requests): (Arc<dyn Store>, Option<RequestCounter>) = match &table {
        Some(table) => (Arc::new(table.store.clone()), Some(table.counter.clone())),
        None => (Arc::new(MemoryStore::new()), None),
    };
    let faulty = Arc::new(FaultyStore::new(inner));
    let store: Arc<dyn Store> = faulty.clone();
    let counters = Counters { faulty, requests };
    let at = Utc::now() - Duration::hours(1);
    let clock = Arc::new(FixedClock::new(at));
    println!(
        "SLA checks: {checks} due at once over {routers} routers, {} store",
        if on_dynamodb {
            "DynamoDB (emulator)"
        } else {
            "embedded"
        }
    );

    let started = Instant::now();
    let plan = shared::seed::load(
        &seed(checks, routers),
        at - Duration::days(1),
        OutboundPolicy::LOCAL,
    )
    .unwrap();
    shared::seed::provision(store.as_ref(), &LocalSealer::development(), plan)
        .await
        .unwrap();
    let handed = Arc::new(Collected::default());
    let worker = DueWorker::new(
        store.clone(),
        clock.clone(),
        DueSettings {
            lease: std::time::Duration::from_secs(900),
        },
        handed.clone(),
    );
    let engine = Arc::new(
        DispatchEngine::new(
            store.clone(),
            clock.clone(),
            Arc::new(CatalogueCache::default()),
        )
        .with_due(worker.clone())
        .with_sla_minute(SlaMinute::of(std::time::Duration::from_secs(60)))
        .with_deadline(std::time::Duration::from_secs(120)),
    );
    SlaChecks::register(&engine);
    // One task per router: dispatches on different routers run together.
    let mut setup = tokio::task::JoinSet::new();
    for r in 0..routers {
        let engine = engine.clone();
        setup.spawn(async move {
            for n in (r..checks).step_by(routers) {
                let request = DispatchRequest {
                    router_id: router_id(r),
                    object_id: contact(n),
                    account_id: None,
                };
                let outcome = engine
                    .dispatch(
                        AccountContext::Token(ACCOUNT.parse::<Uuid>().unwrap().into()),
                        &request,
                        None,
                    )
                    .await
                    .unwrap();
                assert!(matches!(outcome, Outcome::Assigned(_)), "{outcome:?}");
            }
        });
    }
    while let Some(done) = setup.join_next().await {
        done.unwrap();
    }
    handed.0.lock().unwrap().clear(); // the timers of the dispatching process died with it
    println!(
        "  setup (provisioning and {checks} dispatches): {:.1} s",
        started.elapsed().as_secs_f64()
    );

    clock.set(clock.now() + Duration::seconds(61));
    counters.start();
    let started = Instant::now();
    let report = worker
        .sweep_all(500, std::time::Duration::from_secs(3600))
        .await
        .unwrap();
    let sweep_time = started.elapsed();
    let (calls, requests) = counters.stop();
    assert_eq!(report.handed_on, checks, "{report:?}");
    println!(
        "  sweep: {} found, {} handed on in {:.2} s ({:.3} ms per check)",
        report.found,
        report.handed_on,
        sweep_time.as_secs_f64(),
        sweep_time.as_secs_f64() * 1000.0 / checks as f64
    );
    print_counts("sweep (index reads and re-arms)", checks, &calls, &requests);

    let messages: Vec<DueMessage> = std::mem::take(&mut *handed.0.lock().unwrap());
    let messages = Arc::new(Mutex::new(messages));
    counters.start();
    let started = Instant::now();
    let mut runners = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let worker = worker.clone();
        let messages = messages.clone();
        runners.spawn(async move {
            let mut reassigned = 0usize;
            loop {
                let Some(message) = messages.lock().unwrap().pop() else {
                    return reassigned;
                };
                if let RunOutcome::Ran(ran) =
                    worker.run(&message.id, message.attempt).await.unwrap()
                {
                    if ran.outcome == "reassigned" {
                        reassigned += 1;
                    }
                }
            }
        });
    }
    let mut reassigned = 0;
    while let Some(done) = runners.join_next().await {
        reassigned += done.unwrap();
    }
    let run_time = started.elapsed();
    let (calls, requests) = counters.stop();
    assert_eq!(reassigned, checks, "every check reassigns its record");
    println!(
        "  checks: {reassigned} reassigned in {:.2} s ({:.2} ms per check, {:.0} checks/s, 16 at once)",
        run_time.as_secs_f64(),
        run_time.as_secs_f64() * 1000.0 / checks as f64,
        checks as f64 / run_time.as_secs_f64()
    );
    print_counts(
        "checks (claim, verdict, reassignment)",
        checks,
        &calls,
        &requests,
    );
}
