//! CRM sync (BEHAVIOR 7) against an in-process fake HubSpot (`infra/fake-crm`, which answers as
//! HubSpot documents and validates every request against HubSpot's published description), on
//! the embedded store and on DynamoDB (emulator): the request, every row of the `crm_error`
//! table, the timeout, retries that end `synced`, `superseded` and `failed`, `Retry-After`, the
//! sync state on the history entry, routers without `has_integration`, the queue path, the
//! secrets kept out of answers, errors and logs; and HubSpot as it is (BEHAVIOR 7): owners found by
//! e-mail, OAuth apps, 423, 477 and `DAILY` 429s, the per-account pace, `idProperty`.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;
use chrono::{TimeZone, Utc};
use common::Backend;
use fake_crm::portal::{OAuthApp, Object, Owner, PortalSpec, PrivateApp};
use fake_crm::{FakeCrm, Scripted};
use serde_json::{json, Value};
use shared::clock::FixedClock;
use shared::crm::attempt::KeepFor;
use shared::crm::{CrmSettings, CrmSync, HttpCrm, RetryDelays};
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
const SECOND: &str = "01936b2a-7c00-7a00-8000-000000000004";
/// The account's CRM token (a private app's); the fake echoes it back in some tests.
const TOKEN: &str = "pat-na1-0d7c4f1e-secret-token";
/// The OAuth app of the OAuth connection.
const APP: &str = "routing-app-7741";
const APP_SECRET: &str = "app-secret-3f9a1c77";
const REFRESH: &str = "refresh-na1-8e2b-5c4d";
/// The contact's HubSpot object id (its `external_id`).
const OBJECT: &str = "5101";
/// The second contact's.
const SECOND_OBJECT: &str = "5102";
/// A unique property value of the contact's: a space and a slash, so the path segment must be
/// encoded (sent with `idProperty=legacy_id`).
const LEGACY_ID: &str = "hs c/1";
/// HubSpot owners of the members.
const OWNER_1: &str = "71000001";
const OWNER_2: &str = "71000002";
const NOX_OWNER: &str = "71000003";

fn id<T: From<Uuid>>(text: &str) -> T {
    Uuid::parse_str(text).unwrap().into()
}

fn seed(base_url: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let member = |n: u128, email: &str, external: Option<&str>| json!({"id": Uuid::from_u128(0x1000 + n), "email": email, "external_id": external});
    let mut s = json!({"accounts": [{
        "id": ACCOUNT, "name": "Acme", "active": true,
        "crm": {"provider": "hubspot", "base_url": base_url, "access_token": TOKEN},
        "users": [
            member(1, "m1@acme.example", Some(OWNER_1)),
            member(2, "m2@acme.example", Some(OWNER_2)),
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
            {"id": CONTACT, "fields": {"email": "lead@prospect.example", "external_id": OBJECT}},
            {"id": NO_EXTERNAL_ID, "fields": {"email": "bare@prospect.example"}},
            {"id": SECOND, "fields": {"email": "second@prospect.example", "external_id": SECOND_OBJECT}}
        ]}
    }]});
    edit(&mut s);
    s
}

/// Routes the synced router to `email` only.
fn route_to(s: &mut Value, email: &str) {
    s["accounts"][0]["routers"][0]["users"] = json!([{ "email": email }]);
}

/// The connection becomes the OAuth app's (same base URL).
fn oauth(s: &mut Value) {
    let base = s["accounts"][0]["crm"]["base_url"].clone();
    s["accounts"][0]["crm"] = json!({"provider": "hubspot", "base_url": base,
        "oauth": {"client_id": APP, "client_secret": APP_SECRET, "refresh_token": REFRESH}});
}

/// The customer's HubSpot portal: the private app and the OAuth app of the connection, the
/// members' owners (and a deactivated one), the contacts.
fn portal() -> PortalSpec {
    let owner = |id: &str, email: &str, archived: bool| Owner {
        id: id.into(),
        email: Some(email.into()),
        first_name: None,
        last_name: None,
        user_id: Some(9000),
        archived,
    };
    let scopes = ["crm.objects.contacts.write", "crm.objects.owners.read"].map(String::from);
    let contact = |id: &str, email: &str, legacy: &str| Object {
        id: id.into(),
        properties: [("email", email), ("legacy_id", legacy)]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into(),
    };
    PortalSpec {
        private_apps: vec![PrivateApp {
            token: TOKEN.into(),
            scopes: scopes.to_vec(),
        }],
        oauth_apps: vec![OAuthApp {
            client_id: APP.into(),
            client_secret: APP_SECRET.into(),
            refresh_token: REFRESH.into(),
            scopes: scopes.to_vec(),
            expires_in: 1800,
        }],
        owners: vec![
            owner("71000000", "nox@acme.example", true),
            owner(OWNER_1, "m1@acme.example", false),
            owner(OWNER_2, "m2@acme.example", false),
            owner(NOX_OWNER, "nox@acme.example", false),
        ],
        objects: [(
            "contacts".to_string(),
            vec![
                contact(OBJECT, "lead@prospect.example", LEGACY_ID),
                contact(SECOND_OBJECT, "second@prospect.example", "hs-2"),
            ],
        )]
        .into(),
        burst_limit: None,
    }
}

