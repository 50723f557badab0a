//! The message that carries a due item's key on a queue or a timer: `{"kind": "due_work", "id",
//! "attempt", "due_at"}`. It names the item and the attempt it is for, never the work itself.

use crate::model::due::{DueId, DueItem};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `kind` of a due-work message on a queue (the dispatch queue also carries dispatch requests,
/// which have no `kind`).
pub const DUE_WORK: &str = "due_work";

/// A hand-off of one due item's next attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DueMessage {
    /// Always `due_work`.
    pub kind: String,
    /// The item.
    pub id: DueId,
    /// Attempts the item had made when it was handed on: the worker claims it for exactly that
    /// count, so a duplicate of an attempt already made claims nothing.
    pub attempt: u32,
    /// When the attempt is due (a message received earlier is handed on again for the rest).
    pub due_at: DateTime<Utc>,
}

impl DueMessage {
    /// The hand-off of `item` as stored.
    pub fn of(item: &DueItem) -> Self {
        Self {
            kind: DUE_WORK.to_string(),
            id: item.id.clone(),
            attempt: item.attempt,
            due_at: item.due_at,
        }
    }

    /// The message body.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a queue message body: `Some` when its `kind` says it is a due-work message,
    /// `None` for anything else (a dispatch request, or junk).
    ///
    /// Errors: a body whose `kind` is `due_work` but whose fields are malformed.
    pub fn from_body(body: &str) -> Option<Result<Self, String>> {
        let value: serde_json::Value = serde_json::from_str(body).ok()?;
        if value.get("kind").and_then(|k| k.as_str()) != Some(DUE_WORK) {
            return None;
        }
        Some(serde_json::from_value(value).map_err(|e| e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::due::DueKind;

    #[test]
    fn a_due_message_round_trips_and_other_bodies_are_not_due_work() {
        let message = DueMessage {
            kind: DUE_WORK.into(),
            id: DueId::new(DueKind::CrmSync, "0193"),
            attempt: 2,
            due_at: Utc::now(),
        };
        let back = DueMessage::from_body(&message.to_json()).unwrap().unwrap();
        assert_eq!(back, message);
        assert!(DueMessage::from_body(r#"{"router_id": "r", "object_id": "o"}"#).is_none());
        assert!(DueMessage::from_body("not json").is_none());
        assert!(
            DueMessage::from_body(r#"{"kind": "due_work", "id": "nope#1"}"#)
                .unwrap()
                .is_err()
        );
    }
}
