//! The DynamoDB adapter's records and their uniqueness guards ([`RecordStore`]): guard items
//! claimed and released in the record's own `TransactWriteItems`.

use super::cancel::{Part, Precedence};
use super::items;
use super::items::{backend, from_item, s, Expr};
use super::query::Query;
use super::request::string_attr;
use super::DynamoStore;
use crate::idempotency::IdempotencyCompletion;
use crate::model::object_type::ObjectType;
use crate::model::record::Record;
use crate::store::dynamodb::keys::{self, Key};
use crate::store::{record_position, Page, PageRequest, RecordStore, StoreResult, UniqueKey};
use crate::types::ids::{AccountId, RecordId};
use async_trait::async_trait;
use std::collections::HashSet;
use uuid::Uuid;

#[async_trait]
impl RecordStore for DynamoStore {
    async fn find_record(
        &self, account_id: AccountId, id: RecordId,
    ) -> StoreResult<Option<Record>> {
        Ok(self
            .get_as::<Record>(&keys::record(id))
            .await?
            .filter(|r| r.account_id == account_id))
    }

    async fn list_records(
        &self, account_id: AccountId, object_type: ObjectType, page: &PageRequest,
    ) -> StoreResult<Page<Record>> {
        let q = Query::listing(keys::records_partition(account_id, object_type), page);
        self.list_page(&q, page, record_position).await
    }

    async fn create_record_completing(
        &self, record: &Record, unique_keys: &[UniqueKey],
        completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()> {
        let (_, item) = items::record(record)?;
        if unique_keys.is_empty() && completion.is_none() {
            return self.put_conditional(item, items::absent()).await;
        }
        let mut tx = Vec::new();
        let mut parts = Vec::new();
        self.completion_write(completion, &mut tx, &mut parts)?;
        let mut seen = HashSet::new();
        for key in unique_keys {
            let (guard_key, guard) = items::guard(record, key);
            if seen.insert(guard_key) {
                tx.push(self.put(guard, Some(items::absent()))?);
                parts.push(Part::Guard(key.field.clone()));
            }
        }
        tx.push(self.put(item, Some(items::absent()))?);
        parts.push(Part::Record);
        self.transact(tx, &parts, Precedence::GuardsFirst).await
    }

    async fn update_record(
        &self, record: &Record, expected_version: u64, claimed: &[UniqueKey],
        released: &[UniqueKey],
    ) -> StoreResult<()> {
        let (_, item) = items::record(record)?;
        let condition = items::active_at_version(record.account_id, expected_version)
            .name("#type", "object_type")
            .value(":type", s(record.object_type.as_str()));
        let condition = Expr {
            text: format!("{} AND #type = :type", condition.text),
            ..condition
        };
        let mut tx = vec![self.put(item, Some(condition))?];
        let mut parts = vec![Part::Record];
        let mut touched: HashSet<Key> = HashSet::new();
        for key in claimed {
            let (guard_key, guard) = items::guard(record, key);
            if touched.insert(guard_key) {
                tx.push(self.put(guard, Some(items::free_or_held_by(record.id)))?);
                parts.push(Part::Guard(key.field.clone()));
            }
        }
        for key in released {
            let (guard_key, _) = items::guard(record, key);
            if touched.insert(guard_key.clone()) {
                tx.push(self.delete(&guard_key, items::free_or_held_by(record.id))?);
                parts.push(Part::Release);
            }
        }
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn get_records(
        &self, account_id: AccountId, ids: &[RecordId],
    ) -> StoreResult<Vec<Record>> {
        let keys: Vec<Key> = ids.iter().map(|id| keys::record(*id)).collect();
        let mut found = self
            .batch_get_waves(&keys, false, crate::store::RECORD_BATCH_WAVE)
            .await?;
        let mut records = Vec::with_capacity(found.len());
        for key in &keys {
            if let Some(item) = found.remove(key) {
                let record: Record = from_item(item)?;
                if record.account_id == account_id {
                    records.push(record);
                }
            }
        }
        Ok(records)
    }

    async fn find_by_unique_key(
        &self, account_id: AccountId, object_type: ObjectType, key: &UniqueKey,
    ) -> StoreResult<Option<Record>> {
        let guard = keys::guard(account_id, object_type, &key.field, &key.value);
        let Some(item) = self.get(&guard).await? else {
            return Ok(None);
        };
        let holder = string_attr(&item, items::GUARD_RECORD_ID)?;
        let id = RecordId::from(Uuid::parse_str(&holder).map_err(backend)?);
        self.get_record(account_id, object_type, id).await
    }
}
