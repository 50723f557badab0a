//! CRM sync to Salesforce (BEHAVIOR 7 "Salesforce as it is") against the in-process fake
//! Salesforce (`infra/fake-crm`, which answers as Salesforce documents and validates every
//! request against a schema written from Salesforce's REST API and OAuth guides), on the
//! embedded store and on DynamoDB (emulator): the two grants on the My Domain URL, REST calls to
//! the answer's `instance_url` (and its refusal by the outbound guard), one new token and one
//! resend on `INVALID_SESSION_ID`, owners by `external_id` or by SOQL over `User` (escaped,
//! active users only, several an error, found ids remembered, none not remembered), the PATCH
//! with `Sforce-Auto-Assign: FALSE`, the object per record type, the error array, what is
//! retried, what waits without an attempt (the daily total, `Sforce-Limit-Info` at the share),
//! and the secrets sealed and kept out of every answer.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use chrono::{TimeZone, Utc};
use fake_crm::salesforce::org::{App, OrgSpec, Queue, Record, User};
use fake_crm::salesforce::FakeSalesforce;
use fake_crm::Scripted;
use serde_json::{json, Value};
use shared::clock::FixedClock;
use shared::crm::{CrmSettings, CrmSync, HttpCrm, RetryDelays};
use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, Outcome};
use shared::fields::CatalogueCache;
use shared::model::{CrmSyncState, CrmSyncStatus, DispatchEntry, ObjectType};
use shared::page::PageRequest;
use shared::secrets::LocalSealer;
use shared::store::harness::Backend;
use shared::store::Store;
use shared::types::{AccountId, RecordId};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

const ACCOUNT: &str = "5d0c6d3e-2a8b-4c55-9d61-5f1c2b7a9e51";
const CONTACTS: &str = "6b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c51";
const COMPANIES: &str = "6b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c52";
const DEALS: &str = "6b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c53";
const TICKETS: &str = "6b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c54";
const CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000051";
const SECOND: &str = "01936b2a-7c00-7a00-8000-000000000052";
const COMPANY: &str = "01936b2a-7c00-7a00-8000-000000000053";
const DEAL: &str = "01936b2a-7c00-7a00-8000-000000000054";
const TICKET: &str = "01936b2a-7c00-7a00-8000-000000000055";
/// The External Client App.
const APP: &str = "3MVG9AcmeRoutingApp.consumerKey";
const APP_SECRET: &str = "acme-consumer-secret-7c1f";
const REFRESH: &str = "5Aep861acme.refresh.token";
/// Salesforce users.
const ANN: &str = "0055g00000000A1";
const BEN: &str = "0055g00000000B2";
const GONE: &str = "0055g00000000C3";
const RUN_AS: &str = "0055g00000000I9";
const QUEUE: &str = "00G5g00000000Q1";
/// Records.
const CONTACT_ID: &str = "0035g00000000K1";
const SECOND_ID: &str = "0035g00000000K2";
const LEAD_ID: &str = "00Q5g00000000L1";
const ACCOUNT_ID: &str = "0015g00000000A1";
const DEAL_ID: &str = "0065g00000000D1";
const CASE_ID: &str = "5005g00000000S1";

fn id<T: From<Uuid>>(text: &str) -> T {
    Uuid::parse_str(text).unwrap().into()
}

fn org() -> OrgSpec {
    let user = |id: &str, email: &str, active: bool| User {
        id: id.into(),
        email: email.into(),
        active,
    };
    let record = |id: &str| Record {
        id: id.into(),
        owner_id: Some(RUN_AS.into()),
    };
    OrgSpec {
        apps: vec![App {
            client_id: APP.into(),
            client_secret: APP_SECRET.into(),
            run_as: RUN_AS.into(),
            refresh_tokens: vec![REFRESH.into()],
        }],
        users: vec![
            user(ANN, "ann@acme.example", true),
            user(BEN, "o'brien@acme.example", true),
            user(GONE, "gone@acme.example", false),
            user(RUN_AS, "integration@acme.example", true),
        ],
        queues: vec![Queue {
            id: QUEUE.into(),
            objects: vec!["Lead".into(), "Case".into()],
        }],
        records: [
            ("Contact", vec![record(CONTACT_ID), record(SECOND_ID)]),
            ("Lead", vec![record(LEAD_ID)]),
            ("Account", vec![record(ACCOUNT_ID)]),
            ("Opportunity", vec![record(DEAL_ID)]),
            ("Case", vec![record(CASE_ID)]),
        ]
        .map(|(k, v)| (k.to_string(), v))
        .into(),
        // Active rules that would send Leads, Cases and Accounts to the queue or the
        // integration user.
        assignment_rules: [("Lead", QUEUE), ("Case", QUEUE), ("Account", RUN_AS)]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into(),
        api_limit: Some(100_000),
        api_used: 10,
    }
}

