//! The DynamoDB adapter's dispatch side ([`DispatchStore`]): rotation states, monthly counts, the
//! assignment's one transaction, history entries, the queue messages' markers and the stats
//! counters each assignment adds to.

use super::cancel::{Part, Precedence};
use super::items;
use super::items::{backend, from_item, n, s, Expr, Item};
use super::query::{Query, SortCondition};
use super::request::{parse_items, string_attr};
use super::DynamoStore;
use crate::idempotency::IdempotencyCompletion;
use crate::model::dispatch::{
    AssignmentReason, AssignmentTally, AssignmentWrite, CrmSyncState, DecisionSnapshot,
    DispatchEntry, DispatchEntryKey, ExplainedEntry, MessageDeduplicationId, RotationState,
};
use crate::model::due::DueChanges;
use crate::model::object_type::ObjectType;
use crate::model::record::Record;
use crate::model::router::Router;
use crate::model::sla::SlaStatus;
use crate::store::dynamodb::keys;
use crate::store::dynamodb::keys::Key;
use crate::store::tally::{Buckets, Span};
use crate::store::{
    dispatch_position, DispatchStore, FirstFound, FirstReads, Page, PageRequest, PageStart,
    Position, StoreError, StoreResult,
};
use crate::types::email::Email;
use crate::types::ids::{AccountId, RecordId, RouterId};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use strum::IntoEnumIterator;
use uuid::Uuid;

/// How long a message de-duplication marker is kept (DynamoDB TTL): longer than SQS's 14-day retention.
const MARKER_LIFETIME_SECS: i64 = 15 * 24 * 3600;

