//! Conversion between the model and DynamoDB items, and the expressions the adapter writes.
//!
//! Items are the model serialised by `serde_dynamo` (attributes named as the model's fields),
//! plus the key attributes of [`crate::store::dynamodb::keys`] and `item_type`. `None` values are left out
//! of the item rather than written as `NULL`: a `NULL` index key is a `ValidationException`, and
//! conditions such as `attribute_not_exists(archived_at)` need an absent attribute.
//!
//! The items of `Idempotency-Key` requests and queue markers are in [`idempotency`], those of
//! due work in [`due`]; the entities' items and the common expressions here.

pub mod audit;
pub mod due;
pub mod idempotency;

use crate::fields::definition::FieldDefinition;
use crate::model::holiday_calendar::HolidayCalendar;
use crate::model::sla::SlaStatus;
use crate::model::webhook::{HealthChange, WebhookDelivery, WebhookSubscription};
use crate::model::{
    Account, ApiClient, CrmSyncState, CrmSyncStatus, DispatchEntry, Member, MemberIdentity, Record,
    Role, RotationState, Router, RouterDraft, RouterRevision, Team,
};
use crate::store::dynamodb::keys::{self, IndexKey, Key};
use crate::store::size::StoredItem;
use crate::store::{StoreError, StoreResult, UniqueKey};
use crate::types::ids::{AccountId, RecordId, RouterId};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;

/// A DynamoDB item.
pub type Item = HashMap<String, AttributeValue>;

/// Attribute of a guard holding the id of the record that claims it.
pub const GUARD_RECORD_ID: &str = "record_id";
/// Attribute of a count item (monthly assignments, routers, subscriptions, ...) holding the count.
pub const COUNT: &str = "count";
/// The number a count item (a monthly count, an account's count of routers, calendars or
/// subscriptions) holds in [`COUNT`]: 0 without the attribute.
///
/// Errors: an attribute that is not a whole number; each caller says what that means.
pub fn count_of(item: &Item) -> Result<u64, std::num::ParseIntError> {
    match item.get(COUNT) {
        Some(AttributeValue::N(v)) => v.parse(),
        _ => Ok(0),
    }
}

/// Attribute of a field definition item holding its definition order.
pub const DEFINED_AT: &str = "defined_at";
/// Attribute of a message de-duplication marker (and of an `Idempotency-Key` request): expiry
/// (epoch seconds) for DynamoDB's TTL.
pub const EXPIRES_AT: &str = "expires_at";

/// A string attribute.
pub fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

/// A number attribute.
pub fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// A malformed item or an SDK failure, as a backend error.
pub fn backend(e: impl Into<crate::error::BoxError>) -> StoreError {
    StoreError::Backend(e.into())
}

/// The count a count item holds ([`COUNT`]; 0 when the item has none).
///
/// Errors: a count that is not a whole number from 0 to `u64::MAX` (a malformed item).
pub fn count_in(item: &Item) -> StoreResult<u64> {
    match item.get(COUNT) {
        Some(AttributeValue::N(v)) => v.parse().map_err(backend),
        _ => Ok(0),
    }
}

/// The `PK`/`SK` attributes of `key`.
pub fn key_attributes(key: &Key) -> Item {
    HashMap::from([
        (keys::PK.to_string(), s(&key.pk)),
        (keys::SK.to_string(), s(&key.sk)),
    ])
}

/// The item of `value` under `key`, with optional GSI1 / GSI2 keys.
///
/// Errors: the value does not serialise (a bug, reported as a backend error).
pub fn item_of<T: Serialize>(
    item_type: &str, value: &T, key: &Key, gsi1: Option<&IndexKey>, gsi2: Option<&IndexKey>,
) -> StoreResult<Item> {
    let mut item: Item = serde_dynamo::aws_sdk_dynamodb_1::to_item(value).map_err(backend)?;
    item.retain(|_, v| !matches!(v, AttributeValue::Null(_)));
    item.extend(key_attributes(key));
    item.insert(keys::ITEM_TYPE.to_string(), s(item_type));
    if let Some(k) = gsi1 {
        item.insert(keys::GSI1PK.to_string(), s(&k.pk));
        item.insert(keys::GSI1SK.to_string(), s(&k.sk));
    }
    if let Some(k) = gsi2 {
        item.insert(keys::GSI2PK.to_string(), s(&k.pk));
        item.insert(keys::GSI2SK.to_string(), s(&k.sk));
    }
    Ok(item)
}

