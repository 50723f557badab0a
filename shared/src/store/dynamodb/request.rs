//! The DynamoDB requests every aggregate's code is written with: consistent reads, paged
//! queries, the transaction runner (cancellation reasons mapped, `TransactionConflict` retried
//! until the deadline of [`crate::store::retry`]),
//! the items of a transaction (`Put`, `Delete`, `Update`, `ConditionCheck`) and single
//! conditional writes, each with a write token of its own so that a re-send of a write whose
//! answer was lost counts as done ([`super::write_token`]).

use super::cancel::{classify, Outcome, Part, Precedence};
use super::items;
use super::items::{backend, from_item, key_attributes, n, Expr, Item};
use super::query::Query;
use super::write_token::WriteToken;
use super::DynamoStore;
use crate::store::dynamodb::keys::{self, Key};
use crate::store::Backoff;
use crate::store::{Page, PageRequest, Position, StoreError, StoreResult};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
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
    /// DynamoDB's key sizes (no item has it: [`keys::key_fits`]).
    pub(super) async fn get(&self, key: &Key) -> StoreResult<Option<Item>> {
        if !keys::key_fits(key) {
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
        &self, q: &Query, page: &PageRequest, position: impl Fn(&T) -> Position,
    ) -> StoreResult<Page<T>> {
        let wanted = page.limit.saturating_add(1);
        let items = parse_items(self.query_range(q, page.offset(), wanted).await?)?;
        Ok(Page::from_lookahead(items, page.limit, position))
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
    /// jittered pause, until the adapter's deadline ([`crate::store::retry`]); one that failed
    /// only on items `outcome` says to leave out ([`Outcome::Without`]) is sent again without
    /// them (their codes read `None` from then on).
    ///
    /// Errors: what `outcome` answers; [`StoreError::Conflict`] when the deadline passed while
    /// the transaction kept meeting others; the SDK's error otherwise.
    pub(super) async fn transact_with(
        &self, items: Vec<TransactWriteItem>, outcome: impl Fn(&[Option<String>]) -> Outcome,
    ) -> StoreResult<()> {
        let mut backoff = Backoff::until(self.conflict_deadline);
        let mut sent = items.clone();
        let mut kept: Vec<usize> = (0..items.len()).collect();
        loop {
            let codes = match self.send_items(&sent).await? {
                None => return Ok(()),
                Some(codes) => codes,
            };
            let mut all = vec![None; items.len()];
            for (code, &i) in codes.into_iter().zip(&kept) {
                all[i] = code;
            }
            match outcome(&all) {
                Outcome::Fail(e) => return Err(e),
                Outcome::Retry if backoff.again().await => {}
                Outcome::Retry => return Err(gave_up(&backoff)),
                Outcome::Without(left_out) => {
                    kept.retain(|i| !left_out.contains(i));
                    if kept.is_empty() {
                        return Ok(());
                    }
                    sent = kept.iter().map(|&i| items[i].clone()).collect();
                }
            }
        }
    }

    /// Sends the items of a transaction once: `None` when written, else the cancellation
    /// reasons (one code per item). One `Put` or `Update` alone is sent as that single-item
    /// write, with the same condition and the same atomicity, at half the write capacity of a
    /// transaction (developer guide, "Capacity management for transactions"), and a write token
    /// of its own in place of the transaction's client token ([`super::write_token`]); its
    /// `ConditionalCheckFailedException` and `TransactionConflictException` read as the reasons
    /// `ConditionalCheckFailed` and `TransactionConflict` would. A `Delete` or a
    /// `ConditionCheck` alone stays a transaction (a delete leaves no token to find).
    ///
    /// Errors: the SDK's error of anything else.
    async fn send_items(
        &self, items: &[TransactWriteItem],
    ) -> StoreResult<Option<Vec<Option<String>>>> {
        if let [only] = items {
            if let Some(sent) = self.send_single(only).await {
                return sent.map(|w| w.reason().map(|reason| vec![Some(reason.to_string())]));
            }
        }
        let err = match self
            .client
            .transact_write_items()
            .set_transact_items(Some(items.to_vec()))
            .send()
            .await
        {
            Ok(_) => return Ok(None),
            Err(e) => e,
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

    /// `item` sent as its single-item write with a write token of its own: `None` for an item
    /// that is not a `Put` or an `Update` (it goes as a transaction), else what became of it.
    async fn send_single(&self, item: &TransactWriteItem) -> Option<StoreResult<SingleWrite>> {
        let token = WriteToken::new();
        let sent = if let Some(put) = item.put() {
            let condition = token.guard(Some(&Expr {
                text: put.condition_expression().unwrap_or_default().to_string(),
                names: put
                    .expression_attribute_names()
                    .cloned()
                    .unwrap_or_default(),
                values: put
                    .expression_attribute_values()
                    .cloned()
                    .unwrap_or_default(),
            }));
            let sent = self
                .client
                .put_item()
                .table_name(put.table_name())
                .set_item(Some(token.stamp(put.item().clone())))
                .condition_expression(&condition.text)
                .set_expression_attribute_names(condition.names_opt())
                .set_expression_attribute_values(condition.values_opt())
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            match sent {
                Ok(_) => Ok(SingleWrite::Written),
                Err(e) => match e.into_service_error() {
                    PutItemError::ConditionalCheckFailedException(f) => {
                        Ok(SingleWrite::refused_unless_ours(&token, f.item()))
                    }
                    PutItemError::TransactionConflictException(_) => Ok(SingleWrite::Held),
                    other => Err(backend(other)),
                },
            }
        } else if let Some(update) = item.update() {
            let stamped = token.stamp_update(&Expr {
                text: update.update_expression().to_string(),
                names: update
                    .expression_attribute_names()
                    .cloned()
                    .unwrap_or_default(),
                values: update
                    .expression_attribute_values()
                    .cloned()
                    .unwrap_or_default(),
            });
            let condition = token.guard(Some(&Expr::new(
                update.condition_expression().unwrap_or_default(),
            )));
            let sent = self
                .client
                .update_item()
                .table_name(update.table_name())
                .set_key(Some(update.key().clone()))
                .update_expression(&stamped.text)
                .condition_expression(&condition.text)
                .set_expression_attribute_names(stamped.names_opt())
                .set_expression_attribute_values(stamped.values_opt())
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            match sent {
                Ok(_) => Ok(SingleWrite::Written),
                Err(e) => match e.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(f) => {
                        Ok(SingleWrite::refused_unless_ours(&token, f.item()))
                    }
                    UpdateItemError::TransactionConflictException(_) => Ok(SingleWrite::Held),
                    other => Err(backend(other)),
                },
            }
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

    /// The number the count item at `key` holds (0 when absent).
    ///
    /// Errors: the store's; a malformed count ([`items::count_in`]).
    pub(super) async fn count_of(&self, key: &Key) -> StoreResult<u64> {
        match self.get(key).await? {
            Some(item) => items::count_in(&item),
            None => Ok(0),
        }
    }

    /// A single conditional `PutItem` with a write token of its own ([`super::write_token`]:
    /// a re-send of an applied put is done, not a conflict); a failed condition is a
    /// [`StoreError::Conflict`]. Refused because a transaction holds the item
    /// (`TransactionConflictException`, nothing written), it is sent again until the adapter's
    /// deadline, then answers [`StoreError::Conflict`].
    pub(super) async fn put_conditional(&self, item: Item, condition: Expr) -> StoreResult<()> {
        let put = self.put(item, Some(condition))?;
        let mut backoff = Backoff::until(self.conflict_deadline);
        loop {
            match self.send_single(&put).await {
                Some(Ok(SingleWrite::Written)) => return Ok(()),
                Some(Ok(SingleWrite::Refused)) => return Err(StoreError::Conflict),
                Some(Ok(SingleWrite::Held)) if backoff.again().await => {}
                Some(Ok(SingleWrite::Held)) => return Err(gave_up(&backoff)),
                Some(Err(e)) => return Err(e),
                None => return Err(backend("a put that is not a put")),
            }
        }
    }

    /// A single conditional delete, sent as a one-item transaction (whose client token makes a
    /// re-send after a lost answer count as done; a single `DeleteItem` re-sent would find no
    /// item and fail its own condition); a failed condition is a [`StoreError::Conflict`],
    /// retried as [`Self::put_conditional`] while a transaction holds the item.
    pub(super) async fn delete_conditional(&self, key: &Key, condition: Expr) -> StoreResult<()> {
        self.transact(
            vec![self.delete(key, condition)?],
            &[Part::Other],
            Precedence::RecordFirst,
        )
        .await
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
        let token = WriteToken::new();
        let update = token.stamp_update(update);
        let condition = token.guard(Some(&Expr::new(condition)));
        let mut backoff = Backoff::until(self.conflict_deadline);
        loop {
            let sent = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key_attributes(key)))
                .update_expression(&update.text)
                .condition_expression(&condition.text)
                .set_expression_attribute_names(update.names_opt())
                .set_expression_attribute_values(update.values_opt())
                .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            match sent {
                Ok(out) => return Ok(Ok(out.attributes.unwrap_or_default())),
                Err(e) => match e.into_service_error() {
                    // The write's own earlier success, whose answer was lost: the item as it
                    // left it is the item as updated.
                    UpdateItemError::ConditionalCheckFailedException(failed)
                        if token.is_ours(failed.item()) =>
                    {
                        return Ok(Ok(failed.item.unwrap_or_default()))
                    }
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

/// What became of a single-item write ([`DynamoStore::send_single`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SingleWrite {
    /// Applied (now, or by an earlier send whose answer was lost).
    Written,
    /// Its condition failed: nothing written.
    Refused,
    /// A transaction holds the item (`TransactionConflictException`): nothing written.
    Held,
}

impl SingleWrite {
    /// A failed condition: [`Self::Written`] when `old` (the item as the failure found it)
    /// carries `token`, else [`Self::Refused`].
    fn refused_unless_ours(token: &WriteToken, old: Option<&Item>) -> Self {
        if token.is_ours(old) {
            Self::Written
        } else {
            Self::Refused
        }
    }

    /// The transaction cancellation reason this outcome stands for (`None` when written).
    fn reason(self) -> Option<&'static str> {
        match self {
            Self::Written => None,
            Self::Refused => Some("ConditionalCheckFailed"),
            Self::Held => Some("TransactionConflict"),
        }
    }
}
