//! The DynamoDB adapter of the [`Store`] port: one table, keys from [`crate::store::keys`],
//! definition in `infra/table.json` (see `docs/dynamodb.md` for the access patterns).
//!
//! - Single-item reads are strongly consistent `GetItem`s; lists are `Query`s on the sparse
//!   index GSI1 (active items) or GSI2 (archived included), in the contract's order.
//! - Writes that must be atomic are one `TransactWriteItems` with conditions: record + guards,
//!   the assignment (record, rotation state, member, monthly count, log, idempotency marker).
//!   Cancellation reasons become domain errors ([`cancel::classify`]); transactions cancelled only
//!   by `TransactionConflict` are retried a few times with jitter.
//! - Other SDK errors (after the SDK's standard retries) are [`StoreError::Backend`] with the cause.

pub mod cancel;
#[cfg(any(test, feature = "test-util"))]
pub mod counter;
pub mod env;
pub mod items;
pub mod limits;
#[cfg(any(test, feature = "test-util"))]
pub mod recording;
pub mod table;
#[cfg(any(test, feature = "test-util"))]
pub mod test_table;

use self::cancel::{classify, Outcome, Part, Precedence};
use self::items::{backend, from_item, key_attributes, n, s, Expr, Item};
use super::keys::{self, Key};
use super::tally::{Buckets, Span};
use super::{
    delivery_position, dispatch_position, holiday_calendar_page, member_position, record_position,
    revision_position, router_position, webhook_position, Listed, Page, PageStart, Position,
    ProvisionReport, Store, StoreError, StoreResult, UniqueKey,
};
use crate::fields::definition::FieldDefinition;
use crate::idempotency::{ClaimOutcome, IdempotencyClaim, IdempotencyCompletion};
use crate::model::account::{Account, ApiClient, Role, Team};
use crate::model::dispatch::{
    AssignmentReason, AssignmentTally, AssignmentWrite, CrmSyncState, DispatchEntry,
    DispatchEntryKey, RotationState,
};
use crate::model::due::{DueChanges, DueId, DueItem, Lease, Parking, Settlement};
use crate::model::holiday_calendar::{CalendarDeletion, CalendarRefs, HolidayCalendar};
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::provision::{PlannedRecord, ProvisionPlan};
use crate::model::record::Record;
use crate::model::router::{Router, RouterDraft, RouterRevision};
use crate::model::router_write::{DraftChange, RouterWrite};
use crate::model::sla::SlaStatus;
use crate::model::webhook::{SubscriptionHealth, WebhookDelivery, WebhookSubscription};
use crate::types::etag::ETag;
use crate::types::ids::{AccountId, HolidayCalendarId, MemberId, RecordId, RouterId, WebhookId};
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, KeysAndAttributes, Put, TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;
use rand::Rng;
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use strum::IntoEnumIterator;
use uuid::Uuid;

#[cfg(any(test, feature = "test-util"))]
pub use counter::RequestCounter;

/// DynamoDB's limit of items in one `TransactWriteItems`.
pub const MAX_TRANSACTION_ITEMS: usize = 100;
/// DynamoDB's limit of keys in one `BatchGetItem`.
const MAX_BATCH_GET_KEYS: usize = 100;
/// Attempts of a transaction cancelled only by `TransactionConflict`.
const TRANSACTION_ATTEMPTS: usize = 5;
/// How long an idempotency marker is kept (DynamoDB TTL): longer than SQS's 14-day retention.
const MARKER_LIFETIME_SECS: i64 = 15 * 24 * 3600;
/// Rounds of claiming an `Idempotency-Key` that a concurrent release or expiry kept freeing.
const CLAIM_ATTEMPTS: usize = 3;

/// The DynamoDB adapter: a client and the table name. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
}

/// One provisioned item with the items written in the same transaction: a record's guards, a
/// router's first revision.
struct Provisioned {
    label: String,
    key: Key,
    item: Item,
    guards: Vec<(Key, Item)>,
    /// The account of a non-archived router: it counts against the account's router limit
    /// (its count item grows in the router's transaction).
    counted_router_of: Option<AccountId>,
    /// The item's and its guards' size as DynamoDB counts it ([`limits::check_item`]).
    bytes: usize,
}

impl DynamoStore {
    /// An adapter over `table`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
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

    async fn get(&self, key: &Key) -> StoreResult<Option<Item>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key_attributes(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        Ok(out.item)
    }

    async fn get_as<T: serde::de::DeserializeOwned>(&self, key: &Key) -> StoreResult<Option<T>> {
        self.get(key).await?.map(from_item).transpose()
    }

    /// Every item of a key condition, following `LastEvaluatedKey`.
    async fn query_all(&self, q: &Query) -> StoreResult<Vec<Item>> {
        self.query_range(q, 0, usize::MAX).await
    }

    /// Items `offset..offset + limit` of a key condition, in index order. Reads (and pays for)
    /// the skipped items too: see `docs/dynamodb.md` for deep offsets.
    async fn query_range(&self, q: &Query, offset: usize, limit: usize) -> StoreResult<Vec<Item>> {
        let mut out = Vec::new();
        let mut skipped = 0usize;
        let mut start: Option<Item> = None;
        loop {
            let remaining = offset.saturating_add(limit) - skipped - out.len();
            let expr = q.expr();
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .set_index_name(q.index.map(str::to_string))
                .key_condition_expression(&expr.text)
                .set_expression_attribute_names(expr.names_opt())
                .set_expression_attribute_values(expr.values_opt())
                .consistent_read(q.index.is_none())
                .scan_index_forward(!q.descending)
                .set_limit((limit != usize::MAX).then(|| remaining.min(i32::MAX as usize) as i32))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(backend)?;
            for item in page.items.unwrap_or_default() {
                if skipped < offset {
                    skipped += 1;
                } else if out.len() < limit {
                    out.push(item);
                }
            }
            match page.last_evaluated_key {
                Some(key) if out.len() < limit => start = Some(key),
                _ => return Ok(out),
            }
        }
    }

    /// One page of a listing query `q` (built by [`Query::listing`]): the items at `page`'s
    /// offset, or after its position (the key condition starts there, so only the page and one
    /// look-ahead item are read), parsed, with the position of the last one when more follow.
    async fn list_page<T: serde::de::DeserializeOwned>(
        &self, q: &Query, page: &Page, position: impl Fn(&T) -> Position,
    ) -> StoreResult<Listed<T>> {
        let wanted = page.limit.saturating_add(1);
        let items = parse_items(self.query_range(q, page.offset(), wanted).await?)?;
        Ok(Listed::from_lookahead(items, page.limit, position))
    }