/// The model value of an item (extra attributes such as keys are ignored).
///
/// Errors: the item does not have the model's shape.
pub fn from_item<T: DeserializeOwned>(item: Item) -> StoreResult<T> {
    serde_dynamo::aws_sdk_dynamodb_1::from_item(item).map_err(backend)
}

/// An account item.
pub fn account(a: &Account) -> StoreResult<(Key, Item)> {
    let key = keys::account(a.id);
    let item = item_of("account", a, &key, None, None)?;
    Ok((key, item))
}

/// An API client item.
pub fn client(c: &ApiClient) -> StoreResult<(Key, Item)> {
    let key = keys::client(&c.client_id);
    let item = item_of("client", c, &key, None, None)?;
    Ok((key, item))
}

/// A role item.
pub fn role(r: &Role) -> StoreResult<(Key, Item)> {
    let key = keys::role(r.id);
    let item = item_of(
        "role",
        r,
        &key,
        None,
        Some(&keys::role_index(r.account_id, r.id)),
    )?;
    Ok((key, item))
}

/// A member item (GSI1 while active).
pub fn member(m: &Member) -> StoreResult<(Key, Item)> {
    let key = keys::member(m.id);
    let (active, all) = keys::member_index(m.account_id, m.email.as_str(), m.id, m.is_active());
    let item = item_of("member", m, &key, active.as_ref(), Some(&all))?;
    Ok((key, item))
}

/// The item that finds member `m` by e-mail in its account: its identity
/// (`id`, `account_id`, `email`, `active`), which never changes once provisioned.
pub fn member_email(m: &Member) -> StoreResult<(Key, Item)> {
    let key = keys::member_email(m.account_id, &m.email);
    let item = item_of("member_email", &MemberIdentity::from(m), &key, None, None)?;
    Ok((key, item))
}

/// The marker that every member of `account_id` has its [`member_email`] item.
pub fn member_emails_complete(account_id: AccountId) -> (Key, Item) {
    let key = keys::member_emails_complete(account_id);
    let mut item = key_attributes(&key);
    item.insert(keys::ITEM_TYPE.into(), s("member_emails_complete"));
    (key, item)
}

/// A team item.
pub fn team(t: &Team) -> StoreResult<(Key, Item)> {
    let key = keys::team(t.id);
    let index = keys::team_index(t.account_id, t.created_at, t.id);
    let item = item_of("team", t, &key, None, Some(&index))?;
    Ok((key, item))
}

/// A field definition item of `account_id`; `defined_at` orders the account's definitions.
pub fn field_definition(
    account_id: AccountId, d: &FieldDefinition, defined_at: &str,
) -> StoreResult<(Key, Item)> {
    let key = keys::field_definition(account_id, d.object_type, &d.internal_name);
    let mut item = item_of("field", d, &key, None, None)?;
    item.insert("account_id".into(), s(account_id.to_string()));
    item.insert(DEFINED_AT.into(), s(defined_at));
    Ok((key, item))
}

/// A router item (GSI1 while active).
pub fn router(r: &Router) -> StoreResult<(Key, Item)> {
    let key = keys::router(r.id);
    let (active, all) =
        keys::router_index(r.account_id, r.created_at, r.id, r.archived_at.is_none());
    let item = item_of("router", r, &key, active.as_ref(), Some(&all))?;
    Ok((key, item))
}

/// A router revision item (BEHAVIOR 15), in its router's partition.
pub fn router_revision(r: &RouterRevision) -> StoreResult<(Key, Item)> {
    let key = keys::router_revision(r.router_id, r.revision);
    let item = item_of("router_revision", r, &key, None, None)?;
    Ok((key, item))
}

/// A router draft item (BEHAVIOR 15), in its router's partition.
pub fn router_draft(d: &RouterDraft) -> StoreResult<(Key, Item)> {
    let key = keys::router_draft(d.router_id);
    let item = item_of("router_draft", d, &key, None, None)?;
    Ok((key, item))
}

