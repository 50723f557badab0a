//! DynamoDB requests per API operation, measured with the SDK interceptor
//! ([`shared::store::dynamodb::RequestCounter`]) on the services the handlers call, against the
//! emulator (`bash infra/scripts/test.sh`). The table these numbers produce is in
//! `docs/dynamodb.md`; run with `--nocapture` to print it.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use chrono::Utc;
use serde_json::json;
use shared::clock::SystemClock;
use shared::fields::{CatalogueCache, FieldDefinition, FieldType};
use shared::members::MemberService;
use shared::model::{Account, ObjectType};
use shared::model::{AccountPlan, ProvisionPlan};
use shared::model::{PlannedRecord, Record};
use shared::page::cursor::{CursorKey, ListRequest};
use shared::records::RecordWrite;
use shared::records::{Caller, RecordService};
use shared::routers::RouterService;
use shared::store::dynamodb::test_table::TestTable;
use shared::store::prelude::*;
use shared::store::{record_position, Page};
use shared::types::RecordId;
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// An active account without quota.
fn account(name: &str) -> Account {
    Account {
        id: Uuid::new_v4().into(),
        name: name.into(),
        active: true,
        assignment_quota: None,
        crm: None,
        created_at: Utc::now(),
    }
}

/// A plan provisioning `account` and nothing else (tests add what they need).
fn plan_of(account: &Account) -> ProvisionPlan {
    ProvisionPlan {
        accounts: vec![AccountPlan {
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
        }],
    }
}

/// The first page of 10 active items.
fn first_page() -> ListRequest {
    ListRequest::default()
}

