//! The DynamoDB adapter's webhook subscriptions and deliveries ([`WebhookStore`], BEHAVIOR 13),
//! and the account's subscription count item, which also holds the account's subscriptions
//! version: every write that changes what a dispatch makes of the subscriptions (create, update,
//! delete, a delivery attempt that disables one) adds 1 to it in its own transaction, and a
//! dispatch reads it by key in its first round ([`crate::store::DispatchStore::first_round_reads`])
//! to know whether the subscriptions its instance keeps are still the account's.

use super::cancel::{Part, Precedence};
use super::items;
use super::items::{n, Expr, Item};
use super::query::{Query, SortCondition};
use super::DynamoStore;
use crate::model::audit::AuditEvent;
use crate::model::due::DueChanges;
use crate::model::webhook::{SubscriptionHealth, WebhookDelivery, WebhookSubscription};
use crate::store::dynamodb::keys;
use crate::store::{
    delivery_position, webhook_position, Page, PageRequest, PageStart, StoreError, StoreResult,
    WebhookStore,
};
use crate::types::ids::{AccountId, WebhookId};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};

/// The attribute of the subscriptions' count item ([`keys::webhook_count`]) that every write of
/// a subscription moves (absent: 0, before the first such write).
const SUBSCRIPTIONS_VERSION: &str = "subscriptions_version";

/// The subscriptions version the count item `item` holds (0 without one).
///
/// Errors: a version that is not a number (a bug).
pub(super) fn subscriptions_version_of(item: &Item) -> StoreResult<u64> {
    match item.get(SUBSCRIPTIONS_VERSION) {
        Some(AttributeValue::N(v)) => v.parse().map_err(items::backend),
        _ => Ok(0),
    }
}

impl DynamoStore {
    /// The update of the account's subscription count item that a write of a subscription
    /// makes: `delta` added to the count (conditional on staying below `max` when given) and 1
    /// to the subscriptions version.
    fn subscriptions_changed(
        &self, account_id: AccountId, delta: i64, max: Option<u64>,
    ) -> StoreResult<TransactWriteItem> {
        let (text, delta) = match delta {
            0 => ("ADD #version :one", None),
            delta => ("ADD #count :delta, #version :one", Some(delta)),
        };
        let mut e = Expr::new(text)
            .name("#version", SUBSCRIPTIONS_VERSION)
            .value(":one", n(1));
        if let Some(delta) = delta {
            e = e
                .name("#count", items::COUNT)
                .value(":delta", AttributeValue::N(delta.to_string()));
        }
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
        &self, subscription: &WebhookSubscription, max: u64, audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let (_, item) = items::webhook(subscription)?;
        let count = keys::webhook_count(subscription.account_id);
        let mut tx = vec![
            self.subscriptions_changed(subscription.account_id, 1, Some(max))?,
            self.put(item, Some(items::absent()))?,
        ];
        let mut parts = vec![Part::Quota, Part::Other];
        self.audit_write(audit, &mut tx, &mut parts)?;
        self.transact_under_limit(tx, &parts, &count, max, "subscriptions")
            .await
    }

    async fn list_webhooks(
        &self, account_id: AccountId, page: &PageRequest,
    ) -> StoreResult<Page<WebhookSubscription>> {
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
        due: &DueChanges, audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let key = keys::webhook(subscription.account_id, subscription.id);
        let update = items::webhook_update(subscription, reset_health)?;
        let mut tx = vec![
            self.update_at_version(&key, update, expected_version)?,
            self.subscriptions_changed(subscription.account_id, 0, None)?,
        ];
        let mut parts = vec![Part::Record, Part::Other];
        self.due_writes(due, &mut tx, &mut parts)?;
        self.audit_write(audit, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn delete_webhook(
        &self, account_id: AccountId, id: WebhookId, expected_version: u64,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<bool> {
        let key = keys::webhook(account_id, id);
        let mut tx = vec![
            self.delete(&key, items::at_version(expected_version))?,
            self.subscriptions_changed(account_id, -1, None)?,
        ];
        let mut parts = vec![Part::Record, Part::Other];
        self.audit_write(audit, &mut tx, &mut parts)?;
        match self.transact(tx, &parts, Precedence::RecordFirst).await {
            Ok(()) => Ok(true),
            // Gone, changed since it was read (read it again), or still there after meeting
            // other transactions until the deadline.
            Err(StoreError::Conflict) => match self.get(&key).await? {
                None => Ok(false),
                Some(_) => Err(StoreError::Conflict),
            },
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
        &self, subscription_id: WebhookId, page: &PageRequest,
    ) -> StoreResult<Page<WebhookDelivery>> {
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
            if health.change.disables().is_some() {
                // A disabled subscription gets no new deliveries (BEHAVIOR 13).
                tx.push(self.subscriptions_changed(health.account_id, 0, None)?);
                parts.push(Part::Other);
            }
        }
        self.due_writes(due, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }
}
