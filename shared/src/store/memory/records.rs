//! The embedded store's records and their uniqueness guards ([`RecordStore`]).

use super::{read_page, GuardKey, MemoryStore, State};
use crate::idempotency::IdempotencyCompletion;
use crate::model::object_type::ObjectType;
use crate::model::record::Record;
use crate::store::{
    record_position, Page, PageRequest, RecordStore, StoreError, StoreResult, UniqueKey,
};
use crate::types::ids::{AccountId, RecordId};
use async_trait::async_trait;
use std::sync::Arc;

/// The guard of `record`'s unique key `key` (its account and type, the key's name and canonical
/// value).
pub(super) fn guard(record: &Record, key: &UniqueKey) -> GuardKey {
    (
        record.account_id,
        record.object_type,
        key.field.clone(),
        key.value.clone(),
    )
}

impl State {
    /// Stores `record` and indexes it in its list.
    pub(super) fn put_record(&mut self, record: Record) {
        let old = self.records.get(&record.id).map(|r| record_position(r));
        self.record_lists
            .entry((record.account_id, record.object_type))
            .or_default()
            .put(old, record_position(&record), record.is_active(), record.id);
        self.records.insert(record.id, Arc::new(record));
    }
}

#[async_trait]
impl RecordStore for MemoryStore {
    async fn get_record_shared(
        &self, account_id: AccountId, object_type: ObjectType, id: RecordId,
    ) -> StoreResult<Option<Arc<Record>>> {
        Ok(self
            .lock()
            .records
            .get(&id)
            .filter(|r| r.account_id == account_id && r.object_type == object_type)
            .cloned())
    }

    async fn find_record(
        &self, account_id: AccountId, id: RecordId,
    ) -> StoreResult<Option<Record>> {
        Ok(self
            .lock()
            .records
            .get(&id)
            .filter(|r| r.account_id == account_id)
            .map(|r| Record::clone(r)))
    }

    async fn list_records(
        &self, account_id: AccountId, object_type: ObjectType, page: &PageRequest,
    ) -> StoreResult<Page<Record>> {
        let state = self.lock();
        Ok(read_page(
            state.record_lists.get(&(account_id, object_type)),
            page,
            |id| state.records.get(id).map(|r| &**r),
        ))
    }

    async fn create_record_completing(
        &self, record: &Record, unique_keys: &[UniqueKey],
        completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if completion.is_some_and(|c| !state.holds_lease(&c.claim)) {
            return Err(StoreError::LeaseLost);
        }
        if let Some(taken) = unique_keys
            .iter()
            .find(|k| state.guards.contains_key(&guard(record, k)))
        {
            return Err(StoreError::Duplicate {
                field: taken.field.clone(),
            });
        }
        if state.records.contains_key(&record.id) {
            return Err(StoreError::Conflict);
        }
        for key in unique_keys {
            state.guards.insert(guard(record, key), record.id);
        }
        state.put_record(record.clone());
        if let Some(c) = completion {
            state.complete_request(c);
        }
        Ok(())
    }

    async fn update_record(
        &self, record: &Record, expected_version: u64, claimed: &[UniqueKey],
        released: &[UniqueKey],
    ) -> StoreResult<()> {
        let mut state = self.lock();
        match state.records.get(&record.id) {
            Some(stored)
                if stored.version == expected_version
                    && stored.is_active()
                    && stored.account_id == record.account_id
                    && stored.object_type == record.object_type => {}
            _ => return Err(StoreError::Conflict),
        }
        let held_by_other = |k: &&UniqueKey| {
            state
                .guards
                .get(&guard(record, k))
                .is_some_and(|holder| *holder != record.id)
        };
        if let Some(taken) = claimed.iter().find(held_by_other) {
            return Err(StoreError::Duplicate {
                field: taken.field.clone(),
            });
        }
        for key in released {
            let g = guard(record, key);
            if state.guards.get(&g) == Some(&record.id) {
                state.guards.remove(&g);
            }
        }
        for key in claimed {
            state.guards.insert(guard(record, key), record.id);
        }
        state.put_record(record.clone());
        Ok(())
    }

    async fn get_records(
        &self, account_id: AccountId, ids: &[RecordId],
    ) -> StoreResult<Vec<Record>> {
        let state = self.lock();
        let mut seen = std::collections::HashSet::new();
        Ok(ids
            .iter()
            .filter(|id| seen.insert(**id))
            .filter_map(|id| state.records.get(id))
            .filter(|r| r.account_id == account_id)
            .map(|r| Record::clone(r))
            .collect())
    }

    async fn find_by_unique_key(
        &self, account_id: AccountId, object_type: ObjectType, key: &UniqueKey,
    ) -> StoreResult<Option<Record>> {
        let state = self.lock();
        let guard = (
            account_id,
            object_type,
            key.field.clone(),
            key.value.clone(),
        );
        Ok(state
            .guards
            .get(&guard)
            .and_then(|id| state.records.get(id))
            .map(|r| Record::clone(r)))
    }
}