    /// Runs one transaction, mapping cancellation reasons with `precedence`.
    async fn transact(
        &self, items: Vec<TransactWriteItem>, parts: &[Part], precedence: Precedence,
    ) -> StoreResult<()> {
        for attempt in 0..TRANSACTION_ATTEMPTS {
            let sent = self
                .client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await;
            let err = match sent {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            let codes = match err.as_service_error() {
                Some(TransactWriteItemsError::TransactionCanceledException(c)) => c
                    .cancellation_reasons()
                    .iter()
                    .map(|r| r.code().map(str::to_string))
                    .collect::<Vec<_>>(),
                _ => return Err(backend(err)),
            };
            match classify(parts, &codes, precedence) {
                Outcome::Fail(e) => return Err(e),
                Outcome::Retry => {
                    let jitter = rand::thread_rng().gen_range(5..30u64) << attempt;
                    tokio::time::sleep(Duration::from_millis(jitter)).await;
                }
            }
        }
        Err(StoreError::Conflict)
    }

    fn put(&self, item: Item, condition: Option<Expr>) -> StoreResult<TransactWriteItem> {
        let condition = condition.unwrap_or_default();
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .set_condition_expression((!condition.text.is_empty()).then(|| condition.text.clone()))
            .set_expression_attribute_names(condition.names_opt())
            .set_expression_attribute_values(condition.values_opt())
            .build()
            .map_err(backend)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    fn delete(&self, key: &Key, condition: Expr) -> StoreResult<TransactWriteItem> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_attributes(key)))
            .condition_expression(&condition.text)
            .set_expression_attribute_names(condition.names_opt())
            .set_expression_attribute_values(condition.values_opt())
            .build()
            .map_err(backend)?;
        Ok(TransactWriteItem::builder().delete(delete).build())
    }

    /// A transaction's `ConditionCheck` of `key` (nothing written there).
    fn condition_check(&self, key: &Key, condition: Expr) -> StoreResult<TransactWriteItem> {
        let check = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(key_attributes(key)))
            .condition_expression(&condition.text)
            .set_expression_attribute_names(condition.names_opt())
            .set_expression_attribute_values(condition.values_opt())
            .build()
            .map_err(backend)?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// The account's router count item's `ADD` of `delta`, conditional on staying below `max`
    /// when given (BEHAVIOR 15: at most 1,000 non-archived routers).
    fn router_count_update(
        &self, account_id: AccountId, delta: i64, max: Option<u64>,
    ) -> StoreResult<TransactWriteItem> {
        let mut e = Expr::new("ADD #count :delta SET #type = :type, #account = :account")
            .name("#count", items::COUNT)
            .name("#type", keys::ITEM_TYPE)
            .name("#account", "account_id")
            .value(":delta", AttributeValue::N(delta.to_string()))
            .value(":type", s("router_count"))
            .value(":account", s(account_id.to_string()));
        let condition = max.map(|max| {
            e.values.insert(":max".into(), n(max));
            "attribute_not_exists(#count) OR #count < :max".to_string()
        });
        self.update_item(&keys::router_count(account_id), &e, condition)
    }

    /// The `ADD` of each change of `refs` to its holiday calendar's references, each
    /// conditional on the calendar existing (BEHAVIOR 17: a write cannot name a deleted one);
    /// their parts are [`Part::Calendar`].
    fn calendar_ref_updates(
        &self, account_id: AccountId, refs: &CalendarRefs,
    ) -> StoreResult<Vec<(TransactWriteItem, Part)>> {
        refs.changes()
            .map(|(id, delta)| {
                let e = Expr::new("ADD #references :delta")
                    .name("#references", items::REFERENCES)
                    .name("#pk", keys::PK)
                    .value(":delta", AttributeValue::N(delta.to_string()));
                let update = self.update_item(
                    &keys::holiday_calendar(account_id, id),
                    &e,
                    Some("attribute_exists(#pk)".into()),
                )?;
                Ok((update, Part::Calendar))
            })
            .collect()
    }

    /// The account's holiday calendar count item's `ADD` of `delta`, conditional on staying
    /// below `max` when it grows.
    fn calendar_count_update(
        &self, account_id: AccountId, delta: i64, max: Option<u64>,
    ) -> StoreResult<TransactWriteItem> {
        let mut e = Expr::new("ADD #count :delta")
            .name("#count", items::COUNT)
            .value(":delta", AttributeValue::N(delta.to_string()));
        let condition = max.map(|max| {
            e.values.insert(":max".into(), n(max));
            "attribute_not_exists(#count) OR #count < :max".to_string()
        });
        self.update_item(&keys::holiday_calendar_count(account_id), &e, condition)
    }

    /// Runs `tx`, whose count update on `count` is conditional on staying below `max`: a
    /// conflict while the count has reached `max` is the limit's refusal (nothing written).
    ///
    /// Errors: [`StoreError::Rejected`] naming `what` at the limit; otherwise the transaction's.
    async fn transact_under_limit(
        &self, tx: Vec<TransactWriteItem>, parts: &[Part], count: &Key, max: u64, what: &str,
    ) -> StoreResult<()> {
        match self.transact(tx, parts, Precedence::RecordFirst).await {
            Err(StoreError::Conflict) if self.count_of(count).await? >= max => Err(
                StoreError::Rejected(format!("the account has {max} {what} already")),
            ),
            other => other,
        }
    }

    /// The number a count item holds (0 when absent).
    async fn count_of(&self, key: &Key) -> StoreResult<u64> {
        Ok(match self.get(key).await? {
            Some(item) => match item.get(items::COUNT) {
                Some(AttributeValue::N(v)) => v.parse::<u64>().unwrap_or(0),
                _ => 0,
            },
            None => 0,
        })
    }

    /// A single conditional `PutItem`; a failed condition is a [`StoreError::Conflict`].
    async fn put_conditional(&self, item: Item, condition: Expr) -> StoreResult<()> {
        let sent = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(&condition.text)
            .set_expression_attribute_names(condition.names_opt())
            .set_expression_attribute_values(condition.values_opt())
            .send()
            .await;
        sent.map(drop).map_err(|e| {
            conditional_failure(e, |s| {
                s.is_conditional_check_failed_exception() || s.is_transaction_conflict_exception()
            })
        })
    }

    /// A single conditional `DeleteItem`; a failed condition is a [`StoreError::Conflict`].
    async fn delete_conditional(&self, key: &Key, condition: Expr) -> StoreResult<()> {
        let sent = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key_attributes(key)))
            .condition_expression(&condition.text)
            .set_expression_attribute_names(condition.names_opt())
            .set_expression_attribute_values(condition.values_opt())
            .send()
            .await;
        sent.map(drop).map_err(|e| {
            conditional_failure(e, |s| {
                s.is_conditional_check_failed_exception() || s.is_transaction_conflict_exception()
            })
        })
    }

    /// A single conditional `UpdateItem` answering the item as updated; a failed condition is
    /// `None`.
    async fn update_conditional(
        &self, key: &Key, update: &Expr, condition: &str,
    ) -> StoreResult<Option<Item>> {
        Ok(self
            .update_conditional_or_current(key, update, condition)
            .await?
            .ok())
    }

    /// As [`Self::update_conditional`], but a failed condition returns the item as it is
    /// (`ReturnValuesOnConditionCheckFailure: ALL_OLD`, no extra read): `Ok(Ok(new))` when the
    /// update applied, `Ok(Err(Some(current)))` when the condition failed on an existing item,
    /// `Ok(Err(None))` when it failed on an absent one or lost to a transaction.
    async fn update_conditional_or_current(
        &self, key: &Key, update: &Expr, condition: &str,
    ) -> StoreResult<Result<Item, Option<Item>>> {
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key_attributes(key)))
            .update_expression(&update.text)
            .condition_expression(condition)
            .set_expression_attribute_names(update.names_opt())
            .set_expression_attribute_values(update.values_opt())
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .return_values_on_condition_check_failure(
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            )
            .send()
            .await;
        match sent {
            Ok(out) => Ok(Ok(out.attributes.unwrap_or_default())),
            Err(e) => match e.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(failed) => Ok(Err(failed.item)),
                UpdateItemError::TransactionConflictException(_) => Ok(Err(None)),
                other => Err(backend(other)),
            },
        }
    }

    /// Appends the writes of `changes` to a transaction: each new item put when absent
    /// ([`Part::Other`]), the settled item deleted or moved to its next attempt on its lease
    /// ([`Part::Lease`]).
    fn due_writes(
        &self, changes: &DueChanges, tx: &mut Vec<TransactWriteItem>, parts: &mut Vec<Part>,
    ) -> StoreResult<()> {
        for due in &changes.put {
            let (_, item) = items::due_item(due)?;
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

    /// The update of the SLA check of the history entry `key` to `to` (BEHAVIOR 14),
    /// conditional on the check being `pending`.
    fn sla_status_update(
        &self, key: &DispatchEntryKey, to: SlaStatus,
    ) -> StoreResult<TransactWriteItem> {
        let entry_key = keys::dispatch_entry(key.router_id, key.dispatched_at, key.id);
        let e = Expr::new("SET #sla.#status = :to")
            .name("#sla", items::SLA)
            .name("#status", "status")
            .value(":to", items::sla_status_value(to)?)
            .value(":pending", items::sla_status_value(SlaStatus::Pending)?);
        self.update_item(&entry_key, &e, Some("#sla.#status = :pending".into()))
    }

    /// The account's webhook count item's `ADD` of `delta`, conditional on staying below
    /// `max` when it grows.
    fn webhook_count_update(
        &self, account_id: AccountId, delta: i64, max: Option<u64>,
    ) -> StoreResult<TransactWriteItem> {
        let mut e = Expr::new("ADD #count :delta")
            .name("#count", items::COUNT)
            .value(":delta", AttributeValue::N(delta.to_string()));
        let condition = max.map(|max| {
            e.values.insert(":max".into(), n(max));
            "attribute_not_exists(#count) OR #count < :max".to_string()
        });
        self.update_item(&keys::webhook_count(account_id), &e, condition)
    }

    /// The write that settles a claimed due item (conditional on its lease).
    fn settlement(&self, settle: &Settlement) -> StoreResult<TransactWriteItem> {
        let key = keys::due_item(&settle.id);
        match &settle.next {
            None => self.delete(&key, items::due_lease_held(&settle.lease_id)),
            Some(next) => {
                let update = items::due_next_attempt(&settle.id, next, &settle.lease_id)?;
                self.update_item(&key, &update, Some(items::DUE_LEASE_CONDITION.into()))
            }
        }
    }

    /// A transaction's `Update` of `key` by `update` (whose names and values also serve
    /// `condition`), conditional on `condition` when given.
    ///
    /// Errors: the SDK's builder's (a missing table name or key).
    fn update_item(
        &self, key: &Key, update: &Expr, condition: Option<String>,
    ) -> StoreResult<TransactWriteItem> {
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_attributes(key)))
            .update_expression(&update.text)
            .set_condition_expression(condition)
            .set_expression_attribute_names(update.names_opt())
            .set_expression_attribute_values(update.values_opt())
            .build()
            .map_err(backend)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// The updates adding an assignment's `entry` to its day's, hour's and minute's stats
    /// counters ([`super::tally`]); a counter lives as long as its bucket's last entry (TTL).
    ///
    /// Errors: an entry that is not a success with a user and a reason (an internal error).
    fn tally_updates(&self, entry: &DispatchEntry) -> StoreResult<Vec<TransactWriteItem>> {
        let (Some(user), Some(reason)) = (&entry.user, entry.reason) else {
            return Err(StoreError::Backend(
                "an assignment's entry names no user or reason".into(),
            ));
        };
        let mut updates = Vec::with_capacity(Span::ALL.len());
        for span in Span::ALL {
            let start = span.floor(entry.dispatched_at);
            let key = keys::tally_counter(entry.router_id, span, start, user);
            let expr = Expr::new(
                "ADD #reason :one SET #type = :type, #account = :account, #user = :user, #bucket = :bucket, #expires = :expires",
            )
            .name("#reason", <&str>::from(reason))
            .name("#type", keys::ITEM_TYPE)
            .name("#account", "account_id")
            .name("#user", "user")
            .name("#bucket", "bucket")
            .name("#expires", items::EXPIRES_AT)
            .value(":one", n(1))
            .value(":type", s("tally"))
            .value(":account", s(entry.account_id.to_string()))
            .value(":user", s(user))
            .value(":bucket", s(span.bucket(start)))
            .value(
                ":expires",
                AttributeValue::N(entry.expires_at.timestamp().to_string()),
            );
            updates.push(self.update_item(&key, &expr, None)?);
        }
        Ok(updates)
    }

    /// The counters of the run `buckets` of `router_id`, as a tally: one `Query` (a page per
    /// 1 MB) over at most buckets x members items.
    async fn tally_counters(
        &self, account_id: AccountId, router_id: RouterId, buckets: Buckets,
    ) -> StoreResult<Vec<AssignmentTally>> {
        let (low, high) = keys::tally_bounds(&buckets);
        let q = Query {
            sk: SortCondition::Between(low, high),
            ..Query::table(keys::router(router_id).pk)
        };
        let mut tally = Vec::new();
        for item in self.query_all(&q).await? {
            if item.get("account_id").and_then(|v| v.as_s().ok()) != Some(&account_id.to_string()) {
                continue;
            }
            let user = string_attr(&item, "user")?;
            for reason in AssignmentReason::iter() {
                let count = match item.get(<&str>::from(reason)) {
                    Some(AttributeValue::N(v)) => v.parse::<u64>().unwrap_or(0),
                    _ => 0,
                };
                super::tally::add(&mut tally, &user, reason, count);
            }
        }
        Ok(tally)
    }

    /// Adds the assignments among the entries of `router_id` in `[from, to)` to `tally`.
    async fn tally_entries(
        &self, account_id: AccountId, router_id: RouterId,
        (from, to): (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>),
    ) -> StoreResult<Vec<AssignmentTally>> {
        let mut tally = Vec::new();
        // `<to>#<nil id>` sorts before every entry at `to` (ids are never nil): [from, to).
        let bound = |at| {
            format!(
                "{}{}",
                keys::DISPATCH_PREFIX,
                keys::dispatch_sort_key(at, Uuid::nil())
            )
        };
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk AND #sk BETWEEN :from AND :to")
                .filter_expression("#success = :true AND #account = :account")
                .projection_expression("#user, #reason")
                .expression_attribute_names("#pk", keys::PK)
                .expression_attribute_names("#sk", keys::SK)
                .expression_attribute_names("#success", "success")
                .expression_attribute_names("#account", "account_id")
                .expression_attribute_names("#user", "user")
                .expression_attribute_names("#reason", "reason")
                .expression_attribute_values(":pk", s(keys::router(router_id).pk))
                .expression_attribute_values(":from", s(bound(from)))
                .expression_attribute_values(":to", s(bound(to)))
                .expression_attribute_values(":true", AttributeValue::Bool(true))
                .expression_attribute_values(":account", s(account_id.to_string()))
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(backend)?;
            for item in page.items.unwrap_or_default() {
                let user = string_attr(&item, "user")?;
                let reason: AssignmentReason = from_item::<ReasonOnly>(item)?.reason;
                super::tally::add(&mut tally, &user, reason, 1);
            }
            match page.last_evaluated_key {
                Some(key) => start = Some(key),
                None => return Ok(tally),
            }
        }
    }

    /// The items of `keys` that exist (consistent `BatchGetItem`s of up to 100 keys), keys
    /// and guard holder attribute only.
    async fn batch_get(&self, keys: &[Key]) -> StoreResult<HashMap<Key, Item>> {
        self.batch_get_projected(keys, true).await
    }

    /// The items of `keys` that exist, read whole or (`guards_only`) as their keys and guard
    /// holder: consistent `BatchGetItem`s of up to 100 keys each, one after the other, the
    /// unprocessed keys of each sent again after a backoff.
    async fn batch_get_projected(
        &self, keys: &[Key], guards_only: bool,
    ) -> StoreResult<HashMap<Key, Item>> {
        self.batch_get_waves(keys, guards_only, 1).await
    }

    /// [`Self::batch_get_projected`] in parallel waves: up to `in_flight` `BatchGetItem`s sent
    /// at once (each of at most [`MAX_BATCH_GET_KEYS`] keys, DynamoDB's limit).
    async fn batch_get_waves(
        &self, keys: &[Key], guards_only: bool, in_flight: usize,
    ) -> StoreResult<HashMap<Key, Item>> {
        let unique: Vec<Key> = {
            let mut seen = HashSet::new();
            keys.iter().filter(|k| seen.insert(*k)).cloned().collect()
        };
        let chunks: Vec<&[Key]> = unique.chunks(MAX_BATCH_GET_KEYS).collect();
        let mut found = HashMap::with_capacity(unique.len());
        // Waves of `in_flight` requests: each wave's requests at once, the waves one after the
        // other (a request whose unprocessed keys back off holds its wave up).
        for wave in chunks.chunks(in_flight.max(1)) {
            let batches = futures_util::future::try_join_all(
                wave.iter()
                    .map(|chunk| self.batch_get_chunk(chunk, guards_only)),
            )
            .await?;
            found.extend(batches.into_iter().flatten());
        }
        Ok(found)
    }

    /// One `BatchGetItem` of at most [`MAX_BATCH_GET_KEYS`] keys, its unprocessed keys sent
    /// again after a growing backoff until none is left.
    async fn batch_get_chunk(
        &self, chunk: &[Key], guards_only: bool,
    ) -> StoreResult<Vec<(Key, Item)>> {
        let mut request = KeysAndAttributes::builder()
            .set_keys(Some(chunk.iter().map(key_attributes).collect()))
            .consistent_read(true);
        if guards_only {
            request = request
                .projection_expression("#pk, #sk, #holder")
                .expression_attribute_names("#pk", keys::PK)
                .expression_attribute_names("#sk", keys::SK)
                .expression_attribute_names("#holder", items::GUARD_RECORD_ID);
        }
        let mut found = Vec::with_capacity(chunk.len());
        let mut pending: Option<KeysAndAttributes> = Some(request.build().map_err(backend)?);
        let mut attempt = 0u32;
        while let Some(request) = pending.take() {
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, request)
                .send()
                .await
                .map_err(backend)?;
            for item in out
                .responses
                .and_then(|mut r| r.remove(&self.table))
                .unwrap_or_default()
            {
                let key = Key {
                    pk: string_attr(&item, keys::PK)?,
                    sk: string_attr(&item, keys::SK)?,
                };
                found.push((key, item));
            }
            pending = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.table))
                .filter(|k| !k.keys.is_empty());
            if pending.is_some() {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(20u64 << attempt.min(6))).await;
            }
        }
        Ok(found)
    }

    /// Writes one provisioning chunk: every item insert-if-absent.
    async fn provision_chunk(&self, chunk: &[&Provisioned], written: usize) -> StoreResult<()> {
        let mut items = Vec::new();
        let mut labels = Vec::new();
        for p in chunk {
            items.push(self.put(p.item.clone(), Some(items::absent()))?);
            labels.push(p.label.clone());
            for (_, guard) in &p.guards {
                items.push(self.put(guard.clone(), Some(items::absent()))?);
                labels.push(format!("a key of {}", p.label));
            }
        }
        // Each account's non-archived routers of the chunk count against its limit.
        let mut counts: Vec<(AccountId, i64)> = Vec::new();
        for account in chunk.iter().filter_map(|p| p.counted_router_of) {
            match counts.iter_mut().find(|(a, _)| *a == account) {
                Some((_, n)) => *n += 1,
                None => counts.push((account, 1)),
            }
        }
        for (account, n) in counts {
            items.push(self.router_count_update(account, n, None)?);
            labels.push(format!("the router count of account {account}"));
        }
        let parts = vec![Part::Other; items.len()];
        let sent = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        let err = match sent {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        if let Some(TransactWriteItemsError::TransactionCanceledException(c)) =
            err.as_service_error()
        {
            let codes: Vec<Option<String>> = c
                .cancellation_reasons()
                .iter()
                .map(|r| r.code().map(str::to_string))
                .collect();
            if let Outcome::Fail(StoreError::Conflict) =
                classify(&parts, &codes, Precedence::GuardsFirst)
            {
                let what = codes
                    .iter()
                    .position(|c| c.as_deref() == Some("ConditionalCheckFailed"))
                    .and_then(|i| labels.get(i))
                    .cloned()
                    .unwrap_or_else(|| "an item".into());
                return Err(StoreError::Rejected(format!(
                    "{what} was written concurrently while provisioning; {written} items were \
                     inserted before; run the provisioning again (it inserts only what is missing)"
                )));
            }
        }
        Err(backend(err))
    }
}

