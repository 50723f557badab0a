//! The routing history as the API shows it (BEHAVIOR 8).

use crate::model::dispatch::{AssignmentReason, CrmSyncState, DispatchEntry, DispatchSource};
use crate::model::object_type::ObjectType;
use crate::model::sla::SlaStatus;
use crate::timefmt::Timestamp;
use crate::types::ids::RouterId;
use serde::Serialize;
use utoipa::ToSchema;

/// One history entry: what one dispatch decided (BEHAVIOR 8).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(example = json!({
    "id": "01936b2a-7c00-7a00-8000-0000000000aa",
    "router_id": "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45",
    "router_revision": 1,
    "object_type": "contacts",
    "object_id": "01936b2a-7c00-7a00-8000-000000000002",
    "message": "Owner assigned",
    "success": true,
    "user": "ana.lopez@northwind.example",
    "reason": "rotation",
    "previous_owner": null,
    "field_name": "Contact owner",
    "source": "api",
    "dispatched_at": "2026-11-23T09:30:00.000Z",
    "crm_sync": null,
    "sla": {"due_at": "2026-11-23T10:00:00.000Z", "status": "pending"}
}))]
pub struct DispatchEntryView {
    /// Entry id (UUID).
    #[schema(value_type = String, format = Uuid)]
    pub id: uuid::Uuid,
    /// The router.
    pub router_id: RouterId,
    /// The router's revision the run evaluated (BEHAVIOR 15).
    pub router_revision: u64,
    /// The router's object type.
    #[schema(value_type = String, example = "contacts")]
    pub object_type: ObjectType,
    /// The `object_id` the dispatch was asked for.
    pub object_id: String,
    /// The outcome: `Owner assigned`, or the message of the check that stopped the run.
    pub message: String,
    /// `true` only for an assignment.
    pub success: bool,
    /// The assigned member's e-mail; `null` when nothing was assigned.
    pub user: Option<String>,
    /// `rotation`, `account_matching`, `backup` or `sla_reassignment` (BEHAVIOR 14); `null`
    /// when nothing was assigned.
    pub reason: Option<AssignmentReason>,
    /// The owner field's value before the assignment; `null` when it had none or nothing was
    /// assigned.
    pub previous_owner: Option<String>,
    /// Display name of the owner field; `null` when nothing was assigned.
    pub field_name: Option<String>,
    /// `api`, `queue`, or `sla` for an SLA reassignment (BEHAVIOR 14).
    pub source: DispatchSource,
    /// When the dispatch ran (RFC 3339 UTC, milliseconds).
    pub dispatched_at: Timestamp,
    /// The CRM sync of an assignment by a router with `has_integration` (BEHAVIOR 7); `null`
    /// otherwise.
    pub crm_sync: Option<CrmSyncState>,
    /// The SLA check the assignment started (BEHAVIOR 14); `null` when it started none.
    pub sla: Option<SlaStateView>,
}

/// An SLA check as a history entry shows it (BEHAVIOR 14).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(example = json!({"due_at": "2026-11-23T10:00:00.000Z", "status": "pending"}))]
pub struct SlaStateView {
    /// When the check is due: the assignment's `dispatched_at` plus the router's SLA minutes
    /// (RFC 3339 UTC, milliseconds).
    pub due_at: Timestamp,
    /// `pending` until the check runs; then `met`, `cancelled`, `reassigned` or `expired`.
    pub status: SlaStatus,
}

impl DispatchEntryView {
    /// The view of `entry`.
    pub fn new(entry: &DispatchEntry) -> Self {
        Self {
            id: entry.id,
            router_id: entry.router_id,
            router_revision: entry.router_revision,
            object_type: entry.object_type,
            object_id: entry.object_id.clone(),
            message: entry.message.clone(),
            success: entry.success,
            user: entry.user.as_ref().map(|u| u.as_str().to_string()),
            reason: entry.reason,
            previous_owner: entry.previous_owner.clone(),
            field_name: entry.field_name.clone(),
            source: entry.source,
            dispatched_at: Timestamp(entry.dispatched_at),
            crm_sync: entry.crm_sync.clone(),
            sla: entry.sla.map(|sla| SlaStateView {
                due_at: Timestamp(sla.due_at),
                status: sla.status,
            }),
        }
    }
}

