//! The routing history and fairness stats (BEHAVIOR 8) through the dispatch engine and
//! [`HistoryService`], with a fixed clock, each test on the embedded store and on DynamoDB (a
//! table of its own on the emulator): every field of an entry, which outcomes leave one and
//! which do not, the queue's redelivery, newest-first order and paging (offset and `after`),
//! the record's history across routers and accounts, the 404s, and the stats' shares, target
//! shares and window.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;
use chrono::{DateTime, Duration, TimeZone, Utc};
use common::Backend;
use serde_json::{json, Value};
use shared::clock::FixedClock;
use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, Outcome};
use shared::error::DomainError;
use shared::fields::CatalogueCache;
use shared::history::{HistoryService, StatsWindow};
use shared::model::ObjectType;
use shared::page::cursor::{CursorKey, ListRequest, RequestedStart};
use shared::store::Store;
use shared::types::{AccountId, RecordId, RouterId};
use std::sync::Arc;
use uuid::Uuid;

/// A typed id from its text.
fn id<T: From<Uuid>>(text: &str) -> T {
    Uuid::parse_str(text).unwrap().into()
}

const ACCOUNT: &str = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01";
const OTHER_ACCOUNT: &str = "aa6b7c89-eafb-4ac6-b1d8-e35e6f7a8b01";
const ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const ROUTER2: &str = "6c2d3e45-f6a7-4b82-9d94-0a1b2c3d4e56";
const DEAL_ROUTER: &str = "8d4e5f67-a8b9-4ca3-8eb5-1b2c3d4e5f67";
const OTHER_ROUTER: &str = "7e3f4a56-b7c8-4d93-8ea5-b02b3c4d5e78";
const CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000002";
const OWNED_CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000003";
const MATCHING_CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000004";
const DEAL: &str = "01936b2a-7c00-7a00-8000-000000000005";
const OTHER_CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000009";
const COMPANY: &str = "01936b2a-7c00-7a00-8000-0000000000c1";

/// Wednesday 2026-11-18 10:00 UTC.
fn wednesday_10_utc() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 18, 10, 0, 0).unwrap()
}

fn email(n: usize) -> String {
    format!("m{n}@acme.example")
}

fn member(n: usize) -> Value {
    json!({"id": Uuid::from_u128(0x1000 + n as u128), "email": email(n), "time_zone": "UTC"})
}

fn rr() -> Value {
    json!({"owner_field": "contact_owner", "distribution_model": "round robin", "overwrite": false})
}

fn rr_overwrite() -> Value {
    json!({"owner_field": "contact_owner", "distribution_model": "round robin", "overwrite": true})
}

/// A seed: account A with members m1..m6 (24/7), team T1 = [m3, m4], the router `ROUTER` on
/// contacts with `settings` (users m1, m2, team T1), `ROUTER2` on contacts (round robin with
/// overwrite, user m1), `DEAL_ROUTER` on deals (user m1), three contacts (one owned by m2, one
/// of a company owned by m5), a deal and a company; account B with its own router and contact.
fn seed(settings: Value, edit: impl FnOnce(&mut Value)) -> Value {
    let mut s = json!({"accounts": [
        {
            "id": ACCOUNT, "name": "Acme", "active": true, "assignment_quota": null,
            "clients": [], "roles": [],
            "users": [member(1), member(2), member(3), member(4), member(5), member(6)],
            "teams": [{"id": Uuid::from_u128(0x2001), "name": "T1", "members": [email(3), email(4)]}],
            "fields": {},
            "routers": [
                {
                    "id": ROUTER, "name": "R", "object_type": "contacts", "is_published": true,
                    "has_integration": false, "settings": settings,
                    "users": [{"email": email(1)}, {"email": email(2)}], "teams": [{"name": "T1"}]
                },
                {
                    "id": ROUTER2, "name": "R2", "object_type": "contacts", "is_published": true,
                    "has_integration": false, "settings": rr_overwrite(),
                    "users": [{"email": email(1)}], "teams": []
                },
                {
                    "id": DEAL_ROUTER, "name": "Deals", "object_type": "deals", "is_published": true,
                    "has_integration": false,
                    "settings": {"owner_field": "deal_owner", "distribution_model": "round robin"},
                    "users": [{"email": email(1)}], "teams": []
                }
            ],
            "records": {
                "contacts": [
                    {"id": CONTACT, "fields": {"email": "lead@leads.example", "country": "US"}},
                    {"id": OWNED_CONTACT, "fields": {"email": "owned@leads.example", "contact_owner": email(2)}},
                    {"id": MATCHING_CONTACT, "fields": {"email": "buyer@prospect.example"}}
                ],
                "companies": [
                    {"id": COMPANY, "fields": {"company_name": "Prospect", "website_url": "https://www.prospect.example", "company_owner": email(5)}}
                ],
                "deals": [{"id": DEAL, "fields": {"deal_name": "D", "deal_stage": "closed_won", "pipeline": "default"}}]
            }
        },
        {
            "id": OTHER_ACCOUNT, "name": "Other", "active": true,
            "users": [{"id": Uuid::from_u128(0x9001), "email": "x@other.example"}],
            "routers": [{
                "id": OTHER_ROUTER, "name": "Other", "object_type": "contacts", "is_published": true,
                "settings": {"owner_field": "contact_owner", "distribution_model": "round robin"},
                "users": [{"email": "x@other.example"}], "teams": []
            }],
            "records": {"contacts": [{"id": OTHER_CONTACT, "fields": {"email": "z@other-leads.example"}}]}
        }
    ]});
    edit(&mut s);
    s
}

