//! The provisioning contract ([`shared::store::ProvisionStore`]): insert-if-absent, all-or-nothing,
//! plans larger than one transaction.

use super::accounts::definition;
use super::*;

shared::on_both_stores!(
    threads = 2; store:
    provisioning_twice_inserts_once_and_skips_every_item_the_second_time,
    a_reload_never_clobbers_what_changed_since,
    provisioning_a_record_whose_key_is_taken_is_rejected_with_its_path_and_writes_nothing,
    a_plan_larger_than_one_transaction_loads_completely,
);

fn full_plan() -> (Account, AccountPlan) {
    let acc = account(Some(10));
    let mut plan = plan_of(&acc);
    plan.clients = vec![ApiClient {
        client_id: format!("client-{}", acc.id),
        account_id: acc.id,
        secret_hash: "hash".into(),
        scopes: vec![Scope::Read],
        disabled: false,
        generation: 0,
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
        .update_member(&changed, 1, &shared::model::CalendarRefs::none(), None)
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