/// A write body `{fields: ...}`.
fn write(fields: serde_json::Value) -> RecordWrite {
    RecordWrite {
        fields: fields.as_object().cloned().unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_instance_spends_one_request_per_get_post_and_first_page() {
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let account = account("Acme");
    let mut plan = plan_of(&account);
    plan.accounts[0].field_definitions = vec![FieldDefinition {
        object_type: ObjectType::Contacts,
        internal_name: "region".into(),
        name: "Region".into(),
        field_type: FieldType::String,
        options: vec![],
    }];
    let store: Arc<dyn Store> = Arc::new(table.store.clone());
    store.provision(&plan).await.expect("provisioned");
    let counter = table.counter.clone();
    counter.take();

    let cache = Arc::new(CatalogueCache::default());
    let records = RecordService::new(store.clone(), Arc::new(SystemClock), cache.clone());
    let members = MemberService::new(store.clone(), Arc::new(SystemClock));
    let routers = RouterService::new(store.clone());
    let key = CursorKey::random();
    let caller = Caller {
        account_id: account.id,
        actor: "client",
    };
    let mut measured: Vec<(&str, BTreeMap<String, u64>)> = Vec::new();

    // Cold instance: the account's field definitions, read once and cached.
    cache
        .get(store.as_ref(), account.id)
        .await
        .expect("catalogue");
    measured.push((
        "field definitions (cold instance, once per TTL)",
        counter.take(),
    ));

    let created = records
        .create(
            caller,
            ObjectType::Contacts,
            write(json!({"email": "jo@example.com", "first_name": "Jo", "region": "EMEA"})),
        )
        .await
        .expect("created");
    measured.push(("POST /contacts (unique key email)", counter.take()));
    let id: Option<RecordId> = Some(created.id());

    records
        .create(
            caller,
            ObjectType::Contacts,
            write(json!({"first_name": "Al"})),
        )
        .await
        .expect("created");
    measured.push(("POST /contacts (no unique key in the body)", counter.take()));

    records
        .get(account.id, ObjectType::Contacts, id, Some("region"))
        .await
        .expect("read");
    measured.push(("GET /contacts/{id}", counter.take()));

    records
        .list(account.id, ObjectType::Contacts, None, &first_page(), &key)
        .await
        .expect("listed");
    measured.push(("GET /contacts (offset 0)", counter.take()));

    records
        .update(
            caller,
            ObjectType::Contacts,
            id,
            None,
            Ok(write(json!({"email": "jo.doe@example.com"}))),
        )
        .await
        .expect("updated");
    measured.push(("PATCH /contacts/{id} (key changed)", counter.take()));

    records
        .archive(caller, ObjectType::Contacts, id)
        .await
        .expect("archived");
    measured.push(("DELETE /contacts/{id}", counter.take()));

    members
        .list(account.id, &first_page(), &key)
        .await
        .expect("members");
    measured.push(("GET /users (offset 0)", counter.take()));

    routers
        .list(account.id, &first_page(), &key)
        .await
        .expect("routers");
    measured.push(("GET /routers (offset 0)", counter.take()));

    store.get_client("nobody").await.expect("client read");
    measured.push(("POST /oauth2/token (client lookup)", counter.take()));

    println!("| operation | DynamoDB requests |");
    println!("|---|---|");
    for (what, c) in &measured {
        let text: Vec<String> = c.iter().map(|(op, n)| format!("{n} {op}")).collect();
        println!("| {what} | {} |", text.join(" + "));
    }

    let expected = [
        counts(&[("Query", 1)]),
        counts(&[("TransactWriteItems", 1)]),
        counts(&[("PutItem", 1)]),
        counts(&[("GetItem", 1)]),
        counts(&[("Query", 1)]),
        counts(&[("GetItem", 1), ("TransactWriteItems", 1)]),
        counts(&[("GetItem", 1), ("TransactWriteItems", 1)]),
        counts(&[("Query", 2)]),
        counts(&[("Query", 1)]),
        counts(&[("GetItem", 1)]),
    ];
    for ((what, got), want) in measured.iter().zip(expected) {
        assert_eq!(got, &want, "{what}");
    }
    table.delete().await;
}

/// BEHAVIOR 11: a page read with `after` costs O(limit) reads whatever the list's length: one
/// `Query` that evaluates at most `limit + 1` items (the extra one tells whether more follow),
/// deep in a list of 400, while an offset page evaluates every skipped item.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_after_a_cursor_is_one_query_of_limit_plus_one_items_at_any_depth() {
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let account = account("Deep");
    let start = Utc::now();
    let records: Vec<Record> = (0..400i64)
        .map(|i| Record {
            id: Uuid::now_v7().into(),
            account_id: account.id,
            object_type: ObjectType::Contacts,
            values: BTreeMap::new(),
            created_at: start + chrono::Duration::milliseconds(i),
            updated_at: start + chrono::Duration::milliseconds(i),
            archived_at: None,
            archived_by: None,
            version: 1,
        })
        .collect();
    let mut plan = plan_of(&account);
    plan.accounts[0].records = records
        .iter()
        .enumerate()
        .map(|(i, r)| PlannedRecord {
            record: r.clone(),
            unique_keys: vec![],
            path: format!("records[{i}]"),
        })
        .collect();
    let store: Arc<dyn Store> = Arc::new(table.store.clone());
    store.provision(&plan).await.expect("provisioned");
    let counter = table.counter.clone();
    counter.take();
    counter.take_scanned();

    for depth in [0usize, 10, 200, 389] {
        let page = if depth == 0 {
            Page::first(10, false)
        } else {
            Page::after(10, record_position(&records[depth - 1]), false)
        };
        let listed = store
            .list_records(account.id, ObjectType::Contacts, &page)
            .await
            .expect("listed");
        let got: Vec<_> = listed.items.iter().map(|r| r.id).collect();
        let want: Vec<_> = records[depth..depth + 10].iter().map(|r| r.id).collect();
        assert_eq!(got, want, "the page after item {depth}");
        assert_eq!(counter.take(), counts(&[("Query", 1)]), "depth {depth}");
        let scanned = counter.take_scanned();
        assert!(scanned <= 11, "depth {depth}: {scanned} items evaluated");
        println!("| after item {depth} | 1 Query, {scanned} items |");
    }
    // The last page: fewer items, no next.
    let last = store
        .list_records(
            account.id,
            ObjectType::Contacts,
            &Page::after(10, record_position(&records[394]), false),
        )
        .await
        .expect("listed");
    assert_eq!(last.items.len(), 5);
    assert_eq!(last.next, None);
    counter.take();
    counter.take_scanned();

    // For contrast, offset 390 evaluates every skipped item.
    store
        .list_records(
            account.id,
            ObjectType::Contacts,
            &Page::at_offset(10, 390, false),
        )
        .await
        .expect("listed");
    counter.take();
    let scanned = counter.take_scanned();
    println!("| offset 390 | {scanned} items |");
    assert!(
        scanned >= 390,
        "an offset page reads what it skips: {scanned}"
    );
    table.delete().await;
}

/// A dispatch reads its router's pool by key, not the account's members: in
/// an account of 250 members, a router of 2 costs a warm dispatch 1 `BatchGetItem`
/// (router, record, rotation state, the 2 pool members, the webhook subscriptions' version) and 1
/// `TransactWriteItems`; the items read are those five (no subscription was ever written: no
/// version item), not 250 (the former code read every member, page by page).
/// No `Query` of the account's holiday calendars (none is named here).
/// A cold instance's first dispatch adds the account to its first
/// `BatchGetItem` and its teams and field definitions as two `Query`s in the same round; its
/// second round reads the pool (1 `BatchGetItem`) and lists the subscriptions (1 `Query`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatch_reads_its_routers_pool_whatever_the_accounts_size() {
    use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, Outcome};
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let account = Uuid::new_v4();
    let router = Uuid::new_v4();
    let contacts: Vec<Uuid> = (0..2).map(|_| Uuid::now_v7()).collect();
    let users: Vec<serde_json::Value> = (0..250)
        .map(|i| json!({"id": Uuid::new_v4(), "email": format!("m{i:03}@acme.example")}))
        .collect();
    let seed = json!({"accounts": [{
        "id": account, "name": "Acme", "active": true,
        "users": users,
        "routers": [{
            "id": router, "name": "R", "object_type": "contacts", "is_published": true,
            "settings": {"owner_field": "contact_owner", "distribution_model": "round robin"},
            "users": [{"email": "m000@acme.example"}, {"email": "m249@acme.example"}], "teams": []
        }],
        "records": {"contacts": contacts.iter().enumerate().map(|(i, id)| json!({"id": id, "fields": {"email": format!("lead{i}@prospect.example")}})).collect::<Vec<_>>()}
    }]});
    let plan = shared::seed::load(
        &seed.to_string(),
        Utc::now(),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .expect("seed");
    let store: Arc<dyn Store> = Arc::new(table.store.clone());
    store.provision(&plan).await.expect("provisioned");
    let engine = DispatchEngine::new(
        store.clone(),
        Arc::new(SystemClock),
        Arc::new(CatalogueCache::default()),
    );
    let counter = table.counter.clone();
    let dispatch = |contact: Uuid| {
        let engine = &engine;
        async move {
            let request = DispatchRequest {
                router_id: router.to_string(),
                object_id: contact.to_string(),
                account_id: None,
            };
            engine
                .dispatch(AccountContext::Token(account.into()), &request, None)
                .await
                .expect("dispatched")
        }
    };
    counter.take();
    counter.take_items_read();
    assert!(matches!(dispatch(contacts[0]).await, Outcome::Assigned(_)));
    assert_eq!(
        counter.take(),
        counts(&[("BatchGetItem", 2), ("Query", 3), ("TransactWriteItems", 1)]),
        "a cold dispatch: the account with the first round's keys; teams, field definitions \
         and webhook subscriptions"
    );
    counter.take_items_read();
    assert!(matches!(dispatch(contacts[1]).await, Outcome::Assigned(_)));
    let read = counter.take_items_read();
    assert_eq!(
        read, 5,
        "router, record, rotation state and 2 members; not 250 members"
    );
    assert_eq!(
        counter.take(),
        // No calendar is named, so none is read (BEHAVIOR 17); the subscriptions kept at the
        // version read serve (BEHAVIOR 13).
        counts(&[("BatchGetItem", 1), ("TransactWriteItems", 1)]),
        "a warm dispatch"
    );
    table.delete().await;
}

