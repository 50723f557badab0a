//! The embedded store's dispatch side ([`DispatchStore`]): rotation states, monthly counts, the
//! assignment's commit, history entries with their expiry (DynamoDB's TTL), the queue messages'
//! markers and the stats counters.

use super::{newest_first, MemoryStore, State};
use crate::idempotency::IdempotencyCompletion;
use crate::model::dispatch::{
    AssignmentTally, AssignmentWrite, CrmSyncState, DecisionSnapshot, DispatchEntry,
    DispatchEntryKey, ExplainedEntry, MessageDeduplicationId, RotationState,
};
use crate::model::due::DueChanges;
use crate::model::object_type::ObjectType;
use crate::model::sla::SlaStatus;
use crate::store::tally::Span;
use crate::store::{
    dispatch_position, AccountStore, CalendarStore, DispatchStore, FirstFound, FirstReads,
    MemberStore, Page, PageRequest, Position, RecordStore, RouterStore, StoreError, StoreResult,
};
use crate::types::email::Email;
use crate::types::ids::{AccountId, RecordId, RouterId};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::ops::Bound;

/// Days a de-duplication marker is kept (as the DynamoDB adapter's TTL: longer than SQS's 14-day
/// retention).
const MARKER_LIFETIME_DAYS: i64 = 15;

impl State {
    /// Whether the entry `key` has an SLA check that is `pending`.
    pub(super) fn check_pending(&self, key: &DispatchEntryKey) -> bool {
        self.dispatches
            .get(&key.id)
            .filter(|e| e.router_id == key.router_id && e.dispatched_at == key.dispatched_at)
            .and_then(|e| e.sla.as_ref())
            .is_some_and(|sla| sla.status == SlaStatus::Pending)
    }

    /// Sets the status of the entry `key`'s SLA check (its check is pending).
    pub(super) fn end_check(&mut self, key: &DispatchEntryKey, to: SlaStatus) {
        if let Some(sla) = self
            .dispatches
            .get_mut(&key.id)
            .and_then(|e| e.sla.as_mut())
        {
            sla.status = to;
        }
    }

    /// Remembers the queued message `id` as used for 15 days from now (as DynamoDB keeps its
    /// marker: longer than SQS keeps a message).
    pub(super) fn mark_used(&mut self, id: &MessageDeduplicationId) {
        let expires = Utc::now() + chrono::Duration::days(MARKER_LIFETIME_DAYS);
        self.deduplication_ids
            .insert(id.as_str().to_string(), expires);
        self.marker_expiry
            .push_back((expires, id.as_str().to_string()));
    }

    /// Forgets the history entries and the markers expired at `now`, as DynamoDB's TTL deletes
    /// them (there: lazily, up to days late; reads skip expired entries either way), so a
    /// long-running embedded store does not grow without bound.
    pub(super) fn purge_expired(&mut self, now: DateTime<Utc>) {
        while let Some((at, key)) = self.marker_expiry.front() {
            if *at > now {
                break;
            }
            if self.deduplication_ids.get(key).is_some_and(|e| *e <= now) {
                self.deduplication_ids.remove(key);
            }
            self.marker_expiry.pop_front();
        }
        while let Some((at, id)) = self.dispatch_expiry.first().cloned() {
            if at > now {
                break;
            }
            self.dispatch_expiry.pop_first();
            let Some(entry) = self.dispatches.remove(&id) else {
                continue;
            };
            self.explanations.remove(&id);
            self.count_assignment(&entry, false);
            let position = dispatch_position(&entry);
            if let Some(index) = self.router_dispatches.get_mut(&entry.router_id) {
                index.remove(&position);
            }
            if let Some(record_id) = entry.record_id() {
                if let Some(index) = self.record_dispatches.get_mut(&(
                    entry.account_id,
                    entry.object_type,
                    record_id,
                )) {
                    index.remove(&position);
                }
            }
        }
    }

