//! Conversion between the model and DynamoDB items, and the expressions the adapter writes.
//!
//! Items are the model serialised by `serde_dynamo` (attributes named as the model's fields),
//! plus the key attributes of [`crate::store::keys`] and `item_type`. `None` values are left out
//! of the item rather than written as `NULL`: a `NULL` index key is a `ValidationException`, and
//! conditions such as `attribute_not_exists(archived_at)` need an absent attribute.

use crate::fields::definition::FieldDefinition;
use crate::idempotency::{
    ClaimOutcome, Fingerprint, IdempotencyClaim, IdempotencyCompletion, StoredResponse,
};
use crate::model::due::{DueId, DueItem, Lease, NextAttempt, Parking};
use crate::model::holiday_calendar::HolidayCalendar;
use crate::model::sla::SlaStatus;
use crate::model::webhook::{HealthChange, WebhookDelivery, WebhookSubscription};
use crate::model::{
    Account, ApiClient, CrmSyncState, CrmSyncStatus, DispatchEntry, Member, Record, Role,
    RotationState, Router, RouterDraft, RouterRevision, Team,
};
use crate::store::keys::{self, IndexKey, Key};
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
/// Attribute of a monthly count item holding the count.
pub const COUNT: &str = "count";
/// Attribute of a field definition item holding its definition order.
pub const DEFINED_AT: &str = "defined_at";
/// Attribute of an idempotency marker: expiry (epoch seconds) for DynamoDB's TTL.
pub const EXPIRES_AT: &str = "expires_at";
/// Attribute of an `Idempotency-Key` claim: the body's fingerprint.
pub const REQUEST_FINGERPRINT: &str = "fingerprint";
/// Attribute of an `Idempotency-Key` claim: the lease id of the request holding it.
pub const REQUEST_LEASE_ID: &str = "lease_id";
/// Attribute of an `Idempotency-Key` claim: end of the lease, epoch milliseconds.
pub const REQUEST_LEASE_UNTIL: &str = "lease_until";
/// Attribute of an `Idempotency-Key` claim: `in_flight` or `completed`.
pub const REQUEST_STATE: &str = "state";
/// Attribute of a completed `Idempotency-Key` claim: the stored status.
pub const REQUEST_STATUS: &str = "status";
/// Attribute of a completed `Idempotency-Key` claim: the stored body.
pub const REQUEST_BODY: &str = "body";
const IN_FLIGHT: &str = "in_flight";
const COMPLETED: &str = "completed";

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

/// An idempotency marker expiring at `expires_at` (epoch seconds).
pub fn marker(idempotency_key: &str, expires_at: i64) -> (Key, Item) {
    let key = keys::idempotency(idempotency_key);
    let mut item = key_attributes(&key);
    item.insert(keys::ITEM_TYPE.into(), s("idempotency"));
    item.insert(EXPIRES_AT.into(), AttributeValue::N(expires_at.to_string()));
    (key, item)
}

/// An `Idempotency-Key` claim in flight (BEHAVIOR 10): the fingerprint, the lease (id and end,
/// epoch milliseconds) and the expiry (epoch seconds, DynamoDB's TTL attribute).
pub fn request_claim(claim: &IdempotencyClaim) -> (Key, Item) {
    let key = keys::idempotent_request(claim.account_id, &claim.route, claim.key.as_str());
    let mut item = key_attributes(&key);
    item.insert(keys::ITEM_TYPE.into(), s("idempotent_request"));
    item.insert("account_id".into(), s(claim.account_id.to_string()));
    item.insert("route".into(), s(&claim.route));
    item.insert(REQUEST_FINGERPRINT.into(), s(claim.fingerprint.as_str()));
    item.insert(REQUEST_LEASE_ID.into(), s(&claim.lease_id));
    item.insert(
        REQUEST_LEASE_UNTIL.into(),
        AttributeValue::N(claim.lease_until().timestamp_millis().to_string()),
    );
    item.insert(
        EXPIRES_AT.into(),
        AttributeValue::N(claim.expires_at().timestamp().to_string()),
    );
    item.insert(REQUEST_STATE.into(), s(IN_FLIGHT));
    (key, item)
}

