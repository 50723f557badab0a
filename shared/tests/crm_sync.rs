//! CRM sync (BEHAVIOR 7) against an in-process fake HubSpot (`infra/fake-crm`), on the embedded
//! store and on DynamoDB (emulator): the request, every row of the `crm_error` table, the
//! timeout, retries that end `synced`, `superseded` and `failed`, `Retry-After`, the sync state
//! on the history entry, routers without `has_integration`, the queue path, and the access
//! token kept out of answers, errors and logs.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;
use chrono::{TimeZone, Utc};
use common::Backend;
use fake_crm::{FakeCrm, Scripted};
use serde_json::{json, Value};
use shared::clock::FixedClock;
use shared::crm::{CrmSync, HubSpotClient, RetryDelays};
use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, Outcome};
use shared::due::{DueMessage, DueSettings, DueWorker, Handoff, Ran, RunOutcome};
use shared::fields::CatalogueCache;
use shared::model::{CrmSyncState, CrmSyncStatus, DispatchEntry, ObjectType};
use shared::page::Page;
use shared::secrets::LocalSealer;
use shared::store::faulty::FaultyStore;
use shared::store::Store;
use shared::types::{AccountId, RecordId};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

const ACCOUNT: &str = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01";
const ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const PLAIN_ROUTER: &str = "7e3f4a56-b7c8-4d93-8ea5-b02b3c4d5e78";
const CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000002";
const NO_EXTERNAL_ID: &str = "01936b2a-7c00-7a00-8000-000000000003";
/// The account's CRM token; the fake echoes it back in some tests.
const TOKEN: &str = "pat-na1-0d7c4f1e-secret-token";
/// The record's `external_id`: a space and a slash, so the path segment must be encoded.
const RECORD_EXTERNAL_ID: &str = "hs c/1";

fn id<T: From<Uuid>>(text: &str) -> T {
    Uuid::parse_str(text).unwrap().into()
}

fn seed(base_url: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let member = |n: u128, email: &str, external: Option<&str>| json!({"id": Uuid::from_u128(0x1000 + n), "email": email, "external_id": external});
    let mut s = json!({"accounts": [{
        "id": ACCOUNT, "name": "Acme", "active": true,
        "crm": {"provider": "hubspot", "base_url": base_url, "access_token": TOKEN},
        "users": [
            member(1, "m1@acme.example", Some("owner-1")),
            member(2, "m2@acme.example", Some("owner-2")),
            member(3, "nox@acme.example", None)
        ],
        "routers": [
            {
                "id": ROUTER, "name": "Synced", "object_type": "contacts", "is_published": true,
                "has_integration": true,
                "settings": {"owner_field": "contact_owner", "distribution_model": "round robin", "overwrite": true},
                "users": [{"email": "m1@acme.example"}], "teams": []
            },
            {
                "id": PLAIN_ROUTER, "name": "Not synced", "object_type": "contacts", "is_published": true,
                "has_integration": false,
                "settings": {"owner_field": "contact_owner", "distribution_model": "round robin", "overwrite": true},
                "users": [{"email": "m1@acme.example"}], "teams": []
            }
        ],
        "records": {"contacts": [
            {"id": CONTACT, "fields": {"email": "lead@prospect.example", "external_id": RECORD_EXTERNAL_ID}},
            {"id": NO_EXTERNAL_ID, "fields": {"email": "bare@prospect.example"}}
        ]}
    }]});
    edit(&mut s);
    s
}

