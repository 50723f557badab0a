//! The what-if replay (BEHAVIOR 16) and explain of a chosen revision (BEHAVIOR 9 `revision`),
//! each test on the embedded store and on DynamoDB (a table of its own on the emulator): the
//! history is made by the dispatch engine itself under a fixed clock moved from dispatch to
//! dispatch, then replayed.
//!
//! The faithfulness tests (BEHAVIOR 16): a replay of the live revision over a router's
//! whole history, with members whose settings did not change and no capacity, quota or SLA in
//! play, reproduces every actual assignment (`changed: 0`), round robin and percentage alike,
//! over hours when a member is off and a day when another is out of office.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;
use chrono::{DateTime, Duration, TimeZone, Utc};
use common::snapshot::Held;
use common::Backend;
use serde_json::{json, Map, Value};
use shared::clock::{Clock, FixedClock};
use shared::dispatch::replay::Replayer;
use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, ExplainAnswer, Preview};
use shared::error::DomainError;
use shared::fields::CatalogueCache;
use shared::model::{RouterConfig, RouterDraft, RouterUser};
use shared::routers::RevisionChoice;
use shared::store::faulty::{FaultyStore, PortMethod};
use shared::store::Store;
use shared::types::etag::ETag;
use shared::types::{AccountId, Email, RouterId};
use std::sync::Arc;
use uuid::Uuid;

const ACCOUNT: &str = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01";
const ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const COMPANY: &str = "01936b2a-7c00-7a00-8000-0000000000c1";

fn id<T: From<Uuid>>(text: &str) -> T {
    Uuid::parse_str(text).unwrap().into()
}

/// Monday 2026-11-16 06:00 UTC: the first dispatch.
fn start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 16, 6, 0, 0).unwrap()
}

fn email(n: usize) -> String {
    format!("m{n}@acme.example")
}

fn member(n: usize) -> Value {
    json!({"id": Uuid::from_u128(0x1000 + n as u128), "email": email(n), "time_zone": "UTC"})
}

fn contact_id(n: usize) -> String {
    Uuid::from_u128(0x01936b2a_7c00_7a00_8000_000000005000 + n as u128).to_string()
}

/// Contact `n`: from the US except every 7th (from France, which the trigger refuses); every
/// 5th at `prospect.example`, whose company m5 owns (account matching).
fn contact(n: usize) -> Value {
    let domain = if n % 5 == 4 {
        "prospect.example"
    } else {
        "leads.example"
    };
    let country = if n % 7 == 6 { "FR" } else { "US" };
    json!({"id": contact_id(n), "fields": {"email": format!("lead{n}@{domain}"), "country": country}})
}

fn us_trigger() -> Value {
    json!({"groups": [{"conditions": [{"field": "country", "operator": "equals", "value": "US"}]}]})
}

/// Round robin over users m1, m2 and team T1 = [m3, m4], US only, with account matching.
fn round_robin() -> (Value, Value) {
    (
        json!({"owner_field": "contact_owner", "distribution_model": "round robin", "trigger": us_trigger(), "account_matching": true}),
        json!([{"email": email(1)}, {"email": email(2)}]),
    )
}

/// Percentage 50/30/20 over m1, m2, m3, US only.
fn percentage() -> (Value, Value) {
    (
        json!({"owner_field": "contact_owner", "distribution_model": "percentage", "trigger": us_trigger()}),
        json!([
            {"email": email(1), "percentage": 50},
            {"email": email(2), "percentage": 30},
            {"email": email(3), "percentage": 20}
        ]),
    )
}

/// An account with m1..m5 (m2 works 09:00-17:00 UTC on weekdays; m3 is out of office on
/// 2026-11-17; the others are always available), team T1 = [m3, m4], the router `ROUTER`
/// with `settings` and `users` (and team T1 for round robin), `contacts` contacts and the
/// company of `prospect.example`, owned by m5.
fn seed((settings, users): (Value, Value), contacts: usize) -> Value {
    let mut m2 = member(2);
    m2["working_hours"] = json!([{"days": "mon-fri", "start_date": "09:00", "end_date": "17:00"}]);
    let mut m3 = member(3);
    m3["out_office_dates"] = json!([{"start_date": "2026-11-17", "end_date": "2026-11-17"}]);
    let percentage = settings["distribution_model"] == "percentage";
    let teams = if percentage {
        json!([])
    } else {
        json!([{"name": "T1"}])
    };
    json!({"accounts": [{
        "id": ACCOUNT, "name": "Acme", "active": true, "assignment_quota": null,
        "clients": [], "roles": [],
        "users": [member(1), m2, m3, member(4), member(5)],
        "teams": [{"id": Uuid::from_u128(0x2001), "name": "T1", "members": [email(3), email(4)]}],
        "fields": {},
        "routers": [{
            "id": ROUTER, "name": "R", "object_type": "contacts", "is_published": true,
            "has_integration": false, "settings": settings, "users": users, "teams": teams
        }],
        "records": {
            "contacts": (0..contacts).map(contact).collect::<Vec<_>>(),
            "companies": [
                {"id": COMPANY, "fields": {"company_name": "Prospect", "website_url": "https://www.prospect.example", "company_owner": email(5)}}
            ]
        }
    }]})
}

