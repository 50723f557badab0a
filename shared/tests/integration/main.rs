//! The shared crate's integration tests, one test binary (each file a module: linking one binary
//! instead of one per file saves most of the test build's time and disk). The suites that set
//! process-wide state (environment variables, the global allocator, the metrics recorder) stay
//! binaries of their own beside this directory: `aws_secrets`, `deps_env`, `outbound_proxy`,
//! `parser_fuzz`, `telemetry_backpressure`, `xray_propagation`.
//!
//! Run one suite with `cargo test -p shared --test integration <module>::`, e.g.
//! `cargo test -p shared --test integration store_contract::`.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;
mod crm_parsers;
mod crm_salesforce;
mod crm_sync;
mod dispatch_engine;
mod due_policy;
mod due_work;
mod dynamodb_conflict_retry;
mod dynamodb_provisioning;
mod dynamodb_request_counts;
mod explain;
mod history;
mod import_cycles;
mod item_size;
mod layering;
mod outbound_guard;
mod replay;
mod router_store;
mod seed_loader;
mod sla;
mod sqs_handoff;
mod store_contract;
mod tally;
mod webhook_delivery;
mod webhook_errors;
