//! The dispatch function's cold start builds one outbound HTTP client (issue 23 point 11: the
//! engine used to build a second one that the CRM sync then replaced). Alone in its test binary:
//! the count is process-wide.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use shared::outbound::CLIENTS_BUILT;
use std::sync::atomic::Ordering;

#[tokio::test]
async fn a_dispatch_cold_start_builds_one_http_client() {
    let deps = local_server::with_local_keys(
        shared::deps::Deps::new(std::sync::Arc::new(
            shared::store::memory::MemoryStore::new(),
        )),
        None,
    )
    .unwrap();
    let before = CLIENTS_BUILT.load(Ordering::SeqCst);
    let _handler = dispatch_function::LambdaHandler::new(&deps).unwrap();
    assert_eq!(CLIENTS_BUILT.load(Ordering::SeqCst) - before, 1);
}
