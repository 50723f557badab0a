//! The accounts' port: accounts, API clients, roles, teams and field definitions, all written by
//! provisioning only ([`super::ProvisionStore`]) and read on every request.

use crate::fields::definition::FieldDefinition;
use crate::model::account::{Account, ApiClient, Role, Team};
use crate::store::StoreResult;
use crate::types::ids::AccountId;
use async_trait::async_trait;

/// Accounts and what hangs off them: API clients (`client_id` unique across the store), roles,
/// teams and the stored field definitions.
#[async_trait]
pub trait AccountStore: Send + Sync + 'static {
    /// An account by id.
    async fn get_account(&self, account_id: AccountId) -> StoreResult<Option<Account>>;

    /// An API client by `client_id` (unique across the store).
    async fn get_client(&self, client_id: &str) -> StoreResult<Option<ApiClient>>;

    /// The account's stored field definitions, all record types.
    async fn field_definitions(&self, account_id: AccountId) -> StoreResult<Vec<FieldDefinition>>;

    /// The account's roles.
    async fn list_roles(&self, account_id: AccountId) -> StoreResult<Vec<Role>>;

    /// The account's teams, by creation time.
    async fn list_teams(&self, account_id: AccountId) -> StoreResult<Vec<Team>>;
}
