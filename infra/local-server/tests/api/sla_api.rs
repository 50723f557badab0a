//! SLA reassignment (BEHAVIOR 14) over HTTP with a scaled minute of 1 s, on the embedded store
//! and on DynamoDB (emulator): the router's `settings.sla`, explain's `explanation.sla`, the
//! check on the history entry, the reassignment within a scaled minute of its due time (timers
//! of the process), `met` and `cancelled` after writes through the API, stats under
//! `by_reason.sla_reassignment`; and the `local-server` binary reading `SLA_MINUTE_SECONDS`,
//! killed with a check pending on DynamoDB and restarted: the next process's sweeper runs it.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use chrono::{DateTime, Utc};
use common::TestApp;
use local_server::{build_app_with, with_local_keys, AppConfig};
use serde_json::{json, Value};
use shared::deps::Deps;
use shared::sla::SlaMinute;
use shared::store::dynamodb::test_table::EMULATOR_MISSING;
use shared::store::harness::Backend;
use shared::store::Store;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ACCOUNT: &str = "6c1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f60";
/// Round robin over m1, m2, m3; worked when `lead_status` is `connected`; 2 minutes.
const LISTED: &str = "6c1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f61";
/// No SLA.
const PLAIN: &str = "6c1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f62";
/// As `LISTED`, 5 minutes.
const SLOW: &str = "6c1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f63";
const CLIENT: (&str, &str) = ("sla-client", "sla-secret-0123456789");
const M1: &str = "m1@sla.example";
const M2: &str = "m2@sla.example";
const M3: &str = "m3@sla.example";

fn contact(n: usize) -> String {
    format!("01936b2a-7c00-7a00-8000-{:012x}", 0x6000 + n)
}

fn seed() -> String {
    seed_with(None)
}

/// The seed; with `crm` (a base URL) the account is connected to that CRM, `LISTED` syncs owners
/// to it (`has_integration`), and members and records carry external ids.
fn seed_with(crm: Option<&str>) -> String {
    let router = |id: &str, sla: Value| {
        json!({"id": id, "name": id, "object_type": "contacts", "is_published": true,
               "has_integration": crm.is_some() && id == LISTED,
               "settings": {"owner_field": "contact_owner", "distribution_model": "round robin",
                            "ignore_working_hours": true, "sla": sla},
               "users": [{"email": M1}, {"email": M2}, {"email": M3}], "teams": []})
    };
    json!({"accounts": [{
        "id": ACCOUNT, "name": "SLA", "active": true,
        "clients": [{"client_id": CLIENT.0, "client_secret": CLIENT.1,
                     "scopes": ["service-api/read", "service-api/create", "service-api/update", "service-api/delete"]}],
        "crm": crm.map(|base| json!({"provider": "hubspot", "base_url": base, "access_token": "pat-sla-token"})),
        "users": [
            {"id": "6c1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f71", "email": M1, "external_id": "71000001"},
            {"id": "6c1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f72", "email": M2, "external_id": "71000002"},
            {"id": "6c1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f73", "email": M3, "external_id": "71000003"}
        ],
        "routers": [
            router(LISTED, json!({"minutes": 2, "worked_field": "lead_status", "worked_values": ["connected"]})),
            router(PLAIN, Value::Null),
            router(SLOW, json!({"minutes": 5, "worked_field": "lead_status", "worked_values": ["connected"]}))
        ],
        "records": {"contacts": (0..6).map(|n| json!({"id": contact(n), "fields": {"email": format!("lead{n}@prospect.example"), "external_id": format!("880{n}")}})).collect::<Vec<_>>()}
    }]})
    .to_string()
}

/// What the timed checks allow a store (a trait: [`Backend`] is the shared harness's).
trait RunAllowance {
    fn run_allowance(self) -> chrono::Duration;
}

impl RunAllowance for Backend {
    /// What the lateness bound allows beyond the scaled minute for the run's own store requests
    /// before it takes its instant (the claim, the check's entry, the router and the record).
    /// None in memory: there the bound is the timer's precision. On the emulator, which
    /// serializes every DynamoDB request of every test behind one lock, those three round trips
    /// took up to 2.9 s on a loaded 2-core CI machine (0.1 to 0.3 s on a quiet one); the scale
    /// shrinks the minute, not the round trips.
    fn run_allowance(self) -> chrono::Duration {
        match self {
            Backend::Memory => chrono::Duration::zero(),
            Backend::Dynamo => chrono::Duration::seconds(3),
        }
    }
}

