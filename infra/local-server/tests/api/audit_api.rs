//! The audit trail of BEHAVIOR 18 over HTTP, each test on the embedded store and on DynamoDB
//! (the emulator of `bash infra/scripts/test.sh`, a table of its own per test): decision
//! snapshots (`GET /routers/{routerId}/dispatches/{entryId}`: the explanation explain gave, kept
//! as it was after the member it names changes, and the parts a stopped run reached), the
//! change log (every router action in order with its changes; member, calendar and subscription
//! events; nothing for a refused, replayed or unchanged write; no secret in any event),
//! `GET /audit-events` (filters, window, cursor walk, errors) and `GET /audit-events/{id}`, the
//! isolation of accounts, and a write whose event cannot be stored leaving neither.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{json, Value};

const INBOUND_ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const DEALS_ROUTER: &str = "7e3f4a56-b7c8-4d93-8ea5-b02b3c4d5e78";
const UNPUBLISHED_ROUTER: &str = "8f4a5b67-c8d9-4ea4-9fb6-c13c4d5e6f89";
const DANA: &str = "01936b2a-7c00-7a00-8000-000000000002";
const LEE: &str = "01936b2a-7c00-7a00-8000-000000000004";
const BEN: &str = "ben.okafor@northwind.example";
const BEN_ID: &str = "2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12";
const ANA: &str = "ana.lopez@northwind.example";
const CHEN: &str = "chen.wei@northwind.example";

shared::on_both_stores!(
    threads = 2; with app_on:
    an_entry_keeps_the_explanation_explain_gave_and_lists_never_carry_it,
    an_absence_at_the_dispatch_stays_in_the_snapshot_after_the_member_returns,
    a_stopped_run_keeps_what_explain_would_answer,
    every_router_action_is_on_record_in_order_with_its_changes,
    member_calendar_and_subscription_events_hold_their_changes_and_no_secret,
    a_refused_replayed_or_unchanged_write_records_nothing,
    the_log_filters_by_target_and_window_and_walks_by_cursor,
    accounts_never_see_each_others_events_or_entries,
);

fn assert_error(a: &Answer, status: StatusCode, message: &str) {
    assert_eq!(a.status, status, "{}", a.body);
    assert_eq!(a.body["message"], message, "{}", a.body);
    assert_eq!(a.body["error"], true);
}

impl TestApp {
    async fn get(&self, t: &str, uri: &str) -> Answer {
        self.call(Method::GET, uri, t, None).await
    }

    async fn ok(&self, method: Method, t: &str, uri: &str, body: Option<Value>) -> Value {
        let a = self.call(method.clone(), uri, t, body).await;
        assert!(
            a.status.is_success(),
            "{method} {uri}: {} {}",
            a.status,
            a.body
        );
        a.body
    }

    async fn explain_now(&self, t: &str, router: &str, object: &str) -> Value {
        let body = json!({"router_id": router, "object_id": object});
        self.ok(Method::POST, t, "/dispatch/router/explain", Some(body))
            .await
    }

    async fn dispatch_now(&self, t: &str, router: &str, object: &str) -> Value {
        let body = json!({"router_id": router, "object_id": object});
        self.ok(Method::POST, t, "/dispatch/router", Some(body))
            .await
    }

    /// The router's newest history entry, as the list shows it.
    async fn newest_entry(&self, t: &str, router: &str) -> Value {
        let list = self
            .ok(
                Method::GET,
                t,
                &format!("/routers/{router}/dispatches?limit=1"),
                None,
            )
            .await;
        list["data"][0].clone()
    }

    async fn entry(&self, t: &str, router: &str, id: &str) -> Value {
        self.ok(
            Method::GET,
            t,
            &format!("/routers/{router}/dispatches/{id}"),
            None,
        )
        .await
    }

