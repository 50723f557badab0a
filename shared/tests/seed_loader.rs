//! The provisioning loader against `contracts/seed-format.md`: valid files load into the store
//! insert-if-absent, invalid ones are refused with the JSON path of the first problem.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use chrono::{TimeZone, Utc};
use serde_json::{json, Value};
use shared::seed::load;
use shared::store::memory::MemoryStore;
use shared::store::{Page, Store};
use uuid::Uuid;

fn example() -> Value {
    serde_json::from_str(include_str!("../../infra/seed/demo.json")).unwrap()
}

fn base() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap()
}

fn error_of(seed: &Value) -> String {
    load(&seed.to_string(), base())
        .expect_err("the seed must be refused")
        .to_string()
}

#[test]
fn the_contract_example_seed_is_valid() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/contracts/seed-example.json"
    ))
    .expect("../shared/contracts beside the repository");
    let plan = load(&text, base()).unwrap();
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
    assert_ne!(a.clients[0].secret_hash, "dev-secret-change-me");
    assert!(a.clients[0].secret_hash.starts_with("$argon2id$"));
}

#[test]
fn defaults_of_omitted_member_keys_follow_the_format() {
    let plan = load(&example().to_string(), base()).unwrap();
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
    let plan = load(&example().to_string(), base()).unwrap();
    let routers = &plan.accounts[0].routers;
    assert!(routers
        .windows(2)
        .all(|w| w[0].created_at < w[1].created_at));
    let records = &plan.accounts[0].records;
    assert!(records
        .windows(2)
        .all(|w| w[0].record.created_at < w[1].record.created_at));
}

#[test]
fn invalid_files_are_refused_with_the_json_path_of_the_first_problem() {
    type Edit = fn(&mut Value);
    let cases: Vec<(Edit, &str)> = vec![
        (|s| s["accounts"][0]["routers"][0]["settings"]["trigger"]["groups"][0]["conditions"][0]["operator"] = json!("eq"),
         "accounts[0].routers[0].settings.trigger.groups[0].conditions[0].operator: unknown operator \"eq\""),
        (|s| s["accounts"][0]["id"] = json!("nope"), "accounts[0].id"),
        (|s| s["accounts"][0]["users"][1]["time_zone"] = json!("Mars/Base"), "accounts[0].users[1].time_zone"),
        (|s| s["accounts"][0]["users"][0]["working_hours"][0]["days"] = json!("weekdays"), "accounts[0].users[0].working_hours[0]"),
        (|s| s["accounts"][0]["users"][1]["email"] = json!("ANA.LOPEZ@northwind.example"), "accounts[0].users[1].email"),
        (|s| s["accounts"][0]["users"][0]["role_id"] = json!(Uuid::nil()), "accounts[0].users[0].role_id"),
        (|s| s["accounts"][0]["users"][0]["capacity"][0]["max_capacity"] = json!(-3), "accounts[0].users[0].capacity[0].max_capacity"),
        (|s| s["accounts"][0]["teams"][0]["members"][0] = json!("ghost@northwind.example"), "accounts[0].teams[0].members[0]"),
        (|s| s["accounts"][0]["routers"][0]["users"][0]["email"] = json!("ghost@northwind.example"), "accounts[0].routers[0].users[0].email"),
        (|s| s["accounts"][0]["routers"][0]["teams"][0]["name"] = json!("Nope"), "accounts[0].routers[0].teams[0].name"),
        (|s| s["accounts"][0]["routers"][0]["settings"]["owner_field"] = json!("first_name"), "accounts[0].routers[0].settings.owner_field"),
        (|s| s["accounts"][0]["routers"][0]["settings"]["default_user"] = json!("ghost@x.example"), "accounts[0].routers[0].settings.default_user"),
        (|s| s["accounts"][0]["routers"][0]["settings"]["trigger"]["groups"][0]["conditions"][0]["field"] = json!("nope"),
         "accounts[0].routers[0].settings.trigger.groups[0].conditions[0]"),
        (|s| s["accounts"][0]["routers"][1]["users"][0]["percentage"] = json!(60), "accounts[0].routers[1].users"),
        (|s| s["accounts"][0]["routers"][1]["teams"] = json!([{"name": "Inbound"}]), "accounts[0].routers[1].teams"),
        (|s| s["accounts"][0]["routers"][2]["users"] = json!([{"email": "ana.lopez@northwind.example"}]), "accounts[0].routers[2].settings.rotation_type"),
        (|s| s["accounts"][0]["routers"][1]["id"] = s["accounts"][0]["routers"][0]["id"].clone(), "accounts[0].routers[1].id"),
        (|s| s["accounts"][1]["clients"][0]["client_id"] = json!("northwind-integration"), "accounts[1].clients[0].client_id"),
        (|s| s["accounts"][0]["clients"][0]["scopes"] = json!(["admin"]), "accounts[0].clients[0].scopes[0]"),
        (|s| s["accounts"][0]["fields"]["contacts"][0]["field_type_id"] = json!("colour"), "accounts[0].fields.contacts[0].field_type_id"),
        (|s| s["accounts"][0]["fields"]["contacts"].as_array_mut().unwrap().push(json!({"internal_name": "email", "name": "E", "field_type_id": "number"})), "accounts[0].fields.contacts[2].field_type_id"),
        (|s| s["accounts"][0]["records"]["contacts"][0]["fields"]["email"] = json!("broken"), "accounts[0].records.contacts[0].fields.email"),
        (|s| s["accounts"][0]["records"]["contacts"][0]["fields"]["record_id"] = json!("x"), "accounts[0].records.contacts[0].fields.record_id"),
        (|s| s["accounts"][0]["records"]["deals"][0]["fields"]["deal_stage"] = Value::Null, "accounts[0].records.deals[0].fields.deal_stage"),
        (|s| s["accounts"][0]["records"]["contacts"][1]["fields"]["email"] = json!("dana@contoso.example"), "accounts[0].records.contacts[1].fields.email"),
        (|s| s["accounts"][0]["records"]["deals"][0]["fields"]["deal_owner"] = json!("eli.former@northwind.example"), "accounts[0].records.deals[0].fields.deal_owner"),
        (|s| s["accounts"][0]["crm"] = json!({"provider": "salesforce", "base_url": "http://x", "access_token": "t"}), "accounts[0].crm.provider"),
        (|s| s["accounts"][0]["surprise"] = json!(1), "accounts[0]"),
    ];
    for (edit, expected) in cases {
        let mut seed = example();
        edit(&mut seed);
        let message = error_of(&seed);
        assert!(
            message.starts_with(expected),
            "expected {expected:?}, got {message:?}"
        );
    }
}

