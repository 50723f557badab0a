//! Webhook subscriptions and their deliveries, as stored (BEHAVIOR 13).

use super::account::SealedSecret;
use crate::types::ids::{AccountId, WebhookId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use strum::{EnumString, IntoStaticStr};
use utoipa::ToSchema;

/// What an event says happened (BEHAVIOR 13).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, IntoStaticStr, EnumString,
)]
pub enum EventType {
    /// An assignment committed (any reason, SLA reassignments included).
    #[serde(rename = "assignment.created")]
    #[strum(serialize = "assignment.created")]
    AssignmentCreated,
    /// A dispatch appended a history entry without an assignment.
    #[serde(rename = "dispatch.unassigned")]
    #[strum(serialize = "dispatch.unassigned")]
    DispatchUnassigned,
    /// A CRM sync reached its final `failed` status.
    #[serde(rename = "crm_sync.failed")]
    #[strum(serialize = "crm_sync.failed")]
    CrmSyncFailed,
}

impl EventType {
    /// The type's name (`assignment.created`, ...), the same as in JSON.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Why a subscription was disabled by the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DisabledReason {
    /// The receiver answered 410 Gone.
    Gone,
    /// Every delivery failed for 5 days.
    Failing,
}

/// One signing secret of a subscription, sealed at rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SigningSecret {
    /// `whsec_...`, sealed ([`crate::secrets::Sealer`]).
    pub sealed: SealedSecret,
    /// When it stops signing: `None` for the current secret, creation + 24 h of its successor
    /// for a rotated one.
    pub retires_at: Option<DateTime<Utc>>,
}

/// A webhook subscription of an account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookSubscription {
    /// Id (UUID v7: ids sort by creation time).
    pub id: WebhookId,
    /// The account.
    pub account_id: AccountId,
    /// Where deliveries are posted (checked by the outbound guard).
    pub url: String,
    /// The event types it receives, without repeats, in the order given.
    pub events: Vec<EventType>,
    /// Free text.
    pub description: Option<String>,
    /// Whether it receives new events.
    pub enabled: bool,
    /// Why the service disabled it; `None` while enabled or when disabled by a `PATCH`.
    pub disabled_reason: Option<DisabledReason>,
    /// The secrets that sign deliveries: the current one first, then a rotated one during its
    /// 24 h overlap.
    pub secrets: Vec<SigningSecret>,
    /// Since when every delivery attempt has failed (`None` after a success).
    pub failing_since: Option<DateTime<Utc>>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Optimistic-concurrency version.
    pub version: u64,
}

impl WebhookSubscription {
    /// Whether it receives events of `event_type` now.
    pub fn receives(&self, event_type: EventType) -> bool {
        self.enabled && self.events.contains(&event_type)
    }
}

/// What a delivery attempt does to its subscription (BEHAVIOR 13: a subscription whose
/// deliveries have all failed for 5 days is disabled `failing`; a 410 disables it `gone`),
/// written in the attempt's own write. Each change is conditional on the subscription's health
/// alone (its `failing_since`), never on its `version`, which every `PATCH` and rotation moves:
/// attempts of many deliveries of one subscription, at the same moment, never conflict with each
/// other or with those changes (`docs/design.md`, "Work that happens later").
#[derive(Debug, Clone, PartialEq)]
pub enum HealthChange {
    /// A delivery succeeded: `failing_since` is removed (nothing else changes).
    Recovered,
    /// A delivery failed at `at`: `failing_since` becomes `at` unless it is set already.
    Failing {
        /// When the attempt failed.
        at: DateTime<Utc>,
    },
    /// Every delivery has failed since `since`, for 5 days: disabled `failing` at `at`, on the
    /// condition that `failing_since` is still `since` (a success meanwhile cancels it).
    DisableFailing {
        /// The `failing_since` the attempt read.
        since: DateTime<Utc>,
        /// When the attempt failed.
        at: DateTime<Utc>,
    },
    /// The receiver answered 410 Gone at `at`: disabled `gone`.
    DisableGone {
        /// When the attempt was answered.
        at: DateTime<Utc>,
    },
}

impl HealthChange {
    /// Whether the change disables the subscription (its `version` moves, `updated_at` is `at`).
    pub fn disables(&self) -> Option<(DisabledReason, DateTime<Utc>)> {
        match self {
            Self::DisableFailing { at, .. } => Some((DisabledReason::Failing, *at)),
            Self::DisableGone { at } => Some((DisabledReason::Gone, *at)),
            Self::Recovered | Self::Failing { .. } => None,
        }
    }