struct Fixture {
    held: Held,
    store: Arc<dyn Store>,
    engine: DispatchEngine,
    replayer: Replayer,
    clock: Arc<FixedClock>,
}

async fn fixture(backend: Backend, seed: Value) -> Fixture {
    let clock = Arc::new(FixedClock::new(start()));
    let (store, held) = Held::new(backend).await;
    let plan = shared::seed::load(
        &seed.to_string(),
        start() - Duration::days(30),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .unwrap_or_else(|e| panic!("test seed: {e}"));
    store.provision(&plan).await.unwrap();
    let catalogues = Arc::new(CatalogueCache::default());
    Fixture {
        engine: DispatchEngine::new(store.clone(), clock.clone(), catalogues.clone()),
        replayer: Replayer::new(store.clone(), clock.clone(), catalogues),
        held,
        store,
        clock,
    }
}

/// Minutes between two dispatches: 40 contacts span two days and a bit, through m2's hours
/// on and off and m3's day out of office.
const STEP_MINUTES: i64 = 97;

impl Fixture {
    /// Dispatches contacts `range` through `ROUTER`, each `STEP_MINUTES` after the previous
    /// one from `start()`; returns the instant after the last.
    async fn dispatch_all(&self, range: std::ops::Range<usize>) -> DateTime<Utc> {
        for n in range.clone() {
            self.clock
                .set(start() + Duration::minutes(STEP_MINUTES * n as i64));
            let request = DispatchRequest {
                router_id: ROUTER.into(),
                object_id: contact_id(n),
                account_id: None,
            };
            self.engine
                .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
                .await
                .unwrap();
        }
        start() + Duration::minutes(STEP_MINUTES * range.end as i64)
    }

    async fn simulate(&self, body: Value) -> Result<Value, DomainError> {
        let body: Map<String, Value> = body.as_object().cloned().unwrap();
        let answer = self
            .replayer
            .simulate(id(ACCOUNT), id(ROUTER), Ok(body))
            .await?;
        Ok(serde_json::to_value(answer).unwrap())
    }

    /// At `end`, replays revision 1 over every dispatch so far: the window from an hour before
    /// the first dispatch (`start()`) to `end`.
    async fn replay_revision_1_until(&self, end: DateTime<Utc>) -> Value {
        self.clock.set(end);
        let (from, to) = window(start() - Duration::hours(1), end);
        self.simulate(json!({"revision": 1, "from": from, "to": to}))
            .await
            .unwrap()
    }

    /// Publishes or unpublishes `ROUTER` (its configuration unchanged).
    async fn set_published(&self, published: bool) {
        let current = self
            .store
            .get_router(id(ACCOUNT), id(ROUTER))
            .await
            .unwrap()
            .unwrap();
        let mut next = current.clone();
        next.is_published = published;
        next.version = current.version + 1;
        self.store
            .write_router(&shared::model::router_write::RouterWrite {
                router: next,
                expected_version: current.version,
                revision: None,
                draft: shared::model::router_write::DraftChange::Keep,
                rotation: None,
                archives: false,
                completion: None,
                calendars: Default::default(),
                audit: None,
            })
            .await
            .unwrap();
    }

    /// Dispatches contact `n` through `ROUTER` at `at`.
    async fn dispatch_at(&self, n: usize, at: DateTime<Utc>) {
        self.clock.set(at);
        let request = DispatchRequest {
            router_id: ROUTER.into(),
            object_id: contact_id(n),
            account_id: None,
        };
        self.engine
            .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
            .await
            .unwrap();
    }

    /// A replayer over this fixture's store wrapped to count what it reads, replaying `window`
    /// entries at a time and at most `cap`.
    fn counted_replayer(&self, window: usize, cap: usize) -> (Arc<FaultyStore>, Replayer) {
        let faulty = Arc::new(FaultyStore::new(self.store.clone()));
        let replayer = Replayer::new(faulty.clone(), self.clock.clone(), Default::default())
            .with_window(window)
            .with_cap(cap);
        (faulty, replayer)
    }

    /// Stores a draft of `ROUTER` whose configuration is the live one changed by `edit`.
    async fn put_draft(&self, edit: impl FnOnce(&mut RouterConfig)) {
        let router = self
            .store
            .get_router(id(ACCOUNT), id(ROUTER))
            .await
            .unwrap()
            .unwrap();
        let mut config = router.config();
        edit(&mut config);
        let draft = RouterDraft {
            router_id: router.id,
            account_id: router.account_id,
            based_on_revision: router.revision,
            config,
            updated_at: self.clock.now(),
            updated_by: "test".into(),
            etag: ETag::new_random(),
        };
        self.store
            .put_router_draft(
                &draft,
                None,
                router.version,
                &Default::default(),
                None,
                None,
            )
            .await
            .unwrap();
    }
}

fn window(from: DateTime<Utc>, to: DateTime<Utc>) -> (String, String) {
    (from.to_rfc3339(), to.to_rfc3339())
}

/// `members[]` of an answer as (user, actual, simulated).
fn columns(answer: &Value) -> Vec<(String, u64, u64)> {
    answer["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["user"].as_str().unwrap().to_string(),
                m["actual"].as_u64().unwrap(),
                m["simulated"].as_u64().unwrap(),
            )
        })
        .collect()
}

