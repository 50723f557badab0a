//! Per-instance cache of the accounts' field catalogues.
//!
//! An account's stored field definitions change only through provisioning, so a warm function
//! reads them once and keeps them for a short TTL (one store read per account per TTL) instead
//! of on every request.

use super::catalogue::Catalogue;
use super::definition::FieldDefinition;
use crate::model::object_type::ObjectType;
use crate::store::account_cache::AccountCache;
use crate::store::{AccountStore, StoreResult};
use crate::types::ids::AccountId;
use std::sync::Arc;

/// The four catalogues of one account.
#[derive(Debug)]
pub struct AccountCatalogues {
    by_type: [Catalogue; 4],
}

impl AccountCatalogues {
    /// The four catalogues built from the account's stored `definitions`.
    pub fn build(definitions: &[FieldDefinition]) -> Self {
        Self {
            by_type: ObjectType::ALL.map(|t| Catalogue::build(t, definitions)),
        }
    }

    /// The catalogue of `object_type`.
    pub fn get(&self, object_type: ObjectType) -> &Catalogue {
        let index = ObjectType::ALL
            .iter()
            .position(|t| *t == object_type)
            .unwrap_or(0);
        &self.by_type[index]
    }
}

/// Cache of [`AccountCatalogues`] by account, each entry kept for [`AccountCache::DEFAULT_TTL`].
#[derive(Debug, Default)]
pub struct CatalogueCache {
    entries: AccountCache<AccountCatalogues>,
}

impl CatalogueCache {
    /// The account's catalogues, from the cache or (once per TTL) from the store.
    ///
    /// Errors: the store's, when it has to be read.
    pub async fn get(
        &self, store: &dyn AccountStore, account_id: AccountId,
    ) -> StoreResult<Arc<AccountCatalogues>> {
        if let Some(cached) = self.cached(account_id) {
            return Ok(cached);
        }
        let definitions = store.field_definitions(account_id).await?;
        Ok(self.insert(account_id, &definitions))
    }

    /// The account's catalogues when they were read less than the TTL ago (a caller that reads
    /// the definitions together with other reads, dispatch's first round, fills the cache with
    /// [`Self::insert`]).
    pub fn cached(&self, account_id: AccountId) -> Option<Arc<AccountCatalogues>> {
        self.entries.fresh(account_id)
    }

    /// Keeps the catalogues built from the account's stored `definitions`
    /// ([`crate::store::AccountStore::field_definitions`]) and returns them.
    pub fn insert(
        &self, account_id: AccountId, definitions: &[FieldDefinition],
    ) -> Arc<AccountCatalogues> {
        self.entries
            .insert(account_id, AccountCatalogues::build(definitions))
    }
}
