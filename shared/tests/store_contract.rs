//! The store contract: the same test bodies run against both adapters of the port, the embedded
//! `MemoryStore` and the `DynamoStore` (each DynamoDB test on a fresh table of its own, on the
//! emulator named by `AWS_ENDPOINT_URL`; run them with `bash infra/scripts/test.sh`).
//!
//! A body is an `async fn(Arc<dyn Store>)`; `contract!` instantiates every body once per adapter
//! (`memory::<name>` and `dynamodb::<name>`).
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
    ObjectType, Record, Role, RotationState, Router, Team,
};
use shared::model::{AccountPlan, PlannedRecord, ProvisionPlan};
use shared::schedule::IanaTimeZone;
use shared::store::{Page, Store, StoreError, UniqueKey};
use shared::types::{AccountId, CapacityEntry, Email, NotificationPreferences, RecordId};
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(std::sync::Arc::new(shared::store::memory::MemoryStore::new()))
                        .await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let table = shared::store::dynamodb::test_table::TestTable::create()
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                    super::$name(std::sync::Arc::new(table.store.clone())).await;
                    table.delete().await;
                }
            )*
        }
    };
}

contract!(
    a_created_record_reads_back_exactly,
    a_record_of_another_account_or_type_reads_as_absent,
    records_list_by_creation_time_then_id_and_page_by_offset,
    archived_records_are_listed_only_when_asked,
    a_cursor_walk_returns_every_item_once_in_offset_order,
    a_cursor_walk_neither_skips_nor_repeats_while_items_are_created_and_archived,
    members_and_routers_walk_with_cursors,
    a_second_active_record_with_a_taken_key_is_a_duplicate_naming_the_first_colliding_key,
    the_same_key_in_another_account_or_type_is_not_a_duplicate,
    twenty_concurrent_creates_with_one_key_let_exactly_one_succeed,
    a_record_id_that_exists_cannot_be_created_again,
    archiving_a_record_releases_its_keys_for_reuse,
    an_update_that_changes_a_key_moves_its_guard,
    an_update_claiming_a_key_held_by_another_record_is_a_duplicate_and_writes_nothing,
    an_update_at_a_stale_version_is_a_conflict_and_writes_nothing,
    an_update_of_an_archived_record_is_a_conflict,
    find_by_unique_key_finds_only_the_active_holder_in_its_account_and_type,
    members_list_by_email_and_skip_archived_unless_asked,
    a_member_is_found_by_id_or_case_insensitive_email_only_in_its_account,
    a_member_lookup_by_email_matches_the_whole_address_never_a_prefix,
    a_member_update_is_conditional_on_version_and_activity,
    holiday_calendars_are_limited_listed_replaced_and_deleted_only_when_unused,
    provisioned_holiday_calendars_count_against_the_limit_and_list_by_creation,
    routers_list_by_creation_and_skip_archived_unless_asked,
    a_router_is_found_in_its_account_and_by_id_alone,
    roles_and_teams_are_listed_per_account,
    field_definitions_read_back_in_definition_order_per_account,
    accounts_and_clients_read_back_by_id,
    provisioning_twice_inserts_once_and_skips_every_item_the_second_time,
    a_reload_never_clobbers_what_changed_since,
    provisioning_a_record_whose_key_is_taken_is_rejected_with_its_path_and_writes_nothing,
    a_plan_larger_than_one_transaction_loads_completely,
    an_assignment_writes_record_rotation_member_count_and_log_together,
    an_assignment_on_a_stale_record_writes_nothing,
    an_assignment_on_a_stale_rotation_writes_nothing,
    an_assignment_by_a_revision_no_longer_live_writes_nothing,
    an_assignment_on_a_stale_or_archived_member_writes_nothing,
    an_assignment_without_counters_still_needs_the_member_active_at_the_version_read,
    an_assignment_past_the_quota_writes_nothing,
    an_assignment_with_a_used_idempotency_key_is_already_applied,
    an_sla_check_ends_once_from_pending_with_its_items_settlement,
    a_reassignment_ends_its_check_in_its_own_write_and_only_once,
    monthly_counts_are_per_account_and_month,
    an_idempotency_key_is_claimed_once_then_in_flight_then_completed,
    an_idempotency_key_is_scoped_to_account_and_route,
    a_lapsed_lease_lets_another_request_take_the_key_and_the_first_loses_it,
    a_released_or_expired_key_can_be_claimed_again,
    twenty_concurrent_claims_of_one_key_let_exactly_one_run,
    a_created_record_stores_its_response_in_the_same_write,
    an_assignment_stores_its_response_in_the_same_write,
    records_are_read_by_id_in_batches_each_once_and_only_in_their_account,
    a_window_of_router_history_is_walked_oldest_first_in_pages,
);

// ---- fixtures ---------------------------------------------------------------------------

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 10, 9, 0, 0).unwrap()
}

fn at(ms: i64) -> DateTime<Utc> {
    base() + Duration::milliseconds(ms)
}

fn page(limit: usize, offset: usize) -> Page {
    Page::at_offset(limit, offset, false)
}

fn all(limit: usize, offset: usize) -> Page {
    Page::at_offset(limit, offset, true)
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

// ---- records ----------------------------------------------------------------------------

async fn a_created_record_reads_back_exactly(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(
        a,
        ObjectType::Contacts,
        0,
        &[("email", "jo@x.co"), ("first_name", "Jo"), ("note", "")],
    );
    store.create_record(&r, &contact_keys(&r)).await.unwrap();
    let back = store
        .get_record(a, ObjectType::Contacts, r.id)
        .await
        .unwrap();
    assert_eq!(back, Some(r.clone()));
    let plain = record(a, ObjectType::Deals, 1, &[("deal_name", "Big")]);
    store.create_record(&plain, &[]).await.unwrap();
    assert_eq!(
        store
            .get_record(a, ObjectType::Deals, plain.id)
            .await
            .unwrap(),
        Some(plain)
    );
}

async fn a_record_of_another_account_or_type_reads_as_absent(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(a, ObjectType::Contacts, 0, &[("email", "jo@x.co")]);
    store.create_record(&r, &contact_keys(&r)).await.unwrap();
    let other = new_id();
    assert_eq!(
        store
            .get_record(other, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .get_record(a, ObjectType::Companies, r.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .get_record(a, ObjectType::Contacts, new_id())
            .await
            .unwrap(),
        None
    );
    // The shared read answers the same.
    let shared = |account, object_type, id| {
        let store = store.clone();
        async move {
            store
                .get_record_shared(account, object_type, id)
                .await
                .unwrap()
                .map(|record| Record::clone(&record))
        }
    };
    assert_eq!(shared(a, ObjectType::Contacts, r.id).await, Some(r.clone()));
    assert_eq!(shared(other, ObjectType::Contacts, r.id).await, None);
    assert_eq!(shared(a, ObjectType::Companies, r.id).await, None);
    assert_eq!(shared(a, ObjectType::Contacts, new_id()).await, None);
    assert!(store
        .list_records(other, ObjectType::Contacts, &page(100, 0))
        .await
        .unwrap()
        .items
        .is_empty());
    assert!(store
        .list_records(a, ObjectType::Companies, &page(100, 0))
        .await
        .unwrap()
        .items
        .is_empty());
}

async fn records_list_by_creation_time_then_id_and_page_by_offset(store: Arc<dyn Store>) {
    let a = new_id();
    // Created out of order; two share a creation time and are ordered by id.
    let mut made = Vec::new();
    for ms in [30, 10, 20, 10, 40] {
        let r = record(a, ObjectType::Companies, ms, &[]);
        store.create_record(&r, &[]).await.unwrap();
        made.push(r);
    }
    made.sort_by_key(|r| (r.created_at, r.id));
    let expected = ids(&made, |r| r.id);
    let listed = store
        .list_records(a, ObjectType::Companies, &page(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&listed, |r| r.id), expected);
    let second = store
        .list_records(a, ObjectType::Companies, &page(2, 2))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&second, |r| r.id), expected[2..4]);
    let last = store
        .list_records(a, ObjectType::Companies, &page(2, 4))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&last, |r| r.id), expected[4..]);
    assert!(store
        .list_records(a, ObjectType::Companies, &page(2, 5))
        .await
        .unwrap()
        .items
        .is_empty());
    assert!(store
        .list_records(a, ObjectType::Companies, &page(10, 1000))
        .await
        .unwrap()
        .items
        .is_empty());
}

async fn archived_records_are_listed_only_when_asked(store: Arc<dyn Store>) {
    let a = new_id();
    let r1 = record(a, ObjectType::Contacts, 1, &[("email", "one@x.co")]);
    let r2 = record(a, ObjectType::Contacts, 2, &[("email", "two@x.co")]);
    let r3 = record(a, ObjectType::Contacts, 3, &[]);
    for r in [&r1, &r2, &r3] {
        store.create_record(r, &contact_keys(r)).await.unwrap();
    }
    let archived = archive(&store, &r2, &contact_keys(&r2)).await;
    let active = store
        .list_records(a, ObjectType::Contacts, &page(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&active, |r| r.id), [r1.id, r3.id]);
    let everything = store
        .list_records(a, ObjectType::Contacts, &all(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&everything, |r| r.id), [r1.id, r2.id, r3.id]);
    assert_eq!(everything[1], archived);
    let offset = store
        .list_records(a, ObjectType::Contacts, &page(1, 1))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&offset, |r| r.id), [r3.id]);
}

/// Walks a record list with `after`, `limit` items a page; the ids in walk order.
async fn walk_records(
    store: &Arc<dyn Store>, a: AccountId, t: ObjectType, limit: usize, include_archived: bool,
) -> Vec<RecordId> {
    let mut seen = Vec::new();
    let mut page = Page::first(limit, include_archived);
    loop {
        let listed = store.list_records(a, t, &page).await.unwrap();
        assert!(listed.items.len() <= limit);
        seen.extend(listed.items.iter().map(|r| r.id));
        match listed.next {
            Some(p) => page = Page::after(limit, p, include_archived),
            None => return seen,
        }
    }
}

