//! The webhooks' port (BEHAVIOR 13): subscriptions and their deliveries.

use crate::model::audit::AuditEvent;
use crate::model::due::DueChanges;
use crate::model::webhook::{SubscriptionHealth, WebhookDelivery, WebhookSubscription};
#[cfg(doc)]
use crate::store::StoreError;
use crate::store::{Page, PageRequest, StoreResult};
use crate::types::ids::{AccountId, WebhookId};
use async_trait::async_trait;

/// Webhook subscriptions (at most a number per account, counted in the same write) and the
/// deliveries of their events.
///
/// Every write that changes what a dispatch makes of an account's subscriptions (create, update,
/// delete, a delivery attempt that disables one) moves the account's subscriptions version in the
/// same atomic write; dispatch reads it by key in its first round
/// ([`crate::store::FirstReads::webhooks_version`]) to know whether the subscriptions its instance
/// keeps are still the account's ([`crate::webhooks::cache`]). A delivery attempt that changes
/// only `failing_since` does not move it.
#[async_trait]
pub trait WebhookStore: Send + Sync + 'static {
    /// Creates a webhook subscription (BEHAVIOR 13) when its account has fewer than `max`: the
    /// account's count goes up, and `audit` (the audit event, BEHAVIOR 18) is stored, in the same
    /// atomic write.
    ///
    /// Errors: [`StoreError::Rejected`] when the account has `max` already (nothing written).
    async fn create_webhook(
        &self, subscription: &WebhookSubscription, max: u64, audit: Option<&AuditEvent>,
    ) -> StoreResult<()>;

    /// A page of the account's subscriptions, by creation time (position: the id, UUID v7).
    /// Strongly consistent: dispatch reads them to make its events.
    async fn list_webhooks(
        &self, account_id: AccountId, page: &PageRequest,
    ) -> StoreResult<Page<WebhookSubscription>>;

    /// A subscription of the account by id.
    async fn get_webhook(
        &self, account_id: AccountId, id: WebhookId,
    ) -> StoreResult<Option<WebhookSubscription>>;

    /// Replaces a subscription stored at `expected_version` with `subscription`, all but its
    /// health: the stored `failing_since` is kept (delivery attempts write it, without moving the
    /// version: [`crate::model::webhook::HealthChange`]), or removed when `reset_health` (a
    /// subscription enabled again starts healthy). `due` (e.g. the item that ends the open
    /// deliveries of a subscription this write disables) and `audit` (BEHAVIOR 18) are written in
    /// the same atomic write.
    ///
    /// Errors: [`StoreError::Conflict`] when it changed or is gone (nothing written).
    async fn update_webhook(
        &self, subscription: &WebhookSubscription, expected_version: u64, reset_health: bool,
        due: &DueChanges, audit: Option<&AuditEvent>,
    ) -> StoreResult<()>;

    /// Deletes a subscription stored at `expected_version` (its deliveries are left to expire;
    /// nothing delivers them any more) and lowers the account's count, with `audit` (BEHAVIOR
    /// 18), in one atomic write. Returns whether it existed.
    ///
    /// Errors: [`StoreError::Conflict`] when it exists at another version, or the write kept
    /// meeting concurrent writes until the store's deadline (nothing written).
    async fn delete_webhook(
        &self, account_id: AccountId, id: WebhookId, expected_version: u64,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<bool>;

    /// A delivery of a subscription by id.
    async fn get_delivery(
        &self, subscription_id: WebhookId, delivery_id: &str,
    ) -> StoreResult<Option<WebhookDelivery>>;

    /// A page of a subscription's deliveries, newest first (position: the delivery id; a page
    /// after a position holds the deliveries older than it).
    async fn list_deliveries(
        &self, subscription_id: WebhookId, page: &PageRequest,
    ) -> StoreResult<Page<WebhookDelivery>>;

    /// Stores a delivery's new state (conditional on its stored attempt count being
    /// `expected_attempts`), the attempt's change to its subscription's health when it made one
    /// (conditional on the subscription existing, and for
    /// [`crate::model::webhook::HealthChange::DisableFailing`] on its `failing_since` alone),
    /// and `due` (the attempt's settlement, new items), in one atomic write.
    ///
    /// Errors: [`StoreError::LeaseLost`] when a settled item's lease is gone;
    /// [`StoreError::Conflict`] when the delivery changed, the subscription is gone or its health
    /// moved (nothing written).
    async fn record_delivery(
        &self, delivery: &WebhookDelivery, expected_attempts: u32,
        health: Option<&SubscriptionHealth>, due: &DueChanges,
    ) -> StoreResult<()>;
}
