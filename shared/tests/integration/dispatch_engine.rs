//! The dispatch engine (spec "Dispatch"; BEHAVIOR 6) on the embedded store with a fixed clock:
//! one test per outcome message, the distribution models, availability, limits, the queue
//! path's idempotency, and the concurrency guarantees.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;
use chrono::{DateTime, TimeZone, Utc};
use common::Backend;
use serde_json::{json, Value};
use shared::clock::FixedClock;
use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, Outcome, Skip};
use shared::fields::CatalogueCache;
use shared::model::{AssignmentReason, MessageDeduplicationId, ObjectType};
use shared::store::Store;
use shared::types::{AccountId, RecordId};
use std::collections::HashMap;
use std::sync::Arc;
use uuid::Uuid;

/// A typed id from its text.
fn id<T: From<Uuid>>(text: &str) -> T {
    Uuid::parse_str(text).unwrap().into()
}

/// The 200 body of an outcome, as JSON.
fn answer(outcome: &shared::dispatch::Outcome) -> serde_json::Value {
    serde_json::to_value(outcome.answer()).unwrap()
}

const ACCOUNT: &str = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01";
const OTHER_ACCOUNT: &str = "aa6b7c89-eafb-4ac6-b1d8-e35e6f7a8b01";
const ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const OTHER_ROUTER: &str = "7e3f4a56-b7c8-4d93-8ea5-b02b3c4d5e78";
const CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000002";
const OWNED_CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000003";
const DEAL: &str = "01936b2a-7c00-7a00-8000-000000000005";

/// Wednesday 2026-11-18 10:00 UTC.
fn wednesday_10_utc() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 18, 10, 0, 0).unwrap()
}

fn member(n: usize) -> Value {
    json!({"id": Uuid::from_u128(0x1000 + n as u128), "email": format!("m{n}@acme.example"), "time_zone": "UTC"})
}

fn email(n: usize) -> String {
    format!("m{n}@acme.example")
}

/// A seed: one active account with members m1..m4 (24/7), team T1 = [m3, m4], the router
/// `ROUTER` on contacts with `settings`, two contacts (one owned), a deal, and a second account
/// with its own router.
fn seed(settings: Value, edit: impl FnOnce(&mut Value)) -> Value {
    let mut s = json!({"accounts": [
        {
            "id": ACCOUNT, "name": "Acme", "active": true, "assignment_quota": null,
            "clients": [], "roles": [],
            "users": [member(1), member(2), member(3), member(4)],
            "teams": [{"id": Uuid::from_u128(0x2001), "name": "T1", "members": [email(3), email(4)]}],
            "fields": {},
            "routers": [{
                "id": ROUTER, "name": "R", "object_type": "contacts", "is_published": true,
                "has_integration": false, "settings": settings,
                "users": [{"email": email(1)}, {"email": email(2)}], "teams": [{"name": "T1"}]
            }],
            "records": {
                "contacts": [
                    {"id": CONTACT, "fields": {"email": "lead@prospect.example", "country": "US"}},
                    {"id": OWNED_CONTACT, "fields": {"email": "owned@prospect.example", "contact_owner": email(2)}}
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
            }]
        }
    ]});
    edit(&mut s);
    s
}

fn rr() -> Value {
    json!({"owner_field": "contact_owner", "distribution_model": "round robin", "overwrite": false})
}

struct Fixture {
    store: Arc<dyn Store>,
    engine: Arc<DispatchEngine>,
    clock: Arc<FixedClock>,
}

/// What the concurrency tests ask of a store (a trait: [`Backend`] is the shared harness's).
trait Load {
    fn instances(self) -> usize;
    fn dispatches(self) -> usize;
    fn deadline(self) -> std::time::Duration;
}

impl Load for Backend {
    /// How many warm instances share the concurrent dispatches: one per dispatch on the
    /// embedded store (every dispatch races every other); four on the emulator, which serializes
    /// every DynamoDB request, so a hundred simultaneous optimistic writers would spend minutes
    /// re-reading there (each round of races lets one through).
    fn instances(self) -> usize {
        match self {
            Backend::Memory => 100,
            Backend::Dynamo => 4,
        }
    }

    /// How many dispatches a concurrency test starts at once: a hundred on the embedded store;
    /// forty on the emulator, whose serialized requests made a hundred cost about 90 s a test
    /// (four instances still race every turn there). A multiple of 20, so that four equal
    /// shares and a 50/30/20 split are whole numbers.
    fn dispatches(self) -> usize {
        match self {
            Backend::Memory => 100,
            Backend::Dynamo => 40,
        }
    }

    /// The retry deadline: the emulator serializes every DynamoDB request, so a hundred
    /// concurrent dispatches queue far longer there than against DynamoDB; the guarantees under
    /// test (no shared turn, no overshoot) do not depend on it.
    fn deadline(self) -> std::time::Duration {
        match self {
            Backend::Memory => shared::dispatch::DEFAULT_DEADLINE,
            Backend::Dynamo => std::time::Duration::from_secs(120),
        }
    }
}

shared::on_both_stores!(
    every_outcome_message_of_the_spec_is_reached_by_its_rule,
    an_assignment_sets_the_owner_its_date_and_logs_the_reason_in_one_write,
    round_robin_walks_users_then_team_members_and_skips_the_unavailable,
    a_member_switched_off_a_moment_ago_is_not_assigned_from_a_stale_member_list,
    a_warm_dispatch_makes_two_sequential_store_round_trips,
    a_cold_dispatch_makes_at_most_three_sequential_store_round_trips,
    the_queue_path_and_account_matching_each_cost_at_most_one_more_round_trip,
    a_router_published_elsewhere_is_evaluated_at_once_for_one_more_round_trip,
    a_subscription_created_elsewhere_receives_the_next_dispatch_for_one_more_round_trip,
    holiday_calendars_are_read_by_key_with_the_pool_and_a_change_counts_at_once,
    working_hours_are_read_in_the_members_zone_unless_the_router_ignores_them,
    out_of_office_members_are_skipped,
    a_members_holiday_and_the_routers_holiday_make_members_unavailable,
    the_backup_user_takes_the_record_when_nobody_is_available_without_touching_counters,
    account_matching_gives_a_contact_to_its_companys_owner,
    capacity_counts_only_applying_entries_and_stops_at_the_maximum,
    a_teams_rotation_alternates_teams_and_rotates_inside_each,
    the_queue_path_finds_the_routers_account_and_never_assigns_a_message_twice,
    concurrent_round_robin_dispatches_give_each_of_four_members_an_equal_share,
    concurrent_dispatches_never_push_a_member_past_max_capacity,
    a_percentage_router_of_50_30_20_splits_concurrent_dispatches_50_30_20,
    an_account_quota_of_n_allows_exactly_n_concurrent_assignments,
    a_write_that_keeps_losing_races_fails_after_the_deadline_and_writes_nothing,
);

async fn fixture(backend: Backend, seed: Value) -> Fixture {
    fixture_with_plan(backend, seed, |_| {}).await
}

