//! What happens to deliveries when their subscription is disabled, and manual retries.

use super::events::DeliverySubject;
use super::retry::RetrySchedule;
use crate::due::{Claimed, Commit, DueJob, Ran, RoundError};
use crate::error::DomainError;
use crate::model::due::{DueChanges, DueId, DueItem, DueKind};
use crate::model::webhook::{DeliveryStatus, WebhookDelivery, WebhookSubscription};
use crate::page::{PageRequest, Position};
use crate::store::DeliveryPorts;
use crate::store::StoreError;
use crate::types::ids::{AccountId, WebhookId};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// `last_error` of a delivery ended because its subscription was disabled (BEHAVIOR 13).
pub const SUBSCRIPTION_DISABLED: &str = "Subscription disabled";

/// Deliveries a closing run reads: one page a run, so a run is short whoever makes it (the
/// `PATCH` that disables runs the first page itself, [`crate::webhooks::WebhookService::patch`])
/// and a busy subscription's log is worked through in as many runs as it needs.
const CLOSING_PAGE: usize = 100;

/// Open deliveries of a page ended at once.
const CLOSING_CONCURRENCY: usize = 16;

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

/// The id and subject of the item, stored in the write that disables `subscription` (to
/// `version`, at `at`), that ends its open deliveries ([`DeliveryCloser`]): the disabling write (a
/// `PATCH`, a 410, five days of failures) never waits on the size of the delivery log. One item
/// per disable: its id names the subscription and the version the disable makes.
pub fn closing(
    subscription: &WebhookSubscription, version: u64, at: DateTime<Utc>,
) -> (DueId, serde_json::Value) {
    let subject = ClosingSubject {
        account_id: subscription.account_id,
        subscription_id: subscription.id,
        disabled_at: at,
        after: None,
    };
    (
        DueId::new(
            DueKind::CloseDeliveries,
            format!("{}:{version}", subscription.id),
        ),
        serde_json::to_value(&subject).unwrap_or_default(),
    )
}

/// [`closing`]'s item, due at `at`, made by `schedule`.
pub fn closing_item(
    subscription: &WebhookSubscription, version: u64, at: DateTime<Utc>,
    schedule: &dyn Fn(DueId, serde_json::Value, DateTime<Utc>) -> DueItem,
) -> DueItem {
    let (id, subject) = closing(subscription, version, at);
    schedule(id, subject, at)
}

/// The job of `close_deliveries` items: ends every delivery of a disabled subscription that was
/// open (pending or retrying) when it was disabled, `failed` with `Subscription disabled`
/// (BEHAVIOR 13), newest first, one page of [`CLOSING_PAGE`] a run.
///
/// It reads back no further than a delivery can stay open: the retry schedule's whole length
/// plus a day (by default 27 h 40 min + 24 h). A delivery older than that which is still open (a
/// receiver's long `Retry-After`) ends the same way at its own next attempt, which finds the
/// subscription disabled.
#[derive(derive_more::Debug)]
pub struct DeliveryCloser {
    #[debug(skip)]
    store: Arc<dyn DeliveryPorts>,
    open_window: chrono::Duration,
}

impl DeliveryCloser {
    /// The closer over `store`, for deliveries retried on `schedule`.
    pub fn new(store: Arc<dyn DeliveryPorts>, schedule: &RetrySchedule) -> Arc<Self> {
        let retries: std::time::Duration = schedule.as_slice().iter().sum();
        let open_window = chrono::Duration::from_std(retries).unwrap_or(chrono::Duration::zero())
            + chrono::Duration::days(1);
        Arc::new(Self { store, open_window })
    }

    /// Ends `delivery` `failed` with `Subscription disabled`, conditional on the attempts it was
    /// read with.
    ///
    /// Errors: [`StoreError::Conflict`] when an attempt was recorded meanwhile (the mechanism
    /// runs the round again on a fresh read, [`Claimed::commit`]); any other store failure.
    async fn end(&self, delivery: &WebhookDelivery) -> Result<(), StoreError> {
        let mut ended = delivery.clone();
        ended.status = DeliveryStatus::Failed;
        ended.last_error = Some(SUBSCRIPTION_DISABLED.into());
        self.store
            .record_delivery(&ended, delivery.attempts, None, &DueChanges::none())
            .await
    }

    /// One commit round of a run: reads the subscription and the page of its deliveries after
    /// `subject`'s position afresh, ends the open ones it disabled and settles the item (the
    /// next page due at once, or done). A delivery that moved meanwhile fails the round with
    /// [`StoreError::Conflict`]: the conflict policy is the mechanism's ([`Claimed::commit`]), and
    /// the deliveries already ended are no longer open at the next round.
    async fn close_page(
        &self, claimed: &Claimed, subject: &ClosingSubject,
    ) -> Result<Commit, RoundError> {
        if self
            .store
            .get_webhook(subject.account_id, subject.subscription_id)
            .await?
            .is_none()
        {
            // Deleted: its deliveries are dropped with it.
            return Ok(Commit::SubjectGone);
        }
        let page = match &subject.after {
            Some(id) => PageRequest::after(CLOSING_PAGE, Position::new(id.clone()), false),
            None => PageRequest::first(CLOSING_PAGE, false),
        };
        let listed = self
            .store
            .list_deliveries(subject.subscription_id, &page)
            .await?;
        let oldest = subject.disabled_at - self.open_window;
        let past_window = listed.items.iter().any(|d| d.created_at < oldest);
        let open: Vec<WebhookDelivery> = listed
            .items
            .iter()
            .filter(|d| {
                d.created_at >= oldest
                    && d.created_at <= subject.disabled_at
                    && matches!(d.status, DeliveryStatus::Pending | DeliveryStatus::Retrying)
            })
            .cloned()
            .collect();
        let ends = open.into_iter().map(|d| async move { self.end(&d).await });
        let ended: Vec<Result<(), StoreError>> = futures_util::stream::iter(ends)
            .buffer_unordered(CLOSING_CONCURRENCY)
            .collect()
            .await;
        for result in ended {
            result?;
        }
        let (label, settlement) = match listed.next {
            Some(position) if !past_window => {
                // More to read: the next run goes on from here, at once.
                let rest = ClosingSubject {
                    after: Some(position.as_str().to_string()),
                    ..subject.clone()
                };
                let rest = serde_json::to_value(&rest).map_err(DomainError::internal)?;
                ("closing", claimed.again_from(claimed.claimed_at, rest))
            }
            _ => ("closed", claimed.done()),
        };
        self.store.settle_due(&settlement).await?;
        Ok(Commit::stored(label, settlement))
    }
}

#[async_trait]
impl DueJob for DeliveryCloser {
    fn kind(&self) -> DueKind {
        DueKind::CloseDeliveries
    }

    async fn run(&self, claimed: &Claimed) -> Result<Ran, DomainError> {
        let subject: ClosingSubject = claimed.subject()?;
        let subject = &subject;
        claimed
            .commit(|_| async move { self.close_page(claimed, subject).await })
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
