//! What dispatch stores: rotation state, the routing history (BEHAVIOR 8) with each
//! assignment's CRM sync state (BEHAVIOR 7), and the one atomic assignment write.

use super::member::Member;
use super::object_type::ObjectType;
use super::record::Record;
use crate::types::email::Email;
use crate::types::ids::{AccountId, MemberId, RecordId, RouterId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use uuid::Uuid;

/// A router's rotation state (BEHAVIOR 6, step 14). Internal: never in a response.
///
/// Stored as it serializes: each e-mail a plain string (`Email` is a transparent string), so an
/// item written when these fields were typed `String` reads unchanged, whatever its text (a
/// stored e-mail is not parsed again).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RotationState {
    /// Optimistic-concurrency version; 0 before the first rotation assignment.
    pub version: u64,
    /// E-mail of the member last assigned by rotation (`users` rotation).
    pub last_member: Option<Email>,
    /// Name of the team last used (`teams` rotation).
    pub last_team: Option<String>,
    /// Per team: e-mail of the member last assigned inside it (`teams` rotation).
    pub team_last_member: BTreeMap<String, Email>,
    /// Rotation assignments per member e-mail (`percentage`).
    pub counts: BTreeMap<Email, u64>,
    /// All rotation assignments of the router (`percentage`'s N).
    pub total: u64,
}

/// Why a member got a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
// The name (`rotation`, ...) is the same in JSON, in metrics and in a stats counter's attributes
// (strum); `AssignmentReason::iter()` walks them in `by_reason` order.
#[derive(strum::IntoStaticStr, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum AssignmentReason {
    /// The router's rotation chose them.
    Rotation,
    /// They own the company of the contact's e-mail domain.
    AccountMatching,
    /// Nobody was available; the router's backup user.
    Backup,
    /// The owner did not work the record in time: it went to the next eligible member
    /// (BEHAVIOR 14).
    SlaReassignment,
}

/// Where a dispatch came from (BEHAVIOR 8 `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DispatchSource {
    /// `POST /dispatch/router`.
    Api,
    /// A message of the dispatch queue.
    Queue,
    /// An SLA check that reassigned the record (BEHAVIOR 14).
    Sla,
}

/// Where an assignment's CRM sync stands (BEHAVIOR 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CrmSyncStatus {
    /// Committed; the first CRM request has not been answered yet (0 attempts).
    Pending,
    /// The CRM accepted the owner (a 2xx answer). Final.
    Synced,
    /// The last attempt failed with a failure that can pass by itself; another attempt is
    /// scheduled.
    Retrying,
    /// No attempt is left, or the failure cannot pass by itself. Final.
    Failed,
    /// The record's owner changed before a retry: the retry was dropped. Final.
    Superseded,
}

impl CrmSyncStatus {
    /// Whether the state never changes again (`synced`, `failed`, `superseded`).
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Pending | Self::Retrying)
    }
}

/// The CRM sync state of one assignment (BEHAVIOR 7): `{status, attempts, error}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"status": "retrying", "attempts": 1, "error": "CRM answered 503: Service Unavailable"}))]
pub struct CrmSyncState {
    /// Where the sync stands.
    pub status: CrmSyncStatus,
    /// Requests sent to the CRM so far (0 when none could be sent).
    pub attempts: u32,
    /// The last `crm_error` (BEHAVIOR 7's table); `null` once synced.
    pub error: Option<String>,
}

impl CrmSyncState {
    /// Before the first request is answered: `pending`, no attempt, no error.
    pub fn pending() -> Self {
        Self {
            status: CrmSyncStatus::Pending,
            attempts: 0,
            error: None,
        }
    }
}

/// The key of a history entry: its router, its time and its id (entries are kept per router,
/// newest first; `store::dynamodb::keys::dispatch_entry`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DispatchEntryKey {
    /// The router.
    pub router_id: RouterId,
    /// When the dispatch ran.
    pub dispatched_at: DateTime<Utc>,
    /// The entry's id.
    pub id: Uuid,
}

fn first_revision() -> u64 {
    super::router::FIRST_REVISION
}

/// Default time a history entry is kept (BEHAVIOR 8): 400 days.
pub const DEFAULT_HISTORY_RETENTION_DAYS: i64 = 400;