/// [`fixture`] with `edit` applied to the loaded plan before it is provisioned.
async fn fixture_with_plan(
    backend: Backend, seed: Value, edit: impl FnOnce(&mut shared::model::provision::ProvisionPlan),
) -> Fixture {
    let clock = Arc::new(FixedClock::new(wednesday_10_utc()));
    let store = backend.store().await;
    let mut plan = shared::seed::load(
        &seed.to_string(),
        wednesday_10_utc() - chrono::Duration::days(30),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .unwrap_or_else(|e| panic!("test seed: {e}"));
    edit(&mut plan);
    store.provision(&plan).await.unwrap();
    let engine = Arc::new(
        DispatchEngine::new(
            store.clone(),
            clock.clone(),
            Arc::new(CatalogueCache::default()),
        )
        .with_deadline(backend.deadline()),
    );
    Fixture {
        store,
        engine,
        clock,
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

    /// Creates `n` fresh contacts and returns their ids.
    async fn contacts(&self, n: usize) -> Vec<String> {
        let mut ids = Vec::new();
        for i in 0..n {
            let record_id = RecordId::new_v7();
            let at = wednesday_10_utc();
            let mut values = std::collections::BTreeMap::new();
            values.insert(
                "email".to_string(),
                format!("c{i}-{record_id}@leads.example"),
            );
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
            ids.push(record_id.to_string());
        }
        ids
    }

    /// The record's history entries, newest first (at most 100).
    async fn history(&self, record: RecordId) -> Vec<shared::model::DispatchEntry> {
        self.store
            .list_record_dispatches(
                id(ACCOUNT),
                ObjectType::Contacts,
                record,
                &shared::page::PageRequest::first(100, false),
            )
            .await
            .unwrap()
            .items
    }

    async fn owner(&self, contact: &str) -> Option<String> {
        let record = self
            .store
            .get_record(id(ACCOUNT), ObjectType::Contacts, id(contact))
            .await
            .unwrap()
            .unwrap();
        record.value("contact_owner").map(str::to_string)
    }

    async fn capacity_of(&self, n: usize) -> Value {
        let m = self
            .store
            .get_member(id(ACCOUNT), Uuid::from_u128(0x1000 + n as u128).into())
            .await
            .unwrap()
            .unwrap();
        json!(m.capacity)
    }
}

fn assigned(outcome: &Outcome) -> (&str, AssignmentReason) {
    match outcome {
        Outcome::Assigned(a) => (a.user.as_str(), a.reason),
        other => panic!("expected an assignment, got {other:?}"),
    }
}

fn skipped(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Skipped(skip) => skip.message(),
        other => panic!("expected a skip, got {other:?}"),
    }
}

async fn every_outcome_message_of_the_spec_is_reached_by_its_rule(backend: Backend) {
    type Edit = Box<dyn FnOnce(&mut Value)>;
    let no_edit = || -> Edit { Box::new(|_| {}) };
    let missing = Uuid::now_v7().to_string();
    // (settings, seed edit, router, object, account, expected message)
    let cases: Vec<(Value, Edit, String, String, &str, &str)> = vec![
        (
            rr(),
            no_edit(),
            ROUTER.into(),
            CONTACT.into(),
            "00000000-0000-4000-8000-000000000000",
            "Account not found",
        ),
        (
            rr(),
            Box::new(|s| s["accounts"][0]["active"] = json!(false)),
            ROUTER.into(),
            CONTACT.into(),
            ACCOUNT,
            "Account is not active",
        ),
        (
            rr(),
            no_edit(),
            missing.clone(),
            CONTACT.into(),
            ACCOUNT,
            "Router not found",
        ),
        (
            rr(),
            no_edit(),
            "not-a-uuid".into(),
            CONTACT.into(),
            ACCOUNT,
            "Router not found",
        ),
        (
            rr(),
            no_edit(),
            OTHER_ROUTER.into(),
            CONTACT.into(),
            ACCOUNT,
            "Router not found",
        ),
        (
            rr(),
            Box::new(|s| {
                s["accounts"][0]["routers"][0]["archived"] = json!("2026-01-01T00:00:00Z")
            }),
            ROUTER.into(),
            CONTACT.into(),
            ACCOUNT,
            "Router not found",
        ),
        (
            rr(),
            Box::new(|s| s["accounts"][0]["routers"][0]["is_published"] = json!(false)),
            ROUTER.into(),
            CONTACT.into(),
            ACCOUNT,
            "The router is unpublished",
        ),
        (
            Value::Null,
            no_edit(),
            ROUTER.into(),
            CONTACT.into(),
            ACCOUNT,
            "The router has no settings",
        ),
        (
            json!({"distribution_model": "round robin"}),
            no_edit(),
            ROUTER.into(),
            CONTACT.into(),
            ACCOUNT,
            "The router has no settings",
        ),
        (
            json!({"owner_field": "contact_owner"}),
            no_edit(),
            ROUTER.into(),
            CONTACT.into(),
            ACCOUNT,
            "The router has no settings",
        ),
        (
            rr(),
            no_edit(),
            ROUTER.into(),
            missing.clone(),
            ACCOUNT,
            "Object not found",
        ),
        (
            rr(),
            no_edit(),
            ROUTER.into(),
            DEAL.into(),
            ACCOUNT,
            "Object not found",
        ),
        (
            rr(),
            no_edit(),
            ROUTER.into(),
            "nope".into(),
            ACCOUNT,
            "Object not found",
        ),
        (
            json!({"owner_field": "contact_owner", "distribution_model": "round robin",
                "trigger": {"groups": [{"conditions": [{"field": "country", "operator": "equals", "value": "DE"}]}]}}),
            no_edit(),
            ROUTER.into(),
            CONTACT.into(),
            ACCOUNT,
            "Trigger did not match",
        ),
        (
            rr(),
            no_edit(),
            ROUTER.into(),
            OWNED_CONTACT.into(),
            ACCOUNT,
            "The router can not overwrite",
        ),
        (
            rr(),
            Box::new(|s| s["accounts"][0]["assignment_quota"] = json!(0)),
            ROUTER.into(),
            CONTACT.into(),
            ACCOUNT,
            "Assignment limit reached",
        ),
        (
            rr(),
            Box::new(|s| {
                for i in 0..4 {
                    s["accounts"][0]["users"][i]["capacity"] =
                        json!([{"max_capacity": 3, "current_capacity": 3}])
                }
            }),
            ROUTER.into(),
            CONTACT.into(),
            ACCOUNT,
            "Assignment limit reached",
        ),
        (
            rr(),
            Box::new(|s| {
                for i in 0..4 {
                    s["accounts"][0]["users"][i]["office_status"] = json!(false)
                }
            }),
            ROUTER.into(),
            CONTACT.into(),
            ACCOUNT,
            "There are no users available and the backup user is disabled",
        ),
        (
            json!({"owner_field": "contact_owner", "distribution_model": "round robin", "default_user": "m1@acme.example", "disable_default_assignment": true}),
            Box::new(|s| {
                for i in 0..4 {
                    s["accounts"][0]["users"][i]["office_status"] = json!(false)
                }
            }),
            ROUTER.into(),
            CONTACT.into(),
            ACCOUNT,
            "There are no users available and the backup user is disabled",
        ),
    ];
    for (settings, edit, router, object, account, expected) in cases {
        let f = fixture(backend, seed(settings.clone(), edit)).await;
        let outcome = f.run_in(id(account), &router, &object).await;
        assert_eq!(
            skipped(&outcome),
            expected,
            "settings {settings}, router {router}, object {object}"
        );
        assert_eq!(answer(&outcome), json!({"message": expected}));
    }
}

async fn an_assignment_sets_the_owner_its_date_and_logs_the_reason_in_one_write(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| s["accounts"][0]["assignment_quota"] = json!(1000)),
    )
    .await;
    let outcome = f.run(ROUTER, CONTACT).await;
    let body = answer(&outcome);
    assert_eq!(body["message"], "Owner assigned");
    assert_eq!(body["success"], true);
    assert_eq!(body["user"], "m1@acme.example");
    assert_eq!(body["field_name"], "Contact owner");
    assert_eq!(body["owner_assigned_at"], "Wed, 18 Nov 2026 10:00:00 +0000");
    let account = id(ACCOUNT);
    let contact_id = id(CONTACT);
    let record = f
        .store
        .get_record(account, ObjectType::Contacts, contact_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.value("contact_owner"), Some("m1@acme.example"));
    assert_eq!(
        record.value("contact_owner_assigned_date"),
        Some("2026-11-18T10:00:00.000Z")
    );
    assert_eq!(record.updated_at, wednesday_10_utc());
    let log = f.history(contact_id).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].reason, Some(AssignmentReason::Rotation));
    assert_eq!(
        f.store.assignment_count(account, "2026-11").await.unwrap(),
        1
    );
    // With overwrite, a second run reassigns to the next in turn.
    let f = fixture(
        backend,
        seed(json!({"owner_field": "contact_owner", "distribution_model": "round robin", "overwrite": true}), |_| {}),
    )
    .await;
    assert_eq!(
        assigned(&f.run(ROUTER, OWNED_CONTACT).await).0,
        "m1@acme.example"
    );
    assert_eq!(
        assigned(&f.run(ROUTER, OWNED_CONTACT).await).0,
        "m2@acme.example"
    );
}

