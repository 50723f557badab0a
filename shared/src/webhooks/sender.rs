//! Delivering events (BEHAVIOR 13): the job of `webhook_delivery` due items. Each attempt posts
//! the delivery's payload, signed, through the outbound guard, and stores the outcome with the
//! item's settlement (and the subscription's change, when the attempt changes it) in one write.

use super::events::DeliverySubject;
use super::lifecycle::{closing_item, SUBSCRIPTION_DISABLED};
use super::retry::RetrySchedule;
use super::secrets::open_secrets;
use super::signing::{signature_header, WebhookSecret};
use crate::clock::Clock;
use crate::due::{Claimed, Commit, DueJob, Ran};
use crate::error::DomainError;
use crate::model::due::{DueChanges, DueId, DueKind, Settlement};
use crate::model::webhook::{
    DeliveryStatus, HealthChange, SubscriptionHealth, WebhookDelivery, WebhookSubscription,
};
use crate::outbound::OutboundClient;
use crate::secrets::cache::CachingSealer;
use crate::secrets::Sealer;
use crate::store::DeliveryPorts;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The longest a delivery attempt may take (BEHAVIOR 13): a 2xx within it is delivered.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(15);

/// Bytes of a receiver's answer read at most (written to the operator's log only, never to
/// `last_error`).
pub const MAX_ANSWER_BYTES: usize = 1024;

/// How long a subscription's deliveries may all fail before it is disabled (`failing`).
pub const FAILING_FOR: chrono::Duration = chrono::Duration::days(5);

/// The sender of one instance: the store, the clock, the guarded HTTP client, the sealer of the
/// signing secrets and the retry schedule.
#[derive(derive_more::Debug)]
pub struct WebhookSender {
    #[debug(skip)]
    store: Arc<dyn DeliveryPorts>,
    #[debug(skip)]
    clock: Arc<dyn Clock>,
    #[debug(skip)]
    http: OutboundClient,
    #[debug(skip)]
    sealer: Arc<dyn Sealer>,
    schedule: RetrySchedule,
}

/// What one delivery attempt got from the receiver.
enum AttemptOutcome {
    /// A 2xx.
    Delivered(u16),
    /// 410 Gone: the subscription is disabled at once.
    Gone,
    /// Anything else: the status when there was one, the error, the receiver's `Retry-After`.
    Failed(Option<u16>, String, Option<Duration>),
}

