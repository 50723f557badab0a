//! The items of BEHAVIOR 18: audit events (in their account's partition, indexed by target on
//! GSI1) and the decision snapshots of history entries (an item of its own per entry).
//!
//! An event's `changes` and a snapshot's `explanation` are stored as JSON text (a string
//! attribute): their size is then the bytes of that text, which the domain bounds
//! ([`crate::model::audit::MAX_CHANGES_JSON_BYTES`],
//! [`crate::model::dispatch::MAX_SNAPSHOT_JSON_BYTES`]), and no value a client wrote can meet
//! DynamoDB's rules on nesting, empty sets or number ranges there.

use super::{backend, Item};
use crate::model::audit::{AuditAction, AuditActor, AuditEvent, AuditTarget};
use crate::model::dispatch::{DecisionSnapshot, DispatchEntry, DispatchEntryKey};
use crate::store::dynamodb::keys::{self, Key};
use crate::store::StoreResult;
use crate::types::ids::{AccountId, RouterId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Attribute of an audit event holding its `changes` as JSON text.
pub const CHANGES: &str = "changes";
/// Attribute of a decision snapshot holding the `explanation` as JSON text.
pub const EXPLANATION: &str = "explanation";

/// An event as its item holds it (keys aside).
#[derive(Serialize, Deserialize)]
struct StoredEvent {
    id: Uuid,
    account_id: AccountId,
    #[serde(with = "crate::timefmt::serde_millis")]
    at: DateTime<Utc>,
    actor: AuditActor,
    action: AuditAction,
    target: AuditTarget,
    /// JSON text of the changes.
    changes: String,
    #[serde(with = "chrono::serde::ts_seconds")]
    expires_at: DateTime<Utc>,
}

/// The item of `event`: `PK = AUDIT#<account>`, `SK = <at>#<id>`, GSI1 its target's partition,
/// `expires_at` (epoch seconds) the TTL attribute.
///
/// Errors: a value that does not serialise (a bug, reported as a backend error).
pub fn event(event: &AuditEvent) -> StoreResult<(Key, Item)> {
    let key = keys::audit_event(event.account_id, event.at, event.id);
    let index = keys::audit_target_index(
        event.account_id,
        event.target.target_type.as_str(),
        event.target.id,
        event.at,
        event.id,
    );
    let stored = StoredEvent {
        id: event.id,
        account_id: event.account_id,
        at: event.at,
        actor: event.actor.clone(),
        action: event.action,
        target: event.target.clone(),
        changes: serde_json::to_string(&event.changes).map_err(backend)?,
        expires_at: event.expires_at,
    };
    let item = super::item_of("audit_event", &stored, &key, Some(&index), None)?;
    Ok((key, item))
}

/// The event an item holds.
///
/// Errors: an item of another shape.
pub fn event_of(item: Item) -> StoreResult<AuditEvent> {
    let stored: StoredEvent = super::from_item(item)?;
    Ok(AuditEvent {
        id: stored.id,
        account_id: stored.account_id,
        at: stored.at,
        actor: stored.actor,
        action: stored.action,
        target: stored.target,
        changes: serde_json::from_str(&stored.changes).map_err(backend)?,
        expires_at: stored.expires_at,
    })
}

/// A decision snapshot as its item holds it (keys aside): the entry it belongs to, by key.
#[derive(Serialize, Deserialize)]
struct StoredSnapshot {
    entry_id: Uuid,
    account_id: AccountId,
    router_id: RouterId,
    dispatched_at: DateTime<Utc>,
    /// JSON text of the explanation.
    explanation: String,
    #[serde(with = "chrono::serde::ts_seconds")]
    expires_at: DateTime<Utc>,
}

/// The snapshot item of `entry`'s decision (`PK = DISPATCH#<entry id>`, `SK = EXPLANATION`),
/// naming the entry's key; it expires with the entry.
///
/// Errors: a value that does not serialise (a bug, reported as a backend error).
pub fn snapshot(entry: &DispatchEntry, snapshot: &DecisionSnapshot) -> StoreResult<(Key, Item)> {
    let key = keys::dispatch_explanation(entry.id);
    let stored = StoredSnapshot {
        entry_id: entry.id,
        account_id: entry.account_id,
        router_id: entry.router_id,
        dispatched_at: entry.dispatched_at,
        explanation: serde_json::to_string(snapshot).map_err(backend)?,
        expires_at: entry.expires_at,
    };
    let item = super::item_of("dispatch_explanation", &stored, &key, None, None)?;
    Ok((key, item))
}

impl crate::store::size::StoredItem for crate::model::dispatch::SnapshotOf<'_> {
    fn stored_item(&self) -> StoreResult<Item> {
        snapshot(self.entry, self.snapshot).map(|(_, item)| item)
    }
}

/// What a snapshot item says: its account, the key of its entry and the snapshot.
///
/// Errors: an item of another shape.
pub fn snapshot_of(item: Item) -> StoreResult<(AccountId, DispatchEntryKey, DecisionSnapshot)> {
    let stored: StoredSnapshot = super::from_item(item)?;
    let explanation: serde_json::Value =
        serde_json::from_str(&stored.explanation).map_err(backend)?;
    Ok((
        stored.account_id,
        DispatchEntryKey {
            router_id: stored.router_id,
            dispatched_at: stored.dispatched_at,
            id: stored.entry_id,
        },
        DecisionSnapshot::stored(explanation),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::s;
    use super::*;
    use crate::model::audit::{AuditChange, TargetType};
    use aws_sdk_dynamodb::types::AttributeValue;
    use serde_json::json;

    #[test]
    fn an_event_item_reads_back_as_the_event_and_holds_its_changes_as_text() {
        let e = AuditEvent::new(
            AccountId::from(Uuid::new_v4()),
            AuditActor {
                client_id: "c".into(),
                sub: "c".into(),
            },
            AuditAction::MemberUpdated,
            AuditTarget::new(TargetType::Member, Uuid::new_v4()),
            vec![AuditChange {
                path: "capacity".into(),
                before: json!([]),
                after: json!([{"max_capacity": 1e120, "nested": [[[]]]}]),
            }],
            Utc::now(),
        );
        let (key, item) = event(&e).unwrap();
        assert_eq!(key, keys::audit_event(e.account_id, e.at, e.id));
        assert!(matches!(item[CHANGES], AttributeValue::S(_)));
        assert_eq!(
            item[keys::GSI1PK],
            s(keys::audit_target_partition(
                e.account_id,
                "member",
                e.target.id
            ))
        );
        assert_eq!(event_of(item).unwrap(), e);
    }
}