/// The router item exists and is at `version` (a router stored before versions existed has
/// no `version` attribute and is at 0).
pub fn router_at_version(version: u64) -> Expr {
    let text = if version == 0 {
        "attribute_exists(#pk) AND (attribute_not_exists(#version) OR #version = :version)"
    } else {
        "attribute_exists(#pk) AND #version = :version"
    };
    Expr::new(text)
        .name("#pk", keys::PK)
        .name("#version", "version")
        .value(":version", n(version))
}

/// The draft exists and has the tag `etag`.
pub fn draft_tagged(etag: &crate::types::etag::ETag) -> Expr {
    Expr::new("attribute_exists(#pk) AND #etag = :etag")
        .name("#pk", keys::PK)
        .name("#etag", "etag")
        .value(":etag", s(etag.as_str()))
}

/// A record item (GSI1 while active).
pub fn record(r: &Record) -> StoreResult<(Key, Item)> {
    let key = keys::record(r.id);
    let (active, all) = keys::record_index(
        r.account_id,
        r.object_type,
        r.created_at,
        r.id,
        r.is_active(),
    );
    let item = item_of("record", r, &key, active.as_ref(), Some(&all))?;
    Ok((key, item))
}

/// The uniqueness guard of `unique_key` held by `record`.
pub fn guard(r: &Record, unique_key: &UniqueKey) -> (Key, Item) {
    let key = keys::guard(
        r.account_id,
        r.object_type,
        &unique_key.field,
        &unique_key.value,
    );
    let mut item = key_attributes(&key);
    item.insert(keys::ITEM_TYPE.into(), s("guard"));
    item.insert(GUARD_RECORD_ID.into(), s(r.id.to_string()));
    item.insert("account_id".into(), s(r.account_id.to_string()));
    item.insert("object_type".into(), s(r.object_type.as_str()));
    item.insert("field".into(), s(&unique_key.field));
    (key, item)
}

/// A router's rotation state item.
pub fn rotation(router_id: RouterId, state: &RotationState) -> StoreResult<(Key, Item)> {
    let key = keys::rotation(router_id);
    let mut item = item_of("rotation", state, &key, None, None)?;
    item.insert("router_id".into(), s(router_id.to_string()));
    Ok((key, item))
}

/// A history entry item (BEHAVIOR 8): in its router's partition, and in its record's history
/// (GSI2) when the object id is a record id. `expires_at` (epoch seconds) is the TTL attribute.
pub fn dispatch_entry(e: &DispatchEntry) -> StoreResult<(Key, Item)> {
    let key = keys::dispatch_entry(e.router_id, e.dispatched_at, e.id);
    let by_record = e.record_id().map(|record_id| {
        keys::record_dispatch_index(
            e.account_id,
            e.object_type,
            record_id,
            e.dispatched_at,
            e.id,
        )
    });
    let item = item_of("dispatch", e, &key, None, by_record.as_ref())?;
    Ok((key, item))
}

/// Attribute of a history entry holding its CRM sync state.
pub const CRM_SYNC: &str = "crm_sync";

/// The CRM sync state as an attribute value (a map).
///
/// Errors: the value does not serialise (a bug, reported as a backend error).
pub fn crm_sync_value(state: &CrmSyncState) -> StoreResult<AttributeValue> {
    serde_dynamo::aws_sdk_dynamodb_1::to_attribute_value(state).map_err(backend)
}

/// Attribute of a history entry holding its SLA check (BEHAVIOR 14).
pub const SLA: &str = "sla";

/// An SLA check's status as an attribute value.
///
/// Errors: the value does not serialise (a bug, reported as a backend error).
pub fn sla_status_value(status: SlaStatus) -> StoreResult<AttributeValue> {
    serde_dynamo::aws_sdk_dynamodb_1::to_attribute_value(status).map_err(backend)
}

/// A webhook subscription item (BEHAVIOR 13), in its account's partition.
pub fn webhook(w: &WebhookSubscription) -> StoreResult<(Key, Item)> {
    let key = keys::webhook(w.account_id, w.id);
    let item = item_of("webhook", w, &key, None, None)?;
    Ok((key, item))
}

/// Attribute of a holiday calendar: how many things name it (BEHAVIOR 17; absent = 0).
pub const REFERENCES: &str = "references";

