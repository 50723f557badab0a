//! The provisioning loader against the seed format of `docs/seed-format.md`: valid files load into the store
//! insert-if-absent, invalid ones are refused with the JSON path of the first problem (the
//! table of refused edits is beside each loader module: `shared/src/seed/*.rs`).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use chrono::{TimeZone, Utc};
use serde_json::{json, Value};
use shared::seed::load;
use shared::store::memory::MemoryStore;
use shared::store::prelude::*;
use shared::store::PageRequest;
use uuid::Uuid;

fn example() -> Value {
    serde_json::from_str(include_str!("../../../infra/seed/demo.json")).unwrap()
}

fn base() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap()
}

/// The worked example of docs/seed-format.md.
#[test]
fn the_documented_minimal_seed_is_valid() {
    let text = include_str!("../../../infra/seed/minimal.json");
    let plan = load(text, base(), shared::outbound::OutboundPolicy::LOCAL).unwrap();
    assert_eq!(plan.accounts.len(), 1);
    let a = &plan.accounts[0];
    assert_eq!(
        (
            a.members.len(),
            a.teams.len(),
            a.routers.len(),
            a.records.len()
        ),
        (3, 1, 1, 2)
    );
    assert_eq!(a.account.assignment_quota, Some(500));
    assert_ne!(a.clients[0].secret_hash, "fabrikam-local-secret");
    assert!(a.clients[0].secret_hash.starts_with("$argon2id$"));
}

#[test]
fn defaults_of_omitted_member_keys_follow_the_format() {
    let plan = load(
        &example().to_string(),
        base(),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .unwrap();
    let ben = plan.accounts[0]
        .members
        .iter()
        .find(|m| m.email == "ben.okafor@northwind.example")
        .unwrap();
    assert!(ben.office_status);
    assert!(!ben.can_receive_notifications);
    assert!(ben.out_office_dates.is_empty() && ben.capacity.is_empty() && ben.calendars.is_empty());
    let chen = plan.accounts[0]
        .members
        .iter()
        .find(|m| m.email == "chen.wei@northwind.example")
        .unwrap();
    assert_eq!(chen.full_name, None);
}

#[test]
fn items_get_consecutive_creation_times_in_file_order() {
    let plan = load(
        &example().to_string(),
        base(),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .unwrap();
    let routers = &plan.accounts[0].routers;
    assert!(routers
        .windows(2)
        .all(|w| w[0].created_at < w[1].created_at));
    let records = &plan.accounts[0].records;
    assert!(records
        .windows(2)
        .all(|w| w[0].record.created_at < w[1].record.created_at));
}

#[tokio::test]
async fn loading_is_insert_if_absent_so_a_reload_changes_nothing() {
    let store = MemoryStore::new();
    let plan = load(
        &example().to_string(),
        base(),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .unwrap();
    let first = store.provision(&plan).await.unwrap();
    assert!(first.inserted > 0 && first.skipped.is_empty());
    let account = plan.accounts[0].account.id;
    let ana = plan.accounts[0].members[0].clone();
    let mut changed = ana.clone();
    changed.phone = Some("changed since".into());
    changed.version += 1;
    store
        .update_member(
            &changed,
            ana.version,
            &shared::model::CalendarRefs::none(),
            None,
        )
        .await
        .unwrap();

    let again = load(
        &example().to_string(),
        base() + chrono::Duration::hours(1),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .unwrap();
    let second = store.provision(&again).await.unwrap();
    assert_eq!(second.inserted, 0);
    assert_eq!(second.skipped.len(), first.inserted);
    let stored = store.get_member(account, ana.id).await.unwrap().unwrap();
    assert_eq!(stored.phone.as_deref(), Some("changed since"));
    let page = PageRequest::first(100, true);
    assert_eq!(
        store
            .list_records(account, shared::model::ObjectType::Contacts, &page)
            .await
            .unwrap()
            .items
            .len(),
        2
    );
}

#[tokio::test]
async fn a_seed_record_whose_key_is_held_by_a_stored_record_is_refused_whole() {
    let store = MemoryStore::new();
    store
        .provision(
            &load(
                &example().to_string(),
                base(),
                shared::outbound::OutboundPolicy::LOCAL,
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let mut seed = example();
    seed["accounts"][0]["records"]["contacts"][0]["id"] = json!(Uuid::now_v7());
    seed["accounts"][0]["roles"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": Uuid::now_v7(), "name": "New role"}));
    let err = store
        .provision(
            &load(
                &seed.to_string(),
                base(),
                shared::outbound::OutboundPolicy::LOCAL,
            )
            .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("accounts[0].records.contacts[0].fields.email"),
        "{err}"
    );
    let roles = store
        .list_roles(
            shared::types::AccountId::try_parse(seed["accounts"][0]["id"].as_str().unwrap())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(roles.len(), 2, "nothing of a refused load is written");
}
