//! What one instance remembers between CRM requests, one value per key, loaded by one caller at
//! a time (single flight): access tokens per account and app (shared by the instance's
//! concurrent syncs, one grant at a time) and owners found by e-mail per account and member (one
//! look-up per member per hour at most). Only what was found is remembered, each with its time;
//! never a "not found", never a failure (BEHAVIOR 7).
//!
//! No lock is held while a value loads: a caller that finds a key empty or its value no longer
//! good marks the key as loading and loads; concurrent callers of that key wait for that load's
//! outcome and share it, a failure included (so during a CRM outage N concurrent syncs of one
//! account wait for one failing request, not for N in a row). The next caller after a failed
//! load loads again. A load whose caller gave up (its future dropped) leaves the key to the
//! next caller. Keys do not wait for each other.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Instant;
use tokio::sync::watch;

/// A remembered value and when it was stored.
#[derive(Debug, Clone)]
pub struct Stored<V> {
    /// The value.
    pub value: V,
    /// When it was loaded.
    pub at: Instant,
}

/// The outcome of a load, as its waiters receive it.
type Outcome<V, E> = Option<Result<V, E>>;

#[derive(Debug)]
enum Slot<V, E> {
    Ready(Stored<V>),
    Loading(watch::Receiver<Outcome<V, E>>),
}

/// Values by key, each loaded by one caller at a time. At most [`Memo::MAX_KEYS`] keys are
/// kept; past that, the values older than the newest half are dropped (loaded again when
/// needed).
#[derive(Debug)]
pub struct Memo<K, V, E> {
    slots: Mutex<HashMap<K, Slot<V, E>>>,
}

impl<K, V, E> Default for Memo<K, V, E> {
    fn default() -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
        }
    }
}

/// What a caller does after looking at its key.
enum Turn<V, E> {
    Found(V),
    Wait(watch::Receiver<Outcome<V, E>>),
    Load(watch::Sender<Outcome<V, E>>),
}

impl<K: Eq + Hash + Clone, V: Clone, E: Clone> Memo<K, V, E> {
    /// Most keys kept.
    pub const MAX_KEYS: usize = 10_000;

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Slot<V, E>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn turn(&self, key: &K, good: &impl Fn(&Stored<V>) -> bool) -> Turn<V, E> {
        let mut slots = self.lock();
        match slots.get(key) {
            Some(Slot::Ready(stored)) if good(stored) => return Turn::Found(stored.value.clone()),
            // A load in flight (its sender alive): wait for it.
            Some(Slot::Loading(rx)) if rx.has_changed().is_ok() => return Turn::Wait(rx.clone()),
            _ => {}
        }
        if !slots.contains_key(key) && slots.len() >= Self::MAX_KEYS {
            let mut times: Vec<Instant> = slots
                .values()
                .filter_map(|s| match s {
                    Slot::Ready(stored) => Some(stored.at),
                    Slot::Loading(_) => None,
                })
                .collect();
            times.sort_unstable();
            let cut = times.get(times.len() / 2).copied();
            slots.retain(|_, slot| match slot {
                Slot::Ready(stored) => cut.is_some_and(|cut| stored.at >= cut),
                Slot::Loading(rx) => rx.has_changed().is_ok(),
            });
        }
        let (tx, rx) = watch::channel(None);
        slots.insert(key.clone(), Slot::Loading(rx));
        Turn::Load(tx)
    }