/// A holiday calendar item (no references yet).
pub fn holiday_calendar(c: &HolidayCalendar) -> StoreResult<(Key, Item)> {
    let key = keys::holiday_calendar(c.account_id, c.id);
    let item = item_of("holiday_calendar", c, &key, None, None)?;
    Ok((key, item))
}

/// The update that writes `c` over its stored calendar, keeping its references. The update
/// alone (no condition).
///
/// Errors: the calendar does not serialise (a bug, reported as a backend error).
pub fn holiday_calendar_update(c: &HolidayCalendar) -> StoreResult<Expr> {
    let all: Item = serde_dynamo::aws_sdk_dynamodb_1::to_item(c).map_err(backend)?;
    let mut e = Expr::new("");
    let (mut set, mut remove) = (Vec::new(), Vec::new());
    for (i, (name, value)) in all.into_iter().enumerate() {
        let (placeholder, bound) = (format!("#a{i}"), format!(":v{i}"));
        e = e.name(&placeholder, &name);
        if matches!(value, AttributeValue::Null(_)) {
            remove.push(placeholder);
        } else {
            set.push(format!("{placeholder} = {bound}"));
            e = e.value(&bound, value);
        }
    }
    e.text = format!("SET {}", set.join(", "));
    if !remove.is_empty() {
        e.text = format!("{} REMOVE {}", e.text, remove.join(", "));
    }
    Ok(e)
}

/// Attribute of a webhook subscription: since when its deliveries have all failed.
pub const FAILING_SINCE: &str = "failing_since";

/// The update that writes `w` over its stored subscription but for its health: every attribute
/// of `w` is set (an unset optional one removed), `failing_since` is kept, or removed when
/// `reset_health`. The update alone (no condition).
///
/// Errors: the subscription does not serialise (a bug, reported as a backend error).
pub fn webhook_update(w: &WebhookSubscription, reset_health: bool) -> StoreResult<Expr> {
    let all: Item = serde_dynamo::aws_sdk_dynamodb_1::to_item(w).map_err(backend)?;
    let mut e = Expr::new("");
    let (mut set, mut remove) = (Vec::new(), Vec::new());
    for (i, (name, value)) in all.into_iter().enumerate() {
        if name == FAILING_SINCE {
            continue;
        }
        let (placeholder, bound) = (format!("#a{i}"), format!(":v{i}"));
        e = e.name(&placeholder, &name);
        if matches!(value, AttributeValue::Null(_)) {
            remove.push(placeholder);
        } else {
            set.push(format!("{placeholder} = {bound}"));
            e = e.value(&bound, value);
        }
    }
    if reset_health {
        e = e.name("#failing_since", FAILING_SINCE);
        remove.push("#failing_since".into());
    }
    e.text = format!("SET {}", set.join(", "));
    if !remove.is_empty() {
        e.text = format!("{} REMOVE {}", e.text, remove.join(", "));
    }
    Ok(e)
}

/// The update of a subscription's health by a delivery attempt ([`HealthChange`]) and its
/// condition: the subscription exists, and for `DisableFailing` its `failing_since` is still
/// the one read. A disabling change moves `version` and sets `updated_at`.
///
/// Errors: a value that does not serialise (a bug, reported as a backend error).
pub fn health_update(change: &HealthChange) -> StoreResult<(Expr, String)> {
    let time = |at: &DateTime<Utc>| -> StoreResult<AttributeValue> {
        serde_dynamo::aws_sdk_dynamodb_1::to_attribute_value(at).map_err(backend)
    };
    let exists = "attribute_exists(#pk)".to_string();
    Ok(match change {
        HealthChange::Recovered => (
            Expr::new("REMOVE #failing_since")
                .name("#failing_since", FAILING_SINCE)
                .name("#pk", keys::PK),
            exists,
        ),
        HealthChange::Failing { at } => (
            Expr::new("SET #failing_since = if_not_exists(#failing_since, :at)")
                .name("#failing_since", FAILING_SINCE)
                .name("#pk", keys::PK)
                .value(":at", time(at)?),
            exists,
        ),
        HealthChange::DisableFailing { .. } | HealthChange::DisableGone { .. } => {
            let Some((reason, at)) = change.disables() else {
                return Err(backend("a disabling health change that disables nothing"));
            };
            let reason =
                serde_dynamo::aws_sdk_dynamodb_1::to_attribute_value(reason).map_err(backend)?;
            let e = Expr::new(
                "SET #enabled = :false, #reason = :reason, #updated_at = :at ADD #version :one",
            )
            .name("#enabled", "enabled")
            .name("#reason", "disabled_reason")
            .name("#updated_at", "updated_at")
            .name("#version", "version")
            .value(":false", AttributeValue::Bool(false))
            .value(":reason", reason)
            .value(":at", time(&at)?)
            .value(":one", n(1));
            match change {
                HealthChange::DisableFailing { since, .. } => (
                    e.name("#failing_since", FAILING_SINCE)
                        .value(":since", time(since)?),
                    "#failing_since = :since".to_string(),
                ),
                _ => (e.name("#pk", keys::PK), exists),
            }
        }
    })
}

