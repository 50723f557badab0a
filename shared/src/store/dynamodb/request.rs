//! The DynamoDB requests every aggregate's code is written with: consistent reads, paged
//! queries, the transaction runner (cancellation reasons mapped, `TransactionConflict` retried
//! until the deadline of [`crate::store::retry`]),
//! the items of a transaction (`Put`, `Delete`, `Update`, `ConditionCheck`) and single
//! conditional writes.

use super::cancel::{classify, Outcome, Part, Precedence};
use super::items;
use super::items::{backend, from_item, key_attributes, n, Expr, Item};
use super::query::Query;
use super::DynamoStore;
use crate::store::keys::Key;
use crate::store::size;
use crate::store::Backoff;
use crate::store::{Listed, Page, Position, StoreError, StoreResult};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, TransactWriteItem, Update,
};

/// The string attribute `name` of `item`.
///
/// Errors: a backend error when it is absent or not a string.
pub(super) fn string_attr(item: &Item, name: &str) -> StoreResult<String> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v.clone()),
        _ => Err(backend(format!("item without string attribute {name}"))),
    }
}

/// Each item read as a `T`.
///
/// Errors: a backend error for an item that does not read as one.
pub(super) fn parse_items<T: serde::de::DeserializeOwned>(items: Vec<Item>) -> StoreResult<Vec<T>> {
    items.into_iter().map(from_item).collect()
}

/// A conditional write's failure: [`StoreError::Conflict`] when `lost` says its condition
/// failed, the backend's error otherwise.
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

/// The answer of a write that kept meeting transactions until `backoff`'s deadline: a conflict
/// (nothing written), logged.
fn gave_up(backoff: &Backoff) -> StoreError {
    tracing::warn!(
        lost = backoff.lost(),
        deadline_ms = backoff.deadline().as_millis() as u64,
        "a write kept meeting concurrent transactions until the deadline"
    );
    StoreError::Conflict
}

