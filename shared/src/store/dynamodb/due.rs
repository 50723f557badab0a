//! The DynamoDB adapter's due work ([`DueStore`]), and the writes of due-item changes that other
//! transactions carry ([`DueChanges`]).

use super::cancel::{Part, Precedence};
use super::items;
use super::items::{backend, n, s, Expr};
use super::query::{Query, SortCondition};
use super::DynamoStore;
use crate::model::due::{DueChanges, DueId, DueItem, Lease, Parking, Settlement};
use crate::store::dynamodb::keys;
use crate::store::sortable_time;
use crate::store::{DueStore, StoreError, StoreResult};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::TransactWriteItem;

impl DynamoStore {
    /// Appends the writes of `changes` to a transaction: each new item put when absent
    /// ([`Part::Other`]), the settled item deleted or moved to its next attempt on its lease
    /// ([`Part::Lease`]).
    pub(super) fn due_writes(
        &self, changes: &DueChanges, tx: &mut Vec<TransactWriteItem>, parts: &mut Vec<Part>,
    ) -> StoreResult<()> {
        for due in &changes.put {
            let (_, item) = items::due::due_item(due)?;
            tx.push(self.put(item, Some(items::absent()))?);
            parts.push(Part::Other);
        }
        for delivery in &changes.deliveries {
            let (_, item) = items::delivery(delivery)?;
            tx.push(self.put(item, Some(items::absent()))?);
            parts.push(Part::Other);
        }
        if let Some(settle) = &changes.settle {
            tx.push(self.settlement(settle)?);
            parts.push(Part::Lease);
        }
        Ok(())
    }

    /// The write that settles a claimed due item (conditional on its lease).
    fn settlement(&self, settle: &Settlement) -> StoreResult<TransactWriteItem> {
        let key = keys::due_item(&settle.id);
        match &settle.next {
            None => self.delete(&key, items::due::due_lease_held(&settle.lease_id)),
            Some(next) => {
                let update = items::due::due_next_attempt(&settle.id, next, &settle.lease_id)?;
                self.update_item(&key, &update, Some(items::due::DUE_LEASE_CONDITION.into()))
            }
        }
    }
}

#[async_trait]
impl DueStore for DynamoStore {
    async fn get_due(&self, id: &DueId) -> StoreResult<Option<DueItem>> {
        self.get(&keys::due_item(id))
            .await?
            .map(|item| items::due::read_due_item(&item))
            .transpose()
    }

    async fn claim_due(
        &self, id: &DueId, attempt: u32, lease: &Lease, now: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<Option<DueItem>> {
        let index = keys::due_index(id, lease.until);
        let update = Expr::new(
            "SET #lease_id = :lease_id, #lease_until = :lease_until, #resume_at = :resume_at, #gsi1sk = :gsi1sk ADD #runs :one",
        )
        .name("#pk", keys::PK)
        .name("#runs", items::due::DUE_RUNS)
        .name("#parked_at", items::due::DUE_PARKED_AT)
        .value(":one", n(1))
        .name("#lease_id", items::due::DUE_LEASE_ID)
        .name("#lease_until", items::due::DUE_LEASE_UNTIL)
        .name("#resume_at", items::due::DUE_RESUME_AT)
        .name("#gsi1sk", keys::GSI1SK)
        .name("#attempt", items::due::DUE_ATTEMPT)
        .value(":lease_id", s(&lease.id))
        .value(":lease_until", items::millis(lease.until))
        .value(":resume_at", s(sortable_time(lease.until)))
        .value(":gsi1sk", s(index.sk))
        .value(":attempt", n(u64::from(attempt)))
        .value(":now", items::millis(now));
        let condition = "attribute_exists(#pk) AND #attempt = :attempt AND attribute_not_exists(#parked_at) AND (attribute_not_exists(#lease_until) OR #lease_until <= :now)";
        let item = match self
            .update_conditional_or_current(&keys::due_item(id), &update, condition)
            .await?
        {
            Ok(claimed) => claimed,
            // The item already holds this lease: a retry of this claim whose first attempt
            // applied (the SDK retries a request whose response was lost).
            Err(Some(current))
                if current
                    .get(items::due::DUE_LEASE_ID)
                    .and_then(|v| v.as_s().ok())
                    == Some(&lease.id) =>
            {
                current
            }
            Err(_) => return Ok(None),
        };
        items::due::read_due_item(&item).map(Some)
    }

    async fn settle_due(&self, settlement: &Settlement) -> StoreResult<()> {
        let mut tx = Vec::new();
        let mut parts = Vec::new();
        self.due_writes(
            &DueChanges::settling(settlement.clone()),
            &mut tx,
            &mut parts,
        )?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn park_due(&self, parking: &Parking) -> StoreResult<()> {
        let update = items::due::due_parked(parking);
        match self
            .update_conditional(
                &keys::due_item(&parking.id),
                &update,
                items::due::DUE_LEASE_CONDITION,
            )
            .await?
        {
            Some(_) => Ok(()),
            None => Err(StoreError::LeaseLost),
        }
    }

    async fn parked_due_items(&self, limit: usize) -> StoreResult<Vec<DueItem>> {
        let q = Query::index(keys::GSI1, keys::PARKED_DUE_PARTITION.to_string());
        self.query_range(&q, 0, limit)
            .await?
            .iter()
            .map(items::due::read_due_item)
            .collect()
    }

    async fn rearm_due(
        &self, item: &DueItem, resume_at: chrono::DateTime<chrono::Utc>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<bool> {
        let index = keys::due_index(&item.id, resume_at);
        let update = Expr::new("SET #resume_at = :resume_at, #gsi1sk = :gsi1sk")
            .name("#resume_at", items::due::DUE_RESUME_AT)
            .name("#gsi1sk", keys::GSI1SK)
            .name("#attempt", items::due::DUE_ATTEMPT)
            .name("#lease_until", items::due::DUE_LEASE_UNTIL)
            .value(":resume_at", s(sortable_time(resume_at)))
            .value(":gsi1sk", s(index.sk))
            .value(":read_resume_at", s(sortable_time(item.resume_at)))
            .value(":attempt", n(u64::from(item.attempt)))
            .value(":now", items::millis(now));
        let condition = "#resume_at = :read_resume_at AND #attempt = :attempt AND (attribute_not_exists(#lease_until) OR #lease_until <= :now)";
        Ok(self
            .update_conditional(&keys::due_item(&item.id), &update, condition)
            .await?
            .is_some())
    }

    async fn overdue_due_items(
        &self, now: chrono::DateTime<chrono::Utc>, limit: usize,
    ) -> StoreResult<Vec<DueItem>> {
        // `<now>#~` sorts after every index key resumed at `now` (ids hold no `~`).
        let bound = format!("{}#~", sortable_time(now));
        let mut shards = tokio::task::JoinSet::new();
        for shard in 0..keys::DUE_SHARDS {
            let store = self.clone();
            let mut q = Query::index(keys::GSI1, keys::due_index_partition(shard));
            q.sk = SortCondition::Before(bound.clone());
            shards.spawn(async move { store.query_range(&q, 0, limit).await });
        }
        let mut due = Vec::new();
        while let Some(read) = shards.join_next().await {
            for item in read.map_err(backend)?? {
                due.push(items::due::read_due_item(&item)?);
            }
        }
        due.sort_by(|a, b| (a.resume_at, &a.id).cmp(&(b.resume_at, &b.id)));
        due.truncate(limit);
        Ok(due)
    }
}
