//! Provisioning on DynamoDB (`docs/dynamodb.md`, "Provisioning and the 100-item transaction
//! limit"), against the emulator
//! (`bash infra/scripts/test.sh`): a plan with an item DynamoDB cannot hold is refused before
//! the first write, wherever the item sits; and a load interrupted between two transactions is
//! completed by running it again.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use chrono::{Duration, TimeZone, Utc};
use serde_json::json;
use shared::model::{Account, AccountPlan, Member, ProvisionPlan};
use shared::schedule::IanaTimeZone;
use shared::store::dynamodb::test_table::TestTable;
use shared::store::dynamodb::{env, DynamoStore};
use shared::store::prelude::*;
use shared::store::{Page, StoreError};
use shared::types::{AccountId, CapacityEntry, Email, NotificationPreferences};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use uuid::Uuid;

fn account() -> Account {
    Account {
        id: Uuid::new_v4().into(),
        name: "Acme".into(),
        active: true,
        assignment_quota: None,
        crm: None,
        created_at: Utc::now(),
    }
}

fn member(account_id: AccountId, i: usize) -> Member {
    let at = Utc.with_ymd_and_hms(2026, 3, 10, 9, 0, 0).unwrap() + Duration::milliseconds(i as i64);
    Member {
        id: Uuid::new_v4().into(),
        account_id,
        email: Email::parse(&format!("m{i:03}@x.example")).unwrap(),
        full_name: None,
        first_name: None,
        last_name: None,
        role_id: None,
        external_id: None,
        phone: None,
        office_status: true,
        time_zone: IanaTimeZone::UTC,
        working_hours: vec![],
        out_office_dates: vec![],
        calendars: BTreeMap::new(),
        holiday_calendar_id: None,
        capacity: vec![],
        can_receive_notifications: false,
        notification_preferences: NotificationPreferences::default(),
        created_at: at,
        updated_at: at,
        archived_at: None,
        archived_by: None,
        version: 1,
    }
}

/// An account with `members` members: more than 100 items, so at least two transactions.
fn plan(members: usize) -> (Account, ProvisionPlan) {
    let acc = account();
    let plan = ProvisionPlan {
        accounts: vec![AccountPlan {
            crm: None,
            account: acc.clone(),
            clients: vec![],
            client_secrets: vec![],
            roles: vec![],
            members: (0..members).map(|i| member(acc.id, i)).collect(),
            holiday_calendars: vec![],
            teams: vec![],
            field_definitions: vec![],
            routers: vec![],
            records: vec![],
        }],
    };
    (acc, plan)
}

async fn member_count(store: &dyn Store, account_id: AccountId) -> usize {
    let mut n = 0;
    let mut offset = 0;
    loop {
        let page = store
            .list_members(account_id, &Page::at_offset(100, offset, true))
            .await
            .unwrap();
        n += page.items.len();
        if page.next.is_none() {
            return n;
        }
        offset += 100;
    }
}

