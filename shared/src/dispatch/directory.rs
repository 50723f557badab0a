//! Per-instance cache of what dispatch reads about an account besides its records and members:
//! the account itself (active flag, quota, CRM connection) and its teams. Both change only
//! through provisioning, so a warm instance reads them once per TTL (60 s) instead of on every
//! dispatch, as it does the field catalogue ([`crate::fields::cache`]). A missing account is
//! not remembered (it may be provisioned a moment later).

use crate::model::account::{Account, Team};
use crate::secrets::{open_crm, OpenCrmConnection, Sealer};
use crate::store::account_cache::AccountCache;
use crate::store::{Store, StoreResult};
use crate::types::ids::AccountId;
use std::sync::Arc;

/// An account, its teams (by creation time) and its CRM connection with the token opened.
#[derive(Debug)]
pub struct AccountDirectory {
    /// The account.
    pub account: Account,
    /// Its teams.
    pub teams: Vec<Team>,
    /// Its CRM connection, token opened ([`crate::secrets::open_crm`]); `None` without one.
    pub crm: Option<Result<OpenCrmConnection, String>>,
}

/// Cache of [`AccountDirectory`] by account, each entry kept for [`AccountCache::DEFAULT_TTL`].
#[derive(Debug, Default)]
pub struct DirectoryCache {
    entries: AccountCache<AccountDirectory>,
}

impl DirectoryCache {
    /// The account and its teams, from the cache or (once per TTL) from the store, the two
    /// reads at once, and its CRM token opened by `sealer` (once per TTL too); `None` when
    /// there is no such account.
    ///
    /// Errors: the store's, when it has to be read.
    pub async fn get(
        &self, store: &dyn Store, sealer: &dyn Sealer, account_id: AccountId,
    ) -> StoreResult<Option<Arc<AccountDirectory>>> {
        if let Some(cached) = self.entries.fresh(account_id) {
            return Ok(Some(cached));
        }
        let (account, teams) =
            tokio::try_join!(store.get_account(account_id), store.list_teams(account_id))?;
        let Some(account) = account else {
            return Ok(None);
        };
        let crm = open_crm(sealer, &account).await;
        Ok(Some(self.entries.insert(
            account_id,
            AccountDirectory {
                account,
                teams,
                crm,
            },
        )))
    }
}