shared::on_both_stores!(
    a_synced_assignment_sends_hubspots_request_and_is_recorded_synced,
    a_missing_connection_or_record_external_id_fails_at_once_without_a_request,
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
    a_member_without_external_id_is_matched_by_email_with_one_lookup_an_hour,
    no_active_owner_with_the_members_email_is_final_and_not_remembered,
    owner_lookups_follow_the_paging_cursor,
    an_invalid_owner_id_from_the_owners_api_is_looked_up_once_more_and_sent_once_more,
    an_invalid_owner_id_typed_as_external_id_is_final,
    a_missing_scope_is_final_with_hubspots_message,
    an_oauth_connection_refreshes_its_token_once_shares_it_and_refreshes_again_on_a_401,
    an_oauth_token_is_replaced_60_seconds_before_it_expires,
    a_refused_refresh_is_final_and_no_oauth_secret_leaks,
    the_stored_account_holds_the_oauth_secrets_only_sealed,
    a_423_is_retried_after_at_least_2_seconds_and_a_477_after_its_retry_after,
    a_daily_429_waits_at_least_60_seconds_without_spending_a_retry,
    a_daily_429_without_retry_after_waits_until_the_next_midnight_utc,
    a_request_whose_turn_is_more_than_3_seconds_away_is_deferred,
    an_account_sends_at_most_10_requests_a_second,
    two_instances_on_one_store_share_the_accounts_pace,
    the_first_attempt_has_3_seconds_in_all_and_the_rest_continues_in_the_background,
    a_token_lifetime_beyond_any_clock_is_kept_at_most_24_hours,
    a_huge_error_message_is_cut_to_200_characters_after_redaction,
    a_record_external_id_that_is_a_dot_segment_is_refused_before_any_request,
    an_id_property_goes_out_as_hubspots_id_property_parameter,
    every_request_the_sync_sends_validates_against_hubspots_description,
);

/// Fails the test when the fake received a request that does not validate against HubSpot's
/// published description: every test of this suite checks it at its end.
struct Validated(FakeCrm);

impl Drop for Validated {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let violations = self.0.violations();
        assert!(
            violations.is_empty(),
            "requests that HubSpot's description does not allow: {violations:#?}"
        );
    }
}

struct Fixture {
    store: Arc<dyn Store>,
    engine: DispatchEngine,
    fake: FakeCrm,
    clock: Arc<FixedClock>,
    _validated: Validated,
}

/// Delays short enough for tests; the same rules as `30,300,1800`.
fn quick() -> RetryDelays {
    RetryDelays::parse("0.3,0.3,0.3").unwrap()
}

async fn fixture_with(
    backend: Backend, delays: RetryDelays, edit: impl FnOnce(&mut Value),
) -> Fixture {
    fixture_set(backend, delays, CrmSettings::default(), edit).await
}

async fn fixture_set(
    backend: Backend, delays: RetryDelays, settings: CrmSettings, edit: impl FnOnce(&mut Value),
) -> Fixture {
    let (fake, base) = FakeCrm::start_with(portal()).await.unwrap();
    fixture_on_with(backend, delays, settings, fake, &base, edit).await
}

async fn fixture_on(
    backend: Backend, delays: RetryDelays, fake: FakeCrm, base: &str, edit: impl FnOnce(&mut Value),
) -> Fixture {
    fixture_on_with(backend, delays, CrmSettings::default(), fake, base, edit).await
}

fn client(settings: CrmSettings, pace: Arc<dyn shared::store::PaceStore>) -> Arc<HttpCrm> {
    let http = shared::outbound::OutboundClient::new(
        shared::outbound::OutboundPolicy::LOCAL,
        shared::crm::port::REQUEST_TIMEOUT,
        64 * 1024,
    )
    .unwrap();
    Arc::new(HttpCrm::with_settings(http, settings, pace))
}

async fn fixture_on_with(
    backend: Backend, delays: RetryDelays, settings: CrmSettings, fake: FakeCrm, base: &str,
    edit: impl FnOnce(&mut Value),
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
        client(settings, store.clone()),
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
        _validated: Validated(fake.clone()),
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

    /// The owners API requests received.
    fn lookups(&self) -> Vec<fake_crm::Recorded> {
        self.fake.requests_to("/crm/v3/owners")
    }

    /// The token requests received.
    fn token_requests(&self) -> Vec<fake_crm::Recorded> {
        self.fake.requests_to("/oauth/v1/token")
    }

    /// The owner HubSpot holds for `object`.
    fn hubspot_owner(&self, object: &str) -> Option<String> {
        self.fake.property("contacts", object, "hubspot_owner_id")
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
    assert_eq!(r.path, "/crm/v3/objects/contacts/5101");
    assert_eq!(r.query, None);
    assert_eq!(r.headers["authorization"], format!("Bearer {TOKEN}"));
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.body, json!({"properties": {"hubspot_owner_id": OWNER_1}}));
    assert_eq!(
        f.hubspot_owner(OBJECT).as_deref(),
        Some(OWNER_1),
        "HubSpot holds it"
    );
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Synced, 1, None))
    );
}

async fn a_missing_connection_or_record_external_id_fails_at_once_without_a_request(
    backend: Backend,
) {
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
    // HubSpot has no object with the record's id.
    let f = fixture_with(backend, quick(), |s| {
        s["accounts"][0]["records"]["contacts"][0]["fields"]["external_id"] = json!("990017");
    })
    .await;
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    let expected = "CRM answered 404: Object not found.  objectId are usually numeric.";
    assert_eq!(crm_error(&outcome).as_deref(), Some(expected));
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(f.fake.requests().len(), 1, "no retry after a 404");
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Failed, 1, Some(expected)))
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
    let fake = FakeCrm::with_portal(portal());
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