    /// Adds an assignment's entry to its day's, hour's and minute's counters, or (`added`
    /// false) takes it away.
    pub(super) fn count_assignment(&mut self, entry: &DispatchEntry, added: bool) {
        let user = entry.user.as_ref().map(Email::as_str);
        let (true, Some(user), Some(reason)) = (entry.success, user, entry.reason) else {
            return;
        };
        let buckets = self
            .tallies
            .entry((entry.account_id, entry.router_id))
            .or_default();
        for span in Span::ALL {
            let bucket = (span, span.floor(entry.dispatched_at));
            let tally = buckets.entry(bucket).or_default();
            if added {
                crate::store::tally::add(tally, user, reason, 1);
            } else if let Some(t) = tally
                .iter_mut()
                .find(|t| t.user == user && t.reason == reason)
            {
                t.count = t.count.saturating_sub(1);
            }
            if tally.iter().all(|t| t.count == 0) {
                buckets.remove(&bucket);
            }
        }
    }

    /// Stores a history entry with its decision snapshot (BEHAVIOR 18) and indexes it in its
    /// router's and its record's history.
    pub(super) fn put_dispatch(
        &mut self, entry: DispatchEntry, snapshot: Option<&DecisionSnapshot>,
    ) {
        if let Some(snapshot) = snapshot {
            self.explanations.insert(entry.id, snapshot.clone());
        }
        self.count_assignment(&entry, true);
        self.dispatch_expiry.insert((entry.expires_at, entry.id));
        let position = dispatch_position(&entry);
        self.router_dispatches
            .entry(entry.router_id)
            .or_default()
            .insert(position.clone(), entry.id);
        if let Some(record_id) = entry.record_id() {
            self.record_dispatches
                .entry((entry.account_id, entry.object_type, record_id))
                .or_default()
                .insert(position, entry.id);
        }
        self.dispatches.insert(entry.id, entry);
    }

    /// A newest-first page of entries from `index`.
    pub(super) fn dispatch_page(
        &self, index: Option<&BTreeMap<Position, uuid::Uuid>>, page: &PageRequest,
    ) -> Page<DispatchEntry> {
        let entries: Vec<DispatchEntry> = newest_first(index, page)
            .iter()
            .filter_map(|id| self.dispatches.get(id).cloned())
            .collect();
        Page::from_lookahead(entries, page.limit, dispatch_position)
    }
}

#[async_trait]
impl DispatchStore for MemoryStore {
    async fn rotation_state(&self, router_id: RouterId) -> StoreResult<RotationState> {
        Ok(self
            .lock()
            .rotation
            .get(&router_id)
            .cloned()
            .unwrap_or_default())
    }

    async fn first_round_reads(&self, reads: &FirstReads) -> StoreResult<FirstFound> {
        let account_id = reads.account_id;
        let account = match reads.account {
            true => self.get_account(account_id).await?,
            false => None,
        };
        let router = match reads.router {
            Some(id) => self.get_router(account_id, id).await?,
            None => None,
        };
        let record = match reads.record {
            Some(id) => self.find_record(account_id, id).await?,
            None => None,
        };
        let rotation = match reads.rotation {
            Some(id) => self.rotation_state(id).await?,
            None => RotationState::default(),
        };
        let count = match &reads.month {
            Some(month) => self.assignment_count(account_id, month).await?,
            None => 0,
        };
        let members = match reads.members.is_empty() {
            true => Vec::new(),
            false => self.get_members(account_id, &reads.members).await?,
        };
        let calendars = match reads.calendars.is_empty() {
            true => Vec::new(),
            false => {
                self.get_holiday_calendars(account_id, &reads.calendars)
                    .await?
            }
        };
        let webhooks_version = match reads.webhooks_version {
            true => self.lock().subscriptions_version(account_id),
            false => 0,
        };
        let marker_used = match &reads.marker {
            Some(id) => self.deduplication_id_used(id).await?,
            None => false,
        };
        Ok(FirstFound {
            account,
            router,
            record,
            rotation,
            count,
            members,
            calendars,
            webhooks_version,
            marker_used,
        })
    }

    async fn assignment_count(&self, account_id: AccountId, month: &str) -> StoreResult<u64> {
        Ok(self
            .lock()
            .monthly
            .get(&(account_id, month.to_string()))
            .copied()
            .unwrap_or(0))
    }