async fn round_robin_walks_users_then_team_members_and_skips_the_unavailable(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| {
            s["accounts"][0]["users"][2]["office_status"] = json!(false)
        }),
    )
    .await;
    let ids = f.contacts(6).await;
    let mut got = Vec::new();
    for id in &ids {
        got.push(assigned(&f.run(ROUTER, id).await).0.to_string());
    }
    assert_eq!(
        got,
        [email(1), email(2), email(4), email(1), email(2), email(4)]
    );
}

/// On the path that still reads an eventually consistent index: a router stored before its
/// member ids were resolved (`docs/decisions.md`, "Cost that follows the router") finds its pool by
/// e-mail, and right after a member is switched off the index may still show them on. The chosen
/// member is read again by key (consistently) and the choice made again: the switched-off member is
/// never assigned. A router with its ids reads the pool by key and never sees the stale copy.
async fn a_member_switched_off_a_moment_ago_is_not_assigned_from_a_stale_member_list(
    backend: Backend,
) {
    for resolved in [false, true] {
        member_switched_off_is_not_assigned(backend, resolved).await;
    }
}

async fn member_switched_off_is_not_assigned(backend: Backend, resolved: bool) {
    use shared::store::faulty::{FaultyStore, PortMethod};
    let f = fixture_with_plan(backend, seed(rr(), |_| {}), |plan| {
        for account in &mut plan.accounts {
            for router in &mut account.routers {
                assert!(!router.member_ids.is_empty(), "resolved when loaded");
                if !resolved {
                    router.member_ids.clear();
                }
            }
        }
    })
    .await;
    let account: AccountId = id(ACCOUNT);
    let before = f
        .store
        .list_members(account, &shared::page::PageRequest::first(100, true))
        .await
        .unwrap()
        .items;
    let mut m1 = before
        .iter()
        .find(|m| m.email.as_str() == email(1))
        .unwrap()
        .clone();
    let version = m1.version;
    m1.office_status = false;
    m1.version += 1;
    f.store
        .update_member(&m1, version, &shared::model::CalendarRefs::none(), None)
        .await
        .unwrap();
    let faulty = Arc::new(FaultyStore::new(f.store.clone()));
    *faulty.faults.stale_members.lock().unwrap() = Some(before);
    let engine = DispatchEngine::new(
        faulty.clone(),
        f.clock.clone(),
        Arc::new(CatalogueCache::default()),
    );
    let request = DispatchRequest {
        router_id: ROUTER.into(),
        object_id: CONTACT.into(),
        account_id: None,
    };
    faulty.faults.rounds.start();
    let outcome = engine
        .dispatch(AccountContext::Token(account), &request, None)
        .await
        .unwrap();
    let (_, calls) = faulty.faults.rounds.stop();
    assert_eq!(
        assigned(&outcome).0,
        email(2),
        "m1 is off since the PATCH (ids resolved: {resolved})"
    );
    // By key when resolved; by e-mail (and the chosen member read again) when not.
    assert_eq!(
        calls.contains_key(&PortMethod::find_member_by_email),
        !resolved,
        "{calls:?}"
    );
    assert_eq!(
        calls.contains_key(&PortMethod::get_member),
        !resolved,
        "{calls:?}"
    );
    assert_eq!(
        calls.contains_key(&PortMethod::get_members),
        resolved,
        "{calls:?}"
    );
}

/// A dispatch on a warm instance (account, teams,
/// catalogue, the router's hint and the webhook subscriptions kept) makes two sequential rounds
/// of store calls, the physical limit: one wave of reads by key (router, record, rotation state,
/// the month's count for an account with a quota, the pool's members as the router's last run
/// here named them, the subscriptions' version) and the commit. A retry after a lost race reads
/// again what the race can have changed, the router included (a publish moves it on: BEHAVIOR
/// 15), and the pool with it, in one wave.
async fn a_warm_dispatch_makes_two_sequential_store_round_trips(backend: Backend) {
    use shared::store::faulty::{FaultyStore, PortMethod};
    use std::collections::BTreeMap;
    for quota in [None, Some(1000)] {
        let f = fixture(
            backend,
            seed(rr(), |s| {
                s["accounts"][0]["assignment_quota"] = json!(quota)
            }),
        )
        .await;
        let faulty = Arc::new(FaultyStore::new(f.store.clone()));
        let engine = DispatchEngine::new(
            faulty.clone(),
            f.clock.clone(),
            Arc::new(CatalogueCache::default()),
        )
        .with_deadline(std::time::Duration::from_millis(1500));
        let contacts = f.contacts(3).await;
        let dispatch = |contact: String| {
            let engine = &engine;
            async move {
                let request = DispatchRequest {
                    router_id: ROUTER.into(),
                    object_id: contact,
                    account_id: None,
                };
                engine
                    .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
                    .await
            }
        };
        dispatch(contacts[0].clone()).await.unwrap(); // warms the caches
        faulty.faults.rounds.start();
        assert!(matches!(
            dispatch(contacts[1].clone()).await.unwrap(),
            Outcome::Assigned(_)
        ));
        let (rounds, calls) = faulty.faults.rounds.stop();
        // Round 1: everything by key in one read; round 2: the assignment.
        let expected = BTreeMap::from([
            (PortMethod::first_round_reads, 1),
            (PortMethod::commit_assignment, 1),
        ]);
        assert_eq!(calls, expected, "quota {quota:?}");
        assert_eq!(rounds, 2, "quota {quota:?}: {calls:?}");
        let asked = faulty.faults.take_first_reads();
        assert_eq!(asked.len(), 1);
        // The pool (m1, m2, then team T1's m3, m4) and the subscriptions' version.
        let pool: Vec<shared::types::MemberId> = (1..=4)
            .map(|n| Uuid::from_u128(0x1000 + n).into())
            .collect();
        assert_eq!(asked[0].members, pool, "quota {quota:?}");
        assert!(asked[0].webhooks_version && asked[0].router.is_some());

        // Every commit loses a race until the deadline: each retry re-reads the router, the
        // record, the pool, the rotation state (and the count) in one wave. (A deadline of 1.5
        // s: on a loaded machine one attempt on the emulator alone took more than 300 ms.)
        faulty
            .faults
            .commits_conflict
            .store(true, std::sync::atomic::Ordering::SeqCst);
        faulty.faults.rounds.start();
        assert!(dispatch(contacts[2].clone()).await.is_err());
        let (_, calls) = faulty.faults.rounds.stop();
        let commits = calls[&PortMethod::commit_assignment];
        assert!(commits >= 2, "{calls:?}");
        assert_eq!(calls[&PortMethod::first_round_reads], commits, "{calls:?}");
        assert_eq!(calls.len(), 2, "nothing but waves and commits: {calls:?}");
        let asked = faulty.faults.take_first_reads();
        assert!(asked
            .iter()
            .all(|r| r.router.is_some() && r.members == pool));
    }
}

