//! The change log (BEHAVIOR 18): one audit event for each successful API write to an account's
//! routing configuration (routers, members, holiday calendars, webhook subscriptions), stored in
//! the same atomic write as the change it records.
//!
//! An event's id is a UUIDv7 made from its `at` (milliseconds), so an event is found by id
//! alone: its key is computed from the time its id carries ([`AuditEvent::at_of_id`]).

use crate::types::ids::AccountId;
use crate::types::omitted::{fit_within, pointer};
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// How long events are kept (BEHAVIOR 18: like history entries, 400 days).
pub const AUDIT_RETENTION_DAYS: i64 = crate::model::dispatch::DEFAULT_HISTORY_RETENTION_DAYS;

/// Largest compact JSON of an event's `changes` (bytes): 300 KiB, which leaves the event's
/// keys, actor and target far inside DynamoDB's 400 KB item. Larger `before`/`after` values are
/// replaced by placeholders ([`crate::types::omitted`]; `docs/decisions.md`).
pub const MAX_CHANGES_JSON_BYTES: usize = 300 * 1024;

/// What a write did (BEHAVIOR 18), as `<target type>.<verb>`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    ToSchema,
    strum::EnumIter,
    strum::IntoStaticStr,
    strum::EnumString,
)]
pub enum AuditAction {
    /// `POST /routers`.
    #[serde(rename = "router.created")]
    #[strum(serialize = "router.created")]
    RouterCreated,
    /// `PUT /routers/{id}/draft`.
    #[serde(rename = "router.draft_updated")]
    #[strum(serialize = "router.draft_updated")]
    RouterDraftUpdated,
    /// `DELETE /routers/{id}/draft`.
    #[serde(rename = "router.draft_deleted")]
    #[strum(serialize = "router.draft_deleted")]
    RouterDraftDeleted,
    /// `POST /routers/{id}/publish`.
    #[serde(rename = "router.published")]
    #[strum(serialize = "router.published")]
    RouterPublished,
    /// `POST /routers/{id}/unpublish`.
    #[serde(rename = "router.unpublished")]
    #[strum(serialize = "router.unpublished")]
    RouterUnpublished,
    /// `POST /routers/{id}/revisions/{n}/restore`.
    #[serde(rename = "router.restored")]
    #[strum(serialize = "router.restored")]
    RouterRestored,
    /// `DELETE /routers/{id}`.
    #[serde(rename = "router.archived")]
    #[strum(serialize = "router.archived")]
    RouterArchived,
    /// `PATCH /users/{id}` that changed a value.
    #[serde(rename = "member.updated")]
    #[strum(serialize = "member.updated")]
    MemberUpdated,
    /// `POST /holiday-calendars`.
    #[serde(rename = "holiday_calendar.created")]
    #[strum(serialize = "holiday_calendar.created")]
    HolidayCalendarCreated,
    /// `PUT /holiday-calendars/{id}` that changed a value.
    #[serde(rename = "holiday_calendar.updated")]
    #[strum(serialize = "holiday_calendar.updated")]
    HolidayCalendarUpdated,
    /// `DELETE /holiday-calendars/{id}`.
    #[serde(rename = "holiday_calendar.deleted")]
    #[strum(serialize = "holiday_calendar.deleted")]
    HolidayCalendarDeleted,
    /// `POST /webhooks`.
    #[serde(rename = "webhook.created")]
    #[strum(serialize = "webhook.created")]
    WebhookCreated,
    /// `PATCH /webhooks/{id}` that changed a value.
    #[serde(rename = "webhook.updated")]
    #[strum(serialize = "webhook.updated")]
    WebhookUpdated,
    /// `DELETE /webhooks/{id}`.
    #[serde(rename = "webhook.deleted")]
    #[strum(serialize = "webhook.deleted")]
    WebhookDeleted,
    /// `POST /webhooks/{id}/rotate-secret` (never any `changes`: a secret is never recorded).
    #[serde(rename = "webhook.secret_rotated")]
    #[strum(serialize = "webhook.secret_rotated")]
    WebhookSecretRotated,
}

