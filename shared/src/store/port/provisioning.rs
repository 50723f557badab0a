//! The provisioning port: loading a validated plan (the seed format, `docs/seed-format.md`).

use crate::model::account::ApiClient;
use crate::model::provision::ProvisionPlan;
#[cfg(doc)]
use crate::store::StoreError;
use crate::store::{ProvisionReport, StoreResult};
use async_trait::async_trait;

/// Provisioning: inserts what a plan holds and the store does not, all-or-nothing.
#[async_trait]
pub trait ProvisionStore: Send + Sync + 'static {
    /// Loads a validated provisioning plan: insert-if-absent by id (`client_id` for clients),
    /// all-or-nothing. A router is stored with its first revision (`published_by`
    /// `provisioning`, made at its creation time) and counts against its account's router limit
    /// unless archived.
    ///
    /// Errors: [`StoreError::Rejected`] when an inserted record's unique key is held by an
    /// existing active record; nothing is written then.
    async fn provision(&self, plan: &ProvisionPlan) -> StoreResult<ProvisionReport>;

    /// Replaces the stored API client `client.client_id` with `client` (a provisioning run that
    /// changed its secret, `disabled` or scopes: BEHAVIOR 1), on the condition that the stored
    /// one is still at generation `expected_generation` (a client stored before generations
    /// existed is at 0). Answers whether it was replaced: `false` when the client is absent or
    /// at another generation (another run changed it meanwhile); nothing is written then.
    async fn replace_client(
        &self, client: &ApiClient, expected_generation: u64,
    ) -> StoreResult<bool>;
}
