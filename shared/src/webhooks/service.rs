//! The subscription routes (BEHAVIOR 13): parse, check, store, answer.

use super::events::DeliverySubject;
use super::lifecycle::{closing, manual_retry_item};
use super::secrets::secret_context;
use super::signing::WebhookSecret;
use super::view::{DeliveryView, WebhookView};
use crate::audit::diff::WEBHOOK;
use crate::audit::Actor;
use crate::clock::Clock;
use crate::due::DueWorker;
use crate::error::DomainError;
use crate::model::audit::{AuditAction, AuditEvent, AuditTarget, TargetType};
use crate::model::due::DueChanges;
use crate::model::webhook::{
    DeliveryStatus, EventType, SigningSecret, WebhookDelivery, WebhookSubscription,
};
use crate::outbound::{OutboundPolicy, OutboundUrl};
use crate::page::cursor::{CursorKey, ListRequest};
use crate::page::ListView;
use crate::secrets::Sealer;
use crate::store::retry::Kept;
use crate::store::{
    delivery_position, size, webhook_position, write_rounds, Backoff, StoreError, Turns,
    WebhookStore,
};
use crate::types::ids::{AccountId, DeliveryId, WebhookId};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Subscriptions an account may have (BEHAVIOR 13).
pub const MAX_SUBSCRIPTIONS: u64 = 20;

/// The 400 of a subscription whose stored item would pass the size rule (BEHAVIOR 12; its
/// fields' own limits keep it under 20 KB, so this guards their future changes).
pub const SUBSCRIPTION_TOO_LARGE: &str = "Webhook subscription too large";

/// BEHAVIOR 12: `subscription`'s stored item within the size rule of every stored item
/// ([`size::check_write`]), checked before each write of it.
///
/// Errors: 400 `Webhook subscription too large`.
fn check_stored_size(subscription: &WebhookSubscription) -> Result<(), DomainError> {
    size::check_write(subscription)
        .map(|_| ())
        .map_err(|_| DomainError::bad_request(SUBSCRIPTION_TOO_LARGE))
}

/// The longest `description`, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1_000;

/// The 404 of an unknown subscription.
pub const WEBHOOK_NOT_FOUND: &str = "Webhook not found";

/// The 404 of an unknown delivery.
pub const DELIVERY_NOT_FOUND: &str = "Delivery not found";

/// How long a rotated secret keeps signing beside the new one.
pub const ROTATION_OVERLAP: chrono::Duration = chrono::Duration::hours(24);

/// The subscription operations of one instance.
pub struct WebhookService {
    store: Arc<dyn WebhookStore>,
    clock: Arc<dyn Clock>,
    sealer: Arc<dyn Sealer>,
    policy: OutboundPolicy,
    due: Arc<DueWorker>,
    /// Writes of one subscription (or delivery), and the creates and deletes of one account
    /// (its subscription count), take turns in this instance ([`Turns`]).
    turns: Turns,
}

/// The 409 of a subscription that kept changing until the retry deadline: a write that finds
/// the subscription (or delivery) changed since it read it (a delivery attempt disabling it, a
/// concurrent `PATCH` or rotation, a DynamoDB transaction conflict) reads it again and applies
/// the request again until [`crate::store::CONFLICT_DEADLINE`] ([`Backoff`]).
const WEBHOOK_KEPT_CHANGING: &str = "The webhook kept changing while the request applied; retry it";

/// The 409 of a manual retry whose delivery kept changing (attempts recorded meanwhile) until
/// the retry deadline.
const DELIVERY_KEPT_CHANGING: &str =
    "The delivery kept changing while the request applied; retry it";

/// The audit event of a subscription write (BEHAVIOR 18), from the subscription `before` to the
/// one `after` (`None`: created or deleted), over its shape without secrets ([`WEBHOOK`]).
fn webhook_event(
    actor: Actor<'_>, action: AuditAction, before: Option<&WebhookSubscription>,
    after: Option<&WebhookSubscription>, now: chrono::DateTime<chrono::Utc>,
) -> AuditEvent {
    let json =
        |s: &WebhookSubscription| serde_json::to_value(WebhookView::new(s)).unwrap_or(Value::Null);
    let (b, a) = (before.map(json), after.map(json));
    let id = before
        .or(after)
        .map(|s| s.id)
        .unwrap_or_else(|| WebhookId::from_uuid(uuid::Uuid::nil()));
    actor.event(
        action,
        AuditTarget::new(TargetType::Webhook, id),
        WEBHOOK.changes(b.as_ref(), a.as_ref()),
        now,
    )
}

