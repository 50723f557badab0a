//! The records' port: contacts, companies, deals and tickets, with their uniqueness guards.

use crate::idempotency::IdempotencyCompletion;
use crate::model::object_type::ObjectType;
use crate::model::record::Record;
#[cfg(doc)]
use crate::store::StoreError;
use crate::store::{Page, PageRequest, StoreResult, UniqueKey};
use crate::types::ids::{AccountId, RecordId};
use async_trait::async_trait;
use std::sync::Arc;

/// The most `BatchGetItem` requests [`RecordStore::get_records`] has in flight at once (a wave of
/// up to 800 keys).
pub const RECORD_BATCH_WAVE: usize = 8;

/// Records of every type (ids unique across types) with the guards of their unique keys, claimed
/// and released in the same atomic write as the record.
#[async_trait]
pub trait RecordStore: Send + Sync + 'static {
    /// A record of the account and type by id, archived or not: [`Self::find_record`] of that
    /// type (record ids are unique across types).
    async fn get_record(
        &self, account_id: AccountId, object_type: ObjectType, id: RecordId,
    ) -> StoreResult<Option<Record>> {
        Ok(self
            .find_record(account_id, id)
            .await?
            .filter(|r| r.object_type == object_type))
    }

    /// [`Self::get_record`] for a reader that only looks at the record (`GET /{type}/{id}`): the
    /// embedded store hands out its shared copy instead of a deep one (docs/performance.md);
    /// DynamoDB reads the item as [`Self::get_record`] does.
    async fn get_record_shared(
        &self, account_id: AccountId, object_type: ObjectType, id: RecordId,
    ) -> StoreResult<Option<Arc<Record>>> {
        Ok(self
            .get_record(account_id, object_type, id)
            .await?
            .map(Arc::new))
    }

    /// A record of the account by id, of any type, archived or not (dispatch reads it before it
    /// knows the router's type, in the same round as the router; record ids are unique across
    /// types).
    async fn find_record(&self, account_id: AccountId, id: RecordId)
        -> StoreResult<Option<Record>>;

    /// The records of `ids` that exist in the account, of any type, archived or not, in the
    /// order of `ids` (each once): how the what-if replay reads the records of a window of
    /// history, each once (BEHAVIOR 16). DynamoDB: consistent `BatchGetItem`s of at most 100
    /// keys (the service's limit), [`RECORD_BATCH_WAVE`] of them in flight at once, unprocessed
    /// keys sent again after a backoff. Cost: `ceil(unique ids / 100)` requests (plus retries of
    /// unprocessed keys), one item read per record found.
    async fn get_records(
        &self, account_id: AccountId, ids: &[RecordId],
    ) -> StoreResult<Vec<Record>>;

    /// A page of the records of the account and type, by creation time then id (position:
    /// [`crate::store::time_then_id`]). A page after a position reads O(limit) items.
    async fn list_records(
        &self, account_id: AccountId, object_type: ObjectType, page: &PageRequest,
    ) -> StoreResult<Page<Record>>;

    /// Creates `record` and claims its `unique_keys` atomically.
    ///
    /// Errors: [`StoreError::Duplicate`] naming the first key (in the given order) held by an
    /// active record of the same account and type; nothing is written then.
    async fn create_record(&self, record: &Record, unique_keys: &[UniqueKey]) -> StoreResult<()> {
        self.create_record_completing(record, unique_keys, None)
            .await
    }

    /// [`Self::create_record`], also storing `completion` (the 201 of an `Idempotency-Key`
    /// request, BEHAVIOR 10) in the same atomic write, conditional on its lease.
    ///
    /// Errors: [`StoreError::LeaseLost`] first, then as [`Self::create_record`].
    async fn create_record_completing(
        &self, record: &Record, unique_keys: &[UniqueKey],
        completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()>;

    /// Replaces the stored record with `record` when the stored one is active and at
    /// `expected_version`, releasing the `released` keys and claiming the `claimed` ones in the
    /// same atomic write. Archiving is such an update (with `archived_at` set, releasing every
    /// key).
    ///
    /// Errors: [`StoreError::Duplicate`] for a claimed key held by another active record;
    /// [`StoreError::Conflict`] when the stored record changed, was archived or is gone.
    async fn update_record(
        &self, record: &Record, expected_version: u64, claimed: &[UniqueKey],
        released: &[UniqueKey],
    ) -> StoreResult<()>;

    /// The active record of the account and type holding unique key `field` = `value`, if any
    /// (a lookup of the uniqueness guard; account matching finds a company by domain with it).
    async fn find_by_unique_key(
        &self, account_id: AccountId, object_type: ObjectType, key: &UniqueKey,
    ) -> StoreResult<Option<Record>>;
}