/// One history entry with the `explanation` of its run (BEHAVIOR 18: `GET
/// /routers/{routerId}/dispatches/{entryId}`): the entry as the lists show it, plus what the run
/// found as it stood at `dispatched_at`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = ExplainedDispatchEntry, example = json!({
    "id": "01936b2a-7c00-7a00-8000-0000000000aa",
    "router_id": "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45",
    "router_revision": 1,
    "object_type": "contacts",
    "object_id": "01936b2a-7c00-7a00-8000-000000000002",
    "message": "Owner assigned",
    "success": true,
    "user": "ana.lopez@northwind.example",
    "reason": "rotation",
    "previous_owner": null,
    "field_name": "Contact owner",
    "source": "api",
    "dispatched_at": "2026-11-23T09:30:00.000Z",
    "crm_sync": null,
    "sla": null,
    "explanation": {
        "trigger": {"matched": true, "groups": [{"matched": true, "conditions": [{"field": "country", "operator": "equals", "value": "US", "actual": "US", "matched": true}]}]},
        "candidates": [
            {"user": "ana.lopez@northwind.example", "eligible": true, "reasons": []},
            {"user": "ben.okafor@northwind.example", "eligible": false, "reasons": ["out_of_office"]}
        ],
        "account_match": null,
        "sla": null
    }
}))]
pub struct ExplainedEntryView {
    /// The entry (BEHAVIOR 8's shape).
    #[serde(flatten)]
    pub entry: DispatchEntryView,
    /// The `explanation` of the entry's own run (BEHAVIOR 9's object: `trigger`, `candidates`,
    /// `account_match`, `sla`), as it stood at `dispatched_at`; each `actual` cut to 256
    /// characters. `null` for an entry written before snapshots were kept. A part too large to
    /// keep (only a trigger of thousands of conditions or very long values beside a pool of
    /// hundreds can be) is `{"omitted": "too large", "json_bytes": n, "sha256": "<hex>"}`.
    #[schema(value_type = Option<crate::dispatch::Explanation>)]
    pub explanation: Option<serde_json::Value>,
}

impl ExplainedEntryView {
    /// The view of `explained`.
    pub fn new(explained: &crate::model::dispatch::ExplainedEntry) -> Self {
        Self {
            entry: DispatchEntryView::new(&explained.entry),
            explanation: explained.explanation.as_ref().map(|s| s.as_json().clone()),
        }
    }
}

/// A member's assignments by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct ByReason {
    /// Assigned by the rotation.
    pub rotation: u64,
    /// Assigned as the owner of the contact's company.
    pub account_matching: u64,
    /// Assigned as the router's backup user.
    pub backup: u64,
    /// Assigned by an SLA reassignment (BEHAVIOR 14).
    pub sla_reassignment: u64,
}

impl ByReason {
    /// Every assignment, whatever its reason.
    pub fn total(&self) -> u64 {
        self.rotation + self.account_matching + self.backup + self.sla_reassignment
    }
}

/// One member's line of a router's fairness stats.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct MemberStats {
    /// The member's e-mail.
    pub user: String,
    /// Assignments in the window.
    pub assigned: u64,
    /// `assigned / total` (0 when total is 0).
    pub share: f64,
    /// What the distribution model aims at: percentage / 100 for a percentage router,
    /// 1 / (pool size) for round robin; `null` for members outside the pool.
    pub target_share: Option<f64>,
    /// The assignments by reason.
    pub by_reason: ByReason,
}

/// `GET /routers/{routerId}/stats` (BEHAVIOR 8): a router's assignments in `[from, to)`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(example = json!({
    "router_id": "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45",
    "from": "2026-11-01T00:00:00.000Z",
    "to": "2026-12-01T00:00:00.000Z",
    "total": 3,
    "members": [
        {"user": "ana.lopez@northwind.example", "assigned": 2, "share": 0.6666666666666666, "target_share": 0.5, "by_reason": {"rotation": 1, "account_matching": 1, "backup": 0, "sla_reassignment": 0}},
        {"user": "ben.okafor@northwind.example", "assigned": 1, "share": 0.3333333333333333, "target_share": 0.5, "by_reason": {"rotation": 1, "account_matching": 0, "backup": 0, "sla_reassignment": 0}}
    ]
}))]
pub struct RouterStats {
    /// The router.
    pub router_id: RouterId,
    /// Start of the window (included).
    pub from: Timestamp,
    /// End of the window (excluded).
    pub to: Timestamp,
    /// The router's assignments in the window.
    pub total: u64,
    /// The router's current pool in pool order, then anyone else assigned in the window (by
    /// e-mail).
    pub members: Vec<MemberStats>,
}