/// BEHAVIOR 7: provisioning seals the CRM access token; the stored account holds no
/// plaintext token, and the sync still sends the real one.
async fn the_stored_account_holds_the_access_token_only_sealed(backend: Backend) {
    let f = fixture(backend).await;
    let account = f.store.get_account(id(ACCOUNT)).await.unwrap().unwrap();
    let stored = serde_json::to_string(&account).unwrap();
    assert!(!stored.contains(TOKEN), "{stored}");
    assert!(!stored.contains("0d7c4f1e"), "{stored}");
    let shared::model::account::SealedCrmCredentials::PrivateApp {
        access_token: sealed,
    } = account.crm.unwrap().credentials
    else {
        panic!("not a private app's connection");
    };
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
        Arc::new(HttpCrm::new(shared::outbound::OutboundPolicy::LOCAL, store.clone()).unwrap()),
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

/// Contacts `n` of the pace test: record ids and their HubSpot objects.
fn paced_contact(n: u128) -> (String, String) {
    (
        Uuid::from_u128(0x01936b2a_7c00_7a00_8000_000000000100 + n).to_string(),
        (6000 + n).to_string(),
    )
}

async fn a_member_without_external_id_is_matched_by_email_with_one_lookup_an_hour(
    backend: Backend,
) {
    assert_eq!(
        KeepFor::default().owner_ttl,
        Duration::from_secs(3600),
        "remembered at most an hour"
    );
    let settings = CrmSettings {
        keep: KeepFor {
            owner_ttl: Duration::from_millis(1500),
            ..KeepFor::default()
        },
        ..CrmSettings::default()
    };
    let f = fixture_set(backend, quick(), settings, |s| {
        route_to(s, "nox@acme.example")
    })
    .await;
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    assert_eq!(crm_error(&f.dispatch(ROUTER, SECOND).await), None);
    let lookups = f.lookups();
    assert_eq!(lookups.len(), 1, "one lookup for two syncs: {lookups:?}");
    assert_eq!(lookups[0].method, "GET");
    assert_eq!(
        lookups[0].query.as_deref(),
        Some("email=nox%40acme.example")
    );
    assert_eq!(
        lookups[0].headers["authorization"],
        format!("Bearer {TOKEN}")
    );
    let updates = f.fake.owner_updates();
    assert_eq!(updates.len(), 2);
    for update in &updates {
        assert_eq!(
            update.body,
            json!({"properties": {"hubspot_owner_id": NOX_OWNER}}),
            "the active owner, not the archived one"
        );
    }
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Synced, 1, None))
    );
    // Once the owner is older than its time, it is looked up again.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    assert_eq!(f.lookups().len(), 2);
}

async fn no_active_owner_with_the_members_email_is_final_and_not_remembered(backend: Backend) {
    let f = fixture_with(backend, quick(), |s| {
        s["accounts"][0]["users"]
            .as_array_mut()
            .unwrap()
            .push(json!({"id": Uuid::from_u128(0x1009), "email": "ghost@acme.example"}));
        route_to(s, "ghost@acme.example");
    })
    .await;
    // HubSpot knows the e-mail only as a deactivated (archived) owner.
    f.fake.add_owner("71000099", "ghost@acme.example");
    f.fake.archive_owner("71000099");
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    let expected = "No HubSpot owner with the member's e-mail";
    assert_eq!(crm_error(&outcome).as_deref(), Some(expected));
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Failed, 0, Some(expected))),
        "final at once; a look-up is no update (BEHAVIOR 7 attempts)"
    );
    assert!(f.fake.owner_updates().is_empty());
    assert_eq!(f.lookups().len(), 1);
    // Not remembered: the next assignment to them asks again, and an owner added in HubSpot
    // since is found (BEHAVIOR 7).
    assert_eq!(
        crm_error(&f.dispatch(ROUTER, SECOND).await).as_deref(),
        Some(expected)
    );
    assert_eq!(f.lookups().len(), 2, "asked again");
    f.fake.add_owner("71000100", "ghost@acme.example");
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    assert_eq!(f.lookups().len(), 3);
    assert_eq!(f.hubspot_owner(OBJECT).as_deref(), Some("71000100"));
}

async fn owner_lookups_follow_the_paging_cursor(backend: Backend) {
    let f = fixture_with(backend, quick(), |s| route_to(s, "nox@acme.example")).await;
    // HubSpot's first page holds nobody and points on.
    f.fake.push(
        Scripted::status(200)
            .body(json!({"results": [], "paging": {"next": {"after": "0", "link": "?after=0"}}}))
            .on("GET", "/crm/v3/owners"),
    );
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    let lookups = f.lookups();
    assert_eq!(lookups.len(), 2, "{lookups:?}");
    assert_eq!(
        lookups[1].query.as_deref(),
        Some("email=nox%40acme.example&after=0")
    );
    assert_eq!(f.hubspot_owner(OBJECT).as_deref(), Some(NOX_OWNER));
}

async fn an_invalid_owner_id_from_the_owners_api_is_looked_up_once_more_and_sent_once_more(
    backend: Backend,
) {
    let f = fixture_with(backend, quick(), |s| route_to(s, "nox@acme.example")).await;
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    assert_eq!(f.hubspot_owner(OBJECT).as_deref(), Some(NOX_OWNER));
    // The user is deactivated and invited again: a new owner with the same e-mail.
    f.fake.archive_owner(NOX_OWNER);
    f.fake.add_owner("71000013", "nox@acme.example");
    assert_eq!(crm_error(&f.dispatch(ROUTER, SECOND).await), None);
    let updates = f.fake.owner_updates();
    let owners: Vec<&Value> = updates
        .iter()
        .map(|u| &u.body["properties"]["hubspot_owner_id"])
        .collect();
    assert_eq!(owners, [NOX_OWNER, NOX_OWNER, "71000013"], "one resend");
    assert_eq!(f.lookups().len(), 2, "one lookup more");
    assert_eq!(f.hubspot_owner(SECOND_OBJECT).as_deref(), Some("71000013"));
    assert_eq!(
        f.entry(SECOND).await.crm_sync,
        Some(state(CrmSyncStatus::Synced, 2, None)),
        "the resend is counted (BEHAVIOR 7 attempts)"
    );
}

async fn an_invalid_owner_id_typed_as_external_id_is_final(backend: Backend) {
    let f = fixture_with(backend, quick(), |s| route_to(s, "m2@acme.example")).await;
    f.fake.archive_owner(OWNER_2);
    let error = crm_error(&f.dispatch(ROUTER, CONTACT).await).unwrap();
    assert!(
        error.starts_with("CRM answered 400: Property values were not valid")
            && error.contains("INVALID_OWNER_ID"),
        "{error}"
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(f.fake.owner_updates().len(), 1, "no resend, no retry");
    assert!(
        f.lookups().is_empty(),
        "the customer typed it: nothing to look up"
    );
    assert_eq!(
        f.entry(CONTACT).await.crm_sync.unwrap().status,
        CrmSyncStatus::Failed
    );
}

async fn a_missing_scope_is_final_with_hubspots_message(backend: Backend) {
    let f = fixture_with(backend, quick(), |s| route_to(s, "nox@acme.example")).await;
    f.fake.portal(|p| {
        p.spec_mut().private_apps[0].scopes = vec!["crm.objects.contacts.write".into()];
    });
    let expected = "CRM answered 403: This app hasn't been granted all required scopes to make this call. Read more about required scopes here: https://developers.hubspot.com/scopes.";
    assert_eq!(
        crm_error(&f.dispatch(ROUTER, CONTACT).await).as_deref(),
        Some(expected)
    );
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Failed, 0, Some(expected))),
        "a refused look-up is no update (BEHAVIOR 7 attempts)"
    );
    assert!(f.fake.owner_updates().is_empty());
}