/// A warm dispatch of the demo's percentage router "Deals by share" (three
/// users, one of whom names the "Berlin office" holiday calendar) in an account with webhook
/// subscriptions is 1 `BatchGetItem` (router, deal, rotation state, the 3 members, the calendar,
/// the subscriptions' version) and 1 `TransactWriteItems` (with the deliveries), and no `Query`
/// (before the warm-instance caches: 3 `BatchGetItem`, 1 `Query`, 1 `TransactWriteItems`). A
/// subscription created since costs the next dispatch its `Query` (the list, after the version
/// moved), once, and receives it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_dispatch_with_subscriptions_is_one_batch_read_and_one_transaction() {
    use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, Outcome};
    use shared::model::webhook::{EventType, WebhookSubscription};
    const DEALS_BY_SHARE: &str = "7e3f4a56-b7c8-4d93-8ea5-b02b3c4d5e78";
    const DEALS: [&str; 2] = [
        "01936b2a-7c00-7a00-8000-000000000005",
        "01936b2a-7c00-7a00-8000-000000000006",
    ];
    const NORTHWIND: &str = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01";
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let plan = shared::seed::load(
        include_str!("../../../infra/seed/demo.json"),
        Utc::now(),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .expect("demo seed");
    let store: Arc<dyn Store> = Arc::new(table.store.clone());
    store.provision(&plan).await.expect("provisioned");
    let account: shared::types::AccountId = Uuid::parse_str(NORTHWIND).unwrap().into();
    let subscription = |n: usize| WebhookSubscription {
        id: Uuid::now_v7().into(),
        account_id: account,
        url: format!("https://hooks.example/{n}"),
        events: vec![EventType::AssignmentCreated],
        description: None,
        enabled: true,
        disabled_reason: None,
        secrets: Vec::new(),
        failing_since: None,
        created_at: Utc::now(),
        updated_at: Utc::now(),
        version: 1,
    };
    for n in 0..2 {
        store
            .create_webhook(&subscription(n), 20, None)
            .await
            .unwrap();
    }
    // Deliveries are handed to nothing: the requests counted are the dispatch's.
    let due = shared::due::DueWorker::new(
        store.clone(),
        Arc::new(SystemClock),
        shared::due::DueSettings::default(),
        Arc::new(Nowhere),
    );
    let engine = DispatchEngine::new(
        store.clone(),
        Arc::new(SystemClock),
        Arc::new(CatalogueCache::default()),
    )
    .with_due(due);
    let counter = table.counter.clone();
    let dispatch = |deal: &'static str| {
        let engine = &engine;
        async move {
            let request = DispatchRequest {
                router_id: DEALS_BY_SHARE.into(),
                object_id: deal.into(),
                account_id: None,
            };
            engine
                .dispatch(AccountContext::Token(account), &request, None)
                .await
                .expect("dispatched")
        }
    };
    assert!(matches!(dispatch(DEALS[0]).await, Outcome::Assigned(_)));
    counter.take();
    assert!(matches!(dispatch(DEALS[1]).await, Outcome::Assigned(_)));
    assert_eq!(
        counter.take(),
        counts(&[("BatchGetItem", 1), ("TransactWriteItems", 1)]),
        "a warm dispatch with subscriptions"
    );
    let late = subscription(2);
    store.create_webhook(&late, 20, None).await.unwrap();
    counter.take();
    assert!(matches!(dispatch(DEALS[0]).await, Outcome::Assigned(_)));
    assert_eq!(
        counter.take(),
        counts(&[("BatchGetItem", 1), ("Query", 1), ("TransactWriteItems", 1)]),
        "the dispatch after a subscription was created"
    );
    let delivered = store
        .list_deliveries(late.id, &Page::first(10, false))
        .await
        .unwrap();
    assert_eq!(delivered.items.len(), 1, "the new subscription is notified");
    counter.take();
    assert!(matches!(dispatch(DEALS[1]).await, Outcome::Assigned(_)));
    assert_eq!(
        counter.take(),
        counts(&[("BatchGetItem", 1), ("TransactWriteItems", 1)])
    );
    table.delete().await;
}