shared::on_both_stores!(
    a_replay_of_the_live_round_robin_revision_reproduces_every_assignment,
    a_replay_of_the_live_percentage_revision_reproduces_every_assignment,
    a_draft_replay_shows_what_changes_member_by_member_with_samples,
    the_rotation_starts_empty_at_from,
    holidays_are_evaluated_at_each_entrys_instant,
    capacity_and_the_quota_are_not_applied,
    a_record_gone_since_counts_as_object_not_found,
    the_replay_set_leaves_out_early_outcomes_and_other_windows,
    the_oldest_entries_are_replayed_up_to_the_cap_and_truncated_says_so,
    draft_and_revision_not_found_and_router_not_found_are_404,
    a_replay_writes_nothing,
    explain_evaluates_a_chosen_revision_whatever_the_publication_state,
    the_live_revision_over_mixed_outcomes_changes_nothing_and_reads_each_record_once,
    a_replay_reads_at_most_three_times_its_cap_in_entries_then_says_truncated,
);

async fn faithful(backend: Backend, model: (Value, Value), contacts: usize) -> Value {
    let f = fixture(backend, seed(model, contacts)).await;
    let end = f.dispatch_all(0..contacts).await;
    f.clock.set(end + Duration::hours(1));
    // The whole history: the real rotation state was empty before the first entry too.
    let (from, to) = window(start() - Duration::hours(1), end + Duration::hours(1));
    let answer = f
        .simulate(json!({"revision": 1, "from": from, "to": to}))
        .await
        .unwrap();
    assert_eq!(answer["revision"], 1);
    assert_eq!(answer["replayed"], contacts, "{answer}");
    assert_eq!(answer["truncated"], false);
    assert_eq!(answer["changed"], 0, "{answer}");
    assert_eq!(answer["samples"], json!([]));
    let refused = (0..contacts).filter(|n| n % 7 == 6).count() as u64;
    assert_eq!(
        answer["outcomes"],
        json!({"Owner assigned": contacts as u64 - refused, "Trigger did not match": refused})
    );
    for (user, actual, simulated) in columns(&answer) {
        assert_eq!(actual, simulated, "{user}: {answer}");
    }
    answer
}

async fn a_replay_of_the_live_round_robin_revision_reproduces_every_assignment(backend: Backend) {
    let answer = faithful(backend, round_robin(), 40).await;
    let got = columns(&answer);
    // The pool in pool order, then m5 (account matching, outside the pool).
    let users: Vec<&str> = got.iter().map(|(u, _, _)| u.as_str()).collect();
    assert_eq!(users, [email(1), email(2), email(3), email(4), email(5)]);
    // Everyone took part, m2 less (off outside 09:00-17:00), m5 by account matching.
    assert!(got.iter().all(|(_, actual, _)| *actual > 0), "{answer}");
    assert!(got[1].1 < got[0].1, "m2 is off most hours: {answer}");
    assert_eq!(answer["members"][0]["target_share"], 0.25);
    assert_eq!(answer["members"][4]["target_share"], Value::Null);
}