shared::on_both_stores!(
    an_assignment_entry_carries_every_field,
    each_assignment_reason_is_recorded,
    every_skip_from_unpublished_on_appends_one_entry_with_null_assignment_fields,
    errors_account_and_router_outcomes_and_already_processed_append_nothing,
    a_redelivered_queue_message_appends_no_second_entry,
    the_router_history_is_newest_first_and_pages_by_offset_and_cursor,
    a_cursor_opens_only_for_the_list_that_issued_it,
    the_record_history_spans_the_routers_of_its_type_and_only_its_account,
    lists_and_stats_of_another_accounts_ids_are_404,
    round_robin_stats_give_shares_targets_and_members_outside_the_pool,
    percentage_stats_target_each_members_percentage,
    the_stats_window_includes_from_and_excludes_to,
    entries_past_their_expiry_are_never_served,
    a_history_page_stops_at_its_byte_budget_and_continues_with_after,
);

struct Fixture {
    store: Arc<dyn Store>,
    engine: Arc<DispatchEngine>,
    clock: Arc<FixedClock>,
    history: HistoryService,
    cursors: CursorKey,
}

async fn fixture(backend: Backend, seed: Value) -> Fixture {
    let clock = Arc::new(FixedClock::new(wednesday_10_utc()));
    let store = backend.store().await;
    let plan = shared::seed::load(
        &seed.to_string(),
        wednesday_10_utc() - Duration::days(30),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .unwrap_or_else(|e| panic!("test seed: {e}"));
    store.provision(&plan).await.unwrap();
    let engine = Arc::new(DispatchEngine::new(
        store.clone(),
        clock.clone(),
        Arc::new(CatalogueCache::default()),
    ));
    Fixture {
        history: HistoryService::new(store.clone(), clock.clone()),
        store,
        engine,
        clock,
        cursors: CursorKey::random(),
    }
}

fn offset(limit: usize, offset: usize) -> ListRequest {
    ListRequest {
        limit,
        start: RequestedStart::Offset(offset),
        include_archived: false,
    }
}

fn after(limit: usize, cursor: &str) -> ListRequest {
    ListRequest {
        limit,
        start: RequestedStart::After(cursor.to_string()),
        include_archived: false,
    }
}

impl Fixture {
    async fn run(&self, router: &str, object: &str) -> Outcome {
        self.run_in(id(ACCOUNT), router, object).await
    }

    async fn run_in(&self, account: AccountId, router: &str, object: &str) -> Outcome {
        let request = DispatchRequest {
            router_id: router.into(),
            object_id: object.into(),
            account_id: None,
        };
        self.engine
            .dispatch(AccountContext::Token(account), &request, None)
            .await
            .unwrap()
    }

    /// A queue message for `router` and `object` with the SQS message id `message_id`.
    async fn queue(&self, router: &str, object: &str, message_id: &str) -> Outcome {
        let request = DispatchRequest {
            router_id: router.into(),
            object_id: object.into(),
            account_id: None,
        };
        self.engine
            .dispatch(AccountContext::RouterOwner, &request, Some(message_id))
            .await
            .unwrap()
    }

    /// A page of the router's history as the API shows it.
    async fn router_page(&self, router: &str, request: &ListRequest) -> Value {
        self.router_page_in(id(ACCOUNT), router, request)
            .await
            .unwrap()
    }

    async fn router_page_in(
        &self, account: AccountId, router: &str, request: &ListRequest,
    ) -> Result<Value, DomainError> {
        let view = self
            .history
            .router_dispatches(account, id::<RouterId>(router), request, &self.cursors)
            .await?;
        Ok(serde_json::to_value(view).unwrap())
    }

    /// The first 100 entries of the router's history.
    async fn router_entries(&self, router: &str) -> Vec<Value> {
        self.router_entries_in(id(ACCOUNT), router).await
    }

    async fn router_entries_in(&self, account: AccountId, router: &str) -> Vec<Value> {
        let page = self
            .router_page_in(account, router, &offset(100, 0))
            .await
            .unwrap();
        page["data"].as_array().unwrap().clone()
    }

    async fn record_page(&self, record: &str, request: &ListRequest) -> Result<Value, DomainError> {
        let view = self
            .history
            .record_dispatches(
                id(ACCOUNT),
                ObjectType::Contacts,
                id::<RecordId>(record),
                request,
                &self.cursors,
            )
            .await?;
        Ok(serde_json::to_value(view).unwrap())
    }

    async fn record_entries(&self, record: &str) -> Vec<Value> {
        let page = self.record_page(record, &offset(100, 0)).await.unwrap();
        page["data"].as_array().unwrap().clone()
    }

    async fn stats(&self, router: &str, from: DateTime<Utc>, to: DateTime<Utc>) -> Value {
        let stats = self
            .history
            .stats(id(ACCOUNT), id(router), StatsWindow { from, to })
            .await
            .unwrap();
        serde_json::to_value(stats).unwrap()
    }

    /// Creates one fresh contact with `email` and returns its id.
    async fn contact(&self, email: &str) -> String {
        let record_id = RecordId::new_v7();
        let at = wednesday_10_utc();
        let mut values = std::collections::BTreeMap::new();
        values.insert("email".to_string(), email.to_string());
        let record = shared::model::Record {
            id: record_id,
            account_id: id(ACCOUNT),
            object_type: ObjectType::Contacts,
            values,
            created_at: at,
            updated_at: at,
            archived_at: None,
            archived_by: None,
            version: 1,
        };
        self.store.create_record(&record, &[]).await.unwrap();
        record_id.to_string()
    }

    /// Creates `n` fresh contacts (domain `leads.example`) and returns their ids.
    async fn contacts(&self, n: usize) -> Vec<String> {
        let mut ids = Vec::new();
        for i in 0..n {
            ids.push(
                self.contact(&format!("c{i}-{}@leads.example", Uuid::now_v7()))
                    .await,
            );
        }
        ids
    }
}

fn assigned_user(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Assigned(a) => a.user.as_str(),
        other => panic!("expected an assignment, got {other:?}"),
    }
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

const ENTRY_KEYS: [&str; 15] = [
    "id",
    "router_id",
    "router_revision",
    "object_type",
    "object_id",
    "message",
    "success",
    "user",
    "reason",
    "previous_owner",
    "field_name",
    "source",
    "dispatched_at",
    "crm_sync",
    "sla",
];

/// Checks the entry's key set and its id (a UUID v7), and returns it without the id.
fn without_id(entry: &Value) -> Value {
    let mut names = keys(entry);
    names.sort_unstable();
    let mut expected = ENTRY_KEYS.to_vec();
    expected.sort_unstable();
    assert_eq!(names, expected, "{entry}");
    let entry_id = Uuid::parse_str(entry["id"].as_str().unwrap()).unwrap();
    assert_eq!(entry_id.get_version_num(), 7, "{entry}");
    let mut rest = entry.clone();
    rest.as_object_mut().unwrap().remove("id");
    rest
}

async fn an_assignment_entry_carries_every_field(backend: Backend) {
    let f = fixture(backend, seed(rr_overwrite(), |_| {})).await;
    // Milliseconds are kept, nanoseconds cut.
    f.clock
        .set(wednesday_10_utc() + Duration::nanoseconds(123_456_789));
    assert_eq!(assigned_user(&f.run(ROUTER, CONTACT).await), email(1));
    let entries = f.router_entries(ROUTER).await;
    assert_eq!(entries.len(), 1);
    assert_eq!(
        without_id(&entries[0]),
        json!({
            "router_id": ROUTER, "router_revision": 1, "object_type": "contacts", "object_id": CONTACT,
            "message": "Owner assigned", "success": true, "user": email(1), "reason": "rotation",
            "previous_owner": null, "field_name": "Contact owner", "source": "api",
            "dispatched_at": "2026-11-18T10:00:00.123Z", "crm_sync": null, "sla": null
        })
    );
    // The record's history shows the same entry.
    assert_eq!(f.record_entries(CONTACT).await, entries);

    // Overwriting through the queue: the previous owner is kept, the source is `queue`.
    f.clock.set(wednesday_10_utc() + Duration::minutes(5));
    let outcome = f.queue(ROUTER, OWNED_CONTACT, "msg-overwrite").await;
    assert_eq!(assigned_user(&outcome), email(2));
    let entries = f.router_entries(ROUTER).await;
    assert_eq!(entries.len(), 2);
    assert_eq!(
        without_id(&entries[0]),
        json!({
            "router_id": ROUTER, "router_revision": 1, "object_type": "contacts", "object_id": OWNED_CONTACT,
            "message": "Owner assigned", "success": true, "user": email(2), "reason": "rotation",
            "previous_owner": email(2), "field_name": "Contact owner", "source": "queue",
            "dispatched_at": "2026-11-18T10:05:00.000Z", "crm_sync": null, "sla": null
        })
    );
    // Once more: the owner m2 is replaced by m3, the entry names m2 as the previous owner.
    f.clock.set(wednesday_10_utc() + Duration::minutes(6));
    assert_eq!(assigned_user(&f.run(ROUTER, OWNED_CONTACT).await), email(3));
    let record = f.record_entries(OWNED_CONTACT).await;
    assert_eq!(record.len(), 2);
    assert_eq!(record[0]["previous_owner"], email(2));
    assert_eq!(record[0]["user"], email(3));
    assert_eq!(record[1]["source"], "queue");
}

async fn each_assignment_reason_is_recorded(backend: Backend) {
    // m5 owns the company of MATCHING_CONTACT's domain; m6 is the backup.
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "account_matching": true, "default_user": email(6)});
    let f = fixture(backend, seed(settings, |_| {})).await;
    assert_eq!(assigned_user(&f.run(ROUTER, CONTACT).await), email(1));
    f.clock.set(wednesday_10_utc() + Duration::seconds(1));
    assert_eq!(
        assigned_user(&f.run(ROUTER, MATCHING_CONTACT).await),
        email(5)
    );
    // Nobody of the pool available: the backup.
    let f2 = fixture(
        backend,
        seed(
            json!({"owner_field": "contact_owner", "distribution_model": "round robin", "default_user": email(6)}),
            |s| {
                for i in 0..4 {
                    s["accounts"][0]["users"][i]["office_status"] = json!(false);
                }
            },
        ),
    )
    .await;
    assert_eq!(assigned_user(&f2.run(ROUTER, CONTACT).await), email(6));
    let entries = f.router_entries(ROUTER).await;
    let reasons: Vec<(&Value, &Value)> =
        entries.iter().map(|e| (&e["user"], &e["reason"])).collect();
    assert_eq!(
        reasons,
        [
            (&json!(email(5)), &json!("account_matching")),
            (&json!(email(1)), &json!("rotation"))
        ]
    );
    let backup = f2.router_entries(ROUTER).await;
    assert_eq!(backup.len(), 1);
    assert_eq!(
        without_id(&backup[0]),
        json!({
            "router_id": ROUTER, "router_revision": 1, "object_type": "contacts", "object_id": CONTACT,
            "message": "Owner assigned", "success": true, "user": email(6), "reason": "backup",
            "previous_owner": null, "field_name": "Contact owner", "source": "api",
            "dispatched_at": "2026-11-18T10:00:00.000Z", "crm_sync": null, "sla": null
        })
    );
}