impl AuditAction {
    /// The JSON name, e.g. `router.created`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The kind of resource an event is about (BEHAVIOR 18 `target.type`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    ToSchema,
    strum::EnumIter,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum TargetType {
    /// A router (its live configuration, draft, publication or archive).
    Router,
    /// An account member.
    Member,
    /// A holiday calendar.
    HolidayCalendar,
    /// A webhook subscription.
    Webhook,
}

impl TargetType {
    /// The JSON name, e.g. `holiday_calendar`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The type named `text`; `None` for any other text.
    pub fn parse(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

/// What an event is about: `{type, id}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub struct AuditTarget {
    /// The kind of resource.
    #[serde(rename = "type")]
    pub target_type: TargetType,
    /// Its id.
    #[schema(value_type = String, format = Uuid)]
    pub id: Uuid,
}

impl AuditTarget {
    /// The resource `id` of type `target_type`.
    pub fn new(target_type: TargetType, id: impl Into<Uuid>) -> Self {
        Self {
            target_type,
            id: id.into(),
        }
    }
}

/// Who made the change: the token's `client_id` and `sub` (the same API client).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AuditActor {
    /// The OAuth client the token was issued to.
    pub client_id: String,
    /// The token's subject.
    pub sub: String,
}

/// One changed key: its path (`name`, `settings.trigger`, `holidays`, ...) and its values
/// before and after, as the resource's shape shows them (`null` for an absent resource).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"path": "office_status", "before": true, "after": false}))]
pub struct AuditChange {
    /// The key's path in the resource's shape.
    pub path: String,
    /// Its value before the write (`null` on create), or the placeholder of a value too large
    /// to keep (`{"omitted": "too large", "json_bytes", "sha256"}`).
    #[schema(value_type = Value)]
    pub before: Value,
    /// Its value after the write (`null` on delete), or the placeholder of a value too large.
    #[schema(value_type = Value)]
    pub after: Value,
}

/// One audit event (BEHAVIOR 18).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEvent {
    /// UUIDv7 whose time is `at`.
    pub id: Uuid,
    /// The account whose configuration changed.
    pub account_id: AccountId,
    /// When (UTC, whole milliseconds).
    pub at: DateTime<Utc>,
    /// Who.
    pub actor: AuditActor,
    /// What they did.
    pub action: AuditAction,
    /// To what.
    pub target: AuditTarget,
    /// The keys that changed (empty for a router action that changed nothing and for a secret
    /// rotation), within [`MAX_CHANGES_JSON_BYTES`].
    pub changes: Vec<AuditChange>,
    /// When the event expires ([`AUDIT_RETENTION_DAYS`] after `at`): DynamoDB's TTL.
    pub expires_at: DateTime<Utc>,
}

impl AuditEvent {
    /// The event of `action` on `target` by `actor` in `account_id` at `now` (cut to whole
    /// milliseconds), with `changes` fitted within [`MAX_CHANGES_JSON_BYTES`]: the largest
    /// `before`/`after` values are replaced by placeholders until they fit.
    pub fn new(
        account_id: AccountId, actor: AuditActor, action: AuditAction, target: AuditTarget,
        changes: Vec<AuditChange>, now: DateTime<Utc>,
    ) -> Self {
        let at = now
            .duration_trunc(TimeDelta::milliseconds(1))
            .unwrap_or(now);
        Self {
            id: id_at(at),
            account_id,
            at,
            actor,
            action,
            target,
            changes: fit_changes(changes),
            // Whole seconds: DynamoDB's TTL attribute holds epoch seconds.
            expires_at: (at + chrono::Duration::days(AUDIT_RETENTION_DAYS))
                .duration_trunc(TimeDelta::seconds(1))
                .unwrap_or(at),
        }
    }

    /// The `at` an event id carries (its UUIDv7 time); `None` for an id that is not a UUIDv7
    /// (no event has it).
    pub fn at_of_id(id: Uuid) -> Option<DateTime<Utc>> {
        if id.get_version_num() != 7 {
            return None;
        }
        let (secs, nanos) = id.get_timestamp()?.to_unix();
        DateTime::from_timestamp(i64::try_from(secs).ok()?, nanos)
    }
}

/// The low 62 bits of a UUID (RFC 9562 `rand_b`), below the variant bits.
const RAND_B: u128 = (1 << 62) - 1;

/// The last event id made in this process, with its millisecond: [`id_at`] keeps the ids of one
/// millisecond increasing, so the events one process records in a millisecond list in the order
/// they were made (BEHAVIOR 18 orders by `at`, then id).
static LAST_ID: std::sync::Mutex<Option<(i64, u128)>> = std::sync::Mutex::new(None);

/// A UUIDv7 whose time is `at` (milliseconds) and whose other bits are random, above the last
/// one this process made in the same millisecond (RFC 9562 section 6.2, method 2: the random
/// part incremented when the fresh one is not higher).
fn id_at(at: DateTime<Utc>) -> Uuid {
    let secs = u64::try_from(at.timestamp()).unwrap_or(0);
    let ts = uuid::Timestamp::from_unix(uuid::NoContext, secs, at.timestamp_subsec_nanos());
    let fresh = Uuid::new_v7(ts);
    let ms = at.timestamp_millis();
    let mut last = LAST_ID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let id = match *last {
        Some((m, prev)) if m == ms && fresh.as_u128() <= prev && prev & RAND_B != RAND_B => {
            Uuid::from_u128(prev + 1)
        }
        _ => fresh,
    };
    *last = Some((ms, id.as_u128()));
    id
}