impl WebhookSender {
    /// A sender posting with `http` (the outbound guard: 15 s timeout, 1 KiB of answer read),
    /// opening signing secrets through `sealer` with what it opened kept for
    /// [`CachingSealer::TTL`] (so retries and bursts of one subscription open each secret once).
    pub fn new(
        store: Arc<dyn DeliveryPorts>, clock: Arc<dyn Clock>, http: OutboundClient,
        sealer: Arc<dyn Sealer>, schedule: RetrySchedule,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            clock,
            http,
            sealer: Arc::new(CachingSealer::new(sealer, CachingSealer::TTL)),
            schedule,
        })
    }

    /// Posts `delivery` to `subscription` once, signed with `secrets`.
    async fn post(
        &self, subscription: &WebhookSubscription, delivery: &WebhookDelivery,
        secrets: &[WebhookSecret],
    ) -> AttemptOutcome {
        let timestamp = self.clock.now().timestamp();
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let named = [
            ("webhook-id", delivery.id.clone()),
            ("webhook-timestamp", timestamp.to_string()),
            (
                "webhook-signature",
                signature_header(secrets, &delivery.id, timestamp, &delivery.payload),
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
            Err(error) => {
                // The account sees the class; the operator's log has the detail (BEHAVIOR 13).
                tracing::info!(
                    subscription_id = %subscription.id,
                    delivery_id = %delivery.id,
                    error = %crate::error::ErrorChain(&error).without_urls(),
                    "webhook request failed"
                );
                return AttemptOutcome::Failed(None, error.class(), None);
            }
        };
        let status = answer.status().as_u16();
        if answer.status().is_success() {
            return AttemptOutcome::Delivered(status);
        }
        if status == 410 {
            return AttemptOutcome::Gone;
        }
        let retry_after = matches!(status, 429 | 503)
            .then(|| answer.headers().get(RETRY_AFTER).cloned())
            .flatten()
            .and_then(|v| v.to_str().ok().map(str::to_string))
            .and_then(|v| crate::crm::reading::parse_retry_after(&v, SystemTime::now()));
        let body = answer.body().await.unwrap_or_default();
        let detail: String = String::from_utf8_lossy(&body).chars().take(200).collect();
        tracing::info!(
            subscription_id = %subscription.id,
            delivery_id = %delivery.id,
            status,
            answer = ?detail,
            "webhook receiver refused the delivery"
        );
        let error = format!("HTTP {status}");
        AttemptOutcome::Failed(Some(status), error, retry_after)
    }

    /// The delivery and its subscription as stored now (`None` when either is gone).
    async fn read(
        &self, subject: &DeliverySubject,
    ) -> Result<Option<(WebhookDelivery, WebhookSubscription)>, DomainError> {
        let (delivery, subscription) = tokio::try_join!(
            self.store
                .get_delivery(subject.subscription_id, &subject.delivery_id),
            self.store
                .get_webhook(subject.account_id, subject.subscription_id),
        )?;
        Ok(delivery.zip(subscription))
    }

    /// Whether the delivery's automatic schedule still holds an item (a manual attempt that
    /// fails leaves such a delivery `retrying`: its retries go on).
    async fn scheduled(&self, delivery_id: &str) -> Result<bool, DomainError> {
        let id = DueId::new(DueKind::WebhookDelivery, delivery_id);
        Ok(self.store.get_due(&id).await?.is_some())
    }

    /// Ends `delivery` without an attempt (its subscription was disabled meanwhile), through
    /// the mechanism's commit.
    async fn end_disabled(
        &self, claimed: &Claimed, subject: &DeliverySubject, first: Read,
    ) -> Result<Ran, DomainError> {
        let first = &first;
        claimed
            .commit(|round| async move {
                let Some((delivery, _)) = self.fresh(round, subject, first).await? else {
                    return Ok(Commit::SubjectGone);
                };
                let mut ended = delivery.clone();
                if matches!(
                    delivery.status,
                    DeliveryStatus::Pending | DeliveryStatus::Retrying
                ) {
                    ended.status = DeliveryStatus::Failed;
                    ended.last_error = Some(SUBSCRIPTION_DISABLED.into());
                }
                let settlement = claimed.done();
                let changes = DueChanges::settling(settlement.clone());
                self.store
                    .record_delivery(&ended, delivery.attempts, None, &changes)
                    .await?;
                log(&ended, "disabled");
                Ok(Commit::stored("disabled", settlement))
            })
            .await
    }

    /// Round 0 of a commit uses what the run read before its side effect; later rounds read
    /// again.
    async fn fresh(
        &self, round: u32, subject: &DeliverySubject, first: &Read,
    ) -> Result<Read, DomainError> {
        match round {
            0 => Ok(first.clone()),
            _ => self.read(subject).await,
        }
    }

    /// Stores what `answer` did, on the delivery and subscription as they stand at the commit
    /// (round 0: as read before the request; a conflict reads them again): the attempt is
    /// always counted (every request sent is one of `attempts`); a delivery that ended
    /// meanwhile (delivered by another attempt, failed by a disable) keeps its end; otherwise
    /// the answer decides (BEHAVIOR 13), and the subscription's health moves with it.
    async fn record(
        &self, claimed: &Claimed, subject: &DeliverySubject, answer: AttemptOutcome, first: Read,
    ) -> Result<Ran, DomainError> {
        let now = self.clock.now();
        let (answer, first) = (&answer, &first);
        let ran = claimed
            .commit(|round| async move {
                let Some((delivery, subscription)) = self.fresh(round, subject, first).await?
                else {
                    return Ok(Commit::SubjectGone);
                };
                let decided = self
                    .decide(claimed, subject, answer, &delivery, &subscription, now)
                    .await?;
                // Only a transition writes the subscription (`HealthChange::changes`).
                let health = decided
                    .health
                    .filter(|change| change.changes(&subscription));
                let health = health.map(|change| SubscriptionHealth {
                    account_id: subscription.account_id,
                    subscription_id: subscription.id,
                    change,
                });
                let mut changes = DueChanges::settling(decided.settlement.clone());
                if health
                    .as_ref()
                    .is_some_and(|h| h.change.disables().is_some())
                {
                    let schedule = |id, subject, at| claimed.schedule(id, subject, at);
                    changes.put.push(closing_item(
                        &subscription,
                        subscription.version + 1,
                        now,
                        &schedule,
                    ));
                }
                self.store
                    .record_delivery(
                        &decided.delivery,
                        delivery.attempts,
                        health.as_ref(),
                        &changes,
                    )
                    .await?;
                log(&decided.delivery, decided.label);
                Ok(Commit::Stored {
                    label: decided.label,
                    settlement: decided.settlement,
                    spawned: changes.put,
                })
            })
            .await?;
        Ok(ran)
    }

    /// The delivery's next state, the item's settlement and the subscription's health change
    /// after `answer`, from `delivery` and `subscription` as they stand now.
    async fn decide(
        &self, claimed: &Claimed, subject: &DeliverySubject, answer: &AttemptOutcome,
        delivery: &WebhookDelivery, subscription: &WebhookSubscription, now: DateTime<Utc>,
    ) -> Result<Decided, DomainError> {
        let mut next = delivery.clone();
        next.attempts += 1;
        let ended = matches!(
            delivery.status,
            DeliveryStatus::Delivered | DeliveryStatus::Failed
        );
        let decided = |next, label, health| Decided {
            delivery: next,
            settlement: claimed.done(),
            label,
            health,
        };
        match answer {
            AttemptOutcome::Delivered(status) => {
                next.status = DeliveryStatus::Delivered;
                next.last_status_code = Some(*status);
                next.last_error = None;
                next.delivered_at = Some(now);
                Ok(decided(next, "delivered", Some(HealthChange::Recovered)))
            }
            AttemptOutcome::Gone => {
                if delivery.status != DeliveryStatus::Delivered {
                    next.status = DeliveryStatus::Failed;
                }
                next.last_status_code = Some(410);
                next.last_error = Some("HTTP 410".into());
                let health = subscription
                    .enabled
                    .then_some(HealthChange::DisableGone { at: now });
                Ok(decided(next, "gone", health))
            }
            AttemptOutcome::Failed(status, error, retry_after) => {
                if delivery.status != DeliveryStatus::Delivered {
                    next.last_status_code = *status;
                    next.last_error = Some(error.clone());
                }
                let failing_too_long = subscription
                    .failing_since
                    .is_some_and(|since| now - since >= FAILING_FOR);
                let health = match subscription.failing_since {
                    Some(since) if failing_too_long && subscription.enabled => {
                        HealthChange::DisableFailing { since, at: now }
                    }
                    _ => HealthChange::Failing { at: now },
                };
                let disabling = matches!(health, HealthChange::DisableFailing { .. });
                if ended {
                    // Delivered or failed meanwhile: the end stands; the attempt is counted.
                    return Ok(decided(next, "failed", Some(health)));
                }
                let delay = (!subject.manual && !disabling)
                    .then(|| self.schedule.after_attempt(next.attempts))
                    .flatten();
                if let Some(delay) = delay {
                    next.status = DeliveryStatus::Retrying;
                    let due = retry_due(now, delay, *retry_after);
                    return Ok(Decided {
                        delivery: next,
                        settlement: claimed.again(due),
                        label: "retrying",
                        health: Some(health),
                    });
                }
                // A manual attempt leaves an open delivery to its own schedule while that
                // still holds an item; anything else that fails without a delay left is over.
                let retries_left =
                    subject.manual && !disabling && self.scheduled(&delivery.id).await?;
                next.status = if retries_left {
                    DeliveryStatus::Retrying
                } else {
                    DeliveryStatus::Failed
                };
                Ok(decided(next, "failed", Some(health)))
            }
        }
    }
}