/// The claim of `completion` with its response stored (the key stays until its expiry).
pub fn request_completed(completion: &IdempotencyCompletion) -> (Key, Item) {
    let (key, mut item) = request_claim(&completion.claim);
    item.insert(REQUEST_STATE.into(), s(COMPLETED));
    item.insert(
        REQUEST_STATUS.into(),
        n(u64::from(completion.response.status)),
    );
    item.insert(REQUEST_BODY.into(), s(&completion.response.body));
    (key, item)
}

/// The condition of claiming a key at `now`: no claim, an expired one (TTL deletes lazily), or
/// an in-flight one whose lease lapsed.
pub fn claimable(now: DateTime<Utc>) -> Expr {
    Expr::new("attribute_not_exists(#pk) OR #expires <= :now_s OR (#state = :in_flight AND #lease_until <= :now_ms)")
        .name("#pk", keys::PK)
        .name("#expires", EXPIRES_AT)
        .name("#state", REQUEST_STATE)
        .name("#lease_until", REQUEST_LEASE_UNTIL)
        .value(":now_s", AttributeValue::N(now.timestamp().to_string()))
        .value(":in_flight", s(IN_FLIGHT))
        .value(":now_ms", AttributeValue::N(now.timestamp_millis().to_string()))
}

/// The condition that `claim` still holds its key: its lease id, still in flight.
pub fn lease_held(claim: &IdempotencyClaim) -> Expr {
    Expr::new("#lease = :lease AND #state = :in_flight")
        .name("#lease", REQUEST_LEASE_ID)
        .name("#state", REQUEST_STATE)
        .value(":lease", s(&claim.lease_id))
        .value(":in_flight", s(IN_FLIGHT))
}

/// What a stored claim says at `now`: `None` when it no longer counts (expired, or in flight
/// with a lapsed lease).
///
/// Errors: [`StoreError::Backend`] for a malformed item.
pub fn read_request(item: &Item, now: DateTime<Utc>) -> StoreResult<Option<ClaimOutcome>> {
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v.clone()),
        _ => Err(StoreError::Backend(
            format!("idempotent request item without {name}").into(),
        )),
    };
    let number = |name: &str| match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse::<i64>().map_err(|e| StoreError::Backend(e.into())),
        _ => Err(StoreError::Backend(
            format!("idempotent request item without {name}").into(),
        )),
    };
    if number(EXPIRES_AT)? <= now.timestamp() {
        return Ok(None);
    }
    let fingerprint = Fingerprint::from_stored(text(REQUEST_FINGERPRINT)?);
    if text(REQUEST_STATE)? == COMPLETED {
        let status =
            u16::try_from(number(REQUEST_STATUS)?).map_err(|e| StoreError::Backend(e.into()))?;
        return Ok(Some(ClaimOutcome::Completed {
            fingerprint,
            response: StoredResponse {
                status,
                body: text(REQUEST_BODY)?,
            },
        }));
    }
    if number(REQUEST_LEASE_UNTIL)? <= now.timestamp_millis() {
        return Ok(None);
    }
    Ok(Some(ClaimOutcome::InFlight { fingerprint }))
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

/// Attribute of a due item: the lease id of the worker holding it.
pub const DUE_LEASE_ID: &str = "lease_id";
/// Attribute of a due item: end of its lease, epoch milliseconds.
pub const DUE_LEASE_UNTIL: &str = "lease_until";
/// Attribute of a due item: attempts made.
pub const DUE_ATTEMPT: &str = "attempt";
/// Attribute of a due item: when the sweeper resumes it ([`keys::sortable_time`] text).
pub const DUE_RESUME_AT: &str = "resume_at";
/// Attribute of a due item: when its next attempt is due ([`keys::sortable_time`] text).
pub const DUE_AT: &str = "due_at";
/// Attribute of a due item: claims since it last made progress (absent for 0).
pub const DUE_RUNS: &str = "runs";
/// Attribute of a due item: why its last run made no progress.
pub const DUE_LAST_ERROR: &str = "last_error";
/// Attribute of a due item: when it was parked ([`keys::sortable_time`] text).
pub const DUE_PARKED_AT: &str = "parked_at";
/// Attribute of a due item: the job's subject (JSON text).
pub const DUE_SUBJECT: &str = "subject";