fn seed(base_url: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let member = |n: u128, email: &str, external: Option<&str>| json!({"id": Uuid::from_u128(0x5000 + n), "email": email, "external_id": external});
    let router = |id: &str, object_type: &str, owner_field: &str| {
        json!({
            "id": id, "name": format!("Synced {object_type}"), "object_type": object_type,
            "is_published": true, "has_integration": true,
            "settings": {"owner_field": owner_field, "distribution_model": "round robin", "overwrite": true},
            "users": [{"email": "ann@acme.example"}], "teams": []
        })
    };
    let mut s = json!({"accounts": [{
        "id": ACCOUNT, "name": "Acme (Salesforce)", "active": true,
        "crm": {"provider": "salesforce", "base_url": base_url,
                "oauth": {"client_id": APP, "client_secret": APP_SECRET}},
        "users": [
            member(1, "ann@acme.example", Some(ANN)),
            member(2, "o'brien@acme.example", None),
            member(3, "gone@acme.example", Some(GONE)),
            member(4, "nobody@acme.example", None),
            member(5, "queue@acme.example", Some(QUEUE))
        ],
        "routers": [
            router(CONTACTS, "contacts", "contact_owner"),
            router(COMPANIES, "companies", "company_owner"),
            router(DEALS, "deals", "deal_owner"),
            router(TICKETS, "tickets", "ticket_owner")
        ],
        "records": {
            "contacts": [
                {"id": CONTACT, "fields": {"email": "lead@prospect.example", "external_id": CONTACT_ID}},
                {"id": SECOND, "fields": {"email": "second@prospect.example", "external_id": SECOND_ID}}
            ],
            "companies": [{"id": COMPANY, "fields": {"company_name": "Prospect", "website_url": "prospect.example", "external_id": ACCOUNT_ID}}],
            "deals": [{"id": DEAL, "fields": {"deal_name": "Big deal", "deal_stage": "qualified_to_buy", "pipeline": "default", "external_id": DEAL_ID}}],
            "tickets": [{"id": TICKET, "fields": {"ticket_name": "Help", "ticket_stage": "new", "pipeline": "support", "external_id": CASE_ID}}]
        }
    }]});
    edit(&mut s);
    s
}

/// Routes every router to `email` only.
fn route_to(s: &mut Value, email: &str) {
    for router in s["accounts"][0]["routers"].as_array_mut().unwrap() {
        router["users"] = json!([{ "email": email }]);
    }
}

/// Fails the test when the fake received a request that does not validate against
/// Salesforce's description, or a REST call not sent to the instance URL.
struct Validated(FakeSalesforce);

impl Drop for Validated {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let violations = self.0.violations();
        assert!(
            violations.is_empty(),
            "requests that Salesforce's description does not allow: {violations:#?}"
        );
    }
}

struct Fixture {
    store: Arc<dyn Store>,
    engine: DispatchEngine,
    fake: FakeSalesforce,
    base: String,
    _validated: Validated,
}

fn quick() -> RetryDelays {
    RetryDelays::parse("0.3,0.3,0.3").unwrap()
}

fn settings() -> CrmSettings {
    CrmSettings {
        limit_wait: Duration::from_secs(1),
        ..CrmSettings::default()
    }
}

async fn fixture_with(backend: Backend, edit: impl FnOnce(&mut Value)) -> Fixture {
    let (fake, base) = FakeSalesforce::start_with(org()).await.unwrap();
    fixture_on(backend, fake, &base, edit).await
}

