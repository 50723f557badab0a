//! What the engine-level suites share: the two stores a test body runs on, and the macro that
//! runs each body once per store (`memory::<name>`, `dynamodb::<name>`; DynamoDB on the emulator
//! of `bash infra/scripts/test.sh`, a fresh table per test).

#![allow(dead_code)] // each suite uses part of it

pub mod snapshot;

use shared::store::dynamodb::test_table::TestTable;
use shared::store::memory::MemoryStore;
use shared::store::Store;
use std::sync::Arc;

/// Where a test runs: the embedded store, or a fresh DynamoDB table on the emulator.
#[derive(Debug, Clone, Copy)]
pub enum Backend {
    /// The embedded store.
    Memory,
    /// A fresh table on the emulator.
    Dynamo,
}

impl Backend {
    /// A fresh, empty store of this kind.
    pub async fn store(self) -> Arc<dyn Store> {
        match self {
            Backend::Memory => Arc::new(MemoryStore::new()),
            Backend::Dynamo => Arc::new(
                TestTable::create()
                    .await
                    .unwrap_or_else(|e| panic!("{e}"))
                    .store,
            ),
        }
    }
}

/// Runs each test body `async fn name(backend: Backend)` once per store: `memory::<name>` and
/// `dynamodb::<name>`. The body's `Backend` is the one in scope where the macro is used.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(super::Backend::Memory).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(super::Backend::Dynamo).await;
                }
            )*
        }
    };
}
