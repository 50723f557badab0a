//! The due-work port (`docs/design.md`, "Work that happens later"): due items, claimed under a
//! lease, settled, parked and swept.

use crate::model::due::{DueId, DueItem, Lease, Parking, Settlement};
#[cfg(doc)]
use crate::store::StoreError;
use crate::store::StoreResult;
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// Due items: work stored with the change that causes it and run later by a worker holding its
/// lease. (The writes that create and settle them with other items take a
/// [`crate::model::due::DueChanges`].)
#[async_trait]
pub trait DueStore: Send + Sync + 'static {
    /// A due item by id (`docs/design.md`, "Work that happens later").
    async fn get_due(&self, id: &DueId) -> StoreResult<Option<DueItem>>;

    /// Claims due item `id` for its attempt after `attempt` attempts: when it exists, has made
    /// exactly `attempt` attempts and no lease holds it at `now`, stores `lease` on it (its
    /// `resume_at` becomes the lease's end) and returns it as stored; otherwise `None` (another
    /// worker holds it, the attempt was made, or the work is over). One conditional write: of
    /// racing claims at most one gets the item. A claim whose `lease` the item already holds
    /// returns it as stored: a request retried after its first attempt applied (a lost response,
    /// a timeout) still learns that it holds the item, instead of leaving it to lapse.
    async fn claim_due(
        &self, id: &DueId, attempt: u32, lease: &Lease, now: DateTime<Utc>,
    ) -> StoreResult<Option<DueItem>>;

    /// Settles a claimed due item when its attempt writes nothing else (removed, or moved to its
    /// next attempt), conditional on the claim's lease.
    ///
    /// Errors: [`StoreError::LeaseLost`] when the lease is no longer held (nothing written).
    async fn settle_due(&self, settlement: &Settlement) -> StoreResult<()>;

    /// Parks a claimed due item ([`crate::model::due::DueItem::MAX_RUNS`] runs without
    /// progress): keeps it with `parking.error` as its last error and `parking.at` as when it was
    /// parked, its lease released, out of the sweeper's index (nothing claims it any more),
    /// conditional on the claim's lease.
    ///
    /// Errors: [`StoreError::LeaseLost`] when the lease is no longer held (nothing written).
    async fn park_due(&self, parking: &Parking) -> StoreResult<()>;

    /// Up to `limit` parked due items, parked longest ago first, for an operator to inspect
    /// (`docs/operations.md`).
    async fn parked_due_items(&self, limit: usize) -> StoreResult<Vec<DueItem>>;

    /// Moves an overdue due item's `resume_at` (the sweeper, before it hands the item on), only
    /// while the item still has the `resume_at` and `attempt` of `item` and no lease holds it at
    /// `now`. Returns whether it moved: of racing sweepers exactly one does.
    async fn rearm_due(
        &self, item: &DueItem, resume_at: DateTime<Utc>, now: DateTime<Utc>,
    ) -> StoreResult<bool>;

    /// Up to `limit` due items whose `resume_at` is at or before `now`, oldest first: the
    /// sweeper's read of the due-work index.
    async fn overdue_due_items(
        &self, now: DateTime<Utc>, limit: usize,
    ) -> StoreResult<Vec<DueItem>>;
}