async fn a_replay_of_the_live_percentage_revision_reproduces_every_assignment(backend: Backend) {
    let answer = faithful(backend, percentage(), 40).await;
    let got = columns(&answer);
    assert_eq!(
        got.iter().map(|(u, _, _)| u.clone()).collect::<Vec<_>>(),
        [email(1), email(2), email(3)]
    );
    assert!(got.iter().all(|(_, actual, _)| *actual > 0), "{answer}");
    let targets: Vec<f64> = answer["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["target_share"].as_f64().unwrap())
        .collect();
    assert_eq!(targets, [0.5, 0.3, 0.2]);
}

async fn a_draft_replay_shows_what_changes_member_by_member_with_samples(backend: Backend) {
    let f = fixture(backend, seed(round_robin(), 30)).await;
    let end = f.dispatch_all(0..30).await;
    f.clock.set(end);
    // The draft: m4 alone, no trigger, no account matching.
    f.put_draft(|c| {
        c.users = vec![RouterUser {
            email: Email::parse(&email(4)).unwrap(),
            percentage: None,
        }];
        c.teams = vec![];
        c.member_ids.retain(|m| m.email.as_str() == email(4));
        let settings = c.settings.as_mut().unwrap();
        settings.trigger = None;
        settings.account_matching = false;
    })
    .await;
    // The default: the draft over the 30 days before now.
    let answer = f.simulate(json!({})).await.unwrap();
    assert_eq!(answer["revision"], "draft");
    assert_eq!(answer["replayed"], 30);
    assert_eq!(answer["outcomes"], json!({"Owner assigned": 30}));
    let got = columns(&answer);
    assert_eq!(got[0].0, email(4), "the draft's pool first");
    assert_eq!(got[0].2, 30, "every replayed entry goes to m4");
    assert_eq!(answer["members"][0]["simulated_share"], 1.0);
    assert_eq!(answer["members"][0]["target_share"], 1.0);
    let others: Vec<&str> = got[1..].iter().map(|(u, _, _)| u.as_str()).collect();
    let mut sorted = others.clone();
    sorted.sort();
    assert_eq!(others, sorted, "others by e-mail");
    assert!(got[1..].iter().all(|(_, _, simulated)| *simulated == 0));
    for m in answer["members"].as_array().unwrap().iter().skip(1) {
        assert_eq!(m["target_share"], Value::Null, "outside the draft's pool");
    }
    // Changed: every entry whose real assignee was not m4 (trigger misses included).
    let actual_m4 = got[0].1;
    let changed = 30 - actual_m4;
    assert_eq!(answer["changed"], changed);
    let samples = answer["samples"].as_array().unwrap();
    assert_eq!(samples.len() as u64, changed.min(20));
    let mut previous = String::new();
    for s in samples {
        assert_eq!(s["simulated_user"], email(4));
        assert_eq!(s["simulated_message"], "Owner assigned");
        assert_ne!(s["actual_user"], email(4));
        let at = s["dispatched_at"].as_str().unwrap().to_string();
        assert!(at > previous, "oldest first");
        previous = at;
    }
    // The first contact (n = 0) went to m1 by rotation: the first sample.
    assert_eq!(samples[0]["object_id"], contact_id(0));
    assert_eq!(samples[0]["actual_user"], email(1));
}

async fn the_rotation_starts_empty_at_from(backend: Backend) {
    // Round robin without availability twists: m4, m5 only, always available.
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin"});
    let users = json!([{"email": email(4)}, {"email": email(5)}]);
    let mut s = seed((settings, users), 3);
    s["accounts"][0]["routers"][0]["teams"] = json!([]);
    let f = fixture(backend, s).await;
    let end = f.dispatch_all(0..3).await; // m4, m5, m4
    f.clock.set(end);
    // From after the first entry: the replay's rotation starts empty, so m4, m5.
    let (from, to) = window(start() + Duration::minutes(1), end);
    let answer = f
        .simulate(json!({"revision": 1, "from": from, "to": to}))
        .await
        .unwrap();
    assert_eq!(answer["replayed"], 2);
    assert_eq!(answer["changed"], 2, "{answer}");
    assert_eq!(
        columns(&answer),
        [(email(4), 1, 1), (email(5), 1, 1)],
        "actual m5 then m4; simulated m4 then m5"
    );
    assert_eq!(answer["samples"][0]["actual_user"], email(5));
    assert_eq!(answer["samples"][0]["simulated_user"], email(4));
}

/// BEHAVIOR 16 and 17: the replay evaluates a member's holidays at each entry's instant (not
/// at the replay's own instant, when the holiday is over): replaying the live revision over
/// dispatches made before, during and after m4's holiday reproduces every one of them.
async fn holidays_are_evaluated_at_each_entrys_instant(backend: Backend) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin"});
    let users = json!([{"email": email(4)}, {"email": email(5)}]);
    let mut s = seed((settings, users), 4);
    s["accounts"][0]["routers"][0]["teams"] = json!([]);
    let calendar = Uuid::from_u128(0x3001);
    s["accounts"][0]["holiday_calendars"] = json!([{
        "id": calendar, "name": "Office", "time_zone": "UTC",
        "holidays": [{"name": "Drill", "date": "2026-11-16", "start": "09:00", "end": "12:00"}]
    }]);
    s["accounts"][0]["users"][3]["holiday_calendar_id"] = json!(calendar);
    let f = fixture(backend, s).await;
    // 06:00 m4, 07:37 m5, 09:14 and 10:51 m5 (m4 on holiday), ending at 12:28.
    let end = f.dispatch_all(0..4).await;
    let answer = f.replay_revision_1_until(end).await;
    assert_eq!(answer["replayed"], 4);
    assert_eq!(columns(&answer), [(email(4), 1, 1), (email(5), 3, 3)]);
    assert_eq!(answer["changed"], 0, "{answer}");
}