/// Values the domain never builds (its parsers refuse them, BEHAVIOR 12), put into a plan by
/// hand: a capacity entry deserializes as stored, without `CapacityEntry::parse`.
fn stored_capacity(value: serde_json::Value) -> CapacityEntry {
    serde_json::from_value(value).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_with_an_item_dynamodb_cannot_hold_is_refused_before_the_first_write() {
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let mut deep = json!(1);
    for _ in 0..40 {
        deep = json!({ "x": deep });
    }
    type Spoil = Box<dyn Fn(&mut Member)>;
    let cases: Vec<(&str, Spoil)> = vec![
        (
            "item of",
            Box::new(|m: &mut Member| {
                m.calendars = (0..500)
                    .map(|i| (format!("c{i}"), "x".repeat(1_000)))
                    .collect();
            }),
        ),
        (
            "outside DynamoDB's range",
            Box::new(|m: &mut Member| m.capacity = vec![stored_capacity(json!({"n": 1e200}))]),
        ),
        (
            "nesting deeper",
            Box::new(move |m: &mut Member| {
                m.capacity = vec![stored_capacity(json!({ "deep": deep.clone() }))]
            }),
        ),
    ];
    for (why, spoil) in cases {
        // 150 members: the bad one (the 130th) would be in the second transaction.
        let (acc, mut plan) = plan(150);
        spoil(&mut plan.accounts[0].members[129]);
        let bad = plan.accounts[0].members[129].id;
        match table.store.provision(&plan).await {
            Err(StoreError::Rejected(message)) => {
                assert!(message.starts_with(&format!("member {bad}: ")), "{message}");
                assert!(message.contains(why), "{message}");
                assert!(message.ends_with("nothing was written"), "{message}");
            }
            other => panic!("{why}: expected a rejection, got {other:?}"),
        }
        assert_eq!(
            table.store.get_account(acc.id).await.unwrap(),
            None,
            "{why}"
        );
        assert_eq!(member_count(&table.store, acc.id).await, 0, "{why}");
    }
    table.delete().await;
}

/// Fails the `n`th `TransactWriteItems` (1-based) the client sends, as a network failure or a
/// timeout between two transactions would.
#[derive(Debug, Clone)]
struct FailNthTransaction {
    n: usize,
    seen: Arc<AtomicUsize>,
}

impl Intercept for FailNthTransaction {
    fn name(&self) -> &'static str {
        "FailNthTransaction"
    }

    fn read_before_transmit(
        &self, _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents, cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let transaction = cfg
            .load::<Metadata>()
            .is_some_and(|m| m.name() == "TransactWriteItems");
        if transaction && self.seen.fetch_add(1, Ordering::SeqCst) + 1 == self.n {
            return Err("injected failure of a provisioning transaction".into());
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_an_interrupted_load_again_completes_it() {
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let failing = {
        let sdk = env::sdk_config().await;
        let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
            .interceptor(FailNthTransaction {
                n: 2,
                seen: Arc::new(AtomicUsize::new(0)),
            })
            .build();
        DynamoStore::new(
            aws_sdk_dynamodb::Client::from_conf(conf),
            table.store.table_name(),
        )
    };
    // 1 account + 250 members, each with its e-mail item: transactions of 99 items (the account
    // and 49 members), then of 100 (50 members).
    let (acc, plan) = plan(250);
    let first = failing.provision(&plan).await;
    assert!(first.is_err(), "{first:?}");
    // The first transaction was written, the rest was not: a partial load.
    assert!(table.store.get_account(acc.id).await.unwrap().is_some());
    assert_eq!(member_count(&table.store, acc.id).await, 49);

    let again = table.store.provision(&plan).await.unwrap();
    assert_eq!(again.inserted, 201);
    assert_eq!(again.skipped.len(), 50);
    // Every member is found by e-mail by key, those of the interrupted load included.
    let emails: Vec<Email> = plan.accounts[0]
        .members
        .iter()
        .map(|m| m.email.clone())
        .collect();
    table.counter.take();
    let found = table.store.identify_members(acc.id, &emails).await.unwrap();
    assert_eq!(found.len(), 250);
    let requests = table.counter.take();
    assert_eq!(requests.get("BatchGetItem"), Some(&3), "{requests:?}");
    assert_eq!(requests.get("Query"), None, "{requests:?}");
    assert_eq!(member_count(&table.store, acc.id).await, 250);
    let last = &plan.accounts[0].members[249];
    assert_eq!(
        table
            .store
            .get_member(acc.id, last.id)
            .await
            .unwrap()
            .as_ref(),
        Some(last)
    );
    let third = table.store.provision(&plan).await.unwrap();
    assert_eq!((third.inserted, third.skipped.len()), (0, 251));
    table.delete().await;
}

/// Members are read by e-mail by key, from items the release before them never
/// wrote. On its table the e-mails not found that way are looked up on the e-mail index (one
/// Query each, bounded by the body's 501); provisioning writes the missing items and the
/// account's marker, after which one BatchGetItem answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_of_a_table_of_the_last_release_are_found_by_email_then_backfilled() {
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let path = format!(
        "{}/../infra/compat/release-523e19a.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    table
        .load(fixture["Items"].as_array().unwrap())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let northwind: AccountId = Uuid::parse_str("0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01")
        .unwrap()
        .into();
    let emails: Vec<Email> = [
        "ana.lopez@northwind.example",
        "Ben.Okafor@northwind.example",
        "nobody@northwind.example",
    ]
    .iter()
    .map(|e| Email::parse(e).unwrap())
    .collect();
    let found = |ids: Vec<shared::model::MemberIdentity>| {
        let mut emails: Vec<String> = ids.iter().map(|m| m.email.to_string()).collect();
        emails.sort();
        emails
    };
    let expected = [
        "ana.lopez@northwind.example",
        "ben.okafor@northwind.example",
    ];
    table.counter.take();
    let before = table
        .store
        .identify_members(northwind, &emails)
        .await
        .unwrap();
    assert_eq!(found(before), expected);
    let requests = table.counter.take();
    assert_eq!(requests.get("BatchGetItem"), Some(&1), "{requests:?}");
    assert_eq!(requests.get("Query"), Some(&3), "{requests:?}");
    // Another account's members are not found through this one.
    let globex_member = table
        .store
        .identify_members(Uuid::new_v4().into(), &emails[..1])
        .await
        .unwrap();
    assert!(globex_member.is_empty());

    // Provisioning the account again (nothing new) backfills its members' e-mail items.
    let account = table.store.get_account(northwind).await.unwrap().unwrap();
    let rerun = ProvisionPlan {
        accounts: vec![AccountPlan {
            crm: None,
            account,
            clients: vec![],
            client_secrets: vec![],
            roles: vec![],
            members: vec![],
            holiday_calendars: vec![],
            teams: vec![],
            field_definitions: vec![],
            routers: vec![],
            records: vec![],
        }],
    };
    table.store.provision(&rerun).await.unwrap();
    table.counter.take();
    let after = table
        .store
        .identify_members(northwind, &emails)
        .await
        .unwrap();
    assert_eq!(found(after), expected);
    let requests = table.counter.take();
    assert_eq!(requests.get("BatchGetItem"), Some(&1), "{requests:?}");
    assert_eq!(requests.get("Query"), None, "{requests:?}");
}

/// BEHAVIOR 1 on a table of the last release: its client items have no `generation` or
/// `disabled` (they read as generation 0, enabled), and provisioning a changed secret and
/// `disabled` replaces them (the condition accepts an item without `generation` as generation
/// 0); provisioning the same file again changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_of_a_table_of_the_last_release_are_kept_current() {
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let path = format!(
        "{}/../infra/compat/release-523e19a.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    table
        .load(fixture["Items"].as_array().unwrap())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let stored = table
        .store
        .get_client("northwind-integration")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((stored.generation, stored.disabled), (0, false));

    let mut seed: serde_json::Value =
        serde_json::from_str(include_str!("../../../infra/seed/demo.json")).unwrap();
    seed["accounts"][0]["clients"][0]["client_secret"] = json!("a-new-secret-for-northwind");
    seed["accounts"][0]["clients"][1]["disabled"] = json!(true);
    let store: Arc<dyn Store> = Arc::new(table.store.clone());
    shared::auth::secret::use_lowest_cost_for_tests();
    for run in 0..2 {
        let plan = shared::seed::load(
            &seed.to_string(),
            Utc::now(),
            shared::outbound::OutboundPolicy::LOCAL,
        )
        .unwrap();
        let report = shared::seed::provision(
            store.as_ref(),
            &shared::secrets::LocalSealer::development(),
            plan,
        )
        .await
        .unwrap();
        let expected: Vec<String> = if run == 0 {
            vec![
                "client northwind-integration".into(),
                "client northwind-readonly".into(),
            ]
        } else {
            vec![]
        };
        assert_eq!(report.updated, expected, "run {run}");
    }
    let rekeyed = store
        .get_client("northwind-integration")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rekeyed.generation, 1);
    assert!(shared::auth::verify_secret(
        "a-new-secret-for-northwind",
        &rekeyed.secret_hash
    ));
    let disabled = store
        .get_client("northwind-readonly")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((disabled.generation, disabled.disabled), (1, true));
    assert!(
        shared::auth::verify_secret("dev-readonly-secret", &disabled.secret_hash),
        "the same secret keeps its stored hash"
    );
    assert_eq!(disabled.secret_hash, {
        let before: serde_json::Value = fixture["Items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["PK"]["S"] == "CLIENT#northwind-readonly")
            .unwrap()
            .clone();
        before["secret_hash"]["S"].as_str().unwrap().to_owned()
    });
    table.delete().await;
}
