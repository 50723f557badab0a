//! Subscriptions and deliveries as the API shows them (BEHAVIOR 13).

use crate::model::webhook::{
    DeliveryStatus, DisabledReason, EventType, WebhookDelivery, WebhookSubscription,
};
use crate::timefmt::Timestamp;
use crate::types::ids::WebhookId;
use serde::Serialize;
use utoipa::ToSchema;

/// A webhook subscription. `secret` only in the answers of create and rotate-secret.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(example = json!({
    "id": "01937c2a-1b00-7c00-8000-0000000000a1",
    "url": "https://hooks.example.com/routing",
    "events": ["assignment.created"],
    "description": "Slack bot",
    "enabled": true,
    "disabled_reason": null,
    "created_at": "2026-11-24T09:30:00.000Z",
    "updated_at": "2026-11-24T09:30:00.000Z"
}))]
pub struct WebhookView {
    /// Id (UUID).
    pub id: WebhookId,
    /// Where deliveries are posted.
    pub url: String,
    /// The event types it receives.
    pub events: Vec<EventType>,
    /// Free text, or `null`.
    pub description: Option<String>,
    /// Whether it receives new events.
    pub enabled: bool,
    /// `gone` (the receiver answered 410) or `failing` (5 days of failed deliveries) when the
    /// service disabled it; `null` otherwise.
    pub disabled_reason: Option<DisabledReason>,
    /// The signing secret (`whsec_` + base64 of 32 bytes): in the create and rotate answers
    /// only, never again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

impl WebhookView {
    /// The view of `s`, without its secret.
    pub fn new(s: &WebhookSubscription) -> Self {
        Self {
            id: s.id,
            url: s.url.clone(),
            events: s.events.clone(),
            description: s.description.clone(),
            enabled: s.enabled,
            disabled_reason: s.disabled_reason,
            secret: None,
            created_at: Timestamp(s.created_at),
            updated_at: Timestamp(s.updated_at),
        }
    }
}

/// One delivery of an event to a subscription.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(example = json!({
    "id": "msg_01937c2a1b007c008000000000000001",
    "event_type": "assignment.created",
    "status": "retrying",
    "attempts": 2,
    "last_status_code": 503,
    "last_error": "HTTP 503",
    "created_at": "2026-11-24T09:30:00.000Z",
    "delivered_at": null
}))]
pub struct DeliveryView {
    /// The `webhook-id` of every attempt.
    pub id: String,
    /// The event's type.
    pub event_type: EventType,
    /// `pending`, `delivered`, `retrying` or `failed`.
    pub status: DeliveryStatus,
    /// Attempts made.
    pub attempts: u32,
    /// The status code of the last answer, `null` when none came.
    pub last_status_code: Option<u16>,
    /// What went wrong last, `null` once delivered.
    pub last_error: Option<String>,
    /// When the event was made.
    pub created_at: Timestamp,
    /// When a 2xx arrived, or `null`.
    pub delivered_at: Option<Timestamp>,
}

impl DeliveryView {
    /// The view of `d`.
    pub fn new(d: &WebhookDelivery) -> Self {
        Self {
            id: d.id.clone(),
            event_type: d.event_type,
            status: d.status,
            attempts: d.attempts,
            last_status_code: d.last_status_code,
            last_error: d.last_error.clone(),
            created_at: Timestamp(d.created_at),
            delivered_at: d.delivered_at.map(Timestamp),
        }
    }
}