async fn capacity_and_the_quota_are_not_applied(backend: Backend) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin"});
    let users = json!([{"email": email(4)}]);
    let mut s = seed((settings, users), 4);
    s["accounts"][0]["routers"][0]["teams"] = json!([]);
    s["accounts"][0]["assignment_quota"] = json!(2);
    s["accounts"][0]["users"][3]["capacity"] =
        json!([{"current_capacity": 0, "max_capacity": 1, "assignment_type": "contacts"}]);
    let f = fixture(backend, s).await;
    let end = f.dispatch_all(0..4).await;
    let answer = f.replay_revision_1_until(end).await;
    // Really: m4 once, then at capacity ("Assignment limit reached") three times.
    assert_eq!(columns(&answer), [(email(4), 1, 4)]);
    assert_eq!(answer["outcomes"], json!({"Owner assigned": 4}));
    assert_eq!(answer["changed"], 3);
    assert_eq!(answer["samples"][0]["actual_user"], Value::Null);
}

async fn a_record_gone_since_counts_as_object_not_found(backend: Backend) {
    let f = fixture(backend, seed(round_robin(), 3)).await;
    let end = f.dispatch_all(0..3).await;
    let gone = f
        .store
        .get_record(
            id(ACCOUNT),
            shared::model::ObjectType::Contacts,
            id(&contact_id(1)),
        )
        .await
        .unwrap()
        .unwrap();
    let mut archived = gone.clone();
    archived.archived_at = Some(end);
    archived.version += 1;
    let keys = vec![shared::store::UniqueKey {
        field: "email".into(),
        value: gone.value("email").unwrap().to_string(),
    }];
    f.store
        .update_record(&archived, gone.version, &[], &keys)
        .await
        .unwrap();
    let answer = f.replay_revision_1_until(end).await;
    assert_eq!(
        answer["outcomes"],
        json!({"Owner assigned": 2, "Object not found": 1})
    );
    assert_eq!(answer["changed"], 2, "{answer}");
}

async fn the_replay_set_leaves_out_early_outcomes_and_other_windows(backend: Backend) {
    let f = fixture(backend, seed(round_robin(), 6)).await;
    f.dispatch_all(0..2).await;
    // Unpublished: "The router is unpublished" entries are not replayed.
    f.set_published(false).await;
    f.dispatch_all(2..4).await;
    f.set_published(true).await;
    // An unknown record: `Object not found` entries are not replayed either.
    f.clock.set(start() + Duration::minutes(STEP_MINUTES * 4));
    let unknown = DispatchRequest {
        router_id: ROUTER.into(),
        object_id: Uuid::now_v7().to_string(),
        account_id: None,
    };
    f.engine
        .dispatch(AccountContext::Token(id(ACCOUNT)), &unknown, None)
        .await
        .unwrap();
    let end = f.dispatch_all(5..6).await;
    let answer = f.replay_revision_1_until(end).await;
    assert_eq!(answer["replayed"], 3, "contacts 0, 1 and 5: {answer}");
    // A window that ends at the second dispatch's instant leaves it out ([from, to)).
    let (from, to) = window(start(), start() + Duration::minutes(STEP_MINUTES));
    let first = f
        .simulate(json!({"revision": 1, "from": from, "to": to}))
        .await
        .unwrap();
    assert_eq!(first["replayed"], 1);
    assert_eq!(first["from"], "2026-11-16T06:00:00.000Z");
}

