//! Work that happens later (`docs/design.md`, "Work that happens later"): the stored due item that
//! CRM sync retries, webhook deliveries and SLA checks share, and the changes to due items that
//! other store writes carry in their transaction.
//!
//! A due item says: a side effect of `kind` on `subject` is due at `due_at`, `attempt` attempts
//! have been made, and (while a worker holds it) who holds it until when (`lease`). It is stored
//! in the same transaction as the change that causes it (an outbox), and settled (removed, or
//! moved to its next due time) in the same transaction as the outcome of its side effect. The
//! mechanism that claims, runs, hands on and sweeps due items is [`crate::due`].

use crate::types::raw_form;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a due item does when it is due. Its name (`crm_sync`, `webhook_delivery`,
/// `sla_check`, `close_deliveries`) is the same in JSON, ids, messages, logs and metric dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString, strum::Display, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum DueKind {
    /// Send an assignment's owner to the account's CRM (BEHAVIOR 7): the first attempt and
    /// every retry.
    CrmSync,
    /// Deliver one event to one webhook subscription (BEHAVIOR 13).
    WebhookDelivery,
    /// Check whether an assigned record was worked in time (BEHAVIOR 14).
    SlaCheck,
    /// End the open deliveries of a subscription that was disabled (BEHAVIOR 13: they end
    /// `failed` with `Subscription disabled`), page by page, so the write that disables it never
    /// waits on the size of its delivery log.
    CloseDeliveries,
}

impl DueKind {
    /// The kind's name (`crm_sync`, `webhook_delivery`, `sla_check`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The id of a due item: `<kind>#<subject id>` (one due item per kind and subject, so an
/// outbox write that runs twice cannot make two).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DueId {
    kind: DueKind,
    subject_id: String,
}

impl DueId {
    /// The longest subject id: ids end up in a DynamoDB partition key (2048 bytes at most).
    pub const MAX_SUBJECT_ID: usize = 512;

    /// The due item of `kind` for the subject `subject_id` (a history entry id, a delivery id).
    pub fn new(kind: DueKind, subject_id: impl Into<String>) -> Self {
        Self {
            kind,
            subject_id: subject_id.into(),
        }
    }

    /// Parses `<kind>#<subject id>`.
    ///
    /// Errors: an unknown kind, an empty or overlong subject id.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (kind, subject_id) = text
            .split_once('#')
            .ok_or_else(|| format!("due item id {text:?} is not <kind>#<subject id>"))?;
        let kind = kind
            .parse::<DueKind>()
            .map_err(|_| format!("unknown due item kind {kind:?}"))?;
        if subject_id.is_empty() || subject_id.len() > Self::MAX_SUBJECT_ID {
            return Err(format!(
                "due item subject id must have 1 to {} bytes",
                Self::MAX_SUBJECT_ID
            ));
        }
        Ok(Self::new(kind, subject_id))
    }

    /// What the item does.
    pub fn kind(&self) -> DueKind {
        self.kind
    }

    /// The id of its subject (the history entry, the delivery).
    pub fn subject_id(&self) -> &str {
        &self.subject_id
    }
}

impl fmt::Display for DueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.kind, self.subject_id)
    }
}

raw_form! { DueId, String, |t: String| DueId::parse(&t), |id: DueId| id.to_string() }

/// A worker's hold on a due item: nobody else runs it until `until` (a worker that dies lets
/// it lapse, and the sweeper resumes the item after that).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// Random id of this hold; settling the item is conditional on it.
    pub id: String,
    /// End of the hold.
    pub until: DateTime<Utc>,
}

impl Lease {
    /// A fresh lease from `now` for `duration`.
    pub fn new(now: DateTime<Utc>, duration: std::time::Duration) -> Self {
        Self {
            id: uuid::Uuid::new_v4().to_string(),
            until: now + chrono::Duration::from_std(duration).unwrap_or(chrono::Duration::zero()),
        }
    }
}

/// One stored due item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DueItem {
    /// `<kind>#<subject id>`.
    pub id: DueId,
    /// The job's reference to its subject (e.g. a history entry's key), as the job wrote it; the
    /// job reads it back with its own type.
    pub subject: serde_json::Value,
    /// When the next attempt is due.
    pub due_at: DateTime<Utc>,
    /// Attempts made so far. A claim names the attempt it means to make, so a duplicate
    /// message or a racing sweeper for an attempt already made claims nothing.
    pub attempt: u32,
    /// The worker holding the item, while one does.
    pub lease: Option<Lease>,
    /// When the sweeper resumes the item if nothing else ran it by then: the end of the lease
    /// while one is held; the due time plus the hand-off's grace while a message or a timer
    /// carries it; the due time when nothing does. The sparse index of due work is ordered by it.
    pub resume_at: DateTime<Utc>,
    /// Claims since the item last made progress (an attempt recorded): every claim adds one, a
    /// settlement that records an attempt starts it again at 0. A job that keeps failing (an
    /// error, a crash, a commit that keeps conflicting) runs it up; past
    /// [`DueItem::MAX_RUNS`] the item is parked.
    #[serde(default)]
    pub runs: u32,
    /// Why the last run made no progress (the error of a job that failed, or `conflict`), kept
    /// for whoever inspects the item; `None` after progress.
    #[serde(default)]
    pub last_error: Option<String>,
    /// When the mechanism gave up on the item ([`DueItem::MAX_RUNS`] runs without progress): a
    /// parked item stays stored for inspection, out of the sweeper's index, and nothing claims
    /// it.
    #[serde(default)]
    pub parked_at: Option<DateTime<Utc>>,
}

