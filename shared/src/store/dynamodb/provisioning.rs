//! The DynamoDB adapter's provisioning ([`ProvisionStore`]): everything a plan would write checked
//! first, then written insert-if-absent in transactions of at most 100 items and 4 MB.

use super::cancel::{classify, Outcome, Part, Precedence};
use super::items;
use super::items::{n, Expr, Item};
use super::query::{Query, SortCondition};
use super::request::string_attr;
use super::{store_rounds, DynamoStore, MAX_TRANSACTION_ITEMS};
use crate::model::provision::{AccountPlan, PlannedRecord, ProvisionPlan};
use crate::model::router::{Router, RouterRevision};
use crate::page::PageRequest;
use crate::store::dynamodb::keys::{self, Key};
use crate::store::sortable_time;
use crate::store::{
    size, Backoff, MemberStore, ProvisionReport, ProvisionStore, RouterStore, StoreError,
    StoreResult,
};
use crate::types::ids::{AccountId, HolidayCalendarId, MemberId};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::{BTreeSet, HashMap};

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
    /// The item's and its guards' size as DynamoDB counts it ([`size::check_item`]).
    bytes: usize,
}

impl DynamoStore {
    /// Sets the reference count of calendar `id` to what names it now (BEHAVIOR 17: the
    /// account's active members, and the live and draft configurations of its non-archived
    /// routers), counted from strongly consistent reads of their items
    /// ([`Self::calendar_namers`]), conditional on the count read before them: an API write that
    /// moved it meanwhile makes it count again, until the retry deadline
    /// ([`crate::store::retry`]). Nothing for a calendar that does not exist. `plan` names the
    /// members and routers this run wrote, which the indexes may not list yet.
    ///
    /// Errors: [`StoreError::Conflict`] when the count kept moving (or the router index stayed
    /// behind) until the deadline; the SDK's.
    async fn set_calendar_references(
        &self, account_id: AccountId, id: HolidayCalendarId, plan: &[&AccountPlan],
    ) -> StoreResult<()> {
        let key = &keys::holiday_calendar(account_id, id);
        store_rounds(Backoff::until(self.conflict_deadline), |_| {
            Box::pin(async move {
                let Some(item) = self.get(key).await? else {
                    return Ok(());
                };
                let before = item.get(items::REFERENCES).cloned();
                let Some(named) = self.calendar_namers(account_id, id, plan).await? else {
                    // The router index has not caught up with the routers the count holds.
                    return Err(StoreError::Conflict.into());
                };
                let mut e = Expr::new("SET #references = :named")
                    .name("#references", items::REFERENCES)
                    .name("#pk", keys::PK)
                    .value(":named", n(named));
                let condition = match before {
                    Some(count) => {
                        e.values.insert(":before".into(), count);
                        "attribute_exists(#pk) AND #references = :before"
                    }
                    None => "attribute_exists(#pk) AND attribute_not_exists(#references)",
                };
                match self.update_conditional(key, &e, condition).await? {
                    Some(_) => Ok(()),
                    None => Err(StoreError::Conflict.into()),
                }
            })
        })
        .await
    }

    /// How many things name calendar `id` (BEHAVIOR 17's references): active members, and the
    /// live and draft configurations of non-archived routers, of the account. Which members and
    /// routers exist comes from the account's indexes (eventually consistent) and from `plan`
    /// (what this run wrote); what each names is read by key, strongly consistent, so a change
    /// made just before (a member moved off the calendar by the API) is counted as it is now.
    /// `None` while the router index lists fewer non-archived routers than the account's router
    /// count holds (a router created just now, not indexed yet): count again later.
    async fn calendar_namers(
        &self, account_id: AccountId, id: HolidayCalendarId, plan: &[&AccountPlan],
    ) -> StoreResult<Option<u64>> {
        let mut named = 0u64;
        let mut member_ids: BTreeSet<MemberId> = plan
            .iter()
            .filter(|a| a.account.id == account_id)
            .flat_map(|a| a.members.iter().map(|m| m.id))
            .collect();
        let mut page = PageRequest::first(crate::page::MAX_LIMIT, false);
        loop {
            let listed = self.list_members(account_id, &page).await?;
            member_ids.extend(listed.items.iter().map(|m| m.id));
            match listed.next {
                Some(next) => page = PageRequest::after(crate::page::MAX_LIMIT, next, false),
                None => break,
            }
        }
        let member_ids: Vec<MemberId> = member_ids.into_iter().collect();
        named += self
            .get_members(account_id, &member_ids)
            .await?
            .iter()
            .filter(|m| m.is_active() && m.holiday_calendar_id == Some(id))
            .count() as u64;

        let counted = self.count_of(&keys::router_count(account_id)).await?;
        let mut router_keys: BTreeSet<Key> = plan
            .iter()
            .filter(|a| a.account.id == account_id)
            .flat_map(|a| a.routers.iter().map(|r| keys::router(r.id)))
            .collect();
        let mut page = PageRequest::first(crate::page::MAX_LIMIT, false);
        loop {
            let listed = self.list_routers(account_id, &page).await?;
            router_keys.extend(listed.items.iter().map(|r| keys::router(r.id)));
            match listed.next {
                Some(next) => page = PageRequest::after(crate::page::MAX_LIMIT, next, false),
                None => break,
            }
        }
        let router_keys: Vec<Key> = router_keys.into_iter().collect();
        let mut active = Vec::new();
        for (_, item) in self.batch_get_projected(&router_keys, false).await? {
            let router: Router = items::from_item(item)?;
            if router.account_id == account_id && !router.is_archived() {
                active.push(router);
            }
        }
        if (active.len() as u64) < counted {
            return Ok(None);
        }
        for router in &active {
            let draft = self.get_router_draft(account_id, router.id).await?;
            named += router
                .calendar_refs_with(draft.as_ref())
                .changes()
                .filter(|(c, _)| *c == id)
                .map(|(_, n)| n.max(0) as u64)
                .sum::<u64>();
        }
        Ok(Some(named))
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
        // Cancelled by another transaction in flight (an API write of a router count or a
        // calendar): sent again until the deadline, as every transaction is.
        self.transact_with(items, |codes| {
            match classify(&parts, codes, Precedence::GuardsFirst) {
                Outcome::Fail(StoreError::Conflict) => {
                    let what = codes
                        .iter()
                        .position(|c| c.as_deref() == Some("ConditionalCheckFailed"))
                        .and_then(|i| labels.get(i))
                        .cloned()
                        .unwrap_or_else(|| "an item".into());
                    Outcome::Fail(StoreError::Rejected(format!(
                        "{what} was written concurrently while provisioning; {written} items \
                         were inserted before; run the provisioning again (it inserts only what \
                         is missing)"
                    )))
                }
                other => other,
            }
        })
        .await
    }
}