/// A cold instance's first dispatch makes at most
/// three sequential store rounds: what it caches (the account, its teams, its field definitions)
/// is read in the first round with the router and the record (the account by key in the same
/// read); the router's pool and the webhook subscriptions (listed after their version was read)
/// in the second; the commit. From then on it is a warm instance: two rounds.
async fn a_cold_dispatch_makes_at_most_three_sequential_store_round_trips(backend: Backend) {
    use shared::store::faulty::{FaultyStore, PortMethod};
    use std::collections::BTreeMap;
    for quota in [None, Some(1000)] {
        let f = fixture(
            backend,
            seed(rr(), |s| {
                s["accounts"][0]["assignment_quota"] = json!(quota)
            }),
        )
        .await;
        let faulty = Arc::new(FaultyStore::new(f.store.clone()));
        let engine = DispatchEngine::new(
            faulty.clone(),
            f.clock.clone(),
            Arc::new(CatalogueCache::default()),
        );
        let contacts = f.contacts(2).await;
        let dispatch = |contact: String| {
            let engine = &engine;
            async move {
                let request = DispatchRequest {
                    router_id: ROUTER.into(),
                    object_id: contact,
                    account_id: None,
                };
                engine
                    .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
                    .await
                    .unwrap()
            }
        };
        faulty.faults.rounds.start();
        assert!(matches!(
            dispatch(contacts[0].clone()).await,
            Outcome::Assigned(_)
        ));
        let (rounds, calls) = faulty.faults.rounds.stop();
        let cold = BTreeMap::from([
            (PortMethod::first_round_reads, 1),
            (PortMethod::list_teams, 1),
            (PortMethod::field_definitions, 1),
            (PortMethod::list_webhooks, 1),
            (PortMethod::get_members, 1),
            (PortMethod::commit_assignment, 1),
        ]);
        assert_eq!(calls, cold, "quota {quota:?}");
        assert_eq!(rounds, 3, "quota {quota:?}: {calls:?}");
        // Warm now: two rounds, and the account, teams and definitions are not read again.
        faulty.faults.rounds.start();
        assert!(matches!(
            dispatch(contacts[1].clone()).await,
            Outcome::Assigned(_)
        ));
        let (rounds, calls) = faulty.faults.rounds.stop();
        assert_eq!(rounds, 2, "quota {quota:?}: {calls:?}");
        assert!(
            !calls.contains_key(&PortMethod::list_teams)
                && !calls.contains_key(&PortMethod::field_definitions)
        );
        // The quota read with the account on the cold instance is applied: the count went up.
        if quota.is_some() {
            let count = f
                .store
                .assignment_count(id(ACCOUNT), "2026-11")
                .await
                .unwrap();
            assert_eq!(count, 2);
        }
    }
}

/// The queue path and account matching each cost a dispatch at most one round
/// more. The queue path learns the account from the router: a cold instance reads the router
/// first (one more round), a warm one knows the router's account from its hint (a router's
/// account never changes) and reads the router with the rest, the redelivery marker included:
/// two rounds. Account matching reads the company by its uniqueness guard once the contact is
/// read: one more round.
async fn the_queue_path_and_account_matching_each_cost_at_most_one_more_round_trip(
    backend: Backend,
) {
    use shared::store::faulty::{FaultyStore, PortMethod};
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
                          "overwrite": true});
    let f = fixture(backend, seed(settings, |_| {})).await;
    let faulty = Arc::new(FaultyStore::new(f.store.clone()));
    let engine = DispatchEngine::new(
        faulty.clone(),
        f.clock.clone(),
        Arc::new(CatalogueCache::default()),
    );
    let contacts = f.contacts(3).await;
    let queued = |contact: String, message: &'static str| {
        let engine = &engine;
        async move {
            let request = DispatchRequest {
                router_id: ROUTER.into(),
                object_id: contact,
                account_id: None,
            };
            engine
                .dispatch(
                    AccountContext::RouterOwner,
                    &request,
                    Some(&MessageDeduplicationId::new(message)),
                )
                .await
                .unwrap()
        }
    };
    // Cold: the router first, then the three rounds of a cold dispatch.
    faulty.faults.rounds.start();
    assert_eq!(
        assigned(&queued(contacts[0].clone(), "m-1").await).0,
        email(1)
    );
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(rounds, 4, "{calls:?}");
    assert_eq!(calls.get(&PortMethod::find_router), Some(&1), "{calls:?}");
    // Warm: the router's account from its hint, the router and the marker in the wave.
    faulty.faults.rounds.start();
    assert_eq!(
        assigned(&queued(contacts[1].clone(), "m-2").await).0,
        email(2)
    );
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(rounds, 2, "{calls:?}");
    assert!(!calls.contains_key(&PortMethod::find_router), "{calls:?}");
    assert!(
        !calls.contains_key(&PortMethod::deduplication_id_used),
        "{calls:?}"
    );
    // A redelivery is found in the wave and writes nothing.
    faulty.faults.rounds.start();
    assert_eq!(
        queued(contacts[1].clone(), "m-2").await,
        Outcome::AlreadyProcessed
    );
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(rounds, 1, "{calls:?}");

    // Account matching: the company by its guard after the contact, one more round. The
    // company of `CONTACT`'s domain is owned by m3 (in the pool through team T1).
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
                          "overwrite": true, "account_matching": true});
    let company = |s: &mut Value| {
        s["accounts"][0]["records"]["companies"] = json!([
            {"id": "01936b2a-7c00-7a00-8000-0000000000c1", "fields": {"company_name": "Prospect", "website_url": "https://www.prospect.example", "company_owner": email(3)}}
        ]);
    };
    let f = fixture(backend, seed(settings, company)).await;
    let faulty = Arc::new(FaultyStore::new(f.store.clone()));
    let engine = DispatchEngine::new(
        faulty.clone(),
        f.clock.clone(),
        Arc::new(CatalogueCache::default()),
    );
    let contacts = f.contacts(1).await;
    let request = |contact: &str| DispatchRequest {
        router_id: ROUTER.into(),
        object_id: contact.into(),
        account_id: None,
    };
    // Warms the instance (a contact of no company's domain: still one lookup).
    engine
        .dispatch(
            AccountContext::Token(id(ACCOUNT)),
            &request(&contacts[0]),
            None,
        )
        .await
        .unwrap();
    faulty.faults.rounds.start();
    let matched = engine
        .dispatch(AccountContext::Token(id(ACCOUNT)), &request(CONTACT), None)
        .await
        .unwrap();
    assert_eq!(
        assigned(&matched),
        (email(3).as_str(), AssignmentReason::AccountMatching)
    );
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(rounds, 3, "{calls:?}");
    assert_eq!(
        calls.get(&PortMethod::find_by_unique_key),
        Some(&1),
        "{calls:?}"
    );
}