async fn every_skip_from_unpublished_on_appends_one_entry_with_null_assignment_fields(
    backend: Backend,
) {
    type Edit = Box<dyn FnOnce(&mut Value)>;
    let no_edit = || -> Edit { Box::new(|_| {}) };
    let missing = Uuid::now_v7().to_string();
    let all_off: Edit = Box::new(|s| {
        for i in 0..6 {
            s["accounts"][0]["users"][i]["office_status"] = json!(false)
        }
    });
    let all_full: Edit = Box::new(|s| {
        for i in 0..6 {
            s["accounts"][0]["users"][i]["capacity"] =
                json!([{"max_capacity": 3, "current_capacity": 3}])
        }
    });
    // (settings, seed edit, object, expected message)
    let cases: Vec<(Value, Edit, String, &str)> = vec![
        (
            rr(),
            Box::new(|s| s["accounts"][0]["routers"][0]["is_published"] = json!(false)),
            CONTACT.into(),
            "The router is unpublished",
        ),
        (
            Value::Null,
            no_edit(),
            CONTACT.into(),
            "The router has no settings",
        ),
        (
            json!({"distribution_model": "round robin"}),
            no_edit(),
            CONTACT.into(),
            "The router has no settings",
        ),
        (rr(), no_edit(), missing.clone(), "Object not found"),
        (rr(), no_edit(), DEAL.into(), "Object not found"),
        (rr(), no_edit(), "not-a-uuid".into(), "Object not found"),
        (
            json!({"owner_field": "contact_owner", "distribution_model": "round robin",
                "trigger": {"groups": [{"conditions": [{"field": "country", "operator": "equals", "value": "DE"}]}]}}),
            no_edit(),
            CONTACT.into(),
            "Trigger did not match",
        ),
        (
            rr(),
            no_edit(),
            OWNED_CONTACT.into(),
            "The router can not overwrite",
        ),
        (
            rr(),
            Box::new(|s| s["accounts"][0]["assignment_quota"] = json!(0)),
            CONTACT.into(),
            "Assignment limit reached",
        ),
        (rr(), all_full, CONTACT.into(), "Assignment limit reached"),
        (
            rr(),
            all_off,
            CONTACT.into(),
            "There are no users available and the backup user is disabled",
        ),
    ];
    for (settings, edit, object, expected) in cases {
        let f = fixture(backend, seed(settings.clone(), edit)).await;
        let outcome = f.run(ROUTER, &object).await;
        assert!(
            matches!(outcome, Outcome::Skipped(s) if s.message() == expected),
            "{settings} {object}: {outcome:?}"
        );
        let entries = f.router_entries(ROUTER).await;
        assert_eq!(entries.len(), 1, "{expected}: {entries:?}");
        assert_eq!(
            without_id(&entries[0]),
            json!({
                "router_id": ROUTER, "router_revision": 1, "object_type": "contacts", "object_id": object,
                "message": expected, "success": false, "user": null, "reason": null,
                "previous_owner": null, "field_name": null, "source": "api",
                "dispatched_at": "2026-11-18T10:00:00.000Z", "crm_sync": null, "sla": null
            }),
            "{expected}"
        );
        // The entry is in the record's history when the object id is a record of the type.
        if object == CONTACT || object == OWNED_CONTACT {
            assert_eq!(f.record_entries(&object).await, entries, "{expected}");
        }
        if object == "not-a-uuid" || object == DEAL || object == missing {
            // A non-record object id is in the router's history only.
            for record in [CONTACT, OWNED_CONTACT, MATCHING_CONTACT] {
                assert!(f.record_entries(record).await.is_empty(), "{object}");
            }
        }
        // No other router got the entry.
        assert!(f.router_entries(ROUTER2).await.is_empty());
    }
}