/// A due item ([`DueItem`]): its id, the job's subject (JSON text), the due and resume times
/// as [`keys::sortable_time`] text (compared as strings in conditions), the attempt count, the
/// lease (id, end in epoch milliseconds) while held, and the due-work index key (GSI1).
pub fn due_item(due: &DueItem) -> StoreResult<(Key, Item)> {
    let key = keys::due_item(&due.id);
    let index = match due.parked_at {
        Some(at) => keys::parked_due_index(&due.id, at),
        None => keys::due_index(&due.id, due.resume_at),
    };
    let mut item = key_attributes(&key);
    item.insert(keys::ITEM_TYPE.into(), s("due"));
    item.insert(keys::GSI1PK.into(), s(index.pk));
    item.insert(keys::GSI1SK.into(), s(index.sk));
    item.insert("id".into(), s(due.id.to_string()));
    item.insert(
        DUE_SUBJECT.into(),
        s(serde_json::to_string(&due.subject).map_err(backend)?),
    );
    item.insert(DUE_AT.into(), s(keys::sortable_time(due.due_at)));
    item.insert(DUE_ATTEMPT.into(), n(u64::from(due.attempt)));
    item.insert(DUE_RESUME_AT.into(), s(keys::sortable_time(due.resume_at)));
    if let Some(lease) = &due.lease {
        item.insert(DUE_LEASE_ID.into(), s(&lease.id));
        item.insert(DUE_LEASE_UNTIL.into(), millis(lease.until));
    }
    if due.runs > 0 {
        item.insert(DUE_RUNS.into(), n(u64::from(due.runs)));
    }
    if let Some(error) = &due.last_error {
        item.insert(DUE_LAST_ERROR.into(), s(error));
    }
    if let Some(at) = due.parked_at {
        item.insert(DUE_PARKED_AT.into(), s(keys::sortable_time(at)));
    }
    Ok((key, item))
}

/// Reads a due item written by [`due_item`].
///
/// Errors: a missing or malformed attribute (a backend error).
pub fn read_due_item(item: &Item) -> StoreResult<DueItem> {
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v.as_str()),
        _ => Err(backend(format!("due item without string attribute {name}"))),
    };
    let number = |name: &str| match item.get(name) {
        Some(AttributeValue::N(v)) => v
            .parse::<i64>()
            .map_err(|e| backend(format!("due item attribute {name}: {e}"))),
        _ => Err(backend(format!("due item without number attribute {name}"))),
    };
    let time = |name: &str| -> StoreResult<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(text(name)?)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| backend(format!("due item attribute {name}: {e}")))
    };
    let lease = match item.get(DUE_LEASE_ID) {
        Some(AttributeValue::S(id)) => Some(Lease {
            id: id.clone(),
            until: DateTime::from_timestamp_millis(number(DUE_LEASE_UNTIL)?)
                .ok_or_else(|| backend("due item lease end out of range"))?,
        }),
        _ => None,
    };
    Ok(DueItem {
        id: DueId::parse(text("id")?).map_err(backend)?,
        subject: serde_json::from_str(text(DUE_SUBJECT)?).map_err(backend)?,
        due_at: time(DUE_AT)?,
        attempt: u32::try_from(number(DUE_ATTEMPT)?).map_err(backend)?,
        lease,
        resume_at: time(DUE_RESUME_AT)?,
        runs: match item.get(DUE_RUNS) {
            Some(_) => u32::try_from(number(DUE_RUNS)?).map_err(backend)?,
            None => 0,
        },
        last_error: item
            .get(DUE_LAST_ERROR)
            .and_then(|v| v.as_s().ok())
            .cloned(),
        parked_at: match item.get(DUE_PARKED_AT) {
            Some(_) => Some(time(DUE_PARKED_AT)?),
            None => None,
        },
    })
}