#[async_trait]
impl ProvisionStore for DynamoStore {
    async fn replace_client(
        &self, client: &crate::model::account::ApiClient, expected_generation: u64,
    ) -> StoreResult<bool> {
        let (_, item) = items::client(client)?;
        // A client stored before generations existed has no `generation`: it is at 0.
        let text = if expected_generation == 0 {
            "attribute_exists(#pk) AND (attribute_not_exists(#generation) OR #generation = :generation)"
        } else {
            "attribute_exists(#pk) AND #generation = :generation"
        };
        let condition = Expr::new(text)
            .name("#pk", keys::PK)
            .name("#generation", "generation")
            .value(":generation", n(expected_generation));
        match self.put_conditional(item, condition).await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn provision(&self, plan: &ProvisionPlan) -> StoreResult<ProvisionReport> {
        // Everything the plan would write, in plan order.
        let defined_at = sortable_time(chrono::Utc::now());
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
                // Its e-mail item in its transaction.
                let by_email = items::member_email(m)?;
                add(
                    format!("member {}", m.id),
                    items::member(m)?,
                    vec![by_email],
                );
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

        // Check before the first write: every item within DynamoDB's own
        // limits, so no chunk is refused after another was written.
        for e in &mut entries {
            let mut bytes = 0;
            for item in std::iter::once(&e.item).chain(e.guards.iter().map(|(_, g)| g)) {
                bytes += size::check_item(item).map_err(|why| {
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
        // A new calendar is written with the references of the new items that name it, so that
        // nothing can delete it before they are written; its count is then set from what names
        // it (below).
        for ((account, id), count) in &refs {
            let key = keys::holiday_calendar(*account, *id);
            if let Some(e) = entries.iter_mut().find(|e| e.key == key) {
                if !existing.contains_key(&key) {
                    e.item.insert(
                        items::REFERENCES.into(),
                        AttributeValue::N(count.to_string()),
                    );
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
                || chunk_bytes + e.bytes > size::MAX_TRANSACTION_BYTES
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
        // Every member of the plan's accounts found by e-mail by key: a table written before
        // member e-mail items existed gets them now (an account new in this plan has them all).
        for a in &plan.accounts {
            let fresh = !existing.contains_key(&keys::account(a.account.id))
                && !a
                    .members
                    .iter()
                    .any(|m| existing.contains_key(&keys::member(m.id)));
            self.backfill_member_emails(a.account.id, fresh).await?;
        }
        // Each calendar the file holds or names: its reference count is set from what names it
        // now, never added to (a run that stopped after a calendar's chunk, which
        // counted members of a later chunk, would otherwise count them again when the next run
        // writes them).
        let mut calendars: Vec<(AccountId, HolidayCalendarId)> = plan
            .accounts
            .iter()
            .flat_map(|a| a.holiday_calendars.iter().map(|c| (a.account.id, c.id)))
            .chain(refs.keys().copied())
            .collect();
        calendars.sort();
        calendars.dedup();
        for (account, id) in calendars {
            let plans: Vec<&AccountPlan> = plan.accounts.iter().collect();
            self.set_calendar_references(account, id, &plans).await?;
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