async fn errors_account_and_router_outcomes_and_already_processed_append_nothing(backend: Backend) {
    // Account not found, Router not found (unknown, not a UUID, another account's, mismatched
    // queue account).
    let f = fixture(backend, seed(rr(), |_| {})).await;
    let unknown_account: AccountId = id("00000000-0000-4000-8000-000000000000");
    for (account, router, expected) in [
        (unknown_account, ROUTER, "Account not found"),
        (
            id(ACCOUNT),
            "5b1c2d34-e5f6-4a71-8c83-000000000000",
            "Router not found",
        ),
        (id(ACCOUNT), "not-a-uuid", "Router not found"),
        (id(ACCOUNT), OTHER_ROUTER, "Router not found"),
        (id(OTHER_ACCOUNT), ROUTER, "Router not found"),
    ] {
        let outcome = f.run_in(account, router, CONTACT).await;
        assert!(
            matches!(outcome, Outcome::Skipped(s) if s.message() == expected),
            "{router}: {outcome:?}"
        );
    }
    let wrong_account = DispatchRequest {
        router_id: ROUTER.into(),
        object_id: CONTACT.into(),
        account_id: Some(OTHER_ACCOUNT.into()),
    };
    let outcome = f
        .engine
        .dispatch(
            AccountContext::RouterOwner,
            &wrong_account,
            Some("msg-wrong"),
        )
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Skipped(s) if s.message() == "Router not found"));
    assert!(f.router_entries(ROUTER).await.is_empty());
    assert!(f.record_entries(CONTACT).await.is_empty());
    assert!(f
        .router_entries_in(id(OTHER_ACCOUNT), OTHER_ROUTER)
        .await
        .is_empty());

    // Account is not active.
    let f = fixture(
        backend,
        seed(rr(), |s| s["accounts"][0]["active"] = json!(false)),
    )
    .await;
    let outcome = f.run(ROUTER, CONTACT).await;
    assert!(matches!(outcome, Outcome::Skipped(s) if s.message() == "Account is not active"));
    let outcome = f.queue(ROUTER, CONTACT, "msg-inactive").await;
    assert!(matches!(outcome, Outcome::Skipped(s) if s.message() == "Account is not active"));
    assert!(f.router_entries(ROUTER).await.is_empty());

    // An archived router: Router not found, no entry (its history is still readable).
    let f = fixture(
        backend,
        seed(rr(), |s| {
            s["accounts"][0]["routers"][0]["archived"] = json!("2026-01-01T00:00:00Z")
        }),
    )
    .await;
    for outcome in [
        f.run(ROUTER, CONTACT).await,
        f.queue(ROUTER, CONTACT, "msg-archived").await,
    ] {
        assert!(matches!(outcome, Outcome::Skipped(s) if s.message() == "Router not found"));
    }
    assert!(f.router_entries(ROUTER).await.is_empty());
    assert!(f.record_entries(CONTACT).await.is_empty());
}

