//! The DynamoDB adapter's audit events ([`AuditStore`], BEHAVIOR 18): the account's change log
//! in its own partition (`AUDIT#<account>`, sorted by time then id), each event also in its
//! target's partition of GSI1. Both filters of `GET /audit-events` are key conditions (the
//! window a `BETWEEN` on the sort key): no `Scan`, no filter expression. Every write that
//! records an event adds it to its own transaction through [`DynamoStore::audit_write`].

use super::cancel::{Part, Precedence};
use super::items;
use super::query::{Query, SortCondition};
use super::request::string_attr;
use super::DynamoStore;
use crate::idempotency::IdempotencyCompletion;
use crate::model::audit::{AuditEvent, AuditFilter};
use crate::store::dynamodb::keys;
use crate::store::{audit_position, AuditStore, Page, PageRequest, PageStart, StoreResult};
use crate::types::ids::AccountId;
use async_trait::async_trait;
use aws_sdk_dynamodb::types::TransactWriteItem;
use chrono::{DateTime, Utc};
use uuid::Uuid;

impl DynamoStore {
    /// Appends to a transaction the `Put` of `event` (when given), conditional on no item having
    /// its key, as [`Part::Other`]: the change and its event commit together or not at all.
    pub(super) fn audit_write(
        &self, event: Option<&AuditEvent>, tx: &mut Vec<TransactWriteItem>, parts: &mut Vec<Part>,
    ) -> StoreResult<()> {
        if let Some(event) = event {
            let (_, item) = items::audit::event(event)?;
            tx.push(self.put(item, Some(items::absent()))?);
            parts.push(Part::Other);
        }
        Ok(())
    }
}

/// The sort-key condition of `filter`'s window at `page` (newest first), and the position read
/// with it that the page must drop (an `after` position is the inclusive bound of a `BETWEEN`);
/// `None` when the window is empty.
fn window(filter: &AuditFilter, page: &PageRequest) -> Option<(SortCondition, Option<String>)> {
    // `<at>#<nil id>` sorts before every event at `at` (event ids are never nil), so it is never
    // an event's key: as an inclusive bound it includes exactly the events from `at` on.
    let bound = |at: DateTime<Utc>| keys::audit_sort_key(at, Uuid::nil());
    let low = filter.from.map(bound);
    let mut high = filter.to.map(bound);
    let mut drop = None;
    if let PageStart::After(after) = &page.start {
        let after = after.as_str().to_string();
        if high.as_ref().is_none_or(|h| after < *h) {
            drop = Some(after.clone());
            high = Some(after);
        }
    }
    if let (Some(l), Some(h)) = (&low, &high) {
        if l >= h {
            return None;
        }
    }
    let condition = match (low, high, &drop) {
        (None, None, _) => SortCondition::Any,
        // Strictly below a position: nothing to drop.
        (None, Some(h), Some(_)) => return Some((SortCondition::Before(h), None)),
        (None, Some(h), None) => SortCondition::Before(h),
        (Some(l), None, _) => SortCondition::After(l),
        (Some(l), Some(h), _) => SortCondition::Between(l, h),
    };
    Some((condition, drop))
}

#[async_trait]
impl AuditStore for DynamoStore {
    async fn list_audit_events(
        &self, account_id: AccountId, filter: &AuditFilter, page: &PageRequest,
    ) -> StoreResult<Page<AuditEvent>> {
        let Some((condition, drop)) = window(filter, page) else {
            return Ok(Page::new(Vec::new(), None));
        };
        let mut q = match &filter.target {
            Some(target) => Query::index(
                keys::GSI1,
                keys::audit_target_partition(account_id, target.target_type.as_str(), target.id),
            ),
            None => Query::table(keys::audit_partition(account_id)),
        }
        .newest_first();
        q.sk = condition;
        let wanted = page.limit.saturating_add(1);
        let sort_key = match filter.target {
            Some(_) => keys::GSI1SK,
            None => keys::SK,
        };
        let mut read = self
            .query_range(
                &q,
                page.offset(),
                wanted.saturating_add(usize::from(drop.is_some())),
            )
            .await?;
        if let Some(drop) = &drop {
            if read
                .first()
                .is_some_and(|i| string_attr(i, sort_key).ok().as_deref() == Some(drop))
            {
                read.remove(0);
            }
        }
        read.truncate(wanted);
        let events = read
            .into_iter()
            .map(items::audit::event_of)
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(Page::from_lookahead(events, page.limit, audit_position))
    }

    async fn get_audit_event(
        &self, account_id: AccountId, id: Uuid,
    ) -> StoreResult<Option<AuditEvent>> {
        let Some(at) = AuditEvent::at_of_id(id) else {
            return Ok(None);
        };
        self.get(&keys::audit_event(account_id, at, id))
            .await?
            .map(items::audit::event_of)
            .transpose()
    }

    async fn append_audit_event(
        &self, event: &AuditEvent, completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()> {
        let mut tx = Vec::new();
        let mut parts = Vec::new();
        self.audit_write(Some(event), &mut tx, &mut parts)?;
        self.completion_write(completion, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }
}