shared::on_both_stores!(
    a_synced_assignment_sends_hubspots_request_and_is_recorded_synced,
    missing_connection_or_external_ids_fail_at_once_without_a_request,
    a_non_2xx_answer_gives_its_status_and_the_json_message_or_the_first_200_characters,
    a_4xx_answer_other_than_429_is_final_at_once,
    no_answer_within_3_seconds_is_a_timeout_that_is_retried,
    a_connection_error_is_retried,
    a_retry_that_succeeds_ends_synced,
    a_failure_that_outlasts_every_delay_ends_failed,
    a_retry_is_superseded_when_the_record_got_another_owner,
    a_longer_retry_after_of_a_429_is_honoured,
    a_router_without_integration_never_calls_the_crm,
    the_queue_path_syncs_and_a_failed_sync_does_not_fail_the_message,
    a_duplicate_retry_is_dropped_and_a_final_state_never_changes,
    a_retry_message_received_early_is_postponed_on_the_queue,
    an_attempt_lost_after_the_commit_is_resumed_by_the_sweeper,
    the_stored_account_holds_the_access_token_only_sealed,
    a_retry_whose_hand_off_was_lost_is_resumed_by_the_sweeper_once,
);

struct Fixture {
    store: Arc<dyn Store>,
    engine: DispatchEngine,
    fake: FakeCrm,
    clock: Arc<FixedClock>,
}

/// Delays short enough for tests; the same rules as `30,300,1800`.
fn quick() -> RetryDelays {
    RetryDelays::parse("0.3,0.3,0.3").unwrap()
}

async fn fixture_with(
    backend: Backend, delays: RetryDelays, edit: impl FnOnce(&mut Value),
) -> Fixture {
    let (fake, base) = FakeCrm::start().await.unwrap();
    fixture_on(backend, delays, fake, &base, edit).await
}

async fn fixture_on(
    backend: Backend, delays: RetryDelays, fake: FakeCrm, base: &str, edit: impl FnOnce(&mut Value),
) -> Fixture {
    let at = Utc.with_ymd_and_hms(2026, 11, 18, 10, 0, 0).unwrap();
    let clock = Arc::new(FixedClock::new(at));
    let store = backend.store().await;
    let plan = shared::seed::load(
        &seed(base, edit).to_string(),
        at - chrono::Duration::days(1),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .unwrap_or_else(|e| panic!("test seed: {e}"));
    shared::seed::provision(store.as_ref(), &LocalSealer::development(), plan)
        .await
        .unwrap();
    let sync = CrmSync::new(
        Arc::new(HubSpotClient::new(shared::outbound::OutboundPolicy::LOCAL).unwrap()),
        store.clone(),
        clock.clone(),
        delays,
        Arc::new(LocalSealer::development()),
    );
    let engine = DispatchEngine::new(
        store.clone(),
        clock.clone(),
        Arc::new(CatalogueCache::default()),
    )
    .with_crm(sync);
    Fixture {
        store,
        engine,
        fake,
        clock,
    }
}

async fn fixture(backend: Backend) -> Fixture {
    fixture_with(backend, quick(), |_| {}).await
}

impl Fixture {
    async fn dispatch(&self, router: &str, record: &str) -> Outcome {
        let request = DispatchRequest {
            router_id: router.into(),
            object_id: record.into(),
            account_id: None,
        };
        self.engine
            .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
            .await
            .unwrap()
    }

    /// The record's newest history entry.
    async fn entry(&self, record: &str) -> DispatchEntry {
        self.store
            .list_record_dispatches(
                id::<AccountId>(ACCOUNT),
                ObjectType::Contacts,
                id::<RecordId>(record),
                &Page::first(1, false),
            )
            .await
            .unwrap()
            .items
            .into_iter()
            .next()
            .expect("an entry")
    }

    /// Waits until the record's newest entry has a final sync state (at most 20 s).
    async fn final_state(&self, record: &str) -> CrmSyncState {
        for _ in 0..200 {
            let state = self.entry(record).await.crm_sync.expect("a sync state");
            if state.status.is_final() {
                return state;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "the sync never ended: {:?}",
            self.entry(record).await.crm_sync
        );
    }
}

fn crm_error(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Assigned(a) => a.crm.clone(),
        other => panic!("not an assignment: {other:?}"),
    }
}

fn state(status: CrmSyncStatus, attempts: u32, error: Option<&str>) -> CrmSyncState {
    CrmSyncState {
        status,
        attempts,
        error: error.map(str::to_string),
    }
}

async fn a_synced_assignment_sends_hubspots_request_and_is_recorded_synced(backend: Backend) {
    let f = fixture(backend).await;
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    assert_eq!(crm_error(&outcome), None);
    let body = serde_json::to_value(outcome.answer()).unwrap();
    assert!(
        body.get("crm_sync_failed").is_none() && body.get("crm_error").is_none(),
        "{body}"
    );
    let requests = f.fake.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.method, "PATCH");
    assert_eq!(r.path, "/crm/v3/objects/contacts/hs%20c%2F1");
    assert_eq!(r.headers["authorization"], format!("Bearer {TOKEN}"));
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(
        r.body,
        json!({"properties": {"hubspot_owner_id": "owner-1"}})
    );
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Synced, 1, None))
    );
}