async fn a_redelivered_queue_message_appends_no_second_entry(backend: Backend) {
    let f = fixture(backend, seed(rr(), |_| {})).await;
    // An assignment, redelivered.
    assert_eq!(
        assigned_user(&f.queue(ROUTER, CONTACT, "msg-1").await),
        email(1)
    );
    f.clock.set(wednesday_10_utc() + Duration::seconds(1));
    assert_eq!(
        f.queue(ROUTER, CONTACT, "msg-1").await,
        Outcome::AlreadyProcessed
    );
    // A skip, redelivered.
    f.clock.set(wednesday_10_utc() + Duration::seconds(2));
    let first = f.queue(ROUTER, OWNED_CONTACT, "msg-2").await;
    assert!(matches!(first, Outcome::Skipped(s) if s.message() == "The router can not overwrite"));
    f.clock.set(wednesday_10_utc() + Duration::seconds(3));
    assert_eq!(
        f.queue(ROUTER, OWNED_CONTACT, "msg-2").await,
        Outcome::AlreadyProcessed
    );
    // A skip before the record (Object not found), redelivered.
    let _ = f.queue(ROUTER, "nope", "msg-3").await;
    assert_eq!(
        f.queue(ROUTER, "nope", "msg-3").await,
        Outcome::AlreadyProcessed
    );
    let entries = f.router_entries(ROUTER).await;
    let messages: Vec<&str> = entries
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        [
            "Object not found",
            "The router can not overwrite",
            "Owner assigned"
        ]
    );
    assert!(entries.iter().all(|e| e["source"] == "queue"));
    // Another message id for the same request is a new dispatch with its own entry.
    let _ = f.queue(ROUTER, "nope", "msg-4").await;
    assert_eq!(f.router_entries(ROUTER).await.len(), 4);
}