    async fn record_dispatch(
        &self, entry: &DispatchEntry, snapshot: Option<&DecisionSnapshot>,
        deduplication_id: Option<&MessageDeduplicationId>,
        completion: Option<&IdempotencyCompletion>, due: &DueChanges,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if completion.is_some_and(|c| !state.holds_lease(&c.claim)) {
            return Err(StoreError::LeaseLost);
        }
        state.check_due_lease(due)?;
        state.purge_expired(Utc::now());
        if deduplication_id.is_some_and(|id| state.deduplication_ids.contains_key(id.as_str())) {
            return Err(StoreError::AlreadyApplied);
        }
        state.check_due_puts(due)?;
        if let Some(id) = deduplication_id {
            state.mark_used(id);
        }
        state.put_dispatch(entry.clone(), snapshot);
        if let Some(c) = completion {
            state.complete_request(c);
        }
        state.apply_due(due);
        Ok(())
    }

    async fn list_router_dispatches(
        &self, account_id: AccountId, router_id: RouterId, page: &PageRequest,
    ) -> StoreResult<Page<DispatchEntry>> {
        let state = self.lock();
        let owned = state
            .routers
            .get(&router_id)
            .is_some_and(|r| r.account_id == account_id);
        let index = state.router_dispatches.get(&router_id).filter(|_| owned);
        Ok(state.dispatch_page(index, page))
    }

    async fn list_router_dispatches_between(
        &self, account_id: AccountId, router_id: RouterId, from: DateTime<Utc>, to: DateTime<Utc>,
        after: Option<&Position>, limit: usize,
    ) -> StoreResult<Page<DispatchEntry>> {
        let state = self.lock();
        let Some(index) = state.router_dispatches.get(&router_id) else {
            return Ok(Page::new(Vec::new(), None));
        };
        // `<at>#<nil id>` sorts before every entry at `at` (ids are never nil): [from, to).
        let low = Position::new(crate::store::time_then_id(from, uuid::Uuid::nil()));
        let high = Position::new(crate::store::time_then_id(to, uuid::Uuid::nil()));
        let start = match after {
            Some(after) if *after >= low => Bound::Excluded(after.clone()),
            _ => Bound::Included(low),
        };
        let empty = match &start {
            Bound::Excluded(p) | Bound::Included(p) => *p >= high,
            Bound::Unbounded => false,
        };
        if empty {
            return Ok(Page::new(Vec::new(), None));
        }
        let entries: Vec<DispatchEntry> = index
            .range((start, Bound::Excluded(high)))
            .filter_map(|(_, id)| state.dispatches.get(id))
            .filter(|e| e.account_id == account_id)
            .take(limit.saturating_add(1))
            .cloned()
            .collect();
        Ok(Page::from_lookahead(entries, limit, dispatch_position))
    }

    async fn list_record_dispatches(
        &self, account_id: AccountId, object_type: ObjectType, record_id: RecordId,
        page: &PageRequest,
    ) -> StoreResult<Page<DispatchEntry>> {
        let state = self.lock();
        let index = state
            .record_dispatches
            .get(&(account_id, object_type, record_id));
        Ok(state.dispatch_page(index, page))
    }

    async fn get_dispatch(&self, key: &DispatchEntryKey) -> StoreResult<Option<DispatchEntry>> {
        Ok(self
            .lock()
            .dispatches
            .get(&key.id)
            .filter(|e| e.router_id == key.router_id && e.dispatched_at == key.dispatched_at)
            .cloned())
    }

    async fn get_explained_dispatch(
        &self, account_id: AccountId, router_id: RouterId, entry_id: uuid::Uuid,
    ) -> StoreResult<Option<ExplainedEntry>> {
        let state = self.lock();
        Ok(state
            .dispatches
            .get(&entry_id)
            .filter(|e| e.router_id == router_id && e.account_id == account_id)
            .map(|entry| ExplainedEntry {
                entry: entry.clone(),
                explanation: state.explanations.get(&entry_id).cloned(),
            }))
    }