async fn a_cursor_walk_returns_every_item_once_in_offset_order(store: Arc<dyn Store>) {
    let a = new_id();
    // Out of creation order, with shared creation times ordered by id.
    for i in 0..23i64 {
        let r = record(a, ObjectType::Deals, (i * 7) % 5, &[]);
        store.create_record(&r, &[]).await.unwrap();
    }
    let by_offset = ids(
        &store
            .list_records(a, ObjectType::Deals, &page(100, 0))
            .await
            .unwrap()
            .items,
        |r| r.id,
    );
    assert_eq!(by_offset.len(), 23);
    for limit in [1, 4, 5, 23, 100] {
        assert_eq!(
            walk_records(&store, a, ObjectType::Deals, limit, false).await,
            by_offset,
            "limit {limit}"
        );
    }
    // A full last page says no more; a page with more says so.
    let exact = store
        .list_records(a, ObjectType::Deals, &page(23, 0))
        .await
        .unwrap();
    assert_eq!(exact.next, None);
    let short = store
        .list_records(a, ObjectType::Deals, &page(22, 0))
        .await
        .unwrap();
    assert!(short.next.is_some());
    // Offset pages report `next` too, and a walk may continue from one with `after`.
    let from_offset = store
        .list_records(a, ObjectType::Deals, &page(5, 10))
        .await
        .unwrap();
    let rest = store
        .list_records(
            a,
            ObjectType::Deals,
            &Page::after(100, from_offset.next.unwrap(), false),
        )
        .await
        .unwrap();
    assert_eq!(ids(&rest.items, |r| r.id), by_offset[15..]);
    // The limit may change between pages.
    let first = store
        .list_records(a, ObjectType::Deals, &page(3, 0))
        .await
        .unwrap();
    let next = store
        .list_records(
            a,
            ObjectType::Deals,
            &Page::after(7, first.next.unwrap(), false),
        )
        .await
        .unwrap();
    assert_eq!(ids(&next.items, |r| r.id), by_offset[3..10]);
}

async fn a_cursor_walk_neither_skips_nor_repeats_while_items_are_created_and_archived(
    store: Arc<dyn Store>,
) {
    let a = new_id();
    let mut made = Vec::new();
    for i in 0..12i64 {
        let r = record(a, ObjectType::Tickets, i, &[]);
        store.create_record(&r, &[]).await.unwrap();
        made.push(r);
    }
    // First page of the active list, then: archive an item already seen and one not yet seen,
    // and create new ones (later creation times).
    let first = store
        .list_records(a, ObjectType::Tickets, &page(4, 0))
        .await
        .unwrap();
    assert_eq!(ids(&first.items, |r| r.id), ids(&made[..4], |r| r.id));
    archive(&store, &made[1], &[]).await;
    archive(&store, &made[6], &[]).await;
    let mut created = Vec::new();
    for i in 0..3i64 {
        let r = record(a, ObjectType::Tickets, 100 + i, &[]);
        store.create_record(&r, &[]).await.unwrap();
        created.push(r.id);
    }
    let mut seen = ids(&first.items, |r| r.id);
    let mut next = first.next;
    while let Some(p) = next {
        let listed = store
            .list_records(a, ObjectType::Tickets, &Page::after(4, p, false))
            .await
            .unwrap();
        seen.extend(listed.items.iter().map(|r| r.id));
        next = listed.next;
    }
    let mut expected: Vec<RecordId> = ids(&made, |r| r.id)
        .into_iter()
        .filter(|id| *id != made[6].id)
        .collect();
    expected.extend(created);
    assert_eq!(
        seen, expected,
        "no skip, no repeat; the item archived ahead is gone"
    );
    // The archived=true list still walks everything.
    assert_eq!(
        walk_records(&store, a, ObjectType::Tickets, 5, true)
            .await
            .len(),
        15
    );
}

async fn members_and_routers_walk_with_cursors(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    for i in 0..9 {
        plan.members
            .push(member(acc.id, &format!("m{i:02}@example.com"), i));
        plan.routers.push(router(acc.id, &format!("R{i}"), i));
    }
    provision(&store, vec![plan]).await;
    let mut emails = Vec::new();
    let mut p = Page::first(4, true);
    loop {
        let listed = store.list_members(acc.id, &p).await.unwrap();
        emails.extend(listed.items.iter().map(|m| m.email.as_str().to_string()));
        match listed.next {
            Some(pos) => p = Page::after(4, pos, true),
            None => break,
        }
    }
    let expected: Vec<String> = (0..9).map(|i| format!("m{i:02}@example.com")).collect();
    assert_eq!(emails, expected);
    let mut names = Vec::new();
    let mut p = Page::first(2, false);
    loop {
        let listed = store.list_routers(acc.id, &p).await.unwrap();
        names.extend(listed.items.iter().map(|r| r.name.clone()));
        match listed.next {
            Some(pos) => p = Page::after(2, pos, false),
            None => break,
        }
    }
    let expected: Vec<String> = (0..9).map(|i| format!("R{i}")).collect();
    assert_eq!(names, expected);
}

async fn a_second_active_record_with_a_taken_key_is_a_duplicate_naming_the_first_colliding_key(
    store: Arc<dyn Store>,
) {
    let a = new_id();
    let first = record(
        a,
        ObjectType::Contacts,
        1,
        &[("email", "jo@x.co"), ("external_id", "E1")],
    );
    store
        .create_record(&first, &contact_keys(&first))
        .await
        .unwrap();

    let both = record(
        a,
        ObjectType::Contacts,
        2,
        &[("email", "jo@x.co"), ("external_id", "E1")],
    );
    match store.create_record(&both, &contact_keys(&both)).await {
        Err(StoreError::Duplicate { field }) => assert_eq!(field, "email"),
        other => panic!("expected a duplicate email, got {other:?}"),
    }
    let second_key = record(
        a,
        ObjectType::Contacts,
        3,
        &[("email", "new@x.co"), ("external_id", "E1")],
    );
    match store
        .create_record(&second_key, &contact_keys(&second_key))
        .await
    {
        Err(StoreError::Duplicate { field }) => assert_eq!(field, "external_id"),
        other => panic!("expected a duplicate external_id, got {other:?}"),
    }
    // Nothing of the refused records was written: neither the records nor their free keys.
    assert_eq!(
        store
            .get_record(a, ObjectType::Contacts, second_key.id)
            .await
            .unwrap(),
        None
    );
    let listed = store
        .list_records(a, ObjectType::Contacts, &all(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&listed, |r| r.id), [first.id]);
    let free = record(a, ObjectType::Contacts, 4, &[("email", "new@x.co")]);
    store
        .create_record(&free, &contact_keys(&free))
        .await
        .unwrap();
}

async fn the_same_key_in_another_account_or_type_is_not_a_duplicate(store: Arc<dyn Store>) {
    let a = new_id();
    let b = new_id();
    let r = record(a, ObjectType::Deals, 1, &[("external_id", "X")]);
    store
        .create_record(&r, &[key("external_id", "X")])
        .await
        .unwrap();
    let other_account = record(b, ObjectType::Deals, 2, &[("external_id", "X")]);
    store
        .create_record(&other_account, &[key("external_id", "X")])
        .await
        .unwrap();
    let other_type = record(a, ObjectType::Tickets, 3, &[("external_id", "X")]);
    store
        .create_record(&other_type, &[key("external_id", "X")])
        .await
        .unwrap();
}