    /// `subscription` with the change applied (how the embedded store writes it; DynamoDB writes
    /// the same attributes with an update expression).
    pub fn apply(&self, subscription: &WebhookSubscription) -> WebhookSubscription {
        let mut next = subscription.clone();
        match self {
            Self::Recovered => next.failing_since = None,
            Self::Failing { at } => {
                next.failing_since.get_or_insert(*at);
            }
            Self::DisableFailing { .. } | Self::DisableGone { .. } => {}
        }
        if let Some((reason, at)) = self.disables() {
            next.enabled = false;
            next.disabled_reason = Some(reason);
            next.updated_at = at;
            next.version += 1;
        }
        next
    }

    /// Whether applying the change to `subscription` as read changes it. A delivery's outcome
    /// writes its subscription only then: a failure while it is already failing, or a success
    /// while it is healthy, leaves the subscription item out of the delivery's transaction, so
    /// that concurrent deliveries of one subscription do not all meet on its item (DynamoDB
    /// cancels transactions that touch one item at once). A concurrent transition between the
    /// read and the write is not undone: the next outcome that reads it writes its own.
    pub fn changes(&self, subscription: &WebhookSubscription) -> bool {
        self.apply(subscription) != *subscription
    }
}

/// A [`HealthChange`] of one subscription.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionHealth {
    /// The subscription's account.
    pub account_id: AccountId,
    /// The subscription.
    pub subscription_id: WebhookId,
    /// The change.
    pub change: HealthChange,
}

/// Where a delivery stands (BEHAVIOR 13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Made, no attempt answered yet.
    Pending,
    /// A 2xx arrived.
    Delivered,
    /// An attempt failed; another is scheduled.
    Retrying,
    /// No attempt is left (or the receiver said 410, or the subscription was disabled).
    Failed,
}

/// One event for one subscription, and how its delivery went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookDelivery {
    /// `msg_<uuid v7 simple>`: the `webhook-id` of every attempt; sorts by creation.
    pub id: String,
    /// The subscription.
    pub subscription_id: WebhookId,
    /// The subscription's account.
    pub account_id: AccountId,
    /// The event's type.
    pub event_type: EventType,
    /// The body posted on every attempt (`{type, timestamp, data}`), at most 64 KiB.
    pub payload: String,
    /// Where it stands.
    pub status: DeliveryStatus,
    /// Attempts made.
    pub attempts: u32,
    /// The status code of the last answer, when one came.
    pub last_status_code: Option<u16>,
    /// What went wrong last, `None` once delivered.
    pub last_error: Option<String>,
    /// When the event was made.
    pub created_at: DateTime<Utc>,
    /// When a 2xx arrived.
    pub delivered_at: Option<DateTime<Utc>>,
    /// When the log forgets it (30 days): epoch seconds, DynamoDB's TTL attribute.
    #[serde(with = "chrono::serde::ts_seconds")]
    pub expires_at: DateTime<Utc>,
}

impl WebhookDelivery {
    /// A new delivery id, `msg_` + a UUID v7 in simple form (sorting by creation time).
    pub fn new_id() -> String {
        crate::types::ids::DeliveryId::new_v7().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_types_name_is_its_json_name_and_reads_back() {
        let all = [
            EventType::AssignmentCreated,
            EventType::DispatchUnassigned,
            EventType::CrmSyncFailed,
        ];
        let names = all.map(EventType::as_str);
        let expected = [
            "assignment.created",
            "dispatch.unassigned",
            "crm_sync.failed",
        ];
        assert_eq!(names, expected);
        for event in all {
            assert_eq!(serde_json::to_value(event).unwrap(), event.as_str());
            assert_eq!(event.as_str().parse::<EventType>().unwrap(), event);
        }
        assert!("AssignmentCreated".parse::<EventType>().is_err());
    }

    fn subscription(failing_since: Option<DateTime<Utc>>) -> WebhookSubscription {
        let at = DateTime::parse_from_rfc3339("2026-11-29T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        WebhookSubscription {
            id: WebhookId::new_v7(),
            account_id: AccountId::from_uuid(uuid::Uuid::nil()),
            url: "https://hooks.example/in".into(),
            events: vec![EventType::AssignmentCreated],
            description: None,
            enabled: true,
            disabled_reason: None,
            secrets: vec![],
            failing_since,
            created_at: at,
            updated_at: at,
            version: 1,
        }
    }

    #[test]
    fn only_a_transition_of_its_health_writes_a_subscription() {
        let since = Utc::now() - chrono::Duration::hours(1);
        let at = Utc::now();
        let (healthy, failing) = (subscription(None), subscription(Some(since)));
        let failure = HealthChange::Failing { at };
        assert!(failure.changes(&healthy));
        assert!(
            !failure.changes(&failing),
            "already failing: nothing to write"
        );
        assert!(HealthChange::Recovered.changes(&failing));
        assert!(
            !HealthChange::Recovered.changes(&healthy),
            "healthy already"
        );
        assert!(HealthChange::DisableFailing { since, at }.changes(&failing));
        assert!(HealthChange::DisableGone { at }.changes(&healthy));
    }
}