async fn fixture_on(
    backend: Backend, fake: FakeSalesforce, base: &str, edit: impl FnOnce(&mut Value),
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
    let http = shared::outbound::OutboundClient::new(
        shared::outbound::OutboundPolicy::LOCAL,
        shared::crm::port::REQUEST_TIMEOUT,
        64 * 1024,
    )
    .unwrap();
    let sync = CrmSync::new(
        Arc::new(HttpCrm::with_settings(http, settings(), store.clone())),
        store.clone(),
        clock.clone(),
        quick(),
        Arc::new(LocalSealer::development()),
    );
    let engine = DispatchEngine::new(store.clone(), clock, Arc::new(CatalogueCache::default()))
        .with_crm(sync);
    Fixture {
        store,
        engine,
        _validated: Validated(fake.clone()),
        fake,
        base: base.to_string(),
    }
}

async fn fixture(backend: Backend) -> Fixture {
    fixture_with(backend, |_| {}).await
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

    async fn entry(&self, object_type: ObjectType, record: &str) -> DispatchEntry {
        self.store
            .list_record_dispatches(
                id::<AccountId>(ACCOUNT),
                object_type,
                id::<RecordId>(record),
                &PageRequest::first(1, false),
            )
            .await
            .unwrap()
            .items
            .into_iter()
            .next()
            .expect("an entry")
    }

    async fn state(&self, record: &str) -> CrmSyncState {
        self.entry(ObjectType::Contacts, record)
            .await
            .crm_sync
            .expect("a sync state")
    }

    /// Waits until the contact's newest entry has a final sync state (at most 20 s).
    async fn final_state(&self, record: &str) -> CrmSyncState {
        for _ in 0..200 {
            let state = self.state(record).await;
            if state.status.is_final() {
                return state;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the sync never ended: {:?}", self.state(record).await);
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

fn form(r: &fake_crm::Recorded) -> std::collections::HashMap<String, String> {
    url::form_urlencoded::parse(r.raw_body.as_bytes())
        .into_owned()
        .collect()
}

/// A Salesforce error array answer.
fn sf_error(status: u16, code: &str, message: &str) -> Scripted {
    Scripted::status(status)
        .body(json!([{"message": message, "errorCode": code, "fields": []}]))
        .on("PATCH", "/services/data/")
}

shared::on_both_stores!(
    a_sync_grants_a_token_on_the_my_domain_and_patches_the_owner_on_the_instance,
    the_refresh_token_grant_is_used_when_the_connection_holds_one,
    each_record_type_goes_to_its_sobject_and_contacts_may_be_leads,
    a_member_without_external_id_is_found_by_soql_over_active_users,
    no_user_or_several_users_with_the_email_are_final_and_not_remembered,
    an_invalid_session_takes_one_new_token_and_one_resend,
    a_refused_grant_is_final_and_no_secret_leaks,
    an_instance_url_the_guard_refuses_fails_the_sync_for_good,
    salesforces_error_array_gives_the_detail_and_other_4xx_are_final,
    locked_rows_5xx_and_the_concurrent_limit_are_retried,
    the_daily_total_waits_without_spending_a_retry,
    api_usage_at_the_share_defers_further_syncs_until_the_wait_passes,
    the_stored_connection_holds_its_secrets_only_sealed,
    a_dot_segment_external_id_and_a_huge_message_never_reach_a_crm_error,
);

async fn a_sync_grants_a_token_on_the_my_domain_and_patches_the_owner_on_the_instance(
    backend: Backend,
) {
    let f = fixture(backend).await;
    assert!(f.base.starts_with("http://localhost:"), "{}", f.base);
    let outcome = f.dispatch(CONTACTS, CONTACT).await;
    assert_eq!(crm_error(&outcome), None);
    let requests = f.fake.requests();
    let kinds: Vec<(&str, &str)> = requests
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("POST", "/services/oauth2/token"),
            (
                "PATCH",
                "/services/data/v66.0/sobjects/Contact/0035g00000000K1"
            ),
        ]
    );
    let grant = &requests[0];
    let port = f.base.rsplit(':').next().unwrap();
    assert_eq!(
        grant.headers["host"],
        format!("localhost:{port}"),
        "the token comes from the My Domain"
    );
    assert_eq!(
        grant.headers["content-type"],
        "application/x-www-form-urlencoded"
    );
    let grant = form(grant);
    assert_eq!(grant["grant_type"], "client_credentials");
    assert_eq!(grant["client_id"], APP);
    assert_eq!(grant["client_secret"], APP_SECRET);
    assert!(!grant.contains_key("refresh_token"));
    let patch = &requests[1];
    assert_eq!(
        patch.headers["host"],
        format!("127.0.0.1:{port}"),
        "REST calls go to the instance_url"
    );
    assert!(patch.headers["authorization"].starts_with("Bearer 00DFAKE"));
    assert_eq!(patch.headers["content-type"], "application/json");
    assert_eq!(patch.headers["sforce-auto-assign"], "FALSE");
    assert_eq!(patch.body, json!({"OwnerId": ANN}));
    assert_eq!(f.fake.owner("Contact", CONTACT_ID).as_deref(), Some(ANN));
    assert_eq!(
        f.state(CONTACT).await,
        state(CrmSyncStatus::Synced, 1, None)
    );
    // The token is kept: the next sync sends only its update.
    assert_eq!(crm_error(&f.dispatch(CONTACTS, SECOND).await), None);
    assert_eq!(f.fake.token_requests().len(), 1);
    assert_eq!(f.fake.updates().len(), 2);
}

async fn the_refresh_token_grant_is_used_when_the_connection_holds_one(backend: Backend) {
    let f = fixture_with(backend, |s| {
        s["accounts"][0]["crm"]["oauth"]["refresh_token"] = json!(REFRESH);
    })
    .await;
    assert_eq!(crm_error(&f.dispatch(CONTACTS, CONTACT).await), None);
    let grant = form(&f.fake.token_requests()[0]);
    assert_eq!(grant["grant_type"], "refresh_token");
    assert_eq!(grant["client_id"], APP);
    assert_eq!(grant["client_secret"], APP_SECRET);
    assert_eq!(grant["refresh_token"], REFRESH);
    assert_eq!(f.fake.owner("Contact", CONTACT_ID).as_deref(), Some(ANN));
}

async fn each_record_type_goes_to_its_sobject_and_contacts_may_be_leads(backend: Backend) {
    let f = fixture(backend).await;
    for (router, record) in [(COMPANIES, COMPANY), (DEALS, DEAL), (TICKETS, TICKET)] {
        assert_eq!(
            crm_error(&f.dispatch(router, record).await),
            None,
            "{router}"
        );
    }
    let paths: Vec<String> = f.fake.updates().into_iter().map(|u| u.path).collect();
    assert_eq!(
        paths,
        [
            "/services/data/v66.0/sobjects/Account/0015g00000000A1",
            "/services/data/v66.0/sobjects/Opportunity/0065g00000000D1",
            "/services/data/v66.0/sobjects/Case/5005g00000000S1",
        ]
    );
    // Sforce-Auto-Assign: FALSE kept the org's Account and Case rules from overwriting them.
    for (sobject, record) in [
        ("Account", ACCOUNT_ID),
        ("Opportunity", DEAL_ID),
        ("Case", CASE_ID),
    ] {
        assert_eq!(
            f.fake.owner(sobject, record).as_deref(),
            Some(ANN),
            "{sobject}"
        );
    }
    // A connection whose contacts are Leads, with another API version.
    let g = fixture_with(backend, |s| {
        s["accounts"][0]["crm"]["objects"] = json!({"contacts": "Lead"});
        s["accounts"][0]["crm"]["api_version"] = json!("61.0");
        s["accounts"][0]["records"]["contacts"][0]["fields"]["external_id"] = json!(LEAD_ID);
    })
    .await;
    assert_eq!(crm_error(&g.dispatch(CONTACTS, CONTACT).await), None);
    assert_eq!(
        g.fake.updates()[0].path,
        "/services/data/v61.0/sobjects/Lead/00Q5g00000000L1"
    );
    assert_eq!(
        g.fake.owner("Lead", LEAD_ID).as_deref(),
        Some(ANN),
        "the Lead assignment rule (to the queue) did not run"
    );
}

async fn a_member_without_external_id_is_found_by_soql_over_active_users(backend: Backend) {
    let f = fixture_with(backend, |s| route_to(s, "o'brien@acme.example")).await;
    assert_eq!(crm_error(&f.dispatch(CONTACTS, CONTACT).await), None);
    assert_eq!(crm_error(&f.dispatch(CONTACTS, SECOND).await), None);
    let queries = f.fake.queries();
    assert_eq!(queries.len(), 1, "found ids are remembered: {queries:?}");
    let q: String = url::form_urlencoded::parse(queries[0].query.as_deref().unwrap().as_bytes())
        .find(|(k, _)| k == "q")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    assert_eq!(
        q,
        r"SELECT Id FROM User WHERE Email = 'o\'brien@acme.example' AND IsActive = true"
    );
    assert!(
        !queries[0].query.as_deref().unwrap().contains(' '),
        "the whole query percent-encoded"
    );
    assert_eq!(f.fake.owner("Contact", CONTACT_ID).as_deref(), Some(BEN));
    assert_eq!(f.fake.owner("Contact", SECOND_ID).as_deref(), Some(BEN));
}

async fn no_user_or_several_users_with_the_email_are_final_and_not_remembered(backend: Backend) {
    let f = fixture_with(backend, |s| route_to(s, "nobody@acme.example")).await;
    // Salesforce knows the e-mail only as an inactive user.
    f.fake.org(|o| {
        o.spec_mut().users.push(User {
            id: "0055g00000000N1".into(),
            email: "nobody@acme.example".into(),
            active: false,
        })
    });
    let none = "No active Salesforce user with the member's e-mail";
    assert_eq!(
        crm_error(&f.dispatch(CONTACTS, CONTACT).await).as_deref(),
        Some(none)
    );
    assert_eq!(
        f.state(CONTACT).await,
        state(CrmSyncStatus::Failed, 0, Some(none)),
        "final at once; a query is no update"
    );
    assert!(f.fake.updates().is_empty());
    // Not remembered: a user activated since is found by the next sync.
    f.fake
        .org(|o| o.spec_mut().users.last_mut().unwrap().active = true);
    assert_eq!(crm_error(&f.dispatch(CONTACTS, SECOND).await), None);
    assert_eq!(f.fake.queries().len(), 2);
    // Two active users with the e-mail: final, and not remembered either.
    let g = fixture_with(backend, |s| route_to(s, "nobody@acme.example")).await;
    g.fake.org(|o| {
        for n in 1..=2 {
            o.spec_mut().users.push(User {
                id: format!("0055g00000000N{n}"),
                email: "NOBODY@acme.example".into(),
                active: true,
            })
        }
    });
    let several = "Several active Salesforce users have the member's e-mail";
    assert_eq!(
        crm_error(&g.dispatch(CONTACTS, CONTACT).await).as_deref(),
        Some(several)
    );
    assert_eq!(
        crm_error(&g.dispatch(CONTACTS, SECOND).await).as_deref(),
        Some(several)
    );
    assert_eq!(g.fake.queries().len(), 2);
}

async fn an_invalid_session_takes_one_new_token_and_one_resend(backend: Backend) {
    let f = fixture(backend).await;
    assert_eq!(crm_error(&f.dispatch(CONTACTS, CONTACT).await), None);
    // The session times out in Salesforce: the next update is refused once.
    f.fake.org(|o| o.expire_sessions());
    assert_eq!(crm_error(&f.dispatch(CONTACTS, SECOND).await), None);
    assert_eq!(f.fake.token_requests().len(), 2);
    let updates = f.fake.updates();
    assert_eq!(updates.len(), 3, "the refused update and its resend");
    assert_ne!(
        updates[1].headers["authorization"],
        updates[2].headers["authorization"]
    );
    assert_eq!(
        f.state(SECOND).await,
        state(CrmSyncStatus::Synced, 2, None),
        "the resend is counted"
    );
    // Refused again after the new token: final, one resend only.
    f.fake
        .push(sf_error(401, "INVALID_SESSION_ID", "Session expired or invalid").times(2));
    let error = crm_error(&f.dispatch(CONTACTS, CONTACT).await).unwrap();
    assert_eq!(
        error,
        "CRM answered 401: INVALID_SESSION_ID: Session expired or invalid"
    );
    assert_eq!(f.fake.updates().len(), 5);
    assert_eq!(
        f.state(CONTACT).await,
        state(CrmSyncStatus::Failed, 2, Some(&error))
    );
}

async fn a_refused_grant_is_final_and_no_secret_leaks(backend: Backend) {
    // A wrong secret: invalid_client.
    let f = fixture_with(backend, |s| {
        s["accounts"][0]["crm"]["oauth"]["client_secret"] = json!("wrong-secret-3a9d");
    })
    .await;
    let outcome = f.dispatch(CONTACTS, CONTACT).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM authorization failed")
    );
    assert_eq!(
        f.state(CONTACT).await,
        state(CrmSyncStatus::Failed, 0, Some("CRM authorization failed"))
    );
    assert!(f.fake.updates().is_empty());
    // A revoked refresh token: invalid_grant.
    let g = fixture_with(backend, |s| {
        s["accounts"][0]["crm"]["oauth"]["refresh_token"] = json!("5Aep-revoked-token");
    })
    .await;
    assert_eq!(
        crm_error(&g.dispatch(CONTACTS, CONTACT).await).as_deref(),
        Some("CRM authorization failed")
    );
    // A token endpoint that is down and echoes the secret: retried, redacted.
    let h = fixture(backend).await;
    h.fake.push(
        Scripted::status(503)
            .body(Value::String(format!("down; client_secret={APP_SECRET}")))
            .on("POST", "/services/oauth2/token"),
    );
    let outcome = h.dispatch(CONTACTS, CONTACT).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM answered 503: down; client_secret=[REDACTED]")
    );
    assert_eq!(
        h.final_state(CONTACT).await,
        state(CrmSyncStatus::Synced, 1, None)
    );
    let entry = serde_json::to_string(&h.entry(ObjectType::Contacts, CONTACT).await).unwrap();
    let answer = serde_json::to_string(&outcome.answer()).unwrap();
    for text in [entry, answer] {
        assert!(!text.contains(APP_SECRET), "{text}");
        assert!(!text.contains("fake-session"), "{text}");
    }
}

