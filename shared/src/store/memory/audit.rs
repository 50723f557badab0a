//! The embedded store's audit events ([`AuditStore`], BEHAVIOR 18): by id, in the account's
//! list and in their target's, each newest first by position, with their expiry (DynamoDB's
//! TTL). The writes that record an event check and store it through [`State::check_audit`] and
//! [`State::put_audit`], under the same lock as their change.

use super::{MemoryStore, State};
use crate::idempotency::IdempotencyCompletion;
use crate::model::audit::{AuditEvent, AuditFilter};
use crate::store::{
    audit_position, time_then_id, AuditStore, Page, PageRequest, PageStart, Position, StoreError,
    StoreResult,
};
use crate::types::ids::AccountId;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::ops::Bound;
use uuid::Uuid;

impl State {
    /// Checks that `event` (when given) can be stored: no event has its id.
    ///
    /// Errors: [`StoreError::Conflict`] when one has.
    pub(super) fn check_audit(&self, event: Option<&AuditEvent>) -> StoreResult<()> {
        match event {
            Some(e) if self.audit_events.contains_key(&e.id) => Err(StoreError::Conflict),
            _ => Ok(()),
        }
    }

    /// Stores `event` (when given; [`Self::check_audit`] checked) in the account's and its
    /// target's lists, dropping the expired events first.
    pub(super) fn put_audit(&mut self, event: Option<&AuditEvent>) {
        let Some(event) = event else {
            return;
        };
        self.purge_audit(Utc::now());
        let position = audit_position(event);
        self.audit_by_account
            .entry(event.account_id)
            .or_default()
            .insert(position.clone(), event.id);
        self.audit_by_target
            .entry((event.account_id, event.target.clone()))
            .or_default()
            .insert(position, event.id);
        self.audit_expiry.insert((event.expires_at, event.id));
        self.audit_events.insert(event.id, event.clone());
    }

    /// Forgets the events expired at `now`, as DynamoDB's TTL deletes them.
    fn purge_audit(&mut self, now: DateTime<Utc>) {
        while let Some((at, id)) = self.audit_expiry.first().cloned() {
            if at > now {
                break;
            }
            self.audit_expiry.pop_first();
            let Some(event) = self.audit_events.remove(&id) else {
                continue;
            };
            let position = audit_position(&event);
            if let Some(index) = self.audit_by_account.get_mut(&event.account_id) {
                index.remove(&position);
            }
            if let Some(index) = self
                .audit_by_target
                .get_mut(&(event.account_id, event.target.clone()))
            {
                index.remove(&position);
            }
        }
    }
}

/// The positions of `index` within `filter`'s window, newest first, at `page`: plus one
/// look-ahead event.
fn window_page(
    index: Option<&BTreeMap<Position, Uuid>>, filter: &AuditFilter, page: &PageRequest,
) -> Vec<Uuid> {
    let Some(index) = index else {
        return Vec::new();
    };
    // `<at>#<nil id>` sorts before every event at `at` (event ids are never nil): [from, to).
    let bound = |at: DateTime<Utc>| Position::new(time_then_id(at, Uuid::nil()));
    let low = filter
        .from
        .map_or(Bound::Unbounded, |f| Bound::Included(bound(f)));
    let mut high = filter
        .to
        .map_or(Bound::Unbounded, |t| Bound::Excluded(bound(t)));
    if let PageStart::After(after) = &page.start {
        let tighter = match &high {
            Bound::Excluded(h) => after < h,
            _ => true,
        };
        if tighter {
            high = Bound::Excluded(after.clone());
        }
    }
    let empty = match (&low, &high) {
        (Bound::Included(l), Bound::Excluded(h)) => l >= h,
        _ => false,
    };
    if empty {
        return Vec::new();
    }
    let skip = match page.start {
        PageStart::Offset(offset) => offset,
        PageStart::After(_) => 0,
    };
    index
        .range((low, high))
        .rev()
        .skip(skip)
        .take(page.limit.saturating_add(1))
        .map(|(_, id)| *id)
        .collect()
}

#[async_trait]
impl AuditStore for MemoryStore {
    async fn list_audit_events(
        &self, account_id: AccountId, filter: &AuditFilter, page: &PageRequest,
    ) -> StoreResult<Page<AuditEvent>> {
        let state = self.lock();
        let index = match &filter.target {
            Some(target) => state.audit_by_target.get(&(account_id, target.clone())),
            None => state.audit_by_account.get(&account_id),
        };
        let events: Vec<AuditEvent> = window_page(index, filter, page)
            .iter()
            .filter_map(|id| state.audit_events.get(id).cloned())
            .collect();
        Ok(Page::from_lookahead(events, page.limit, audit_position))
    }

    async fn get_audit_event(
        &self, account_id: AccountId, id: Uuid,
    ) -> StoreResult<Option<AuditEvent>> {
        Ok(self
            .lock()
            .audit_events
            .get(&id)
            .filter(|e| e.account_id == account_id)
            .cloned())
    }

    async fn append_audit_event(
        &self, event: &AuditEvent, completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if completion.is_some_and(|c| !state.holds_lease(&c.claim)) {
            return Err(StoreError::LeaseLost);
        }
        state.check_audit(Some(event))?;
        state.put_audit(Some(event));
        if let Some(c) = completion {
            state.complete_request(c);
        }
        Ok(())
    }
}