    async fn update_crm_sync(
        &self, key: &DispatchEntryKey, from: &CrmSyncState, to: &CrmSyncState, due: &DueChanges,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        state.check_due_lease(due)?;
        let expected = state
            .dispatches
            .get(&key.id)
            .filter(|e| e.router_id == key.router_id && e.dispatched_at == key.dispatched_at)
            .and_then(|e| e.crm_sync.as_ref())
            .is_some_and(|stored| {
                !from.status.is_final()
                    && stored.status == from.status
                    && stored.attempts == from.attempts
            });
        if !expected {
            return Err(StoreError::Conflict);
        }
        state.check_due_puts(due)?;
        if let Some(entry) = state.dispatches.get_mut(&key.id) {
            entry.crm_sync = Some(to.clone());
        }
        state.apply_due(due);
        Ok(())
    }

    async fn end_sla_check(
        &self, key: &DispatchEntryKey, to: SlaStatus, due: &DueChanges,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        state.check_due_lease(due)?;
        if !state.check_pending(key) {
            return Err(StoreError::Conflict);
        }
        state.check_due_puts(due)?;
        state.end_check(key, to);
        state.apply_due(due);
        Ok(())
    }

    async fn tally_assignments(
        &self, account_id: AccountId, router_id: RouterId, from: DateTime<Utc>, to: DateTime<Utc>,
    ) -> StoreResult<Vec<AssignmentTally>> {
        let state = self.lock();
        let mut tally: Vec<AssignmentTally> = Vec::new();
        let parts = crate::store::tally::split(from, to);
        if let Some(buckets) = state.tallies.get(&(account_id, router_id)) {
            for run in &parts.counters {
                let counted = buckets
                    .range((run.span, run.first)..=(run.span, run.last))
                    .flat_map(|(_, t)| t);
                for counted in counted {
                    crate::store::tally::add(
                        &mut tally,
                        &counted.user,
                        counted.reason,
                        counted.count,
                    );
                }
            }
        }
        let Some(index) = state.router_dispatches.get(&router_id) else {
            return Ok(tally);
        };
        for (start, end) in parts.edges {
            let low = Position::new(crate::store::time_then_id(start, uuid::Uuid::nil()));
            let high = Position::new(crate::store::time_then_id(end, uuid::Uuid::nil()));
            for id in index.range(low..high).map(|(_, id)| id) {
                let Some(entry) = state.dispatches.get(id) else {
                    continue;
                };
                if entry.account_id != account_id || !entry.success {
                    continue;
                }
                if let (Some(user), Some(reason)) = (&entry.user, entry.reason) {
                    crate::store::tally::add(&mut tally, user.as_str(), reason, 1);
                }
            }
        }
        Ok(tally)
    }

    async fn deduplication_id_used(&self, id: &MessageDeduplicationId) -> StoreResult<bool> {
        Ok(self.lock().deduplication_ids.contains_key(id.as_str()))
    }