/// When a failed attempt is tried again: `delay` (the schedule's) after `now`, or the
/// receiver's longer `Retry-After` (already clamped to a day by its parser). Checked: whatever
/// the receiver answered and whatever the clock says, the sum cannot stop the process; out of
/// chrono's range it is `now` (`docs/decisions.md`, "Panics").
fn retry_due(now: DateTime<Utc>, delay: Duration, retry_after: Option<Duration>) -> DateTime<Utc> {
    let delay = delay.max(retry_after.unwrap_or(Duration::ZERO));
    chrono::Duration::from_std(delay)
        .ok()
        .and_then(|delay| now.checked_add_signed(delay))
        .unwrap_or(now)
}

/// A delivery and its subscription, as read.
type Read = Option<(WebhookDelivery, WebhookSubscription)>;

/// What an attempt's answer decides ([`WebhookSender::decide`]).
struct Decided {
    delivery: WebhookDelivery,
    settlement: Settlement,
    label: &'static str,
    health: Option<HealthChange>,
}

fn log(delivery: &WebhookDelivery, label: &str) {
    tracing::info!(
        delivery_id = %delivery.id,
        subscription_id = %delivery.subscription_id,
        status = label,
        attempts = delivery.attempts,
        status_code = delivery.last_status_code,
        "webhook delivery"
    );
}

