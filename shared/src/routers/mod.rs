//! Routers (spec "Router object", "Routers"; BEHAVIOR 5 and 15): the read operations here, the
//! management operations in [`manage`], the one configuration validator in [`config`].

pub mod config;
pub mod manage;
pub mod revision;
pub mod roster;
pub mod view;

pub use manage::{Actor, RouterAdmin, Tagged};
pub use revision::RevisionChoice;
pub use view::{DraftView, RevisionView, RouterView};

use crate::error::DomainError;
use crate::page::cursor::{CursorKey, ListRequest};
use crate::page::ListView;
use crate::store::{router_position, RouterStore};
use crate::types::ids::{AccountId, RouterId};
use std::sync::Arc;

/// The router read operations.
pub struct RouterService {
    store: Arc<dyn RouterStore>,
}

impl RouterService {
    /// A service over `store`.
    pub fn new(store: Arc<dyn RouterStore>) -> Self {
        Self { store }
    }

    /// `GET /routers`: `{data, pagination}`, by creation time; archived only with `archived=true`;
    /// `after` cursors opened and sealed with `cursors` (BEHAVIOR 11).
    ///
    /// Errors: 400 naming `after` for a cursor this list did not issue.
    pub async fn list(
        &self, account_id: AccountId, request: &ListRequest, cursors: &CursorKey,
    ) -> Result<ListView<RouterView>, DomainError> {
        let (list, page) = request.open(cursors, account_id, "routers")?;
        let listed = self.store.list_routers(account_id, &page).await?;
        Ok(cursors.answer(&list, &page, listed, RouterView::new, router_position))
    }

    /// `GET /routers/{routerId}`, archived or not.
    ///
    /// Errors: 404 not a router of this account.
    pub async fn get(
        &self, account_id: AccountId, id: RouterId,
    ) -> Result<RouterView, DomainError> {
        let router = self
            .store
            .get_router(account_id, id)
            .await?
            .ok_or_else(|| DomainError::not_found("Router not found"))?;
        Ok(RouterView::new(&router))
    }
}