async fn an_instance_url_the_guard_refuses_fails_the_sync_for_good(backend: Backend) {
    let f = fixture(backend).await;
    f.fake.push(
        Scripted::status(200)
            .body(
                json!({"access_token": "00DX!tok", "instance_url": "http://169.254.169.254",
                         "id": "https://login.salesforce.com/id/00DX/005X", "token_type": "Bearer",
                         "issued_at": "1", "signature": "x"}),
            )
            .on("POST", "/services/oauth2/token"),
    );
    let error = crm_error(&f.dispatch(CONTACTS, CONTACT).await).unwrap();
    assert_eq!(
        error,
        "CRM request failed: instance_url must not point to a link-local address"
    );
    assert_eq!(
        f.state(CONTACT).await,
        state(CrmSyncStatus::Failed, 0, Some(&error))
    );
    assert!(f.fake.updates().is_empty());
}

async fn salesforces_error_array_gives_the_detail_and_other_4xx_are_final(backend: Backend) {
    // The fake's own answers: an unknown user, a queue on an Account, an inactive user, an
    // unknown record, a malformed id.
    let cases = [
        ("0055g00000000Z9", CONTACTS, CONTACT, None, "INVALID_CROSS_REFERENCE_KEY: invalid cross reference id"),
        (QUEUE, COMPANIES, COMPANY, None, "FIELD_INTEGRITY_EXCEPTION: Owner ID: id value of incorrect type: 00G5g00000000Q1"),
        (GONE, CONTACTS, CONTACT, None, "INACTIVE_OWNER_OR_USER: operation performed with inactive user [0055g00000000C3] as owner of Contact"),
        (ANN, CONTACTS, CONTACT, Some("0035g00000000X9"), "NOT_FOUND: The requested resource does not exist"),
        (ANN, CONTACTS, CONTACT, Some("not-an-id"), "MALFORMED_ID: Contact ID: id value of incorrect type: not-an-id"),
    ];
    for (owner, router, record, external_id, detail) in cases {
        let f = fixture_with(backend, |s| {
            let members = s["accounts"][0]["users"].as_array_mut().unwrap();
            members[0]["external_id"] = json!(owner);
            if let Some(external_id) = external_id {
                s["accounts"][0]["records"]["contacts"][0]["fields"]["external_id"] =
                    json!(external_id);
            }
        })
        .await;
        let status = if detail.starts_with("NOT_FOUND") {
            404
        } else {
            400
        };
        let expected = format!("CRM answered {status}: {detail}");
        assert_eq!(
            crm_error(&f.dispatch(router, record).await),
            Some(expected.clone())
        );
        let object_type = if router == COMPANIES {
            ObjectType::Companies
        } else {
            ObjectType::Contacts
        };
        assert_eq!(
            f.entry(object_type, record).await.crm_sync,
            Some(state(CrmSyncStatus::Failed, 1, Some(&expected))),
            "{detail}"
        );
    }
}