/// An instant as a number attribute of epoch milliseconds.
pub fn millis(at: DateTime<Utc>) -> AttributeValue {
    AttributeValue::N(at.timestamp_millis().to_string())
}

/// The condition that the lease `lease_id` holds the due item.
pub fn due_lease_held(lease_id: &str) -> Expr {
    Expr::new(DUE_LEASE_CONDITION)
        .name("#lease_id", DUE_LEASE_ID)
        .value(":lease_id", s(lease_id))
}

/// The update moving a due item to `next` with its lease released (the settlement of an
/// attempt that leaves another): the update expression, with the names and values of
/// [`due_lease_held`] too, so [`DUE_LEASE_CONDITION`] can be its condition.
///
/// An attempt recorded (`next.error` is `None`) removes the runs and the last error; an item
/// left due without one keeps its runs and stores the error. A new subject replaces the old.
pub fn due_next_attempt(id: &DueId, next: &NextAttempt, lease_id: &str) -> StoreResult<Expr> {
    let index = keys::due_index(id, next.resume_at);
    let held = due_lease_held(lease_id);
    let mut set = vec![
        "#due_at = :due_at",
        "#attempt = :attempt",
        "#resume_at = :resume_at",
        "#gsi1sk = :gsi1sk",
    ];
    let mut remove = vec!["#lease_id", "#lease_until"];
    match next.error {
        Some(_) => set.push("#last_error = :last_error"),
        None => remove.extend(["#runs", "#last_error"]),
    }
    if next.subject.is_some() {
        set.push("#subject = :subject");
    }
    let mut e = Expr {
        text: format!("SET {} REMOVE {}", set.join(", "), remove.join(", ")),
        ..held
    }
    .name("#due_at", DUE_AT)
    .name("#attempt", DUE_ATTEMPT)
    .name("#resume_at", DUE_RESUME_AT)
    .name("#gsi1sk", keys::GSI1SK)
    .name("#lease_until", DUE_LEASE_UNTIL)
    .name("#last_error", DUE_LAST_ERROR)
    .value(":due_at", s(keys::sortable_time(next.due_at)))
    .value(":attempt", n(u64::from(next.attempt)))
    .value(":resume_at", s(keys::sortable_time(next.resume_at)))
    .value(":gsi1sk", s(index.sk));
    if let Some(error) = &next.error {
        e = e.value(":last_error", s(error));
    } else {
        e = e.name("#runs", DUE_RUNS);
    }
    if let Some(subject) = &next.subject {
        e = e.name("#subject", DUE_SUBJECT).value(
            ":subject",
            s(serde_json::to_string(subject).map_err(backend)?),
        );
    }
    Ok(e)
}

/// The update parking a due item (its lease released, out of the sweeper's index partitions,
/// in the parked partition instead), with the names and values of [`due_lease_held`], so
/// [`DUE_LEASE_CONDITION`] can be its condition.
pub fn due_parked(parking: &Parking) -> Expr {
    let index = keys::parked_due_index(&parking.id, parking.at);
    Expr {
        text: "SET #parked_at = :parked_at, #last_error = :last_error, #gsi1pk = :gsi1pk, #gsi1sk = :gsi1sk REMOVE #lease_id, #lease_until".into(),
        ..due_lease_held(&parking.lease_id)
    }
    .name("#parked_at", DUE_PARKED_AT)
    .name("#last_error", DUE_LAST_ERROR)
    .name("#gsi1pk", keys::GSI1PK)
    .name("#gsi1sk", keys::GSI1SK)
    .name("#lease_until", DUE_LEASE_UNTIL)
    .value(":parked_at", s(keys::sortable_time(parking.at)))
    .value(":last_error", s(&parking.error))
    .value(":gsi1pk", s(index.pk))
    .value(":gsi1sk", s(index.sk))
}

/// The condition text of [`due_lease_held`] (its placeholders are bound by it, or by
/// [`due_next_attempt`]).
pub const DUE_LEASE_CONDITION: &str = "#lease_id = :lease_id";

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
