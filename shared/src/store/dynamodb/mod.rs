//! The DynamoDB adapter of the [`crate::store::Store`] port: one table, keys from [`keys`] (the
//! key schema, built there and nowhere else), definition in `infra/table.json` (see
//! `docs/dynamodb.md` for the access patterns).
//!
//! - Single-item reads are strongly consistent `GetItem`s; lists are `Query`s on the sparse
//!   index GSI1 (active items) or GSI2 (archived included), in the contract's order.
//! - Writes that must be atomic are one `TransactWriteItems` with conditions: record + guards,
//!   the assignment (record, rotation state, member, monthly count, log, message de-duplication marker).
//!   Cancellation reasons become domain errors ([`cancel::classify`]); a transaction cancelled
//!   only by `TransactionConflict` (or throttling), and a single-item write refused with
//!   `TransactionConflictException`, are sent again with jitter until the deadline of
//!   [`crate::store::retry`], then answer [`StoreError::Conflict`].
//! - Other SDK errors (after the SDK's standard retries) are [`StoreError::Backend`] with the
//!   cause.
//!
//! One file per aggregate of the port (`records.rs` implements [`crate::store::RecordStore`],
//! ...); the requests they are written with in `request.rs`, `batch.rs` and `query.rs`, the
//! item formats in [`items`]. This file holds the adapter's type.

mod accounts;
mod audit;
mod auth_attempts;
mod batch;
mod calendars;
pub mod cancel;
#[cfg(any(test, feature = "test-util"))]
pub mod counter;
mod dispatch;
mod due;
pub mod env;
mod idempotency;
pub mod items;
pub mod keys;
mod members;
mod pace;
mod provisioning;
mod query;
#[cfg(any(test, feature = "test-util"))]
pub mod recording;
mod records;
mod request;
mod routers;
#[cfg(any(test, feature = "test-util"))]
pub mod scripted;
pub mod table;
#[cfg(any(test, feature = "test-util"))]
pub mod test_table;
mod webhooks;
pub mod write_token;

use crate::store::retry::{Kept, Round};
use crate::store::{write_rounds, Backoff, RoundError, StoreError, StoreResult, CONFLICT_DEADLINE};
use aws_sdk_dynamodb::Client;
use std::time::Duration;

#[cfg(any(test, feature = "test-util"))]
pub use counter::RequestCounter;

/// The adapter's own read, decide, conditional write loops (a claim of an `Idempotency-Key`, a
/// holiday calendar's reference count set by provisioning) on the one retry combinator,
/// [`write_rounds`], answering the store's error: `round(n)` for n = 0, 1, ... goes again after
/// `backoff`'s pause while it answers [`StoreError::Conflict`] and the deadline allows, and
/// anything else ends the rounds. The rounds keep no state from one to the next.
///
/// Errors: [`StoreError::Conflict`] when the last round lost at the deadline; a round's own
/// error. A round builds its errors from [`StoreError`]s only; a [`RoundError::Domain`] (none
/// is made here) would be a backend failure.
async fn store_rounds<'env, T>(
    mut backoff: Backoff, mut round: impl FnMut(u32) -> Round<'env, T>,
) -> StoreResult<T> {
    write_rounds(&mut backoff, (), |_: &mut Kept<'env, ()>, n| round(n))
        .await
        .map_err(|e| match e {
            RoundError::Store(e) => e,
            RoundError::Domain(e) => StoreError::Backend(e.into()),
        })
}

/// DynamoDB's limit of items in one `TransactWriteItems`.
pub const MAX_TRANSACTION_ITEMS: usize = 100;

/// The DynamoDB adapter: a client and the table name. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    /// How long a write refused for a transaction in flight is sent again.
    conflict_deadline: Duration,
}

impl DynamoStore {
    /// An adapter over `table`, retrying transaction conflicts until [`CONFLICT_DEADLINE`].
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            conflict_deadline: CONFLICT_DEADLINE,
        }
    }

    /// The same adapter retrying transaction conflicts until `deadline` (tests of the retry).
    pub fn with_conflict_deadline(mut self, deadline: Duration) -> Self {
        self.conflict_deadline = deadline;
        self
    }

    /// The table name.
    pub fn table_name(&self) -> &str {
        &self.table
    }

    /// The SDK client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Creates the table from `infra/table.json` when it does not exist. Returns whether it did.
    ///
    /// Errors: the SDK's, as [`StoreError::Backend`].
    pub async fn create_table_if_missing(&self) -> StoreResult<bool> {
        table::create_table_if_missing(&self.client, &self.table)
            .await
            .map_err(StoreError::Backend)
    }
}
