//! What happens to deliveries when their subscription changes, and manual retries.

use super::events::DeliverySubject;
use crate::model::due::{DueChanges, DueId, DueItem, DueKind};
use crate::model::webhook::{DeliveryStatus, WebhookSubscription};
use crate::page::Page;
use crate::store::Store;
use chrono::{DateTime, Utc};

/// `last_error` of a delivery ended because its subscription was disabled (BEHAVIOR 13).
pub const SUBSCRIPTION_DISABLED: &str = "Subscription disabled";

/// Ends every open (pending or retrying) delivery of a disabled subscription: `failed` with
/// `Subscription disabled` (BEHAVIOR 13). Best effort: a delivery missed here ends the same way
/// at its next attempt.
pub async fn fail_open_deliveries(store: &dyn Store, subscription: &WebhookSubscription) {
    let mut page = Page::first(100, false);
    loop {
        let listed = match store.list_deliveries(subscription.id, &page).await {
            Ok(listed) => listed,
            Err(error) => {
                tracing::warn!(error = %crate::error::ErrorChain(&error), "open deliveries not ended");
                return;
            }
        };
        for delivery in &listed.items {
            if !matches!(
                delivery.status,
                DeliveryStatus::Pending | DeliveryStatus::Retrying
            ) {
                continue;
            }
            let mut ended = delivery.clone();
            ended.status = DeliveryStatus::Failed;
            ended.last_error = Some(SUBSCRIPTION_DISABLED.into());
            let _ = store
                .record_delivery(&ended, delivery.attempts, None, &DueChanges::none())
                .await;
        }
        match listed.next {
            Some(position) => page = Page::after(100, position, false),
            None => return,
        }
    }
}

/// The due item of a manual retry of delivery `subject` (its own item: one attempt now, beside
/// whatever schedule the delivery has).
pub fn manual_retry_item(
    subject: &DeliverySubject, now: DateTime<Utc>,
    schedule: &dyn Fn(DueId, serde_json::Value, DateTime<Utc>) -> DueItem,
) -> DueItem {
    let subject = DeliverySubject {
        manual: true,
        ..subject.clone()
    };
    schedule(
        DueId::new(
            DueKind::WebhookDelivery,
            format!(
                "{}:retry-{}",
                subject.delivery_id,
                uuid::Uuid::new_v4().simple()
            ),
        ),
        serde_json::to_value(&subject).unwrap_or_default(),
        now,
    )
}