    /// The value of `key` when `good` says the stored one still serves; else the outcome of the
    /// load in flight for `key`, or of `load` when none is (a value is stored for the next
    /// callers, a failure is not).
    ///
    /// Errors: the failure of the load this caller made or waited for.
    pub async fn get_or_load<F, Fut>(
        &self, key: &K, good: impl Fn(&Stored<V>) -> bool, load: F,
    ) -> Result<V, E>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<V, E>>,
    {
        let mut load = Some(load);
        loop {
            match self.turn(key, &good) {
                Turn::Found(value) => return Ok(value),
                Turn::Wait(mut rx) => {
                    if let Ok(outcome) = rx.wait_for(Option::is_some).await {
                        if let Some(outcome) = outcome.clone() {
                            return outcome;
                        }
                    }
                    // The loader gave up (its future dropped): look again.
                }
                Turn::Load(tx) => {
                    let Some(load) = load.take() else {
                        // Never reached: a caller loads at most once (a load ends in an
                        // outcome or in this caller's future being dropped).
                        continue;
                    };
                    let outcome = load().await;
                    {
                        let mut slots = self.lock();
                        let ours = matches!(
                            slots.get(key),
                            Some(Slot::Loading(rx)) if rx.same_channel(&tx.subscribe())
                        );
                        if ours {
                            match &outcome {
                                Ok(value) => {
                                    slots.insert(
                                        key.clone(),
                                        Slot::Ready(Stored {
                                            value: value.clone(),
                                            at: Instant::now(),
                                        }),
                                    );
                                }
                                Err(_) => {
                                    slots.remove(key);
                                }
                            }
                        }
                    }
                    tx.send_replace(Some(outcome.clone()));
                    return outcome;
                }
            }
        }
    }

    /// Forgets `key`'s value (a refused owner id); a load in flight is left alone.
    pub fn forget(&self, key: &K) {
        let mut slots = self.lock();
        if matches!(slots.get(key), Some(Slot::Ready(_))) {
            slots.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn concurrent_callers_of_one_key_load_once_and_a_stale_value_is_loaded_again() {
        let memo: Arc<Memo<u8, u32, &'static str>> = Arc::default();
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
                        Ok(loads.fetch_add(1, Ordering::SeqCst) as u32 + 7)
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
            memo.get_or_load(&2, |_| true, || async { Ok(9) }).await,
            Ok(9)
        );
        assert_eq!(
            memo.get_or_load(&1, |_| false, || async { Ok(8) }).await,
            Ok(8)
        );
        assert_eq!(
            memo.get_or_load(&1, |_| true, || async { Ok(0) }).await,
            Ok(8)
        );
        // A failed load is not remembered: the next caller loads.
        assert_eq!(
            memo.get_or_load(&3, |_| true, || async { Err("down") })
                .await,
            Err("down")
        );
        assert_eq!(
            memo.get_or_load(&3, |_| true, || async { Ok(5) }).await,
            Ok(5)
        );
        memo.forget(&3);
        assert_eq!(
            memo.get_or_load(&3, |_| true, || async { Ok(6) }).await,
            Ok(6)
        );
    }

    /// Concurrent callers of a key whose load fails wait for that one load and share its
    /// failure: they do not queue up to fail one after the other.
    #[tokio::test]
    async fn concurrent_callers_share_one_failing_load_instead_of_queueing_behind_it() {
        let memo: Arc<Memo<u8, u32, &'static str>> = Arc::default();
        let loads = Arc::new(AtomicUsize::new(0));
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let memo = memo.clone();
            let loads = loads.clone();
            set.spawn(async move {
                memo.get_or_load(
                    &1,
                    |_| true,
                    || async {
                        loads.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        Err("token endpoint down")
                    },
                )
                .await
            });
        }
        while let Some(got) = set.join_next().await {
            assert_eq!(got.unwrap(), Err("token endpoint down"));
        }
        assert_eq!(
            loads.load(Ordering::SeqCst),
            1,
            "one failing load for 8 concurrent callers, not 8 in a row"
        );
    }

    /// A caller that gives up while loading (its future dropped: the attempt's deadline) leaves
    /// the key to the next caller, who loads instead of waiting forever.
    #[tokio::test]
    async fn a_load_given_up_leaves_the_key_to_the_next_caller() {
        let memo: Arc<Memo<u8, u32, &'static str>> = Arc::default();
        let slow = memo.get_or_load(
            &1,
            |_| true,
            || async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(1)
            },
        );
        assert!(tokio::time::timeout(Duration::from_millis(50), slow)
            .await
            .is_err());
        assert_eq!(
            memo.get_or_load(&1, |_| true, || async { Ok(2) }).await,
            Ok(2)
        );
    }
}
