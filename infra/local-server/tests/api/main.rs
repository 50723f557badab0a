//! The local server's integration tests, one test binary (each file a module: linking one binary
//! instead of one per file saves most of the test build's time and disk). `iam_recording` (it sets
//! the process environment), `dispatch_cold_start` (it reads a process-wide count), `emf` and
//! `prometheus` (each installs the process's metrics recorder) stay binaries of their own beside
//! this directory.
//!
//! Run one suite with `cargo test -p local-server --test api <module>::`, e.g.
//! `cargo test -p local-server --test api sla_api::`.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod audit_api;
mod auth_limits;
mod binary_e2e;
mod client_lifecycle;
#[path = "../common/mod.rs"]
mod common;
mod compat_release;
mod concurrent_writes;
mod crm_pace_servers;
mod deadlines;
mod differential;
mod dispatch_api;
mod dispatch_by_id;
mod due_concurrency;
mod dynamodb_server;
mod encoding_api;
mod events;
mod hashing_cost;
mod history_api;
mod holiday_calendars_api;
mod idempotency_api;
mod limits_api;
mod lost_answers;
mod openapi;
mod parameter_schemas;
mod queue_e2e;
mod readme_crm;
mod records_api;
mod request_log;
mod request_schemas;
mod router_management_api;
mod security_api;
mod sla_api;
mod token_attacks;
mod two_instances;
mod users_routers_api;
mod webhooks_api;
