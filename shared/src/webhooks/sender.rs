//! Delivering events (BEHAVIOR 13): the job of `webhook_delivery` due items. Each attempt posts
//! the delivery's payload, signed, through the outbound guard, and stores the outcome with the
//! item's settlement (and the subscription's change, when the attempt changes it) in one write.

use super::events::DeliverySubject;
use super::lifecycle::{fail_open_deliveries, SUBSCRIPTION_DISABLED};
use super::retry::RetrySchedule;
use super::secrets::open_secrets;
use super::signing::signature_header;
use crate::clock::Clock;
use crate::due::{Claimed, DueJob, Ran};
use crate::error::DomainError;
use crate::model::due::{DueChanges, DueKind, Settlement};
use crate::model::webhook::{DeliveryStatus, DisabledReason, WebhookDelivery, WebhookSubscription};
use crate::outbound::{OutboundClient, OutboundError};
use crate::secrets::Sealer;
use crate::store::{Store, StoreError};
use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The longest a delivery attempt may take (BEHAVIOR 13): a 2xx within it is delivered.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(15);

/// Bytes of a receiver's answer read at most (and kept nowhere but in `last_error`'s detail).
pub const MAX_ANSWER_BYTES: usize = 1024;

/// How long a subscription's deliveries may all fail before it is disabled (`failing`).
pub const FAILING_FOR: chrono::Duration = chrono::Duration::days(5);

/// The sender of one instance: the store, the clock, the guarded HTTP client, the sealer of the
/// signing secrets and the retry schedule.
#[derive(derive_more::Debug)]
pub struct WebhookSender {
    #[debug(skip)]
    store: Arc<dyn Store>,
    #[debug(skip)]
    clock: Arc<dyn Clock>,
    #[debug(skip)]
    http: OutboundClient,
    #[debug(skip)]
    sealer: Arc<dyn Sealer>,
    schedule: RetrySchedule,
}

/// What one attempt got.
enum Answer {
    /// A 2xx.
    Delivered(u16),
    /// 410 Gone: the subscription is disabled at once.
    Gone,
    /// Anything else: the status when there was one, the error, the receiver's `Retry-After`.
    Failed(Option<u16>, String, Option<Duration>),
}

impl WebhookSender {
    /// A sender posting with `http` (the outbound guard: 15 s timeout, 1 KiB of answer read).
    pub fn new(
        store: Arc<dyn Store>, clock: Arc<dyn Clock>, http: OutboundClient,
        sealer: Arc<dyn Sealer>, schedule: RetrySchedule,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            clock,
            http,
            sealer,
            schedule,
        })
    }

    /// Posts `delivery` to `subscription` once, signed with its secrets.
    async fn post(&self, subscription: &WebhookSubscription, delivery: &WebhookDelivery) -> Answer {
        let now = self.clock.now();
        let secrets = match open_secrets(self.sealer.as_ref(), subscription, now).await {
            Ok(secrets) => secrets,
            Err(error) => return Answer::Failed(None, error, None),
        };
        let timestamp = now.timestamp();
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let named = [
            ("webhook-id", delivery.id.clone()),
            ("webhook-timestamp", timestamp.to_string()),
            (
                "webhook-signature",
                signature_header(&secrets, &delivery.id, timestamp, &delivery.payload),
            ),
        ];
        for (name, value) in named {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(HeaderName::from_static(name), value);
            }
        }
        let sent = self
            .http
            .send(
                reqwest::Method::POST,
                &subscription.url,
                headers,
                delivery.payload.clone().into_bytes(),
            )
            .await;
        let answer = match sent {
            Ok(answer) => answer,
            Err(OutboundError::TimedOut) => {
                return Answer::Failed(None, "Request timed out".into(), None)
            }
            Err(OutboundError::Refused(why)) => {
                return Answer::Failed(None, format!("Request refused: url {why}"), None)
            }
            Err(OutboundError::Failed(error)) => {
                return Answer::Failed(
                    None,
                    format!(
                        "Request failed: {}",
                        crate::error::ErrorChain(&error).without_urls()
                    ),
                    None,
                )
            }
        };
        let status = answer.status().as_u16();
        if answer.status().is_success() {
            return Answer::Delivered(status);
        }
        if status == 410 {
            return Answer::Gone;
        }
        let retry_after = matches!(status, 429 | 503)
            .then(|| answer.headers().get(RETRY_AFTER).cloned())
            .flatten()
            .and_then(|v| v.to_str().ok().map(str::to_string))
            .and_then(|v| crate::crm::hubspot::parse_retry_after(&v, SystemTime::now()));
        let body = answer.body().await.unwrap_or_default();
        let detail: String = String::from_utf8_lossy(&body).chars().take(200).collect();
        let error = if detail.trim().is_empty() {
            format!("Receiver answered {status}")
        } else {
            format!("Receiver answered {status}: {detail}")
        };
        Answer::Failed(Some(status), error, retry_after)
    }

    /// Ends `delivery` without an attempt (its subscription was disabled meanwhile).
    async fn end_disabled(
        &self, claimed: &Claimed, mut delivery: WebhookDelivery,
    ) -> Result<Ran, DomainError> {
        let expected = delivery.attempts;
        delivery.status = DeliveryStatus::Failed;
        delivery.last_error = Some(SUBSCRIPTION_DISABLED.into());
        self.store_outcome(&delivery, expected, None, claimed.done(), "disabled")
            .await
    }

    /// Stores the attempt's outcome; a delivery changed meanwhile ends the item.
    async fn store_outcome(
        &self, delivery: &WebhookDelivery, expected_attempts: u32,
        subscription: Option<(&WebhookSubscription, u64)>, settlement: Settlement,
        label: &'static str,
    ) -> Result<Ran, DomainError> {
        let changes = DueChanges::settling(settlement.clone());
        match self
            .store
            .record_delivery(delivery, expected_attempts, subscription, &changes)
            .await
        {
            Ok(()) => {
                tracing::info!(
                    delivery_id = %delivery.id,
                    subscription_id = %delivery.subscription_id,
                    status = label,
                    attempts = delivery.attempts,
                    status_code = delivery.last_status_code,
                    "webhook delivery"
                );
                Ok(Ran::settled(label, &settlement))
            }
            Err(StoreError::Conflict) => drop_item(self.store.as_ref(), settlement).await,
            Err(StoreError::LeaseLost) => Ok(Ran::nothing("lease_lost")),
            Err(e) => Err(e.into()),
        }
    }
}