async fn missing_connection_or_external_ids_fail_at_once_without_a_request(backend: Backend) {
    // The record has no external_id.
    let f = fixture(backend).await;
    let outcome = f.dispatch(ROUTER, NO_EXTERNAL_ID).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("Record has no external_id")
    );
    let body = serde_json::to_value(outcome.answer()).unwrap();
    assert_eq!(body["crm_sync_failed"], true);
    assert_eq!(body["crm_error"], "Record has no external_id");
    assert_eq!(body["message"], "Owner assigned", "the assignment stands");
    assert_eq!(
        f.entry(NO_EXTERNAL_ID).await.crm_sync,
        Some(state(
            CrmSyncStatus::Failed,
            0,
            Some("Record has no external_id")
        ))
    );
    assert!(f.fake.requests().is_empty());

    // The assigned member has no external_id.
    let f = fixture_with(backend, quick(), |s| {
        s["accounts"][0]["routers"][0]["users"] = json!([{"email": "nox@acme.example"}]);
    })
    .await;
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("Owner has no external_id")
    );
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(
            CrmSyncStatus::Failed,
            0,
            Some("Owner has no external_id")
        ))
    );
    assert!(f.fake.requests().is_empty());

    // The account has no CRM connection (checked first).
    let f = fixture_with(backend, quick(), |s| {
        s["accounts"][0]["crm"] = Value::Null;
    })
    .await;
    let outcome = f.dispatch(ROUTER, NO_EXTERNAL_ID).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("No CRM connection for the account")
    );
    assert_eq!(
        f.entry(NO_EXTERNAL_ID).await.crm_sync,
        Some(state(
            CrmSyncStatus::Failed,
            0,
            Some("No CRM connection for the account")
        ))
    );
    assert!(f.fake.requests().is_empty());
}

async fn a_non_2xx_answer_gives_its_status_and_the_json_message_or_the_first_200_characters(
    backend: Backend,
) {
    let f = fixture(backend).await;
    f.fake.push(
        Scripted::status(400)
            .body(json!({"status": "error", "message": "Property values were not valid", "correlationId": "x"})),
    );
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM answered 400: Property values were not valid")
    );

    let long = "x".repeat(150) + &"y".repeat(150);
    f.fake
        .push(Scripted::status(409).body(Value::String(long.clone())));
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    let expected = format!("CRM answered 409: {}", &long[..200]);
    assert_eq!(crm_error(&outcome), Some(expected.clone()));
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Failed, 1, Some(&expected)))
    );

    // The CRM echoes the token: it never reaches crm_error, in a JSON message or a text body.
    f.fake.push(
        Scripted::status(401)
            .body(json!({"message": format!("Authentication credentials {TOKEN} are invalid")})),
    );
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    let error = crm_error(&outcome).unwrap();
    assert!(!error.contains(TOKEN), "{error}");
    assert!(
        error.starts_with("CRM answered 401: Authentication credentials"),
        "{error}"
    );
    f.fake
        .push(Scripted::status(403).body(Value::String(format!("token={TOKEN}; denied"))));
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    let error = crm_error(&outcome).unwrap();
    assert!(!error.contains(TOKEN), "{error}");
    let entry = serde_json::to_string(&f.entry(CONTACT).await).unwrap();
    assert!(!entry.contains(TOKEN), "{entry}");
}

