//! Making events (BEHAVIOR 13): for a history entry and a type, one delivery per enabled
//! subscription of the account that receives the type, each with its due item, to be written in
//! the same store transaction as the entry that causes them (the outbox).

use crate::history::DispatchEntryView;
use crate::model::dispatch::DispatchEntry;
use crate::model::due::{DueChanges, DueId, DueItem, DueKind};
use crate::model::member::Member;
use crate::model::webhook::{DeliveryStatus, EventType, WebhookDelivery, WebhookSubscription};
use crate::timefmt::Timestamp;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Days a delivery stays in the log (BEHAVIOR 13).
pub const DELIVERY_RETENTION_DAYS: i64 = 30;

/// The largest payload (BEHAVIOR 13); an entry never comes near it (its texts are bounded).
pub const MAX_PAYLOAD_BYTES: usize = 64 * 1024;

/// The notification category of an assignment to a member.
pub const ASSIGNMENT_CATEGORY: &str = "assignment";
/// The notification category of a record taken from a member by an SLA reassignment.
pub const REASSIGNMENT_CATEGORY: &str = "reassignment";

/// `notify` of an `assignment.created` event: whether each member wants to hear of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Notify {
    /// The assigned member has `can_receive_notifications` and the `assignment` category.
    pub user: bool,
    /// For an SLA reassignment: the member the record was taken from has
    /// `can_receive_notifications` and the `reassignment` category; `false` otherwise.
    pub previous_owner: bool,
}

impl Notify {
    /// The flags for `assigned` and, for an SLA reassignment, `previous` (the member the record
    /// was taken from).
    pub fn of(assigned: &Member, previous: Option<&Member>) -> Self {
        let wants = |m: &Member, category: &str| {
            m.can_receive_notifications
                && m.notification_preferences
                    .as_slice()
                    .iter()
                    .any(|c| c == category)
        };
        Self {
            user: wants(assigned, ASSIGNMENT_CATEGORY),
            previous_owner: previous.is_some_and(|m| wants(m, REASSIGNMENT_CATEGORY)),
        }
    }
}

/// The payload's `data`: the history entry as the API shows it, the account, and for an
/// assignment the notification flags.
#[derive(Serialize)]
struct EventData<'a> {
    #[serde(flatten)]
    entry: DispatchEntryView,
    account_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    notify: Option<&'a Notify>,
}

/// The body of every delivery of an event: `{type, timestamp, data}`.
#[derive(Serialize)]
struct Payload<'a> {
    r#type: EventType,
    timestamp: Timestamp,
    data: EventData<'a>,
}

/// What a delivery's due item names: the delivery, and whether it is a manual retry (one
/// attempt, no schedule of its own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliverySubject {
    /// The subscription's account.
    pub account_id: crate::types::ids::AccountId,
    /// The subscription.
    pub subscription_id: crate::types::ids::WebhookId,
    /// The delivery (`msg_...`).
    pub delivery_id: String,
    /// A retry asked for through the API.
    #[serde(default)]
    pub manual: bool,
}

/// The body of an event of `event_type` about `entry`, made at `now`.
///
/// Errors: the entry does not serialise (a bug).
pub fn payload(
    event_type: EventType, entry: &DispatchEntry, notify: Option<&Notify>, now: DateTime<Utc>,
) -> Result<String, serde_json::Error> {
    serde_json::to_string(&Payload {
        r#type: event_type,
        timestamp: Timestamp(now),
        data: EventData {
            entry: DispatchEntryView::new(entry),
            account_id: entry.account_id.to_string(),
            notify,
        },
    })
}

/// The deliveries of an event of `event_type` about `entry`, one per subscription of
/// `subscriptions` that receives it, added to `changes` with their due items (due now, made by
/// `schedule`). Returns how many.
///
/// Errors: the payload does not serialise (a bug).
pub fn add_deliveries(
    changes: &mut DueChanges, subscriptions: &[WebhookSubscription], event_type: EventType,
    entry: &DispatchEntry, notify: Option<&Notify>, now: DateTime<Utc>,
    schedule: &dyn Fn(DueId, serde_json::Value, DateTime<Utc>) -> DueItem,
) -> Result<usize, serde_json::Error> {
    let receivers: Vec<&WebhookSubscription> = subscriptions
        .iter()
        .filter(|s| s.account_id == entry.account_id && s.receives(event_type))
        .collect();
    if receivers.is_empty() {
        return Ok(0);
    }
    let body = payload(event_type, entry, notify, now)?;
    if body.len() > MAX_PAYLOAD_BYTES {
        tracing::error!(bytes = body.len(), entry_id = %entry.id, "event payload over 64 KiB");
    }
    for subscription in &receivers {
        let delivery = WebhookDelivery {
            id: WebhookDelivery::new_id(),
            subscription_id: subscription.id,
            account_id: subscription.account_id,
            event_type,
            payload: body.clone(),
            status: DeliveryStatus::Pending,
            attempts: 0,
            last_status_code: None,
            last_error: None,
            created_at: now,
            delivered_at: None,
            expires_at: now + chrono::Duration::days(DELIVERY_RETENTION_DAYS),
        };
        let subject = DeliverySubject {
            account_id: subscription.account_id,
            subscription_id: subscription.id,
            delivery_id: delivery.id.clone(),
            manual: false,
        };
        let item = schedule(
            DueId::new(DueKind::WebhookDelivery, delivery.id.clone()),
            serde_json::to_value(&subject)?,
            now,
        );
        changes.put.push(item);
        changes.deliveries.push(delivery);
    }
    Ok(receivers.len())
}