/// A router changed through router management on another instance (two
/// engines over one store) is evaluated by this instance's very next dispatch, never its old
/// configuration, though this instance's hint still names the old pool: the run evaluates the
/// router its wave read, and reads the members the hint did not name in one more round (a change
/// that keeps the pool costs nothing). The history entry names the new revision; an unpublish is
/// seen at once too.
async fn a_router_published_elsewhere_is_evaluated_at_once_for_one_more_round_trip(
    backend: Backend,
) {
    use shared::routers::{Actor, RouterAdmin};
    use shared::store::faulty::FaultyStore;
    // m5 is a member of the account outside the router's pool (m1, m2, team T1's m3, m4).
    let f = fixture(
        backend,
        seed(rr(), |s| {
            s["accounts"][0]["users"]
                .as_array_mut()
                .unwrap()
                .push(member(5))
        }),
    )
    .await;
    let faulty = Arc::new(FaultyStore::new(f.store.clone()));
    let engine = DispatchEngine::new(
        faulty.clone(),
        f.clock.clone(),
        Arc::new(CatalogueCache::default()),
    );
    // The other instance's router management, over the same store.
    let admin = RouterAdmin::new(
        f.store.clone(),
        f.clock.clone(),
        Arc::new(CatalogueCache::default()),
    );
    let actor = Actor {
        account_id: id(ACCOUNT),
        sub: "admin",
    };
    let publish = |name: &'static str, users: Vec<String>, teams: Value| {
        let admin = &admin;
        async move {
            let body = json!({
                "name": name, "object_type": "contacts", "settings": rr(),
                "users": users.iter().map(|e| json!({"email": e})).collect::<Vec<_>>(),
                "teams": teams,
            });
            let draft = admin
                .put_draft(
                    actor,
                    id(ROUTER),
                    None,
                    Ok(body.as_object().unwrap().clone()),
                )
                .await
                .unwrap();
            let mut headers = axum::http::HeaderMap::new();
            headers.insert("if-match", draft.etag.as_str().parse().unwrap());
            let if_match = shared::types::etag::IfMatch::from_headers(&headers)
                .unwrap()
                .unwrap();
            let (view, _) = admin
                .publish(actor, id(ROUTER), Some(&if_match), Ok(()), None)
                .await
                .unwrap();
            view.revision
        }
    };
    let contacts = f.contacts(5).await;
    let dispatch = |contact: String| {
        let engine = &engine;
        async move {
            let request = DispatchRequest {
                router_id: ROUTER.into(),
                object_id: contact,
                account_id: None,
            };
            engine
                .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
                .await
                .unwrap()
        }
    };
    let revision_of = |contact: &str| {
        let f = &f;
        let contact = id::<RecordId>(contact);
        async move { f.history(contact).await[0].router_revision }
    };
    assert_eq!(assigned(&dispatch(contacts[0].clone()).await).0, email(1));
    // Revision 2 gives the router to m5 alone.
    assert_eq!(publish("Only m5", vec![email(5)], json!([])).await, 2);
    faulty.faults.rounds.start();
    assert_eq!(assigned(&dispatch(contacts[1].clone()).await).0, email(5));
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(revision_of(&contacts[1]).await, 2);
    assert_eq!(
        rounds, 3,
        "the new pool's members in one more round: {calls:?}"
    );
    faulty.faults.rounds.start();
    assert_eq!(assigned(&dispatch(contacts[2].clone()).await).0, email(5));
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(rounds, 2, "{calls:?}");
    // Revision 3 renames it and keeps the pool: no round more, the entry names revision 3.
    assert_eq!(publish("Renamed", vec![email(5)], json!([])).await, 3);
    faulty.faults.rounds.start();
    assert_eq!(assigned(&dispatch(contacts[3].clone()).await).0, email(5));
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(rounds, 2, "{calls:?}");
    assert_eq!(revision_of(&contacts[3]).await, 3);
    // Unpublished elsewhere: the next dispatch here stops, and its entry says so.
    admin
        .unpublish(actor, id(ROUTER), Ok(()), None)
        .await
        .unwrap();
    assert_eq!(
        skipped(&dispatch(contacts[4].clone()).await),
        Skip::RouterUnpublished.message()
    );
    let entry = &f.history(id(&contacts[4])).await[0];
    assert_eq!(
        (entry.message.as_str(), entry.router_revision),
        (Skip::RouterUnpublished.message(), 3)
    );
}

/// BEHAVIOR 13: a webhook subscription created on another instance (its write
/// moves the account's subscriptions version) receives this instance's very next dispatch,
/// though this instance kept the account's subscriptions without it: the wave reads the version,
/// and a moved version lists the subscriptions again (one more round, once). Disabled or deleted
/// elsewhere, it receives nothing from the next dispatch here. While nothing changes, no list.
async fn a_subscription_created_elsewhere_receives_the_next_dispatch_for_one_more_round_trip(
    backend: Backend,
) {
    use shared::model::webhook::{EventType, WebhookSubscription};
    use shared::store::faulty::{FaultyStore, PortMethod};
    let f = fixture(backend, seed(rr(), |_| {})).await;
    let faulty = Arc::new(FaultyStore::new(f.store.clone()));
    let due = shared::due::DueWorker::new(
        faulty.clone(),
        f.clock.clone(),
        shared::due::DueSettings::default(),
        Arc::new(Nowhere),
    );
    let engine = DispatchEngine::new(
        faulty.clone(),
        f.clock.clone(),
        Arc::new(CatalogueCache::default()),
    )
    .with_due(due);
    let contacts = f.contacts(6).await;
    let dispatch = |contact: String| {
        let engine = &engine;
        async move {
            let request = DispatchRequest {
                router_id: ROUTER.into(),
                object_id: contact,
                account_id: None,
            };
            engine
                .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
                .await
                .unwrap()
        }
    };
    let deliveries = |subscription: shared::types::WebhookId| {
        let store = f.store.clone();
        async move {
            store
                .list_deliveries(subscription, &shared::page::PageRequest::first(100, false))
                .await
                .unwrap()
                .items
                .len()
        }
    };
    assert!(matches!(
        dispatch(contacts[0].clone()).await,
        Outcome::Assigned(_)
    ));
    let subscription = WebhookSubscription {
        id: Uuid::now_v7().into(),
        account_id: id(ACCOUNT),
        url: "https://hooks.example/routing".into(),
        events: vec![EventType::AssignmentCreated],
        description: None,
        enabled: true,
        disabled_reason: None,
        secrets: Vec::new(),
        failing_since: None,
        created_at: wednesday_10_utc(),
        updated_at: wednesday_10_utc(),
        version: 1,
    };
    f.store
        .create_webhook(&subscription, 20, None)
        .await
        .unwrap();
    faulty.faults.rounds.start();
    assert!(matches!(
        dispatch(contacts[1].clone()).await,
        Outcome::Assigned(_)
    ));
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(deliveries(subscription.id).await, 1, "notified at once");
    assert_eq!(rounds, 3, "{calls:?}");
    assert_eq!(calls.get(&PortMethod::list_webhooks), Some(&1), "{calls:?}");
    faulty.faults.rounds.start();
    assert!(matches!(
        dispatch(contacts[2].clone()).await,
        Outcome::Assigned(_)
    ));
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(deliveries(subscription.id).await, 2);
    assert_eq!(rounds, 2, "{calls:?}");
    assert!(!calls.contains_key(&PortMethod::list_webhooks), "{calls:?}");
    // Disabled elsewhere: nothing more for it.
    let disabled = WebhookSubscription {
        enabled: false,
        version: 2,
        ..subscription.clone()
    };
    f.store
        .update_webhook(&disabled, 1, false, &Default::default(), None)
        .await
        .unwrap();
    assert!(matches!(
        dispatch(contacts[3].clone()).await,
        Outcome::Assigned(_)
    ));
    assert_eq!(
        deliveries(subscription.id).await,
        2,
        "disabled: no delivery"
    );
    // Enabled again, then deleted elsewhere.
    let enabled = WebhookSubscription {
        version: 3,
        ..subscription.clone()
    };
    f.store
        .update_webhook(&enabled, 2, false, &Default::default(), None)
        .await
        .unwrap();
    assert!(matches!(
        dispatch(contacts[4].clone()).await,
        Outcome::Assigned(_)
    ));
    assert_eq!(deliveries(subscription.id).await, 3, "enabled again");
    assert!(f
        .store
        .delete_webhook(id(ACCOUNT), subscription.id, 3, None)
        .await
        .unwrap());
    faulty.faults.rounds.start();
    assert!(matches!(
        dispatch(contacts[5].clone()).await,
        Outcome::Assigned(_)
    ));
    let (_, calls) = faulty.faults.rounds.stop();
    assert_eq!(deliveries(subscription.id).await, 3, "deleted: no delivery");
    assert_eq!(calls.get(&PortMethod::list_webhooks), Some(&1), "{calls:?}");
}

/// Hands nothing on (the deliveries' sending is not what these tests look at).
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