    /// Every event of the account (or of `filter`'s query), newest first, walked by cursor.
    async fn events(&self, t: &str, filter: &str) -> Vec<Value> {
        let mut all = Vec::new();
        let mut uri = format!("/audit-events?limit=100{filter}");
        loop {
            let page = self.ok(Method::GET, t, &uri, None).await;
            all.extend(page["data"].as_array().unwrap().iter().cloned());
            match page["pagination"]["next_after"].as_str() {
                Some(after) => uri = format!("/audit-events?limit=100{filter}&after={after}"),
                None => return all,
            }
        }
    }

    async fn target_events(&self, t: &str, kind: &str, id: &str) -> Vec<Value> {
        self.events(t, &format!("&target_type={kind}&target_id={id}"))
            .await
    }
}

fn actions(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect()
}

/// `{path: (before, after)}` of an event's changes.
fn changes(event: &Value) -> std::collections::BTreeMap<String, (Value, Value)> {
    event["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_string(),
                (c["before"].clone(), c["after"].clone()),
            )
        })
        .collect()
}

fn paths(event: &Value) -> Vec<String> {
    changes(event).into_keys().collect()
}

fn router_body(name: &str) -> Value {
    json!({
        "name": name,
        "object_type": "contacts",
        "settings": {
            "owner_field": "contact_owner",
            "distribution_model": "round robin",
            "ignore_working_hours": true,
            "overwrite": true
        },
        "users": [{"email": ANA}, {"email": BEN}],
        "teams": []
    })
}

fn draft_body(name: &str, users: &[&str]) -> Value {
    json!({
        "name": name,
        "has_integration": false,
        "settings": {
            "owner_field": "contact_owner",
            "distribution_model": "round robin",
            "ignore_working_hours": true,
            "overwrite": true
        },
        "users": users.iter().map(|u| json!({"email": u})).collect::<Vec<_>>(),
        "teams": []
    })
}