async fn a_4xx_answer_other_than_429_is_final_at_once(backend: Backend) {
    let f = fixture(backend).await;
    f.fake
        .push(Scripted::status(404).body(json!({"message": "resource not found"})));
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM answered 404: resource not found")
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(f.fake.requests().len(), 1, "no retry after a 404");
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(
            CrmSyncStatus::Failed,
            1,
            Some("CRM answered 404: resource not found")
        ))
    );
}

async fn no_answer_within_3_seconds_is_a_timeout_that_is_retried(backend: Backend) {
    let f = fixture(backend).await;
    f.fake
        .push(Scripted::status(200).delay(Duration::from_millis(4000)));
    let started = std::time::Instant::now();
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    let waited = started.elapsed();
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM request timed out")
    );
    assert!(
        waited >= Duration::from_millis(2900),
        "the answer waits for the sync: {waited:?}"
    );
    // The retry finds a prompt fake.
    assert_eq!(
        f.final_state(CONTACT).await,
        state(CrmSyncStatus::Synced, 2, None)
    );
}

async fn a_connection_error_is_retried(backend: Backend) {
    // Nothing listens on the connection's port until the fake is started there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}");
    let fake = FakeCrm::new();
    let f = fixture_on(
        backend,
        RetryDelays::parse("1.5,1.5,1.5").unwrap(),
        fake.clone(),
        &base,
        |_| {},
    )
    .await;
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    let error = crm_error(&outcome).unwrap();
    assert!(error.starts_with("CRM request failed: "), "{error}");
    assert!(!error.contains(TOKEN), "{error}");
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Retrying, 1, Some(&error)))
    );
    fake.serve(format!("127.0.0.1:{port}").parse().unwrap())
        .await
        .unwrap();
    assert_eq!(
        f.final_state(CONTACT).await,
        state(CrmSyncStatus::Synced, 2, None)
    );
    assert_eq!(fake.requests().len(), 1);
}

async fn a_retry_that_succeeds_ends_synced(backend: Backend) {
    let f = fixture(backend).await;
    f.fake.push(
        Scripted::status(503)
            .body(json!({"message": "Service Unavailable"}))
            .times(2),
    );
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM answered 503: Service Unavailable")
    );
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(
            CrmSyncStatus::Retrying,
            1,
            Some("CRM answered 503: Service Unavailable")
        ))
    );
    assert_eq!(
        f.final_state(CONTACT).await,
        state(CrmSyncStatus::Synced, 3, None)
    );
    let requests = f.fake.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.body == requests[0].body));
}

async fn a_failure_that_outlasts_every_delay_ends_failed(backend: Backend) {
    let f = fixture(backend).await;
    f.fake.push(
        Scripted::status(500)
            .body(json!({"message": "internal error"}))
            .times(10),
    );
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    assert!(crm_error(&outcome).is_some());
    // One attempt, then one per delay (three): four in all, then failed for good.
    assert_eq!(
        f.final_state(CONTACT).await,
        state(
            CrmSyncStatus::Failed,
            4,
            Some("CRM answered 500: internal error")
        )
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(f.fake.requests().len(), 4);
}

async fn a_retry_is_superseded_when_the_record_got_another_owner(backend: Backend) {
    let f = fixture_with(backend, RetryDelays::parse("1,1,1").unwrap(), |_| {}).await;
    f.fake.push(Scripted::status(502).times(5));
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    assert_eq!(crm_error(&outcome).as_deref(), Some("CRM answered 502: "));
    // Before the retry, the owner changes (an edit by anyone).
    let mut record = f
        .store
        .get_record(id(ACCOUNT), ObjectType::Contacts, id(CONTACT))
        .await
        .unwrap()
        .unwrap();
    let version = record.version;
    record
        .values
        .insert("contact_owner".into(), "m2@acme.example".into());
    record.version += 1;
    f.store
        .update_record(&record, version, &[], &[])
        .await
        .unwrap();
    assert_eq!(
        f.final_state(CONTACT).await,
        state(CrmSyncStatus::Superseded, 1, Some("CRM answered 502: "))
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        f.fake.requests().len(),
        1,
        "a superseded sync sends nothing more"
    );
}

async fn a_longer_retry_after_of_a_429_is_honoured(backend: Backend) {
    let f = fixture(backend).await;
    f.fake.push(
        Scripted::status(429)
            .body(json!({"message": "You have reached your ten second limit."}))
            .retry_after("2"),
    );
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM answered 429: You have reached your ten second limit.")
    );
    assert_eq!(
        f.final_state(CONTACT).await,
        state(CrmSyncStatus::Synced, 2, None)
    );
    let requests = f.fake.requests();
    let gap = requests[1].at_ms - requests[0].at_ms;
    assert!(
        gap >= 1900,
        "the retry came {gap} ms after the 429 (Retry-After: 2)"
    );
}