impl DueItem {
    /// A new item `id` due at `due_at`, no attempt made, held by nobody, resumed by the
    /// sweeper at `resume_at`.
    pub fn new(
        id: DueId, subject: serde_json::Value, due_at: DateTime<Utc>, resume_at: DateTime<Utc>,
    ) -> Self {
        Self {
            id,
            subject,
            due_at,
            attempt: 0,
            lease: None,
            resume_at,
            runs: 0,
            last_error: None,
            parked_at: None,
        }
    }

    /// Runs without progress after which the mechanism parks an item (`docs/design.md`, "Work that
    /// happens later": a job that keeps failing is not re-armed forever). With the release delays
    /// of [`crate::due`] (1 s doubling up to the lease) ten runs span about nine minutes with the
    /// default 60 s lease.
    pub const MAX_RUNS: u32 = 10;

    /// What the item does.
    pub fn kind(&self) -> DueKind {
        self.id.kind()
    }

    /// Whether a lease holds the item at `now`.
    pub fn leased_at(&self, now: DateTime<Utc>) -> bool {
        self.lease.as_ref().is_some_and(|l| l.until > now)
    }
}

/// How a claimed due item ends its attempt, written in the same transaction as the attempt's
/// outcome and conditional on the claim's lease.
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    /// The item.
    pub id: DueId,
    /// The lease of the claim that ran the attempt.
    pub lease_id: String,
    /// The next attempt, or `None` when the work is over (the item is removed).
    pub next: Option<NextAttempt>,
}

/// The next attempt of a due item.
#[derive(Debug, Clone, PartialEq)]
pub struct NextAttempt {
    /// When it is due.
    pub due_at: DateTime<Utc>,
    /// The item's attempt count after this attempt: one more than the claim's when an attempt
    /// was recorded; the claim's own when the item stays due without one ([`Self::error`]).
    pub attempt: u32,
    /// When the sweeper may resume it ([`DueItem::resume_at`]).
    pub resume_at: DateTime<Utc>,
    /// `None` when the run made progress (its [`DueItem::runs`] start again at 0); otherwise why
    /// it did not, stored as the item's [`DueItem::last_error`] (its runs are kept).
    pub error: Option<String>,
    /// The subject the next attempt reads, when the run moved it on (a job that works through a
    /// list in several runs keeps its position there); `None` keeps the subject.
    pub subject: Option<serde_json::Value>,
}

/// The mechanism's giving up on a claimed item ([`DueItem::MAX_RUNS`] runs without progress):
/// the item is kept with `error`, parked at `at` (out of the sweeper's index), conditional on
/// the claim's lease.
#[derive(Debug, Clone, PartialEq)]
pub struct Parking {
    /// The item.
    pub id: DueId,
    /// The lease of the claim that parks it.
    pub lease_id: String,
    /// When it was parked.
    pub at: DateTime<Utc>,
    /// The last error of its runs.
    pub error: String,
}

/// The changes to due work a store write carries, in its own transaction: new items (put only
/// when absent), the webhook deliveries they carry out (the outbox of BEHAVIOR 13: made with the
/// history entry that causes them), and the settlement of the claimed item whose attempt the
/// write records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DueChanges {
    /// Items to store (each must not exist yet).
    pub put: Vec<DueItem>,
    /// Webhook deliveries to store (each must not exist yet).
    pub deliveries: Vec<super::webhook::WebhookDelivery>,
    /// The claimed item this write settles.
    pub settle: Option<Settlement>,
}

impl DueChanges {
    /// No change.
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.put.is_empty() && self.deliveries.is_empty() && self.settle.is_none()
    }

    /// Only `settlement`.
    pub fn settling(settlement: Settlement) -> Self {
        Self {
            settle: Some(settlement),
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_due_id_reads_back_as_written_and_refuses_malformed_text() {
        let id = DueId::new(DueKind::CrmSync, "0193-abc");
        assert_eq!(id.to_string(), "crm_sync#0193-abc");
        assert_eq!(DueId::parse(&id.to_string()).unwrap(), id);
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, "\"crm_sync#0193-abc\"");
        assert_eq!(serde_json::from_str::<DueId>(&json).unwrap(), id);
        for bad in ["crm_sync", "nope#x", "crm_sync#", ""] {
            assert!(DueId::parse(bad).is_err(), "{bad}");
        }
        assert!(DueId::parse(&format!("sla_check#{}", "x".repeat(513))).is_err());
    }

    #[test]
    fn a_kinds_name_is_its_json_name_and_reads_back() {
        use strum::IntoEnumIterator;
        let names: Vec<&str> = DueKind::iter().map(DueKind::as_str).collect();
        assert_eq!(
            names,
            [
                "crm_sync",
                "webhook_delivery",
                "sla_check",
                "close_deliveries"
            ]
        );
        for kind in DueKind::iter() {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
            assert_eq!(kind.to_string(), kind.as_str());
            assert_eq!(kind.as_str().parse::<DueKind>().unwrap(), kind);
        }
        assert!("CrmSync".parse::<DueKind>().is_err());
    }

    #[test]
    fn a_lease_holds_until_its_end_only() {
        let now = Utc::now();
        let item = DueItem {
            id: DueId::new(DueKind::SlaCheck, "e"),
            subject: serde_json::Value::Null,
            due_at: now,
            attempt: 0,
            lease: Some(Lease::new(now, std::time::Duration::from_secs(10))),
            resume_at: now,
            runs: 0,
            last_error: None,
            parked_at: None,
        };
        assert!(item.leased_at(now));
        assert!(!item.leased_at(now + chrono::Duration::seconds(10)));
    }
}
