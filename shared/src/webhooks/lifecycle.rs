//! What happens to deliveries when their subscription is disabled, and manual retries.

use super::events::DeliverySubject;
use super::retry::RetrySchedule;
use crate::due::{Claimed, DueJob, Ran};
use crate::error::DomainError;
use crate::model::due::{DueChanges, DueId, DueItem, DueKind};
use crate::model::webhook::{DeliveryStatus, WebhookSubscription};
use crate::page::{Page, Position};
use crate::store::{Store, StoreError};
use crate::types::ids::{AccountId, WebhookId};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// `last_error` of a delivery ended because its subscription was disabled (BEHAVIOR 13).
pub const SUBSCRIPTION_DISABLED: &str = "Subscription disabled";

/// Deliveries a closing run reads per page.
const CLOSING_PAGE: usize = 100;

/// Pages a closing run reads before it leaves the rest to its next run (a busy subscription's
/// log is worked through in runs of at most 1,000 deliveries, each well within a lease).
const CLOSING_PAGES_PER_RUN: usize = 10;

/// What a `close_deliveries` item names: the subscription, when it was disabled, and how far
/// the closing got (the position of the last delivery read; newest first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClosingSubject {
    /// The subscription's account.
    pub account_id: AccountId,
    /// The disabled subscription.
    pub subscription_id: WebhookId,
    /// When it was disabled: deliveries made later are not its business.
    pub disabled_at: DateTime<Utc>,
    /// Where the next run goes on (the last delivery id read), `None` at the start.
    #[serde(default)]
    pub after: Option<String>,
}

/// The item, stored in the write that disables `subscription` (to `version`, at `at`), that
/// ends its open deliveries ([`DeliveryCloser`]): the disabling write (a `PATCH`, a 410, five
/// days of failures) never waits on the size of the delivery log. One item per disable: its id
/// names the subscription and the version the disable makes.
pub fn closing_item(
    subscription: &WebhookSubscription, version: u64, at: DateTime<Utc>,
    schedule: &dyn Fn(DueId, serde_json::Value, DateTime<Utc>) -> DueItem,
) -> DueItem {
    let subject = ClosingSubject {
        account_id: subscription.account_id,
        subscription_id: subscription.id,
        disabled_at: at,
        after: None,
    };
    schedule(
        DueId::new(
            DueKind::CloseDeliveries,
            format!("{}:{version}", subscription.id),
        ),
        serde_json::to_value(&subject).unwrap_or_default(),
        at,
    )
}

/// The job of `close_deliveries` items: ends every delivery of a disabled subscription that was
/// open (pending or retrying) when it was disabled, `failed` with `Subscription disabled`
/// (BEHAVIOR 13), newest first, [`CLOSING_PAGES_PER_RUN`] pages a run.
///
/// It reads back no further than a delivery can stay open: the retry schedule's whole length
/// plus a day (by default 27 h 40 min + 24 h). A delivery older than that which is still open (a
/// receiver's long `Retry-After`) ends the same way at its own next attempt, which finds the
/// subscription disabled.
#[derive(derive_more::Debug)]
pub struct DeliveryCloser {
    #[debug(skip)]
    store: Arc<dyn Store>,
    open_window: chrono::Duration,
}

impl DeliveryCloser {
    /// The closer over `store`, for deliveries retried on `schedule`.
    pub fn new(store: Arc<dyn Store>, schedule: &RetrySchedule) -> Arc<Self> {
        let retries: std::time::Duration = schedule.as_slice().iter().sum();
        let open_window = chrono::Duration::from_std(retries).unwrap_or(chrono::Duration::zero())
            + chrono::Duration::days(1);
        Arc::new(Self { store, open_window })
    }
}

#[async_trait]
impl DueJob for DeliveryCloser {
    fn kind(&self) -> DueKind {
        DueKind::CloseDeliveries
    }

    async fn run(&self, claimed: &Claimed) -> Result<Ran, DomainError> {
        let subject: ClosingSubject = claimed.subject()?;
        if self
            .store
            .get_webhook(subject.account_id, subject.subscription_id)
            .await?
            .is_none()
        {
            // Deleted: its deliveries are dropped with it.
            return claimed.drop_item().await;
        }
        let oldest = subject.disabled_at - self.open_window;
        let mut after = subject.after.clone();
        for _ in 0..CLOSING_PAGES_PER_RUN {
            let page = match &after {
                Some(id) => Page::after(CLOSING_PAGE, Position::new(id.clone()), false),
                None => Page::first(CLOSING_PAGE, false),
            };
            let listed = self
                .store
                .list_deliveries(subject.subscription_id, &page)
                .await?;
            for delivery in &listed.items {
                if delivery.created_at < oldest {
                    return claimed.settle("closed", claimed.done()).await;
                }
                let open = matches!(
                    delivery.status,
                    DeliveryStatus::Pending | DeliveryStatus::Retrying
                );
                if !open || delivery.created_at > subject.disabled_at {
                    continue;
                }
                let mut ended = delivery.clone();
                ended.status = DeliveryStatus::Failed;
                ended.last_error = Some(SUBSCRIPTION_DISABLED.into());
                match self
                    .store
                    .record_delivery(&ended, delivery.attempts, None, &DueChanges::none())
                    .await
                {
                    // An attempt recorded meanwhile: the delivery's own item ends it, finding
                    // the subscription disabled at its next run.
                    Ok(()) | Err(StoreError::Conflict) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            match listed.next {
                Some(position) => after = Some(position.as_str().to_string()),
                None => return claimed.settle("closed", claimed.done()).await,
            }
        }
        // More to read: the next run goes on from here.
        let rest = ClosingSubject { after, ..subject };
        let subject = serde_json::to_value(&rest).map_err(DomainError::internal)?;
        claimed
            .settle("closing", claimed.again_from(claimed.claimed_at, subject))
            .await
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