/// A webhook delivery item, in its subscription's partition; `expires_at` (epoch seconds, 30
/// days) is the TTL attribute.
pub fn delivery(d: &WebhookDelivery) -> StoreResult<(Key, Item)> {
    let key = keys::delivery(d.subscription_id, &d.id);
    let item = item_of("webhook_delivery", d, &key, None, None)?;
    Ok((key, item))
}

// The items the domain's size rule sizes ([`StoredItem`], BEHAVIOR 12): each kind the domain
// writes, by the function above that the adapter writes it with, so the rule's figure is what is
// sent. Later additions to an item (a calendar's `references`, a subscription's
// `failing_since`, a history entry's `crm_sync` and `sla` updates) are in the rule's reserve.

/// An audit event (BEHAVIOR 18): its `changes` are stored as one JSON string of at most
/// [`crate::model::audit::MAX_CHANGES_JSON_BYTES`] by construction, so the event fits the rule
/// whatever the write recorded (the test `the_largest_audit_event_fits_the_size_rule`).
impl StoredItem for crate::model::audit::AuditEvent {
    fn stored_item(&self) -> StoreResult<Item> {
        audit::event(self).map(|(_, item)| item)
    }
}

impl StoredItem for Record {
    fn stored_item(&self) -> StoreResult<Item> {
        record(self).map(|(_, item)| item)
    }
}

impl StoredItem for Router {
    fn stored_item(&self) -> StoreResult<Item> {
        router(self).map(|(_, item)| item)
    }
}

impl StoredItem for RouterRevision {
    fn stored_item(&self) -> StoreResult<Item> {
        router_revision(self).map(|(_, item)| item)
    }
}

impl StoredItem for RouterDraft {
    fn stored_item(&self) -> StoreResult<Item> {
        router_draft(self).map(|(_, item)| item)
    }
}

impl StoredItem for HolidayCalendar {
    fn stored_item(&self) -> StoreResult<Item> {
        holiday_calendar(self).map(|(_, item)| item)
    }
}

impl StoredItem for WebhookSubscription {
    fn stored_item(&self) -> StoreResult<Item> {
        webhook(self).map(|(_, item)| item)
    }
}

impl StoredItem for DispatchEntry {
    fn stored_item(&self) -> StoreResult<Item> {
        dispatch_entry(self).map(|(_, item)| item)
    }
}

impl StoredItem for Member {
    fn stored_item(&self) -> StoreResult<Item> {
        member(self).map(|(_, item)| item)
    }
}

/// The item exists and is at `version`.
pub fn at_version(version: u64) -> Expr {
    Expr::new("attribute_exists(#pk) AND #version = :version")
        .name("#pk", keys::PK)
        .name("#version", "version")
        .value(":version", n(version))
}

/// A CRM sync status as an attribute value (a string).
///
/// Errors: the value does not serialise (a bug, reported as a backend error).
pub fn crm_sync_status_value(status: CrmSyncStatus) -> StoreResult<AttributeValue> {
    serde_dynamo::aws_sdk_dynamodb_1::to_attribute_value(status).map_err(backend)
}

/// A condition or update expression with its placeholders. Only the names and values an
/// expression uses are sent (DynamoDB rejects unused ones; moto does not, so keep it right here).
#[derive(Debug, Clone, Default)]
pub struct Expr {
    /// The expression text.
    pub text: String,
    /// `#name` placeholders.
    pub names: HashMap<String, String>,
    /// `:value` placeholders.
    pub values: HashMap<String, AttributeValue>,
}

