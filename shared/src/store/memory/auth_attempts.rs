//! The embedded store's failed client authentications ([`AuthAttemptStore`]).

use super::MemoryStore;
use crate::model::auth_attempt::{AttemptKey, FailureWindow};
use crate::store::{AuthAttemptStore, StoreResult};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// Windows kept before ended ones are dropped (the keys are chosen by clients: the map must not
/// grow without bound).
const PRUNE_ABOVE: usize = 10_000;

#[async_trait]
impl AuthAttemptStore for MemoryStore {
    async fn failed_authentications(
        &self, key: &AttemptKey, now: DateTime<Utc>,
    ) -> StoreResult<Option<FailureWindow>> {
        Ok(self
            .lock()
            .auth_failures
            .get(key)
            .copied()
            .filter(|w| w.open_at(now)))
    }

    async fn count_failed_authentication(
        &self, key: &AttemptKey, now: DateTime<Utc>, window: chrono::Duration,
    ) -> StoreResult<FailureWindow> {
        let mut state = self.lock();
        let failures = &mut state.auth_failures;
        if failures.len() >= PRUNE_ABOVE {
            failures.retain(|_, w| w.open_at(now));
        }
        let counted = match failures.get(key).filter(|w| w.open_at(now)) {
            Some(open) => FailureWindow {
                count: open.count.saturating_add(1),
                ends_at: open.ends_at,
            },
            None => FailureWindow {
                count: 1,
                ends_at: now.checked_add_signed(window).unwrap_or(now),
            },
        };
        failures.insert(key.clone(), counted);
        Ok(counted)
    }
}