/// A key condition: the partition of the table or an index, optionally a condition on the
/// sort key, read in ascending or descending order.
struct Query {
    index: Option<&'static str>,
    pk: String,
    sk: SortCondition,
    descending: bool,
}

/// The sort-key part of a key condition.
enum SortCondition {
    /// The whole partition.
    Any,
    /// `begins_with(SK, prefix)`.
    Prefix(String),
    /// `SK > after`.
    After(String),
    /// `SK < before`.
    Before(String),
    /// `SK BETWEEN low AND high` (both included).
    Between(String, String),
}

impl Query {
    fn table(pk: String) -> Self {
        Self {
            index: None,
            pk,
            sk: SortCondition::Any,
            descending: false,
        }
    }

    fn index(index: &'static str, pk: String) -> Self {
        Self {
            index: Some(index),
            ..Self::table(pk)
        }
    }

    /// The listing `page` asks for: the index of its filter, after its position if any.
    fn listing(pk: String, page: &Page) -> Self {
        let index = if page.include_archived {
            keys::GSI2
        } else {
            keys::GSI1
        };
        let mut q = Self::index(index, pk);
        if let PageStart::After(position) = &page.start {
            q.sk = SortCondition::After(position.as_str().to_string());
        }
        q
    }

    fn prefix(mut self, prefix: String) -> Self {
        self.sk = SortCondition::Prefix(prefix);
        self
    }