async fn locked_rows_5xx_and_the_concurrent_limit_are_retried(backend: Backend) {
    let f = fixture(backend).await;
    f.fake.push(sf_error(
        409,
        "UNABLE_TO_LOCK_ROW",
        "unable to obtain exclusive access to this record or 1 records",
    ));
    f.fake.push(
        Scripted::status(503)
            .body(Value::String("Service Unavailable".into()))
            .on("PATCH", "/services/data/"),
    );
    f.fake.push(sf_error(
        403,
        "REQUEST_LIMIT_EXCEEDED",
        "ConcurrentRequests (Concurrent API Requests) Limit exceeded.",
    ));
    let outcome = f.dispatch(CONTACTS, CONTACT).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM answered 409: UNABLE_TO_LOCK_ROW: unable to obtain exclusive access to this record or 1 records")
    );
    assert_eq!(
        f.final_state(CONTACT).await,
        state(CrmSyncStatus::Synced, 4, None)
    );
    assert_eq!(f.fake.owner("Contact", CONTACT_ID).as_deref(), Some(ANN));
}

async fn the_daily_total_waits_without_spending_a_retry(backend: Backend) {
    let f = fixture(backend).await;
    // Five refusals of the daily total: more than the three retries allow.
    f.fake.push(
        sf_error(
            403,
            "REQUEST_LIMIT_EXCEEDED",
            "TotalRequests Limit exceeded.",
        )
        .times(5),
    );
    let outcome = f.dispatch(CONTACTS, CONTACT).await;
    assert_eq!(
        crm_error(&outcome).as_deref(),
        Some("CRM answered 403: REQUEST_LIMIT_EXCEEDED: TotalRequests Limit exceeded.")
    );
    assert_eq!(f.state(CONTACT).await.status, CrmSyncStatus::Retrying);
    assert_eq!(
        f.final_state(CONTACT).await,
        state(CrmSyncStatus::Synced, 6, None)
    );
    let updates = f.fake.updates();
    for pair in updates.windows(2) {
        let gap = pair[1].at_ms - pair[0].at_ms;
        assert!(
            gap >= 950,
            "a retry {gap} ms after the daily total (wait 1 s)"
        );
    }
}