impl Expr {
    /// An expression `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// Binds `#placeholder` to attribute `name`.
    pub fn name(mut self, placeholder: &str, name: &str) -> Self {
        self.names.insert(placeholder.into(), name.into());
        self
    }

    /// Binds `:placeholder` to `value`.
    pub fn value(mut self, placeholder: &str, value: AttributeValue) -> Self {
        self.values.insert(placeholder.into(), value);
        self
    }

    /// `None` when there are no names (the SDK field stays unset).
    pub fn names_opt(&self) -> Option<HashMap<String, String>> {
        (!self.names.is_empty()).then(|| self.names.clone())
    }

    /// `None` when there are no values (the SDK field stays unset).
    pub fn values_opt(&self) -> Option<HashMap<String, AttributeValue>> {
        (!self.values.is_empty()).then(|| self.values.clone())
    }
}

/// An instant as a number attribute of epoch milliseconds.
pub fn millis(at: DateTime<Utc>) -> AttributeValue {
    AttributeValue::N(at.timestamp_millis().to_string())
}

/// The item does not exist yet.
pub fn absent() -> Expr {
    Expr::new("attribute_not_exists(#pk)").name("#pk", keys::PK)
}

/// The item exists, is active, belongs to `account_id` and is at `version`.
pub fn active_at_version(account_id: AccountId, version: u64) -> Expr {
    Expr::new(
        "attribute_exists(#pk) AND #version = :version AND attribute_not_exists(#archived) AND #account = :account",
    )
    .name("#pk", keys::PK)
    .name("#version", "version")
    .name("#archived", "archived_at")
    .name("#account", "account_id")
    .value(":version", n(version))
    .value(":account", s(account_id.to_string()))
}