#[tokio::test]
async fn loading_is_insert_if_absent_so_a_reload_changes_nothing() {
    let store = MemoryStore::new();
    let plan = load(&example().to_string(), base()).unwrap();
    let first = store.provision(&plan).await.unwrap();
    assert!(first.inserted > 0 && first.skipped.is_empty());
    let account = plan.accounts[0].account.id;
    let ana = plan.accounts[0].members[0].clone();
    let mut changed = ana.clone();
    changed.phone = Some("changed since".into());
    changed.version += 1;
    store.update_member(&changed, ana.version).await.unwrap();

    let again = load(&example().to_string(), base() + chrono::Duration::hours(1)).unwrap();
    let second = store.provision(&again).await.unwrap();
    assert_eq!(second.inserted, 0);
    assert_eq!(second.skipped.len(), first.inserted);
    let stored = store.get_member(account, ana.id).await.unwrap().unwrap();
    assert_eq!(stored.phone.as_deref(), Some("changed since"));
    let page = Page {
        limit: 100,
        offset: 0,
        include_archived: true,
    };
    assert_eq!(
        store
            .list_records(account, shared::model::ObjectType::Contacts, page)
            .await
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn a_seed_record_whose_key_is_held_by_a_stored_record_is_refused_whole() {
    let store = MemoryStore::new();
    store
        .provision(&load(&example().to_string(), base()).unwrap())
        .await
        .unwrap();
    let mut seed = example();
    seed["accounts"][0]["records"]["contacts"][0]["id"] = json!(Uuid::now_v7());
    seed["accounts"][0]["roles"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": Uuid::now_v7(), "name": "New role"}));
    let err = store
        .provision(&load(&seed.to_string(), base()).unwrap())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("accounts[0].records.contacts[0].fields.email"),
        "{err}"
    );
    let roles = store
        .list_roles(seed["accounts"][0]["id"].as_str().unwrap().parse().unwrap())
        .await
        .unwrap();
    assert_eq!(roles.len(), 2, "nothing of a refused load is written");
}
