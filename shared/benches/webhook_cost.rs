//! What an event adds to a dispatch (figures in `docs/performance.md`): the same
//! assignment on the embedded store with 0, 1 and 3 webhook subscriptions of the account, side by
//! side. The deliveries are handed to a hand-off that keeps nothing (the sending happens after the
//! answer, elsewhere), so this is the cost the dispatch itself pays: reading the subscriptions in
//! the first wave and writing one delivery and one due item per subscription in the assignment's
//! transaction. Before the timings, the store calls of one dispatch are counted for each case.
//!
//! `cargo bench -p shared --bench webhook_cost`
#![allow(missing_docs, clippy::unwrap_used)] // a benchmark binary

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::json;
use shared::clock::SystemClock;
use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, Outcome};
use shared::due::{DueMessage, DueSettings, DueWorker, Handoff};
use shared::fields::CatalogueCache;
use shared::outbound::OutboundPolicy;
use shared::secrets::LocalSealer;
use shared::store::faulty::FaultyStore;
use shared::store::memory::MemoryStore;
use shared::store::Store;
use shared::webhooks::WebhookService;
use std::sync::Arc;
use std::time::Duration;

const ACCOUNT: &str = "7d1e2f30-4a5b-4c6d-8e7f-901a2b3c4d50";
const ROUTER: &str = "7d1e2f30-4a5b-4c6d-8e7f-901a2b3c4d51";
const CONTACT: &str = "01936b2a-7c00-7a00-8000-00000000b001";

/// Keeps nothing: the deliveries' sending is not the dispatch's cost.
struct Nowhere;

#[async_trait::async_trait]
impl Handoff for Nowhere {
    async fn hand_off(&self, _message: &DueMessage) -> Result<(), shared::error::BoxError> {
        Ok(())
    }
    fn grace(&self) -> Duration {
        Duration::from_secs(60)
    }
    fn reach(&self) -> Option<Duration> {
        None
    }
}

fn seed() -> String {
    json!({"accounts": [{
        "id": ACCOUNT, "name": "Bench", "active": true,
        "users": [
            {"id": "7d1e2f30-4a5b-4c6d-8e7f-901a2b3c4d60", "email": "a@bench.example",
             "can_receive_notifications": true, "notification_preferences": ["assignment"]},
            {"id": "7d1e2f30-4a5b-4c6d-8e7f-901a2b3c4d61", "email": "b@bench.example"}
        ],
        "routers": [{
            "id": ROUTER, "name": "Every lead", "object_type": "contacts", "is_published": true,
            "settings": {"owner_field": "contact_owner", "distribution_model": "round robin", "overwrite": true},
            "users": [{"email": "a@bench.example"}, {"email": "b@bench.example"}], "teams": []
        }],
        "records": {"contacts": [{"id": CONTACT, "fields": {"email": "lead@prospect.example"}}]}
    }]})
    .to_string()
}

struct Case {
    engine: DispatchEngine,
    faulty: Arc<FaultyStore>,
}

async fn case(subscriptions: usize) -> Case {
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let plan = shared::seed::load(&seed(), chrono::Utc::now(), OutboundPolicy::LOCAL).unwrap();
    shared::seed::provision(memory.as_ref(), &LocalSealer::development(), plan)
        .await
        .unwrap();
    let faulty = Arc::new(FaultyStore::new(memory));
    let store: Arc<dyn Store> = faulty.clone();
    let clock = Arc::new(SystemClock);
    let due = DueWorker::new(
        store.clone(),
        clock.clone(),
        DueSettings::default(),
        Arc::new(Nowhere),
    );
    let service = WebhookService::new(
        store.clone(),
        clock.clone(),
        Arc::new(LocalSealer::development()),
        OutboundPolicy::LOCAL,
        due.clone(),
    );
    for n in 0..subscriptions {
        let body = json!({"url": format!("https://hooks{n}.example.com/routing"), "events": ["assignment.created"]});
        service
            .create(
                shared::audit::Actor {
                    account_id: ACCOUNT.parse::<uuid::Uuid>().unwrap().into(),
                    sub: "bench",
                },
                body.as_object().unwrap(),
            )
            .await
            .unwrap();
    }
    let engine =
        DispatchEngine::new(store, clock, Arc::new(CatalogueCache::default())).with_due(due);
    Case { engine, faulty }
}

async fn dispatch(engine: &DispatchEngine) {
    let request = DispatchRequest {
        router_id: ROUTER.into(),
        object_id: CONTACT.into(),
        account_id: None,
    };
    let outcome = engine
        .dispatch(
            AccountContext::Token(ACCOUNT.parse::<uuid::Uuid>().unwrap().into()),
            &request,
            None,
        )
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Assigned(_)), "{outcome:?}");
}

fn webhook_cost(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cases: Vec<(usize, Case)> = [0, 1, 3]
        .into_iter()
        .map(|n| (n, runtime.block_on(case(n))))
        .collect();
    for (n, case) in &cases {
        runtime.block_on(dispatch(&case.engine)); // warms the caches
        case.faulty.faults.rounds.start();
        runtime.block_on(dispatch(&case.engine));
        let (rounds, calls) = case.faulty.faults.rounds.stop();
        println!("{n} subscription(s): {rounds} sequential store rounds, calls {calls:?}");
    }
    let mut group = c.benchmark_group("dispatch with webhook subscriptions");
    for (n, case) in &cases {
        group.bench_with_input(BenchmarkId::from_parameter(n), case, |b, case| {
            b.to_async(&runtime).iter(|| dispatch(&case.engine));
        });
    }
    group.finish();
}

criterion_group!(benches, webhook_cost);
criterion_main!(benches);
