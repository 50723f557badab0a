//! The schemas of webhook subscription bodies (BEHAVIOR 13). The handlers read the bodies with
//! [`crate::webhooks::WebhookService`]; these types only describe them.

use crate::model::webhook::EventType;
use utoipa::ToSchema;

/// `POST /webhooks` body.
#[derive(ToSchema, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"url": "https://hooks.example.com/routing", "events": ["assignment.created", "dispatch.unassigned"], "description": "Routing events for the data warehouse"}))]
#[allow(dead_code)]
pub struct WebhookCreate {
    /// Absolute `https` URL, at most 2,048 characters, no user info, not an IP literal in a
    /// loopback, private, link-local or unspecified range.
    #[schema(max_length = 2048)]
    url: String,
    /// The event types to deliver (non-empty; duplicates removed).
    #[schema(min_items = 1)]
    events: Vec<EventType>,
    /// Free text, at most 1,000 characters.
    #[schema(max_length = 1000, nullable)]
    description: Option<String>,
}

/// `PATCH /webhooks/{webhookId}` body: at least one key.
#[derive(ToSchema, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[schema(min_properties = 1, example = json!({"events": ["assignment.created"], "enabled": true}))]
#[allow(dead_code)]
pub struct WebhookPatch {
    /// As on create.
    #[schema(max_length = 2048)]
    url: Option<String>,
    /// As on create.
    #[schema(min_items = 1)]
    events: Option<Vec<EventType>>,
    /// As on create; `null` clears it.
    #[schema(max_length = 1000, nullable)]
    description: Option<String>,
    /// `true` enables a disabled subscription (clearing `disabled_reason`); `false` disables it.
    enabled: Option<bool>,
}