/// Held by the tests that measure how late a check runs on DynamoDB, so that the one starting
/// `local-server` processes (table creation, seeding, a sweep every scaled minute on the shared
/// emulator) does not run beside the other.
static TIMED_ON_THE_EMULATOR: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The application in process over a fresh store, SLA minutes of 1 s.
async fn app(backend: Backend) -> (TestApp, String) {
    app_over(backend, seed()).await
}

/// The application in process over a fresh store and `seed`, SLA minutes of 1 s.
async fn app_over(backend: Backend, seed: String) -> (TestApp, String) {
    let store: Arc<dyn Store> = backend.store().await;
    let deps = with_local_keys(Deps::new(store), None)
        .unwrap()
        .with_outbound(shared::outbound::OutboundPolicy::LOCAL)
        .with_sla_minute(SlaMinute::parse("1").unwrap());
    crate::common::cheap_secret_hashing();
    let built = build_app_with(
        AppConfig {
            seed,
            signing_key_pem: None,
        },
        deps,
    )
    .await
    .unwrap();
    let app = TestApp {
        router: built.router,
    };
    let token = app.token(CLIENT, common::ALL_SCOPES).await;
    (app, token)
}

shared::on_both_stores!(
    threads = 2;
    the_router_and_explain_show_the_sla_and_explain_starts_no_check,
    an_unworked_record_is_reassigned_within_a_scaled_minute_and_counted_in_stats,
    writes_through_the_api_meet_or_cancel_the_check,
    a_reassignment_syncs_the_new_owner_to_the_crm,
    a_check_started_inside_the_routers_holiday_counts_from_its_end,
);

/// BEHAVIOR 14: "CRM sync as for any assignment": the reassignment's entry is `pending`, then
/// `synced` once the CRM took the new owner.
async fn a_reassignment_syncs_the_new_owner_to_the_crm(backend: Backend) {
    // The customer's HubSpot: the private app, the members' owners, the contacts.
    let (fake, base) = fake_crm::FakeCrm::start().await.unwrap();
    fake.private_app("pat-sla-token", &["crm.objects.contacts.write"]);
    for (n, email) in [M1, M2, M3].iter().enumerate() {
        fake.add_owner(&format!("7100000{}", n + 1), email);
    }
    for n in 0..6 {
        fake.add_object("contacts", Some(&format!("880{n}")), &[]);
    }
    let (app, token) = app_over(backend, seed_with(Some(&base))).await;
    let answer = dispatch(&app, &token, LISTED, &contact(0)).await;
    assert_eq!(answer["user"], M1, "{answer}");
    let entries = history_until(&app, &token, &contact(0), |e| {
        e.len() >= 2 && e[0]["crm_sync"]["status"] == "synced"
    })
    .await;
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(entries[0]["reason"], "sla_reassignment");
    assert_eq!(
        entries[0]["crm_sync"],
        json!({"status": "synced", "attempts": 1, "error": null})
    );
    let requests = fake.requests();
    let owners: Vec<&Value> = requests
        .iter()
        .map(|r| &r.body["properties"]["hubspot_owner_id"])
        .collect();
    assert_eq!(owners, [&json!("71000001"), &json!("71000002")]);
    assert!(requests
        .iter()
        .all(|r| r.path == "/crm/v3/objects/contacts/8800" && r.violations.is_empty()));
    assert_eq!(
        fake.property("contacts", "8800", "hubspot_owner_id")
            .as_deref(),
        Some("71000002")
    );
}