async fn the_router_history_is_newest_first_and_pages_by_offset_and_cursor(backend: Backend) {
    let f = fixture(backend, seed(rr(), |_| {})).await;
    let ids = f.contacts(20).await;
    // 25 dispatches, one second apart, every fifth a skip; then 3 more at one same instant.
    let mut expected_objects: Vec<String> = Vec::new();
    let mut contacts = ids.iter();
    for i in 0..25 {
        f.clock.set(wednesday_10_utc() + Duration::seconds(i));
        let object = if i % 5 == 4 {
            format!("missing-{i}")
        } else {
            contacts.next().unwrap().clone()
        };
        let _ = f.run(ROUTER, &object).await;
        expected_objects.push(object);
    }
    expected_objects.reverse();
    // Newest first by offset pages.
    let mut by_offset: Vec<Value> = Vec::new();
    for start in [0, 10, 20] {
        let page = f.router_page(ROUTER, &offset(10, start)).await;
        assert_eq!(page["pagination"]["offset"], start);
        assert_eq!(page["pagination"]["limit"], 10);
        assert_eq!(
            page["pagination"]["count"],
            page["data"].as_array().unwrap().len()
        );
        by_offset.extend(page["data"].as_array().unwrap().iter().cloned());
    }
    let objects: Vec<&str> = by_offset
        .iter()
        .map(|e| e["object_id"].as_str().unwrap())
        .collect();
    assert_eq!(objects, expected_objects);
    let times: Vec<&str> = by_offset
        .iter()
        .map(|e| e["dispatched_at"].as_str().unwrap())
        .collect();
    assert_eq!(times[0], "2026-11-18T10:00:24.000Z");
    assert_eq!(times[24], "2026-11-18T10:00:00.000Z");
    // The same walk with cursors: no skip, no repeat, next_after null on the last page only.
    let mut walked: Vec<Value> = Vec::new();
    let mut page = f.router_page(ROUTER, &offset(10, 0)).await;
    let mut pages = 1;
    loop {
        walked.extend(page["data"].as_array().unwrap().iter().cloned());
        match page["pagination"]["next_after"].as_str() {
            Some(cursor) => {
                page = f.router_page(ROUTER, &after(10, cursor)).await;
                assert_eq!(page["pagination"]["offset"], 0);
                pages += 1;
            }
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(walked, by_offset);
    // An offset past the end: empty, last page.
    let beyond = f.router_page(ROUTER, &offset(10, 25)).await;
    assert_eq!(beyond["data"], json!([]));
    assert_eq!(beyond["pagination"]["next_after"], Value::Null);
    // A page of exactly the remaining items has no next page.
    let exact = f.router_page(ROUTER, &offset(5, 20)).await;
    assert_eq!(exact["data"].as_array().unwrap().len(), 5);
    assert_eq!(exact["pagination"]["next_after"], Value::Null);

    // Entries at one same instant, walked with limit 1 then 2 (the limit may change): each
    // once.
    f.clock.set(wednesday_10_utc() + Duration::minutes(1));
    for i in 0..3 {
        let _ = f.run(ROUTER, &format!("same-instant-{i}")).await;
    }
    let mut seen: Vec<String> = Vec::new();
    let mut page = f.router_page(ROUTER, &offset(1, 0)).await;
    loop {
        for e in page["data"].as_array().unwrap() {
            seen.push(e["id"].as_str().unwrap().to_string());
        }
        match page["pagination"]["next_after"].as_str() {
            Some(cursor) => page = f.router_page(ROUTER, &after(2, cursor)).await,
            None => break,
        }
    }
    assert_eq!(seen.len(), 28);
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 28, "an entry repeated");
    let mut firsts: Vec<String> = seen[..3].to_vec();
    firsts.sort();
    let all = f.router_entries(ROUTER).await;
    let mut newest: Vec<String> = all[..3]
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    newest.sort();
    assert_eq!(firsts, newest);
    assert!(all[..3]
        .iter()
        .all(|e| e["dispatched_at"] == "2026-11-18T10:01:00.000Z"));

    // A record's history pages the same way.
    let settings = rr_overwrite();
    let f = fixture(backend, seed(settings, |_| {})).await;
    for i in 0..12 {
        f.clock.set(wednesday_10_utc() + Duration::seconds(i));
        let _ = f.run(ROUTER, CONTACT).await;
    }
    let mut walked: Vec<String> = Vec::new();
    let mut page = f.record_page(CONTACT, &offset(5, 0)).await.unwrap();
    loop {
        for e in page["data"].as_array().unwrap() {
            walked.push(e["dispatched_at"].as_str().unwrap().to_string());
        }
        match page["pagination"]["next_after"].as_str() {
            Some(cursor) => page = f.record_page(CONTACT, &after(5, cursor)).await.unwrap(),
            None => break,
        }
    }
    let expected: Vec<String> = (0..12)
        .rev()
        .map(|i| format!("2026-11-18T10:00:{i:02}.000Z"))
        .collect();
    assert_eq!(walked, expected);
    let second = f.record_page(CONTACT, &offset(5, 5)).await.unwrap();
    assert_eq!(
        second["data"][0]["dispatched_at"],
        "2026-11-18T10:00:06.000Z"
    );
}

async fn a_cursor_opens_only_for_the_list_that_issued_it(backend: Backend) {
    let f = fixture(backend, seed(rr_overwrite(), |_| {})).await;
    for i in 0..3 {
        f.clock.set(wednesday_10_utc() + Duration::seconds(i));
        let _ = f.run(ROUTER, CONTACT).await;
        let _ = f.run(ROUTER2, CONTACT).await;
    }
    let page = f.router_page(ROUTER, &offset(1, 0)).await;
    let cursor = page["pagination"]["next_after"]
        .as_str()
        .unwrap()
        .to_string();
    // It opens for its list.
    assert!(f
        .router_page_in(id(ACCOUNT), ROUTER, &after(1, &cursor))
        .await
        .is_ok());
    // Not for another router's list, nor the record's list.
    let err = f
        .router_page_in(id(ACCOUNT), ROUTER2, &after(1, &cursor))
        .await
        .unwrap_err();
    assert!(matches!(err, DomainError::Invalid { .. }), "{err:?}");
    assert_eq!(err.field(), Some("after"));
    let err = f
        .record_page(CONTACT, &after(1, &cursor))
        .await
        .unwrap_err();
    assert_eq!(err.field(), Some("after"));
    // A record list's cursor is refused on a router list.
    let record = f.record_page(CONTACT, &offset(1, 0)).await.unwrap();
    let record_cursor = record["pagination"]["next_after"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(f
        .record_page(CONTACT, &after(1, &record_cursor))
        .await
        .is_ok());
    let err = f
        .router_page_in(id(ACCOUNT), ROUTER, &after(1, &record_cursor))
        .await
        .unwrap_err();
    assert_eq!(err.field(), Some("after"));
    // Junk and an altered cursor.
    for bad in [
        "junk".to_string(),
        format!("{cursor}x"),
        cursor.replacen('.', "A.", 1),
    ] {
        let err = f
            .router_page_in(id(ACCOUNT), ROUTER, &after(1, &bad))
            .await
            .unwrap_err();
        assert_eq!(err.field(), Some("after"), "{bad}");
    }
}

async fn the_record_history_spans_the_routers_of_its_type_and_only_its_account(backend: Backend) {
    let f = fixture(backend, seed(rr_overwrite(), |_| {})).await;
    let at = |s: i64| wednesday_10_utc() + Duration::seconds(s);
    f.clock.set(at(0));
    assert_eq!(assigned_user(&f.run(ROUTER, CONTACT).await), email(1));
    f.clock.set(at(1));
    assert_eq!(assigned_user(&f.run(ROUTER2, CONTACT).await), email(1));
    // A deals router asked for the contact's id: Object not found, in its own history only.
    f.clock.set(at(2));
    let _ = f.run(DEAL_ROUTER, CONTACT).await;
    // Account B's router asked (by the queue) for account A's contact id: Object not found in
    // B's history, never in A's record history.
    f.clock.set(at(3));
    let outcome = f.queue(OTHER_ROUTER, CONTACT, "msg-b").await;
    assert!(matches!(outcome, Outcome::Skipped(s) if s.message() == "Object not found"));
    f.clock.set(at(4));
    let outcome = f.run_in(id(OTHER_ACCOUNT), OTHER_ROUTER, CONTACT).await;
    assert!(matches!(outcome, Outcome::Skipped(s) if s.message() == "Object not found"));
    let b = f.router_entries_in(id(OTHER_ACCOUNT), OTHER_ROUTER).await;
    assert_eq!(b.len(), 2);
    assert!(b.iter().all(|e| e["object_id"] == CONTACT));
    let deal_router = f.router_entries(DEAL_ROUTER).await;
    assert_eq!(deal_router.len(), 1);
    assert_eq!(deal_router[0]["object_type"], "deals");

    let record = f.record_entries(CONTACT).await;
    let routers: Vec<&str> = record
        .iter()
        .map(|e| e["router_id"].as_str().unwrap())
        .collect();
    assert_eq!(routers, [ROUTER2, ROUTER]);
    assert_eq!(record[0]["previous_owner"], email(1));
    // An archived record keeps its history.
    let stored = f
        .store
        .get_record(id(ACCOUNT), ObjectType::Contacts, id(CONTACT))
        .await
        .unwrap()
        .unwrap();
    let mut archived = stored.clone();
    archived.archived_at = Some(at(10));
    archived.archived_by = Some("test".into());
    archived.version = stored.version + 1;
    f.store
        .update_record(&archived, stored.version, &[], &[])
        .await
        .unwrap();
    assert_eq!(f.record_entries(CONTACT).await, record);
    // Account B's record history of its own contact holds nothing of A.
    let b_record = f
        .history
        .record_dispatches(
            id(OTHER_ACCOUNT),
            ObjectType::Contacts,
            id(OTHER_CONTACT),
            &offset(100, 0),
            &f.cursors,
        )
        .await
        .unwrap();
    assert!(b_record.data.is_empty());
}

async fn lists_and_stats_of_another_accounts_ids_are_404(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| {
            s["accounts"][0]["routers"][1]["archived"] = json!("2026-01-01T00:00:00Z")
        }),
    )
    .await;
    let _ = f
        .run_in(id(OTHER_ACCOUNT), OTHER_ROUTER, OTHER_CONTACT)
        .await;
    let not_found = |r: Result<Value, DomainError>, message: &str| match r {
        Err(DomainError::NotFound(m)) => assert_eq!(m, message),
        other => panic!("expected 404 {message}, got {other:?}"),
    };
    not_found(
        f.router_page_in(id(ACCOUNT), OTHER_ROUTER, &offset(10, 0))
            .await,
        "Router not found",
    );
    not_found(
        f.router_page_in(id(ACCOUNT), &Uuid::now_v7().to_string(), &offset(10, 0))
            .await,
        "Router not found",
    );
    not_found(
        f.record_page(OTHER_CONTACT, &offset(10, 0)).await,
        "Record not found",
    );
    not_found(
        f.record_page(&Uuid::now_v7().to_string(), &offset(10, 0))
            .await,
        "Record not found",
    );
    // A contact id asked as a deal.
    let as_deal = f
        .history
        .record_dispatches(
            id(ACCOUNT),
            ObjectType::Deals,
            id(CONTACT),
            &offset(10, 0),
            &f.cursors,
        )
        .await;
    assert!(matches!(as_deal, Err(DomainError::NotFound(m)) if m == "Record not found"));
    let window = StatsWindow::month_of(wednesday_10_utc());
    let stats = f.history.stats(id(ACCOUNT), id(OTHER_ROUTER), window).await;
    assert!(matches!(stats, Err(DomainError::NotFound(m)) if m == "Router not found"));
    // The owner account sees its router's entry; an archived router's history is readable.
    assert_eq!(
        f.router_entries_in(id(OTHER_ACCOUNT), OTHER_ROUTER)
            .await
            .len(),
        1
    );
    assert!(f.router_entries(ROUTER2).await.is_empty());
    assert!(f
        .history
        .stats(id(ACCOUNT), id(ROUTER2), window)
        .await
        .is_ok());
}