/// The guard is free or already held by `record_id`.
pub fn free_or_held_by(record_id: RecordId) -> Expr {
    Expr::new("attribute_not_exists(#pk) OR #holder = :holder")
        .name("#pk", keys::PK)
        .name("#holder", GUARD_RECORD_ID)
        .value(":holder", s(record_id.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectType;
    use crate::types::email::Email;
    use chrono::{TimeZone, Utc};
    use std::collections::BTreeMap;
    use uuid::Uuid;

    fn record(active: bool) -> Record {
        let t = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        Record {
            id: Uuid::from_u128(5).into(),
            account_id: Uuid::from_u128(1).into(),
            object_type: ObjectType::Contacts,
            values: BTreeMap::from([("email".to_string(), "a@x.co".to_string())]),
            created_at: t,
            updated_at: t,
            archived_at: (!active).then_some(t),
            archived_by: (!active).then(|| "client".to_string()),
            version: 3,
        }
    }

    /// The size rule for the audit items: an event whose `changes` were cut to their budget
    /// (values of every kind, numbers in lists included, which DynamoDB sizes above their JSON)
    /// passes the one size rule, as the domain's writes must.
    #[test]
    fn the_largest_audit_event_fits_the_size_rule() {
        use crate::model::audit::{
            AuditAction, AuditActor, AuditChange, AuditEvent, AuditTarget, TargetType,
        };
        use serde_json::json;
        let numbers: Vec<u32> = (0..200_000).map(|i| i % 10).collect();
        let changes = vec![
            AuditChange {
                path: "settings.trigger".into(),
                before: json!({"in": numbers}),
                after: json!("\u{1F600}".repeat(100_000)),
            },
            AuditChange {
                path: "name".into(),
                before: json!("x".repeat(150_000)),
                after: json!("y".repeat(140_000)),
            },
        ];
        let event = AuditEvent::new(
            Uuid::from_u128(1).into(),
            AuditActor {
                client_id: "c".repeat(200),
                sub: "s".repeat(200),
            },
            AuditAction::RouterDraftUpdated,
            AuditTarget::new(TargetType::Router, Uuid::max()),
            changes,
            Utc::now(),
        );
        let size = crate::store::size::check_write(&event).expect("fits");
        assert!(size > 250 * 1024, "the budget was reached: {size} bytes");
    }

    #[test]
    fn an_active_record_item_has_both_index_keys_and_no_null_attributes() {
        let (key, item) = super::record(&record(true)).unwrap();
        assert_eq!(item[keys::PK], s(&key.pk));
        assert!(item.contains_key(keys::GSI1PK) && item.contains_key(keys::GSI2PK));
        assert!(!item.contains_key("archived_at"));
        assert!(item.values().all(|v| !v.is_null()));
        let back: Record = from_item(item).unwrap();
        assert_eq!(back, record(true));
    }

    #[test]
    fn an_archived_record_item_leaves_the_sparse_index() {
        let (_, item) = super::record(&record(false)).unwrap();
        assert!(!item.contains_key(keys::GSI1PK) && !item.contains_key(keys::GSI1SK));
        assert!(item.contains_key(keys::GSI2PK));
        let back: Record = from_item(item).unwrap();
        assert_eq!(back, record(false));
    }

    /// A rotation item as the code that typed its e-mails `String` wrote it, with e-mails an
    /// older release may have stored (a domain in U-label form, text that is no address): it
    /// reads into the typed state as written (nothing parsed again), and the typed state writes
    /// the same item.
    #[test]
    fn a_rotation_item_written_with_string_emails_reads_as_written_and_writes_the_same() {
        #[derive(Serialize)]
        struct Written {
            version: u64,
            last_member: Option<String>,
            last_team: Option<String>,
            team_last_member: BTreeMap<String, String>,
            counts: BTreeMap<String, u64>,
            total: u64,
        }
        let written = Written {
            version: 4,
            last_member: Some("ana@bücher.example".into()),
            last_team: Some("Inbound".into()),
            team_last_member: BTreeMap::from([("Inbound".into(), "Ana@Bücher.Example".into())]),
            counts: BTreeMap::from([
                ("ana@bücher.example".into(), 3),
                ("legacy-member".into(), 1),
            ]),
            total: 4,
        };
        let router_id = RouterId::from(Uuid::from_u128(9));
        let key = keys::rotation(router_id);
        let mut item = item_of("rotation", &written, &key, None, None).unwrap();
        item.insert("router_id".into(), s(router_id.to_string()));
        let state: RotationState = from_item(item.clone()).unwrap();
        let last = state.last_member.as_ref().map(Email::as_str);
        assert_eq!(last, Some("ana@bücher.example"));
        assert_eq!(state.team_last_member["Inbound"], "Ana@Bücher.Example");
        let counts: Vec<(&str, u64)> = state.counts.iter().map(|(e, n)| (e.as_str(), *n)).collect();
        assert_eq!(counts, [("ana@bücher.example", 3), ("legacy-member", 1)]);
        assert_eq!(rotation(router_id, &state).unwrap(), (key, item));
    }

    /// A history entry's `user` is a plain string attribute, and one written in an older form
    /// reads as written.
    #[test]
    fn a_history_entry_keeps_its_user_as_a_string_and_reads_an_old_one_as_written() {
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let entry = DispatchEntry {
            success: true,
            user: Some(Email::parse("ana@x.example").unwrap()),
            ..DispatchEntry::unassigned(
                Uuid::from_u128(1).into(),
                Uuid::from_u128(2).into(),
                ObjectType::Contacts,
                Uuid::from_u128(5).to_string(),
                "Owner assigned".into(),
                crate::model::DispatchSource::Api,
                at,
            )
        };
        let (_, mut item) = dispatch_entry(&entry).unwrap();
        assert_eq!(item["user"], s("ana@x.example"));
        assert_eq!(from_item::<DispatchEntry>(item.clone()).unwrap(), entry);
        item.insert("user".into(), s("Ana@Bücher.Example"));
        let old: DispatchEntry = from_item(item).unwrap();
        let user = old.user.as_ref().map(Email::as_str);
        assert_eq!(user, Some("Ana@Bücher.Example"));
    }

    #[test]
    fn a_guard_item_names_the_record_holding_it() {
        let r = record(true);
        let (key, item) = guard(
            &r,
            &UniqueKey {
                field: "email".into(),
                value: "a@x.co".into(),
            },
        );
        assert_eq!(
            key,
            keys::guard(r.account_id, r.object_type, "email", "a@x.co")
        );
        assert_eq!(item[GUARD_RECORD_ID], s(r.id.to_string()));
    }
}