async fn an_entry_keeps_the_explanation_explain_gave_and_lists_never_carry_it(app: TestApp) {
    let t = app.northwind().await;
    let reader = app.token(NORTHWIND_READONLY, "service-api/read").await;
    for object in [LEE, DANA] {
        let explained = app.explain_now(&reader, INBOUND_ROUTER, object).await;
        let dispatched = app.dispatch_now(&t, INBOUND_ROUTER, object).await;
        assert_eq!(dispatched["user"], explained["user"]);
        let listed = app.newest_entry(&reader, INBOUND_ROUTER).await;
        assert!(
            listed.get("explanation").is_none(),
            "lists never carry it: {listed}"
        );
        let id = listed["id"].as_str().unwrap();
        let entry = app.entry(&reader, INBOUND_ROUTER, id).await;
        assert_eq!(
            entry["explanation"], explained["explanation"],
            "the snapshot is what explain gave"
        );
        assert_eq!(entry["user"], explained["user"]);
        // The entry in section 8's shape, plus `explanation`.
        let mut without = entry.clone();
        without.as_object_mut().unwrap().remove("explanation");
        assert_eq!(without, listed);
    }
    // The entry's own 404s and the router's rules.
    let id = app.newest_entry(&t, INBOUND_ROUTER).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    for uri in [
        format!(
            "/routers/{INBOUND_ROUTER}/dispatches/{}",
            uuid::Uuid::now_v7()
        ),
        format!("/routers/{INBOUND_ROUTER}/dispatches/not-a-uuid"),
        format!("/routers/{DEALS_ROUTER}/dispatches/{id}"),
    ] {
        assert_error(
            &app.get(&t, &uri).await,
            StatusCode::NOT_FOUND,
            "Dispatch not found",
        );
    }
    let unknown = format!("/routers/{}/dispatches/{id}", uuid::Uuid::new_v4());
    assert_error(
        &app.get(&t, &unknown).await,
        StatusCode::NOT_FOUND,
        "Router not found",
    );
    let bad = app.get(&t, &format!("/routers/nope/dispatches/{id}")).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
    let anonymous = app
        .raw(
            Method::GET,
            &format!("/routers/{INBOUND_ROUTER}/dispatches/{id}"),
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

async fn an_absence_at_the_dispatch_stays_in_the_snapshot_after_the_member_returns(app: TestApp) {
    let t = app.northwind().await;
    let user = format!("/users/{BEN_ID}");
    app.ok(
        Method::PATCH,
        &t,
        &user,
        Some(json!({"office_status": false})),
    )
    .await;
    app.dispatch_now(&t, INBOUND_ROUTER, LEE).await;
    let id = app.newest_entry(&t, INBOUND_ROUTER).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ben = |entry: &Value| {
        entry["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["user"] == BEN)
            .cloned()
            .unwrap()
    };
    let before = app.entry(&t, INBOUND_ROUTER, &id).await;
    let at_dispatch = ben(&before["explanation"]);
    assert_eq!(at_dispatch["eligible"], false, "{before}");
    assert!(at_dispatch["reasons"]
        .as_array()
        .unwrap()
        .contains(&json!("office_status_off")));
    app.ok(
        Method::PATCH,
        &t,
        &user,
        Some(json!({"office_status": true})),
    )
    .await;
    let back = app.ok(Method::GET, &t, &user, None).await;
    assert_eq!(back["office_status"], true, "Ben is back now");
    let after = app.entry(&t, INBOUND_ROUTER, &id).await;
    assert_eq!(after, before, "the snapshot stays as it was decided");
}

async fn a_stopped_run_keeps_what_explain_would_answer(app: TestApp) {
    let t = app.northwind().await;
    for (router, object, message) in [
        (UNPUBLISHED_ROUTER, DANA, "The router is unpublished"),
        (INBOUND_ROUTER, "nope", "Object not found"),
    ] {
        let explained = app.explain_now(&t, router, object).await;
        assert_eq!(explained["message"], message);
        let dispatched = app.dispatch_now(&t, router, object).await;
        assert_eq!(dispatched["message"], message);
        let listed = app.newest_entry(&t, router).await;
        assert_eq!(listed["message"], message);
        let entry = app.entry(&t, router, listed["id"].as_str().unwrap()).await;
        assert_eq!(entry["explanation"], explained["explanation"], "{message}");
        assert_eq!(
            entry["explanation"],
            json!({"trigger": null, "candidates": null, "account_match": null, "sla": null})
        );
    }
}

async fn every_router_action_is_on_record_in_order_with_its_changes(app: TestApp) {
    let t = app.northwind().await;
    let created = app
        .ok(Method::POST, &t, "/routers", Some(router_body("Audit")))
        .await;
    let id = created["id"].as_str().unwrap().to_string();
    let r = |tail: &str| format!("/routers/{id}{tail}");
    app.ok(
        Method::PUT,
        &t,
        &r("/draft"),
        Some(draft_body("Audit 2", &[ANA, BEN])),
    )
    .await;
    app.ok(Method::DELETE, &t, &r("/draft"), None).await;
    let draft = app
        .call(
            Method::PUT,
            &r("/draft"),
            &t,
            Some(draft_body("Audit 3", &[ANA, BEN, CHEN])),
        )
        .await;
    assert_eq!(draft.status, StatusCode::OK, "{}", draft.body);
    let etag = draft.headers["etag"].to_str().unwrap().to_string();
    let published = app
        .with_headers(
            Method::POST,
            &r("/publish"),
            &t,
            &[("if-match", &etag)],
            None,
        )
        .await;
    assert_eq!(published.status, StatusCode::OK, "{}", published.body);
    // A publish of a published router without a draft changes nothing and is on record.
    app.ok(Method::POST, &t, &r("/publish"), None).await;
    app.ok(Method::POST, &t, &r("/unpublish"), None).await;
    app.ok(Method::POST, &t, &r("/revisions/1/restore"), None)
        .await;
    app.ok(Method::DELETE, &t, &r(""), None).await;

    let events = app.target_events(&t, "router", &id).await;
    let mut oldest_first = events.clone();
    oldest_first.reverse();
    assert_eq!(
        actions(&oldest_first),
        [
            "router.created",
            "router.draft_updated",
            "router.draft_deleted",
            "router.draft_updated",
            "router.published",
            "router.published",
            "router.unpublished",
            "router.restored",
            "router.archived"
        ]
    );
    let e = &oldest_first;
    for event in e {
        assert_eq!(event["target"], json!({"type": "router", "id": id}));
        assert_eq!(
            event["actor"],
            json!({"client_id": NORTHWIND.0, "sub": NORTHWIND.0})
        );
        assert!(event["at"].as_str().unwrap().ends_with('Z'));
    }
    assert_eq!(
        paths(&e[0]),
        ["has_integration", "name", "settings", "teams", "users"]
    );
    assert!(changes(&e[0]).values().all(|(before, _)| before.is_null()));
    assert_eq!(changes(&e[0])["name"].1, "Audit");
    assert_eq!(
        changes(&e[1]),
        [("name".to_string(), (json!("Audit"), json!("Audit 2")))].into()
    );
    assert_eq!(
        changes(&e[2]),
        [("name".to_string(), (json!("Audit 2"), json!("Audit")))].into(),
        "no draft = the live configuration"
    );
    assert_eq!(paths(&e[3]), ["name", "users"]);
    let published = changes(&e[4]);
    assert_eq!(published["name"], (json!("Audit"), json!("Audit 3")));
    assert_eq!(published["is_published"], (json!(false), json!(true)));
    assert!(published.contains_key("users"));
    assert_eq!(e[5]["changes"], json!([]), "a publish that changed nothing");
    assert_eq!(
        changes(&e[6]),
        [("is_published".to_string(), (json!(true), json!(false)))].into()
    );
    // Revision 1 over no draft: the live configuration (revision 2) compared with revision 1.
    let restored = changes(&e[7]);
    assert_eq!(restored["name"], (json!("Audit 3"), json!("Audit")));
    let archived = changes(&e[8]);
    assert_eq!(paths(&e[8]), ["archived"]);
    assert_eq!(archived["archived"].0, json!(false));
    assert!(archived["archived"].1.is_string());
    // Each event reads alone as it is listed.
    for event in e {
        let one = app
            .ok(
                Method::GET,
                &t,
                &format!("/audit-events/{}", event["id"].as_str().unwrap()),
                None,
            )
            .await;
        assert_eq!(&one, event);
    }
}

async fn member_calendar_and_subscription_events_hold_their_changes_and_no_secret(app: TestApp) {
    let t = app.northwind().await;
    let user = format!("/users/{BEN_ID}");
    app.ok(
        Method::PATCH,
        &t,
        &user,
        Some(json!({"office_status": false, "phone": "+49 30 1234"})),
    )
    .await;
    let member = app.target_events(&t, "member", BEN_ID).await;
    assert_eq!(actions(&member), ["member.updated"]);
    let c = changes(&member[0]);
    assert_eq!(c["office_status"], (json!(true), json!(false)));
    assert_eq!(c["phone"].1, json!("+49 30 1234"));
    assert_eq!(paths(&member[0]), ["office_status", "phone"]);

    let calendar = json!({"name": "Paris", "time_zone": "Europe/Paris", "holidays": []});
    let cal = app
        .ok(Method::POST, &t, "/holiday-calendars", Some(calendar))
        .await;
    let cal_id = cal["id"].as_str().unwrap().to_string();
    let holidays = json!([{"name": "Bastille Day", "date": "2026-07-14", "yearly": true}]);
    app.ok(
        Method::PUT,
        &t,
        &format!("/holiday-calendars/{cal_id}"),
        Some(json!({"name": "Paris", "time_zone": "Europe/Paris", "holidays": holidays})),
    )
    .await;
    app.ok(
        Method::DELETE,
        &t,
        &format!("/holiday-calendars/{cal_id}"),
        None,
    )
    .await;
    let cal_events = app.target_events(&t, "holiday_calendar", &cal_id).await;
    assert_eq!(
        actions(&cal_events),
        [
            "holiday_calendar.deleted",
            "holiday_calendar.updated",
            "holiday_calendar.created"
        ]
    );
    assert_eq!(
        changes(&cal_events[2]),
        [
            ("holidays".to_string(), (json!(null), json!([]))),
            ("name".to_string(), (json!(null), json!("Paris"))),
            (
                "time_zone".to_string(),
                (json!(null), json!("Europe/Paris"))
            ),
        ]
        .into()
    );
    assert_eq!(paths(&cal_events[1]), ["holidays"]);
    assert_eq!(changes(&cal_events[1])["holidays"].0, json!([]));
    assert!(changes(&cal_events[0])
        .values()
        .all(|(_, after)| after.is_null()));
    assert_eq!(paths(&cal_events[0]), ["holidays", "name", "time_zone"]);

    let hook = app
        .ok(
            Method::POST,
            &t,
            "/webhooks",
            Some(json!({"url": "https://hooks.northwind.example/a", "events": ["assignment.created"]})),
        )
        .await;
    let hook_id = hook["id"].as_str().unwrap().to_string();
    let mut secrets = vec![hook["secret"].as_str().unwrap().to_string()];
    app.ok(
        Method::PATCH,
        &t,
        &format!("/webhooks/{hook_id}"),
        Some(json!({"enabled": false, "description": "paused"})),
    )
    .await;
    let rotated = app
        .ok(
            Method::POST,
            &t,
            &format!("/webhooks/{hook_id}/rotate-secret"),
            None,
        )
        .await;
    secrets.push(rotated["secret"].as_str().unwrap().to_string());
    app.ok(Method::DELETE, &t, &format!("/webhooks/{hook_id}"), None)
        .await;
    let hook_events = app.target_events(&t, "webhook", &hook_id).await;
    assert_eq!(
        actions(&hook_events),
        [
            "webhook.deleted",
            "webhook.secret_rotated",
            "webhook.updated",
            "webhook.created"
        ]
    );
    assert_eq!(
        paths(&hook_events[3]),
        ["description", "enabled", "events", "url"]
    );
    assert_eq!(
        changes(&hook_events[2]),
        [
            ("description".to_string(), (json!(null), json!("paused"))),
            ("enabled".to_string(), (json!(true), json!(false))),
        ]
        .into()
    );
    assert_eq!(hook_events[1]["changes"], json!([]));
    // Secrets never enter an event: every event of the account, scanned whole.
    let all = app.events(&t, "").await;
    assert!(all.len() >= 8);
    for event in &all {
        let text = event.to_string();
        assert!(!text.contains("whsec_"), "{text}");
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "{text}");
        }
        assert!(!text.contains("secret\""), "no key names a secret: {text}");
    }
}

async fn a_refused_replayed_or_unchanged_write_records_nothing(app: TestApp) {
    let t = app.northwind().await;
    let reader = app.token(NORTHWIND_READONLY, "service-api/read").await;
    let before = app.events(&t, "").await;
    let user = format!("/users/{BEN_ID}");
    // Unchanged values.
    let current = app.ok(Method::GET, &t, &user, None).await;
    app.ok(
        Method::PATCH,
        &t,
        &user,
        Some(json!({"office_status": current["office_status"], "phone": current["phone"]})),
    )
    .await;
    // Refused: a 400, a 403, a 404.
    let bad = app
        .call(
            Method::PATCH,
            &user,
            &t,
            Some(json!({"office_status": "yes"})),
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let forbidden = app
        .call(
            Method::PATCH,
            &user,
            &reader,
            Some(json!({"office_status": false})),
        )
        .await;
    assert_eq!(forbidden.status, StatusCode::FORBIDDEN);
    let refused = app
        .call(Method::POST, "/routers", &t, Some(json!({"name": ""})))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    let missing = app
        .call(
            Method::POST,
            &format!("/routers/{}/publish", uuid::Uuid::new_v4()),
            &t,
            None,
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(app.events(&t, "").await, before, "nothing recorded");

    // A calendar PUT and a subscription PATCH with the same values.
    let body = json!({"name": "Same", "time_zone": "UTC", "holidays": []});
    let cal = app
        .ok(Method::POST, &t, "/holiday-calendars", Some(body.clone()))
        .await;
    let cal_id = cal["id"].as_str().unwrap();
    app.ok(
        Method::PUT,
        &t,
        &format!("/holiday-calendars/{cal_id}"),
        Some(body),
    )
    .await;
    let hook = app
        .ok(
            Method::POST,
            &t,
            "/webhooks",
            Some(json!({"url": "https://hooks.northwind.example/b", "events": ["assignment.created"]})),
        )
        .await;
    let hook_id = hook["id"].as_str().unwrap();
    app.ok(
        Method::PATCH,
        &t,
        &format!("/webhooks/{hook_id}"),
        Some(json!({"enabled": true})),
    )
    .await;
    assert_eq!(
        actions(&app.target_events(&t, "holiday_calendar", cal_id).await),
        ["holiday_calendar.created"]
    );
    assert_eq!(
        actions(&app.target_events(&t, "webhook", hook_id).await),
        ["webhook.created"]
    );

    // An Idempotency-Key replay records nothing more.
    let headers = [("idempotency-key", "audit-replay-1")];
    let first = app
        .with_headers(
            Method::POST,
            "/routers",
            &t,
            &headers,
            Some(router_body("Once")),
        )
        .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let again = app
        .with_headers(
            Method::POST,
            "/routers",
            &t,
            &headers,
            Some(router_body("Once")),
        )
        .await;
    assert_eq!(again.headers["idempotent-replayed"], "true");
    let id = first.body["id"].as_str().unwrap();
    assert_eq!(
        actions(&app.target_events(&t, "router", id).await),
        ["router.created"]
    );
    assert_eq!(app.events(&t, "").await.len(), before.len() + 3);
}

async fn the_log_filters_by_target_and_window_and_walks_by_cursor(app: TestApp) {
    let t = app.northwind().await;
    let reader = app.token(NORTHWIND_READONLY, "service-api/read").await;
    let user = format!("/users/{BEN_ID}");
    for i in 0..4 {
        app.ok(
            Method::PATCH,
            &t,
            &user,
            Some(json!({"phone": format!("+1 555 000{i}")})),
        )
        .await;
        app.ok(
            Method::POST,
            &t,
            "/holiday-calendars",
            Some(json!({"name": format!("C{i}"), "time_zone": "UTC", "holidays": []})),
        )
        .await;
    }
    let all = app.events(&reader, "").await;
    assert_eq!(all.len(), 8);
    let keys: Vec<(String, String)> = all
        .iter()
        .map(|e| {
            (
                e["at"].as_str().unwrap().to_string(),
                e["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(keys, sorted, "newest first, `at` then id");
    // Pages of 3 walked by cursor give the same list, each event once.
    let mut walked = Vec::new();
    let mut uri = "/audit-events?limit=3".to_string();
    loop {
        let page = app.ok(Method::GET, &reader, &uri, None).await;
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= 3);
        walked.extend(data.iter().cloned());
        match page["pagination"]["next_after"].as_str() {
            Some(after) => uri = format!("/audit-events?limit=3&after={after}"),
            None => break,
        }
    }
    assert_eq!(walked, all);
    // Offsets too.
    let second = app
        .ok(Method::GET, &reader, "/audit-events?limit=2&offset=2", None)
        .await;
    assert_eq!(second["data"].as_array().unwrap()[..], all[2..4]);
    // By target.
    let ben = app.target_events(&reader, "member", BEN_ID).await;
    assert_eq!(ben.len(), 4);
    assert!(ben.iter().all(|e| e["action"] == "member.updated"));
    let expected: Vec<&Value> = all
        .iter()
        .filter(|e| e["target"]["type"] == "member")
        .collect();
    assert_eq!(ben.iter().collect::<Vec<_>>(), expected);
    let none = app
        .target_events(&reader, "router", &uuid::Uuid::new_v4().to_string())
        .await;
    assert!(none.is_empty());
    // A window [from, to): from the 3rd newest event's `at`, to the newest's (excluded).
    let from = all[5]["at"].as_str().unwrap();
    let to = all[0]["at"].as_str().unwrap();
    let window = app.events(&reader, &format!("&from={from}&to={to}")).await;
    let expected: Vec<&Value> = all
        .iter()
        .filter(|e| {
            let at = e["at"].as_str().unwrap();
            at >= from && at < to
        })
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(window.iter().collect::<Vec<_>>(), expected);
    let target_window = app
        .events(
            &reader,
            &format!("&target_type=member&target_id={BEN_ID}&from={from}"),
        )
        .await;
    let expected: Vec<&Value> = ben
        .iter()
        .filter(|e| e["at"].as_str().unwrap() >= from)
        .collect();
    assert_eq!(target_window.iter().collect::<Vec<_>>(), expected);
    // Errors name the parameter.
    for (query, field) in [
        ("target_type=member", "target_id"),
        (
            "target_id=2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12",
            "target_type",
        ),
        (
            "target_type=team&target_id=2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12",
            "target_type",
        ),
        ("target_type=member&target_id=not-a-uuid", "target_id"),
        ("target_type=holiday_calendar&target_id=%3E", "target_id"),
        ("from=yesterday", "from"),
        ("to=2026-13-01T00:00:00Z", "to"),
        ("from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z", "from"),
        ("from=2026-11-01T00:00:00Z&to=2026-11-01T00:00:00Z", "from"),
        ("after=junk", "after"),
    ] {
        let a = app.get(&reader, &format!("/audit-events?{query}")).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{query}: {}", a.body);
        assert_eq!(a.body["field"], field, "{query}: {}", a.body);
    }
    // A cursor belongs to its filters.
    let page = app
        .ok(Method::GET, &reader, "/audit-events?limit=1", None)
        .await;
    let after = page["pagination"]["next_after"].as_str().unwrap();
    let other = app
        .get(
            &reader,
            &format!("/audit-events?limit=1&target_type=member&target_id={BEN_ID}&after={after}"),
        )
        .await;
    assert_eq!(other.status, StatusCode::BAD_REQUEST, "{}", other.body);
    assert_eq!(other.body["field"], "after");
    // One event by id; unknown ids 404.
    let one = app
        .ok(
            Method::GET,
            &reader,
            &format!("/audit-events/{}", all[3]["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(one, all[3]);
    for id in [
        uuid::Uuid::now_v7().to_string(),
        uuid::Uuid::new_v4().to_string(),
        "not-a-uuid".to_string(),
    ] {
        let a = app.get(&reader, &format!("/audit-events/{id}")).await;
        assert_error(&a, StatusCode::NOT_FOUND, "Audit event not found");
    }
    let anonymous = app.raw(Method::GET, "/audit-events", &[], Vec::new()).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

async fn accounts_never_see_each_others_events_or_entries(app: TestApp) {
    let t = app.northwind().await;
    let other = app.token(GLOBEX, ALL_SCOPES).await;
    let user = format!("/users/{BEN_ID}");
    app.ok(
        Method::PATCH,
        &t,
        &user,
        Some(json!({"phone": "+1 555 0100"})),
    )
    .await;
    app.dispatch_now(&t, INBOUND_ROUTER, LEE).await;
    let events = app.events(&t, "").await;
    assert_eq!(events.len(), 1);
    let id = events[0]["id"].as_str().unwrap();
    let theirs = app.get(&other, "/audit-events").await;
    assert_eq!(theirs.status, StatusCode::OK, "{}", theirs.body);
    assert_eq!(theirs.body["data"], json!([]));
    let filtered = app
        .get(
            &other,
            &format!("/audit-events?target_type=member&target_id={BEN_ID}"),
        )
        .await;
    assert_eq!(filtered.body["data"], json!([]));
    assert_error(
        &app.get(&other, &format!("/audit-events/{id}")).await,
        StatusCode::NOT_FOUND,
        "Audit event not found",
    );
    let entry = app.newest_entry(&t, INBOUND_ROUTER).await;
    let uri = format!(
        "/routers/{INBOUND_ROUTER}/dispatches/{}",
        entry["id"].as_str().unwrap()
    );
    assert_error(
        &app.get(&other, &uri).await,
        StatusCode::NOT_FOUND,
        "Router not found",
    );
    // A cursor of one account is refused in the other.
    let page = app
        .ok(Method::GET, &t, "/audit-events?limit=1&offset=0", None)
        .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    app.ok(
        Method::PATCH,
        &t,
        &user,
        Some(json!({"phone": "+1 555 0101"})),
    )
    .await;
    let page = app.ok(Method::GET, &t, "/audit-events?limit=1", None).await;
    let after = page["pagination"]["next_after"].as_str().unwrap();
    let a = app
        .get(&other, &format!("/audit-events?limit=1&after={after}"))
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    assert_eq!(a.body["field"], "after");
}

/// A write whose event cannot be stored leaves neither its change nor its event (BEHAVIOR 18:
/// one transaction): the fault-injecting store puts an event under the key of each event a
/// write records, just before the write.
mod atomic {
    use super::*;
    use shared::store::faulty::FaultyStore;
    use shared::store::Store;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    shared::on_both_stores!(
        threads = 2; store:
        a_write_whose_event_cannot_be_stored_leaves_neither,
    );

    async fn a_write_whose_event_cannot_be_stored_leaves_neither(store: Arc<dyn Store>) {
        let faulty = Arc::new(FaultyStore::new(store));
        crate::common::cheap_secret_hashing();
        let built = local_server::build_app_on(
            local_server::AppConfig {
                seed: local_server::DEMO_SEED.into(),
                signing_key_pem: None,
            },
            faulty.clone(),
        )
        .await
        .unwrap();
        let app = TestApp {
            router: built.router,
        };
        let t = app.northwind().await;
        let user = format!("/users/{BEN_ID}");
        let member = app.ok(Method::GET, &t, &user, None).await;
        let routers = app.ok(Method::GET, &t, "/routers?limit=100", None).await;
        let calendars = app.ok(Method::GET, &t, "/holiday-calendars", None).await;
        faulty.faults.audit_collides.store(true, Ordering::SeqCst);
        let writes = [
            (
                Method::PATCH,
                user.clone(),
                Some(json!({"phone": "+1 555 0199"})),
            ),
            (
                Method::POST,
                "/routers".to_string(),
                Some(router_body("Never")),
            ),
            (
                Method::POST,
                format!("/routers/{UNPUBLISHED_ROUTER}/publish"),
                None,
            ),
            (
                Method::POST,
                "/holiday-calendars".to_string(),
                Some(json!({"name": "Never", "time_zone": "UTC", "holidays": []})),
            ),
        ];
        // Each write retries its colliding event until its own deadline: sent together, they
        // wait out one deadline, not four.
        let answers = futures_util::future::join_all(
            writes
                .iter()
                .map(|(method, uri, body)| app.call(method.clone(), uri, &t, body.clone())),
        )
        .await;
        for ((method, uri, _), a) in writes.iter().zip(answers) {
            assert!(
                !a.status.is_success(),
                "{method} {uri} cannot succeed without its event: {}",
                a.body
            );
        }
        faulty.faults.audit_collides.store(false, Ordering::SeqCst);
        assert_eq!(app.ok(Method::GET, &t, &user, None).await, member);
        assert_eq!(
            app.ok(Method::GET, &t, "/routers?limit=100", None).await,
            routers
        );
        assert_eq!(
            app.ok(Method::GET, &t, "/holiday-calendars", None).await,
            calendars
        );
        // Only the decoys the fault stored are in the log: no write's own event.
        let events = app.events(&t, "").await;
        assert_eq!(
            events.len(),
            faulty.faults.audit_decoys.load(Ordering::SeqCst)
        );
        assert!(
            events.iter().all(|e| e["changes"] == json!([])),
            "{events:?}"
        );
        assert!(!events.is_empty());
    }
}