async fn a_router_without_integration_never_calls_the_crm(backend: Backend) {
    let f = fixture(backend).await;
    let outcome = f.dispatch(PLAIN_ROUTER, NO_EXTERNAL_ID).await;
    assert_eq!(crm_error(&outcome), None);
    let body = serde_json::to_value(outcome.answer()).unwrap();
    assert!(body.get("crm_sync_failed").is_none(), "{body}");
    assert_eq!(f.entry(NO_EXTERNAL_ID).await.crm_sync, None);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(f.fake.requests().is_empty());
}

async fn the_queue_path_syncs_and_a_failed_sync_does_not_fail_the_message(backend: Backend) {
    let f = fixture(backend).await;
    f.fake.push(Scripted::status(503));
    let request = DispatchRequest {
        router_id: ROUTER.into(),
        object_id: CONTACT.into(),
        account_id: None,
    };
    let outcome = f
        .engine
        .dispatch(AccountContext::RouterOwner, &request, Some("message-1"))
        .await
        .expect("a sync failure is not a message failure");
    assert_eq!(crm_error(&outcome).as_deref(), Some("CRM answered 503: "));
    let entry = f.entry(CONTACT).await;
    assert_eq!(entry.source, shared::model::DispatchSource::Queue);
    assert_eq!(
        f.final_state(CONTACT).await,
        state(CrmSyncStatus::Synced, 2, None)
    );
}

/// Issue 21 point 3: provisioning seals the CRM access token; the stored account holds no
/// plaintext token, and the sync still sends the real one.
async fn the_stored_account_holds_the_access_token_only_sealed(backend: Backend) {
    let f = fixture(backend).await;
    let account = f.store.get_account(id(ACCOUNT)).await.unwrap().unwrap();
    let stored = serde_json::to_string(&account).unwrap();
    assert!(!stored.contains(TOKEN), "{stored}");
    assert!(!stored.contains("0d7c4f1e"), "{stored}");
    let sealed = account.crm.unwrap().access_token;
    assert!(sealed.as_str().starts_with("local:"), "{sealed:?}");
    f.dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        f.fake.requests()[0].headers["authorization"],
        format!("Bearer {TOKEN}")
    );
}

async fn a_duplicate_retry_is_dropped_and_a_final_state_never_changes(backend: Backend) {
    // Delays long enough that the retry's timer never fires during the test.
    let f = fixture_with(backend, RetryDelays::parse("600,600,600").unwrap(), |_| {}).await;
    f.fake.push(Scripted::status(503));
    f.dispatch(ROUTER, CONTACT).await;
    let item = CrmSync::due_id(&f.entry(CONTACT).await.key());
    let first = f.engine.due().run(&item, 1).await.unwrap();
    assert!(
        matches!(
            &first,
            RunOutcome::Ran(Ran {
                outcome: "synced",
                next: None,
                ..
            })
        ),
        "{first:?}"
    );
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Synced, 2, None))
    );
    assert_eq!(
        f.store.get_due(&item).await.unwrap(),
        None,
        "the work is over"
    );
    // The same hand-off again (a redelivery): nothing claimed, nothing sent, the state stays.
    let again = f.engine.due().run(&item, 1).await.unwrap();
    assert_eq!(again, RunOutcome::NotClaimed);
    assert_eq!(f.fake.requests().len(), 2);
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Synced, 2, None))
    );
}