    fn newest_first(mut self) -> Self {
        self.descending = true;
        self
    }

    fn expr(&self) -> Expr {
        let (pk, sk) = match self.index {
            None => (keys::PK, keys::SK),
            Some(keys::GSI1) => (keys::GSI1PK, keys::GSI1SK),
            Some(_) => (keys::GSI2PK, keys::GSI2SK),
        };
        let e = Expr::new("#pk = :pk")
            .name("#pk", pk)
            .value(":pk", s(&self.pk));
        let with = |text: &str, e: Expr| {
            Expr {
                text: format!("#pk = :pk AND {text}"),
                ..e
            }
            .name("#sk", sk)
        };
        match &self.sk {
            SortCondition::Any => e,
            SortCondition::Prefix(prefix) => {
                with("begins_with(#sk, :prefix)", e).value(":prefix", s(prefix))
            }
            SortCondition::After(after) => with("#sk > :after", e).value(":after", s(after)),
            SortCondition::Before(before) => with("#sk < :before", e).value(":before", s(before)),
            SortCondition::Between(low, high) => with("#sk BETWEEN :low AND :high", e)
                .value(":low", s(low))
                .value(":high", s(high)),
        }
    }
}

/// The rotation state is at `version` (version 0 is the state before the first rotation: no
/// item yet).
fn rotation_at_version(version: u64) -> Expr {
    let text = if version == 0 {
        "attribute_not_exists(#pk) OR #version = :version"
    } else {
        "#version = :version"
    };
    let mut condition = Expr::new(text)
        .name("#version", "version")
        .value(":version", n(version));
    if version == 0 {
        condition = condition.name("#pk", keys::PK);
    }
    condition
}

fn string_attr(item: &Item, name: &str) -> StoreResult<String> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v.clone()),
        _ => Err(backend(format!("item without string attribute {name}"))),
    }
}

/// The `reason` attribute of a projected history entry.
#[derive(serde::Deserialize)]
struct ReasonOnly {
    reason: AssignmentReason,
}

fn parse_items<T: serde::de::DeserializeOwned>(items: Vec<Item>) -> StoreResult<Vec<T>> {
    items.into_iter().map(from_item).collect()
}

/// A conditional write's failure: [`StoreError::Conflict`] when `lost` says its condition
/// failed (or a transaction held the item), the backend's error otherwise.
fn conditional_failure<E, R>(
    e: aws_sdk_dynamodb::error::SdkError<E, R>, lost: impl Fn(&E) -> bool,
) -> StoreError
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    if e.as_service_error().is_some_and(lost) {
        StoreError::Conflict
    } else {
        backend(e)
    }
}

#[async_trait]
impl Store for DynamoStore {
    async fn get_account(&self, account_id: AccountId) -> StoreResult<Option<Account>> {
        self.get_as(&keys::account(account_id)).await
    }

    async fn get_client(&self, client_id: &str) -> StoreResult<Option<ApiClient>> {
        self.get_as(&keys::client(client_id)).await
    }

    async fn field_definitions(&self, account_id: AccountId) -> StoreResult<Vec<FieldDefinition>> {
        let q = Query::table(keys::account(account_id).pk).prefix(keys::FIELD_PREFIX.into());
        let mut ordered = Vec::new();
        for item in self.query_all(&q).await? {
            let at = string_attr(&item, items::DEFINED_AT).unwrap_or_default();
            ordered.push((at, from_item::<FieldDefinition>(item)?));
        }
        ordered.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(ordered.into_iter().map(|(_, d)| d).collect())
    }

    async fn find_record(
        &self, account_id: AccountId, id: RecordId,
    ) -> StoreResult<Option<Record>> {
        Ok(self
            .get_as::<Record>(&keys::record(id))
            .await?
            .filter(|r| r.account_id == account_id))
    }