/// One entry of the routing history (BEHAVIOR 8): what one dispatch of an existing,
/// non-archived router decided. An assignment's entry is written in its assignment transaction,
/// the other outcomes' entries with one write after the evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchEntry {
    /// Entry id (UUID v7).
    pub id: Uuid,
    /// The router's account.
    pub account_id: AccountId,
    /// The router.
    pub router_id: RouterId,
    /// The revision of the router the run evaluated (BEHAVIOR 8 and 15). An entry stored
    /// before revisions existed reads as revision 1.
    #[serde(default = "first_revision")]
    pub router_revision: u64,
    /// The router's object type.
    pub object_type: ObjectType,
    /// The `object_id` of the request, as sent (trimmed); for an assignment the record's id.
    pub object_id: String,
    /// The outcome text (`Owner assigned`, `Trigger did not match`, ...).
    pub message: String,
    /// True only for an assignment.
    pub success: bool,
    /// The assigned member's e-mail; `None` when nothing was assigned. Stored as a plain string,
    /// read as written (not parsed again).
    pub user: Option<Email>,
    /// Why that member; `None` when nothing was assigned.
    pub reason: Option<AssignmentReason>,
    /// The owner field's value before the assignment; `None` when nothing was assigned or the
    /// record had no owner.
    pub previous_owner: Option<String>,
    /// Display name of the owner field; `None` when nothing was assigned.
    pub field_name: Option<String>,
    /// Internal name of the owner field that was set (internal: CRM retries read it).
    pub owner_field: Option<String>,
    /// `api` or `queue`.
    pub source: DispatchSource,
    /// When the dispatch ran.
    pub dispatched_at: DateTime<Utc>,
    /// The CRM sync state of an assignment by a router with `has_integration`; `None` otherwise.
    pub crm_sync: Option<CrmSyncState>,
    /// The SLA check the assignment started (BEHAVIOR 14); `None` when it started none.
    #[serde(default)]
    pub sla: Option<super::sla::SlaState>,
    /// When the entry expires (BEHAVIOR 8: 400 days by default): epoch seconds, DynamoDB's TTL
    /// attribute.
    #[serde(with = "chrono::serde::ts_seconds")]
    pub expires_at: DateTime<Utc>,
}

impl DispatchEntry {
    /// The entry of a run of router `router_id` (of `account_id`, for `object_type`) that
    /// assigned nobody: `message` says why (`Trigger did not match`, ...; BEHAVIOR 8), every
    /// assignment field is `None`; `router_revision` is 1 (a run of a later revision sets it). It expires [`DEFAULT_HISTORY_RETENTION_DAYS`] after
    /// `dispatched_at`; a deployment with another retention sets `expires_at` itself.
    pub fn unassigned(
        account_id: AccountId, router_id: RouterId, object_type: ObjectType, object_id: String,
        message: String, source: DispatchSource, dispatched_at: DateTime<Utc>,
    ) -> Self {
        Self {
            id: Uuid::now_v7(),
            account_id,
            router_id,
            router_revision: super::router::FIRST_REVISION,
            object_type,
            object_id,
            message,
            success: false,
            user: None,
            reason: None,
            previous_owner: None,
            field_name: None,
            owner_field: None,
            source,
            dispatched_at,
            crm_sync: None,
            sla: None,
            expires_at: dispatched_at + chrono::Duration::days(DEFAULT_HISTORY_RETENTION_DAYS),
        }
    }

    /// The entry's key.
    pub fn key(&self) -> DispatchEntryKey {
        DispatchEntryKey {
            router_id: self.router_id,
            dispatched_at: self.dispatched_at,
            id: self.id,
        }
    }

    /// The record id of the entry's `object_id`, when it is a UUID (the history of a record
    /// lists only such entries).
    pub fn record_id(&self) -> Option<RecordId> {
        RecordId::try_parse(&self.object_id)
    }
}

/// Longest `actual` string a decision snapshot keeps, in characters (BEHAVIOR 18).
pub const SNAPSHOT_ACTUAL_CHARS: usize = 256;

/// Largest compact JSON of a decision snapshot (bytes): 300 KiB, far inside DynamoDB's 400 KB
/// item for the snapshot's own item (`docs/dynamodb.md`); [`DecisionSnapshot::new`] keeps it so.
pub const MAX_SNAPSHOT_JSON_BYTES: usize = 300 * 1024;

/// The decision snapshot of a history entry (BEHAVIOR 18): the `explanation` of the run that
/// wrote the entry (BEHAVIOR 9's object, `sla` included), as JSON, built from the values that
/// run read. Each `actual` string is cut to its first [`SNAPSHOT_ACTUAL_CHARS`] characters, and
/// the whole is at most [`MAX_SNAPSHOT_JSON_BYTES`]: beyond, the conditions' `value`s are
/// replaced by placeholders ([`crate::types::omitted`]) largest first, then the SLA's
/// `worked_values`, then the trigger's `groups`, then the `candidates` (`docs/decisions.md`,
/// "Audit sizes"). Its stored item passes the size rule of every item too
/// ([`crate::store::size::check_write`], checked before each write on both stores).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DecisionSnapshot(serde_json::Value);