async fn api_usage_at_the_share_defers_further_syncs_until_the_wait_passes(backend: Backend) {
    let f = fixture_with(backend, |s| {
        s["accounts"][0]["crm"]["max_api_share"] = json!(0.5);
    })
    .await;
    // The org has used half its allowance: this sync's answer says so.
    f.fake.org(|o| {
        o.spec_mut().api_limit = Some(1000);
        o.spec_mut().api_used = 499;
    });
    assert_eq!(crm_error(&f.dispatch(CONTACTS, CONTACT).await), None);
    let deferred = "Salesforce API usage at 500/1000: request deferred";
    assert_eq!(
        crm_error(&f.dispatch(CONTACTS, SECOND).await).as_deref(),
        Some(deferred)
    );
    assert_eq!(
        f.state(SECOND).await,
        state(CrmSyncStatus::Retrying, 0, Some(deferred)),
        "nothing sent"
    );
    assert_eq!(f.fake.updates().len(), 1);
    // After the wait (1 s here, an hour by default) the sync goes through and reads the usage
    // again.
    f.fake.org(|o| o.spec_mut().api_used = 100);
    assert_eq!(
        f.final_state(SECOND).await,
        state(CrmSyncStatus::Synced, 1, None)
    );
    let updates = f.fake.updates();
    assert!(updates[1].at_ms - updates[0].at_ms >= 950);
}