#[async_trait]
impl DueJob for WebhookSender {
    fn kind(&self) -> DueKind {
        DueKind::WebhookDelivery
    }

    async fn run(&self, claimed: &Claimed) -> Result<Ran, DomainError> {
        let subject: DeliverySubject = claimed.subject()?;
        let read = self.read(&subject).await?;
        let Some((delivery, subscription)) = &read else {
            // The subscription was deleted (its deliveries are dropped), or the delivery expired.
            return claimed.drop_item().await;
        };
        let open = matches!(
            delivery.status,
            DeliveryStatus::Pending | DeliveryStatus::Retrying
        );
        if !open && !subject.manual {
            return claimed.drop_item().await;
        }
        if !subscription.enabled {
            return self.end_disabled(claimed, &subject, read.clone()).await;
        }
        // Opening the secrets is our part: a failure (KMS) is not the receiver's, so no request
        // is sent and no attempt counted; the item stays due (the worker releases it).
        let secrets = open_secrets(self.sealer.as_ref(), subscription, self.clock.now())
            .await
            .map_err(DomainError::internal)?;
        let answer = self.post(subscription, delivery, &secrets).await;
        self.record(claimed, &subject, answer, read.clone()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever a receiver puts in `Retry-After` (any text, huge numbers,
        /// dates before the epoch or in year 9999) and whatever the clock says (up to chrono's
        /// last instant), the next attempt's time is computed without a panic, never before
        /// `now`, and at most a day past the schedule's delay.
        #[test]
        fn any_retry_after_and_any_clock_give_a_due_time(
            header in prop_oneof![
                any::<u64>().prop_map(|n| n.to_string()),
                "[0-9]{1,40}",
                Just("Fri, 31 Dec 9999 23:59:59 GMT".to_owned()),
                Just("Thu, 01 Jan 1970 00:00:00 GMT".to_owned()),
                Just("-5".to_owned()),
                ".{0,40}",
            ],
            now_ms in prop_oneof![
                Just(DateTime::<Utc>::MAX_UTC.timestamp_millis()),
                Just(DateTime::<Utc>::MAX_UTC.timestamp_millis() - 1_000),
                Just(DateTime::<Utc>::MIN_UTC.timestamp_millis()),
                -8_000_000_000_000_000i64..8_000_000_000_000_000i64,
            ],
            delay_s in 0u64..=86_400,
        ) {
            let now = DateTime::from_timestamp_millis(now_ms).unwrap_or(DateTime::<Utc>::MAX_UTC);
            let retry_after =
                crate::crm::reading::parse_retry_after(&header, SystemTime::now());
            let due = retry_due(now, Duration::from_secs(delay_s), retry_after);
            prop_assert!(due >= now);
            prop_assert!(due - now <= chrono::Duration::seconds(86_400 * 2));
        }
    }
}