impl DecisionSnapshot {
    /// The snapshot of `explanation` (the JSON of a run's explanation), cut and fitted.
    pub fn new(mut explanation: serde_json::Value) -> Self {
        use crate::types::omitted::{fit_within, pointer};
        let mut values = Vec::new();
        if let Some(groups) = explanation
            .pointer_mut("/trigger/groups")
            .and_then(serde_json::Value::as_array_mut)
        {
            for (g, group) in groups.iter_mut().enumerate() {
                let Some(conditions) = group
                    .get_mut("conditions")
                    .and_then(serde_json::Value::as_array_mut)
                else {
                    continue;
                };
                for (c, condition) in conditions.iter_mut().enumerate() {
                    if let Some(serde_json::Value::String(actual)) = condition.get_mut("actual") {
                        if let Some((cut, _)) = actual.char_indices().nth(SNAPSHOT_ACTUAL_CHARS) {
                            actual.truncate(cut);
                        }
                    }
                    let (g, c) = (g.to_string(), c.to_string());
                    values.push(pointer(&[
                        "trigger",
                        "groups",
                        &g,
                        "conditions",
                        &c,
                        "value",
                    ]));
                }
            }
        }
        let budget = MAX_SNAPSHOT_JSON_BYTES;
        for parts in [
            values,
            // The one part of the router's configuration a snapshot carries whole: an SLA's
            // worked values, which the router's own size rule bounds only at its item's size.
            vec![pointer(&["sla", "worked_values"])],
            vec![pointer(&["trigger", "groups"])],
            vec![pointer(&["candidates"])],
        ] {
            if fit_within(&mut explanation, &parts, budget) <= budget {
                break;
            }
        }
        Self(explanation)
    }

    /// A snapshot as a store read it back (already cut and fitted when it was made).
    pub fn stored(explanation: serde_json::Value) -> Self {
        Self(explanation)
    }

    /// The snapshot as JSON (BEHAVIOR 9's `explanation` shape).
    pub fn as_json(&self) -> &serde_json::Value {
        &self.0
    }
}

/// A decision snapshot with the history entry it explains: what the store keeps of a snapshot
/// (one item naming the entry), which the size rule sizes as stored
/// ([`crate::store::size::check_write`]).
#[derive(Debug, Clone, Copy)]
pub struct SnapshotOf<'a> {
    /// The entry the snapshot explains.
    pub entry: &'a DispatchEntry,
    /// The snapshot.
    pub snapshot: &'a DecisionSnapshot,
}

/// A history entry with its decision snapshot (BEHAVIOR 18): `None` for an entry written before
/// snapshots existed.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainedEntry {
    /// The entry.
    pub entry: DispatchEntry,
    /// The `explanation` of its run.
    pub explanation: Option<DecisionSnapshot>,
}

/// How many assignments one member got for one reason (`GET /routers/{id}/stats`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignmentTally {
    /// The member's e-mail.
    pub user: String,
    /// The reason.
    pub reason: AssignmentReason,
    /// The number of assignments.
    pub count: u64,
}

/// The de-duplication id of a queued dispatch: its SQS message id, which every redelivery of the
/// message keeps (a standard queue delivers at least once). The write that ends the run stores a
/// marker under it, in the same transaction, and a redelivered message that finds the marker does
/// nothing. Not the HTTP `Idempotency-Key` (BEHAVIOR 10, [`crate::idempotency`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MessageDeduplicationId(String);

impl MessageDeduplicationId {
    /// The id of the message whose SQS message id is `message_id`.
    pub fn new(message_id: impl Into<String>) -> Self {
        Self(message_id.into())
    }