async fn the_oldest_entries_are_replayed_up_to_the_cap_and_truncated_says_so(backend: Backend) {
    let f = fixture(backend, seed(round_robin(), 7)).await;
    let end = f.dispatch_all(0..5).await;
    f.clock.set(end);
    let (from, to) = window(start() - Duration::hours(1), end);
    let body = json!({"revision": 1, "from": from, "to": to});
    let capped = Replayer::new(f.store.clone(), f.clock.clone(), Default::default()).with_cap(3);
    let answer = capped
        .simulate(
            id(ACCOUNT),
            id(ROUTER),
            Ok(body.as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!((answer.replayed, answer.truncated), (3, true));
    // The oldest three: contacts 0, 1, 2 (no sample: nothing changed).
    let all = f.simulate(body.clone()).await.unwrap();
    assert_eq!(
        (all["replayed"].clone(), all["truncated"].clone()),
        (json!(5), json!(false))
    );
    let exact = Replayer::new(f.store.clone(), f.clock.clone(), Default::default()).with_cap(5);
    let answer = exact
        .simulate(
            id(ACCOUNT),
            id(ROUTER),
            Ok(body.as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(
        (answer.replayed, answer.truncated),
        (5, false),
        "exactly the cap"
    );
    if matches!(backend, Backend::Memory) {
        // The real cap, 10,000, on 10,001 entries (written directly: the embedded store only).
        the_real_cap(&f).await;
    }
}

/// 10,001 entries of `Trigger did not match` after the fixture's history: the oldest 10,000
/// are replayed.
async fn the_real_cap(f: &Fixture) {
    let router: RouterId = id(ROUTER);
    let base = start() + Duration::days(1);
    for n in 0..10_001i64 {
        let entry = shared::model::DispatchEntry {
            id: Uuid::now_v7(),
            account_id: id(ACCOUNT),
            router_id: router,
            router_revision: 1,
            object_type: shared::model::ObjectType::Contacts,
            object_id: contact_id(6),
            message: "Trigger did not match".into(),
            success: false,
            user: None,
            reason: None,
            previous_owner: None,
            field_name: None,
            owner_field: None,
            source: shared::model::DispatchSource::Queue,
            dispatched_at: base + Duration::seconds(n),
            crm_sync: None,
            sla: None,
            expires_at: base + Duration::days(400),
        };
        f.store
            .record_dispatch(&entry, None, None, None, &Default::default())
            .await
            .unwrap();
    }
    f.clock.set(base + Duration::days(2));
    let (from, to) = window(base, base + Duration::days(1));
    let answer = f
        .simulate(json!({"revision": 1, "from": from, "to": to}))
        .await
        .unwrap();
    assert_eq!(answer["replayed"], 10_000);
    assert_eq!(answer["truncated"], true);
    // Contact 6 is from France: the trigger refuses every one.
    assert_eq!(answer["outcomes"], json!({"Trigger did not match": 10_000}));
}

async fn draft_and_revision_not_found_and_router_not_found_are_404(backend: Backend) {
    let f = fixture(backend, seed(round_robin(), 1)).await;
    let not_found = |r: Result<Value, DomainError>| match r {
        Err(DomainError::NotFound(message)) => message,
        other => panic!("not a 404: {other:?}"),
    };
    assert_eq!(not_found(f.simulate(json!({})).await), "Draft not found");
    assert_eq!(
        not_found(f.simulate(json!({"revision": 2})).await),
        "Revision not found"
    );
    let unknown = f
        .replayer
        .simulate(id(ACCOUNT), RouterId::new_v7(), Ok(Map::new()))
        .await;
    assert_eq!(
        not_found(unknown.map(|s| serde_json::to_value(s).unwrap())),
        "Router not found"
    );
    // 404 for an unknown router comes before the body's 400; the body's 400 before the
    // draft's 404.
    let bad = f
        .replayer
        .simulate(
            id(ACCOUNT),
            RouterId::new_v7(),
            Ok(json!({"revision": 0}).as_object().cloned().unwrap()),
        )
        .await;
    assert!(matches!(bad, Err(DomainError::NotFound(_))));
    let invalid = f.simulate(json!({"revision": "nope"})).await.unwrap_err();
    assert_eq!(invalid.field(), Some("revision"));
    let other_account = f
        .replayer
        .simulate(AccountId::from(Uuid::new_v4()), id(ROUTER), Ok(Map::new()))
        .await;
    assert!(matches!(other_account, Err(DomainError::NotFound(_))));
}

async fn a_replay_writes_nothing(backend: Backend) {
    let f = fixture(backend, seed(round_robin(), 8)).await;
    let end = f.dispatch_all(0..8).await;
    f.put_draft(|c| c.teams.clear()).await;
    f.clock.set(end);
    let before = f.held.snapshot().await;
    let (from, to) = window(start() - Duration::hours(1), end);
    for body in [
        json!({}),
        json!({"revision": 1, "from": from, "to": to}),
        json!({"revision": "draft", "from": from}),
    ] {
        let answer = f.simulate(body).await.unwrap();
        assert!(answer["replayed"].as_u64().unwrap() > 0);
    }
    let after = f.held.snapshot().await;
    assert!(before == after, "the store changed during a replay");
}

async fn explain_evaluates_a_chosen_revision_whatever_the_publication_state(backend: Backend) {
    let mut s = seed(round_robin(), 2);
    s["accounts"][0]["routers"][0]["is_published"] = json!(false);
    let f = fixture(backend, s).await;
    f.clock.set(start() + Duration::hours(4)); // 10:00 UTC: everyone available
    let request = DispatchRequest {
        router_id: ROUTER.into(),
        object_id: contact_id(0),
        account_id: None,
    };
    let explain = |revision| {
        let request = request.clone();
        let engine = &f.engine;
        async move {
            engine
                .explain_revision(id(ACCOUNT), &request, revision)
                .await
        }
    };
    // Live: the router is unpublished.
    let (live, _) = explain(None).await.unwrap();
    assert_eq!(live, Preview::Stop("The router is unpublished"));
    // Revision 1 is evaluated though unpublished; the answer names it.
    let (first, explanation) = explain(Some(RevisionChoice::Number(1))).await.unwrap();
    assert!(matches!(&first, Preview::Assign { user, .. } if user.as_str() == email(1)));
    let body = serde_json::to_value(
        ExplainAnswer::new(first, explanation).with_revision(Some(RevisionChoice::Number(1))),
    )
    .unwrap();
    assert_eq!(body["revision"], 1);
    assert_eq!(body["dry_run"], true);
    // No draft yet, no revision 2.
    let missing = explain(Some(RevisionChoice::Draft)).await.unwrap_err();
    assert!(matches!(missing, DomainError::NotFound(m) if m == "Draft not found"));
    let missing = explain(Some(RevisionChoice::Number(2))).await.unwrap_err();
    assert!(matches!(missing, DomainError::NotFound(m) if m == "Revision not found"));
    // The draft (m4 alone) is what is explained.
    f.put_draft(|c| {
        c.users.clear();
        c.teams = vec!["T1".into()];
        c.member_ids.retain(|m| m.email.as_str() == email(4));
        c.settings.as_mut().unwrap().trigger = None;
    })
    .await;
    let (draft, explanation) = explain(Some(RevisionChoice::Draft)).await.unwrap();
    assert!(
        matches!(&draft, Preview::Assign { user, .. } if user.as_str() == email(3)),
        "{draft:?}"
    );
    assert_eq!(explanation.trigger, None, "the draft has no trigger");
    let pool: Vec<String> = explanation
        .candidates
        .unwrap()
        .into_iter()
        .map(|c| c.user.into_string())
        .collect();
    assert_eq!(pool, [email(3), email(4)]);
    // Without a revision, an unknown router is still the 200 `Router not found`.
    let unknown = DispatchRequest {
        router_id: Uuid::now_v7().to_string(),
        ..request.clone()
    };
    let (preview, _) = f
        .engine
        .explain_revision(id(ACCOUNT), &unknown, Some(RevisionChoice::Draft))
        .await
        .unwrap();
    assert_eq!(preview, Preview::Stop("Router not found"));
}

/// BEHAVIOR 16's calibration, with its clause for entries that assigned nobody: the live
/// revision replayed over a window of mixed outcomes (assignments by rotation and
/// by account matching, trigger misses, and every contact dispatched a second time, which
/// answered `The router can not overwrite`) changes nothing: an entry that assigned nobody
/// replays with the record's current owner. Replayed 4 entries at a time, every contact is
/// named in two windows and still read once (bounded reads), at most a window's worth at
/// once; with no room for projections it is read again, and the answer is the same.
async fn the_live_revision_over_mixed_outcomes_changes_nothing_and_reads_each_record_once(
    backend: Backend,
) {
    const CONTACTS: usize = 14;
    let f = fixture(backend, seed(round_robin(), CONTACTS)).await;
    let first = f.dispatch_all(0..CONTACTS).await;
    for n in 0..CONTACTS {
        f.dispatch_at(n, first + Duration::minutes(STEP_MINUTES * n as i64))
            .await;
    }
    let end = first + Duration::minutes(STEP_MINUTES * CONTACTS as i64);
    f.clock.set(end);
    let (from, to) = window(start() - Duration::hours(1), end);
    let body = json!({"revision": 1, "from": from, "to": to});
    let (faulty, replayer) = f.counted_replayer(4, 10_000);
    let answer = replayer
        .simulate(
            id(ACCOUNT),
            id(ROUTER),
            Ok(body.as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    let answer = serde_json::to_value(answer).unwrap();
    let refused = (0..CONTACTS).filter(|n| n % 7 == 6).count() as u64;
    let assigned = CONTACTS as u64 - refused;
    assert_eq!(answer["replayed"], 2 * CONTACTS, "{answer}");
    assert_eq!(
        answer["outcomes"],
        json!({
            "Owner assigned": assigned,
            "The router can not overwrite": assigned,
            "Trigger did not match": 2 * refused
        }),
        "{answer}"
    );
    assert_eq!(answer["changed"], 0, "{answer}");
    assert_eq!(answer["samples"], json!([]));
    for (user, actual, simulated) in columns(&answer) {
        assert_eq!(actual, simulated, "{user}: {answer}");
    }
    assert!(
        columns(&answer)
            .iter()
            .any(|(u, a, _)| *u == email(5) && *a > 0),
        "account matching took part: {answer}"
    );
    let volumes = faulty.faults.volumes.take();
    let records = volumes[&PortMethod::get_records];
    assert_eq!(
        records.items, CONTACTS,
        "each record read once: {volumes:?}"
    );
    assert!(records.largest <= 4, "a window at a time: {volumes:?}");
    let entries = volumes[&PortMethod::list_router_dispatches_between];
    assert!(entries.largest <= 4, "{volumes:?}");
    assert_eq!(entries.items, 2 * CONTACTS, "{volumes:?}");

    // No room for projections: a record named again in a later window is read again.
    let again = Replayer::new(faulty.clone(), f.clock.clone(), Default::default())
        .with_window(4)
        .with_memo_bytes(0)
        .simulate(
            id(ACCOUNT),
            id(ROUTER),
            Ok(body.as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(again).unwrap(), answer);
    let records = faulty.faults.volumes.take()[&PortMethod::get_records];
    assert!(records.items > CONTACTS, "{records:?}");
    assert!(records.largest <= 4, "{records:?}");
}

/// A flood of entries the replay skips (here `The router is unpublished`)
/// costs at most [`READ_FACTOR`] times the cap in entries read: past that the replay stops and
/// answers `truncated: true`, with what it replayed so far.
async fn a_replay_reads_at_most_three_times_its_cap_in_entries_then_says_truncated(
    backend: Backend,
) {
    use shared::dispatch::replay::READ_FACTOR;
    let f = fixture(backend, seed(round_robin(), 4)).await;
    f.dispatch_all(0..2).await;
    f.set_published(false).await;
    let flood = start() + Duration::minutes(STEP_MINUTES * 2);
    for n in 0..20 {
        f.dispatch_at(n % 4, flood + Duration::seconds(n as i64))
            .await;
    }
    f.set_published(true).await;
    let end = start() + Duration::minutes(STEP_MINUTES * 5);
    for n in 2..4 {
        f.dispatch_at(n, end - Duration::minutes(STEP_MINUTES * (4 - n as i64)))
            .await;
    }
    f.clock.set(end);
    let (from, to) = window(start() - Duration::hours(1), end);
    let body = json!({"revision": 1, "from": from, "to": to});
    let simulate = |replayer: Replayer| {
        let body = body.as_object().cloned().unwrap();
        async move {
            replayer
                .simulate(id(ACCOUNT), id(ROUTER), Ok(body))
                .await
                .unwrap()
        }
    };
    // Without a bound in sight: the two entries before the flood and the two after it.
    let (faulty, replayer) = f.counted_replayer(5, 10_000);
    let all = simulate(replayer).await;
    assert_eq!((all.replayed, all.truncated), (4, false));
    assert_eq!(
        faulty.faults.volumes.take()[&PortMethod::list_router_dispatches_between].items,
        24
    );
    for cap in [3usize, 4, 7, 8] {
        let (faulty, replayer) = f.counted_replayer(2, cap);
        let capped = simulate(replayer).await;
        let read = faulty.faults.volumes.take()[&PortMethod::list_router_dispatches_between].items;
        assert!(read <= READ_FACTOR * cap, "cap {cap}: {read} entries read");
        // 2 + 20 + 2 entries: the flood ends after entry 22, the replay reads 3 x cap.
        let (replayed, truncated) = if READ_FACTOR * cap >= 24 {
            (4, false)
        } else {
            (2, true)
        };
        assert_eq!(
            (capped.replayed, capped.truncated),
            (replayed as u64, truncated),
            "cap {cap}"
        );
        assert_eq!(
            capped.outcomes.get("Owner assigned"),
            Some(&(replayed as u64))
        );
    }
}
