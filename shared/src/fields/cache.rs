//! Per-instance cache of the accounts' field catalogues.
//!
//! An account's stored field definitions change only through provisioning, so a warm function
//! reads them once and keeps them for a short TTL (one store read per account per TTL) instead
//! of on every request.

use super::catalogue::Catalogue;
use crate::model::object_type::ObjectType;
use crate::store::{Store, StoreResult};
use crate::types::ids::AccountId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The four catalogues of one account.
#[derive(Debug)]
pub struct AccountCatalogues {
    by_type: [Catalogue; 4],
}

impl AccountCatalogues {
    /// The catalogue of `object_type`.
    pub fn get(&self, object_type: ObjectType) -> &Catalogue {
        let index = ObjectType::ALL
            .iter()
            .position(|t| *t == object_type)
            .unwrap_or(0);
        &self.by_type[index]
    }
}

/// Cache of [`AccountCatalogues`] by account, each entry kept for `ttl`.
#[derive(Debug)]
pub struct CatalogueCache {
    ttl: Duration,
    entries: Mutex<HashMap<AccountId, (Instant, Arc<AccountCatalogues>)>>,
}

impl CatalogueCache {
    /// Default time an entry is trusted: 60 seconds.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(60);

    /// An empty cache whose entries live `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The account's catalogues, from the cache or (once per TTL) from the store.
    ///
    /// Errors: the store's, when it has to be read.
    pub async fn get(
        &self,
        store: &dyn Store,
        account_id: AccountId,
    ) -> StoreResult<Arc<AccountCatalogues>> {
        if let Some((at, cached)) = self.lock().get(&account_id) {
            if at.elapsed() < self.ttl {
                return Ok(cached.clone());
            }
        }
        let definitions = store.field_definitions(account_id).await?;
        let built = Arc::new(AccountCatalogues {
            by_type: ObjectType::ALL.map(|t| Catalogue::build(t, &definitions)),
        });
        self.lock()
            .insert(account_id, (Instant::now(), built.clone()));
        Ok(built)
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<AccountId, (Instant, Arc<AccountCatalogues>)>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for CatalogueCache {
    fn default() -> Self {
        Self::new(Self::DEFAULT_TTL)
    }
}