    /// The message id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The rotation state a rotation assignment writes (BEHAVIOR 6 step 14).
#[derive(Debug, Clone, PartialEq)]
pub struct RotationWrite {
    /// The router whose rotation moves.
    pub router_id: RouterId,
    /// Its next state.
    pub next: RotationState,
    /// The version of the state the run read: the write is conditional on it.
    pub read_version: u64,
}

/// Everything one assignment writes, atomically (BEHAVIOR 6, "Assignment writes").
#[derive(Debug, Clone, PartialEq)]
pub struct AssignmentWrite {
    /// The record with the owner set, `*_owner_assigned_date` and `updated_at` refreshed.
    pub record: Record,
    /// The record's version when read.
    pub record_version: u64,
    /// The version of the router item the run read (its `revision` is `entry.router_revision`):
    /// the write commits only while the router is still at it, so an assignment is never made
    /// by a revision that is no longer live (BEHAVIOR 15; a `ConditionCheck` on the router).
    pub router_version: u64,
    /// The router's new rotation state (rotation assignments only).
    pub rotation: Option<RotationWrite>,
    /// The chosen member with counters incremented and the version read (when counters apply).
    pub member: Option<(Member, u64)>,
    /// The chosen member's id and the version read (consistently) at the choice: the write is
    /// conditional on the member being active at that version even when its counters are not
    /// written (a `ConditionCheck`), so a member switched off a moment ago is never assigned.
    pub chosen: (MemberId, u64),
    /// Calendar month (UTC) of the assignment, `YYYY-MM`.
    pub month: String,
    /// The account's monthly quota; the count may not pass it.
    pub quota: Option<u64>,
    /// The history entry of the assignment (BEHAVIOR 8), written in the same transaction.
    pub entry: DispatchEntry,
    /// The entry's decision snapshot (BEHAVIOR 18), written in the same transaction; `None`
    /// writes none.
    pub snapshot: Option<DecisionSnapshot>,
    /// The queued message's de-duplication id, marking its work as done (queued runs only).
    pub deduplication_id: Option<MessageDeduplicationId>,
    /// The response of an HTTP `Idempotency-Key` request, stored with the assignment
    /// (BEHAVIOR 10).
    pub completion: Option<crate::idempotency::IdempotencyCompletion>,
    /// Work the assignment causes (its CRM sync, ...) and the due item it settles, if any
    /// (`docs/design.md`, "Work that happens later"), written in the same transaction.
    pub due: super::due::DueChanges,
    /// For an SLA reassignment (BEHAVIOR 14): the entry whose check it ends. Its `sla.status`
    /// moves from `pending` to `reassigned` in the same transaction, conditional on `pending`
    /// (of two runs of one check at most one commits; the other gets
    /// [`crate::store::StoreError::LeaseLost`]).
    pub ends_check: Option<DispatchEntryKey>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    /// An unassigned entry carries no assignment and is kept the default 400 days (BEHAVIOR 8).
    #[test]
    fn an_unassigned_entry_has_no_assignment_and_expires_after_400_days() {
        let at = DateTime::parse_from_rfc3339("2026-11-23T09:30:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let entry = DispatchEntry::unassigned(
            AccountId::from(Uuid::new_v4()),
            RouterId::from(Uuid::new_v4()),
            ObjectType::Deals,
            "42".into(),
            "Trigger did not match".into(),
            DispatchSource::Queue,
            at,
        );
        assert!(!entry.success);
        assert_eq!(entry.message, "Trigger did not match");
        assert_eq!(entry.object_id, "42");
        assert_eq!(entry.dispatched_at, at);
        assert_eq!((entry.user, entry.reason), (None, None));
        assert_eq!((entry.previous_owner, entry.field_name), (None, None));
        assert_eq!(entry.owner_field, None);
        assert!(entry.crm_sync.is_none() && entry.sla.is_none());
        assert_eq!(
            entry.expires_at.to_rfc3339(),
            "2027-12-28T09:30:00+00:00",
            "400 days later"
        );
    }

    /// A reason's name in metrics and in stats counters' attributes (strum) is its JSON name
    /// (serde), in `by_reason` order.
    #[test]
    fn a_reasons_name_is_its_json_name() {
        let names: Vec<&str> = AssignmentReason::iter().map(<&str>::from).collect();
        assert_eq!(
            names,
            ["rotation", "account_matching", "backup", "sla_reassignment"]
        );
        for reason in AssignmentReason::iter() {
            let json = serde_json::to_value(reason).unwrap();
            assert_eq!(json, <&str>::from(reason), "{reason:?}");
        }
    }
}

#[cfg(test)]
mod snapshot_size_tests {
    use super::*;
    use serde_json::json;

    /// A run's explanation as explain shows it: a trigger of `conditions` conditions whose
    /// record values are `actual_chars` long, and a pool of `pool` members, every third one
    /// unavailable for two reasons.
    fn explanation(pool: usize, conditions: usize, actual_chars: usize) -> serde_json::Value {
        let conditions: Vec<_> = (0..conditions)
            .map(|i| {
                json!({"field": format!("field_{i}"), "operator": "equals",
                    "value": "x".repeat(64), "actual": "a".repeat(actual_chars), "matched": false})
            })
            .collect();
        let candidates: Vec<_> = (0..pool)
            .map(|i| {
                let reasons = if i % 3 == 0 {
                    json!(["out_of_office", "outside_working_hours"])
                } else {
                    json!([])
                };
                json!({"user": format!("member.{i:04}@northwind.example"),
                    "eligible": i % 3 != 0, "reasons": reasons})
            })
            .collect();
        json!({
            "trigger": {"matched": true, "groups": [{"matched": true, "conditions": conditions}]},
            "candidates": candidates,
            "account_match": {"company_id": "01936b2a-7c00-7a00-8000-000000000001",
                "owner": "ana.lopez@northwind.example", "eligible": false},
            "sla": null
        })
    }

