//! Per-instance cache of what dispatch reads about an account besides its records and members:
//! the account itself (active flag, quota, CRM connection) and its teams. Both change only
//! through provisioning, so a warm instance reads them once per TTL (60 s) instead of on every
//! dispatch, as it does the field catalogue ([`crate::fields::cache`]). A missing account is
//! not remembered (it may be provisioned a moment later). The reads are the dispatch's own:
//! a cold instance sends them in its first round with the router and the record
//! ([`crate::dispatch::steps`]), and fills the cache with what they found.

use crate::model::account::{Account, Team};
use crate::secrets::{open_crm, OpenCrmConnection, Sealer};
use crate::store::account_cache::AccountCache;
use crate::types::ids::AccountId;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// An account, its teams (by creation time) and its CRM connection, whose token is opened at
/// the first run that needs it ([`Self::crm`]).
#[derive(Debug)]
pub struct AccountDirectory {
    /// The account.
    pub account: Account,
    /// Its teams.
    pub teams: Vec<Team>,
    /// Its CRM connection, token opened ([`crate::secrets::open_crm`]), once opened.
    crm: OnceCell<Option<Result<OpenCrmConnection, String>>>,
}

impl AccountDirectory {
    /// The directory of `account` with its `teams`, the CRM token not opened yet.
    pub fn new(account: Account, teams: Vec<Team>) -> Self {
        Self {
            account,
            teams,
            crm: OnceCell::new(),
        }
    }

    /// Its CRM connection with the token opened by `sealer` (a KMS request in production), at
    /// the first call only (once per TTL of the cache entry): a router with `has_integration`
    /// asks for it with its second round of reads; the others never do. `None` without a
    /// connection; `Err` when the token does not open.
    pub async fn crm(&self, sealer: &dyn Sealer) -> Option<&Result<OpenCrmConnection, String>> {
        self.crm
            .get_or_init(|| open_crm(sealer, &self.account))
            .await
            .as_ref()
    }

    /// The CRM connection as [`Self::crm`] opened it; `None` before that call, or without a
    /// connection.
    pub fn opened_crm(&self) -> Option<&Result<OpenCrmConnection, String>> {
        self.crm.get().and_then(Option::as_ref)
    }
}

/// Cache of [`AccountDirectory`] by account, each entry kept for [`AccountCache::DEFAULT_TTL`].
#[derive(Debug, Default)]
pub struct DirectoryCache {
    entries: AccountCache<AccountDirectory>,
}

impl DirectoryCache {
    /// The account's directory when this instance read it less than the TTL ago.
    pub fn cached(&self, account_id: AccountId) -> Option<Arc<AccountDirectory>> {
        self.entries.fresh(account_id)
    }

    /// Keeps what a run read of the account, `account` (`None`: there is no such account, and
    /// nothing is kept) and its `teams`, and returns it.
    pub fn fill(
        &self, account_id: AccountId, account: Option<Account>, teams: Vec<Team>,
    ) -> Option<Arc<AccountDirectory>> {
        let account = account?;
        Some(
            self.entries
                .insert(account_id, AccountDirectory::new(account, teams)),
        )
    }
}