/// A hand-off that keeps what it is given and delivers nothing (a queue whose messages the test
/// delivers, or loses, by hand).
#[derive(Default)]
struct Recorder(Mutex<Vec<DueMessage>>);

impl Recorder {
    fn take(&self) -> Vec<DueMessage> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

#[async_trait::async_trait]
impl Handoff for Recorder {
    async fn hand_off(&self, message: &DueMessage) -> Result<(), shared::error::BoxError> {
        self.0.lock().unwrap().push(message.clone());
        Ok(())
    }
    fn grace(&self) -> Duration {
        Duration::from_secs(60)
    }
    fn reach(&self) -> Option<Duration> {
        Some(shared::due::MAX_SQS_DELAY)
    }
}

/// The fixture's engine, with its due work handed to a [`Recorder`] (as to a queue).
fn queued(f: Fixture, store: Arc<dyn Store>) -> (Fixture, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let worker = DueWorker::new(
        store.clone(),
        f.clock.clone(),
        DueSettings::default(),
        recorder.clone(),
    );
    let engine = DispatchEngine::new(
        store.clone(),
        f.clock.clone(),
        Arc::new(CatalogueCache::default()),
    )
    .with_due(worker)
    .with_crm(CrmSync::new(
        Arc::new(HubSpotClient::new(shared::outbound::OutboundPolicy::LOCAL).unwrap()),
        store.clone(),
        f.clock.clone(),
        quick(),
        Arc::new(LocalSealer::development()),
    ));
    (Fixture { engine, store, ..f }, recorder)
}

async fn a_retry_message_received_early_is_postponed_on_the_queue(backend: Backend) {
    let f = fixture_with(backend, RetryDelays::parse("600,600,600").unwrap(), |_| {}).await;
    let store = f.store.clone();
    let (f, recorder) = queued(f, store);
    f.fake.push(Scripted::status(503));
    f.dispatch(ROUTER, CONTACT).await;
    // The first retry was handed on, due after the first delay (0.3 s).
    let handed = recorder.take();
    assert_eq!(handed.len(), 1, "{handed:?}");
    assert_eq!(handed[0].attempt, 1);
    // A copy that arrives 30 minutes early is handed on again, nothing sent before it is due.
    let early = DueMessage {
        due_at: f.clock.now_utc() + chrono::Duration::minutes(30),
        ..handed[0].clone()
    };
    let outcome = f.engine.due().receive(&early).await.unwrap();
    assert_eq!(outcome, RunOutcome::Postponed);
    assert_eq!(recorder.take(), vec![early.clone()]);
    assert_eq!(f.fake.requests().len(), 1, "nothing sent before it is due");
    // Once due, it runs.
    f.clock.set(early.due_at);
    let outcome = f.engine.due().receive(&early).await.unwrap();
    assert!(
        matches!(
            &outcome,
            RunOutcome::Ran(Ran {
                outcome: "synced",
                ..
            })
        ),
        "{outcome:?}"
    );
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Synced, 2, None))
    );
}

async fn an_attempt_lost_after_the_commit_is_resumed_by_the_sweeper(backend: Backend) {
    let f = fixture(backend).await;
    let faulty = Arc::new(FaultyStore::new(f.store.clone()));
    let (f, recorder) = queued(f, faulty.clone());
    // The process "dies" after the first CRM request, before its outcome is stored.
    faulty
        .faults
        .crm_sync_updates_fail
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    assert_eq!(crm_error(&outcome), None, "the CRM took it");
    faulty
        .faults
        .crm_sync_updates_fail
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let entry = f.entry(CONTACT).await;
    assert_eq!(entry.crm_sync, Some(CrmSyncState::pending()));
    let item = CrmSync::due_id(&entry.key());
    assert!(
        f.store.get_due(&item).await.unwrap().is_some(),
        "the work is stored"
    );
    // Nothing resumes it while the dead process's lease holds.
    assert_eq!(f.engine.due().sweep(10).await.unwrap().found, 0);
    f.clock
        .set(f.clock.now_utc() + chrono::Duration::seconds(61));
    let report = f.engine.due().sweep(10).await.unwrap();
    assert_eq!((report.found, report.handed_on), (1, 1));
    for message in recorder.take() {
        f.engine.due().receive(&message).await.unwrap();
    }
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Synced, 1, None))
    );
    assert_eq!(f.store.get_due(&item).await.unwrap(), None);
    assert_eq!(f.fake.requests().len(), 2, "the lost attempt is made again");
}