async fn the_stored_connection_holds_its_secrets_only_sealed(backend: Backend) {
    let f = fixture_with(backend, |s| {
        s["accounts"][0]["crm"]["oauth"]["refresh_token"] = json!(REFRESH);
    })
    .await;
    let account = f.store.get_account(id(ACCOUNT)).await.unwrap().unwrap();
    let stored = serde_json::to_string(&account).unwrap();
    for secret in [APP_SECRET, REFRESH] {
        assert!(!stored.contains(secret), "{stored}");
    }
    assert!(stored.contains("\"provider\":\"salesforce\""), "{stored}");
    assert!(stored.contains(APP), "the client id is no secret");
}

/// BEHAVIOR 7: a record `external_id` of `.` or `..` is refused before any request (it would be
/// a dot segment of the sObject's path), and an error's detail is at most 200 characters, cut
/// after the secrets are redacted.
async fn a_dot_segment_external_id_and_a_huge_message_never_reach_a_crm_error(backend: Backend) {
    for dots in [".", ".."] {
        let f = fixture_with(backend, |s| {
            s["accounts"][0]["records"]["contacts"][0]["fields"]["external_id"] = json!(dots);
        })
        .await;
        let expected = "Record external_id is not a valid CRM id";
        assert_eq!(
            crm_error(&f.dispatch(CONTACTS, CONTACT).await).as_deref(),
            Some(expected)
        );
        assert_eq!(
            f.state(CONTACT).await,
            state(CrmSyncStatus::Failed, 0, Some(expected))
        );
        assert!(f.fake.requests().is_empty());
    }
    let f = fixture(backend).await;
    // `FIELD_CUSTOM_VALIDATION_EXCEPTION: ` is 35 characters: the secret straddles the cut.
    let message = format!("{}{APP_SECRET}{}", "x".repeat(160), "y".repeat(65_000));
    f.fake
        .push(sf_error(400, "FIELD_CUSTOM_VALIDATION_EXCEPTION", &message));
    let error = crm_error(&f.dispatch(CONTACTS, CONTACT).await).unwrap();
    let detail = error.strip_prefix("CRM answered 400: ").unwrap();
    assert_eq!(detail.chars().count(), 200, "{error}");
    let redacted = format!(
        "FIELD_CUSTOM_VALIDATION_EXCEPTION: {}[REDACTED]",
        "x".repeat(160)
    );
    assert_eq!(
        detail,
        redacted.chars().take(200).collect::<String>(),
        "redacted first, then cut: no piece of the secret"
    );
}

/// No Salesforce secret appears in a log line, at any level, even when Salesforce echoes it: the
/// consumer secret, the refresh token, the access tokens it gives.
#[tokio::test]
async fn no_salesforce_secret_reaches_a_log_line() {
    let logs = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
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
    let f = fixture_with(Backend::Memory, |s| {
        s["accounts"][0]["crm"]["oauth"]["refresh_token"] = json!(REFRESH);
    })
    .await;
    f.fake.push(
        Scripted::status(503)
            .body(Value::String(format!("{APP_SECRET} {REFRESH}")))
            .on("POST", "/services/oauth2/token"),
    );
    f.dispatch(CONTACTS, CONTACT).await;
    f.final_state(CONTACT).await;
    // A session that expires: the refused request's answer and the new grant are logged too.
    f.fake.org(|o| o.expire_sessions());
    f.dispatch(CONTACTS, SECOND).await;
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(text.contains("Salesforce access token granted"), "{text}");
    assert!(text.contains("CRM sync state"), "the sync logged: {text}");
    for secret in [APP_SECRET, REFRESH, "fake-session"] {
        assert!(
            !text.contains(secret),
            "{secret} leaked into the logs:\n{text}"
        );
    }
}

struct LogWriter(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
