//! What the engine-level suites share: the store a test body runs on ([`Backend`], from the
//! shared harness, `shared::store::harness`, whose `shared::on_both_stores!` runs each body once
//! per store: `memory::<name>`, `dynamodb::<name>`; DynamoDB on the emulator of
//! `bash infra/scripts/test.sh`, a fresh table per test), and a snapshot of a whole store.

#![allow(dead_code)] // each suite uses part of it

pub mod snapshot;

pub use shared::store::harness::Backend;