async fn an_oauth_connection_refreshes_its_token_once_shares_it_and_refreshes_again_on_a_401(
    backend: Backend,
) {
    let f = fixture_with(backend, quick(), oauth).await;
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    assert_eq!(crm_error(&f.dispatch(ROUTER, SECOND).await), None);
    let tokens = f.token_requests();
    assert_eq!(tokens.len(), 1, "one refresh for two syncs");
    let grant = &tokens[0];
    assert_eq!(grant.method, "POST");
    assert_eq!(
        grant.headers["content-type"],
        "application/x-www-form-urlencoded"
    );
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(grant.raw_body.as_bytes())
            .into_owned()
            .collect();
    assert_eq!(form["grant_type"], "refresh_token");
    assert_eq!(form["client_id"], APP);
    assert_eq!(form["client_secret"], APP_SECRET);
    assert_eq!(form["refresh_token"], REFRESH);
    let updates = f.fake.owner_updates();
    let bearer = format!("Bearer fake-oauth-{APP}-1");
    assert!(updates.iter().all(|u| u.headers["authorization"] == bearer));
    // HubSpot expires the token early: the 401 refreshes once and the update is sent once more.
    f.fake.portal(|p| p.expire_tokens());
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    assert_eq!(f.token_requests().len(), 2);
    let updates = f.fake.owner_updates();
    assert_eq!(updates.len(), 4, "the refused update and its resend");
    assert_eq!(updates[2].headers["authorization"], bearer);
    assert_eq!(
        updates[3].headers["authorization"],
        format!("Bearer fake-oauth-{APP}-2")
    );
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(CrmSyncStatus::Synced, 2, None)),
        "the resend is counted (BEHAVIOR 7 attempts)"
    );
}

async fn an_oauth_token_is_replaced_60_seconds_before_it_expires(backend: Backend) {
    let f = fixture_with(backend, quick(), oauth).await;
    // Tokens of 61 s: kept for 1 s.
    f.fake
        .portal(|p| p.spec_mut().oauth_apps[0].expires_in = 61);
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    assert_eq!(crm_error(&f.dispatch(ROUTER, SECOND).await), None);
    assert_eq!(f.token_requests().len(), 1);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    assert_eq!(f.token_requests().len(), 2, "replaced before it expired");
    assert_eq!(f.fake.owner_updates().len(), 3, "no update was refused");
}

async fn a_refused_refresh_is_final_and_no_oauth_secret_leaks(backend: Backend) {
    let f = fixture_with(backend, quick(), |s| {
        oauth(s);
        s["accounts"][0]["crm"]["oauth"]["refresh_token"] = json!("refresh-na1-revoked-9d0e");
    })
    .await;
    // The token endpoint is down once, and echoes the client secret.
    f.fake.push(
        Scripted::status(503)
            .hubspot_error("INTERNAL_ERROR", &format!("bad secret {APP_SECRET}"))
            .on("POST", "/oauth/v1/token"),
    );
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM answered 503: bad secret [REDACTED]"),
        "a token endpoint that is down is retried"
    );
    // The retry meets HubSpot's refusal of the revoked refresh token: final.
    assert_eq!(
        f.final_state(CONTACT).await,
        state(CrmSyncStatus::Failed, 0, Some("CRM authorization failed")),
        "token grants are no updates (BEHAVIOR 7 attempts)"
    );
    assert!(f.fake.owner_updates().is_empty());
    let entry = serde_json::to_string(&f.entry(CONTACT).await).unwrap();
    let answer = serde_json::to_string(&outcome.answer()).unwrap();
    for text in [entry, answer] {
        for secret in [APP_SECRET, "refresh-na1-revoked-9d0e"] {
            assert!(!text.contains(secret), "{text}");
        }
    }
}

async fn the_stored_account_holds_the_oauth_secrets_only_sealed(backend: Backend) {
    let f = fixture_with(backend, quick(), oauth).await;
    let account = f.store.get_account(id(ACCOUNT)).await.unwrap().unwrap();
    let stored = serde_json::to_string(&account).unwrap();
    for secret in [APP_SECRET, REFRESH] {
        assert!(!stored.contains(secret), "{stored}");
    }
    match account.crm.unwrap().credentials {
        shared::model::account::SealedCrmCredentials::OAuth { oauth } => {
            assert_eq!(oauth.client_id, APP);
            assert!(oauth.client_secret.as_str().starts_with("local:"));
            assert!(oauth
                .refresh_token
                .as_ref()
                .unwrap()
                .as_str()
                .starts_with("local:"));
        }
        other => panic!("not an OAuth connection: {other:?}"),
    }
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
}

async fn a_423_is_retried_after_at_least_2_seconds_and_a_477_after_its_retry_after(
    backend: Backend,
) {
    let f = fixture(backend).await;
    f.fake.push(
        Scripted::status(423)
            .hubspot_error("LOCKED", "The portal is locked while it syncs.")
            .for_updates(),
    );
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM answered 423: The portal is locked while it syncs.")
    );
    assert_eq!(
        f.final_state(CONTACT).await,
        state(CrmSyncStatus::Synced, 2, None)
    );
    let updates = f.fake.owner_updates();
    let gap = updates[1].at_ms - updates[0].at_ms;
    assert!(gap >= 1950, "the retry came {gap} ms after the 423");

    f.fake.push(
        Scripted::status(477)
            .hubspot_error("MIGRATION_IN_PROGRESS", "Migration in progress")
            .retry_after("3")
            .for_updates(),
    );
    let outcome = f.dispatch(ROUTER, SECOND).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM answered 477: Migration in progress")
    );
    assert_eq!(
        f.final_state(SECOND).await,
        state(CrmSyncStatus::Synced, 2, None)
    );
    let updates = f.fake.owner_updates();
    let gap = updates[3].at_ms - updates[2].at_ms;
    assert!(
        gap >= 2900,
        "the retry came {gap} ms after the 477 (Retry-After: 3)"
    );
}

