//! The embedded store's accounts, API clients, roles, teams and field definitions
//! ([`AccountStore`]).

use super::MemoryStore;
use crate::fields::definition::FieldDefinition;
use crate::model::account::{Account, ApiClient, Role, Team};
use crate::store::{AccountStore, StoreResult};
use crate::types::ids::AccountId;
use async_trait::async_trait;

#[async_trait]
impl AccountStore for MemoryStore {
    async fn get_account(&self, account_id: AccountId) -> StoreResult<Option<Account>> {
        Ok(self.lock().accounts.get(&account_id).cloned())
    }

    async fn get_client(&self, client_id: &str) -> StoreResult<Option<ApiClient>> {
        Ok(self.lock().clients.get(client_id).cloned())
    }

    async fn field_definitions(&self, account_id: AccountId) -> StoreResult<Vec<FieldDefinition>> {
        Ok(self
            .lock()
            .field_definitions
            .get(&account_id)
            .cloned()
            .unwrap_or_default())
    }

    async fn list_roles(&self, account_id: AccountId) -> StoreResult<Vec<Role>> {
        let state = self.lock();
        Ok(state
            .roles
            .values()
            .filter(|r| r.account_id == account_id)
            .cloned()
            .collect())
    }

    async fn list_teams(&self, account_id: AccountId) -> StoreResult<Vec<Team>> {
        let state = self.lock();
        let mut teams: Vec<Team> = state
            .teams
            .values()
            .filter(|t| t.account_id == account_id)
            .cloned()
            .collect();
        teams.sort_by_key(|t| (t.created_at, t.id));
        Ok(teams)
    }
}
