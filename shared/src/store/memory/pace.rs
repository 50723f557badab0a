//! The embedded store's CRM pace ([`PaceStore`]): one state per account and CRM, decided by
//! [`PaceState::take`] under the pace's own lock.

use super::MemoryStore;
use crate::model::pace::{PaceKey, PaceState, Turn, TurnAsk, UsageHold};
use crate::store::{PaceStore, StoreResult};
use async_trait::async_trait;

impl MemoryStore {
    fn pace_state<T>(&self, key: &PaceKey, change: impl FnOnce(&mut PaceState) -> T) -> T {
        let mut pace = self.pace.lock().unwrap_or_else(|e| e.into_inner());
        change(pace.entry(*key).or_default())
    }
}

#[async_trait]
impl PaceStore for MemoryStore {
    async fn take_turn(&self, key: &PaceKey, ask: &TurnAsk) -> StoreResult<Turn> {
        Ok(self.pace_state(key, |state| {
            let (turn, tat) = state.take(ask);
            if tat.is_some() {
                state.tat_us = tat;
            }
            turn
        }))
    }

    async fn hold_pace(&self, key: &PaceKey, tat_us: i64) -> StoreResult<()> {
        self.pace_state(key, |state| {
            state.tat_us = Some(state.tat_us.map_or(tat_us, |tat| tat.max(tat_us)));
        });
        Ok(())
    }

    async fn set_usage_hold(&self, key: &PaceKey, hold: Option<&UsageHold>) -> StoreResult<()> {
        self.pace_state(key, |state| state.usage = hold.copied());
        Ok(())
    }
}