fn daily_limit() -> Scripted {
    Scripted::status(429)
        .body(json!({
            "status": "error",
            "message": "You have reached your daily limit.",
            "errorType": "RATE_LIMIT",
            "correlationId": "aeb5f871-7f07-4993-9211-075dc63e7cbf",
            "policyName": "DAILY",
            "groupName": "private-app:1"
        }))
        .for_updates()
}

/// BEHAVIOR 7 "Rate limits": a `DAILY` 429 waits for its `Retry-After` and at least 60 s (a
/// `Retry-After` of 0 or in the past waits 60 s, never a loop of immediate retries), and the
/// wait spends none of the retries.
async fn a_daily_429_waits_at_least_60_seconds_without_spending_a_retry(backend: Backend) {
    let now = Utc.with_ymd_and_hms(2026, 11, 18, 10, 0, 0).unwrap();
    let past = httpdate::fmt_http_date(std::time::SystemTime::UNIX_EPOCH);
    for (retry_after, wait) in [("0", 60), (past.as_str(), 60), ("600", 600)] {
        let f = fixture(backend).await;
        f.fake.push(daily_limit().retry_after(retry_after));
        let outcome = f.dispatch(ROUTER, CONTACT).await;
        assert_eq!(
            crm_error(&outcome).as_deref(),
            Some("CRM answered 429: You have reached your daily limit.")
        );
        let entry = f.entry(CONTACT).await;
        assert_eq!(
            entry.crm_sync.as_ref().map(|s| s.status),
            Some(CrmSyncStatus::Retrying)
        );
        let item = f
            .store
            .get_due(&CrmSync::due_id(&entry.key()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            item.due_at,
            now + chrono::Duration::seconds(wait),
            "Retry-After: {retry_after}"
        );
        let subject: shared::crm::sync::SyncSubject = serde_json::from_value(item.subject).unwrap();
        assert_eq!(subject.attempts, Some(1));
        assert_eq!(subject.retries, Some(0), "no retry spent");
    }
    // A 503 spends one, for comparison.
    let f = fixture(backend).await;
    f.fake.push(
        Scripted::status(503)
            .body(json!({"message": "down"}))
            .for_updates(),
    );
    f.dispatch(ROUTER, CONTACT).await;
    let entry = f.entry(CONTACT).await;
    let item = f
        .store
        .get_due(&CrmSync::due_id(&entry.key()))
        .await
        .unwrap()
        .unwrap();
    let subject: shared::crm::sync::SyncSubject = serde_json::from_value(item.subject).unwrap();
    assert_eq!(subject.retries, Some(1));
}

async fn a_daily_429_without_retry_after_waits_until_the_next_midnight_utc(backend: Backend) {
    let f = fixture(backend).await;
    f.fake.push(daily_limit());
    f.dispatch(ROUTER, CONTACT).await;
    let entry = f.entry(CONTACT).await;
    assert_eq!(
        entry.crm_sync,
        Some(state(
            CrmSyncStatus::Retrying,
            1,
            Some("CRM answered 429: You have reached your daily limit.")
        ))
    );
    let item = f
        .store
        .get_due(&CrmSync::due_id(&entry.key()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        item.due_at,
        Utc.with_ymd_and_hms(2026, 11, 19, 0, 0, 0).unwrap(),
        "the clock says 2026-11-18T10:00Z"
    );
}

async fn a_request_whose_turn_is_more_than_3_seconds_away_is_deferred(backend: Backend) {
    let f = fixture(backend).await;
    // HubSpot says the portal's burst allowance is spent for the next 3.5 s.
    f.fake.push(
        Scripted::status(200)
            .header("X-HubSpot-RateLimit-Max", "100")
            .header("X-HubSpot-RateLimit-Remaining", "0")
            .header("X-HubSpot-RateLimit-Interval-Milliseconds", "3500")
            .for_updates(),
    );
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    let started = std::time::Instant::now();
    let outcome = f.dispatch(ROUTER, SECOND).await;
    // Waiting for the turn would take about 3.5 s; a dispatch on the emulator of a loaded 2-core
    // machine can take most of a second on its own, so the bound sits between the two.
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "deferred at once, not waited for: {:?}",
        started.elapsed()
    );
    let deferred = "CRM rate limit: request deferred";
    assert_eq!(crm_error(&outcome).as_deref(), Some(deferred));
    assert_eq!(
        f.entry(SECOND).await.crm_sync,
        Some(state(CrmSyncStatus::Retrying, 0, Some(deferred))),
        "nothing sent"
    );
    assert_eq!(f.fake.owner_updates().len(), 1);
    assert_eq!(
        f.final_state(SECOND).await,
        state(CrmSyncStatus::Synced, 1, None)
    );
    let updates = f.fake.owner_updates();
    let gap = updates[1].at_ms - updates[0].at_ms;
    assert!(
        gap >= 3400,
        "sent {gap} ms after the portal's window was spent"
    );
}

async fn an_account_sends_at_most_10_requests_a_second(backend: Backend) {
    const N: u128 = 25;
    let f = fixture_with(backend, quick(), |s| {
        let contacts = s["accounts"][0]["records"]["contacts"]
            .as_array_mut()
            .unwrap();
        for n in 0..N {
            let (record, object) = paced_contact(n);
            let email = format!("paced{n}@prospect.example");
            contacts.push(json!({"id": record, "fields": {"email": email, "external_id": object}}));
        }
    })
    .await;
    for n in 0..N {
        let (_, object) = paced_contact(n);
        f.fake.add_object("contacts", Some(&object), &[]);
    }
    // A first sync opens the connection (a first request's way to the fake is slower).
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    tokio::time::sleep(Duration::from_millis(200)).await;
    f.fake.reset();
    let started = std::time::Instant::now();
    let mut set = tokio::task::JoinSet::new();
    let f = Arc::new(f);
    for n in 0..N {
        let f = f.clone();
        set.spawn(async move { crm_error(&f.dispatch(ROUTER, &paced_contact(n).0).await) });
    }
    while let Some(done) = set.join_next().await {
        assert_eq!(done.unwrap(), None);
    }
    let updates = f.fake.owner_updates();
    assert_eq!(updates.len(), N as usize);
    // Receive times at the fake: a request's way there (a busy machine's scheduling) may bring
    // it up to 100 ms closer to the next than it was sent.
    let times: Vec<u128> = updates.iter().map(|u| u.at_ms).collect();
    for (i, t) in times.iter().enumerate() {
        let within = times[i..].iter().filter(|u| **u < t + 900).count();
        assert!(
            within <= 10,
            "{within} requests in the second from {t}: {times:?}"
        );
    }
    assert!(started.elapsed() >= Duration::from_millis(2300));
}

/// BEHAVIOR 7 "Rate limits": the pace is the service's, not an instance's. Two instances (each
/// its own engine and CRM client, as two Lambda instances) on one store dispatch 30 synced
/// records of one account at once: the fake still receives at most 10 updates in any second.
async fn two_instances_on_one_store_share_the_accounts_pace(backend: Backend) {
    const N: u128 = 30;
    let f = fixture_with(backend, quick(), |s| {
        let contacts = s["accounts"][0]["records"]["contacts"]
            .as_array_mut()
            .unwrap();
        for n in 0..N {
            let (record, object) = paced_contact(n);
            let email = format!("paced{n}@prospect.example");
            contacts.push(json!({"id": record, "fields": {"email": email, "external_id": object}}));
        }
    })
    .await;
    for n in 0..N {
        let (_, object) = paced_contact(n);
        f.fake.add_object("contacts", Some(&object), &[]);
    }
    // The second instance: the same store and clock, an engine and a CRM client of its own.
    let other = DispatchEngine::new(
        f.store.clone(),
        f.clock.clone(),
        Arc::new(CatalogueCache::default()),
    )
    .with_crm(CrmSync::new(
        client(CrmSettings::default(), f.store.clone()),
        f.store.clone(),
        f.clock.clone(),
        quick(),
        Arc::new(LocalSealer::development()),
    ));
    let engines = [Arc::new(f.engine), Arc::new(other)];
    // A first sync of each instance opens its connection (a first request's way to the fake is
    // slower, and would reach it late, close to the next).
    for (engine, record) in engines.iter().zip([CONTACT, SECOND]) {
        let request = DispatchRequest {
            router_id: ROUTER.into(),
            object_id: record.into(),
            account_id: None,
        };
        let outcome = engine
            .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
            .await
            .unwrap();
        assert_eq!(crm_error(&outcome), None);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    f.fake.reset();
    let mut set = tokio::task::JoinSet::new();
    for n in 0..N {
        let engine = engines[(n % 2) as usize].clone();
        set.spawn(async move {
            let request = DispatchRequest {
                router_id: ROUTER.into(),
                object_id: paced_contact(n).0,
                account_id: None,
            };
            engine
                .dispatch(AccountContext::Token(id(ACCOUNT)), &request, None)
                .await
                .unwrap()
        });
    }
    while let Some(done) = set.join_next().await {
        done.unwrap();
    }
    // Every sync ends synced (the deferred ones through their retries).
    let fixture_store = f.store.clone();
    for n in 0..N {
        let record = paced_contact(n).0;
        let mut state = None;
        for _ in 0..300 {
            let entry = fixture_store
                .list_record_dispatches(
                    id::<AccountId>(ACCOUNT),
                    ObjectType::Contacts,
                    id::<RecordId>(&record),
                    &Page::first(1, false),
                )
                .await
                .unwrap()
                .items
                .into_iter()
                .next()
                .unwrap();
            state = entry.crm_sync.clone();
            if state.as_ref().is_some_and(|s| s.status.is_final()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            state.map(|s| s.status),
            Some(CrmSyncStatus::Synced),
            "{record}"
        );
    }
    let updates = f.fake.owner_updates();
    assert_eq!(updates.len(), N as usize, "each sent once");
    // Receive times at the fake: a request's way there (a busy machine's scheduling) may bring
    // it up to 100 ms closer to the next than it was sent.
    let mut times: Vec<u128> = updates.iter().map(|u| u.at_ms).collect();
    times.sort_unstable();
    for (i, t) in times.iter().enumerate() {
        let within = times[i..].iter().filter(|u| **u < t + 900).count();
        assert!(
            within <= 10,
            "{within} requests in the second from {t}: {times:?}"
        );
    }
}

async fn an_id_property_goes_out_as_hubspots_id_property_parameter(backend: Backend) {
    let legacy = |s: &mut Value| {
        s["accounts"][0]["records"]["contacts"][0]["fields"]["external_id"] = json!(LEGACY_ID);
    };
    // Without the connection's id property, the value goes out as an object id: 404.
    let f = fixture_with(backend, quick(), legacy).await;
    let error = crm_error(&f.dispatch(ROUTER, CONTACT).await).unwrap();
    assert!(error.starts_with("CRM answered 404"), "{error}");
    // With it, HubSpot finds the contact by that property.
    let f = fixture_with(backend, quick(), |s| {
        legacy(s);
        s["accounts"][0]["crm"]["id_properties"] = json!({"contacts": "legacy_id"});
    })
    .await;
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    let update = &f.fake.owner_updates()[0];
    assert_eq!(update.path, "/crm/v3/objects/contacts/hs%20c%2F1");
    assert_eq!(update.query.as_deref(), Some("idProperty=legacy_id"));
    assert_eq!(f.hubspot_owner(OBJECT).as_deref(), Some(OWNER_1));
}

async fn every_request_the_sync_sends_validates_against_hubspots_description(backend: Backend) {
    // An OAuth app, a member found by e-mail over two pages, a contact found by its id property.
    let f = fixture_with(backend, quick(), |s| {
        oauth(s);
        route_to(s, "nox@acme.example");
        s["accounts"][0]["records"]["contacts"][0]["fields"]["external_id"] = json!(LEGACY_ID);
        s["accounts"][0]["crm"]["id_properties"] = json!({"contacts": "legacy_id"});
    })
    .await;
    f.fake.push(
        Scripted::status(200)
            .body(json!({"results": [], "paging": {"next": {"after": "0"}}}))
            .on("GET", "/crm/v3/owners"),
    );
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    let requests = f.fake.requests();
    let kinds: Vec<(String, String)> = requests
        .iter()
        .map(|r| (r.method.clone(), r.path.clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("POST", "/oauth/v1/token"),
            ("GET", "/crm/v3/owners"),
            ("GET", "/crm/v3/owners"),
            ("PATCH", "/crm/v3/objects/contacts/hs%20c%2F1"),
        ]
        .map(|(m, p)| (m.to_string(), p.to_string()))
    );
    for r in &requests {
        assert!(r.violations.is_empty(), "{r:?}");
    }
    // The fake does check: a request HubSpot does not describe is refused and recorded.
    let (other, base) = FakeCrm::start_with(portal()).await.unwrap();
    let answer = reqwest::Client::new()
        .patch(format!(
            "{base}/crm/v3/objects/contacts/{OBJECT}?id_property=x"
        ))
        .bearer_auth(TOKEN)
        .json(&json!({"properties": {"hubspot_owner_id": 71000001}}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 400);
    let violations = other.violations();
    assert!(
        violations
            .iter()
            .any(|v| v.contains("query parameter id_property"))
            && violations.iter().any(|v| v.contains("body")),
        "{violations:?}"
    );
}

/// BEHAVIOR 7: the dispatch answer waits for the first attempt at most 3 s in all, counted from
/// the commit (token grant, owner look-up, update and resend together); what is not done by then
/// continues as a background retry, `CRM request timed out`.
async fn the_first_attempt_has_3_seconds_in_all_and_the_rest_continues_in_the_background(
    backend: Backend,
) {
    let f = fixture_with(backend, quick(), |s| {
        oauth(s);
        route_to(s, "nox@acme.example");
    })
    .await;
    // A slow HubSpot: the grant, the look-up and the update each take 2.5 s (each within its
    // own 3 s; 7.5 s together).
    for (method, path) in [
        ("POST", "/oauth/v1/token"),
        ("GET", "/crm/v3/owners"),
        ("PATCH", "/crm/v3/objects/"),
    ] {
        f.fake
            .push(Scripted::stall(Duration::from_millis(2500)).on(method, path));
    }
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    let answered_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let first_request = f.fake.requests()[0].at_ms;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM request timed out")
    );
    // From the first request (right after the commit) to the answer: 3 s and the state's
    // write, far from the 7.5 s the three requests take one after the other.
    let took = answered_ms - first_request;
    assert!(took < 5000, "answered {took} ms after the first request");
    assert_eq!(
        f.entry(CONTACT).await.crm_sync,
        Some(state(
            CrmSyncStatus::Retrying,
            0,
            Some("CRM request timed out")
        )),
        "no update was sent within the 3 s"
    );
    // The background retry keeps the token granted meanwhile and ends synced.
    assert_eq!(
        f.final_state(CONTACT).await,
        state(CrmSyncStatus::Synced, 1, None)
    );
    assert_eq!(f.token_requests().len(), 1);
    assert_eq!(f.hubspot_owner(OBJECT).as_deref(), Some(NOX_OWNER));
}

/// No CRM answer stops the process: a token answer's `expires_in` of 2^64 - 1 seconds (HubSpot's schema says
/// only "integer") overflowed the instant it was added to and stopped the process; it is clamped
/// to 24 h and added with checked arithmetic.
async fn a_token_lifetime_beyond_any_clock_is_kept_at_most_24_hours(backend: Backend) {
    let f = fixture_with(backend, quick(), oauth).await;
    f.fake
        .portal(|p| p.spec_mut().oauth_apps[0].expires_in = u64::MAX);
    assert_eq!(crm_error(&f.dispatch(ROUTER, CONTACT).await), None);
    assert_eq!(crm_error(&f.dispatch(ROUTER, SECOND).await), None);
    assert_eq!(f.token_requests().len(), 1, "the token is kept");
    assert_eq!(
        f.entry(SECOND).await.crm_sync,
        Some(state(CrmSyncStatus::Synced, 1, None))
    );
    assert_eq!(
        shared::crm::adapter::MAX_TOKEN_LIFETIME,
        Duration::from_secs(24 * 3600)
    );
}

/// BEHAVIOR 7: a `crm_error`'s detail is at most 200 characters, cut after the secrets are
/// redacted (a 65,000-character `message` made a 195 KB answer, history entry and webhook; a
/// token near the cut must not leave a piece of itself).
async fn a_huge_error_message_is_cut_to_200_characters_after_redaction(backend: Backend) {
    let f = fixture(backend).await;
    let message = format!("{}{TOKEN}{}", "x".repeat(190), "y".repeat(65_000));
    f.fake
        .push(Scripted::status(400).hubspot_error("VALIDATION_ERROR", &message));
    let outcome = f.dispatch(ROUTER, CONTACT).await;
    let error = crm_error(&outcome).unwrap();
    let detail = error.strip_prefix("CRM answered 400: ").unwrap();
    assert_eq!(detail.chars().count(), 200, "{error}");
    assert_eq!(detail, format!("{}[REDACTED]", "x".repeat(190)));
    let entry = f.entry(CONTACT).await;
    assert_eq!(
        entry.crm_sync.unwrap().error.as_deref(),
        Some(error.as_str())
    );
    // Not JSON: the body's first 200 characters, as before.
    let g = fixture(backend).await;
    g.fake
        .push(Scripted::status(500).body(Value::String("z".repeat(70_000))));
    let error = crm_error(&g.dispatch(ROUTER, CONTACT).await).unwrap();
    assert_eq!(error, format!("CRM answered 500: {}", "z".repeat(200)));
}

/// BEHAVIOR 7: a record `external_id` of `.` or `..` is a dot segment (the URL parser
/// resolves it: the PATCH went to `/crm/v3/objects/` and a 2xx counted as synced); it is
/// refused before any request, final.
async fn a_record_external_id_that_is_a_dot_segment_is_refused_before_any_request(
    backend: Backend,
) {
    for dots in [".", ".."] {
        let f = fixture_with(backend, quick(), |s| {
            s["accounts"][0]["records"]["contacts"][0]["fields"]["external_id"] = json!(dots);
        })
        .await;
        // The portal answers 200 to anything under the objects path.
        f.fake.push(Scripted::status(200).body(json!({})).times(5));
        let expected = "Record external_id is not a valid CRM id";
        assert_eq!(
            crm_error(&f.dispatch(ROUTER, CONTACT).await).as_deref(),
            Some(expected),
            "{dots}"
        );
        assert_eq!(
            f.entry(CONTACT).await.crm_sync,
            Some(state(CrmSyncStatus::Failed, 0, Some(expected)))
        );
        assert!(f.fake.requests().is_empty(), "{:?}", f.fake.requests());
    }
}

/// BEHAVIOR 7 (memos never hold a lock across a failing load): during a token-endpoint outage,
/// concurrent syncs of one account wait for the one failing grant in flight and share its
/// failure, instead of queueing to fail one after the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_syncs_share_one_failing_grant_instead_of_queueing_behind_it() {
    use shared::crm::{CrmClient, Owner, OwnerUpdate};
    use shared::model::account::{CrmCredentials, CrmSecret, OAuthApp as App};
    let (fake, base) = FakeCrm::start_with(portal()).await.unwrap();
    let _validated = Validated(fake.clone());
    fake.push(
        Scripted::status(503)
            .hubspot_error("INTERNAL_ERROR", "token service down")
            .delay(Duration::from_millis(1200))
            .on("POST", "/oauth/v1/token")
            .times(8),
    );
    let crm = client(
        CrmSettings::default(),
        Arc::new(shared::store::memory::MemoryStore::new()),
    );
    let update = OwnerUpdate {
        connection: shared::secrets::OpenCrmConnection {
            account_id: id(ACCOUNT),
            provider: shared::model::account::CrmProvider::HubSpot,
            base_url: base,
            credentials: CrmCredentials::OAuth(App {
                client_id: APP.into(),
                client_secret: CrmSecret::new(APP_SECRET),
                refresh_token: Some(CrmSecret::new(REFRESH)),
            }),
            options: Default::default(),
        },
        object_type: ObjectType::Contacts,
        record_external_id: OBJECT.into(),
        owner: Owner::Id(OWNER_1.into()),
    };
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..6 {
        let crm = crm.clone();
        let update = update.clone();
        set.spawn(async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(3);
            crm.set_owner(&update, deadline).await
        });
    }
    while let Some(done) = set.join_next().await {
        let failure = done.unwrap().unwrap_err();
        assert_eq!(failure.error, "CRM answered 503: token service down");
    }
    assert_eq!(
        fake.requests_to("/oauth/v1/token").len(),
        1,
        "one failing grant for six concurrent syncs"
    );
}

/// The instance's concurrent syncs of one OAuth connection share one token: one refresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_syncs_of_an_oauth_connection_refresh_its_token_once() {
    use shared::crm::{CrmClient, Owner, OwnerUpdate};
    use shared::model::account::{CrmCredentials, CrmSecret, OAuthApp as App};
    let (fake, base) = FakeCrm::start_with(portal()).await.unwrap();
    let _validated = Validated(fake.clone());
    let crm = client(
        CrmSettings::default(),
        Arc::new(shared::store::memory::MemoryStore::new()),
    );
    let update = OwnerUpdate {
        connection: shared::secrets::OpenCrmConnection {
            account_id: id(ACCOUNT),
            provider: shared::model::account::CrmProvider::HubSpot,
            base_url: base,
            credentials: CrmCredentials::OAuth(App {
                client_id: APP.into(),
                client_secret: CrmSecret::new(APP_SECRET),
                refresh_token: Some(CrmSecret::new(REFRESH)),
            }),
            options: Default::default(),
        },
        object_type: ObjectType::Contacts,
        record_external_id: OBJECT.into(),
        owner: Owner::Id(OWNER_1.into()),
    };
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let crm = crm.clone();
        let update = update.clone();
        set.spawn(async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            crm.set_owner(&update, deadline).await
        });
    }
    while let Some(done) = set.join_next().await {
        assert_eq!(done.unwrap().map(|s| s.updates), Ok(1));
    }
    assert_eq!(fake.requests_to("/oauth/v1/token").len(), 1);
    assert_eq!(fake.owner_updates().len(), 8);
}

/// No secret appears in a log line, at any level, even when the CRM echoes it: the access
/// token, an OAuth app's client secret and refresh token, the access tokens it is given.
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
    // An OAuth app whose token endpoint echoes its secrets once, then gives a token.
    let g = fixture_with(Backend::Memory, quick(), oauth).await;
    g.fake.push(
        Scripted::status(503)
            .body(Value::String(format!("{APP_SECRET} {REFRESH}")))
            .on("POST", "/oauth/v1/token"),
    );
    g.dispatch(ROUTER, CONTACT).await;
    g.dispatch(ROUTER, SECOND).await;
    g.final_state(CONTACT).await;
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(
        text.contains("HubSpot OAuth access token refreshed"),
        "{text}"
    );
    for secret in [APP_SECRET, REFRESH, "fake-oauth-"] {
        assert!(
            !text.contains(secret),
            "{secret} leaked into the logs:\n{text}"
        );
    }
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
