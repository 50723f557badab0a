//! The embedded store's due work ([`DueStore`]), and the due-item changes that other writes
//! check and apply with their own ([`DueChanges`]).

use super::{MemoryStore, State};
use crate::model::due::{DueChanges, DueId, DueItem, Lease, Parking, Settlement};
use crate::store::{DueStore, StoreError, StoreResult};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

impl State {
    /// Whether the due item `changes` settles is held by the settlement's lease (checked
    /// first, as the DynamoDB adapter reports a lost lease before anything else).
    ///
    /// Errors: [`StoreError::LeaseLost`].
    pub(super) fn check_due_lease(&self, changes: &DueChanges) -> StoreResult<()> {
        if let Some(settle) = &changes.settle {
            let held = self.due.get(&settle.id).is_some_and(|item| {
                item.lease
                    .as_ref()
                    .is_some_and(|lease| lease.id == settle.lease_id)
            });
            if !held {
                return Err(StoreError::LeaseLost);
            }
        }
        Ok(())
    }

    /// Whether every new due item of `changes` is absent (checked with the other conditions).
    ///
    /// Errors: [`StoreError::Conflict`].
    pub(super) fn check_due_puts(&self, changes: &DueChanges) -> StoreResult<()> {
        if changes
            .put
            .iter()
            .any(|item| self.due.contains_key(&item.id))
        {
            return Err(StoreError::Conflict);
        }
        Ok(())
    }

    /// Applies `changes` (both checks passed).
    pub(super) fn apply_due(&mut self, changes: &DueChanges) {
        if let Some(settle) = &changes.settle {
            self.settle(settle);
        }
        for item in &changes.put {
            self.put_due(item.clone());
        }
        for delivery in &changes.deliveries {
            self.deliveries.insert(
                (delivery.subscription_id, delivery.id.clone()),
                delivery.clone(),
            );
        }
    }

    /// Stores `item` and indexes it by its resume time (a parked item by when it was parked, in
    /// an index of its own that the sweeper does not read).
    pub(super) fn put_due(&mut self, item: DueItem) {
        if let Some(old) = self.due.get(&item.id) {
            self.due_index.remove(&(old.resume_at, old.id.clone()));
            if let Some(at) = old.parked_at {
                self.parked_index.remove(&(at, old.id.clone()));
            }
        }
        match item.parked_at {
            Some(at) => self.parked_index.insert((at, item.id.clone())),
            None => self.due_index.insert((item.resume_at, item.id.clone())),
        };
        self.due.insert(item.id.clone(), item);
    }

    /// Removes the settled item or moves it to its next attempt, lease released: an attempt
    /// recorded starts its runs again (no error kept); an item left due without one keeps its
    /// runs and the error.
    pub(super) fn settle(&mut self, settle: &Settlement) {
        let Some(item) = self.due.remove(&settle.id) else {
            return;
        };
        self.due_index.remove(&(item.resume_at, item.id.clone()));
        if let Some(next) = &settle.next {
            let progress = next.error.is_none();
            self.put_due(DueItem {
                due_at: next.due_at,
                attempt: next.attempt,
                resume_at: next.resume_at,
                lease: None,
                runs: if progress { 0 } else { item.runs },
                last_error: next.error.clone(),
                subject: next.subject.clone().unwrap_or(item.subject.clone()),
                ..item
            });
        }
    }
}

#[async_trait]
impl DueStore for MemoryStore {
    async fn get_due(&self, id: &DueId) -> StoreResult<Option<DueItem>> {
        Ok(self.lock().due.get(id).cloned())
    }

    async fn claim_due(
        &self, id: &DueId, attempt: u32, lease: &Lease, now: DateTime<Utc>,
    ) -> StoreResult<Option<DueItem>> {
        let mut state = self.lock();
        let Some(item) = state.due.get(id).cloned() else {
            return Ok(None);
        };
        if item.lease.as_ref().is_some_and(|held| held.id == lease.id) {
            return Ok(Some(item));
        }
        if item.attempt != attempt || item.leased_at(now) || item.parked_at.is_some() {
            return Ok(None);
        }
        let claimed = DueItem {
            lease: Some(lease.clone()),
            resume_at: lease.until,
            runs: item.runs + 1,
            ..item
        };
        state.put_due(claimed.clone());
        Ok(Some(claimed))
    }

    async fn settle_due(&self, settlement: &Settlement) -> StoreResult<()> {
        let mut state = self.lock();
        let changes = DueChanges::settling(settlement.clone());
        state.check_due_lease(&changes)?;
        state.apply_due(&changes);
        Ok(())
    }

    async fn park_due(&self, parking: &Parking) -> StoreResult<()> {
        let mut state = self.lock();
        let item = state
            .due
            .get(&parking.id)
            .filter(|i| i.lease.as_ref().is_some_and(|l| l.id == parking.lease_id))
            .cloned()
            .ok_or(StoreError::LeaseLost)?;
        state.due_index.remove(&(item.resume_at, item.id.clone()));
        state.put_due(DueItem {
            lease: None,
            parked_at: Some(parking.at),
            last_error: Some(parking.error.clone()),
            ..item
        });
        Ok(())
    }

    async fn parked_due_items(&self, limit: usize) -> StoreResult<Vec<DueItem>> {
        let state = self.lock();
        Ok(state
            .parked_index
            .iter()
            .take(limit)
            .filter_map(|(_, id)| state.due.get(id).cloned())
            .collect())
    }

    async fn rearm_due(
        &self, item: &DueItem, resume_at: DateTime<Utc>, now: DateTime<Utc>,
    ) -> StoreResult<bool> {
        let mut state = self.lock();
        let Some(stored) = state
            .due
            .get(&item.id)
            .filter(|s| {
                s.resume_at == item.resume_at && s.attempt == item.attempt && !s.leased_at(now)
            })
            .cloned()
        else {
            return Ok(false);
        };
        state.put_due(DueItem {
            resume_at,
            ..stored
        });
        Ok(true)
    }

    async fn overdue_due_items(
        &self, now: DateTime<Utc>, limit: usize,
    ) -> StoreResult<Vec<DueItem>> {
        let state = self.lock();
        Ok(state
            .due_index
            .iter()
            .take_while(|(resume_at, _)| *resume_at <= now)
            .take(limit)
            .filter_map(|(_, id)| state.due.get(id).cloned())
            .collect())
    }
}
