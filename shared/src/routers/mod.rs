//! Routers, read-only through the API (spec "Router object", "Routers"; BEHAVIOR 5).

pub mod view;

pub use view::RouterView;

use crate::error::DomainError;
use crate::page::{ListView, Page};
use crate::store::Store;
use crate::types::ids::{AccountId, RouterId};
use std::sync::Arc;

/// The router read operations.
pub struct RouterService {
    store: Arc<dyn Store>,
}

impl RouterService {
    /// A service over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    /// `GET /routers`: `{data, pagination}`, by creation time; archived only with `archived=true`.
    pub async fn list(
        &self,
        account_id: AccountId,
        page: Page,
    ) -> Result<ListView<RouterView>, DomainError> {
        let routers = self.store.list_routers(account_id, page).await?;
        Ok(ListView::new(
            routers.iter().map(RouterView::new).collect(),
            page,
        ))
    }

    /// `GET /routers/{routerId}`, archived or not.
    ///
    /// Errors: 404 not a router of this account.
    pub async fn get(
        &self,
        account_id: AccountId,
        id: RouterId,
    ) -> Result<RouterView, DomainError> {
        let router = self
            .store
            .get_router(account_id, id)
            .await?
            .ok_or_else(|| DomainError::not_found("Router not found"))?;
        Ok(RouterView::new(&router))
    }
}