async fn a_retry_whose_hand_off_was_lost_is_resumed_by_the_sweeper_once(backend: Backend) {
    let f = fixture(backend).await;
    let store = f.store.clone();
    let (f, recorder) = queued(f, store);
    f.fake.push(Scripted::status(503));
    f.dispatch(ROUTER, CONTACT).await;
    let entry = f.entry(CONTACT).await;
    assert_eq!(
        entry.crm_sync,
        Some(state(
            CrmSyncStatus::Retrying,
            1,
            Some("CRM answered 503: ")
        ))
    );
    // The retry's message is lost (the process died after the state write, or SQS lost it).
    let lost = recorder.take();
    assert_eq!(lost.len(), 1);
    // Not resumed before its due time plus the hand-off's grace.
    f.clock
        .set(f.clock.now_utc() + chrono::Duration::seconds(30));
    assert_eq!(f.engine.due().sweep(10).await.unwrap().found, 0);
    f.clock
        .set(f.clock.now_utc() + chrono::Duration::seconds(31));
    let report = f.engine.due().sweep(10).await.unwrap();
    assert_eq!((report.found, report.handed_on), (1, 1));
    assert!(
        report.oldest_overdue[&shared::model::due::DueKind::CrmSync] >= Duration::from_secs(60)
    );
    // A second sweeper right after finds nothing to hand on.
    assert_eq!(f.engine.due().sweep(10).await.unwrap().handed_on, 0);
    let resumed = recorder.take();
    assert_eq!(resumed, lost, "the same item and attempt");
    f.engine.due().receive(&resumed[0]).await.unwrap();
    // The lost message turns up after all (a late duplicate): nothing more happens.
    assert_eq!(
        f.engine.due().receive(&lost[0]).await.unwrap(),
        RunOutcome::NotClaimed
    );
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Synced, 2, None))
    );
    assert_eq!(f.fake.requests().len(), 2, "one request per attempt");
}

/// The access token appears in no log line, at any level, even when the CRM echoes it.
#[tokio::test]
async fn the_access_token_never_reaches_a_log_line() {
    let logs = Arc::new(Mutex::new(Vec::<u8>::new()));
    let writer = {
        let logs = logs.clone();
        move || LogWriter(logs.clone())
    };
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(writer)
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let f = fixture_with(Backend::Memory, quick(), |_| {}).await;
    f.fake
        .push(Scripted::status(401).body(json!({"message": format!("bad token {TOKEN}")})));
    f.fake
        .push(Scripted::status(503).body(Value::String(format!("Bearer {TOKEN}"))));
    f.dispatch(ROUTER, CONTACT).await;
    f.dispatch(ROUTER, CONTACT).await;
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(text.contains("CRM sync state"), "the sync logged: {text}");
    assert!(
        !text.contains(TOKEN),
        "the token leaked into the logs:\n{text}"
    );
    assert!(
        !text.contains("0d7c4f1e"),
        "a part of the token leaked:\n{text}"
    );
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `FixedClock::now` through the trait, for readability above.
trait NowUtc {
    fn now_utc(&self) -> chrono::DateTime<Utc>;
}

impl NowUtc for FixedClock {
    fn now_utc(&self) -> chrono::DateTime<Utc> {
        shared::clock::Clock::now(self)
    }
}