/// BEHAVIOR 17: dispatch reads holiday calendars by key, only
/// those its router and its pool's members name, in the wave that reads the pool; never the
/// account's list. A member given a calendar since the router's last run costs that run one more
/// round (its calendar is read then, and counts at once); the next run reads it in its wave
/// again. A calendar changed a moment ago counts at the next dispatch.
async fn holiday_calendars_are_read_by_key_with_the_pool_and_a_change_counts_at_once(
    backend: Backend,
) {
    use shared::model::CalendarRefs;
    use shared::store::faulty::{FaultyStore, PortMethod};
    // m1 and m2, no teams: m1 is the first turn.
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin"});
    let f = fixture(
        backend,
        seed(settings, |s| {
            with_calendar(s);
            s["accounts"][0]["routers"][0]["teams"] = json!([]);
        }),
    )
    .await;
    let faulty = Arc::new(FaultyStore::new(f.store.clone()));
    let engine = DispatchEngine::new(
        faulty.clone(),
        f.clock.clone(),
        Arc::new(CatalogueCache::default()),
    );
    let contacts = f.contacts(6).await;
    let dispatch = |contact: String| {
        let engine = &engine;
        async move {
            let request = DispatchRequest {
                router_id: ROUTER.into(),
                object_id: contact,
                account_id: None,
            };
            engine
                .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
                .await
                .unwrap()
        }
    };
    let turn = |outcome: Outcome| assigned(&outcome).0.to_string();
    // Nobody names the calendar: none is read (a cold instance: three rounds).
    faulty.faults.rounds.start();
    assert_eq!(turn(dispatch(contacts[0].clone()).await), email(1));
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(rounds, 3, "{calls:?}");
    assert!(
        !calls.contains_key(&PortMethod::get_holiday_calendars),
        "{calls:?}"
    );
    assert!(
        !calls.contains_key(&PortMethod::list_holiday_calendars),
        "{calls:?}"
    );
    assert!(faulty.faults.take_first_reads()[0].calendars.is_empty());
    // m1 takes the calendar (its holiday is on at 10:00 UTC): the next dispatch sees it at once,
    // in one more round (this instance had not seen it on the router).
    let m1 = f
        .store
        .get_member(id(ACCOUNT), id(&Uuid::from_u128(0x1001).to_string()))
        .await
        .unwrap()
        .unwrap();
    let mut on_holiday = m1.clone();
    on_holiday.holiday_calendar_id = Some(id(CALENDAR));
    on_holiday.version += 1;
    let refs = CalendarRefs::moving(None, Some(id(CALENDAR)));
    f.store
        .update_member(&on_holiday, m1.version, &refs, None)
        .await
        .unwrap();
    faulty.faults.rounds.start();
    assert_eq!(
        turn(dispatch(contacts[1].clone()).await),
        email(2),
        "m1 is on holiday"
    );
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(rounds, 3, "{calls:?}");
    assert_eq!(
        calls.get(&PortMethod::get_holiday_calendars),
        Some(&1),
        "{calls:?}"
    );
    faulty.faults.take_first_reads();
    // From now on it is read in the wave with the pool: two rounds.
    faulty.faults.rounds.start();
    assert_eq!(
        turn(dispatch(contacts[2].clone()).await),
        email(2),
        "m1 is on holiday"
    );
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(rounds, 2, "{calls:?}");
    assert!(
        !calls.contains_key(&PortMethod::get_holiday_calendars),
        "{calls:?}"
    );
    let calendar: shared::types::HolidayCalendarId = id(CALENDAR);
    assert_eq!(
        faulty.faults.take_first_reads()[0].calendars,
        vec![calendar]
    );
    // The holiday is taken off the calendar: the next dispatch gives m1 its turn again.
    let calendar = f
        .store
        .get_holiday_calendar(id(ACCOUNT), id(CALENDAR))
        .await
        .unwrap()
        .unwrap();
    let mut cleared = calendar.clone();
    cleared.holidays = serde_json::from_value(json!([])).unwrap();
    cleared.version += 1;
    f.store
        .update_holiday_calendar(&cleared, calendar.version, None)
        .await
        .unwrap();
    assert_eq!(turn(dispatch(contacts[3].clone()).await), email(1));
    // The calendar has its holiday again, but m1 no longer names it: m1 keeps its turns, and
    // a calendar nobody names is not read.
    let mut holiday = cleared.clone();
    holiday.holidays =
        serde_json::from_value(json!([{"name": "Day off", "date": "2026-11-19"}])).unwrap();
    holiday.version += 1;
    f.store
        .update_holiday_calendar(&holiday, cleared.version, None)
        .await
        .unwrap();
    let mut off = on_holiday.clone();
    off.holiday_calendar_id = None;
    off.version += 1;
    f.store
        .update_member(
            &off,
            on_holiday.version,
            &CalendarRefs::moving(Some(id(CALENDAR)), None),
            None,
        )
        .await
        .unwrap();
    assert_eq!(turn(dispatch(contacts[4].clone()).await), email(2));
    faulty.faults.rounds.start();
    assert_eq!(
        turn(dispatch(contacts[5].clone()).await),
        email(1),
        "m1 keeps its turn"
    );
    let (rounds, calls) = faulty.faults.rounds.stop();
    assert_eq!(rounds, 2, "{calls:?}");
    assert!(
        !calls.contains_key(&PortMethod::get_holiday_calendars),
        "nobody names it: {calls:?}"
    );
    assert!(
        faulty.faults.take_first_reads()[0].calendars.is_empty(),
        "nobody names it: not read"
    );
}

async fn working_hours_are_read_in_the_members_zone_unless_the_router_ignores_them(
    backend: Backend,
) {
    let hours = |s: &mut Value| {
        // m1 works 09:00-17:00 in Tokyo (00:00-08:00 UTC): at 10:00 UTC they are off.
        s["accounts"][0]["users"][0]["time_zone"] = json!("Asia/Tokyo");
        s["accounts"][0]["users"][0]["working_hours"] =
            json!([{"days": "mon-fri", "start_date": "09:00", "end_date": "17:00"}]);
        s["accounts"][0]["routers"][0]["users"] = json!([{"email": email(1)}]);
        s["accounts"][0]["routers"][0]["teams"] = json!([]);
    };
    let f = fixture(backend, seed(rr(), hours)).await;
    assert_eq!(
        skipped(&f.run(ROUTER, CONTACT).await),
        Skip::NoUsersAvailable.message()
    );
    f.clock
        .set(Utc.with_ymd_and_hms(2026, 11, 18, 1, 0, 0).unwrap()); // 10:00 in Tokyo
    assert_eq!(assigned(&f.run(ROUTER, CONTACT).await).0, email(1));

    let ignoring = json!({"owner_field": "contact_owner", "distribution_model": "round robin", "ignore_working_hours": true});
    let f = fixture(backend, seed(ignoring, hours)).await;
    assert_eq!(assigned(&f.run(ROUTER, CONTACT).await).0, email(1));
}

async fn out_of_office_members_are_skipped(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| {
            s["accounts"][0]["users"][0]["out_office_dates"] =
                json!([{"start_date": "2026-11-17", "end_date": "2026-11-18"}]);
        }),
    )
    .await;
    assert_eq!(assigned(&f.run(ROUTER, CONTACT).await).0, email(2));
}

const CALENDAR: &str = "0b0c0d0e-0f10-4112-8314-151617181920";

/// A seed edit adding a calendar in Pacific/Kiritimati (UTC+14) whose whole-day holiday is
/// 19 November 2026 there: from 18 Nov 10:00 UTC to 19 Nov 10:00 UTC.
fn with_calendar(s: &mut Value) {
    s["accounts"][0]["holiday_calendars"] = json!([{
        "id": CALENDAR, "name": "Line Islands", "time_zone": "Pacific/Kiritimati",
        "holidays": [{"name": "Day off", "date": "2026-11-19"}]
    }]);
}