impl DynamoStore {
    /// The item of `key`, read consistently; absent without a request when the key cannot fit
    /// DynamoDB's key sizes (no item has it: [`size::key_fits`]).
    pub(super) async fn get(&self, key: &Key) -> StoreResult<Option<Item>> {
        if !size::key_fits(key) {
            return Ok(None);
        }
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

    pub(super) async fn get_as<T: serde::de::DeserializeOwned>(
        &self, key: &Key,
    ) -> StoreResult<Option<T>> {
        self.get(key).await?.map(from_item).transpose()
    }

    /// Every item of a key condition, following `LastEvaluatedKey`.
    pub(super) async fn query_all(&self, q: &Query) -> StoreResult<Vec<Item>> {
        self.query_range(q, 0, usize::MAX).await
    }

    /// Items `offset..offset + limit` of a key condition, in index order. Reads (and pays for)
    /// the skipped items too: see `docs/dynamodb.md` for deep offsets.
    pub(super) async fn query_range(
        &self, q: &Query, offset: usize, limit: usize,
    ) -> StoreResult<Vec<Item>> {
        if q.matches_nothing() {
            return Ok(Vec::new());
        }
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
    pub(super) async fn list_page<T: serde::de::DeserializeOwned>(
        &self, q: &Query, page: &Page, position: impl Fn(&T) -> Position,
    ) -> StoreResult<Listed<T>> {
        let wanted = page.limit.saturating_add(1);
        let items = parse_items(self.query_range(q, page.offset(), wanted).await?)?;
        Ok(Listed::from_lookahead(items, page.limit, position))
    }

    /// Runs one transaction, mapping cancellation reasons with `precedence`.
    pub(super) async fn transact(
        &self, items: Vec<TransactWriteItem>, parts: &[Part], precedence: Precedence,
    ) -> StoreResult<()> {
        self.transact_with(items, |codes| classify(parts, codes, precedence))
            .await
    }

    /// Runs one transaction whose cancellation reasons (one code per item, in request order)
    /// `outcome` maps. A transaction that `outcome` says to retry (cancelled only by
    /// `TransactionConflict` or throttling: nothing was written) is sent again as it is, with a
    /// jittered pause, until the adapter's deadline ([`crate::store::retry`]).
    ///
    /// Errors: what `outcome` answers; [`StoreError::Conflict`] when the deadline passed while
    /// the transaction kept meeting others; the SDK's error otherwise.
    pub(super) async fn transact_with(
        &self, items: Vec<TransactWriteItem>, outcome: impl Fn(&[Option<String>]) -> Outcome,
    ) -> StoreResult<()> {
        let mut backoff = Backoff::until(self.conflict_deadline);
        loop {
            let codes = match self.send_items(&items).await? {
                None => return Ok(()),
                Some(codes) => codes,
            };
            match outcome(&codes) {
                Outcome::Fail(e) => return Err(e),
                Outcome::Retry if backoff.again().await => {}
                Outcome::Retry => return Err(gave_up(&backoff)),
            }
        }
    }

    /// Sends the items of a transaction once: `None` when written, else the cancellation
    /// reasons (one code per item). One `Put`, `Update` or `Delete` alone is sent as that
    /// single-item write, with the same condition and the same atomicity, at half the write
    /// capacity of a transaction (developer guide, "Capacity management for transactions");
    /// its `ConditionalCheckFailedException` and `TransactionConflictException` read as the
    /// reasons `ConditionalCheckFailed` and `TransactionConflict` would.
    ///
    /// Errors: the SDK's error of anything else.
    async fn send_items(
        &self, items: &[TransactWriteItem],
    ) -> StoreResult<Option<Vec<Option<String>>>> {
        let single = match items {
            [only] => self.send_single(only).await,
            _ => None,
        };
        let err = match single {
            Some(Ok(())) => return Ok(None),
            Some(Err(code)) => return code.map(|c| Some(vec![Some(c.to_string())])),
            None => match self
                .client
                .transact_write_items()
                .set_transact_items(Some(items.to_vec()))
                .send()
                .await
            {
                Ok(_) => return Ok(None),
                Err(e) => e,
            },
        };
        match err.as_service_error() {
            Some(TransactWriteItemsError::TransactionCanceledException(c)) => Ok(Some(
                c.cancellation_reasons()
                    .iter()
                    .map(|r| r.code().map(str::to_string))
                    .collect(),
            )),
            _ => Err(backend(err)),
        }
    }

    /// `item` sent as its single-item write: `None` for a `ConditionCheck` (a transaction's
    /// only), else `Ok(())` when written or `Err` with the cancellation reason its failure
    /// stands for (or the SDK's error).
    async fn send_single(
        &self, item: &TransactWriteItem,
    ) -> Option<Result<(), StoreResult<&'static str>>> {
        use aws_sdk_dynamodb::error::ProvideErrorMetadata;
        let code = |meta: Option<&str>| match meta {
            Some("ConditionalCheckFailedException") => Ok("ConditionalCheckFailed"),
            Some("TransactionConflictException") => Ok("TransactionConflict"),
            _ => Err(()),
        };
        let failed = |e: &dyn ProvideErrorMetadata| code(e.code());
        let sent = if let Some(put) = item.put() {
            self.client
                .put_item()
                .table_name(put.table_name())
                .set_item(Some(put.item().clone()))
                .set_condition_expression(put.condition_expression().map(str::to_string))
                .set_expression_attribute_names(put.expression_attribute_names().cloned())
                .set_expression_attribute_values(put.expression_attribute_values().cloned())
                .send()
                .await
                .map(drop)
                .map_err(|e| failed(&e).map_err(|()| backend(e)))
        } else if let Some(update) = item.update() {
            self.client
                .update_item()
                .table_name(update.table_name())
                .set_key(Some(update.key().clone()))
                .update_expression(update.update_expression())
                .set_condition_expression(update.condition_expression().map(str::to_string))
                .set_expression_attribute_names(update.expression_attribute_names().cloned())
                .set_expression_attribute_values(update.expression_attribute_values().cloned())
                .send()
                .await
                .map(drop)
                .map_err(|e| failed(&e).map_err(|()| backend(e)))
        } else if let Some(delete) = item.delete() {
            self.client
                .delete_item()
                .table_name(delete.table_name())
                .set_key(Some(delete.key().clone()))
                .set_condition_expression(delete.condition_expression().map(str::to_string))
                .set_expression_attribute_names(delete.expression_attribute_names().cloned())
                .set_expression_attribute_values(delete.expression_attribute_values().cloned())
                .send()
                .await
                .map(drop)
                .map_err(|e| failed(&e).map_err(|()| backend(e)))
        } else {
            return None;
        };
        Some(sent)
    }

    pub(super) fn put(
        &self, item: Item, condition: Option<Expr>,
    ) -> StoreResult<TransactWriteItem> {
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

    pub(super) fn delete(&self, key: &Key, condition: Expr) -> StoreResult<TransactWriteItem> {
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
    pub(super) fn condition_check(
        &self, key: &Key, condition: Expr,
    ) -> StoreResult<TransactWriteItem> {
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

    /// A transaction's `Update` of `key` by `update`, conditional on the item existing at
    /// `expected_version` ([`items::at_version`], whose placeholders join the update's).
    ///
    /// Errors: the SDK's builder's (a missing table name or key).
    pub(super) fn update_at_version(
        &self, key: &Key, update: Expr, expected_version: u64,
    ) -> StoreResult<TransactWriteItem> {
        let condition = items::at_version(expected_version);
        let update = Expr {
            names: update.names.into_iter().chain(condition.names).collect(),
            values: update.values.into_iter().chain(condition.values).collect(),
            ..update
        };
        self.update_item(key, &update, Some(condition.text))
    }

    /// The `ADD` of `delta` to the count item `key` (an account's webhooks or holiday
    /// calendars), conditional on staying below `max` when given: the write that a create
    /// under a limit makes with [`Self::transact_under_limit`].
    pub(super) fn count_update(
        &self, key: &Key, delta: i64, max: Option<u64>,
    ) -> StoreResult<TransactWriteItem> {
        let mut e = Expr::new("ADD #count :delta")
            .name("#count", items::COUNT)
            .value(":delta", AttributeValue::N(delta.to_string()));
        let condition = max.map(|max| {
            e.values.insert(":max".into(), n(max));
            "attribute_not_exists(#count) OR #count < :max".to_string()
        });
        self.update_item(key, &e, condition)
    }

    /// Runs `tx`, whose count update on `count` is conditional on staying below `max`: a
    /// conflict while the count has reached `max` is the limit's refusal (nothing written).
    ///
    /// Errors: [`StoreError::Rejected`] naming `what` at the limit; otherwise the transaction's.
    pub(super) async fn transact_under_limit(
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

    /// A single conditional `PutItem`; a failed condition is a [`StoreError::Conflict`]. Refused
    /// because a transaction holds the item (`TransactionConflictException`, nothing written),
    /// it is sent again until the adapter's deadline, then answers [`StoreError::Conflict`].
    pub(super) async fn put_conditional(&self, item: Item, condition: Expr) -> StoreResult<()> {
        let send = || {
            self.client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item.clone()))
                .condition_expression(&condition.text)
                .set_expression_attribute_names(condition.names_opt())
                .set_expression_attribute_values(condition.values_opt())
                .send()
        };
        self.resend_while_held(
            send,
            PutItemError::is_transaction_conflict_exception,
            PutItemError::is_conditional_check_failed_exception,
        )
        .await
        .map(drop)
    }

    /// A single conditional `DeleteItem`; a failed condition is a [`StoreError::Conflict`].
    /// Retried as [`Self::put_conditional`] while a transaction holds the item.
    pub(super) async fn delete_conditional(&self, key: &Key, condition: Expr) -> StoreResult<()> {
        let send = || {
            self.client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(key_attributes(key)))
                .condition_expression(&condition.text)
                .set_expression_attribute_names(condition.names_opt())
                .set_expression_attribute_values(condition.values_opt())
                .send()
        };
        self.resend_while_held(
            send,
            DeleteItemError::is_transaction_conflict_exception,
            DeleteItemError::is_conditional_check_failed_exception,
        )
        .await
        .map(drop)
    }

    /// Sends a single-item write (`send`) again, with a jittered pause, while `held` says a
    /// transaction holds its item (`TransactionConflictException`), until the adapter's
    /// deadline.
    ///
    /// Errors: [`StoreError::Conflict`] when `failed` says its condition failed, or when the
    /// deadline passed; the SDK's error otherwise.
    async fn resend_while_held<O, E, R, Fut>(
        &self, send: impl Fn() -> Fut, held: impl Fn(&E) -> bool, failed: impl Fn(&E) -> bool,
    ) -> StoreResult<O>
    where
        Fut: std::future::Future<Output = Result<O, aws_sdk_dynamodb::error::SdkError<E, R>>>,
        E: std::error::Error + Send + Sync + 'static,
        R: std::fmt::Debug + Send + Sync + 'static,
    {
        let mut backoff = Backoff::until(self.conflict_deadline);
        loop {
            match send().await {
                Ok(out) => return Ok(out),
                Err(e) if e.as_service_error().is_some_and(&held) => {
                    if !backoff.again().await {
                        return Err(gave_up(&backoff));
                    }
                }
                Err(e) => return Err(conditional_failure(e, &failed)),
            }
        }
    }

    /// A single conditional `UpdateItem` answering the item as updated; a failed condition is
    /// `None`.
    pub(super) async fn update_conditional(
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
    /// `Ok(Err(None))` when it failed on an absent one, or when a transaction kept holding the
    /// item until the adapter's deadline (retried as [`Self::put_conditional`] until then).
    pub(super) async fn update_conditional_or_current(
        &self, key: &Key, update: &Expr, condition: &str,
    ) -> StoreResult<Result<Item, Option<Item>>> {
        let mut backoff = Backoff::until(self.conflict_deadline);
        loop {
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
                Ok(out) => return Ok(Ok(out.attributes.unwrap_or_default())),
                Err(e) => match e.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(failed) => {
                        return Ok(Err(failed.item))
                    }
                    UpdateItemError::TransactionConflictException(_) => {
                        if !backoff.again().await {
                            tracing::warn!(
                                lost = backoff.lost(),
                                "an update kept meeting transactions until the deadline"
                            );
                            return Ok(Err(None));
                        }
                    }
                    other => return Err(backend(other)),
                },
            }
        }
    }

    /// A transaction's `Update` of `key` by `update` (whose names and values also serve
    /// `condition`), conditional on `condition` when given.
    ///
    /// Errors: the SDK's builder's (a missing table name or key).
    pub(super) fn update_item(
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
}