/// The fields a create or a change may hold.
#[derive(Debug, Default, Clone)]
struct Changes {
    url: Option<String>,
    events: Option<Vec<EventType>>,
    description: Option<Option<String>>,
    enabled: Option<bool>,
}

fn invalid(key: &str, why: impl std::fmt::Display) -> DomainError {
    DomainError::bad_field(key, format!("Invalid value for {key}: {why}"))
}

impl WebhookService {
    /// A service over `store`, sealing secrets with `sealer`, checking URLs under `policy`,
    /// handing manual retries to `due`.
    pub fn new(
        store: Arc<dyn WebhookStore>, clock: Arc<dyn Clock>, sealer: Arc<dyn Sealer>,
        policy: OutboundPolicy, due: Arc<DueWorker>,
    ) -> Self {
        Self {
            store,
            clock,
            sealer,
            policy,
            due,
            turns: Turns::default(),
        }
    }

    /// Reads a body's keys: `url`, `events`, `description`, and `enabled` when `with_enabled`.
    ///
    /// Errors: 400 naming the key: unknown, or an invalid value.
    fn parse(&self, body: &Map<String, Value>, with_enabled: bool) -> Result<Changes, DomainError> {
        let mut changes = Changes::default();
        for (key, value) in body {
            match key.as_str() {
                "url" => {
                    let text = value
                        .as_str()
                        .ok_or_else(|| invalid("url", "expected a string"))?;
                    OutboundUrl::parse(text, self.policy).map_err(|why| invalid("url", why))?;
                    changes.url = Some(text.to_string());
                }
                "events" => {
                    let items = value.as_array().filter(|a| !a.is_empty()).ok_or_else(|| {
                        invalid("events", "expected a non-empty array of event types")
                    })?;
                    let mut events: Vec<EventType> = Vec::new();
                    for item in items {
                        let name = item.as_str().unwrap_or_default();
                        let event = name.parse::<EventType>().map_err(|_| {
                            invalid(
                                "events",
                                format!(
                                    "unknown event type {item}; expected assignment.created, dispatch.unassigned or crm_sync.failed"
                                ),
                            )
                        })?;
                        if !events.contains(&event) {
                            events.push(event);
                        }
                    }
                    changes.events = Some(events);
                }
                "description" => {
                    let description = match value {
                        Value::Null => None,
                        Value::String(s) if s.chars().count() <= MAX_DESCRIPTION_CHARS => {
                            Some(s.clone())
                        }
                        Value::String(_) => {
                            return Err(invalid(
                                "description",
                                format!("at most {MAX_DESCRIPTION_CHARS} characters"),
                            ))
                        }
                        _ => return Err(invalid("description", "expected a string or null")),
                    };
                    changes.description = Some(description);
                }
                "enabled" if with_enabled => {
                    changes.enabled = Some(
                        value
                            .as_bool()
                            .ok_or_else(|| invalid("enabled", "expected a boolean"))?,
                    );
                }
                other => {
                    return Err(DomainError::bad_field(
                        other,
                        format!("Unknown field: {other}"),
                    ))
                }
            }
        }
        Ok(changes)
    }

    /// `POST /webhooks` by `actor`: a new subscription, enabled, with a new secret (shown in
    /// this answer only), recorded as `webhook.created` in the same write (BEHAVIOR 18; the
    /// secret never).
    ///
    /// Errors: 400 for a missing or invalid `url` or `events`, an unknown key, or an account
    /// that has 20 subscriptions already.
    pub async fn create(
        &self, actor: Actor<'_>, body: &Map<String, Value>,
    ) -> Result<WebhookView, DomainError> {
        let account_id = actor.account_id;
        let changes = self.parse(body, false)?;
        let url = changes
            .url
            .ok_or_else(|| DomainError::bad_field("url", "Missing required field: url"))?;
        let events = changes
            .events
            .ok_or_else(|| DomainError::bad_field("events", "Missing required field: events"))?;
        let now = self.clock.now();
        let mut subscription = WebhookSubscription {
            id: WebhookId::new_v7(),
            account_id,
            url,
            events,
            description: changes.description.flatten(),
            enabled: true,
            disabled_reason: None,
            secrets: Vec::new(),
            failing_since: None,
            created_at: now,
            updated_at: now,
            version: 1,
        };
        let secret = WebhookSecret::generate();
        subscription.secrets = vec![self.seal(&subscription, &secret, None).await?];
        check_stored_size(&subscription)?;
        let event = webhook_event(
            actor,
            AuditAction::WebhookCreated,
            None,
            Some(&subscription),
            now,
        );
        let _turn = self.turns.take(format!("count:{account_id}")).await;
        // A round lost to a concurrent create or delete: the account's count moved.
        let (event, subscription) = (&event, &subscription);
        write_rounds(&mut Backoff::new(), (), |_, _| {
            Box::pin(async move {
                match self
                    .store
                    .create_webhook(subscription, MAX_SUBSCRIPTIONS, Some(event))
                    .await
                {
                    Ok(()) => Ok(()),
                    Err(StoreError::Rejected(_)) => Err(DomainError::bad_request(format!(
                        "An account has at most {MAX_SUBSCRIPTIONS} webhook subscriptions"
                    ))
                    .into()),
                    Err(e) => Err(e.into()),
                }
            })
        })
        .await
        .map_err(|e| e.answer_with(WEBHOOK_KEPT_CHANGING))?;
        Ok(WebhookView {
            secret: Some(secret.expose().to_string()),
            ..WebhookView::new(subscription)
        })
    }

