//! The dispatch function's cold start builds no outbound HTTP client (it is built at
//! the first CRM sync: `docs/performance.md`), and its instance builds one in all (not one for
//! the engine and a second that the CRM sync then replaces), kept for every later sync. Alone in
//! its test binary: the count is process-wide.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use shared::dispatch::{AccountContext, DispatchRequest};
use shared::outbound::CLIENTS_BUILT;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Initech's router, synced to its CRM, and two of its contacts.
const CRM_ROUTER: &str = "f6b7c8d9-e0f1-4a2b-9c34-d5e6f7a8b920";
const CONTACTS: [&str; 2] = [
    "01936b2a-7c00-7a00-8000-000000000021",
    "01936b2a-7c00-7a00-8000-000000000022",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatch_cold_start_builds_no_http_client_and_its_crm_syncs_build_one() {
    let (fake, base) = fake_crm::FakeCrm::start_demo().await.unwrap();
    let deps = local_server::with_local_keys(
        shared::deps::Deps::new(std::sync::Arc::new(
            shared::store::memory::MemoryStore::new(),
        ))
        .with_outbound(shared::outbound::OutboundPolicy::LOCAL),
        None,
    )
    .unwrap();
    let seed = local_server::DEMO_SEED.replace("http://127.0.0.1:4010", &base);
    let plan = shared::seed::load(&seed, deps.clock.now(), deps.outbound).unwrap();
    shared::seed::provision(deps.store.as_ref(), deps.sealer().unwrap().as_ref(), plan)
        .await
        .unwrap();

    // What the function's main builds at cold start (on deps of its own, so that one engine
    // alone runs the syncs below).
    let cold = local_server::with_local_keys(
        shared::deps::Deps::new(std::sync::Arc::new(
            shared::store::memory::MemoryStore::new(),
        )),
        None,
    )
    .unwrap();
    let before = CLIENTS_BUILT.load(Ordering::SeqCst);
    let _handler = dispatch_function::LambdaHandler::new(&cold).unwrap();
    assert_eq!(
        CLIENTS_BUILT.load(Ordering::SeqCst) - before,
        0,
        "a cold start builds no HTTP client"
    );

    let before = CLIENTS_BUILT.load(Ordering::SeqCst);
    let state = dispatch_function::DispatchState::new(&deps).unwrap();
    assert_eq!(CLIENTS_BUILT.load(Ordering::SeqCst) - before, 0);

    for contact in CONTACTS {
        let request = DispatchRequest::parse(
            format!(r#"{{"router_id": "{CRM_ROUTER}", "object_id": "{contact}"}}"#).as_bytes(),
        )
        .unwrap();
        let outcome = state
            .engine
            .dispatch(AccountContext::RouterOwner, &request, None)
            .await
            .unwrap();
        assert_eq!(outcome.label(), "assigned", "{contact}");
    }
    // Each assignment's CRM sync runs after the answer (a timer of this process).
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while fake.owner_updates().len() < CONTACTS.len() {
        assert!(std::time::Instant::now() < deadline, "the CRM syncs ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        CLIENTS_BUILT.load(Ordering::SeqCst) - before,
        1,
        "the first sync built the instance's one client, the second reused it"
    );
}