/// The rotation state is at `version` (version 0 is the state before the first rotation: no
/// item yet).
pub(super) fn rotation_at_version(version: u64) -> Expr {
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

/// The `reason` attribute of a projected history entry.
#[derive(serde::Deserialize)]
struct ReasonOnly {
    reason: AssignmentReason,
}

/// How far before the time its UUIDv7 id carries an entry written before decision snapshots
/// may have been dispatched: its id was made when its write was prepared, at most one
/// dispatch's retry deadline (or an SLA run's lease) after the run's `dispatched_at`.
const UNEXPLAINED_LOOKBACK: chrono::Duration = chrono::Duration::minutes(5);

/// The keys one look-up of an entry without a snapshot reads ([`DynamoStore::find_unexplained`]):
/// one page, keys only.
const UNEXPLAINED_PAGE: i32 = 200;

impl DynamoStore {
    /// Appends to a transaction the `Put` of `entry`'s decision snapshot (BEHAVIOR 18; an item
    /// of its own, `keys::dispatch_explanation`), when there is one.
    fn snapshot_write(
        &self, entry: &DispatchEntry, snapshot: Option<&DecisionSnapshot>,
        tx: &mut Vec<TransactWriteItem>, parts: &mut Vec<Part>,
    ) -> StoreResult<()> {
        if let Some(snapshot) = snapshot {
            let (_, item) = items::audit::snapshot(entry, snapshot)?;
            tx.push(self.put(item, None)?);
            parts.push(Part::Other);
        }
        Ok(())
    }

    /// The key of the router's entry `entry_id` written before decision snapshots existed (so
    /// without a snapshot item naming it): looked up by the time its UUIDv7 id carries, newest
    /// first from just after it, within [`UNEXPLAINED_LOOKBACK`] before it (a key range of the
    /// router's partition, no filter expression), one page of [`UNEXPLAINED_PAGE`] keys at
    /// most, then the entry by its key. `None` for an id that is not a UUIDv7 or not found in
    /// that page.
    async fn find_unexplained(
        &self, router_id: RouterId, entry_id: Uuid,
    ) -> StoreResult<Option<DispatchEntryKey>> {
        if entry_id.get_version_num() != 7 {
            return Ok(None);
        }
        let Some((secs, nanos)) = entry_id.get_timestamp().map(|t| t.to_unix()) else {
            return Ok(None);
        };
        let Some(made) = i64::try_from(secs)
            .ok()
            .and_then(|secs| chrono::DateTime::from_timestamp(secs, nanos))
        else {
            return Ok(None);
        };
        let bound = |at| {
            format!(
                "{}{}",
                keys::DISPATCH_PREFIX,
                keys::dispatch_sort_key(at, Uuid::nil())
            )
        };
        let q = Query {
            sk: SortCondition::Between(
                bound(made - UNEXPLAINED_LOOKBACK),
                bound(made + chrono::Duration::milliseconds(1)),
            ),
            ..Query::table(keys::router(router_id).pk).newest_first()
        };
        // One page of keys, newest first from the id's time: the entry was dispatched at most
        // a retry deadline before its id was made, so it is among the first few; an id no entry
        // has (any id newer than snapshots, whose entries all have one) costs this one read.
        let expr = q.expr();
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression(&expr.text)
            .set_expression_attribute_names(expr.names_opt())
            .set_expression_attribute_values(expr.values_opt())
            .projection_expression("#pk, #sk")
            .consistent_read(true)
            .scan_index_forward(false)
            .limit(UNEXPLAINED_PAGE)
            .send()
            .await
            .map_err(backend)?;
        let suffix = format!("#{entry_id}");
        for item in page.items.unwrap_or_default() {
            let sk = string_attr(&item, keys::SK)?;
            if sk.ends_with(&suffix) {
                return Ok(self
                    .get_as::<DispatchEntry>(&Key {
                        pk: keys::router(router_id).pk,
                        sk,
                    })
                    .await?
                    .map(|entry| entry.key()));
            }
        }
        Ok(None)
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

    /// The updates adding an assignment's `entry` to its day's, hour's and minute's stats
    /// counters ([`crate::store::tally`]); a counter lives as long as its bucket's last entry
    /// (TTL).
    ///
    /// Errors: an entry that is not a success with a user and a reason (an internal error).
    fn tally_updates(&self, entry: &DispatchEntry) -> StoreResult<Vec<TransactWriteItem>> {
        let (Some(user), Some(reason)) = (entry.user.as_ref().map(Email::as_str), entry.reason)
        else {
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
                crate::store::tally::add(&mut tally, &user, reason, count);
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
                crate::store::tally::add(&mut tally, &user, reason, 1);
            }
            match page.last_evaluated_key {
                Some(key) => start = Some(key),
                None => return Ok(tally),
            }
        }
    }
}

#[async_trait]
impl DispatchStore for DynamoStore {
    async fn rotation_state(&self, router_id: RouterId) -> StoreResult<RotationState> {
        Ok(self
            .get_as(&keys::rotation(router_id))
            .await?
            .unwrap_or_default())
    }

    async fn first_round_reads(&self, reads: &FirstReads) -> StoreResult<FirstFound> {
        let account_id = reads.account_id;
        let account = reads.account.then(|| keys::account(account_id));
        let router = reads.router.map(keys::router);
        let record = reads.record.map(keys::record);
        let rotation = reads.rotation.map(keys::rotation);
        let month = reads
            .month
            .as_deref()
            .map(|m| keys::monthly_count(account_id, m));
        let webhooks = reads
            .webhooks_version
            .then(|| keys::webhook_count(account_id));
        let marker = reads.marker.as_ref().map(keys::message_deduplication);
        let members: Vec<Key> = reads.members.iter().map(|id| keys::member(*id)).collect();
        let calendars: Vec<Key> = reads
            .calendars
            .iter()
            .map(|id| keys::holiday_calendar(account_id, *id))
            .collect();
        let wanted: Vec<Key> = [
            &account, &router, &record, &rotation, &month, &webhooks, &marker,
        ]
        .into_iter()
        .flatten()
        .chain(&members)
        .chain(&calendars)
        .cloned()
        .collect();
        if wanted.is_empty() {
            return Ok(FirstFound::default());
        }
        // Consistent BatchGetItems of up to 100 keys, all sent at once: one round, one request
        // for up to 100 keys.
        let mut found = self.batch_get_waves(&wanted, false, usize::MAX).await?;
        let mut take = |key: &Option<Key>| key.as_ref().and_then(|k| found.remove(k));
        let account = take(&account).map(from_item).transpose()?;
        let router = take(&router)
            .map(from_item::<Router>)
            .transpose()?
            .filter(|r| r.account_id == account_id);
        let record = take(&record)
            .map(from_item::<Record>)
            .transpose()?
            .filter(|r| r.account_id == account_id);
        let rotation = take(&rotation)
            .map(from_item)
            .transpose()?
            .unwrap_or_default();
        let count = take(&month).map_or(Ok(0), |item| items::count_in(&item))?;
        let webhooks_version = take(&webhooks).map_or(Ok(0), |item| {
            super::webhooks::subscriptions_version_of(&item)
        })?;
        let marker_used = take(&marker).is_some();
        let mut read_members = Vec::with_capacity(members.len());
        for key in &members {
            if let Some(item) = found.remove(key) {
                let member: crate::model::member::Member = from_item(item)?;
                if member.account_id == account_id {
                    read_members.push(member);
                }
            }
        }
        // Keyed by account: a calendar of another account has another key and is not found.
        let mut read_calendars = Vec::with_capacity(calendars.len());
        for key in &calendars {
            if let Some(item) = found.remove(key) {
                read_calendars.push(from_item(item)?);
            }
        }
        Ok(FirstFound {
            account,
            router,
            record,
            rotation,
            count,
            members: read_members,
            calendars: read_calendars,
            webhooks_version,
            marker_used,
        })
    }

    async fn assignment_count(&self, account_id: AccountId, month: &str) -> StoreResult<u64> {
        match self.get(&keys::monthly_count(account_id, month)).await? {
            Some(item) => items::count_in(&item),
            None => Ok(0),
        }
    }

    async fn record_dispatch(
        &self, entry: &DispatchEntry, snapshot: Option<&DecisionSnapshot>,
        deduplication_id: Option<&MessageDeduplicationId>,
        completion: Option<&IdempotencyCompletion>, due: &DueChanges,
    ) -> StoreResult<()> {
        let (_, item) = items::dispatch_entry(entry)?;
        if snapshot.is_none()
            && deduplication_id.is_none()
            && completion.is_none()
            && due.is_empty()
        {
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
        self.snapshot_write(entry, snapshot, &mut tx, &mut parts)?;
        if let Some(id) = deduplication_id {
            let expires = entry.dispatched_at.timestamp() + MARKER_LIFETIME_SECS;
            let (_, marker) = items::idempotency::deduplication_marker(id, expires);
            tx.push(self.put(marker, Some(items::absent()))?);
            parts.push(Part::Marker);
        }
        self.completion_write(completion, &mut tx, &mut parts)?;
        self.due_writes(due, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn list_router_dispatches(
        &self, account_id: AccountId, router_id: RouterId, page: &PageRequest,
    ) -> StoreResult<Page<DispatchEntry>> {
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
        Ok(Page::from_lookahead(entries, page.limit, dispatch_position))
    }

    async fn list_router_dispatches_between(
        &self, account_id: AccountId, router_id: RouterId, from: chrono::DateTime<chrono::Utc>,
        to: chrono::DateTime<chrono::Utc>, after: Option<&Position>, limit: usize,
    ) -> StoreResult<Page<DispatchEntry>> {
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
            return Ok(Page::new(Vec::new(), None));
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
        Ok(Page::from_lookahead(entries, limit, dispatch_position))
    }

    async fn list_record_dispatches(
        &self, account_id: AccountId, object_type: ObjectType, record_id: RecordId,
        page: &PageRequest,
    ) -> StoreResult<Page<DispatchEntry>> {
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

    async fn get_explained_dispatch(
        &self, account_id: AccountId, router_id: RouterId, entry_id: Uuid,
    ) -> StoreResult<Option<ExplainedEntry>> {
        let (key, explanation) = match self.get(&keys::dispatch_explanation(entry_id)).await? {
            Some(item) => {
                let (account, key, snapshot) = items::audit::snapshot_of(item)?;
                if account != account_id || key.router_id != router_id {
                    return Ok(None);
                }
                (key, Some(snapshot))
            }
            None => match self.find_unexplained(router_id, entry_id).await? {
                Some(key) => (key, None),
                None => return Ok(None),
            },
        };
        Ok(self
            .get_dispatch(&key)
            .await?
            .filter(|e| e.account_id == account_id)
            .map(|entry| ExplainedEntry { entry, explanation }))
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

    async fn tally_assignments(
        &self, account_id: AccountId, router_id: RouterId, from: chrono::DateTime<chrono::Utc>,
        to: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<Vec<AssignmentTally>> {
        // Every run of counters and both partial edges at once: one sequential round.
        let parts = crate::store::tally::split(from, to);
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
            crate::store::tally::add(&mut tally, &counted.user, counted.reason, counted.count);
        }
        Ok(tally)
    }

    async fn deduplication_id_used(&self, id: &MessageDeduplicationId) -> StoreResult<bool> {
        Ok(self.get(&keys::message_deduplication(id)).await?.is_some())
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

        if let Some(rotation) = &w.rotation {
            let (_, item) = items::rotation(rotation.router_id, &rotation.next)?;
            tx.push(self.put(item, Some(rotation_at_version(rotation.read_version)))?);
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
        // its routers do not all contend on one item.
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
        self.snapshot_write(&w.entry, w.snapshot.as_ref(), &mut tx, &mut parts)?;
        for update in self.tally_updates(&w.entry)? {
            tx.push(update);
            parts.push(Part::Other);
        }

        self.completion_write(w.completion.as_ref(), &mut tx, &mut parts)?;
        if let Some(id) = &w.deduplication_id {
            let expires = w.entry.dispatched_at.timestamp() + MARKER_LIFETIME_SECS;
            let (_, marker) = items::idempotency::deduplication_marker(id, expires);
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
}