/// The stats' member line.
fn line(user: String, assigned: u64, total: u64, target: Value, reasons: [u64; 3]) -> Value {
    json!({
        "user": user, "assigned": assigned,
        "share": if total == 0 { 0.0 } else { assigned as f64 / total as f64 },
        "target_share": target,
        "by_reason": {"rotation": reasons[0], "account_matching": reasons[1], "backup": reasons[2],
                      "sla_reassignment": 0}
    })
}

async fn round_robin_stats_give_shares_targets_and_members_outside_the_pool(backend: Backend) {
    // Pool m1, m2 (users) then m3, m4 (team T1), each working 09:00-17:00 UTC on weekdays;
    // m5 owns the matching company, m6 is the backup (both outside the pool).
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "account_matching": true, "default_user": email(6)});
    let f = fixture(
        backend,
        seed(settings, |s| {
            for i in 0..4 {
                s["accounts"][0]["users"][i]["working_hours"] =
                    json!([{"days": "mon-fri", "start_date": "09:00", "end_date": "17:00"}]);
            }
        }),
    )
    .await;
    let ids = f.contacts(6).await;
    let mut got = Vec::new();
    for (i, c) in ids[..5].iter().enumerate() {
        f.clock
            .set(wednesday_10_utc() + Duration::seconds(i as i64));
        got.push(assigned_user(&f.run(ROUTER, c).await).to_string());
    }
    assert_eq!(got, [email(1), email(2), email(3), email(4), email(1)]);
    f.clock.set(wednesday_10_utc() + Duration::minutes(1));
    assert_eq!(
        assigned_user(&f.run(ROUTER, MATCHING_CONTACT).await),
        email(5)
    );
    // 20:00: the pool is off work; the backup takes it.
    f.clock
        .set(Utc.with_ymd_and_hms(2026, 11, 18, 20, 0, 0).unwrap());
    assert_eq!(assigned_user(&f.run(ROUTER, &ids[5]).await), email(6));
    // A skip counts for nothing.
    let _ = f.run(ROUTER, "nope").await;
    let stats = f
        .stats(
            ROUTER,
            Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap(),
        )
        .await;
    let t = 7;
    assert_eq!(
        stats,
        json!({
            "router_id": ROUTER,
            "from": "2026-11-01T00:00:00.000Z",
            "to": "2026-12-01T00:00:00.000Z",
            "total": t,
            "members": [
                line(email(1), 2, t, json!(0.25), [2, 0, 0]),
                line(email(2), 1, t, json!(0.25), [1, 0, 0]),
                line(email(3), 1, t, json!(0.25), [1, 0, 0]),
                line(email(4), 1, t, json!(0.25), [1, 0, 0]),
                line(email(5), 1, t, Value::Null, [0, 1, 0]),
                line(email(6), 1, t, Value::Null, [0, 0, 1]),
            ]
        })
    );
    // An empty window: the pool with zero shares, nobody else.
    let empty = f
        .stats(
            ROUTER,
            Utc.with_ymd_and_hms(2026, 10, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap(),
        )
        .await;
    assert_eq!(empty["total"], 0);
    assert_eq!(
        empty["members"],
        json!([
            line(email(1), 0, 0, json!(0.25), [0, 0, 0]),
            line(email(2), 0, 0, json!(0.25), [0, 0, 0]),
            line(email(3), 0, 0, json!(0.25), [0, 0, 0]),
            line(email(4), 0, 0, json!(0.25), [0, 0, 0]),
        ])
    );
    // Another router's assignments are not counted.
    f.clock.set(wednesday_10_utc() + Duration::minutes(2));
    assert_eq!(assigned_user(&f.run(ROUTER2, CONTACT).await), email(1));
    let again = f
        .stats(
            ROUTER,
            Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap(),
        )
        .await;
    assert_eq!(again["total"], 7);
}