async fn dispatch(app: &TestApp, token: &str, router: &str, record: &str) -> Value {
    let a = app
        .call(
            Method::POST,
            "/dispatch/router",
            token,
            Some(json!({"router_id": router, "object_id": record})),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body
}

async fn history(app: &TestApp, token: &str, record: &str) -> Vec<Value> {
    let a = app
        .call(
            Method::GET,
            &format!("/contacts/{record}/dispatches"),
            token,
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body["data"].as_array().unwrap().clone()
}

fn instant(value: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(value.as_str().unwrap())
        .unwrap()
        .with_timezone(&Utc)
}

/// Polls the record's history until `done` holds (at most 15 s).
async fn history_until(
    app: &TestApp, token: &str, record: &str, done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let entries = history(app, token, record).await;
        if done(&entries) || started.elapsed() > Duration::from_secs(15) {
            return entries;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn the_router_and_explain_show_the_sla_and_explain_starts_no_check(backend: Backend) {
    let (app, token) = app(backend).await;
    let sla = json!({"minutes": 2, "worked_field": "lead_status", "worked_values": ["connected"]});
    let router = app
        .call(Method::GET, &format!("/routers/{LISTED}"), &token, None)
        .await;
    assert_eq!(router.body["settings"]["sla"], sla, "{}", router.body);
    let plain = app
        .call(Method::GET, &format!("/routers/{PLAIN}"), &token, None)
        .await;
    assert_eq!(plain.body["settings"]["sla"], Value::Null);
    let explained = app
        .call(
            Method::POST,
            "/dispatch/router/explain",
            &token,
            Some(json!({"router_id": LISTED, "object_id": contact(0)})),
        )
        .await;
    assert_eq!(explained.body["explanation"]["sla"], sla);
    assert_eq!(explained.body["user"], M1);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(history(&app, &token, &contact(0)).await.is_empty());
    // The dispatch after it assigns whom explain named, and starts the check.
    assert_eq!(
        dispatch(&app, &token, LISTED, &contact(0)).await["user"],
        M1
    );
    let entry = &history(&app, &token, &contact(0)).await[0];
    assert_eq!(entry["sla"]["status"], "pending");
    let plain_entry = {
        dispatch(&app, &token, PLAIN, &contact(1)).await;
        history(&app, &token, &contact(1)).await[0].clone()
    };
    assert_eq!(plain_entry["sla"], Value::Null);
}

async fn an_unworked_record_is_reassigned_within_a_scaled_minute_and_counted_in_stats(
    backend: Backend,
) {
    let _timed = TIMED_ON_THE_EMULATOR.lock().await;
    let (app, token) = app(backend).await;
    assert_eq!(
        dispatch(&app, &token, LISTED, &contact(0)).await["user"],
        M1
    );
    let first = history(&app, &token, &contact(0)).await[0].clone();
    let dispatched_at = instant(&first["dispatched_at"]);
    let due_at = instant(&first["sla"]["due_at"]);
    assert_eq!(
        due_at - dispatched_at,
        chrono::Duration::seconds(2),
        "2 minutes of 1 s"
    );
    let entries = history_until(&app, &token, &contact(0), |e| e.len() >= 2).await;
    assert_eq!(entries.len(), 2, "{entries:?}");
    // Stop the chain: the new owner works it.
    let patched = app
        .call(
            Method::PATCH,
            &format!("/contacts/{}", contact(0)),
            &token,
            Some(json!({"fields": {"lead_status": "connected"}})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    let (reassigned, started) = (&entries[0], &entries[1]);
    assert_eq!(started["id"], first["id"]);
    assert_eq!(started["sla"]["status"], "reassigned");
    assert_eq!(reassigned["reason"], "sla_reassignment");
    assert_eq!(reassigned["source"], "sla");
    assert_eq!(reassigned["previous_owner"], M1);
    assert_eq!(reassigned["user"], M2);
    assert_eq!(reassigned["success"], true);
    assert_eq!(reassigned["message"], "Owner assigned");
    assert_eq!(reassigned["field_name"], "Contact owner");
    let ran_at = instant(&reassigned["dispatched_at"]);
    assert!(
        ran_at >= due_at
            && ran_at - due_at <= chrono::Duration::seconds(1) + backend.run_allowance(),
        "run at most a scaled minute late ({backend:?}): due {due_at}, ran {ran_at}"
    );
    assert_eq!(reassigned["sla"]["status"], "pending");
    assert_eq!(
        instant(&reassigned["sla"]["due_at"]) - ran_at,
        chrono::Duration::seconds(2)
    );
    let record = app
        .call(
            Method::GET,
            &format!("/contacts/{}?properties=contact_owner", contact(0)),
            &token,
            None,
        )
        .await;
    assert_eq!(record.body["contact_owner"], M2);
    // The reassignment's own check ends `met` (worked by the PATCH).
    let entries = history_until(&app, &token, &contact(0), |e| {
        e[0]["sla"]["status"] != "pending"
    })
    .await;
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["sla"]["status"], "met");
    let stats = app
        .call(
            Method::GET,
            &format!("/routers/{LISTED}/stats"),
            &token,
            None,
        )
        .await;
    assert_eq!(stats.status, StatusCode::OK, "{}", stats.body);
    assert_eq!(stats.body["total"], 2);
    let line = |user: &str| {
        stats.body["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["user"] == user)
            .unwrap()
            .clone()
    };
    assert_eq!(
        line(M1)["by_reason"],
        json!({"rotation": 1, "account_matching": 0, "backup": 0, "sla_reassignment": 0})
    );
    assert_eq!(
        line(M2)["by_reason"],
        json!({"rotation": 0, "account_matching": 0, "backup": 0, "sla_reassignment": 1})
    );
    assert_eq!(line(M2)["assigned"], 1);
}

async fn writes_through_the_api_meet_or_cancel_the_check(backend: Backend) {
    let (app, token) = app(backend).await;
    for n in 0..3 {
        dispatch(&app, &token, LISTED, &contact(n)).await;
    }
    let patch = |n: usize, fields: Value| {
        let app = &app;
        let token = &token;
        async move {
            let a = app
                .call(
                    Method::PATCH,
                    &format!("/contacts/{}", contact(n)),
                    token,
                    Some(json!({ "fields": fields })),
                )
                .await;
            assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        }
    };
    patch(0, json!({"lead_status": "Connected"})).await;
    patch(1, json!({"contact_owner": M1})).await;
    let archived = app
        .call(
            Method::DELETE,
            &format!("/contacts/{}", contact(2)),
            &token,
            None,
        )
        .await;
    assert_eq!(archived.status, StatusCode::OK, "{}", archived.body);
    for (n, expected) in [(0, "met"), (1, "cancelled"), (2, "cancelled")] {
        let entries = history_until(&app, &token, &contact(n), |e| {
            e[0]["sla"]["status"] != "pending"
        })
        .await;
        assert_eq!(entries.len(), 1, "nothing appended: {entries:?}");
        assert_eq!(entries[0]["sla"]["status"], expected, "contact {n}");
    }
}

/// The binary reads `SLA_MINUTE_SECONDS`; killed with a check pending on DynamoDB and started
/// again before it is due, the next process has no timer for it: its sweeper (every scaled
/// minute, whatever `SWEEP_INTERVAL_SECONDS` says) runs it at most a scaled minute late, once
/// (plus the run's round trips on the emulator, [`RunAllowance::run_allowance`]; that the sweeper
/// takes an SLA check at its due time, not after the hand-off's grace, is the due worker's unit
/// test of `resume_at`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_pending_when_the_server_dies_on_dynamodb_runs_after_a_restart() {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        panic!("{EMULATOR_MISSING}");
    }
    let _timed = TIMED_ON_THE_EMULATOR.lock().await;
    let seed_file = std::env::temp_dir().join(format!("sla-seed-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&seed_file, seed()).unwrap();
    let table = format!("local-{}", uuid::Uuid::new_v4().simple());
    let args = ["--store", "dynamodb", "--seed", seed_file.to_str().unwrap()];
    let envs = [
        ("TABLE_NAME", table.as_str()),
        ("SLA_MINUTE_SECONDS", "1"),
        // Capped at the SLA minute: a sweep every 30 s would run the check far too late.
        ("SWEEP_INTERVAL_SECONDS", "30"),
    ];
    let server = common::start_server(&args, &envs);
    let http = common::http();
    let token = server
        .token_response_of(CLIENT, "service-api/read service-api/update")
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let answer: Value = http
        .post(format!("{}/dispatch/router", server.base))
        .bearer_auth(&token)
        .json(&json!({"router_id": SLOW, "object_id": contact(0)}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["user"], M1, "{answer}");
    // Dies with the check on its timer, 5 s away.
    drop(server);
    let entries = |base: String| {
        let http = http.clone();
        let token = token.clone();
        async move {
            let page: Value = http
                .get(format!("{base}/contacts/{}/dispatches", contact(0)))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            page["data"].as_array().unwrap().clone()
        }
    };

    let server = common::start_server(&args, &envs);
    let before = entries(server.base.clone()).await;
    assert_eq!(before.len(), 1);
    let due_at = instant(&before[0]["sla"]["due_at"]);
    assert!(
        Utc::now() < due_at,
        "the restart must come before the check is due to test the sweeper's pace"
    );
    let started = Instant::now();
    let after = loop {
        let now = entries(server.base.clone()).await;
        if now.len() >= 2 || started.elapsed() > Duration::from_secs(15) {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(after.len() >= 2, "the check never ran: {after:?}");
    let first = after.last().unwrap();
    assert_eq!(first["sla"]["status"], "reassigned");
    let reassignments: Vec<&Value> = after
        .iter()
        .filter(|e| e["previous_owner"] == M1 && e["source"] == "sla")
        .collect();
    assert_eq!(reassignments.len(), 1, "once: {after:?}");
    assert_eq!(reassignments[0]["user"], M2);
    let ran_at = instant(&reassignments[0]["dispatched_at"]);
    assert!(
        ran_at >= due_at
            && ran_at - due_at <= chrono::Duration::seconds(1) + Backend::Dynamo.run_allowance(),
        "a scaled minute (1 s) late at most, plus the run: due {due_at}, ran {ran_at}"
    );
    drop(server);
    let _ = std::fs::remove_file(seed_file);
    let client =
        shared::store::dynamodb::env::client(&shared::store::dynamodb::env::sdk_config().await);
    let _ = shared::store::dynamodb::table::delete_table(&client, &table).await;
}

/// A router of the seed with a holiday calendar whose holiday covers this minute and the next.
const ON_HOLIDAY: &str = "6c1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f64";
const CALENDAR: &str = "6c1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f65";

/// The seed with `ON_HOLIDAY`: `LISTED`'s SLA (2 minutes) and pool, m3 as backup, and a calendar
/// in a fixed-offset zone where it is now around noon (so the holiday, from this local minute
/// to two minutes later, stays on one local day) holding that holiday. Returns the seed and the
/// holiday's end.
fn seed_with_holiday(now: DateTime<Utc>) -> (String, DateTime<Utc>) {
    use chrono::{Duration as Span, Timelike};
    let offset = 12 - now.hour() as i32; // -11 to +12: local time is 12:xx
    let zone = match offset {
        0 => "Etc/GMT".to_string(),
        // POSIX signs: Etc/GMT-3 is UTC+3.
        o if o > 0 => format!("Etc/GMT-{o}"),
        o => format!("Etc/GMT+{}", -o),
    };
    let local = now + Span::hours(offset.into());
    let start = local.with_second(0).unwrap().with_nanosecond(0).unwrap();
    let end = start + Span::minutes(2);
    let mut seed: Value = serde_json::from_str(&seed()).unwrap();
    let account = &mut seed["accounts"][0];
    account["holiday_calendars"] = json!([{
        "id": CALENDAR, "name": "Office", "time_zone": zone,
        "holidays": [{"name": "Fire drill", "date": start.format("%Y-%m-%d").to_string(),
                      "start": start.format("%H:%M").to_string(),
                      "end": end.format("%H:%M").to_string()}]
    }]);
    let routers = account["routers"].as_array_mut().unwrap();
    let mut router = routers[0].clone();
    router["id"] = json!(ON_HOLIDAY);
    router["name"] = json!("On holiday");
    router["settings"]["default_user"] = json!(M3);
    router["settings"]["holiday_calendar_id"] = json!(CALENDAR);
    routers.push(router);
    (seed.to_string(), end - Span::hours(offset.into()))
}

/// BEHAVIOR 17 with SLA minutes of 1 s: during the router's holiday its pool is unavailable (the
/// backup takes the record), and the check started inside the holiday counts its 2 (scaled)
/// minutes from the holiday's end, which is real time: `due_at` is the end plus 2 s, not the
/// dispatch plus 2 s. The router's `settings` and explain show the calendar and the reason.
async fn a_check_started_inside_the_routers_holiday_counts_from_its_end(backend: Backend) {
    let mut now = Utc::now();
    if chrono::Timelike::second(&now) >= 50 {
        // Dispatch well inside this minute's holiday, not at its edge.
        tokio::time::sleep(Duration::from_secs(11)).await;
        now = Utc::now();
    }
    let (seed, holiday_end) = seed_with_holiday(now);
    let (app, token) = app_over(backend, seed).await;
    let router = app
        .call(Method::GET, &format!("/routers/{ON_HOLIDAY}"), &token, None)
        .await;
    assert_eq!(router.body["settings"]["holiday_calendar_id"], CALENDAR);
    let explained = app
        .call(
            Method::POST,
            "/dispatch/router/explain",
            &token,
            Some(json!({"router_id": ON_HOLIDAY, "object_id": contact(5)})),
        )
        .await;
    assert_eq!(explained.status, StatusCode::OK, "{}", explained.body);
    let reasons: Vec<&Value> = explained.body["explanation"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["reasons"])
        .collect();
    assert_eq!(reasons, vec![&json!(["holiday"]); 3], "{}", explained.body);
    let assigned = dispatch(&app, &token, ON_HOLIDAY, &contact(5)).await;
    assert_eq!(assigned["user"], M3, "{assigned}");
    let entry = history(&app, &token, &contact(5)).await[0].clone();
    assert_eq!(entry["reason"], "backup", "{entry}");
    assert!(instant(&entry["dispatched_at"]) < holiday_end);
    assert_eq!(entry["sla"]["status"], "pending");
    assert_eq!(
        instant(&entry["sla"]["due_at"]),
        holiday_end + chrono::Duration::seconds(2),
        "2 scaled minutes from the holiday's end"
    );
}
