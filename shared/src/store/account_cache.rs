//! Per-instance cache of one value per account, each entry trusted for a TTL: what the field
//! catalogue cache ([`crate::fields::cache`]) and the dispatch directory
//! ([`crate::dispatch::directory`]) keep of data that changes only through provisioning.

use crate::types::ids::AccountId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Values of type `V` by account, each kept for `ttl` from when it was stored.
#[derive(Debug)]
pub struct AccountCache<V> {
    ttl: Duration,
    entries: Mutex<HashMap<AccountId, (Instant, Arc<V>), foldhash::fast::RandomState>>,
}

impl<V> Default for AccountCache<V> {
    /// An empty cache whose entries live [`Self::DEFAULT_TTL`].
    fn default() -> Self {
        Self::new(Self::DEFAULT_TTL)
    }
}

impl<V> AccountCache<V> {
    /// Default time an entry is trusted: 60 seconds.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(60);

    /// An empty cache whose entries live `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::default()),
        }
    }

    /// The account's value if it was stored less than the TTL ago.
    pub fn fresh(&self, account_id: AccountId) -> Option<Arc<V>> {
        self.lock()
            .get(&account_id)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, value)| value.clone())
    }

    /// Stores `value` for the account (replacing any older one) and returns it shared.
    pub fn insert(&self, account_id: AccountId, value: V) -> Arc<V> {
        let value = Arc::new(value);
        self.lock()
            .insert(account_id, (Instant::now(), value.clone()));
        value
    }

    fn lock(
        &self,
    ) -> MutexGuard<'_, HashMap<AccountId, (Instant, Arc<V>), foldhash::fast::RandomState>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(n: u128) -> AccountId {
        AccountId::from_uuid(uuid::Uuid::from_u128(n))
    }

    #[test]
    fn a_value_is_fresh_for_its_ttl_per_account_and_replaced_by_a_newer_one() {
        let cache = AccountCache::new(Duration::from_secs(60));
        assert!(cache.fresh(account(1)).is_none());
        let stored = cache.insert(account(1), "first");
        assert!(Arc::ptr_eq(&cache.fresh(account(1)).unwrap(), &stored));
        assert!(cache.fresh(account(2)).is_none(), "another account's entry");
        cache.insert(account(1), "second");
        assert_eq!(*cache.fresh(account(1)).unwrap(), "second");
    }

    #[test]
    fn a_value_older_than_the_ttl_is_not_fresh() {
        let cache = AccountCache::new(Duration::from_millis(20));
        cache.insert(account(1), 7);
        assert_eq!(cache.fresh(account(1)).as_deref(), Some(&7));
        std::thread::sleep(Duration::from_millis(40));
        assert!(cache.fresh(account(1)).is_none());
    }
}