    async fn list_records(
        &self, account_id: AccountId, object_type: ObjectType, page: &Page,
    ) -> StoreResult<Listed<Record>> {
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
        if let Some(c) = completion {
            let (_, stored) = items::request_completed(c);
            tx.push(self.put(stored, Some(items::lease_held(&c.claim)))?);
            parts.push(Part::Lease);
        }
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

    async fn list_members(
        &self, account_id: AccountId, page: &Page,
    ) -> StoreResult<Listed<Member>> {
        let q = Query::listing(keys::members_partition(account_id), page);
        self.list_page(&q, page, member_position).await
    }

    async fn get_member(
        &self, account_id: AccountId, member_id: MemberId,
    ) -> StoreResult<Option<Member>> {
        Ok(self
            .get_as::<Member>(&keys::member(member_id))
            .await?
            .filter(|m| m.account_id == account_id))
    }

    async fn get_records(
        &self, account_id: AccountId, ids: &[RecordId],
    ) -> StoreResult<Vec<Record>> {
        let keys: Vec<Key> = ids.iter().map(|id| keys::record(*id)).collect();
        let mut found = self
            .batch_get_waves(&keys, false, super::RECORD_BATCH_WAVE)
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

    async fn get_members(
        &self, account_id: AccountId, ids: &[MemberId],
    ) -> StoreResult<Vec<Member>> {
        let keys: Vec<Key> = ids.iter().map(|id| keys::member(*id)).collect();
        let mut found = self.batch_get_projected(&keys, false).await?;
        let mut members = Vec::with_capacity(found.len());
        for key in &keys {
            if let Some(item) = found.remove(key) {
                let member: Member = from_item(item)?;
                if member.account_id == account_id {
                    members.push(member);
                }
            }
        }
        Ok(members)
    }

    async fn find_member_by_email(
        &self, account_id: AccountId, email: &str,
    ) -> StoreResult<Option<Member>> {
        // `<email>#` is also a prefix of the sort key of an address that begins with
        // `<email>#` (`a#b@x.example` for `a`): read every member under the prefix and keep the
        // one whose address is exactly `email`, as the embedded store does (issue 13 defect 8).
        let wanted = email.to_lowercase();
        let q = Query::index(keys::GSI2, keys::members_partition(account_id))
            .prefix(keys::email_prefix(&wanted));
        let found: Vec<Member> = parse_items(self.query_all(&q).await?)?;
        Ok(found.into_iter().find(|m| m.email.as_str() == wanted))
    }

    async fn update_member(
        &self, member: &Member, expected_version: u64, calendars: &CalendarRefs,
    ) -> StoreResult<()> {
        let (_, item) = items::member(member)?;
        let condition = items::active_at_version(member.account_id, expected_version);
        if calendars.is_empty() {
            return self.put_conditional(item, condition).await;
        }
        let mut tx = vec![self.put(item, Some(condition))?];
        let mut parts = vec![Part::Record];
        for (update, part) in self.calendar_ref_updates(member.account_id, calendars)? {
            tx.push(update);
            parts.push(part);
        }
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn list_roles(&self, account_id: AccountId) -> StoreResult<Vec<Role>> {
        let q = Query::index(keys::GSI2, keys::roles_partition(account_id));
        parse_items(self.query_all(&q).await?)
    }

    async fn list_teams(&self, account_id: AccountId) -> StoreResult<Vec<Team>> {
        let q = Query::index(keys::GSI2, keys::teams_partition(account_id));
        parse_items(self.query_all(&q).await?)
    }

    async fn list_routers(
        &self, account_id: AccountId, page: &Page,
    ) -> StoreResult<Listed<Router>> {
        let q = Query::listing(keys::routers_partition(account_id), page);
        self.list_page(&q, page, router_position).await
    }

    async fn get_router(
        &self, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<Router>> {
        Ok(self
            .find_router(router_id)
            .await?
            .filter(|r| r.account_id == account_id))
    }

    async fn find_router(&self, router_id: RouterId) -> StoreResult<Option<Router>> {
        self.get_as(&keys::router(router_id)).await
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

    async fn rotation_state(&self, router_id: RouterId) -> StoreResult<RotationState> {
        Ok(self
            .get_as(&keys::rotation(router_id))
            .await?
            .unwrap_or_default())
    }

    async fn assignment_count(&self, account_id: AccountId, month: &str) -> StoreResult<u64> {
        let Some(item) = self.get(&keys::monthly_count(account_id, month)).await? else {
            return Ok(0);
        };
        match item.get(items::COUNT) {
            Some(AttributeValue::N(v)) => v.parse().map_err(backend),
            _ => Ok(0),
        }
    }

    async fn record_dispatch(
        &self, entry: &DispatchEntry, idempotency_key: Option<&str>,
        completion: Option<&IdempotencyCompletion>, due: &DueChanges,
    ) -> StoreResult<()> {
        let (_, item) = items::dispatch_entry(entry)?;
        if idempotency_key.is_none() && completion.is_none() && due.is_empty() {
            self.client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item))
                .send()
                .await
                .map_err(backend)?;
            return Ok(());
        }
        let mut tx = vec![self.put(item, None)?];
        let mut parts = vec![Part::Other];
        if let Some(key) = idempotency_key {
            let expires = entry.dispatched_at.timestamp() + MARKER_LIFETIME_SECS;
            let (_, marker) = items::marker(key, expires);
            tx.push(self.put(marker, Some(items::absent()))?);
            parts.push(Part::Marker);
        }
        if let Some(c) = completion {
            let (_, stored) = items::request_completed(c);
            tx.push(self.put(stored, Some(items::lease_held(&c.claim)))?);
            parts.push(Part::Lease);
        }
        self.due_writes(due, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn list_router_dispatches(
        &self, account_id: AccountId, router_id: RouterId, page: &Page,
    ) -> StoreResult<Listed<DispatchEntry>> {
        let prefix = keys::DISPATCH_PREFIX.to_string();
        let mut q = Query::table(keys::router(router_id).pk).newest_first();
        let wanted = page.limit.saturating_add(1);
        let items = match &page.start {
            PageStart::Offset(offset) => {
                q.sk = SortCondition::Prefix(prefix);
                self.query_range(&q, *offset, wanted).await?
            }
            PageStart::After(position) => {
                // BETWEEN includes the position itself (the previous page's last entry): read
                // one more and drop it.
                let high = format!("{prefix}{}", position.as_str());
                q.sk = SortCondition::Between(prefix, high.clone());
                let mut read = self.query_range(&q, 0, wanted.saturating_add(1)).await?;
                if read
                    .first()
                    .is_some_and(|i| string_attr(i, keys::SK).ok().as_deref() == Some(&high))
                {
                    read.remove(0);
                }
                read.truncate(wanted);
                read
            }
        };
        let entries: Vec<DispatchEntry> = parse_items(items)?;
        let entries = entries
            .into_iter()
            .filter(|e| e.account_id == account_id)
            .collect();
        Ok(Listed::from_lookahead(
            entries,
            page.limit,
            dispatch_position,
        ))
    }

    async fn list_router_dispatches_between(
        &self, account_id: AccountId, router_id: RouterId, from: chrono::DateTime<chrono::Utc>,
        to: chrono::DateTime<chrono::Utc>, after: Option<&Position>, limit: usize,
    ) -> StoreResult<Listed<DispatchEntry>> {
        // `<at>#<nil id>` sorts before every entry at `at` (ids are never nil): BETWEEN the
        // bounds of `from` and `to` is [from, to). After a position, BETWEEN includes the
        // position itself (the previous page's last entry): it is read and dropped.
        let bound = |at| {
            format!(
                "{}{}",
                keys::DISPATCH_PREFIX,
                keys::dispatch_sort_key(at, Uuid::nil())
            )
        };
        let (mut low, high) = (bound(from), bound(to));
        let mut skip: Option<String> = None;
        if let Some(after) = after {
            let position = format!("{}{}", keys::DISPATCH_PREFIX, after.as_str());
            if position >= low {
                skip = Some(position.clone());
                low = position;
            }
        }
        if low >= high {
            return Ok(Listed::new(Vec::new(), None));
        }
        let q = Query {
            sk: SortCondition::Between(low, high),
            ..Query::table(keys::router(router_id).pk)
        };
        let wanted = limit.saturating_add(1);
        let mut items = self
            .query_range(&q, 0, wanted.saturating_add(usize::from(skip.is_some())))
            .await?;
        if let Some(skip) = &skip {
            if items
                .first()
                .is_some_and(|i| string_attr(i, keys::SK).ok().as_deref() == Some(skip))
            {
                items.remove(0);
            }
        }
        items.truncate(wanted);
        let entries: Vec<DispatchEntry> = parse_items(items)?;
        let entries = entries
            .into_iter()
            .filter(|e| e.account_id == account_id)
            .collect();
        Ok(Listed::from_lookahead(entries, limit, dispatch_position))
    }

    async fn list_record_dispatches(
        &self, account_id: AccountId, object_type: ObjectType, record_id: RecordId, page: &Page,
    ) -> StoreResult<Listed<DispatchEntry>> {
        let mut q = Query::index(
            keys::GSI2,
            keys::record_dispatches_partition(account_id, object_type, record_id),
        )
        .newest_first();
        if let PageStart::After(position) = &page.start {
            q.sk = SortCondition::Before(position.as_str().to_string());
        }
        self.list_page(&q, page, dispatch_position).await
    }

    async fn get_dispatch(&self, key: &DispatchEntryKey) -> StoreResult<Option<DispatchEntry>> {
        self.get_as(&keys::dispatch_entry(
            key.router_id,
            key.dispatched_at,
            key.id,
        ))
        .await
    }

    async fn update_crm_sync(
        &self, key: &DispatchEntryKey, from: &CrmSyncState, to: &CrmSyncState, due: &DueChanges,
    ) -> StoreResult<()> {
        if from.status.is_final() {
            return Err(StoreError::Conflict);
        }
        let entry_key = keys::dispatch_entry(key.router_id, key.dispatched_at, key.id);
        let update = Expr::new("SET #sync = :state")
            .name("#pk", keys::PK)
            .name("#sync", items::CRM_SYNC)
            .name("#status", "status")
            .name("#attempts", "attempts")
            .value(":state", items::crm_sync_value(to)?)
            .value(":from_status", items::crm_sync_status_value(from.status)?)
            .value(":from_attempts", n(u64::from(from.attempts)));
        let condition = "attribute_exists(#pk) AND #sync.#status = :from_status AND #sync.#attempts = :from_attempts";
        if due.is_empty() {
            return match self
                .update_conditional(&entry_key, &update, condition)
                .await?
            {
                Some(_) => Ok(()),
                None => Err(StoreError::Conflict),
            };
        }
        let mut tx = vec![self.update_item(&entry_key, &update, Some(condition.into()))?];
        let mut parts = vec![Part::Other];
        self.due_writes(due, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn end_sla_check(
        &self, key: &DispatchEntryKey, to: SlaStatus, due: &DueChanges,
    ) -> StoreResult<()> {
        let mut tx = vec![self.sla_status_update(key, to)?];
        let mut parts = vec![Part::Other];
        self.due_writes(due, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn get_due(&self, id: &DueId) -> StoreResult<Option<DueItem>> {
        self.get(&keys::due_item(id))
            .await?
            .map(|item| items::read_due_item(&item))
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
        .name("#runs", items::DUE_RUNS)
        .name("#parked_at", items::DUE_PARKED_AT)
        .value(":one", n(1))
        .name("#lease_id", items::DUE_LEASE_ID)
        .name("#lease_until", items::DUE_LEASE_UNTIL)
        .name("#resume_at", items::DUE_RESUME_AT)
        .name("#gsi1sk", keys::GSI1SK)
        .name("#attempt", items::DUE_ATTEMPT)
        .value(":lease_id", s(&lease.id))
        .value(":lease_until", items::millis(lease.until))
        .value(":resume_at", s(keys::sortable_time(lease.until)))
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
                if current.get(items::DUE_LEASE_ID).and_then(|v| v.as_s().ok())
                    == Some(&lease.id) =>
            {
                current
            }
            Err(_) => return Ok(None),
        };
        items::read_due_item(&item).map(Some)
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
        let update = items::due_parked(parking);
        match self
            .update_conditional(
                &keys::due_item(&parking.id),
                &update,
                items::DUE_LEASE_CONDITION,
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
            .map(items::read_due_item)
            .collect()
    }

    async fn rearm_due(
        &self, item: &DueItem, resume_at: chrono::DateTime<chrono::Utc>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<bool> {
        let index = keys::due_index(&item.id, resume_at);
        let update = Expr::new("SET #resume_at = :resume_at, #gsi1sk = :gsi1sk")
            .name("#resume_at", items::DUE_RESUME_AT)
            .name("#gsi1sk", keys::GSI1SK)
            .name("#attempt", items::DUE_ATTEMPT)
            .name("#lease_until", items::DUE_LEASE_UNTIL)
            .value(":resume_at", s(keys::sortable_time(resume_at)))
            .value(":gsi1sk", s(index.sk))
            .value(":read_resume_at", s(keys::sortable_time(item.resume_at)))
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
        let bound = format!("{}#~", keys::sortable_time(now));
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
                due.push(items::read_due_item(&item)?);
            }
        }
        due.sort_by(|a, b| (a.resume_at, &a.id).cmp(&(b.resume_at, &b.id)));
        due.truncate(limit);
        Ok(due)
    }

    async fn tally_assignments(
        &self, account_id: AccountId, router_id: RouterId, from: chrono::DateTime<chrono::Utc>,
        to: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<Vec<AssignmentTally>> {
        // Every run of counters and both partial edges at once: one sequential round.
        let parts = super::tally::split(from, to);
        let counters = parts
            .counters
            .into_iter()
            .map(|buckets| self.tally_counters(account_id, router_id, buckets));
        let edges = parts
            .edges
            .into_iter()
            .map(|edge| self.tally_entries(account_id, router_id, edge));
        let (counted, listed) = futures_util::future::try_join(
            futures_util::future::try_join_all(counters),
            futures_util::future::try_join_all(edges),
        )
        .await?;
        let mut tally: Vec<AssignmentTally> = Vec::new();
        for counted in counted.iter().chain(&listed).flatten() {
            super::tally::add(&mut tally, &counted.user, counted.reason, counted.count);
        }
        Ok(tally)
    }

    async fn claim_idempotency_key(&self, claim: &IdempotencyClaim) -> StoreResult<ClaimOutcome> {
        let now = claim.claimed_at;
        let (key, item) = items::request_claim(claim);
        // A claim lost to a key that then expires or is released between the two requests is
        // tried again; anything else answers on the first round.
        for _ in 0..CLAIM_ATTEMPTS {
            match self
                .put_conditional(item.clone(), items::claimable(now))
                .await
            {
                Ok(()) => return Ok(ClaimOutcome::Claimed),
                Err(StoreError::Conflict) => {}
                Err(e) => return Err(e),
            }
            if let Some(held) = self.get(&key).await? {
                if let Some(outcome) = items::read_request(&held, now)? {
                    return Ok(outcome);
                }
            }
        }
        Err(StoreError::Backend(
            "an Idempotency-Key kept changing while it was claimed".into(),
        ))
    }

    async fn complete_idempotency_key(
        &self, completion: &IdempotencyCompletion,
    ) -> StoreResult<()> {
        let (_, item) = items::request_completed(completion);
        match self
            .put_conditional(item, items::lease_held(&completion.claim))
            .await
        {
            Err(StoreError::Conflict) => Err(StoreError::LeaseLost),
            other => other,
        }
    }

    async fn amend_idempotency_response(
        &self, completion: &IdempotencyCompletion,
    ) -> StoreResult<()> {
        let (_, item) = items::request_completed(completion);
        let condition = Expr::new("#lease = :lease AND #state = :completed")
            .name("#lease", items::REQUEST_LEASE_ID)
            .name("#state", items::REQUEST_STATE)
            .value(":lease", s(&completion.claim.lease_id))
            .value(":completed", s("completed"));
        match self.put_conditional(item, condition).await {
            Err(StoreError::Conflict) => Err(StoreError::LeaseLost),
            other => other,
        }
    }

    async fn release_idempotency_key(&self, claim: &IdempotencyClaim) -> StoreResult<()> {
        let (key, _) = items::request_claim(claim);
        match self
            .delete_conditional(&key, items::lease_held(claim))
            .await
        {
            // Another request holds the key now (or a write raced this one): nothing of ours to
            // free now; a claim still ours frees itself when its lease ends.
            Err(StoreError::Conflict) => Ok(()),
            other => other,
        }
    }

    async fn idempotency_key_used(&self, key: &str) -> StoreResult<bool> {
        Ok(self.get(&keys::idempotency(key)).await?.is_some())
    }

    async fn commit_assignment(&self, w: &AssignmentWrite) -> StoreResult<()> {
        if w.quota == Some(0) {
            // `attribute_not_exists(count) OR count < 0` would pass on a fresh month.
            return Err(StoreError::Conflict);
        }
        let mut tx = Vec::new();
        let mut parts = Vec::new();

        let (_, record) = items::record(&w.record)?;
        tx.push(self.put(
            record,
            Some(items::active_at_version(
                w.record.account_id,
                w.record_version,
            )),
        )?);
        parts.push(Part::Record);

        // The revision the run evaluated is still live (BEHAVIOR 15): the router is unchanged.
        tx.push(self.condition_check(
            &keys::router(w.entry.router_id),
            items::router_at_version(w.router_version),
        )?);
        parts.push(Part::Other);

        if let Some((router_id, state, version)) = &w.rotation {
            let (_, item) = items::rotation(*router_id, state)?;
            tx.push(self.put(item, Some(rotation_at_version(*version)))?);
            parts.push(Part::Rotation);
        }

        match &w.member {
            Some((member, version)) => {
                let (_, item) = items::member(member)?;
                tx.push(self.put(
                    item,
                    Some(items::active_at_version(member.account_id, *version)),
                )?);
            }
            None => {
                // Counters untouched: still only while the member is active at the version read.
                let (id, version) = w.chosen;
                let condition = items::active_at_version(w.entry.account_id, version);
                tx.push(self.condition_check(&keys::member(id), condition)?);
            }
        }
        parts.push(Part::Member);

        // The monthly count serves the quota only: an account without one writes none, so
        // its routers do not all contend on one item (issue 14).
        if let Some(quota) = w.quota {
            let count_key = keys::monthly_count(w.entry.account_id, &w.month);
            let mut count = Expr::new(
                "ADD #count :one SET #type = :type, #account = :account, #month = :month",
            )
            .name("#count", items::COUNT)
            .name("#type", keys::ITEM_TYPE)
            .name("#account", "account_id")
            .name("#month", "month")
            .value(":one", n(1))
            .value(":type", s("monthly_count"))
            .value(":account", s(w.entry.account_id.to_string()))
            .value(":month", s(&w.month));
            count.values.insert(":quota".into(), n(quota));
            let quota_condition =
                Some("attribute_not_exists(#count) OR #count < :quota".to_string());
            tx.push(self.update_item(&count_key, &count, quota_condition)?);
            parts.push(Part::Quota);
        }

        let (_, entry) = items::dispatch_entry(&w.entry)?;
        tx.push(self.put(entry, None)?);
        parts.push(Part::Other);
        for update in self.tally_updates(&w.entry)? {
            tx.push(update);
            parts.push(Part::Other);
        }

        if let Some(c) = &w.completion {
            let (_, stored) = items::request_completed(c);
            tx.push(self.put(stored, Some(items::lease_held(&c.claim)))?);
            parts.push(Part::Lease);
        }
        if let Some(key) = &w.idempotency_key {
            let expires = w.entry.dispatched_at.timestamp() + MARKER_LIFETIME_SECS;
            let (_, marker) = items::marker(key, expires);
            tx.push(self.put(marker, Some(items::absent()))?);
            parts.push(Part::Marker);
        }
        if let Some(key) = &w.ends_check {
            // The check must still be pending: like a lease, of two runs one commits.
            tx.push(self.sla_status_update(key, SlaStatus::Reassigned)?);
            parts.push(Part::Lease);
        }
        self.due_writes(&w.due, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn create_webhook(
        &self, subscription: &WebhookSubscription, max: u64,
    ) -> StoreResult<()> {
        let (_, item) = items::webhook(subscription)?;
        let tx = vec![
            self.webhook_count_update(subscription.account_id, 1, Some(max))?,
            self.put(item, Some(items::absent()))?,
        ];
        match self
            .transact(tx, &[Part::Quota, Part::Other], Precedence::RecordFirst)
            .await
        {
            Err(StoreError::Conflict) => {
                let count = match self
                    .get(&keys::webhook_count(subscription.account_id))
                    .await?
                {
                    Some(item) => match item.get(items::COUNT) {
                        Some(AttributeValue::N(v)) => v.parse::<u64>().unwrap_or(0),
                        _ => 0,
                    },
                    None => 0,
                };
                if count >= max {
                    Err(StoreError::Rejected(format!(
                        "the account has {max} subscriptions already"
                    )))
                } else {
                    Err(StoreError::Conflict)
                }
            }
            other => other,
        }
    }

    async fn list_webhooks(
        &self, account_id: AccountId, page: &Page,
    ) -> StoreResult<Listed<WebhookSubscription>> {
        let mut q = Query::table(keys::account(account_id).pk);
        q.sk = match &page.start {
            PageStart::Offset(_) => SortCondition::Prefix(keys::WEBHOOK_PREFIX.to_string()),
            PageStart::After(after) => SortCondition::Between(
                format!("{}{}!", keys::WEBHOOK_PREFIX, after.as_str()),
                format!("{}~", keys::WEBHOOK_PREFIX),
            ),
        };
        self.list_page(&q, page, webhook_position).await
    }

    async fn get_webhook(
        &self, account_id: AccountId, id: WebhookId,
    ) -> StoreResult<Option<WebhookSubscription>> {
        self.get_as(&keys::webhook(account_id, id)).await
    }

    async fn update_webhook(
        &self, subscription: &WebhookSubscription, expected_version: u64, reset_health: bool,
        due: &DueChanges,
    ) -> StoreResult<()> {
        let key = keys::webhook(subscription.account_id, subscription.id);
        let update = items::webhook_update(subscription, reset_health)?;
        let condition = items::at_version(expected_version);
        let update = Expr {
            names: update
                .names
                .into_iter()
                .chain(condition.names.clone())
                .collect(),
            values: update
                .values
                .into_iter()
                .chain(condition.values.clone())
                .collect(),
            ..update
        };
        let mut tx = vec![self.update_item(&key, &update, Some(condition.text))?];
        let mut parts = vec![Part::Record];
        self.due_writes(due, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn delete_webhook(&self, account_id: AccountId, id: WebhookId) -> StoreResult<bool> {
        let exists = Expr::new("attribute_exists(#pk)").name("#pk", keys::PK);
        let tx = vec![
            self.delete(&keys::webhook(account_id, id), exists)?,
            self.webhook_count_update(account_id, -1, None)?,
        ];
        match self
            .transact(tx, &[Part::Record, Part::Other], Precedence::RecordFirst)
            .await
        {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn get_delivery(
        &self, subscription_id: WebhookId, delivery_id: &str,
    ) -> StoreResult<Option<WebhookDelivery>> {
        self.get_as(&keys::delivery(subscription_id, delivery_id))
            .await
    }

    async fn list_deliveries(
        &self, subscription_id: WebhookId, page: &Page,
    ) -> StoreResult<Listed<WebhookDelivery>> {
        let partition = keys::delivery(subscription_id, "").pk;
        let mut q = Query::table(partition).newest_first();
        q.sk = match &page.start {
            PageStart::Offset(_) => SortCondition::Prefix(keys::DELIVERY_PREFIX.to_string()),
            PageStart::After(after) => {
                SortCondition::Before(format!("{}{}", keys::DELIVERY_PREFIX, after.as_str()))
            }
        };
        self.list_page(&q, page, delivery_position).await
    }

    async fn record_delivery(
        &self, delivery: &WebhookDelivery, expected_attempts: u32,
        health: Option<&SubscriptionHealth>, due: &DueChanges,
    ) -> StoreResult<()> {
        let (_, item) = items::delivery(delivery)?;
        let attempts = Expr::new("#attempts = :expected")
            .name("#attempts", "attempts")
            .value(":expected", n(u64::from(expected_attempts)));
        let mut tx = vec![self.put(item, Some(attempts))?];
        let mut parts = vec![Part::Record];
        if let Some(health) = health {
            let (update, condition) = items::health_update(&health.change)?;
            let key = keys::webhook(health.account_id, health.subscription_id);
            tx.push(self.update_item(&key, &update, Some(condition))?);
            parts.push(Part::Other);
        }
        self.due_writes(due, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn create_router(
        &self, router: &Router, revision: &RouterRevision, max: u64,
        completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()> {
        let (_, item) = items::router(router)?;
        let (_, first) = items::router_revision(revision)?;
        let mut tx = vec![
            self.router_count_update(router.account_id, 1, Some(max))?,
            self.put(item, Some(items::absent()))?,
            self.put(first, Some(items::absent()))?,
        ];
        let mut parts = vec![Part::Quota, Part::Record, Part::Other];
        if let Some(c) = completion {
            let (_, stored) = items::request_completed(c);
            tx.push(self.put(stored, Some(items::lease_held(&c.claim)))?);
            parts.push(Part::Lease);
        }
        for (update, part) in
            self.calendar_ref_updates(router.account_id, &router.calendar_refs())?
        {
            tx.push(update);
            parts.push(part);
        }
        self.transact_under_limit(
            tx,
            &parts,
            &keys::router_count(router.account_id),
            max,
            "routers",
        )
        .await
    }

    async fn get_router_draft(
        &self, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<RouterDraft>> {
        Ok(self
            .get_as::<RouterDraft>(&keys::router_draft(router_id))
            .await?
            .filter(|d| d.account_id == account_id))
    }

    async fn put_router_draft(
        &self, draft: &RouterDraft, replaces: Option<&ETag>, router_version: u64,
        calendars: &CalendarRefs, completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()> {
        let (_, item) = items::router_draft(draft)?;
        let condition = match replaces {
            Some(etag) => items::draft_tagged(etag),
            None => items::absent(),
        };
        let mut tx = vec![
            self.condition_check(
                &keys::router(draft.router_id),
                items::router_at_version(router_version),
            )?,
            self.put(item, Some(condition))?,
        ];
        let mut parts = vec![Part::Record, Part::Other];
        if let Some(c) = completion {
            let (_, stored) = items::request_completed(c);
            tx.push(self.put(stored, Some(items::lease_held(&c.claim)))?);
            parts.push(Part::Lease);
        }
        for (update, part) in self.calendar_ref_updates(draft.account_id, calendars)? {
            tx.push(update);
            parts.push(part);
        }
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn delete_router_draft(
        &self, account_id: AccountId, router_id: RouterId, etag: &ETag, calendars: &CalendarRefs,
    ) -> StoreResult<()> {
        let condition = items::draft_tagged(etag)
            .name("#account", "account_id")
            .value(":account", s(account_id.to_string()));
        let condition = Expr {
            text: format!("{} AND #account = :account", condition.text),
            ..condition
        };
        if calendars.is_empty() {
            return self
                .delete_conditional(&keys::router_draft(router_id), condition)
                .await;
        }
        let mut tx = vec![self.delete(&keys::router_draft(router_id), condition)?];
        let mut parts = vec![Part::Other];
        for (update, part) in self.calendar_ref_updates(account_id, calendars)? {
            tx.push(update);
            parts.push(part);
        }
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn get_router_revision(
        &self, account_id: AccountId, router_id: RouterId, revision: u64,
    ) -> StoreResult<Option<RouterRevision>> {
        Ok(self
            .get_as::<RouterRevision>(&keys::router_revision(router_id, revision))
            .await?
            .filter(|r| r.account_id == account_id))
    }

    async fn list_router_revisions(
        &self, account_id: AccountId, router_id: RouterId, page: &Page,
    ) -> StoreResult<Listed<RouterRevision>> {
        let mut q = Query::table(keys::router(router_id).pk).newest_first();
        q.sk = match &page.start {
            PageStart::Offset(_) => SortCondition::Prefix(keys::REVISION_PREFIX.to_string()),
            // Older than the position: up to the number just below it (a position is a
            // revision number this list issued; the cursor is tamper-evident).
            PageStart::After(after) => match after.as_str().parse::<u64>() {
                Ok(number) if number > 1 => SortCondition::Between(
                    keys::REVISION_PREFIX.to_string(),
                    format!(
                        "{}{}",
                        keys::REVISION_PREFIX,
                        keys::revision_number(number - 1)
                    ),
                ),
                _ => return Ok(Listed::new(Vec::new(), None)),
            },
        };
        let wanted = page.limit.saturating_add(1);
        let items: Vec<RouterRevision> =
            parse_items::<RouterRevision>(self.query_range(&q, page.offset(), wanted).await?)?
                .into_iter()
                .filter(|r| r.account_id == account_id)
                .collect();
        Ok(Listed::from_lookahead(items, page.limit, revision_position))
    }

    async fn write_router(&self, w: &RouterWrite) -> StoreResult<()> {
        let (_, item) = items::router(&w.router)?;
        let mut tx = vec![self.put(item, Some(items::router_at_version(w.expected_version)))?];
        let mut parts = vec![Part::Record];
        if let Some(revision) = &w.revision {
            let (_, item) = items::router_revision(revision)?;
            tx.push(self.put(item, Some(items::absent()))?);
            parts.push(Part::Other);
        }
        let draft_key = keys::router_draft(w.router.id);
        match &w.draft {
            DraftChange::Keep => {}
            DraftChange::Publish(etag) => {
                tx.push(self.delete(&draft_key, items::draft_tagged(etag))?);
                parts.push(Part::Other);
            }
            DraftChange::Drop(Some(etag)) => {
                tx.push(self.delete(&draft_key, items::draft_tagged(etag))?);
                parts.push(Part::Other);
            }
            DraftChange::Drop(None) => {
                tx.push(self.condition_check(&draft_key, items::absent())?);
                parts.push(Part::Other);
            }
        }
        if let Some((state, version)) = &w.rotation {
            let (_, item) = items::rotation(w.router.id, state)?;
            tx.push(self.put(item, Some(rotation_at_version(*version)))?);
            parts.push(Part::Rotation);
        }
        if w.archives {
            tx.push(self.router_count_update(w.router.account_id, -1, None)?);
            parts.push(Part::Other);
        }
        for (update, part) in self.calendar_ref_updates(w.router.account_id, &w.calendars)? {
            tx.push(update);
            parts.push(part);
        }
        if let Some(c) = &w.completion {
            let (_, stored) = items::request_completed(c);
            tx.push(self.put(stored, Some(items::lease_held(&c.claim)))?);
            parts.push(Part::Lease);
        }
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn create_holiday_calendar(
        &self, calendar: &HolidayCalendar, max: u64,
    ) -> StoreResult<()> {
        let (_, item) = items::holiday_calendar(calendar)?;
        let tx = vec![
            self.calendar_count_update(calendar.account_id, 1, Some(max))?,
            self.put(item, Some(items::absent()))?,
        ];
        let count = keys::holiday_calendar_count(calendar.account_id);
        self.transact_under_limit(
            tx,
            &[Part::Quota, Part::Other],
            &count,
            max,
            "holiday calendars",
        )
        .await
    }

    async fn list_holiday_calendars(
        &self, account_id: AccountId, page: &Page,
    ) -> StoreResult<Listed<HolidayCalendar>> {
        // All of them (at most 20, one page), ordered and paged in memory by creation time.
        let mut q = Query::table(keys::account(account_id).pk);
        q.sk = SortCondition::Prefix(keys::HOLIDAY_CALENDAR_PREFIX.to_string());
        let all = parse_items::<HolidayCalendar>(self.query_all(&q).await?)?;
        Ok(holiday_calendar_page(all, page))
    }

    async fn get_holiday_calendar(
        &self, account_id: AccountId, id: HolidayCalendarId,
    ) -> StoreResult<Option<HolidayCalendar>> {
        self.get_as(&keys::holiday_calendar(account_id, id)).await
    }

    async fn update_holiday_calendar(
        &self, calendar: &HolidayCalendar, expected_version: u64,
    ) -> StoreResult<()> {
        let key = keys::holiday_calendar(calendar.account_id, calendar.id);
        let update = items::holiday_calendar_update(calendar)?;
        let condition = items::at_version(expected_version);
        let update = Expr {
            names: update
                .names
                .into_iter()
                .chain(condition.names.clone())
                .collect(),
            values: update
                .values
                .into_iter()
                .chain(condition.values.clone())
                .collect(),
            ..update
        };
        let tx = vec![self.update_item(&key, &update, Some(condition.text))?];
        self.transact(tx, &[Part::Record], Precedence::RecordFirst)
            .await
    }

    async fn delete_holiday_calendar(
        &self, account_id: AccountId, id: HolidayCalendarId,
    ) -> StoreResult<CalendarDeletion> {
        let unused = Expr::new(
            "attribute_exists(#pk) AND (attribute_not_exists(#references) OR #references <= :zero)",
        )
        .name("#pk", keys::PK)
        .name("#references", items::REFERENCES)
        .value(":zero", n(0));
        let tx = vec![
            self.delete(&keys::holiday_calendar(account_id, id), unused)?,
            self.calendar_count_update(account_id, -1, None)?,
        ];
        match self
            .transact(tx, &[Part::Record, Part::Other], Precedence::RecordFirst)
            .await
        {
            Ok(()) => Ok(CalendarDeletion::Deleted),
            // Which condition failed: the calendar is gone, or something names it.
            Err(StoreError::Conflict) => Ok(
                match self.get(&keys::holiday_calendar(account_id, id)).await? {
                    None => CalendarDeletion::NotFound,
                    Some(_) => CalendarDeletion::InUse,
                },
            ),
            Err(e) => Err(e),
        }
    }

    async fn provision(&self, plan: &ProvisionPlan) -> StoreResult<ProvisionReport> {
        // Everything the plan would write, in plan order.
        let defined_at = keys::sortable_time(chrono::Utc::now());
        let mut entries: Vec<Provisioned> = Vec::new();
        let mut add = |label: String, (key, item): (Key, Item), guards: Vec<(Key, Item)>| {
            entries.push(Provisioned {
                label,
                key,
                item,
                guards,
                counted_router_of: None,
                bytes: 0,
            })
        };
        for a in &plan.accounts {
            add(
                format!("account {}", a.account.id),
                items::account(&a.account)?,
                vec![],
            );
            for c in &a.clients {
                add(format!("client {}", c.client_id), items::client(c)?, vec![]);
            }
            for r in &a.roles {
                add(format!("role {}", r.id), items::role(r)?, vec![]);
            }
            for c in &a.holiday_calendars {
                add(
                    format!("holiday calendar {}", c.id),
                    items::holiday_calendar(c)?,
                    vec![],
                );
            }
            for m in &a.members {
                add(format!("member {}", m.id), items::member(m)?, vec![]);
            }
            for t in &a.teams {
                add(format!("team {}", t.id), items::team(t)?, vec![]);
            }
            for (i, d) in a.field_definitions.iter().enumerate() {
                add(
                    format!("field {}.{}", d.object_type, d.internal_name),
                    items::field_definition(a.account.id, d, &format!("{defined_at}#{i:06}"))?,
                    vec![],
                );
            }
            for r in &a.routers {
                let first = items::router_revision(&RouterRevision::provisioned(r))?;
                add(format!("router {}", r.id), items::router(r)?, vec![first]);
            }
            for p in &a.records {
                let guards = p
                    .unique_keys
                    .iter()
                    .map(|k| items::guard(&p.record, k))
                    .collect();
                add(
                    format!("record {}", p.record.id),
                    items::record(&p.record)?,
                    guards,
                );
            }
        }

        // A non-archived router counts against its account's limit (BEHAVIOR 15).
        let counted: HashMap<Key, AccountId> = plan
            .accounts
            .iter()
            .flat_map(|a| &a.routers)
            .filter(|r| !r.is_archived())
            .map(|r| (keys::router(r.id), r.account_id))
            .collect();
        for e in &mut entries {
            e.counted_router_of = counted.get(&e.key).copied();
        }

        // Check before the first write (issue 13 defect 12): every item within DynamoDB's own
        // limits, so no chunk is refused after another was written.
        for e in &mut entries {
            let mut bytes = 0;
            for item in std::iter::once(&e.item).chain(e.guards.iter().map(|(_, g)| g)) {
                bytes += limits::check_item(item).map_err(|why| {
                    StoreError::Rejected(format!("{}: {why}; nothing was written", e.label))
                })?;
            }
            e.bytes = bytes;
        }

        // Check before the first write: what exists, and whether a new record's key is taken.
        let all_keys: Vec<Key> = entries.iter().map(|e| e.key.clone()).collect();
        let existing = self.batch_get(&all_keys).await?;
        let fresh_records: Vec<&PlannedRecord> = plan
            .accounts
            .iter()
            .flat_map(|a| &a.records)
            .filter(|p| !existing.contains_key(&keys::record(p.record.id)))
            .collect();
        let guard_keys: Vec<Key> = fresh_records
            .iter()
            .flat_map(|p| {
                p.unique_keys.iter().map(|k| {
                    keys::guard(
                        p.record.account_id,
                        p.record.object_type,
                        &k.field,
                        &k.value,
                    )
                })
            })
            .collect();
        let guards = self.batch_get(&guard_keys).await?;
        for p in &fresh_records {
            for k in &p.unique_keys {
                let g = keys::guard(
                    p.record.account_id,
                    p.record.object_type,
                    &k.field,
                    &k.value,
                );
                let held_by_other = guards
                    .get(&g)
                    .and_then(|item| string_attr(item, items::GUARD_RECORD_ID).ok())
                    .is_some_and(|holder| holder != p.record.id.to_string());
                if held_by_other {
                    return Err(StoreError::Rejected(p.key_taken_message(k)));
                }
            }
        }

        // A new calendar is stored with the references of the new items that name it (the
        // loader refuses a file naming a calendar it does not hold, so the calendar comes with
        // them; one that exists already keeps its count and gains theirs in a last write).
        let mut refs: HashMap<(AccountId, HolidayCalendarId), i64> = HashMap::new();
        for a in &plan.accounts {
            let named = a
                .members
                .iter()
                .filter(|m| m.is_active() && !existing.contains_key(&keys::member(m.id)))
                .filter_map(|m| m.holiday_calendar_id)
                .chain(
                    a.routers
                        .iter()
                        .filter(|r| !existing.contains_key(&keys::router(r.id)))
                        .flat_map(|r| r.calendar_refs().gaining().collect::<Vec<_>>()),
                );
            for id in named {
                *refs.entry((a.account.id, id)).or_default() += 1;
            }
        }
        let mut late_refs: HashMap<AccountId, CalendarRefs> = HashMap::new();
        for ((account, id), count) in &refs {
            let key = keys::holiday_calendar(*account, *id);
            match entries.iter_mut().find(|e| e.key == key) {
                Some(e) if !existing.contains_key(&key) => {
                    e.item.insert(
                        items::REFERENCES.into(),
                        AttributeValue::N(count.to_string()),
                    );
                }
                _ => {
                    let late = late_refs.entry(*account).or_default();
                    for _ in 0..*count {
                        late.add(Some(*id));
                    }
                }
            }
        }

        // Write what is missing, in transactions of at most 100 items and 4 MB (a record with
        // its guards always in the same one).
        let mut report = ProvisionReport::default();
        let mut chunk: Vec<&Provisioned> = Vec::new();
        let mut chunk_items = 0usize;
        let mut chunk_bytes = 0usize;
        let mut written = 0usize;
        for e in &entries {
            if existing.contains_key(&e.key) {
                report.skipped.push(e.label.clone());
                continue;
            }
            // A chunk holds one count update per account whose routers it inserts.
            let new_count = e
                .counted_router_of
                .is_some_and(|a| !chunk.iter().any(|c| c.counted_router_of == Some(a)));
            let size = 1 + e.guards.len() + usize::from(new_count);
            if chunk_items + size > MAX_TRANSACTION_ITEMS
                || chunk_bytes + e.bytes > limits::MAX_TRANSACTION_BYTES
            {
                if !chunk.is_empty() {
                    self.provision_chunk(&chunk, written).await?;
                }
                written += chunk.len();
                chunk.clear();
                chunk_items = 0;
                chunk_bytes = 0;
            }
            if chunk.is_empty() {
                // A fresh chunk: this entry's count update is new in it whatever was before.
                chunk_items = usize::from(e.counted_router_of.is_some());
                chunk_items += 1 + e.guards.len();
                chunk.push(e);
                chunk_bytes += e.bytes;
                report.inserted += 1;
                continue;
            }
            chunk.push(e);
            chunk_items += size;
            chunk_bytes += e.bytes;
            report.inserted += 1;
        }
        if !chunk.is_empty() {
            self.provision_chunk(&chunk, written).await?;
        }
        for (account, late) in &late_refs {
            let (tx, parts): (Vec<_>, Vec<_>) = self
                .calendar_ref_updates(*account, late)?
                .into_iter()
                .unzip();
            self.transact(tx, &parts, Precedence::RecordFirst).await?;
        }
        // Each account's calendar count (BEHAVIOR 17's limit of 20) is set from the calendars
        // it holds now: a provisioned calendar counts as a created one, and a run that stopped
        // between its chunks and this write is repaired by the next run.
        for a in plan
            .accounts
            .iter()
            .filter(|a| !a.holiday_calendars.is_empty())
        {
            let mut q = Query::table(keys::account(a.account.id).pk);
            q.sk = SortCondition::Prefix(keys::HOLIDAY_CALENDAR_PREFIX.to_string());
            let held = self.query_all(&q).await?.len();
            let e = Expr::new("SET #count = :count")
                .name("#count", items::COUNT)
                .value(":count", n(held as u64));
            let update = self.update_item(&keys::holiday_calendar_count(a.account.id), &e, None)?;
            self.transact(vec![update], &[Part::Other], Precedence::RecordFirst)
                .await?;
        }
        Ok(report)
    }
}
