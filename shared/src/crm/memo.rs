//! What one instance remembers between CRM requests, one value per key, loaded by one caller at
//! a time (single flight): OAuth access tokens per account (BEHAVIOR 7 "OAuth apps": shared by
//! the instance's concurrent syncs, one refresh at a time) and owners found by e-mail per
//! account and member ("Owner": one lookup per member per hour at most).
//!
//! Each key has a slot behind an async mutex: a caller that finds the slot empty or its value
//! no longer good holds the slot while it loads, so concurrent callers of the same key wait and
//! then find the fresh value instead of loading it again. Keys do not wait for each other. A
//! failed load leaves the slot as it was (nothing failed is remembered).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A remembered value and when it was stored.
#[derive(Debug, Clone)]
pub struct Stored<V> {
    /// The value.
    pub value: V,
    /// When it was loaded.
    pub at: Instant,
}

type Slot<V> = Arc<tokio::sync::Mutex<Option<Stored<V>>>>;

/// Values by key, each loaded by one caller at a time. At most [`Memo::MAX_KEYS`] keys are
/// kept; past that, the slots nobody holds are dropped (their values are loaded again when
/// needed).
#[derive(Debug)]
pub struct Memo<K, V> {
    slots: Mutex<HashMap<K, Slot<V>>>,
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone, V: Clone> Memo<K, V> {
    /// Most keys kept.
    pub const MAX_KEYS: usize = 10_000;

    fn slot(&self, key: &K) -> Slot<V> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if !slots.contains_key(key) && slots.len() >= Self::MAX_KEYS {
            slots.retain(|_, slot| Arc::strong_count(slot) > 1);
        }
        slots.entry(key.clone()).or_default().clone()
    }

    /// The value of `key` when `good` says the stored one still serves, else the one `load`
    /// gives (stored for the next callers). Concurrent callers of one key are served one at a
    /// time, so of those that find it stale, the first loads and the others find its value.
    ///
    /// Errors: `load`'s (nothing stored).
    pub async fn get_or_load<E, F, Fut>(
        &self, key: &K, good: impl Fn(&Stored<V>) -> bool, load: F,
    ) -> Result<V, E>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<V, E>>,
    {
        let slot = self.slot(key);
        let mut held = slot.lock().await;
        if let Some(stored) = held.as_ref().filter(|s| good(s)) {
            return Ok(stored.value.clone());
        }
        let value = load().await?;
        *held = Some(Stored {
            value: value.clone(),
            at: Instant::now(),
        });
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn concurrent_callers_of_one_key_load_once_and_a_stale_value_is_loaded_again() {
        let memo: Arc<Memo<u8, u32>> = Arc::default();
        let loads = Arc::new(AtomicUsize::new(0));
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..20 {
            let memo = memo.clone();
            let loads = loads.clone();
            set.spawn(async move {
                memo.get_or_load(
                    &1,
                    |_| true,
                    || async {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Ok::<_, ()>(loads.fetch_add(1, Ordering::SeqCst) as u32 + 7)
                    },
                )
                .await
            });
        }
        while let Some(got) = set.join_next().await {
            assert_eq!(got.unwrap(), Ok(7));
        }
        assert_eq!(loads.load(Ordering::SeqCst), 1, "one load for 20 callers");
        // Another key loads on its own; a value `good` refuses is loaded again.
        assert_eq!(
            memo.get_or_load(&2, |_| true, || async { Ok::<_, ()>(9) })
                .await,
            Ok(9)
        );
        assert_eq!(
            memo.get_or_load(&1, |_| false, || async { Ok::<_, ()>(8) })
                .await,
            Ok(8)
        );
        assert_eq!(
            memo.get_or_load(&1, |_| true, || async { Ok::<_, ()>(0) })
                .await,
            Ok(8)
        );
        // A failed load keeps what was stored.
        assert_eq!(
            memo.get_or_load(&1, |_| false, || async { Err::<u32, _>("x") })
                .await,
            Err("x")
        );
        assert_eq!(
            memo.get_or_load(&1, |_| true, || async { Ok::<_, ()>(0) })
                .await,
            Ok(8)
        );
    }
}