    async fn seal(
        &self, subscription: &WebhookSubscription, secret: &WebhookSecret,
        retires_at: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<SigningSecret, DomainError> {
        let sealed = self
            .sealer
            .seal(secret.expose(), &secret_context(subscription))
            .await
            .map_err(DomainError::Internal)?;
        Ok(SigningSecret { sealed, retires_at })
    }

    /// `GET /webhooks`: the account's subscriptions, oldest first (BEHAVIOR 11 list rules).
    ///
    /// Errors: 400 naming `after` for a cursor this list did not issue.
    pub async fn list(
        &self, account_id: AccountId, request: &ListRequest, cursors: &CursorKey,
    ) -> Result<ListView<WebhookView>, DomainError> {
        let (list, page) = request.open_unfiltered(cursors, account_id, "webhooks")?;
        let listed = self.store.list_webhooks(account_id, &page).await?;
        Ok(cursors.answer(&list, &page, listed, WebhookView::new, webhook_position))
    }

    /// The subscription `id` of the account (`None`: the path id is not a UUID).
    ///
    /// Errors: 404 `Webhook not found`.
    pub async fn find(
        &self, account_id: AccountId, id: Option<WebhookId>,
    ) -> Result<WebhookSubscription, DomainError> {
        let Some(id) = id else {
            return Err(DomainError::not_found(WEBHOOK_NOT_FOUND));
        };
        self.store
            .get_webhook(account_id, id)
            .await?
            .ok_or_else(|| DomainError::not_found(WEBHOOK_NOT_FOUND))
    }

    /// `GET /webhooks/{id}`.
    ///
    /// Errors: 404 `Webhook not found`.
    pub async fn get(
        &self, account_id: AccountId, id: Option<WebhookId>,
    ) -> Result<WebhookView, DomainError> {
        Ok(WebhookView::new(&self.find(account_id, id).await?))
    }

    /// `PATCH /webhooks/{id}`: `url`, `events`, `description`, `enabled` (at least one).
    /// Enabling clears `disabled_reason` and the subscription's failing state; disabling ends
    /// the open deliveries (due work stored with the change, [`closing_item`]). A subscription
    /// that changed since it was read (a delivery disabled it, another request changed it) is
    /// read again and the change applied again until the retry deadline ([`Backoff`]).
    ///
    /// Errors: 404 `Webhook not found`; 400 for an empty body, an unknown key or an invalid
    /// value; 409 when it kept changing until the retry deadline.
    pub async fn patch(
        &self, actor: Actor<'_>, id: Option<WebhookId>, body: &Map<String, Value>,
    ) -> Result<WebhookView, DomainError> {
        let account_id = actor.account_id;
        let _turn = self.turns.take(turn_key(id)).await;
        let stored = self.find(account_id, id).await?;
        if body.is_empty() {
            return Err(DomainError::bad_request(
                "At least one of url, events, description, enabled is required",
            ));
        }
        let changes = self.parse(body, true)?;
        let changes = &changes;
        let (next, closing) = write_rounds(&mut Backoff::new(), stored, |Kept(stored, _), n| {
            Box::pin(async move {
                if n > 0 {
                    *stored = self.find(account_id, id).await?;
                }
                let mut next = stored.clone();
                if let Some(url) = changes.url.clone() {
                    next.url = url;
                }
                if let Some(events) = changes.events.clone() {
                    next.events = events;
                }
                if let Some(description) = changes.description.clone() {
                    next.description = description;
                }
                let enabling = changes.enabled == Some(true) && !stored.enabled;
                if let Some(enabled) = changes.enabled {
                    if enabling {
                        next.disabled_reason = None;
                        next.failing_since = None;
                    }
                    next.enabled = enabled;
                }
                let now = self.clock.now();
                next.updated_at = now;
                next.version += 1;
                check_stored_size(&next)?;
                let mut due = DueChanges::none();
                // Disabling: the closing of the open deliveries is stored with the change, held by
                // this process, which runs its first page before answering (a short, bounded run;
                // a log longer than a page goes on as due work).
                let closing = (stored.enabled && !next.enabled).then(|| {
                    let (id, subject) = closing(&next, next.version, now);
                    self.due.claimed_now(id, subject)
                });
                if let Some(claimed) = &closing {
                    due.put.push(claimed.item.clone());
                }
                // BEHAVIOR 18: recorded only when a value changed.
                let event = webhook_event(
                    actor,
                    AuditAction::WebhookUpdated,
                    Some(stored),
                    Some(&next),
                    now,
                );
                let event = (!event.changes.is_empty()).then_some(event);
                self.store
                    .update_webhook(&next, stored.version, enabling, &due, event.as_ref())
                    .await?;
                Ok((next, closing))
            })
        })
        .await
        .map_err(|e| e.answer_with(WEBHOOK_KEPT_CHANGING))?;
        if let Some(claimed) = &closing {
            if let Err(error) = self.due.run_claimed(claimed).await {
                // Stored and held by this process: the lease lapses and the sweeper resumes it.
                tracing::warn!(
                    due_id = %claimed.item.id,
                    error = %crate::error::ErrorChain(&error),
                    "closing the deliveries of a disabled subscription failed; the sweeper resumes it"
                );
            }
        }
        Ok(WebhookView::new(&next))
    }

    /// `DELETE /webhooks/{id}` by `actor`: gone, with its pending deliveries, recorded as
    /// `webhook.deleted` in the same write (BEHAVIOR 18). A subscription that changed since it
    /// was read is read again ([`WRITE_ROUNDS`]).
    ///
    /// Errors: 404 `Webhook not found`; 409 when it, or the account's count, kept changing until
    /// the retry deadline.
    pub async fn delete(&self, actor: Actor<'_>, id: Option<WebhookId>) -> Result<(), DomainError> {
        let account_id = actor.account_id;
        // The account's subscription count is one item every create and delete moves.
        let _turn = self.turns.take(format!("count:{account_id}")).await;
        write_rounds(&mut Backoff::new(), (), |_, _| {
            Box::pin(async move {
                let subscription = self.find(account_id, id).await?;
                let event = webhook_event(
                    actor,
                    AuditAction::WebhookDeleted,
                    Some(&subscription),
                    None,
                    self.clock.now(),
                );
                let deleted = self
                    .store
                    .delete_webhook(
                        account_id,
                        subscription.id,
                        subscription.version,
                        Some(&event),
                    )
                    .await?;
                if deleted {
                    Ok(())
                } else {
                    Err(DomainError::not_found(WEBHOOK_NOT_FOUND).into())
                }
            })
        })
        .await
        .map_err(|e| e.answer_with(WEBHOOK_KEPT_CHANGING))
    }

    /// `POST /webhooks/{id}/rotate-secret`: a new secret (in this answer only); the previous one
    /// keeps signing beside it for 24 h, and an older one retires at once (one previous secret). A subscription that changed meanwhile is read again and
    /// the rotation applied again until the retry deadline ([`Backoff`]).
    ///
    /// Errors: 404 `Webhook not found`; 409 when it kept changing until the retry deadline.
    pub async fn rotate_secret(
        &self, actor: Actor<'_>, id: Option<WebhookId>,
    ) -> Result<WebhookView, DomainError> {
        let account_id = actor.account_id;
        let _turn = self.turns.take(turn_key(id)).await;
        let stored = self.find(account_id, id).await?;
        let secret = WebhookSecret::generate();
        let fresh = self.seal(&stored, &secret, None).await?;
        let fresh = &fresh;
        let next = write_rounds(&mut Backoff::new(), stored, |Kept(stored, _), n| {
            Box::pin(async move {
                if n > 0 {
                    *stored = self.find(account_id, id).await?;
                }
                let now = self.clock.now();
                let mut next = stored.clone();
                // One previous secret only (BEHAVIOR 13): the one that signed until now keeps
                // signing beside the new one for the overlap; an older previous one retires at once,
                // so a delivery carries at most two signatures whatever the number of rotations.
                let retiring = stored
                    .secrets
                    .iter()
                    .find(|s| s.retires_at.is_none_or(|at| at > now))
                    .map(|s| SigningSecret {
                        sealed: s.sealed.clone(),
                        retires_at: Some(
                            s.retires_at
                                .unwrap_or(now + ROTATION_OVERLAP)
                                .min(now + ROTATION_OVERLAP),
                        ),
                    });
                next.secrets = std::iter::once(fresh.clone()).chain(retiring).collect();
                next.updated_at = now;
                next.version += 1;
                check_stored_size(&next)?;
                // BEHAVIOR 18: a rotation is on record, its secret never (`changes: []`).
                let target = AuditTarget::new(TargetType::Webhook, next.id);
                let event = actor.event(AuditAction::WebhookSecretRotated, target, Vec::new(), now);
                self.store
                    .update_webhook(
                        &next,
                        stored.version,
                        false,
                        &DueChanges::none(),
                        Some(&event),
                    )
                    .await?;
                Ok(next)
            })
        })
        .await
        .map_err(|e| e.answer_with(WEBHOOK_KEPT_CHANGING))?;
        Ok(WebhookView {
            secret: Some(secret.expose().to_string()),
            ..WebhookView::new(&next)
        })
    }

    /// `GET /webhooks/{id}/deliveries`: newest first, those of the last 30 days.
    ///
    /// Errors: 404 `Webhook not found`; 400 naming `after` for a cursor this list did not
    /// issue.
    pub async fn deliveries(
        &self, account_id: AccountId, id: Option<WebhookId>, request: &ListRequest,
        cursors: &CursorKey,
    ) -> Result<ListView<DeliveryView>, DomainError> {
        let subscription = self.find(account_id, id).await?;
        let name = format!("webhooks/{}/deliveries", subscription.id);
        let (list, page) = request.open_unfiltered(cursors, account_id, name)?;
        let mut listed = self.store.list_deliveries(subscription.id, &page).await?;
        let now = self.clock.now();
        listed.items.retain(|d| d.expires_at > now);
        Ok(cursors.answer(&list, &page, listed, DeliveryView::new, delivery_position))
    }

    /// `POST /webhooks/{id}/deliveries/{deliveryId}/retry`: one more attempt now, with the same
    /// `webhook-id`, whatever the delivery's status (202).
    ///
    /// Errors: 404 `Webhook not found` / `Delivery not found`.
    pub async fn retry(
        &self, account_id: AccountId, id: Option<WebhookId>, delivery_id: &str,
    ) -> Result<DeliveryView, DomainError> {
        let _turn = self.turns.take(format!("delivery:{delivery_id}")).await;
        let subscription = self.find(account_id, id).await?;
        let Some(delivery_id) = DeliveryId::parse(delivery_id) else {
            return Err(DomainError::not_found(DELIVERY_NOT_FOUND));
        };
        // A round lost to an attempt recorded meanwhile reads the delivery again.
        let delivery_id = &delivery_id;
        let (shown, item) = write_rounds(&mut Backoff::new(), (), |_, _| {
            Box::pin(async move {
                let now = self.clock.now();
                let delivery: WebhookDelivery = self
                    .store
                    .get_delivery(subscription.id, delivery_id.as_str())
                    .await?
                    .filter(|d| d.expires_at > now)
                    .ok_or_else(|| DomainError::not_found(DELIVERY_NOT_FOUND))?;
                let subject = DeliverySubject {
                    account_id,
                    subscription_id: subscription.id,
                    delivery_id: delivery.id.clone(),
                    manual: true,
                };
                let schedule = |id, subject, due_at| self.due.schedule(id, subject, due_at);
                let item = manual_retry_item(&subject, now, &schedule);
                let mut shown = delivery.clone();
                if matches!(
                    shown.status,
                    DeliveryStatus::Delivered | DeliveryStatus::Failed
                ) {
                    shown.status = DeliveryStatus::Pending;
                }
                let changes = DueChanges {
                    put: vec![item.clone()],
                    ..DueChanges::default()
                };
                self.store
                    .record_delivery(&shown, delivery.attempts, None, &changes)
                    .await?;
                Ok((shown, item))
            })
        })
        .await
        .map_err(|e| e.answer_with(DELIVERY_KEPT_CHANGING))?;
        self.due.hand_off(&item).await;
        Ok(DeliveryView::new(&shown))
    }
}

/// The key of a subscription's turn ([`Turns`]): its id (empty for a path id that is not a
/// UUID, which names no subscription).
fn turn_key(id: Option<WebhookId>) -> String {
    id.map_or_else(String::new, |id| id.to_string())
}
