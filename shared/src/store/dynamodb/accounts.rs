//! The DynamoDB adapter's accounts, API clients, roles, teams and field definitions
//! ([`AccountStore`]).

use super::items;
use super::items::from_item;
use super::query::Query;
use super::request::{parse_items, string_attr};
use super::DynamoStore;
use crate::fields::definition::FieldDefinition;
use crate::model::account::{Account, ApiClient, Role, Team};
use crate::store::dynamodb::keys;
use crate::store::{AccountStore, StoreResult};
use crate::types::ids::AccountId;
use async_trait::async_trait;

#[async_trait]
impl AccountStore for DynamoStore {
    async fn get_account(&self, account_id: AccountId) -> StoreResult<Option<Account>> {
        self.get_as(&keys::account(account_id)).await
    }

    async fn get_client(&self, client_id: &str) -> StoreResult<Option<ApiClient>> {
        self.get_as(&keys::client(client_id)).await
    }

    async fn field_definitions(&self, account_id: AccountId) -> StoreResult<Vec<FieldDefinition>> {
        let q = Query::table(keys::account(account_id).pk).prefix(keys::FIELD_PREFIX.into());
        let mut ordered = Vec::new();
        for item in self.query_all(&q).await? {
            let at = string_attr(&item, items::DEFINED_AT).unwrap_or_default();
            ordered.push((at, from_item::<FieldDefinition>(item)?));
        }
        ordered.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(ordered.into_iter().map(|(_, d)| d).collect())
    }

    async fn list_roles(&self, account_id: AccountId) -> StoreResult<Vec<Role>> {
        let q = Query::index(keys::GSI2, keys::roles_partition(account_id));
        parse_items(self.query_all(&q).await?)
    }

    async fn list_teams(&self, account_id: AccountId) -> StoreResult<Vec<Team>> {
        let q = Query::index(keys::GSI2, keys::teams_partition(account_id));
        parse_items(self.query_all(&q).await?)
    }
}