/// BEHAVIOR 17: a member's own holiday makes them unavailable (reason `holiday` in explain,
/// after `out_of_office`), read in the calendar's zone whatever the member's (a member in
/// Pacific/Pago_Pago, UTC-11, whose local day is still the 17th); the router's holiday makes its
/// whole pool unavailable, so the backup rules apply.
async fn a_members_holiday_and_the_routers_holiday_make_members_unavailable(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| {
            with_calendar(s);
            s["accounts"][0]["users"][0]["time_zone"] = json!("Pacific/Pago_Pago");
            s["accounts"][0]["users"][0]["holiday_calendar_id"] = json!(CALENDAR);
        }),
    )
    .await;
    let request = DispatchRequest {
        router_id: ROUTER.into(),
        object_id: CONTACT.into(),
        account_id: None,
    };
    // A second before the holiday began in Kiritimati, m1 was available.
    f.clock
        .set(wednesday_10_utc() - chrono::Duration::seconds(1));
    let (_, explanation) = f.engine.explain(id(ACCOUNT), &request).await.unwrap();
    assert!(explanation.candidates.unwrap()[0].eligible);
    // 10:00 UTC: it has begun; explain names the reason and dispatch skips m1.
    f.clock.set(wednesday_10_utc());
    let (_, explanation) = f.engine.explain(id(ACCOUNT), &request).await.unwrap();
    let candidates = explanation.candidates.unwrap();
    assert_eq!(candidates[0].user.as_str(), email(1));
    assert_eq!(
        candidates[0].reasons,
        vec![shared::dispatch::CandidateReason::Holiday]
    );
    assert_eq!(assigned(&f.run(ROUTER, CONTACT).await).0, email(2));

    // The router's calendar: everybody in its pool is on holiday; the backup takes it.
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "default_user": email(4), "holiday_calendar_id": CALENDAR});
    let f = fixture(backend, seed(settings, with_calendar)).await;
    assert_eq!(
        assigned(&f.run(ROUTER, CONTACT).await),
        (email(4).as_str(), AssignmentReason::Backup)
    );
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "holiday_calendar_id": CALENDAR});
    let f = fixture(backend, seed(settings, with_calendar)).await;
    assert_eq!(
        skipped(&f.run(ROUTER, CONTACT).await),
        Skip::NoUsersAvailable.message()
    );
    // After the holiday (19 Nov 10:00 UTC), the rotation runs again.
    f.clock
        .set(Utc.with_ymd_and_hms(2026, 11, 19, 10, 0, 0).unwrap());
    assert_eq!(assigned(&f.run(ROUTER, CONTACT).await).0, email(1));
}

async fn the_backup_user_takes_the_record_when_nobody_is_available_without_touching_counters(
    backend: Backend,
) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin", "default_user": email(4)});
    let f = fixture(
        backend,
        seed(settings, |s| {
            s["accounts"][0]["assignment_quota"] = json!(1000);
            for i in 0..4 {
                s["accounts"][0]["users"][i]["office_status"] = json!(false);
            }
            s["accounts"][0]["users"][3]["capacity"] =
                json!([{"current_capacity": 5, "max_capacity": 5}]);
        }),
    )
    .await;
    let outcome = f.run(ROUTER, CONTACT).await;
    assert_eq!(
        assigned(&outcome),
        (email(4).as_str(), AssignmentReason::Backup)
    );
    assert_eq!(
        f.capacity_of(4).await,
        json!([{"current_capacity": 5, "max_capacity": 5}])
    );
    // The backup does not move the rotation: once m1 is back, m1 gets the next one.
    let account = id(ACCOUNT);
    let rotation = f.store.rotation_state(id(ROUTER)).await.unwrap();
    assert_eq!(rotation.version, 0);
    assert_eq!(
        f.store.assignment_count(account, "2026-11").await.unwrap(),
        1,
        "backups count toward the quota"
    );
}

async fn account_matching_gives_a_contact_to_its_companys_owner(backend: Backend) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin", "account_matching": true});
    // The company owner m3 is outside the router's pool (users m1, m2; no teams): matching
    // gives it to them all the same (BEHAVIOR 6, step 10: "in the router's pool or not").
    let company = |s: &mut Value| {
        s["accounts"][0]["routers"][0]["teams"] = json!([]);
        s["accounts"][0]["records"]["companies"] = json!([
            {"id": "01936b2a-7c00-7a00-8000-0000000000c1", "fields": {"company_name": "Prospect", "website_url": "https://www.prospect.example", "company_owner": email(3)}}
        ]);
    };
    let f = fixture(backend, seed(settings.clone(), company)).await;
    assert_eq!(
        assigned(&f.run(ROUTER, CONTACT).await),
        (email(3).as_str(), AssignmentReason::AccountMatching)
    );
    let rotation = f.store.rotation_state(id(ROUTER)).await.unwrap();
    assert_eq!(
        rotation.version, 0,
        "a matched assignment does not move the rotation"
    );
    // An unavailable company owner falls back to the rotation.
    let f = fixture(
        backend,
        seed(settings, |s| {
            company(s);
            s["accounts"][0]["users"][2]["office_status"] = json!(false);
        }),
    )
    .await;
    assert_eq!(
        assigned(&f.run(ROUTER, CONTACT).await),
        (email(1).as_str(), AssignmentReason::Rotation)
    );
}

async fn capacity_counts_only_applying_entries_and_stops_at_the_maximum(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| {
            s["accounts"][0]["routers"][0]["users"] = json!([{"email": email(1)}]);
            s["accounts"][0]["routers"][0]["teams"] = json!([]);
            s["accounts"][0]["users"][0]["capacity"] = json!([
                {"id": "a", "current_capacity": 0, "max_capacity": 2, "assignment_type": "contacts"},
                {"id": "b", "current_capacity": 7, "max_capacity": 9, "assignment_type": "deals"},
                {"id": "c", "current_capacity": 1, "max_capacity": 5},
                {"id": "d", "current_capacity": 0, "name": "no maximum"}
            ]);
        }),
    )
    .await;
    let ids = f.contacts(3).await;
    assert_eq!(assigned(&f.run(ROUTER, &ids[0]).await).0, email(1));
    assert_eq!(assigned(&f.run(ROUTER, &ids[1]).await).0, email(1));
    assert_eq!(
        skipped(&f.run(ROUTER, &ids[2]).await),
        "Assignment limit reached"
    );
    assert_eq!(
        f.capacity_of(1).await,
        json!([
            {"id": "a", "current_capacity": 2, "max_capacity": 2, "assignment_type": "contacts"},
            {"id": "b", "current_capacity": 7, "max_capacity": 9, "assignment_type": "deals"},
            {"id": "c", "current_capacity": 3, "max_capacity": 5},
            {"id": "d", "current_capacity": 0, "name": "no maximum"}
        ])
    );
}

async fn a_teams_rotation_alternates_teams_and_rotates_inside_each(backend: Backend) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin", "rotation_type": "teams"});
    let f = fixture(
        backend,
        seed(settings, |s| {
            s["accounts"][0]["teams"] = json!([
                {"id": Uuid::from_u128(0x2001), "name": "T1", "members": [email(1), email(2)]},
                {"id": Uuid::from_u128(0x2002), "name": "T2", "members": [email(3), email(4)]}
            ]);
            s["accounts"][0]["routers"][0]["users"] = json!([]);
            s["accounts"][0]["routers"][0]["teams"] = json!([{"name": "T1"}, {"name": "T2"}]);
        }),
    )
    .await;
    let ids = f.contacts(4).await;
    let mut got = Vec::new();
    for id in &ids {
        got.push(assigned(&f.run(ROUTER, id).await).0.to_string());
    }
    assert_eq!(got, [email(1), email(3), email(2), email(4)]);
}