async fn twenty_concurrent_creates_with_one_key_let_exactly_one_succeed(store: Arc<dyn Store>) {
    let a = new_id();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let r = record(a, ObjectType::Contacts, i, &[("email", "race@x.co")]);
            store.create_record(&r, &contact_keys(&r)).await
        }));
    }
    let mut created = 0;
    let mut duplicates = 0;
    for t in tasks {
        match t.await.expect("task ran") {
            Ok(()) => created += 1,
            Err(StoreError::Duplicate { field }) if field == "email" => duplicates += 1,
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((created, duplicates), (1, 19));
    let listed = store
        .list_records(a, ObjectType::Contacts, &all(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(listed.len(), 1);
}

async fn a_record_id_that_exists_cannot_be_created_again(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(a, ObjectType::Contacts, 1, &[("email", "jo@x.co")]);
    store.create_record(&r, &contact_keys(&r)).await.unwrap();
    let mut again = r.clone();
    again.values.insert("email".into(), "other@x.co".into());
    match store.create_record(&again, &contact_keys(&again)).await {
        Err(StoreError::Conflict) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    match store.create_record(&r, &[]).await {
        Err(StoreError::Conflict) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    // The refused write claimed nothing.
    let free = record(a, ObjectType::Contacts, 2, &[("email", "other@x.co")]);
    store
        .create_record(&free, &contact_keys(&free))
        .await
        .unwrap();
    assert_eq!(
        store
            .get_record(a, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        Some(r)
    );
}

async fn archiving_a_record_releases_its_keys_for_reuse(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(
        a,
        ObjectType::Contacts,
        1,
        &[("email", "jo@x.co"), ("external_id", "E")],
    );
    store.create_record(&r, &contact_keys(&r)).await.unwrap();
    let archived = archive(&store, &r, &contact_keys(&r)).await;
    assert_eq!(
        store
            .get_record(a, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        Some(archived)
    );
    let reuse = record(
        a,
        ObjectType::Contacts,
        2,
        &[("email", "jo@x.co"), ("external_id", "E")],
    );
    store
        .create_record(&reuse, &contact_keys(&reuse))
        .await
        .unwrap();
    let found = store
        .find_by_unique_key(a, ObjectType::Contacts, &key("email", "jo@x.co"))
        .await
        .unwrap();
    assert_eq!(found.map(|r| r.id), Some(reuse.id));
}

async fn an_update_that_changes_a_key_moves_its_guard(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(
        a,
        ObjectType::Contacts,
        1,
        &[("email", "old@x.co"), ("external_id", "E")],
    );
    store.create_record(&r, &contact_keys(&r)).await.unwrap();
    let mut next = r.clone();
    next.values.insert("email".into(), "new@x.co".into());
    next.values.insert("first_name".into(), "Jo".into());
    next.version = 2;
    next.updated_at = at(5);
    store
        .update_record(
            &next,
            1,
            &[key("email", "new@x.co")],
            &[key("email", "old@x.co")],
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .get_record(a, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        Some(next.clone())
    );
    let by_new = store
        .find_by_unique_key(a, ObjectType::Contacts, &key("email", "new@x.co"))
        .await
        .unwrap();
    assert_eq!(by_new.map(|r| r.id), Some(r.id));
    assert_eq!(
        store
            .find_by_unique_key(a, ObjectType::Contacts, &key("email", "old@x.co"))
            .await
            .unwrap(),
        None
    );
    // The old key is free, the new one taken, the unchanged one still held.
    let old = record(a, ObjectType::Contacts, 2, &[("email", "old@x.co")]);
    store
        .create_record(&old, &contact_keys(&old))
        .await
        .unwrap();
    let new = record(a, ObjectType::Contacts, 3, &[("email", "new@x.co")]);
    assert!(matches!(
        store.create_record(&new, &contact_keys(&new)).await,
        Err(StoreError::Duplicate { .. })
    ));
    let ext = record(a, ObjectType::Contacts, 4, &[("external_id", "E")]);
    assert!(matches!(
        store.create_record(&ext, &contact_keys(&ext)).await,
        Err(StoreError::Duplicate { .. })
    ));
}

async fn an_update_claiming_a_key_held_by_another_record_is_a_duplicate_and_writes_nothing(
    store: Arc<dyn Store>,
) {
    let a = new_id();
    let holder = record(a, ObjectType::Companies, 1, &[("website_url", "acme.com")]);
    store
        .create_record(&holder, &[key("website_url", "acme.com")])
        .await
        .unwrap();
    let r = record(a, ObjectType::Companies, 2, &[("website_url", "beta.com")]);
    store
        .create_record(&r, &[key("website_url", "beta.com")])
        .await
        .unwrap();
    let mut next = r.clone();
    next.values.insert("website_url".into(), "acme.com".into());
    next.version = 2;
    match store
        .update_record(
            &next,
            1,
            &[key("website_url", "acme.com")],
            &[key("website_url", "beta.com")],
        )
        .await
    {
        Err(StoreError::Duplicate { field }) => assert_eq!(field, "website_url"),
        other => panic!("expected a duplicate, got {other:?}"),
    }
    assert_eq!(
        store
            .get_record(a, ObjectType::Companies, r.id)
            .await
            .unwrap(),
        Some(r.clone())
    );
    let still = store
        .find_by_unique_key(a, ObjectType::Companies, &key("website_url", "beta.com"))
        .await
        .unwrap();
    assert_eq!(still.map(|x| x.id), Some(r.id));
}

async fn an_update_at_a_stale_version_is_a_conflict_and_writes_nothing(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(a, ObjectType::Contacts, 1, &[("email", "jo@x.co")]);
    store.create_record(&r, &contact_keys(&r)).await.unwrap();
    let mut first = r.clone();
    first.values.insert("first_name".into(), "One".into());
    first.version = 2;
    store.update_record(&first, 1, &[], &[]).await.unwrap();
    let mut stale = r.clone();
    stale.values.insert("email".into(), "two@x.co".into());
    stale.version = 2;
    match store
        .update_record(
            &stale,
            1,
            &[key("email", "two@x.co")],
            &[key("email", "jo@x.co")],
        )
        .await
    {
        Err(StoreError::Conflict) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        store
            .get_record(a, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        Some(first)
    );
    let two = record(a, ObjectType::Contacts, 2, &[("email", "two@x.co")]);
    store
        .create_record(&two, &contact_keys(&two))
        .await
        .unwrap();
    // Updating a record that does not exist is a conflict too.
    let ghost = record(a, ObjectType::Contacts, 3, &[]);
    assert!(matches!(
        store.update_record(&ghost, 1, &[], &[]).await,
        Err(StoreError::Conflict)
    ));
}

async fn an_update_of_an_archived_record_is_a_conflict(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(a, ObjectType::Tickets, 1, &[("external_id", "T")]);
    store
        .create_record(&r, &[key("external_id", "T")])
        .await
        .unwrap();
    let archived = archive(&store, &r, &[key("external_id", "T")]).await;
    let mut next = archived.clone();
    next.archived_at = None;
    next.version = archived.version + 1;
    assert!(matches!(
        store
            .update_record(&next, archived.version, &[key("external_id", "T")], &[])
            .await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store
            .get_record(a, ObjectType::Tickets, r.id)
            .await
            .unwrap(),
        Some(archived)
    );
}

async fn find_by_unique_key_finds_only_the_active_holder_in_its_account_and_type(
    store: Arc<dyn Store>,
) {
    let a = new_id();
    let c = record(a, ObjectType::Companies, 1, &[("website_url", "acme.com")]);
    store
        .create_record(&c, &[key("website_url", "acme.com")])
        .await
        .unwrap();
    let k = key("website_url", "acme.com");
    assert_eq!(
        store
            .find_by_unique_key(a, ObjectType::Companies, &k)
            .await
            .unwrap(),
        Some(c.clone())
    );
    assert_eq!(
        store
            .find_by_unique_key(new_id(), ObjectType::Companies, &k)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .find_by_unique_key(a, ObjectType::Contacts, &k)
            .await
            .unwrap(),
        None
    );
    archive(&store, &c, std::slice::from_ref(&k)).await;
    assert_eq!(
        store
            .find_by_unique_key(a, ObjectType::Companies, &k)
            .await
            .unwrap(),
        None
    );
}

// ---- members, routers, roles, teams, fields, accounts, clients --------------------------------

async fn members_list_by_email_and_skip_archived_unless_asked(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let c = member(acc.id, "carol@x.co", 1);
    let a = member(acc.id, "a@x.com", 2);
    let a_short = member(acc.id, "a@x.co", 3);
    let mut b = member(acc.id, "bob@x.co", 4);
    b.archived_at = Some(at(10));
    b.archived_by = Some("provisioning".into());
    plan.members = vec![c.clone(), a.clone(), a_short.clone(), b.clone()];
    let other = account(None);
    let mut other_plan = plan_of(&other);
    other_plan.members = vec![member(other.id, "aaa@x.co", 1)];
    provision(&store, vec![plan, other_plan]).await;

    let active = store
        .list_members(acc.id, &page(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&active, |m| m.id), [a_short.id, a.id, c.id]);
    assert_eq!(active[0], a_short);
    let everyone = store
        .list_members(acc.id, &all(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&everyone, |m| m.id), [a_short.id, a.id, b.id, c.id]);
    let paged = store.list_members(acc.id, &all(2, 1)).await.unwrap().items;
    assert_eq!(ids(&paged, |m| m.id), [a.id, b.id]);
}

async fn a_member_is_found_by_id_or_case_insensitive_email_only_in_its_account(
    store: Arc<dyn Store>,
) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let m = member(acc.id, "jo@x.co", 1);
    let mut gone = member(acc.id, "gone@x.co", 2);
    gone.archived_at = Some(at(5));
    gone.archived_by = Some("provisioning".into());
    plan.members = vec![m.clone(), gone.clone(), member(acc.id, "jo@x.com", 3)];
    provision(&store, vec![plan]).await;

    assert_eq!(
        store.get_member(acc.id, m.id).await.unwrap(),
        Some(m.clone())
    );
    assert_eq!(store.get_member(new_id(), m.id).await.unwrap(), None);
    assert_eq!(
        store.find_member_by_email(acc.id, "Jo@X.co").await.unwrap(),
        Some(m.clone())
    );
    assert_eq!(
        store
            .find_member_by_email(acc.id, "gone@x.co")
            .await
            .unwrap(),
        Some(gone)
    );
    assert_eq!(
        store.find_member_by_email(acc.id, "jo@x.c").await.unwrap(),
        None
    );
    assert_eq!(
        store
            .find_member_by_email(new_id(), "jo@x.co")
            .await
            .unwrap(),
        None
    );
}

/// Issue 13 defect 8: `a#b@x.co` begins with `a#`, the sort-key prefix of a lookup of `a`;
/// only the whole address finds a member.
async fn a_member_lookup_by_email_matches_the_whole_address_never_a_prefix(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let hashed = member(acc.id, "a#b@x.co", 1);
    let plain = member(acc.id, "a@x.co", 2);
    plan.members = vec![hashed.clone(), plain.clone()];
    provision(&store, vec![plan]).await;
    for (lookup, expected) in [
        ("a", None),
        ("a#b", None),
        ("a#b@x", None),
        ("a#b@x.c", None),
        ("a@x.c", None),
        ("a#b@x.co", Some(&hashed)),
        ("A#B@X.CO", Some(&hashed)),
        ("a@x.co", Some(&plain)),
    ] {
        assert_eq!(
            store
                .find_member_by_email(acc.id, lookup)
                .await
                .unwrap()
                .as_ref(),
            expected,
            "{lookup}"
        );
    }
}

async fn a_member_update_is_conditional_on_version_and_activity(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let m = member(acc.id, "jo@x.co", 1);
    let mut gone = member(acc.id, "gone@x.co", 2);
    gone.archived_at = Some(at(5));
    gone.archived_by = Some("provisioning".into());
    plan.members = vec![m.clone(), gone.clone()];
    provision(&store, vec![plan]).await;

    let mut next = m.clone();
    next.office_status = false;
    next.phone = Some("+1 555".into());
    next.version = 2;
    store
        .update_member(&next, 1, &shared::model::CalendarRefs::none())
        .await
        .unwrap();
    assert_eq!(
        store.get_member(acc.id, m.id).await.unwrap(),
        Some(next.clone())
    );

    let mut stale = m.clone();
    stale.first_name = Some("Stale".into());
    stale.version = 2;
    assert!(matches!(
        store
            .update_member(&stale, 1, &shared::model::CalendarRefs::none())
            .await,
        Err(StoreError::Conflict)
    ));
    let mut archived = gone.clone();
    archived.version = 2;
    assert!(matches!(
        store
            .update_member(&archived, 1, &shared::model::CalendarRefs::none())
            .await,
        Err(StoreError::Conflict)
    ));
    let mut foreign = next.clone();
    foreign.account_id = new_id();
    foreign.version = 3;
    assert!(matches!(
        store
            .update_member(&foreign, 2, &shared::model::CalendarRefs::none())
            .await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(store.get_member(acc.id, m.id).await.unwrap(), Some(next));
    assert_eq!(store.get_member(acc.id, gone.id).await.unwrap(), Some(gone));
}

async fn routers_list_by_creation_and_skip_archived_unless_asked(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let r2 = router(acc.id, "second", 20);
    let r1 = router(acc.id, "first", 10);
    let mut r3 = router(acc.id, "archived", 30);
    r3.archived_at = Some(at(40));
    r3.archived_by = Some("provisioning".into());
    plan.routers = vec![r2.clone(), r1.clone(), r3.clone()];
    provision(&store, vec![plan]).await;

    let active = store
        .list_routers(acc.id, &page(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(active, vec![r1.clone(), r2.clone()]);
    let every = store
        .list_routers(acc.id, &all(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&every, |r| r.id), [r1.id, r2.id, r3.id]);
    let paged = store.list_routers(acc.id, &all(1, 2)).await.unwrap().items;
    assert_eq!(ids(&paged, |r| r.id), [r3.id]);
    assert!(store
        .list_routers(new_id(), &all(100, 0))
        .await
        .unwrap()
        .items
        .is_empty());
}

async fn a_router_is_found_in_its_account_and_by_id_alone(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let mut r = router(acc.id, "with settings", 1);
    r.settings = Some(shared::model::RouterSettings {
        overwrite: false,
        owner_field: Some("contact_owner".into()),
        distribution_model: Some(shared::model::DistributionModel::Percentage),
        default_user: None,
        disable_default_assignment: false,
        ignore_working_hours: true,
        account_matching: false,
        rotation_type: shared::model::RotationType::Users,
        trigger: Some(
            serde_json::from_value(serde_json::json!({"groups": [{"conditions": [
                {"field": "country", "operator": "equals", "value": "US"},
                {"field": "annual_revenue", "operator": "greater_than", "value": 1000000},
                {"field": "lifecycle_stage", "operator": "in", "value": ["lead", "customer"]},
                {"field": "email", "operator": "is_empty"}
            ]}]}))
            .expect("trigger"),
        ),
        // BEHAVIOR 14: the SLA setting reads back as stored, given and stored values both.
        sla: Some(shared::model::SlaSetting {
            minutes: shared::model::SlaMinutes::parse(90).unwrap(),
            worked_field: "lead_status".into(),
            worked_values: Some(shared::model::WorkedValues {
                given: vec![serde_json::json!("In Progress"), serde_json::json!(3)],
                canonical: vec!["in_progress".into(), "3".into()],
            }),
        }),
        holiday_calendar_id: None,
    });
    r.users = vec![
        shared::model::RouterUser {
            email: Email::parse("a@x.co").unwrap(),
            percentage: Some(62.5),
        },
        shared::model::RouterUser {
            email: Email::parse("b@x.co").unwrap(),
            percentage: Some(37.5),
        },
    ];
    plan.routers = vec![r.clone()];
    provision(&store, vec![plan]).await;

    assert_eq!(
        store.get_router(acc.id, r.id).await.unwrap(),
        Some(r.clone())
    );
    assert_eq!(store.get_router(new_id(), r.id).await.unwrap(), None);
    assert_eq!(store.find_router(r.id).await.unwrap(), Some(r));
    assert_eq!(store.find_router(new_id()).await.unwrap(), None);
}

async fn roles_and_teams_are_listed_per_account(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let roles = vec![
        Role {
            id: new_id(),
            account_id: acc.id,
            name: "Sales Rep".into(),
        },
        Role {
            id: new_id(),
            account_id: acc.id,
            name: "Manager".into(),
        },
    ];
    let team = |name: &str, ms: i64| Team {
        id: new_id(),
        account_id: acc.id,
        name: name.into(),
        members: vec![
            Email::parse("a@x.co").unwrap(),
            Email::parse("b@x.co").unwrap(),
        ],
        created_at: at(ms),
    };
    let teams = vec![team("Zeta", 1), team("Alpha", 2)];
    plan.roles = roles.clone();
    plan.teams = teams.clone();
    provision(&store, vec![plan, plan_of(&account(None))]).await;

    let mut listed = store.list_roles(acc.id).await.unwrap();
    listed.sort_by_key(|r| r.id);
    let mut expected = roles;
    expected.sort_by_key(|r| r.id);
    assert_eq!(listed, expected);
    assert_eq!(store.list_teams(acc.id).await.unwrap(), teams);
    assert!(store.list_roles(new_id()).await.unwrap().is_empty());
    assert!(store.list_teams(new_id()).await.unwrap().is_empty());
}

fn definition(object_type: ObjectType, name: &str, options: &[&str]) -> FieldDefinition {
    FieldDefinition {
        object_type,
        internal_name: name.into(),
        name: format!("Display {name}"),
        field_type: if options.is_empty() {
            FieldType::String
        } else {
            FieldType::Enumeration
        },
        options: options
            .iter()
            .map(|o| EnumOption {
                internal_name: o.to_string(),
                name: o.to_uppercase(),
            })
            .collect(),
    }
}

async fn field_definitions_read_back_in_definition_order_per_account(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let defs = vec![
        definition(ObjectType::Contacts, "zone", &[]),
        definition(
            ObjectType::Contacts,
            "lifecycle_stage",
            &["zombie", "angel"],
        ),
        definition(ObjectType::Deals, "area", &[]),
        definition(ObjectType::Contacts, "alpha", &[]),
    ];
    plan.field_definitions = defs.clone();
    provision(&store, vec![plan]).await;
    let mut more = plan_of(&acc);
    let later = definition(ObjectType::Contacts, "aardvark", &[]);
    more.field_definitions = vec![defs[0].clone(), later.clone()];
    provision(&store, vec![more]).await;

    let mut expected = defs;
    expected.push(later);
    assert_eq!(store.field_definitions(acc.id).await.unwrap(), expected);
    assert!(store.field_definitions(new_id()).await.unwrap().is_empty());
}

async fn accounts_and_clients_read_back_by_id(store: Arc<dyn Store>) {
    let mut acc = account(Some(100));
    acc.crm = Some(shared::model::CrmConnection {
        provider: "hubspot".into(),
        base_url: "http://127.0.0.1:9/crm".into(),
        credentials: shared::model::account::SealedCrmCredentials::PrivateApp {
            access_token: shared::model::account::SealedSecret::new("local:c2VhbGVk"),
        },
        id_properties: Default::default(),
    });
    let mut plan = plan_of(&acc);
    let client = ApiClient {
        client_id: "acme-integration".into(),
        account_id: acc.id,
        secret_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
        scopes: vec![Scope::Read, Scope::Update],
    };
    plan.clients = vec![client.clone()];
    let inactive = Account {
        active: false,
        assignment_quota: None,
        ..account(None)
    };
    // An OAuth app's connection with id properties (BEHAVIOR 7) reads back as stored.
    let mut oauth = account(None);
    oauth.crm = Some(shared::model::CrmConnection {
        provider: "hubspot".into(),
        base_url: "http://127.0.0.1:9/crm".into(),
        credentials: shared::model::account::SealedCrmCredentials::OAuth {
            oauth: shared::model::account::SealedOAuthApp {
                client_id: "routing-app".into(),
                client_secret: shared::model::account::SealedSecret::new("local:c2VjcmV0"),
                refresh_token: shared::model::account::SealedSecret::new("local:cmVmcmVzaA=="),
            },
        },
        id_properties: shared::model::account::IdProperties::new([(
            shared::model::ObjectType::Contacts,
            "email".to_string(),
        )]),
    });
    provision(&store, vec![plan, plan_of(&inactive), plan_of(&oauth)]).await;
    assert_eq!(store.get_account(oauth.id).await.unwrap(), Some(oauth));
    assert_eq!(store.get_account(acc.id).await.unwrap(), Some(acc));
    assert_eq!(
        store.get_account(inactive.id).await.unwrap(),
        Some(inactive)
    );
    assert_eq!(store.get_account(new_id()).await.unwrap(), None);
    assert_eq!(
        store.get_client("acme-integration").await.unwrap(),
        Some(client)
    );
    assert_eq!(store.get_client("nobody").await.unwrap(), None);
}

// ---- provisioning -----------------------------------------------------------------------

fn full_plan() -> (Account, AccountPlan) {
    let acc = account(Some(10));
    let mut plan = plan_of(&acc);
    plan.clients = vec![ApiClient {
        client_id: format!("client-{}", acc.id),
        account_id: acc.id,
        secret_hash: "hash".into(),
        scopes: vec![Scope::Read],
    }];
    plan.roles = vec![Role {
        id: new_id(),
        account_id: acc.id,
        name: "Rep".into(),
    }];
    plan.members = vec![member(acc.id, "a@x.co", 1), member(acc.id, "b@x.co", 2)];
    plan.teams = vec![Team {
        id: new_id(),
        account_id: acc.id,
        name: "T".into(),
        members: vec![Email::parse("a@x.co").unwrap()],
        created_at: at(3),
    }];
    plan.field_definitions = vec![definition(ObjectType::Contacts, "region", &[])];
    plan.routers = vec![router(acc.id, "R", 4)];
    plan.records = vec![
        planned(
            record(
                acc.id,
                ObjectType::Contacts,
                5,
                &[("email", "c1@x.co"), ("external_id", "C1")],
            ),
            "accounts[0].records.contacts[0]",
        ),
        planned(
            record(acc.id, ObjectType::Contacts, 6, &[("email", "c2@x.co")]),
            "accounts[0].records.contacts[1]",
        ),
    ];
    (acc, plan)
}

async fn provisioning_twice_inserts_once_and_skips_every_item_the_second_time(
    store: Arc<dyn Store>,
) {
    let (acc, plan) = full_plan();
    let plan = ProvisionPlan {
        accounts: vec![plan],
    };
    let first = store.provision(&plan).await.unwrap();
    assert_eq!(first.inserted, 10);
    assert!(first.skipped.is_empty(), "{:?}", first.skipped);
    let second = store.provision(&plan).await.unwrap();
    assert_eq!(second.inserted, 0);
    let a = &plan.accounts[0];
    let expected: Vec<String> = [format!("account {}", acc.id)]
        .into_iter()
        .chain(a.clients.iter().map(|c| format!("client {}", c.client_id)))
        .chain(a.roles.iter().map(|r| format!("role {}", r.id)))
        .chain(a.members.iter().map(|m| format!("member {}", m.id)))
        .chain(a.teams.iter().map(|t| format!("team {}", t.id)))
        .chain(["field contacts.region".to_string()])
        .chain(a.routers.iter().map(|r| format!("router {}", r.id)))
        .chain(a.records.iter().map(|p| format!("record {}", p.record.id)))
        .collect();
    assert_eq!(second.skipped, expected);
    let records = store
        .list_records(acc.id, ObjectType::Contacts, &all(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(records.len(), 2);
    let held = store
        .find_by_unique_key(acc.id, ObjectType::Contacts, &key("external_id", "C1"))
        .await
        .unwrap();
    assert_eq!(held.map(|r| r.id), Some(a.records[0].record.id));
}

async fn a_reload_never_clobbers_what_changed_since(store: Arc<dyn Store>) {
    let (acc, plan) = full_plan();
    let plan = ProvisionPlan {
        accounts: vec![plan],
    };
    store.provision(&plan).await.unwrap();
    let m = plan.accounts[0].members[0].clone();
    let mut changed = m.clone();
    changed.office_status = false;
    changed.version = 2;
    store
        .update_member(&changed, 1, &shared::model::CalendarRefs::none())
        .await
        .unwrap();
    let r = plan.accounts[0].records[1].record.clone();
    let archived = archive(&store, &r, &contact_keys(&r)).await;
    let again = store.provision(&plan).await.unwrap();
    assert_eq!(again.inserted, 0);
    assert_eq!(store.get_member(acc.id, m.id).await.unwrap(), Some(changed));
    assert_eq!(
        store
            .get_record(acc.id, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        Some(archived)
    );
}

async fn provisioning_a_record_whose_key_is_taken_is_rejected_with_its_path_and_writes_nothing(
    store: Arc<dyn Store>,
) {
    let (acc, plan) = full_plan();
    let holder = record(acc.id, ObjectType::Contacts, 0, &[("email", "c2@x.co")]);
    store
        .create_record(&holder, &contact_keys(&holder))
        .await
        .unwrap();
    match store.provision(&ProvisionPlan { accounts: vec![plan.clone()] }).await {
        Err(StoreError::Rejected(message)) => assert_eq!(
            message,
            "accounts[0].records.contacts[1].fields.email: an active contact already holds email \"c2@x.co\""
        ),
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(store.get_account(acc.id).await.unwrap(), None);
    assert_eq!(
        store.get_client(&plan.clients[0].client_id).await.unwrap(),
        None
    );
    assert_eq!(
        store.get_member(acc.id, plan.members[0].id).await.unwrap(),
        None
    );
    assert_eq!(store.find_router(plan.routers[0].id).await.unwrap(), None);
    assert!(store.field_definitions(acc.id).await.unwrap().is_empty());
    assert!(store.list_teams(acc.id).await.unwrap().is_empty());
    let records = store
        .list_records(acc.id, ObjectType::Contacts, &all(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&records, |r| r.id), [holder.id]);
    // The first record's keys were not claimed either.
    let c1 = record(acc.id, ObjectType::Contacts, 9, &[("email", "c1@x.co")]);
    store.create_record(&c1, &contact_keys(&c1)).await.unwrap();
}

async fn a_plan_larger_than_one_transaction_loads_completely(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    plan.members = (0..30)
        .map(|i| member(acc.id, &format!("m{i:02}@x.co"), i))
        .collect();
    plan.records = (0..70)
        .map(|i| {
            planned(
                record(
                    acc.id,
                    ObjectType::Contacts,
                    100 + i,
                    &[
                        ("email", &format!("c{i}@x.co")),
                        ("external_id", &format!("E{i}")),
                    ],
                ),
                &format!("accounts[0].records.contacts[{i}]"),
            )
        })
        .collect();
    let plan = ProvisionPlan {
        accounts: vec![plan],
    };
    let report = store.provision(&plan).await.unwrap();
    assert_eq!(report.inserted, 101);
    let records = store
        .list_records(acc.id, ObjectType::Contacts, &page(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(records.len(), 70);
    let tail = store
        .list_records(acc.id, ObjectType::Contacts, &page(100, 60))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&tail, |r| r.id), ids(&records[60..], |r| r.id));
    assert_eq!(
        store
            .list_members(acc.id, &page(100, 0))
            .await
            .unwrap()
            .items
            .len(),
        30
    );
    let again = store.provision(&plan).await.unwrap();
    assert_eq!((again.inserted, again.skipped.len()), (0, 101));
    let dup = record(acc.id, ObjectType::Contacts, 999, &[("external_id", "E69")]);
    assert!(matches!(
        store.create_record(&dup, &contact_keys(&dup)).await,
        Err(StoreError::Duplicate { .. })
    ));
}

// ---- the assignment transaction ---------------------------------------------------------

struct Scene {
    account: Account,
    member: Member,
    router: Router,
    record: Record,
}

async fn scene(store: &Arc<dyn Store>, quota: Option<u64>) -> Scene {
    let acc = account(quota);
    let mut plan = plan_of(&acc);
    let m = member(acc.id, "rep@x.co", 1);
    let r = router(acc.id, "R", 2);
    let rec = record(acc.id, ObjectType::Contacts, 3, &[("email", "lead@x.co")]);
    plan.members = vec![m.clone()];
    plan.routers = vec![r.clone()];
    plan.records = vec![planned(rec.clone(), "accounts[0].records.contacts[0]")];
    provision(store, vec![plan]).await;
    Scene {
        account: acc,
        member: m,
        router: r,
        record: rec,
    }
}

fn assignment(s: &Scene, month: &str, idempotency_key: Option<&str>) -> AssignmentWrite {
    let now = at(1000);
    let mut record = s.record.clone();
    record
        .values
        .insert("contact_owner".into(), s.member.email.to_string());
    record.values.insert(
        "contact_owner_assigned_date".into(),
        "2026-03-10T09:00:01.000Z".into(),
    );
    record.updated_at = now;
    record.version = s.record.version + 1;
    let mut member = s.member.clone();
    member.capacity[0] = member.capacity[0].counted();
    member.version = s.member.version + 1;
    let rotation = RotationState {
        version: 1,
        last_member: Some(s.member.email.to_string()),
        counts: BTreeMap::from([(s.member.email.to_string(), 1)]),
        total: 1,
        ..RotationState::default()
    };
    AssignmentWrite {
        record,
        record_version: s.record.version,
        router_version: s.router.version,
        rotation: Some((s.router.id, rotation, 0)),
        chosen: (s.member.id, s.member.version),
        member: Some((member, s.member.version)),
        month: month.into(),
        quota: s.account.assignment_quota,
        entry: DispatchEntry {
            id: new_id_v7(),
            account_id: s.account.id,
            router_id: s.router.id,
            router_revision: 1,
            object_type: ObjectType::Contacts,
            object_id: s.record.id.to_string(),
            message: "Owner assigned".into(),
            success: true,
            user: Some(s.member.email.to_string()),
            reason: Some(AssignmentReason::Rotation),
            previous_owner: None,
            field_name: Some("Contact owner".into()),
            owner_field: Some("contact_owner".into()),
            source: DispatchSource::Api,
            dispatched_at: now,
            crm_sync: None,
            sla: None,
            expires_at: now + Duration::days(400),
        },
        idempotency_key: idempotency_key.map(str::to_string),
        due: Default::default(),
        completion: None,
        ends_check: None,
    }
}

/// The record's history entries (first 100, newest first).
async fn record_history(
    store: &Arc<dyn Store>, account: AccountId, record: RecordId,
) -> Vec<DispatchEntry> {
    store
        .list_record_dispatches(
            account,
            ObjectType::Contacts,
            record,
            &Page::first(100, false),
        )
        .await
        .unwrap()
        .items
}

/// Asserts that no part of an assignment was written.
async fn nothing_assigned(store: &Arc<dyn Store>, s: &Scene, key: Option<&str>) {
    let acc = s.account.id;
    assert_eq!(
        store
            .get_record(acc, ObjectType::Contacts, s.record.id)
            .await
            .unwrap(),
        Some(s.record.clone())
    );
    assert_eq!(
        store.rotation_state(s.router.id).await.unwrap(),
        RotationState::default()
    );
    assert_eq!(
        store.get_member(acc, s.member.id).await.unwrap(),
        Some(s.member.clone())
    );
    assert_eq!(store.assignment_count(acc, "2026-03").await.unwrap(), 0);
    assert!(record_history(store, acc, s.record.id).await.is_empty());
    if let Some(key) = key {
        assert!(!store.idempotency_key_used(key).await.unwrap());
    }
}

async fn an_assignment_writes_record_rotation_member_count_and_log_together(store: Arc<dyn Store>) {
    let s = scene(&store, Some(5)).await;
    let w = assignment(&s, "2026-03", Some("msg-1"));
    assert!(!store.idempotency_key_used("msg-1").await.unwrap());
    store.commit_assignment(&w).await.unwrap();
    let acc = s.account.id;
    assert_eq!(
        store
            .get_record(acc, ObjectType::Contacts, s.record.id)
            .await
            .unwrap(),
        Some(w.record.clone())
    );
    let rotation = w.rotation.as_ref().map(|(_, r, _)| r.clone()).unwrap();
    assert_eq!(store.rotation_state(s.router.id).await.unwrap(), rotation);
    assert_eq!(
        store.get_member(acc, s.member.id).await.unwrap(),
        w.member.as_ref().map(|(m, _)| m.clone())
    );
    assert_eq!(store.assignment_count(acc, "2026-03").await.unwrap(), 1);
    assert_eq!(
        record_history(&store, acc, s.record.id).await,
        vec![w.entry.clone()]
    );
    assert!(record_history(&store, new_id(), s.record.id)
        .await
        .is_empty());
    assert!(store.idempotency_key_used("msg-1").await.unwrap());

    // A second assignment from the written state: the rotation moves on, the count grows,
    // the history keeps both, newest first.
    let mut next = assignment(&s, "2026-03", None);
    next.record_version = w.record.version;
    next.record = w.record.clone();
    next.record.version = w.record.version + 1;
    let mut rotation2 = rotation.clone();
    rotation2.version = 2;
    rotation2.total = 2;
    next.rotation = Some((s.router.id, rotation2.clone(), 1));
    next.member = None;
    next.chosen = (s.member.id, s.member.version + 1);
    next.entry.id = new_id_v7();
    next.entry.dispatched_at = w.entry.dispatched_at + Duration::seconds(1);
    next.entry.reason = Some(AssignmentReason::Backup);
    store.commit_assignment(&next).await.unwrap();
    assert_eq!(store.rotation_state(s.router.id).await.unwrap(), rotation2);
    assert_eq!(store.assignment_count(acc, "2026-03").await.unwrap(), 2);
    assert_eq!(
        record_history(&store, acc, s.record.id).await,
        vec![next.entry, w.entry]
    );
}

/// The first assignment of `s` with an SLA check `pending` and its due item stored with it.
async fn assigned_with_a_check(store: &Arc<dyn Store>, s: &Scene) -> AssignmentWrite {
    let mut w = assignment(s, "2026-03", None);
    w.entry.sla = Some(shared::model::SlaState::pending(
        w.entry.dispatched_at + Duration::minutes(30),
    ));
    w.due.put.push(shared::model::due::DueItem::new(
        shared::sla::CheckSubject::due_id(&w.entry.key()),
        serde_json::Value::Null,
        at(2000),
        at(2000),
    ));
    store.commit_assignment(&w).await.unwrap();
    w
}

/// The SLA status of the record's history entries, newest first.
async fn sla_statuses(store: &Arc<dyn Store>, s: &Scene) -> Vec<Option<shared::model::SlaStatus>> {
    record_history(store, s.account.id, s.record.id)
        .await
        .iter()
        .map(|e| e.sla.map(|sla| sla.status))
        .collect()
}

async fn an_sla_check_ends_once_from_pending_with_its_items_settlement(store: Arc<dyn Store>) {
    use shared::model::due::{DueChanges, Lease};
    use shared::model::SlaStatus;
    let s = scene(&store, None).await;
    let w = assigned_with_a_check(&store, &s).await;
    let key = w.entry.key();
    let item = w.due.put[0].id.clone();
    let lease = Lease::new(at(2000), std::time::Duration::from_secs(60));
    store
        .claim_due(&item, 0, &lease, at(2000))
        .await
        .unwrap()
        .unwrap();
    let settle = |lease_id: &str| {
        DueChanges::settling(shared::model::due::Settlement {
            id: item.clone(),
            lease_id: lease_id.into(),
            next: None,
        })
    };
    // Another worker's lease: nothing written.
    assert!(matches!(
        store
            .end_sla_check(&key, SlaStatus::Met, &settle("other"))
            .await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(sla_statuses(&store, &s).await, [Some(SlaStatus::Pending)]);
    assert!(store.get_due(&item).await.unwrap().is_some());
    // The holder ends it: status and settlement in one write.
    store
        .end_sla_check(&key, SlaStatus::Met, &settle(&lease.id))
        .await
        .unwrap();
    assert_eq!(sla_statuses(&store, &s).await, [Some(SlaStatus::Met)]);
    assert_eq!(store.get_due(&item).await.unwrap(), None);
    // A final status never changes again; an entry without a check or no entry has none.
    for status in [SlaStatus::Expired, SlaStatus::Met] {
        assert!(matches!(
            store.end_sla_check(&key, status, &DueChanges::none()).await,
            Err(StoreError::Conflict)
        ));
    }
    let mut missing = key.clone();
    missing.id = new_id_v7();
    assert!(matches!(
        store
            .end_sla_check(&missing, SlaStatus::Cancelled, &DueChanges::none())
            .await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(sla_statuses(&store, &s).await, [Some(SlaStatus::Met)]);
}

async fn a_reassignment_ends_its_check_in_its_own_write_and_only_once(store: Arc<dyn Store>) {
    use shared::model::SlaStatus;
    let s = scene(&store, None).await;
    let w = assigned_with_a_check(&store, &s).await;
    let reassignment = |record_version: u64, rotation_version: u64| {
        let mut next = assignment(&s, "2026-03", None);
        next.record_version = record_version;
        next.record = w.record.clone();
        next.record.version = record_version + 1;
        next.rotation = next.rotation.map(|(router, mut state, _)| {
            state.version = rotation_version + 1;
            (router, state, rotation_version)
        });
        next.member = None;
        next.chosen = (s.member.id, s.member.version + 1);
        next.entry.id = new_id_v7();
        next.entry.dispatched_at = w.entry.dispatched_at + Duration::seconds(1);
        next.entry.reason = Some(AssignmentReason::SlaReassignment);
        next.entry.source = DispatchSource::Sla;
        next.ends_check = Some(w.entry.key());
        next
    };
    let first = reassignment(w.record.version, 1);
    store.commit_assignment(&first).await.unwrap();
    assert_eq!(
        sla_statuses(&store, &s).await,
        [None, Some(SlaStatus::Reassigned)]
    );
    // A second run of the same check, even on fresh versions, is refused like a lost lease.
    let second = reassignment(first.record.version, 2);
    assert!(matches!(
        store.commit_assignment(&second).await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(
        store
            .get_record(s.account.id, ObjectType::Contacts, s.record.id)
            .await
            .unwrap()
            .map(|r| r.version),
        Some(first.record.version),
        "nothing of the second run written"
    );
    assert_eq!(
        record_history(&store, s.account.id, s.record.id)
            .await
            .len(),
        2
    );
}

async fn an_assignment_on_a_stale_record_writes_nothing(store: Arc<dyn Store>) {
    let s = scene(&store, None).await;
    let mut w = assignment(&s, "2026-03", Some("k"));
    w.record_version = 7;
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    nothing_assigned(&store, &s, Some("k")).await;
}

async fn an_assignment_on_a_stale_rotation_writes_nothing(store: Arc<dyn Store>) {
    let s = scene(&store, None).await;
    let mut w = assignment(&s, "2026-03", Some("k"));
    if let Some((_, _, version)) = w.rotation.as_mut() {
        *version = 3;
    }
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    nothing_assigned(&store, &s, Some("k")).await;
}

/// BEHAVIOR 15: an assignment commits only while the router is still at the version its run
/// read, so never by a revision that a publish replaced in between.
async fn an_assignment_by_a_revision_no_longer_live_writes_nothing(store: Arc<dyn Store>) {
    let s = scene(&store, None).await;
    let mut published = s.router.clone();
    published.revision = 2;
    published.version = s.router.version + 1;
    let write = shared::model::RouterWrite {
        router: published,
        expected_version: s.router.version,
        revision: None,
        draft: shared::model::DraftChange::Keep,
        rotation: None,
        archives: false,
        completion: None,
        calendars: Default::default(),
    };
    store.write_router(&write).await.unwrap();
    let w = assignment(&s, "2026-03", Some("k"));
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    nothing_assigned(&store, &s, Some("k")).await;
    let mut again = assignment(&s, "2026-03", Some("k"));
    again.router_version = s.router.version + 1;
    again.entry.router_revision = 2;
    store.commit_assignment(&again).await.unwrap();
}

/// Issue 13 defect 4: without a capacity entry to count, the chosen member is still a condition
/// of the write: a member changed (e.g. switched off) or archived since it was read is never
/// assigned.
async fn an_assignment_without_counters_still_needs_the_member_active_at_the_version_read(
    store: Arc<dyn Store>,
) {
    let s = scene(&store, None).await;
    let mut w = assignment(&s, "2026-03", Some("k"));
    w.member = None;
    w.chosen = (s.member.id, s.member.version + 3);
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    nothing_assigned(&store, &s, Some("k")).await;
    // Archived at the version read: refused too.
    let mut archived = s.member.clone();
    archived.archived_at = Some(at(500));
    archived.version = s.member.version + 1;
    store
        .update_member(
            &archived,
            s.member.version,
            &shared::model::CalendarRefs::none(),
        )
        .await
        .unwrap();
    let mut w = assignment(&s, "2026-03", Some("k"));
    w.member = None;
    w.chosen = (s.member.id, archived.version);
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    assert!(record_history(&store, s.account.id, s.record.id)
        .await
        .is_empty());
    // At the version read and active: written.
    let s = scene(&store, None).await;
    let mut w = assignment(&s, "2026-03", None);
    w.member = None;
    store.commit_assignment(&w).await.unwrap();
    assert_eq!(
        store.get_member(s.account.id, s.member.id).await.unwrap(),
        Some(s.member.clone()),
        "a condition check writes nothing"
    );
}

async fn an_assignment_on_a_stale_or_archived_member_writes_nothing(store: Arc<dyn Store>) {
    let s = scene(&store, None).await;
    let mut w = assignment(&s, "2026-03", Some("k"));
    if let Some((_, version)) = w.member.as_mut() {
        *version = 9;
    }
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    nothing_assigned(&store, &s, Some("k")).await;

    // Archive the member, then try at the right version.
    let mut archived = s.member.clone();
    archived.archived_at = Some(at(50));
    archived.archived_by = Some("admin".into());
    archived.version = 2;
    store
        .update_member(&archived, 1, &shared::model::CalendarRefs::none())
        .await
        .unwrap();
    let mut w = assignment(&s, "2026-03", None);
    if let Some((m, version)) = w.member.as_mut() {
        *version = 2;
        m.version = 3;
    }
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-03")
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .get_record(s.account.id, ObjectType::Contacts, s.record.id)
            .await
            .unwrap(),
        Some(s.record.clone())
    );
}

async fn an_assignment_past_the_quota_writes_nothing(store: Arc<dyn Store>) {
    let s = scene(&store, Some(1)).await;
    // Another record uses up this month's quota of one.
    let other = record(s.account.id, ObjectType::Contacts, 9, &[]);
    store.create_record(&other, &[]).await.unwrap();
    let first = Scene {
        account: s.account.clone(),
        member: s.member.clone(),
        router: s.router.clone(),
        record: other.clone(),
    };
    let mut w = assignment(&first, "2026-03", None);
    w.rotation = None;
    w.member = None;
    store.commit_assignment(&w).await.unwrap();
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-03")
            .await
            .unwrap(),
        1
    );

    let w = assignment(&s, "2026-03", Some("k"));
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-03")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .get_record(s.account.id, ObjectType::Contacts, s.record.id)
            .await
            .unwrap(),
        Some(s.record.clone())
    );
    assert_eq!(
        store.rotation_state(s.router.id).await.unwrap(),
        RotationState::default()
    );
    assert!(!store.idempotency_key_used("k").await.unwrap());

    // A quota of zero admits nothing, even in a fresh month.
    let mut zero = assignment(&s, "2026-04", None);
    zero.quota = Some(0);
    assert!(matches!(
        store.commit_assignment(&zero).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-04")
            .await
            .unwrap(),
        0
    );
    // The next month starts from zero.
    let april = assignment(&s, "2026-04", None);
    store.commit_assignment(&april).await.unwrap();
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-04")
            .await
            .unwrap(),
        1
    );
}

async fn an_assignment_with_a_used_idempotency_key_is_already_applied(store: Arc<dyn Store>) {
    let s = scene(&store, Some(100)).await;
    let w = assignment(&s, "2026-03", Some("msg-7"));
    store.commit_assignment(&w).await.unwrap();
    // The redelivered message, even re-read at the new versions, is recognised.
    let mut again = assignment(&s, "2026-03", Some("msg-7"));
    again.record_version = w.record.version;
    again.record.version = w.record.version + 1;
    again.rotation = None;
    again.member = None;
    again.entry.id = new_id_v7();
    assert!(matches!(
        store.commit_assignment(&again).await,
        Err(StoreError::AlreadyApplied)
    ));
    // Also when other conditions fail at the same time.
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::AlreadyApplied)
    ));
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-03")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        record_history(&store, s.account.id, s.record.id)
            .await
            .len(),
        1
    );
}

async fn monthly_counts_are_per_account_and_month(store: Arc<dyn Store>) {
    // Issue 14: an account without a quota keeps no count (no write every router contends on).
    let unlimited = scene(&store, None).await;
    let mut w = assignment(&unlimited, "2026-03", None);
    w.rotation = None;
    w.member = None;
    store.commit_assignment(&w).await.unwrap();
    assert_eq!(
        store
            .assignment_count(unlimited.account.id, "2026-03")
            .await
            .unwrap(),
        0
    );
    let s = scene(&store, Some(100)).await;
    let mut w = assignment(&s, "2026-03", None);
    w.rotation = None;
    w.member = None;
    store.commit_assignment(&w).await.unwrap();
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-03")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-02")
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store.assignment_count(new_id(), "2026-03").await.unwrap(),
        0
    );
}

// ---- Idempotency-Key (BEHAVIOR 10) ------------------------------------------------------

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

async fn an_idempotency_key_is_claimed_once_then_in_flight_then_completed(store: Arc<dyn Store>) {
    let a: AccountId = new_id();
    let first = claim_at(a, "POST /contacts", "k-1", r#"{"fields":{}}"#, base());
    assert_eq!(
        store.claim_idempotency_key(&first).await.unwrap(),
        ClaimOutcome::Claimed
    );
    let again = claim_at(a, "POST /contacts", "k-1", r#"{"fields":{}}"#, at(10));
    assert_eq!(
        store.claim_idempotency_key(&again).await.unwrap(),
        ClaimOutcome::InFlight {
            fingerprint: first.fingerprint.clone()
        }
    );
    // Only the holder completes or releases.
    assert!(matches!(
        store
            .complete_idempotency_key(&completion(&again, 201, "{}"))
            .await,
        Err(StoreError::LeaseLost)
    ));
    store.release_idempotency_key(&again).await.unwrap();
    store
        .complete_idempotency_key(&completion(&first, 400, r#"{"message":"x","error":true}"#))
        .await
        .unwrap();
    let later = claim_at(a, "POST /contacts", "k-1", "other", at(20));
    assert_eq!(
        store.claim_idempotency_key(&later).await.unwrap(),
        ClaimOutcome::Completed {
            fingerprint: first.fingerprint.clone(),
            response: StoredResponse {
                status: 400,
                body: r#"{"message":"x","error":true}"#.into()
            }
        }
    );
    // A completed key is not completed again, nor released.
    assert!(matches!(
        store
            .complete_idempotency_key(&completion(&first, 201, "{}"))
            .await,
        Err(StoreError::LeaseLost)
    ));
    store.release_idempotency_key(&first).await.unwrap();
    assert!(matches!(
        store.claim_idempotency_key(&later).await.unwrap(),
        ClaimOutcome::Completed { .. }
    ));
}

async fn an_idempotency_key_is_scoped_to_account_and_route(store: Arc<dyn Store>) {
    let a: AccountId = new_id();
    let b: AccountId = new_id();
    let c = claim_at(a, "POST /contacts", "same#key", "{}", base());
    assert_eq!(
        store.claim_idempotency_key(&c).await.unwrap(),
        ClaimOutcome::Claimed
    );
    for other in [
        claim_at(b, "POST /contacts", "same#key", "{}", base()),
        claim_at(a, "POST /companies", "same#key", "{}", base()),
        claim_at(a, "POST /dispatch/router", "same#key", "{}", base()),
        claim_at(a, "POST /contacts", "same#key2", "{}", base()),
        claim_at(a, "POST /contacts#same", "key", "{}", base()),
    ] {
        assert_eq!(
            store.claim_idempotency_key(&other).await.unwrap(),
            ClaimOutcome::Claimed,
            "{} {} {}",
            other.account_id,
            other.route,
            other.key.as_str()
        );
    }
}

async fn a_lapsed_lease_lets_another_request_take_the_key_and_the_first_loses_it(
    store: Arc<dyn Store>,
) {
    let a = account(None);
    provision(&store, vec![plan_of(&a)]).await;
    let crashed = claim_at(a.id, "POST /contacts", "k", "{}", base());
    assert_eq!(
        store.claim_idempotency_key(&crashed).await.unwrap(),
        ClaimOutcome::Claimed
    );
    let within = claim_at(
        a.id,
        "POST /contacts",
        "k",
        "{}",
        base() + Duration::seconds(59),
    );
    assert!(matches!(
        store.claim_idempotency_key(&within).await.unwrap(),
        ClaimOutcome::InFlight { .. }
    ));
    let after = claim_at(
        a.id,
        "POST /contacts",
        "k",
        "{}",
        base() + Duration::seconds(61),
    );
    assert_eq!(
        store.claim_idempotency_key(&after).await.unwrap(),
        ClaimOutcome::Claimed
    );
    // The first request's write now fails and writes nothing.
    let r = record(a.id, ObjectType::Contacts, 5, &[("email", "late@x.co")]);
    let err = store
        .create_record_completing(
            &r,
            &contact_keys(&r),
            Some(&completion(&crashed, 201, "{}")),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost), "{err:?}");
    assert_eq!(
        store
            .get_record(a.id, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .find_by_unique_key(a.id, ObjectType::Contacts, &key("email", "late@x.co"))
            .await
            .unwrap(),
        None,
        "no guard claimed"
    );
    // The second one's does.
    store
        .create_record_completing(
            &r,
            &contact_keys(&r),
            Some(&completion(&after, 201, "{\"id\":1}")),
        )
        .await
        .unwrap();
    let replay = claim_at(
        a.id,
        "POST /contacts",
        "k",
        "{}",
        base() + Duration::seconds(70),
    );
    assert!(matches!(
        store.claim_idempotency_key(&replay).await.unwrap(),
        ClaimOutcome::Completed { response, .. } if response.body == "{\"id\":1}"
    ));
}

async fn a_released_or_expired_key_can_be_claimed_again(store: Arc<dyn Store>) {
    let a: AccountId = new_id();
    let first = claim_at(a, "POST /dispatch/router", "k", "{}", base());
    assert_eq!(
        store.claim_idempotency_key(&first).await.unwrap(),
        ClaimOutcome::Claimed
    );
    store.release_idempotency_key(&first).await.unwrap();
    let second = claim_at(a, "POST /dispatch/router", "k", "{\"x\":1}", at(5));
    assert_eq!(
        store.claim_idempotency_key(&second).await.unwrap(),
        ClaimOutcome::Claimed
    );
    store
        .complete_idempotency_key(&completion(&second, 200, "{}"))
        .await
        .unwrap();
    let day = claim_at(
        a,
        "POST /dispatch/router",
        "k",
        "{}",
        at(5) + Duration::hours(23),
    );
    assert!(matches!(
        store.claim_idempotency_key(&day).await.unwrap(),
        ClaimOutcome::Completed { .. }
    ));
    let expired = claim_at(
        a,
        "POST /dispatch/router",
        "k",
        "{}",
        at(5) + Duration::hours(24) + Duration::seconds(1),
    );
    assert_eq!(
        store.claim_idempotency_key(&expired).await.unwrap(),
        ClaimOutcome::Claimed
    );
}

async fn twenty_concurrent_claims_of_one_key_let_exactly_one_run(store: Arc<dyn Store>) {
    let a: AccountId = new_id();
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let c = claim_at(a, "POST /contacts", "race", "{}", base());
            store.claim_idempotency_key(&c).await.unwrap()
        }));
    }
    let mut claimed = 0;
    for t in tasks {
        match t.await.unwrap() {
            ClaimOutcome::Claimed => claimed += 1,
            ClaimOutcome::InFlight { .. } => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(claimed, 1);
}

async fn a_created_record_stores_its_response_in_the_same_write(store: Arc<dyn Store>) {
    let a = account(None);
    provision(&store, vec![plan_of(&a)]).await;
    let held = record(a.id, ObjectType::Contacts, 1, &[("email", "taken@x.co")]);
    store
        .create_record(&held, &contact_keys(&held))
        .await
        .unwrap();
    // A duplicate writes neither the record nor the response: the key stays in flight.
    let c = claim_at(a.id, "POST /contacts", "k", "{}", base());
    store.claim_idempotency_key(&c).await.unwrap();
    let dup = record(a.id, ObjectType::Contacts, 2, &[("email", "taken@x.co")]);
    let err = store
        .create_record_completing(&dup, &contact_keys(&dup), Some(&completion(&c, 201, "{}")))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Duplicate { .. }), "{err:?}");
    assert!(matches!(
        store.claim_idempotency_key(&c).await.unwrap(),
        ClaimOutcome::InFlight { .. }
    ));
    // Without unique keys too, the record and its response are one write.
    let fresh = record(a.id, ObjectType::Contacts, 3, &[]);
    store
        .create_record_completing(&fresh, &[], Some(&completion(&c, 201, "{\"made\":true}")))
        .await
        .unwrap();
    assert!(store
        .get_record(a.id, ObjectType::Contacts, fresh.id)
        .await
        .unwrap()
        .is_some());
    assert!(matches!(
        store.claim_idempotency_key(&c).await.unwrap(),
        ClaimOutcome::Completed { response, .. } if response.status == 201 && response.body == "{\"made\":true}"
    ));
}

async fn an_assignment_stores_its_response_in_the_same_write(store: Arc<dyn Store>) {
    let s = scene(&store, None).await;
    let c = claim_at(s.account.id, "POST /dispatch/router", "k", "{}", base());
    store.claim_idempotency_key(&c).await.unwrap();
    // A stale write stores nothing.
    let mut stale = assignment(&s, "2026-03", None);
    stale.record_version += 7;
    stale.completion = Some(completion(&c, 200, "{\"message\":\"Owner assigned\"}"));
    assert!(matches!(
        store.commit_assignment(&stale).await,
        Err(StoreError::Conflict)
    ));
    assert!(matches!(
        store.claim_idempotency_key(&c).await.unwrap(),
        ClaimOutcome::InFlight { .. }
    ));
    let mut write = assignment(&s, "2026-03", None);
    write.completion = Some(completion(&c, 200, "{\"message\":\"Owner assigned\"}"));
    store.commit_assignment(&write).await.unwrap();
    assert!(matches!(
        store.claim_idempotency_key(&c).await.unwrap(),
        ClaimOutcome::Completed { response, .. } if response.status == 200
    ));
    // The same completion cannot commit a second assignment.
    let again = assignment(&s, "2026-03", None);
    let mut again = AssignmentWrite {
        record_version: s.record.version + 1,
        ..again
    };
    again.record.version = s.record.version + 2;
    again.completion = Some(completion(&c, 200, "{}"));
    assert!(matches!(
        store.commit_assignment(&again).await,
        Err(StoreError::LeaseLost)
    ));
}

fn calendar(account_id: AccountId, name: &str) -> shared::model::HolidayCalendar {
    let holidays = serde_json::from_value(serde_json::json!([
        {"name": "New Year", "date": "2026-01-01", "yearly": true},
        {"name": "Half day", "date": "2026-12-24", "start": "13:00", "end": "17:00"}
    ]))
    .unwrap();
    shared::model::HolidayCalendar {
        id: shared::types::HolidayCalendarId::new_v7(),
        account_id,
        name: name.into(),
        time_zone: IanaTimeZone::parse("Europe/Berlin").unwrap(),
        holidays,
        created_at: base(),
        updated_at: base(),
        version: 1,
    }
}

/// BEHAVIOR 17 on both stores: at most `max` calendars per account (the count moves with each
/// create and delete), oldest first and read back as written, replaced at a version, and
/// deleted only while nothing names it: a member naming it (moved in the member's write) keeps
/// it, a reference to a calendar that is not the account's writes nothing.
async fn holiday_calendars_are_limited_listed_replaced_and_deleted_only_when_unused(
    store: Arc<dyn Store>,
) {
    use shared::model::{CalendarDeletion, CalendarRefs};
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let m = member(acc.id, "cal@acme.example", 1);
    plan.members = vec![m.clone()];
    store
        .provision(&ProvisionPlan {
            accounts: vec![plan],
        })
        .await
        .unwrap();
    let first = calendar(acc.id, "Berlin");
    let second = calendar(acc.id, "Munich");
    store.create_holiday_calendar(&first, 2).await.unwrap();
    store.create_holiday_calendar(&second, 2).await.unwrap();
    assert!(matches!(
        store
            .create_holiday_calendar(&calendar(acc.id, "third"), 2)
            .await,
        Err(StoreError::Rejected(_))
    ));
    let listed = store
        .list_holiday_calendars(acc.id, &Page::first(10, false))
        .await
        .unwrap()
        .items;
    assert_eq!(listed, vec![first.clone(), second.clone()]);
    let other = account(None);
    assert!(store
        .get_holiday_calendar(other.id, first.id)
        .await
        .unwrap()
        .is_none());

    let mut renamed = first.clone();
    renamed.name = "Berlin office".into();
    renamed.version = 2;
    store.update_holiday_calendar(&renamed, 1).await.unwrap();
    assert!(matches!(
        store.update_holiday_calendar(&renamed, 1).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store.get_holiday_calendar(acc.id, first.id).await.unwrap(),
        Some(renamed.clone())
    );

    // A member names the first calendar: it is in use until the member moves off it.
    let mut named = m.clone();
    named.holiday_calendar_id = Some(first.id);
    named.version = 2;
    store
        .update_member(&named, 1, &CalendarRefs::moving(None, Some(first.id)))
        .await
        .unwrap();
    assert_eq!(
        store
            .delete_holiday_calendar(acc.id, first.id)
            .await
            .unwrap(),
        CalendarDeletion::InUse
    );
    // A calendar of no account: nothing is written.
    let mut unknown = named.clone();
    let missing = shared::types::HolidayCalendarId::new_v7();
    unknown.holiday_calendar_id = Some(missing);
    unknown.version = 3;
    assert!(matches!(
        store
            .update_member(
                &unknown,
                2,
                &CalendarRefs::moving(Some(first.id), Some(missing))
            )
            .await,
        Err(StoreError::UnknownHolidayCalendar)
    ));
    assert_eq!(
        store
            .get_member(acc.id, m.id)
            .await
            .unwrap()
            .unwrap()
            .version,
        2
    );
    let mut moved = named.clone();
    moved.holiday_calendar_id = Some(second.id);
    moved.version = 3;
    store
        .update_member(
            &moved,
            2,
            &CalendarRefs::moving(Some(first.id), Some(second.id)),
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .delete_holiday_calendar(acc.id, first.id)
            .await
            .unwrap(),
        CalendarDeletion::Deleted
    );
    assert_eq!(
        store
            .delete_holiday_calendar(acc.id, first.id)
            .await
            .unwrap(),
        CalendarDeletion::NotFound
    );
    assert_eq!(
        store
            .delete_holiday_calendar(acc.id, second.id)
            .await
            .unwrap(),
        CalendarDeletion::InUse
    );
    // The delete gave its place back: a new calendar fits under the limit of 2.
    store
        .create_holiday_calendar(&calendar(acc.id, "third"), 2)
        .await
        .unwrap();
}

/// BEHAVIOR 17 on both stores: provisioned calendars count against the account's limit (a
/// second run of the same file changes nothing), a member provisioned naming one keeps it in
/// use, and the list is by creation time whatever the ids.
async fn provisioned_holiday_calendars_count_against_the_limit_and_list_by_creation(
    store: Arc<dyn Store>,
) {
    use shared::model::CalendarDeletion;
    let acc = account(None);
    let mut later = calendar(acc.id, "later, smaller id");
    later.id = "00000000-0000-4000-8000-000000000001".parse().unwrap();
    later.created_at = base() + chrono::Duration::seconds(1);
    let mut earlier = calendar(acc.id, "earlier, larger id");
    earlier.id = "ffffffff-ffff-4fff-bfff-ffffffffffff".parse().unwrap();
    let mut m = member(acc.id, "named@acme.example", 1);
    m.holiday_calendar_id = Some(later.id);
    let mut plan = plan_of(&acc);
    plan.members = vec![m];
    plan.holiday_calendars = vec![later.clone(), earlier.clone()];
    let plan = ProvisionPlan {
        accounts: vec![plan],
    };
    store.provision(&plan).await.unwrap();
    store.provision(&plan).await.unwrap();
    assert!(matches!(
        store
            .create_holiday_calendar(&calendar(acc.id, "third"), 2)
            .await,
        Err(StoreError::Rejected(_))
    ));
    let listed: Vec<_> = store
        .list_holiday_calendars(acc.id, &Page::first(10, false))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(listed, vec!["earlier, larger id", "later, smaller id"]);
    assert_eq!(
        store
            .delete_holiday_calendar(acc.id, later.id)
            .await
            .unwrap(),
        CalendarDeletion::InUse
    );
    assert_eq!(
        store
            .delete_holiday_calendar(acc.id, earlier.id)
            .await
            .unwrap(),
        CalendarDeletion::Deleted
    );
    store
        .create_holiday_calendar(&calendar(acc.id, "third"), 2)
        .await
        .unwrap();
}

// ---- batch reads and history windows (the what-if replay, BEHAVIOR 16) ----------------------

async fn records_are_read_by_id_in_batches_each_once_and_only_in_their_account(
    store: Arc<dyn Store>,
) {
    // 230 records: three `BatchGetItem`s of at most 100 keys on DynamoDB (the emulator, like
    // the service, refuses a request of more).
    let acc = account(None);
    let other = account(None);
    let mut plan = plan_of(&acc);
    let mut records: Vec<Record> = (0..230)
        .map(|n| {
            record(
                acc.id,
                ObjectType::Contacts,
                n,
                &[("email", &format!("r{n}@x.co"))],
            )
        })
        .collect();
    records.push(record(
        acc.id,
        ObjectType::Deals,
        300,
        &[("deal_name", "D")],
    ));
    plan.records = records
        .iter()
        .enumerate()
        .map(|(i, r)| planned(r.clone(), &format!("records[{i}]")))
        .collect();
    let foreign = record(other.id, ObjectType::Contacts, 1, &[("email", "f@x.co")]);
    let mut other_plan = plan_of(&other);
    other_plan.records = vec![planned(foreign.clone(), "records[0]")];
    provision(&store, vec![plan, other_plan]).await;
    let archived = archive(&store, &records[5], &contact_keys(&records[5])).await;

    // Asked newest first, with repeats, an unknown id and another account's record.
    let mut asked: Vec<RecordId> = records.iter().rev().map(|r| r.id).collect();
    asked.insert(3, records[0].id);
    asked.push(records[230].id);
    asked.push(new_id());
    asked.push(foreign.id);
    let found = store.get_records(acc.id, &asked).await.unwrap();
    let mut first_asked: Vec<RecordId> = Vec::new();
    for id in &asked {
        if !first_asked.contains(id) && records.iter().any(|r| r.id == *id) {
            first_asked.push(*id);
        }
    }
    assert_eq!(
        found.len(),
        231,
        "each record once, of any type, archived included"
    );
    assert_eq!(
        ids(&found, |r| r.id),
        first_asked,
        "in the order first asked"
    );
    for r in &found {
        let stored = if r.id == archived.id {
            &archived
        } else {
            records.iter().find(|x| x.id == r.id).unwrap()
        };
        assert!(r == stored, "{} reads back exactly", r.id);
    }
    assert!(store.get_records(acc.id, &[]).await.unwrap().is_empty());
    assert!(store
        .get_records(other.id, &[records[0].id])
        .await
        .unwrap()
        .is_empty());
}

async fn a_window_of_router_history_is_walked_oldest_first_in_pages(store: Arc<dyn Store>) {
    let s = scene(&store, None).await;
    let mut other_router = router(s.account.id, "Other", 9);
    other_router.id = new_id();
    let mut plan = plan_of(&s.account);
    plan.routers = vec![other_router.clone()];
    provision(&store, vec![plan]).await;
    let entry = |router: &Router, at_ms: i64, id: Uuid| DispatchEntry {
        id,
        account_id: s.account.id,
        router_id: router.id,
        router_revision: 1,
        object_type: ObjectType::Contacts,
        object_id: s.record.id.to_string(),
        message: "Trigger did not match".into(),
        success: false,
        user: None,
        reason: None,
        previous_owner: None,
        field_name: None,
        owner_field: None,
        source: DispatchSource::Queue,
        dispatched_at: at(at_ms),
        crm_sync: None,
        sla: None,
        expires_at: base() + Duration::days(400), // whole seconds (a TTL)
    };
    let (from, to) = (at(10_000), at(20_000));
    let id = |n: u128| Uuid::from_u128(n);
    // Before the window, at `from`, inside (two at one instant, ordered by id), the last
    // millisecond, at `to` (excluded), after; one entry of another router inside.
    let mut written = vec![
        entry(&s.router, 9_999, id(1)),
        entry(&s.router, 10_000, id(2)),
        entry(&s.router, 15_000, id(4)),
        entry(&s.router, 15_000, id(3)),
        entry(&s.router, 12_000, id(5)),
        entry(&s.router, 19_999, id(6)),
        entry(&s.router, 20_000, id(7)),
        entry(&s.router, 25_000, id(8)),
        entry(&other_router, 15_000, id(9)),
    ];
    for e in &written {
        store
            .record_dispatch(e, None, None, &Default::default())
            .await
            .unwrap();
    }
    written
        .retain(|e| e.router_id == s.router.id && e.dispatched_at >= from && e.dispatched_at < to);
    written.sort_by_key(|e| (e.dispatched_at, e.id));
    let expected: Vec<Uuid> = written.iter().map(|e| e.id).collect();
    assert_eq!(expected, vec![id(2), id(5), id(3), id(4), id(6)]);

    for limit in [1, 2, 5, 100] {
        let mut walked = Vec::new();
        let mut after = None;
        loop {
            let page = store
                .list_router_dispatches_between(
                    s.account.id,
                    s.router.id,
                    from,
                    to,
                    after.as_ref(),
                    limit,
                )
                .await
                .unwrap();
            assert!(page.items.len() <= limit);
            walked.extend(page.items.iter().map(|e| e.id));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert_eq!(walked, expected, "limit {limit}");
    }
    let whole = store
        .list_router_dispatches_between(s.account.id, s.router.id, from, to, None, 100)
        .await
        .unwrap();
    assert_eq!(whole.items, written, "entries read back exactly");
    assert_eq!(whole.next, None);
    // A position before the window starts at `from`; one at its end finds nothing.
    let early = shared::store::dispatch_position(&entry(&s.router, 1, id(1)));
    let from_early = store
        .list_router_dispatches_between(s.account.id, s.router.id, from, to, Some(&early), 100)
        .await
        .unwrap();
    assert_eq!(from_early.items.len(), 5);
    let last = shared::store::dispatch_position(&written[4]);
    let after_last = store
        .list_router_dispatches_between(s.account.id, s.router.id, from, to, Some(&last), 100)
        .await
        .unwrap();
    assert!(after_last.items.is_empty() && after_last.next.is_none());
    // Another account sees nothing; an empty window holds nothing.
    for (account_id, from, to) in [(new_id(), from, to), (s.account.id, to, to)] {
        let page = store
            .list_router_dispatches_between(account_id, s.router.id, from, to, None, 100)
            .await
            .unwrap();
        assert!(page.items.is_empty(), "{account_id} {from} {to}");
    }
}