/// Ends an item whose delivery or subscription is gone or moved on, without an attempt.
async fn drop_item(store: &dyn Store, settlement: Settlement) -> Result<Ran, DomainError> {
    let done = Settlement {
        next: None,
        ..settlement
    };
    match store.settle_due(&done).await {
        Ok(()) => Ok(Ran::settled("dropped", &done)),
        Err(StoreError::LeaseLost) => Ok(Ran::nothing("lease_lost")),
        Err(e) => Err(e.into()),
    }
}

#[async_trait]
impl DueJob for WebhookSender {
    fn kind(&self) -> DueKind {
        DueKind::WebhookDelivery
    }

    async fn run(&self, claimed: &Claimed) -> Result<Ran, DomainError> {
        let subject: DeliverySubject = claimed.subject()?;
        let delivery = self
            .store
            .get_delivery(subject.subscription_id, &subject.delivery_id)
            .await?;
        let subscription = self
            .store
            .get_webhook(subject.account_id, subject.subscription_id)
            .await?;
        let (Some(delivery), Some(subscription)) = (delivery, subscription) else {
            // The subscription was deleted (its deliveries are dropped), or the delivery expired.
            return drop_item(self.store.as_ref(), claimed.done()).await;
        };
        let open = matches!(
            delivery.status,
            DeliveryStatus::Pending | DeliveryStatus::Retrying
        );
        if !open && !subject.manual {
            return drop_item(self.store.as_ref(), claimed.done()).await;
        }
        if !subscription.enabled {
            return self.end_disabled(claimed, delivery).await;
        }
        let now = self.clock.now();
        let expected = delivery.attempts;
        let mut next = delivery.clone();
        next.attempts += 1;
        let mut changed = subscription.clone();
        let (settlement, label) = match self.post(&subscription, &delivery).await {
            Answer::Delivered(status) => {
                next.status = DeliveryStatus::Delivered;
                next.last_status_code = Some(status);
                next.last_error = None;
                next.delivered_at = Some(now);
                changed.failing_since = None;
                (claimed.done(), "delivered")
            }
            Answer::Gone => {
                next.status = DeliveryStatus::Failed;
                next.last_status_code = Some(410);
                next.last_error = Some("Receiver answered 410: subscription disabled".into());
                changed.enabled = false;
                changed.disabled_reason = Some(DisabledReason::Gone);
                (claimed.done(), "gone")
            }
            Answer::Failed(status, error, retry_after) => {
                next.last_status_code = status;
                next.last_error = Some(error);
                let since = *changed.failing_since.get_or_insert(now);
                let failing_too_long = now - since >= FAILING_FOR;
                if failing_too_long {
                    changed.enabled = false;
                    changed.disabled_reason = Some(DisabledReason::Failing);
                }
                let delay = (!subject.manual && !failing_too_long)
                    .then(|| self.schedule.after_attempt(next.attempts))
                    .flatten();
                match delay {
                    Some(delay) => {
                        let delay = delay.max(retry_after.unwrap_or(Duration::ZERO));
                        next.status = DeliveryStatus::Retrying;
                        let due = now
                            + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::zero());
                        (claimed.again(due), "retrying")
                    }
                    None => {
                        // A manual attempt leaves a retrying delivery to its own schedule.
                        next.status =
                            if subject.manual && delivery.status == DeliveryStatus::Retrying {
                                DeliveryStatus::Retrying
                            } else {
                                DeliveryStatus::Failed
                            };
                        (claimed.done(), "failed")
                    }
                }
            }
        };
        changed.updated_at = if changed == subscription {
            changed.updated_at
        } else {
            now
        };
        let subscription_change = (changed != subscription).then(|| {
            changed.version += 1;
            changed.clone()
        });
        let ran = self
            .store_outcome(
                &next,
                expected,
                subscription_change
                    .as_ref()
                    .map(|s| (s, subscription.version)),
                settlement,
                label,
            )
            .await?;
        if subscription_change.is_some_and(|s| !s.enabled) {
            fail_open_deliveries(self.store.as_ref(), &changed).await;
        }
        Ok(ran)
    }
}
