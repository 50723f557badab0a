//! The DynamoDB adapter's webhook subscriptions and deliveries ([`WebhookStore`], BEHAVIOR 13),
//! and the account's subscription count.

use super::cancel::{Part, Precedence};
use super::items;
use super::items::{n, Expr};
use super::query::{Query, SortCondition};
use super::DynamoStore;
use crate::model::due::DueChanges;
use crate::model::webhook::{SubscriptionHealth, WebhookDelivery, WebhookSubscription};
use crate::store::{
    delivery_position, keys, webhook_position, Listed, Page, PageStart, StoreError, StoreResult,
    WebhookStore,
};
use crate::types::ids::{AccountId, WebhookId};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};

impl DynamoStore {
    /// The account's webhook count item's `ADD` of `delta`, conditional on staying below
    /// `max` when it grows.
    fn webhook_count_update(
        &self, account_id: AccountId, delta: i64, max: Option<u64>,
    ) -> StoreResult<TransactWriteItem> {
        let mut e = Expr::new("ADD #count :delta")
            .name("#count", items::COUNT)
            .value(":delta", AttributeValue::N(delta.to_string()));
        let condition = max.map(|max| {
            e.values.insert(":max".into(), n(max));
            "attribute_not_exists(#count) OR #count < :max".to_string()
        });
        self.update_item(&keys::webhook_count(account_id), &e, condition)
    }
}

#[async_trait]
impl WebhookStore for DynamoStore {
    async fn create_webhook(
        &self, subscription: &WebhookSubscription, max: u64,
    ) -> StoreResult<()> {
        let (_, item) = items::webhook(subscription)?;
        let tx = vec![
            self.webhook_count_update(subscription.account_id, 1, Some(max))?,
            self.put(item, Some(items::absent()))?,
        ];
        match self
            .transact(tx, &[Part::Quota, Part::Other], Precedence::RecordFirst)
            .await
        {
            Err(StoreError::Conflict) => {
                let count = match self
                    .get(&keys::webhook_count(subscription.account_id))
                    .await?
                {
                    Some(item) => match item.get(items::COUNT) {
                        Some(AttributeValue::N(v)) => v.parse::<u64>().unwrap_or(0),
                        _ => 0,
                    },
                    None => 0,
                };
                if count >= max {
                    Err(StoreError::Rejected(format!(
                        "the account has {max} subscriptions already"
                    )))
                } else {
                    Err(StoreError::Conflict)
                }
            }
            other => other,
        }
    }

    async fn list_webhooks(
        &self, account_id: AccountId, page: &Page,
    ) -> StoreResult<Listed<WebhookSubscription>> {
        let mut q = Query::table(keys::account(account_id).pk);
        q.sk = match &page.start {
            PageStart::Offset(_) => SortCondition::Prefix(keys::WEBHOOK_PREFIX.to_string()),
            PageStart::After(after) => SortCondition::Between(
                format!("{}{}!", keys::WEBHOOK_PREFIX, after.as_str()),
                format!("{}~", keys::WEBHOOK_PREFIX),
            ),
        };
        self.list_page(&q, page, webhook_position).await
    }

    async fn get_webhook(
        &self, account_id: AccountId, id: WebhookId,
    ) -> StoreResult<Option<WebhookSubscription>> {
        self.get_as(&keys::webhook(account_id, id)).await
    }

    async fn update_webhook(
        &self, subscription: &WebhookSubscription, expected_version: u64, reset_health: bool,
        due: &DueChanges,
    ) -> StoreResult<()> {
        let key = keys::webhook(subscription.account_id, subscription.id);
        let update = items::webhook_update(subscription, reset_health)?;
        let condition = items::at_version(expected_version);
        let update = Expr {
            names: update
                .names
                .into_iter()
                .chain(condition.names.clone())
                .collect(),
            values: update
                .values
                .into_iter()
                .chain(condition.values.clone())
                .collect(),
            ..update
        };
        let mut tx = vec![self.update_item(&key, &update, Some(condition.text))?];
        let mut parts = vec![Part::Record];
        self.due_writes(due, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn delete_webhook(&self, account_id: AccountId, id: WebhookId) -> StoreResult<bool> {
        let exists = Expr::new("attribute_exists(#pk)").name("#pk", keys::PK);
        let tx = vec![
            self.delete(&keys::webhook(account_id, id), exists)?,
            self.webhook_count_update(account_id, -1, None)?,
        ];
        match self
            .transact(tx, &[Part::Record, Part::Other], Precedence::RecordFirst)
            .await
        {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn get_delivery(
        &self, subscription_id: WebhookId, delivery_id: &str,
    ) -> StoreResult<Option<WebhookDelivery>> {
        self.get_as(&keys::delivery(subscription_id, delivery_id))
            .await
    }

    async fn list_deliveries(
        &self, subscription_id: WebhookId, page: &Page,
    ) -> StoreResult<Listed<WebhookDelivery>> {
        let partition = keys::delivery(subscription_id, "").pk;
        let mut q = Query::table(partition).newest_first();
        q.sk = match &page.start {
            PageStart::Offset(_) => SortCondition::Prefix(keys::DELIVERY_PREFIX.to_string()),
            PageStart::After(after) => {
                SortCondition::Before(format!("{}{}", keys::DELIVERY_PREFIX, after.as_str()))
            }
        };
        self.list_page(&q, page, delivery_position).await
    }

    async fn record_delivery(
        &self, delivery: &WebhookDelivery, expected_attempts: u32,
        health: Option<&SubscriptionHealth>, due: &DueChanges,
    ) -> StoreResult<()> {
        let (_, item) = items::delivery(delivery)?;
        let attempts = Expr::new("#attempts = :expected")
            .name("#attempts", "attempts")
            .value(":expected", n(u64::from(expected_attempts)));
        let mut tx = vec![self.put(item, Some(attempts))?];
        let mut parts = vec![Part::Record];
        if let Some(health) = health {
            let (update, condition) = items::health_update(&health.change)?;
            let key = keys::webhook(health.account_id, health.subscription_id);
            tx.push(self.update_item(&key, &update, Some(condition))?);
            parts.push(Part::Other);
        }
        self.due_writes(due, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }
}
