//! The harness of the tests that run each body on both stores (feature `test-util`): [`Backend`]
//! names a store, and [`crate::on_both_stores!`] makes each body two tests, `memory::<name>`
//! and `dynamodb::<name>`, the latter on a DynamoDB table of its own on the emulator named by
//! `AWS_ENDPOINT_URL` (`bash infra/scripts/test.sh` starts it). The store contract, the engine
//! suites of `shared/tests` and the HTTP suites of `infra/local-server/tests` all run through it.

use super::dynamodb::test_table::TestTable;
use super::memory::MemoryStore;
use super::Store;
use std::future::Future;
use std::sync::Arc;

/// Where a test runs: the embedded store, or a fresh DynamoDB table on the emulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded store.
    Memory,
    /// A fresh table on the emulator.
    Dynamo,
}

impl Backend {
    /// A fresh, empty store of this kind (its DynamoDB table is left to the emulator's end).
    ///
    /// Panics when the table cannot be created, with
    /// [`super::dynamodb::test_table::EMULATOR_MISSING`] when no emulator is configured.
    pub async fn store(self) -> Arc<dyn Store> {
        self.fresh().await.0
    }

    /// A fresh, empty store of this kind, and on DynamoDB its table (for [`TestTable::delete`]
    /// when the test is over).
    ///
    /// Panics as [`Self::store`].
    pub async fn fresh(self) -> (Arc<dyn Store>, Option<TestTable>) {
        match self {
            Backend::Memory => (Arc::new(MemoryStore::new()), None),
            Backend::Dynamo => {
                let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
                (Arc::new(table.store.clone()), Some(table))
            }
        }
    }

    /// Runs `body` on a fresh store of this kind, then deletes its DynamoDB table (the emulator
    /// copies every table at each transaction, so a finished test leaves none behind).
    pub async fn run<F, Fut>(self, body: F)
    where
        F: FnOnce(Arc<dyn Store>) -> Fut,
        Fut: Future<Output = ()>,
    {
        let (store, table) = self.fresh().await;
        body(store).await;
        if let Some(table) = table {
            table.delete().await;
        }
    }
}

/// Makes each test body two tests, `memory::<name>` and `dynamodb::<name>` (one
/// `#[tokio::test]` each, on a multi-thread runtime), in the module where it is used (once per
/// module: it declares `mod memory` and `mod dynamodb` there). Three forms, by what a body takes:
///
/// - `on_both_stores!(a, b)`: `async fn a(backend: Backend)`; the body makes its stores with
///   [`Backend::store`] (their tables stay until the emulator stops);
/// - `on_both_stores!(store: a, b)`: `async fn a(store: Arc<dyn Store>)`, a fresh store whose
///   table is deleted after the body ([`Backend::run`]);
/// - `on_both_stores!(with setup: a, b)`: `async fn a(x: X)` with what
///   `async fn setup(store: Arc<dyn Store>) -> X` (in the same module) makes of a fresh store,
///   e.g. the application over it; the table is deleted after the body.
///
/// `threads = n;` before the form sets the runtime's worker threads (4 without it).
#[macro_export]
macro_rules! on_both_stores {
    (@call (backend) $backend:expr, $name:ident) => {
        super::$name($backend).await
    };
    (@call (store) $backend:expr, $name:ident) => {
        $backend.run(super::$name).await
    };
    (@call (with $setup:ident) $backend:expr, $name:ident) => {
        $backend
            .run(|store| async move { super::$name(super::$setup(store).await).await })
            .await
    };
    (@tests $threads:literal $kind:tt $($name:ident),*) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = $threads)]
                async fn $name() {
                    $crate::on_both_stores!(
                        @call $kind $crate::store::harness::Backend::Memory, $name
                    );
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = $threads)]
                async fn $name() {
                    $crate::on_both_stores!(
                        @call $kind $crate::store::harness::Backend::Dynamo, $name
                    );
                }
            )*
        }
    };
    (threads = $threads:literal; store: $($name:ident),* $(,)?) => {
        $crate::on_both_stores!(@tests $threads (store) $($name),*);
    };
    (threads = $threads:literal; with $setup:ident: $($name:ident),* $(,)?) => {
        $crate::on_both_stores!(@tests $threads (with $setup) $($name),*);
    };
    (threads = $threads:literal; $($name:ident),* $(,)?) => {
        $crate::on_both_stores!(@tests $threads (backend) $($name),*);
    };
    ($($rest:tt)*) => {
        $crate::on_both_stores!(threads = 4; $($rest)*);
    };
}