/// Hands nothing on (the deliveries' sending is not the dispatch's cost).
struct Nowhere;

#[async_trait::async_trait]
impl shared::due::Handoff for Nowhere {
    async fn hand_off(
        &self, _message: &shared::due::DueMessage,
    ) -> Result<(), shared::error::BoxError> {
        Ok(())
    }
    fn grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs(60)
    }
    fn reach(&self) -> Option<std::time::Duration> {
        None
    }
}

/// BEHAVIOR 15's costs on DynamoDB (docs/performance.md, "Router management"): a publish of a
/// draft makes at most 2 sequential store rounds (router, draft and rotation state read
/// together, then one transaction) in 4 requests; a page of revisions reads at most `limit` + 1
/// items, whatever the router's number of revisions and whether the page starts at an offset
/// or after a cursor. Run with `--nocapture` to print the figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_takes_two_rounds_and_a_revision_page_reads_at_most_limit_plus_one_items() {
    use shared::page::cursor::RequestedStart;
    use shared::routers::{Actor, RouterAdmin};
    use shared::store::faulty::FaultyStore;
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let account = account("Acme");
    table
        .store
        .provision(&plan_of(&account))
        .await
        .expect("provisioned");
    let faulty = Arc::new(FaultyStore::new(Arc::new(table.store.clone())));
    let admin = RouterAdmin::new(
        faulty.clone(),
        Arc::new(SystemClock),
        Arc::new(CatalogueCache::default()),
    );
    let actor = Actor {
        account_id: account.id,
        sub: "client",
    };
    let body = |name: &str| {
        json!({"name": name, "object_type": "contacts", "settings": null, "users": [], "teams": []})
            .as_object()
            .cloned()
            .unwrap()
    };
    let created = admin.create(actor, &body("R"), None).await.unwrap();
    let id = created.id;
    let counter = table.counter.clone();
    let mut publish_rounds = Vec::new();
    for n in 2..=30 {
        let draft = admin
            .put_draft(actor, id, None, Ok(body(&format!("R{n}"))))
            .await
            .unwrap();
        let if_match = {
            let mut headers = axum::http::HeaderMap::new();
            headers.insert("if-match", draft.etag.as_str().parse().unwrap());
            shared::types::etag::IfMatch::from_headers(&headers)
                .unwrap()
                .unwrap()
        };
        counter.take();
        faulty.faults.rounds.start();
        let (view, _) = admin
            .publish(actor, id, Some(&if_match), Ok(()), None)
            .await
            .unwrap();
        let (rounds, _) = faulty.faults.rounds.stop();
        assert_eq!(view.revision, n);
        publish_rounds.push(rounds);
        let requests = counter.take();
        // The first publish of a router (revision 1 -> 2) reads its revision
        // 1 no longer: its transaction conditions on it (a router stored by the release before
        // revisions has none, and is mended after that condition failed).
        assert_eq!(
            requests,
            counts(&[("GetItem", 3), ("TransactWriteItems", 1)]),
            "publish of revision {n}"
        );
    }
    assert!(publish_rounds.iter().all(|r| *r <= 2), "{publish_rounds:?}");
    let key = CursorKey::random();
    let mut pages = Vec::new();
    for (limit, start) in [
        (10, RequestedStart::Offset(0)),
        (10, RequestedStart::Offset(15)),
        (5, RequestedStart::Offset(27)),
        (100, RequestedStart::Offset(0)),
    ] {
        let request = ListRequest {
            limit,
            start,
            include_archived: false,
        };
        counter.take_items_read();
        let page = admin
            .revisions(account.id, id, &request, &key)
            .await
            .unwrap();
        let read = counter.take_items_read();
        // The router (1 item), then the page.
        assert!(read <= 1 + limit as u64 + 1, "{limit}: {read} items read");
        pages.push((limit, page.data.len(), read - 1));
        if let Some(after) = page.pagination.next_after {
            let next = ListRequest {
                limit,
                start: RequestedStart::After(after),
                include_archived: false,
            };
            counter.take_items_read();
            let page = admin.revisions(account.id, id, &next, &key).await.unwrap();
            let read = counter.take_items_read();
            assert!(read <= 1 + limit as u64 + 1, "after: {read} items read");
            pages.push((limit, page.data.len(), read - 1));
        }
    }
    println!(
        "publish rounds: {publish_rounds:?}; revision pages (limit, shown, items read): {pages:?}"
    );
    table.delete().await;
}
