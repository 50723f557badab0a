//! What dispatch stores: rotation state, the assignment log and the one atomic assignment write.

use super::member::Member;
use super::record::Record;
use crate::types::email::Email;
use crate::types::ids::{AccountId, RecordId, RouterId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use uuid::Uuid;

/// A router's rotation state (BEHAVIOR 6, step 14). Internal: never in a response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RotationState {
    /// Optimistic-concurrency version; 0 before the first rotation assignment.
    pub version: u64,
    /// E-mail of the member last assigned by rotation (`users` rotation).
    pub last_member: Option<String>,
    /// Name of the team last used (`teams` rotation).
    pub last_team: Option<String>,
    /// Per team: e-mail of the member last assigned inside it (`teams` rotation).
    pub team_last_member: BTreeMap<String, String>,
    /// Rotation assignments per member e-mail (`percentage`).
    pub counts: BTreeMap<String, u64>,
    /// All rotation assignments of the router (`percentage`'s N).
    pub total: u64,
}

/// Why a member got a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssignmentReason {
    /// The router's rotation chose them.
    Rotation,
    /// They own the company of the contact's e-mail domain.
    AccountMatching,
    /// Nobody was available; the router's backup user.
    Backup,
}

/// One assignment, logged with the write that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssignmentLog {
    /// Log id (UUID v7).
    pub id: Uuid,
    /// Account.
    pub account_id: AccountId,
    /// Router.
    pub router_id: RouterId,
    /// Record.
    pub record_id: RecordId,
    /// The assigned member's e-mail.
    pub member_email: Email,
    /// Why.
    pub reason: AssignmentReason,
    /// When.
    pub at: DateTime<Utc>,
}

/// Everything one assignment writes, atomically (BEHAVIOR 6, "Assignment writes").
#[derive(Debug, Clone, PartialEq)]
pub struct AssignmentWrite {
    /// The record with the owner set, `*_owner_assigned_date` and `updated_at` refreshed.
    pub record: Record,
    /// The record's version when read.
    pub record_version: u64,
    /// The router's new rotation state and the version read (rotation assignments only).
    pub rotation: Option<(RouterId, RotationState, u64)>,
    /// The chosen member with counters incremented and the version read (when counters apply).
    pub member: Option<(Member, u64)>,
    /// Calendar month (UTC) of the assignment, `YYYY-MM`.
    pub month: String,
    /// The account's monthly quota; the count may not pass it.
    pub quota: Option<u64>,
    /// The log item.
    pub log: AssignmentLog,
    /// Idempotency key (the SQS message id) marking the work as done, when queued.
    pub idempotency_key: Option<String>,
    /// The response of an HTTP `Idempotency-Key` request, stored with the assignment
    /// (BEHAVIOR 10).
    pub completion: Option<crate::idempotency::IdempotencyCompletion>,
}
