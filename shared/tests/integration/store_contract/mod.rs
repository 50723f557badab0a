//! The store contract: the same test bodies run against both adapters of the port, the embedded
//! `MemoryStore` and the `DynamoStore` (each DynamoDB test on a fresh table of its own, on the
//! emulator named by `AWS_ENDPOINT_URL`; run them with `bash infra/scripts/test.sh`).
//!
//! One module per aggregate of the port (`records`, `members`, ...), in one test binary. A body is
//! an `async fn(Arc<dyn Store>)`; `shared::on_both_stores!(store: ...)` (the shared harness)
//! instantiates every body once per adapter (`<aggregate>::memory::<name>` and
//! `<aggregate>::dynamodb::<name>`); this file holds the fixtures they share.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use chrono::{DateTime, Duration, TimeZone, Utc};
use shared::auth::Scope;
use shared::fields::{EnumOption, FieldDefinition, FieldType};
use shared::idempotency::{
    ClaimOutcome, Fingerprint, IdempotencyClaim, IdempotencyCompletion, IdempotencyKey,
    StoredResponse,
};
use shared::model::{
    Account, ApiClient, AssignmentReason, AssignmentWrite, DispatchEntry, DispatchSource, Member,
    MessageDeduplicationId, ObjectType, Record, Role, RotationState, RotationWrite, Router, Team,
};
use shared::model::{AccountPlan, PlannedRecord, ProvisionPlan};
use shared::schedule::IanaTimeZone;
use shared::store::{PageRequest, Store, StoreError, UniqueKey};
use shared::types::{AccountId, CapacityEntry, Email, NotificationPreferences, RecordId};
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

mod accounts;
mod auth_attempts;
mod calendars;
mod clients;
mod dispatch;
mod idempotency;
mod members;
mod pace;
mod provisioning;
mod records;
mod routers;

// ---- fixtures ---------------------------------------------------------------------------

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 10, 9, 0, 0).unwrap()
}

fn at(ms: i64) -> DateTime<Utc> {
    base() + Duration::milliseconds(ms)
}

fn page(limit: usize, offset: usize) -> PageRequest {
    PageRequest::at_offset(limit, offset, false)
}

fn all(limit: usize, offset: usize) -> PageRequest {
    PageRequest::at_offset(limit, offset, true)
}

fn account(quota: Option<u64>) -> Account {
    Account {
        id: new_id(),
        name: "Acme".into(),
        active: true,
        assignment_quota: quota,
        crm: None,
        created_at: base(),
    }
}

fn member(account_id: AccountId, email: &str, ms: i64) -> Member {
    Member {
        id: new_id(),
        account_id,
        email: Email::parse(email).unwrap(),
        full_name: Some(format!("Full {email}")),
        first_name: None,
        last_name: Some("Last".into()),
        role_id: None,
        external_id: None,
        phone: None,
        office_status: true,
        time_zone: IanaTimeZone::parse("Europe/Berlin").unwrap(),
        working_hours: vec![],
        out_office_dates: vec![],
        calendars: BTreeMap::from([("google".to_string(), email.to_string())]),
        holiday_calendar_id: None,
        capacity: vec![CapacityEntry::parse(
            serde_json::json!({"current_capacity": 1, "max_capacity": 5, "assignment_type": "contacts", "note": null})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        )
        .unwrap()],
        can_receive_notifications: false,
        notification_preferences: NotificationPreferences::parse(&[serde_json::json!("email")]).unwrap(),
        created_at: at(ms),
        updated_at: at(ms),
        archived_at: None,
        archived_by: None,
        version: 1,
    }
}

fn router(account_id: AccountId, name: &str, ms: i64) -> Router {
    Router {
        id: new_id(),
        account_id,
        name: name.into(),
        object_type: ObjectType::Contacts,
        has_integration: false,
        is_published: true,
        settings: None,
        users: vec![],
        teams: vec![],
        created_at: at(ms),
        updated_at: at(ms),
        archived_at: None,
        archived_by: None,
        member_ids: Vec::new(),
        revision: 1,
        version: 0,
    }
}

fn record(
    account_id: AccountId, object_type: ObjectType, ms: i64, values: &[(&str, &str)],
) -> Record {
    Record {
        id: new_id_v7(),
        account_id,
        object_type,
        values: values
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        created_at: at(ms),
        updated_at: at(ms),
        archived_at: None,
        archived_by: None,
        version: 1,
    }
}

fn key(field: &str, value: &str) -> UniqueKey {
    UniqueKey {
        field: field.into(),
        value: value.into(),
    }
}

fn contact_keys(r: &Record) -> Vec<UniqueKey> {
    ["email", "external_id"]
        .iter()
        .filter_map(|f| r.value(f).map(|v| key(f, v)))
        .collect()
}

fn plan_of(account: &Account) -> AccountPlan {
    AccountPlan {
        crm: None,
        account: account.clone(),
        clients: vec![],
        client_secrets: vec![],
        roles: vec![],
        members: vec![],
        holiday_calendars: vec![],
        teams: vec![],
        field_definitions: vec![],
        routers: vec![],
        records: vec![],
    }
}

fn planned(r: Record, path: &str) -> PlannedRecord {
    let unique_keys = contact_keys(&r);
    PlannedRecord {
        record: r,
        unique_keys,
        path: path.into(),
    }
}

async fn provision(store: &Arc<dyn Store>, plans: Vec<AccountPlan>) {
    store
        .provision(&ProvisionPlan { accounts: plans })
        .await
        .expect("provisioning succeeds");
}

async fn archive(store: &Arc<dyn Store>, r: &Record, keys: &[UniqueKey]) -> Record {
    let mut next = r.clone();
    next.archived_at = Some(r.updated_at + Duration::seconds(1));
    next.archived_by = Some("client".into());
    next.version = r.version + 1;
    store
        .update_record(&next, r.version, &[], keys)
        .await
        .expect("archive succeeds");
    next
}

fn ids<T, I>(items: &[T], id: impl Fn(&T) -> I) -> Vec<I> {
    items.iter().map(id).collect()
}

/// A new random id of whatever kind the context needs.
fn new_id<T: From<Uuid>>() -> T {
    Uuid::new_v4().into()
}

/// A new time-ordered id of whatever kind the context needs.
fn new_id_v7<T: From<Uuid>>() -> T {
    Uuid::now_v7().into()
}

fn claim_at(
    account_id: AccountId, route: &str, key: &str, body: &str, at: DateTime<Utc>,
) -> IdempotencyClaim {
    IdempotencyClaim::new(
        account_id,
        route,
        IdempotencyKey::parse(key.as_bytes()).unwrap(),
        Fingerprint::of_body(body.as_bytes()),
        at,
    )
}

fn completion(claim: &IdempotencyClaim, status: u16, body: &str) -> IdempotencyCompletion {
    IdempotencyCompletion {
        claim: claim.clone(),
        response: StoredResponse {
            status,
            body: body.into(),
        },
    }
}