/// `changes` within [`MAX_CHANGES_JSON_BYTES`] of JSON (largest values replaced first).
fn fit_changes(changes: Vec<AuditChange>) -> Vec<AuditChange> {
    let mut value = serde_json::to_value(&changes).unwrap_or(Value::Null);
    let parts: Vec<String> = (0..changes.len())
        .flat_map(|i| {
            let i = i.to_string();
            [pointer(&[&i, "before"]), pointer(&[&i, "after"])]
        })
        .collect();
    fit_within(&mut value, &parts, MAX_CHANGES_JSON_BYTES);
    serde_json::from_value(value).unwrap_or(changes)
}

/// What `GET /audit-events` lists (BEHAVIOR 18): the account's events, or one target's, within
/// `[from, to)` when given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only the events about this resource.
    pub target: Option<AuditTarget>,
    /// Only the events at or after this instant.
    pub from: Option<DateTime<Utc>>,
    /// Only the events before this instant.
    pub to: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::omitted::Omitted;
    use chrono::TimeZone;
    use serde_json::json;

    fn event(changes: Vec<AuditChange>, now: DateTime<Utc>) -> AuditEvent {
        AuditEvent::new(
            AccountId::from(Uuid::nil()),
            AuditActor {
                client_id: "c".into(),
                sub: "c".into(),
            },
            AuditAction::RouterCreated,
            AuditTarget::new(TargetType::Router, Uuid::max()),
            changes,
            now,
        )
    }

    #[test]
    fn an_events_id_carries_its_time_to_the_millisecond() {
        let now = Utc.with_ymd_and_hms(2026, 11, 20, 9, 30, 0).unwrap()
            + chrono::Duration::nanoseconds(123_456_789);
        let e = event(vec![], now);
        assert_eq!(e.at.timestamp_subsec_nanos(), 123_000_000);
        assert_eq!(AuditEvent::at_of_id(e.id), Some(e.at));
        assert_eq!(AuditEvent::at_of_id(Uuid::new_v4()), None);
        assert_eq!(
            e.expires_at - e.at,
            chrono::Duration::days(400) - chrono::Duration::milliseconds(123),
            "BEHAVIOR 18: 400 days, in whole seconds (DynamoDB's TTL)"
        );
    }

    #[test]
    fn ids_made_in_one_millisecond_increase() {
        let now = Utc.with_ymd_and_hms(2026, 11, 20, 9, 30, 0).unwrap();
        let ids: Vec<Uuid> = (0..50).map(|_| event(vec![], now).id).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        assert!(ids.iter().all(|id| AuditEvent::at_of_id(*id) == Some(now)));
    }

    #[test]
    fn names_are_the_contracts() {
        assert_eq!(
            AuditAction::RouterDraftUpdated.as_str(),
            "router.draft_updated"
        );
        assert_eq!(
            serde_json::to_value(AuditAction::WebhookSecretRotated).unwrap(),
            json!("webhook.secret_rotated")
        );
        assert_eq!(
            TargetType::parse("holiday_calendar"),
            Some(TargetType::HolidayCalendar)
        );
        assert_eq!(TargetType::parse("Router"), None);
        assert_eq!(
            serde_json::to_value(AuditTarget::new(TargetType::Member, Uuid::nil())).unwrap(),
            json!({"type": "member", "id": Uuid::nil()})
        );
    }

    #[test]
    fn values_too_large_are_replaced_largest_first_and_the_rest_kept() {
        let trigger = json!({"groups": [{"conditions": [{"field": "f", "operator": "equals", "value": "v".repeat(290 * 1024)}]}]});
        let other = json!({"groups": [{"conditions": [{"field": "f", "operator": "equals", "value": "w".repeat(200 * 1024)}]}]});
        let changes = vec![
            AuditChange {
                path: "settings.trigger".into(),
                before: other.clone(),
                after: trigger.clone(),
            },
            AuditChange {
                path: "name".into(),
                before: json!("a"),
                after: json!("b"),
            },
        ];
        let e = event(changes, Utc::now());
        assert!(crate::types::limits::json_size(&e.changes) <= MAX_CHANGES_JSON_BYTES);
        assert_eq!(
            e.changes[0].after,
            Omitted::value_of(&trigger),
            "the largest value is the placeholder"
        );
        assert_eq!(e.changes[0].before, other, "the rest fits and is kept");
        assert_eq!(
            (e.changes[1].before.clone(), e.changes[1].after.clone()),
            (json!("a"), json!("b"))
        );
    }
}