    fn bytes(snapshot: &DecisionSnapshot) -> usize {
        crate::types::limits::json_size(snapshot.as_json())
    }

    /// An SLA's worked values are part of the snapshot that its router's size alone bounds:
    /// past the budget they are the first part of the configuration replaced by a placeholder,
    /// and the stored item (entry and snapshot) passes the size rule.
    #[test]
    fn an_slas_worked_values_are_fitted_and_the_stored_item_passes_the_size_rule() {
        let mut run = explanation(500, 3, 20);
        let worked: Vec<String> = (0..27_000).map(|i| format!("stage-{i:06}")).collect();
        run["sla"] = json!({"minutes": 30, "worked_field": "lead_status", "worked_values": worked});
        assert!(crate::types::limits::json_size(&run) > MAX_SNAPSHOT_JSON_BYTES);
        let fitted = DecisionSnapshot::new(run);
        assert!(
            bytes(&fitted) <= MAX_SNAPSHOT_JSON_BYTES,
            "{}",
            bytes(&fitted)
        );
        assert!(crate::types::omitted::Omitted::is_placeholder(
            &fitted.as_json()["sla"]["worked_values"]
        ));
        assert_eq!(fitted.as_json()["sla"]["minutes"], 30);
        assert_eq!(
            fitted.as_json()["candidates"].as_array().unwrap().len(),
            500
        );
        let at = chrono::Utc::now();
        let entry = DispatchEntry {
            id: uuid::Uuid::now_v7(),
            account_id: uuid::Uuid::new_v4().into(),
            router_id: uuid::Uuid::new_v4().into(),
            router_revision: 1,
            object_type: crate::model::object_type::ObjectType::Contacts,
            object_id: uuid::Uuid::new_v4().to_string(),
            message: "Owner assigned".into(),
            success: true,
            user: Some(Email::parse("ana@example.com").unwrap()),
            reason: Some(AssignmentReason::Rotation),
            previous_owner: None,
            field_name: Some("Contact owner".into()),
            owner_field: Some("contact_owner".into()),
            source: DispatchSource::Api,
            dispatched_at: at,
            crm_sync: None,
            sla: None,
            expires_at: at,
        };
        let stored = SnapshotOf {
            entry: &entry,
            snapshot: &fitted,
        };
        assert!(crate::store::size::check_write(&stored).is_ok());
    }

    #[test]
    fn a_snapshot_cuts_actual_values_and_stays_within_its_budget_at_a_pool_of_500() {
        // docs/performance.md ("Decision snapshots") quotes these sizes.
        let small = DecisionSnapshot::new(explanation(10, 3, 20));
        let large = DecisionSnapshot::new(explanation(500, 3, 20));
        assert!(bytes(&small) < 2_000, "{}", bytes(&small));
        assert!(bytes(&large) < 50_000, "{}", bytes(&large));
        // Long record values: each `actual` cut to 256 characters (BEHAVIOR 18).
        let long = DecisionSnapshot::new(explanation(500, 20, 65_536));
        let actuals: Vec<usize> = long.as_json()["trigger"]["groups"][0]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["actual"].as_str().unwrap().chars().count())
            .collect();
        assert!(
            actuals.iter().all(|n| *n == SNAPSHOT_ACTUAL_CHARS),
            "{actuals:?}"
        );
        assert!(bytes(&long) < 60_000, "{}", bytes(&long));
        // Whatever the trigger, within the budget (its values replaced largest first).
        let mut huge = explanation(500, 200, 10);
        for c in huge["trigger"]["groups"][0]["conditions"]
            .as_array_mut()
            .unwrap()
        {
            c["value"] = json!("v".repeat(4_000));
        }
        let fitted = DecisionSnapshot::new(huge);
        assert!(
            bytes(&fitted) <= MAX_SNAPSHOT_JSON_BYTES,
            "{}",
            bytes(&fitted)
        );
        assert_eq!(
            fitted.as_json()["candidates"].as_array().unwrap().len(),
            500
        );
        eprintln!(
            "snapshot bytes: pool 10 {}, pool 500 {}, pool 500 with 20 long values {}",
            bytes(&small),
            bytes(&large),
            bytes(&long)
        );
    }
}