async fn the_queue_path_finds_the_routers_account_and_never_assigns_a_message_twice(
    backend: Backend,
) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin", "overwrite": true});
    let f = fixture(backend, seed(settings, |_| {})).await;
    let request = DispatchRequest {
        router_id: ROUTER.into(),
        object_id: CONTACT.into(),
        account_id: None,
    };
    let first = f
        .engine
        .dispatch(
            AccountContext::RouterOwner,
            &request,
            Some(&MessageDeduplicationId::new("msg-1")),
        )
        .await
        .unwrap();
    assert_eq!(assigned(&first).0, email(1));
    let again = f
        .engine
        .dispatch(
            AccountContext::RouterOwner,
            &request,
            Some(&MessageDeduplicationId::new("msg-1")),
        )
        .await
        .unwrap();
    assert_eq!(again, Outcome::AlreadyProcessed);
    assert_eq!(f.owner(CONTACT).await.as_deref(), Some(email(1).as_str()));
    let log = f.history(id(CONTACT)).await;
    assert_eq!(log.len(), 1);
    // A message naming another account than the router's finds no router.
    let wrong = DispatchRequest {
        account_id: Some(OTHER_ACCOUNT.into()),
        ..request.clone()
    };
    let outcome = f
        .engine
        .dispatch(
            AccountContext::RouterOwner,
            &wrong,
            Some(&MessageDeduplicationId::new("msg-2")),
        )
        .await
        .unwrap();
    assert_eq!(skipped(&outcome), "Router not found");
}

#[test]
fn a_body_without_both_ids_is_the_specs_400() {
    for body in [
        &b"{}"[..],
        b"{\"router_id\": \"x\"}",
        b"{\"object_id\": \"x\"}",
        b"{\"router_id\": null, \"object_id\": \"x\"}",
        b"{\"router_id\": \"\", \"object_id\": \"x\"}",
        b"{\"router_id\": 5, \"object_id\": \"x\"}",
        b"not json",
        b"[]",
    ] {
        let err = DispatchRequest::parse(body).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Invalid event: require router_id and object_id"
        );
        assert!(matches!(err, shared::DomainError::Invalid { .. }));
    }
    assert!(DispatchRequest::parse(b"{\"router_id\": \"r\", \"object_id\": \"o\"}").is_ok());
}

/// Starts every dispatch at once, spread over `instances` engines that share the store, as
/// warm Lambda instances do; each engine serializes its own dispatches per router, so the
/// instances race each other in the store and only its conditional writes keep the counts right.
async fn run_concurrently(
    f: &Fixture, backend: Backend, ids: Vec<String>,
) -> HashMap<String, usize> {
    let instances = backend.instances();
    let engines: Vec<Arc<DispatchEngine>> = (0..instances)
        .map(|_| {
            Arc::new(
                DispatchEngine::new(
                    f.store.clone(),
                    f.clock.clone(),
                    Arc::new(CatalogueCache::default()),
                )
                .with_deadline(backend.deadline()),
            )
        })
        .collect();
    let mut tasks = Vec::new();
    for (i, object_id) in ids.into_iter().enumerate() {
        let engine = engines[i % instances].clone();
        tasks.push(tokio::spawn(async move {
            let request = DispatchRequest {
                router_id: ROUTER.into(),
                object_id,
                account_id: None,
            };
            engine
                .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
                .await
                .unwrap()
        }));
    }
    let mut counts: HashMap<String, usize> = HashMap::new();
    for task in tasks {
        let label = match task.await.unwrap() {
            Outcome::Assigned(a) => a.user.into_string(),
            Outcome::Skipped(s) => s.message().to_string(),
            Outcome::AlreadyProcessed => "already".into(),
        };
        *counts.entry(label).or_default() += 1;
    }
    counts
}

fn four_users(s: &mut Value) {
    s["accounts"][0]["routers"][0]["users"] =
        json!([{"email": email(1)}, {"email": email(2)}, {"email": email(3)}, {"email": email(4)}]);
    s["accounts"][0]["routers"][0]["teams"] = json!([]);
}

async fn concurrent_round_robin_dispatches_give_each_of_four_members_an_equal_share(
    backend: Backend,
) {
    let f = fixture(backend, seed(rr(), four_users)).await;
    let n = backend.dispatches();
    let counts = run_concurrently(&f, backend, f.contacts(n).await).await;
    for i in 1..=4 {
        assert_eq!(counts.get(&email(i)), Some(&(n / 4)), "{counts:?}");
    }
}

async fn concurrent_dispatches_never_push_a_member_past_max_capacity(backend: Backend) {
    // Member 2 fills up after a tenth of the dispatches; the other three share the rest.
    let n = backend.dispatches();
    let max = n / 10;
    let f = fixture(
        backend,
        seed(rr(), |s| {
            four_users(s);
            s["accounts"][0]["users"][1]["capacity"] =
                json!([{"current_capacity": 0, "max_capacity": max, "assignment_type": "contacts"}]);
        }),
    )
    .await;
    let counts = run_concurrently(&f, backend, f.contacts(n).await).await;
    assert_eq!(counts.get(&email(2)), Some(&max), "{counts:?}");
    assert_eq!(counts.values().sum::<usize>(), n);
    assert_eq!(f.capacity_of(2).await[0]["current_capacity"], max);
    for i in [1, 3, 4] {
        assert_eq!(counts.get(&email(i)), Some(&((n - max) / 3)), "{counts:?}");
    }
}

async fn a_percentage_router_of_50_30_20_splits_concurrent_dispatches_50_30_20(backend: Backend) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "percentage"});
    let f = fixture(backend, seed(settings, |s| {
        s["accounts"][0]["routers"][0]["users"] = json!([
            {"email": email(1), "percentage": 50}, {"email": email(2), "percentage": 30}, {"email": email(3), "percentage": 20}
        ]);
        s["accounts"][0]["routers"][0]["teams"] = json!([]);
    }))
    .await;
    let n = backend.dispatches();
    let counts = run_concurrently(&f, backend, f.contacts(n).await).await;
    assert_eq!(
        (counts[&email(1)], counts[&email(2)], counts[&email(3)]),
        (n / 2, n * 3 / 10, n / 5)
    );
}

async fn an_account_quota_of_n_allows_exactly_n_concurrent_assignments(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| s["accounts"][0]["assignment_quota"] = json!(37)),
    )
    .await;
    let counts = run_concurrently(&f, backend, f.contacts(60).await).await;
    assert_eq!(
        counts.get("Assignment limit reached"),
        Some(&23),
        "{counts:?}"
    );
    let account = id(ACCOUNT);
    assert_eq!(
        f.store.assignment_count(account, "2026-11").await.unwrap(),
        37
    );
    // A new month starts a new count.
    f.clock
        .set(Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap());
    let more = f.contacts(1).await;
    assert!(matches!(
        f.run(ROUTER, &more[0]).await,
        Outcome::Assigned(_)
    ));
}

async fn a_write_that_keeps_losing_races_fails_after_the_deadline_and_writes_nothing(
    backend: Backend,
) {
    use shared::store::faulty::FaultyStore;
    use std::sync::atomic::Ordering;
    let f = fixture(backend, seed(rr(), |_| {})).await;
    let faulty = Arc::new(FaultyStore::new(f.store.clone()));
    faulty.faults.commits_conflict.store(true, Ordering::SeqCst);
    let engine = DispatchEngine::new(
        faulty.clone(),
        f.clock.clone(),
        Arc::new(CatalogueCache::default()),
    )
    .with_deadline(std::time::Duration::from_millis(200));
    let request = DispatchRequest {
        router_id: ROUTER.into(),
        object_id: CONTACT.into(),
        account_id: None,
    };
    let started = std::time::Instant::now();
    let err = engine
        .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
        .await
        .unwrap_err();
    assert!(matches!(err, shared::DomainError::Internal(_)), "{err:?}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(200));
    assert_eq!(f.owner(CONTACT).await, None);
    // Once the race ends, the same dispatch succeeds.
    faulty
        .faults
        .commits_conflict
        .store(false, Ordering::SeqCst);
    let ok = engine
        .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
        .await
        .unwrap();
    assert_eq!(assigned(&ok).0, email(1));
}