    async fn commit_assignment(&self, w: &AssignmentWrite) -> StoreResult<()> {
        let mut state = self.lock();
        state.purge_expired(Utc::now());
        if w.completion
            .as_ref()
            .is_some_and(|c| !state.holds_lease(&c.claim))
        {
            return Err(StoreError::LeaseLost);
        }
        state.check_due_lease(&w.due)?;
        if w.ends_check
            .as_ref()
            .is_some_and(|key| !state.check_pending(key))
        {
            return Err(StoreError::LeaseLost);
        }
        if let Some(id) = &w.deduplication_id {
            if state.deduplication_ids.contains_key(id.as_str()) {
                return Err(StoreError::AlreadyApplied);
            }
        }
        let record_ok = state
            .records
            .get(&w.record.id)
            .is_some_and(|r| r.version == w.record_version && r.is_active());
        let router_ok = state.router_at(w.entry.router_id, w.router_version);
        let rotation_ok = w.rotation.as_ref().is_none_or(|rotation| {
            let stored = state.rotation.get(&rotation.router_id);
            stored.map_or(0, |r| r.version) == rotation.read_version
        });
        let member_ok = w.member.as_ref().is_none_or(|(m, version)| {
            state
                .members
                .get(&m.id)
                .is_some_and(|s| s.version == *version && s.is_active())
        });
        let (chosen, chosen_version) = w.chosen;
        let chosen_ok = state.members.get(&chosen).is_some_and(|s| {
            s.version == chosen_version && s.is_active() && s.account_id == w.entry.account_id
        });
        let month_key = (w.entry.account_id, w.month.clone());
        let count = state.monthly.get(&month_key).copied().unwrap_or(0);
        let quota_ok = w.quota.is_none_or(|q| count < q);
        if !(record_ok && router_ok && rotation_ok && member_ok && chosen_ok && quota_ok) {
            return Err(StoreError::Conflict);
        }
        state.check_due_puts(&w.due)?;
        state.put_record(w.record.clone());
        if let Some(rotation) = &w.rotation {
            state
                .rotation
                .insert(rotation.router_id, rotation.next.clone());
        }
        if let Some((member, _)) = &w.member {
            state.put_member(member.clone());
        }
        if w.quota.is_some() {
            state.monthly.insert(month_key, count + 1);
        }
        state.put_dispatch(w.entry.clone(), w.snapshot.as_ref());
        if let Some(key) = &w.ends_check {
            state.end_check(key, SlaStatus::Reassigned);
        }
        if let Some(id) = &w.deduplication_id {
            state.mark_used(id);
        }
        if let Some(c) = &w.completion {
            state.complete_request(c);
        }
        state.apply_due(&w.due);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::dispatch::DispatchSource;
    use crate::model::due::DueChanges;

    fn entry(at: DateTime<Utc>, expires_at: DateTime<Utc>) -> DispatchEntry {
        DispatchEntry {
            expires_at,
            ..DispatchEntry::unassigned(
                AccountId::from(uuid::Uuid::new_v4()),
                RouterId::from(uuid::Uuid::new_v4()),
                ObjectType::Contacts,
                uuid::Uuid::now_v7().to_string(),
                "Trigger did not match".into(),
                DispatchSource::Queue,
                at,
            )
        }
    }

    /// A long-running embedded store forgets expired history entries and
    /// queue markers (as DynamoDB's TTL deletes them), so it does not grow without bound.
    #[tokio::test]
    async fn expired_entries_and_markers_are_forgotten_at_the_next_write() {
        let message = MessageDeduplicationId::new;
        let store = MemoryStore::new();
        let long_ago = Utc::now() - chrono::Duration::days(30);
        let old = entry(long_ago, long_ago + chrono::Duration::days(1));
        store
            .record_dispatch(
                &old,
                None,
                Some(&message("old-message")),
                None,
                &DueChanges::none(),
            )
            .await
            .unwrap();
        // The marker was written 16 days ago.
        {
            let mut state = store.lock();
            let expired = Utc::now() - chrono::Duration::days(1);
            state
                .deduplication_ids
                .insert("old-message".into(), expired);
            state.marker_expiry.clear();
            state
                .marker_expiry
                .push_back((expired, "old-message".into()));
        }
        let fresh = entry(Utc::now(), Utc::now() + chrono::Duration::days(400));
        store
            .record_dispatch(
                &fresh,
                None,
                Some(&message("fresh-message")),
                None,
                &DueChanges::none(),
            )
            .await
            .unwrap();
        assert_eq!(store.get_dispatch(&old.key()).await.unwrap(), None);
        assert!(!store
            .deduplication_id_used(&message("old-message"))
            .await
            .unwrap());
        assert!(store.get_dispatch(&fresh.key()).await.unwrap().is_some());
        assert!(store
            .deduplication_id_used(&message("fresh-message"))
            .await
            .unwrap());
        let state = store.lock();
        assert_eq!(state.dispatches.len(), 1);
        assert_eq!(state.dispatch_expiry.len(), 1);
        assert_eq!(state.marker_expiry.len(), 1);
        assert!(state
            .router_dispatches
            .get(&old.router_id)
            .is_none_or(|index| index.is_empty()));
    }
}