async fn percentage_stats_target_each_members_percentage(backend: Backend) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "percentage"});
    let f = fixture(
        backend,
        seed(settings, |s| {
            s["accounts"][0]["routers"][0]["users"] = json!([
                {"email": email(1), "percentage": 50}, {"email": email(2), "percentage": 30},
                {"email": email(3), "percentage": 20}, {"email": email(4), "percentage": 0}
            ]);
            s["accounts"][0]["routers"][0]["teams"] = json!([]);
        }),
    )
    .await;
    for (i, c) in f.contacts(10).await.iter().enumerate() {
        f.clock
            .set(wednesday_10_utc() + Duration::seconds(i as i64));
        let _ = assigned_user(&f.run(ROUTER, c).await).to_string();
    }
    let stats = f
        .stats(
            ROUTER,
            wednesday_10_utc(),
            wednesday_10_utc() + Duration::days(1),
        )
        .await;
    assert_eq!(
        stats["members"],
        json!([
            line(email(1), 5, 10, json!(0.5), [5, 0, 0]),
            line(email(2), 3, 10, json!(0.3), [3, 0, 0]),
            line(email(3), 2, 10, json!(0.2), [2, 0, 0]),
            line(email(4), 0, 10, json!(0.0), [0, 0, 0]),
        ])
    );
    assert_eq!(stats["total"], 10);
}

async fn the_stats_window_includes_from_and_excludes_to(backend: Backend) {
    let f = fixture(backend, seed(rr(), |_| {})).await;
    let ids = f.contacts(4).await;
    let t0 = Utc.with_ymd_and_hms(2026, 11, 18, 10, 0, 0).unwrap();
    let t1 = t0 + Duration::hours(1);
    let t2 = t0 + Duration::hours(2);
    let t3 = t0 + Duration::hours(2) + Duration::milliseconds(1);
    for (at, c) in [t0, t1, t2, t3].iter().zip(&ids) {
        f.clock.set(*at);
        let _ = assigned_user(&f.run(ROUTER, c).await).to_string();
    }
    // Assigned in order m1 (t0), m2 (t1), m3 (t2), m4 (t3).
    let count = |stats: &Value| -> Vec<u64> {
        stats["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["assigned"].as_u64().unwrap())
            .collect()
    };
    let s = f.stats(ROUTER, t0, t2).await;
    assert_eq!(s["total"], 2, "[t0, t2) holds t0 and t1: {s}");
    assert_eq!(count(&s), [1, 1, 0, 0]);
    let s = f.stats(ROUTER, t0 + Duration::milliseconds(1), t3).await;
    assert_eq!(count(&s), [0, 1, 1, 0], "{s}");
    let s = f.stats(ROUTER, t2, t3).await;
    assert_eq!(count(&s), [0, 0, 1, 0], "{s}");
    let s = f.stats(ROUTER, t3, t3 + Duration::milliseconds(1)).await;
    assert_eq!(count(&s), [0, 0, 0, 1], "{s}");
    // The default window is the clock's calendar month: the last millisecond of November is
    // in it, the first instant of December is not.
    let end = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
    let more = f.contacts(2).await;
    f.clock.set(end - Duration::milliseconds(1));
    let _ = assigned_user(&f.run(ROUTER, &more[0]).await).to_string();
    f.clock.set(end);
    let _ = assigned_user(&f.run(ROUTER, &more[1]).await).to_string();
    let window = StatsWindow::parse(None, None, end - Duration::days(1)).unwrap();
    let s = serde_json::to_value(
        f.history
            .stats(id(ACCOUNT), id(ROUTER), window)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(s["from"], "2026-11-01T00:00:00.000Z");
    assert_eq!(s["to"], "2026-12-01T00:00:00.000Z");
    assert_eq!(s["total"], 5);
    let december = StatsWindow::parse(None, None, end).unwrap();
    let s = f
        .history
        .stats(id(ACCOUNT), id(ROUTER), december)
        .await
        .unwrap();
    assert_eq!(s.total, 1);
}

/// An entry past `expires_at` is not served (DynamoDB's TTL deletes up to
/// days late), and the embedded store forgets it (and the queue markers) once expired.
async fn entries_past_their_expiry_are_never_served(backend: Backend) {
    let f = fixture(backend, seed(rr(), |_| {})).await;
    f.run(ROUTER, CONTACT).await;
    f.queue(ROUTER2, CONTACT, "message-kept").await;
    assert_eq!(f.router_entries(ROUTER).await.len(), 1);
    assert_eq!(f.record_entries(CONTACT).await.len(), 2);
    // 400 days and a second later: expired.
    f.clock
        .set(wednesday_10_utc() + Duration::days(400) + Duration::seconds(1));
    assert!(f.router_entries(ROUTER).await.is_empty());
    assert!(f.record_entries(CONTACT).await.is_empty());
}

/// BEHAVIOR 12: a history page is at most 2.5 MiB of JSON; one cut short has fewer than `limit`
/// items and a `next_after` that continues where it stopped.
async fn a_history_page_stops_at_its_byte_budget_and_continues_with_after(backend: Backend) {
    let f = fixture(backend, seed(rr(), |_| {})).await;
    // Entries of about 150 KB each (written by the store directly: the API bounds object ids).
    let at = wednesday_10_utc();
    for n in 0..24 {
        let entry = shared::model::DispatchEntry::unassigned(
            id(ACCOUNT),
            id(ROUTER),
            ObjectType::Contacts,
            format!("{n}-{}", "x".repeat(150_000)),
            "Object not found".into(),
            shared::model::DispatchSource::Api,
            at + Duration::milliseconds(n),
        );
        f.store
            .record_dispatch(
                &entry,
                None,
                None,
                None,
                &shared::model::due::DueChanges::none(),
            )
            .await
            .unwrap();
    }
    let first = f.router_page(ROUTER, &offset(100, 0)).await;
    let count = first["pagination"]["count"].as_u64().unwrap();
    assert!((1..24).contains(&count), "cut short: {count}");
    assert!(serde_json::to_string(&first["data"]).unwrap().len() <= 2_621_440);
    let cursor = first["pagination"]["next_after"]
        .as_str()
        .unwrap()
        .to_string();
    let second = f.router_page(ROUTER, &after(100, &cursor)).await;
    let total = count + second["pagination"]["count"].as_u64().unwrap();
    assert_eq!(total, 24, "every entry once across the two pages");
}
