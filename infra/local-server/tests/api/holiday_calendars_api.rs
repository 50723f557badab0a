//! HTTP-level tests of holiday calendars (BEHAVIOR 17): the five routes with their shape, list
//! order, limits and 404s; every body rule a 400 naming its JSON path with nothing written; the
//! 409 while an active member or the live or draft configuration of a non-archived router names
//! a calendar (and the references given back by a member's PATCH, a draft's delete, a publish
//! and an archive); `Invalid holiday_calendar_id` on members and routers; and a holiday in
//! dispatch and explain (reason `holiday`, the member's own calendar and the router's). Every
//! test runs on the embedded store and on DynamoDB (the emulator of `bash infra/scripts/test.sh`).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use chrono::Utc;
use common::*;
use serde_json::{json, Value};

const BEN: &str = "ben.okafor@northwind.example";
const BEN_ID: &str = "2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12";
const CHEN: &str = "chen.wei@northwind.example";
const DORA: &str = "dora.maier@northwind.example";
const ANA: &str = "ana.lopez@northwind.example";
/// The demo's Dana, a contact at a company Ana owns (account matching).
const DANA: &str = "01936b2a-7c00-7a00-8000-000000000002";
/// The demo seed's "Berlin office" calendar (Dora's).
const DEMO_CALENDAR: &str = "7d3e4f50-a1b2-4c3d-9e4f-0a1b2c3d4e5f";

// Each body `async fn name(app: TestApp)` runs on both stores, over the demo seed.
shared::on_both_stores!(
    with app_on:
    a_calendar_is_created_read_listed_replaced_and_deleted,
    every_body_rule_is_a_400_naming_its_json_path_and_writes_nothing,
    at_most_20_calendars_and_500_holidays,
    a_calendar_named_by_a_member_or_a_router_is_in_use_until_they_let_go,
    an_unknown_calendar_id_is_invalid_on_members_and_routers,
    a_holiday_makes_the_member_or_the_whole_pool_unavailable,
);

fn assert_error(a: &Answer, status: StatusCode, message: &str) {
    assert_eq!(a.status, status, "{}", a.body);
    assert_eq!(a.body["message"], message, "{}", a.body);
    assert_eq!(a.body["error"], true);
}

/// A calendar body in UTC with one whole-day holiday today (UTC) when `today`.
fn body(name: &str, today: bool) -> Value {
    let holidays = if today {
        json!([{"name": "Today", "date": Utc::now().format("%Y-%m-%d").to_string()}])
    } else {
        json!([{"name": "New Year", "date": "2026-01-01", "yearly": true}])
    };
    json!({"name": name, "time_zone": "UTC", "holidays": holidays})
}

impl TestApp {
    async fn create_calendar(&self, t: &str, body: Value) -> String {
        let a = self
            .call(Method::POST, "/holiday-calendars", t, Some(body))
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
        a.body["id"].as_str().unwrap().to_string()
    }

    async fn delete_calendar(&self, t: &str, id: &str) -> Answer {
        self.call(Method::DELETE, &format!("/holiday-calendars/{id}"), t, None)
            .await
    }

    async fn calendar_count(&self, t: &str) -> usize {
        let a = self
            .call(Method::GET, "/holiday-calendars?limit=100", t, None)
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        a.body["data"].as_array().unwrap().len()
    }

    /// A published round robin contacts router over `users` (any hour), with `calendar`.
    async fn router_with(&self, t: &str, users: &[&str], calendar: Option<&str>) -> String {
        let a = self
            .call(
                Method::POST,
                "/routers",
                t,
                Some(router_body("Holidays", users, calendar)),
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
        let id = a.body["id"].as_str().unwrap().to_string();
        let published = self
            .call(Method::POST, &format!("/routers/{id}/publish"), t, None)
            .await;
        assert_eq!(published.status, StatusCode::OK, "{}", published.body);
        id
    }

    async fn put_draft(&self, t: &str, id: &str, body: Value) -> Answer {
        self.call(Method::PUT, &format!("/routers/{id}/draft"), t, Some(body))
            .await
    }

    async fn explain(&self, t: &str, router: &str, object: &str) -> Value {
        let a = self
            .call(
                Method::POST,
                "/dispatch/router/explain",
                t,
                Some(json!({"router_id": router, "object_id": object})),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        a.body
    }
}

fn router_body(name: &str, users: &[&str], calendar: Option<&str>) -> Value {
    json!({
        "name": name,
        "object_type": "contacts",
        "settings": {
            "owner_field": "contact_owner",
            "distribution_model": "round robin",
            "ignore_working_hours": true,
            "overwrite": true,
            "holiday_calendar_id": calendar
        },
        "users": users.iter().map(|u| json!({"email": u})).collect::<Vec<_>>(),
        "teams": []
    })
}

async fn a_calendar_is_created_read_listed_replaced_and_deleted(app: TestApp) {
    let t = app.northwind().await;
    let created = app
        .call(
            Method::POST,
            "/holiday-calendars",
            &t,
            Some(json!({
                "name": "Berlin office",
                "time_zone": "Europe/Berlin",
                "holidays": [
                    {"name": "New Year", "date": "2026-01-01", "yearly": true},
                    {"name": "Christmas Eve", "date": "2026-12-24", "start": "13:00", "end": "17:00"}
                ]
            })),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let mut keys: Vec<&str> = created
        .body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "created_at",
            "holidays",
            "id",
            "name",
            "time_zone",
            "updated_at"
        ]
    );
    assert_eq!(created.body["time_zone"], "Europe/Berlin");
    assert_eq!(
        created.body["holidays"],
        json!([
            {"name": "New Year", "date": "2026-01-01", "start": null, "end": null, "yearly": true},
            {"name": "Christmas Eve", "date": "2026-12-24", "start": "13:00", "end": "17:00", "yearly": false}
        ])
    );
    let read = app
        .call(Method::GET, &format!("/holiday-calendars/{id}"), &t, None)
        .await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.body, created.body);

    let second = app.create_calendar(&t, body("Second", false)).await;
    let listed = app.call(Method::GET, "/holiday-calendars", &t, None).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let ids: Vec<&str> = listed.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    // Oldest first: the seeded calendar (whose id is no UUID v7) by its creation time.
    assert_eq!(
        ids,
        vec![DEMO_CALENDAR, id.as_str(), second.as_str()],
        "oldest first"
    );
    assert_eq!(listed.body["data"][1], created.body);
    // Pages of one, walked with the cursor, give the same order.
    let mut walked = Vec::new();
    let mut uri = "/holiday-calendars?limit=1".to_string();
    loop {
        let page = app.call(Method::GET, &uri, &t, None).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        walked.push(page.body["data"][0]["id"].as_str().unwrap().to_string());
        match page.body["pagination"]["next_after"].as_str() {
            Some(after) => uri = format!("/holiday-calendars?limit=1&after={after}"),
            None => break,
        }
    }
    assert_eq!(walked, ids);

    // A PUT replaces all three keys; created_at stays.
    let replaced = app
        .call(
            Method::PUT,
            &format!("/holiday-calendars/{id}"),
            &t,
            Some(json!({"name": "Munich office", "time_zone": "Europe/Berlin", "holidays": []})),
        )
        .await;
    assert_eq!(replaced.status, StatusCode::OK, "{}", replaced.body);
    assert_eq!(replaced.body["name"], "Munich office");
    assert_eq!(replaced.body["holidays"], json!([]));
    assert_eq!(replaced.body["created_at"], created.body["created_at"]);
    assert!(replaced.body["updated_at"].as_str() >= created.body["updated_at"].as_str());

    let deleted = app.delete_calendar(&t, &id).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    for (method, uri) in [
        (Method::GET, format!("/holiday-calendars/{id}")),
        (Method::DELETE, format!("/holiday-calendars/{id}")),
        (Method::GET, "/holiday-calendars/not-a-uuid".to_string()),
    ] {
        let a = app.call(method, &uri, &t, None).await;
        assert_error(&a, StatusCode::NOT_FOUND, "Holiday calendar not found");
    }
    let put = app
        .call(
            Method::PUT,
            &format!("/holiday-calendars/{id}"),
            &t,
            Some(body("x", false)),
        )
        .await;
    assert_error(&put, StatusCode::NOT_FOUND, "Holiday calendar not found");
    // The 404 comes before the body's 400 (BEHAVIOR 2), whatever the body.
    let put = app
        .call(
            Method::PUT,
            &format!("/holiday-calendars/{id}"),
            &t,
            Some(json!([1])),
        )
        .await;
    assert_error(&put, StatusCode::NOT_FOUND, "Holiday calendar not found");
    // Another account does not see the calendar.
    let other = app.token(GLOBEX, ALL_SCOPES).await;
    let a = app
        .call(
            Method::GET,
            &format!("/holiday-calendars/{second}"),
            &other,
            None,
        )
        .await;
    assert_error(&a, StatusCode::NOT_FOUND, "Holiday calendar not found");
}

async fn every_body_rule_is_a_400_naming_its_json_path_and_writes_nothing(app: TestApp) {
    let t = app.northwind().await;
    let holiday = |h: Value| {
        json!({"name": "x", "time_zone": "UTC", "holidays": [
            {"name": "ok", "date": "2026-05-01"}, h
        ]})
    };
    let cases = [
        (json!({"time_zone": "UTC", "holidays": []}), "name"),
        (
            json!({"name": "", "time_zone": "UTC", "holidays": []}),
            "name",
        ),
        (json!({"name": "x", "holidays": []}), "time_zone"),
        (
            json!({"name": "x", "time_zone": "Mars/Olympus", "holidays": []}),
            "time_zone",
        ),
        (json!({"name": "x", "time_zone": "UTC"}), "holidays"),
        (
            json!({"name": "x", "time_zone": "UTC", "holidays": {}}),
            "holidays",
        ),
        (
            holiday(json!({"name": "d", "date": "2026-13-01"})),
            "holidays[1].date",
        ),
        (
            holiday(json!({"name": "d", "date": "2026-02-30"})),
            "holidays[1].date",
        ),
        (
            holiday(json!({"name": "d", "date": "1 May"})),
            "holidays[1].date",
        ),
        (holiday(json!({"date": "2026-05-01"})), "holidays[1].name"),
        (
            holiday(json!({"name": "d", "date": "2026-05-01", "start": "10:00", "end": "10:00"})),
            "holidays[1].end",
        ),
        (
            holiday(json!({"name": "d", "date": "2026-05-01", "start": "11:00", "end": "10:00"})),
            "holidays[1].end",
        ),
        (
            holiday(json!({"name": "d", "date": "2026-05-01", "start": "10:00"})),
            "holidays[1].end",
        ),
        (
            holiday(json!({"name": "d", "date": "2026-05-01", "end": "10:00"})),
            "holidays[1].start",
        ),
        (
            holiday(json!({"name": "d", "date": "2026-05-01", "start": "24:00", "end": "24:30"})),
            "holidays[1].start",
        ),
        (
            holiday(json!({"name": "d", "date": "2026-05-01", "start": "9:00", "end": "10:00"})),
            "holidays[1].start",
        ),
        (
            holiday(json!({"name": "d", "date": "2026-05-01", "yearly": "yes"})),
            "holidays[1].yearly",
        ),
        (holiday(json!("2026-05-01")), "holidays[1]"),
    ];
    for (sent, field) in cases {
        let a = app
            .call(Method::POST, "/holiday-calendars", &t, Some(sent.clone()))
            .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{sent}: {}", a.body);
        assert_eq!(a.body["field"], field, "{sent}: {}", a.body);
        assert_eq!(a.body["error"], true);
    }
    assert_eq!(
        app.calendar_count(&t).await,
        1,
        "nothing was written (the demo's one)"
    );
    // A PUT is checked the same way and leaves the calendar as it was.
    let id = app.create_calendar(&t, body("Kept", false)).await;
    let a = app
        .call(
            Method::PUT,
            &format!("/holiday-calendars/{id}"),
            &t,
            Some(holiday(
                json!({"name": "d", "date": "2026-05-01", "start": "12:00", "end": "11:59"}),
            )),
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    assert_eq!(a.body["field"], "holidays[1].end");
    let read = app
        .call(Method::GET, &format!("/holiday-calendars/{id}"), &t, None)
        .await;
    assert_eq!(read.body["name"], "Kept");
}

async fn at_most_20_calendars_and_500_holidays(app: TestApp) {
    let t = app.northwind().await;
    let many = |n: usize| {
        let start = chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap();
        let holidays: Vec<Value> = (0..n)
            .map(|i| {
                let date = start + chrono::Days::new(i as u64);
                json!({"name": format!("Day {i}"), "date": date.format("%Y-%m-%d").to_string()})
            })
            .collect();
        json!({"name": "Many", "time_zone": "UTC", "holidays": holidays})
    };
    let too_many = app
        .call(Method::POST, "/holiday-calendars", &t, Some(many(501)))
        .await;
    assert_eq!(
        too_many.status,
        StatusCode::BAD_REQUEST,
        "{}",
        too_many.body
    );
    assert_eq!(too_many.body["field"], "holidays");
    app.create_calendar(&t, many(500)).await;
    // The demo seed holds one: 18 more make 20.
    for i in 2..20 {
        app.create_calendar(&t, body(&format!("C{i}"), false)).await;
    }
    let twenty_first = app
        .call(
            Method::POST,
            "/holiday-calendars",
            &t,
            Some(body("C21", false)),
        )
        .await;
    assert_eq!(
        twenty_first.status,
        StatusCode::BAD_REQUEST,
        "{}",
        twenty_first.body
    );
    assert_eq!(twenty_first.body["error"], true);
    assert_eq!(app.calendar_count(&t).await, 20);
}

async fn a_calendar_named_by_a_member_or_a_router_is_in_use_until_they_let_go(app: TestApp) {
    let t = app.northwind().await;
    let a = app.create_calendar(&t, body("A", false)).await;
    let b = app.create_calendar(&t, body("B", false)).await;
    let in_use =
        |answer: &Answer| assert_error(answer, StatusCode::CONFLICT, "Holiday calendar in use");

    // A member names A: in use; the member lets go: deletable.
    let patched = app
        .call(
            Method::PATCH,
            &format!("/users/{BEN_ID}"),
            &t,
            Some(json!({"holiday_calendar_id": a})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(patched.body["holiday_calendar_id"], a.as_str());
    in_use(&app.delete_calendar(&t, &a).await);
    let read = app
        .call(Method::GET, &format!("/users/{BEN_ID}"), &t, None)
        .await;
    assert_eq!(read.body["holiday_calendar_id"], a.as_str());
    let cleared = app
        .call(
            Method::PATCH,
            &format!("/users/{BEN_ID}"),
            &t,
            Some(json!({"holiday_calendar_id": null})),
        )
        .await;
    assert_eq!(cleared.status, StatusCode::OK, "{}", cleared.body);
    assert_eq!(cleared.body["holiday_calendar_id"], Value::Null);

    // A router's live configuration names A, its draft B.
    let router = app.router_with(&t, &[BEN, CHEN], Some(&a)).await;
    let shown = app
        .call(Method::GET, &format!("/routers/{router}"), &t, None)
        .await;
    assert_eq!(shown.body["settings"]["holiday_calendar_id"], a.as_str());
    in_use(&app.delete_calendar(&t, &a).await);
    let draft = app
        .put_draft(&t, &router, router_body("Holidays", &[BEN, CHEN], Some(&b)))
        .await;
    assert_eq!(draft.status, StatusCode::OK, "{}", draft.body);
    in_use(&app.delete_calendar(&t, &b).await);
    // The draft goes: B is free again (and the live A still held).
    let etag = draft.headers["etag"].to_str().unwrap().to_string();
    let dropped = app
        .with_headers(
            Method::DELETE,
            &format!("/routers/{router}/draft"),
            &t,
            &[("if-match", &etag)],
            None,
        )
        .await;
    assert_eq!(dropped.status, StatusCode::NO_CONTENT, "{}", dropped.body);
    in_use(&app.delete_calendar(&t, &a).await);
    // A draft naming B again, published: A is let go, B held by the live configuration.
    let draft = app
        .put_draft(&t, &router, router_body("Holidays", &[BEN, CHEN], Some(&b)))
        .await;
    let etag = draft.headers["etag"].to_str().unwrap().to_string();
    let published = app
        .with_headers(
            Method::POST,
            &format!("/routers/{router}/publish"),
            &t,
            &[("if-match", &etag)],
            None,
        )
        .await;
    assert_eq!(published.status, StatusCode::OK, "{}", published.body);
    assert_eq!(
        published.body["settings"]["holiday_calendar_id"],
        b.as_str()
    );
    assert_eq!(
        app.delete_calendar(&t, &a).await.status,
        StatusCode::NO_CONTENT
    );
    in_use(&app.delete_calendar(&t, &b).await);
    // A draft naming B too, then the archive: nothing names B any more.
    let draft = app
        .put_draft(&t, &router, router_body("Holidays", &[BEN], Some(&b)))
        .await;
    assert_eq!(draft.status, StatusCode::OK, "{}", draft.body);
    let archived = app
        .call(Method::DELETE, &format!("/routers/{router}"), &t, None)
        .await;
    assert_eq!(archived.status, StatusCode::OK, "{}", archived.body);
    assert_eq!(
        app.delete_calendar(&t, &b).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(app.calendar_count(&t).await, 1);
    // The seeded calendar is in use from the start: Dora names it.
    in_use(&app.delete_calendar(&t, DEMO_CALENDAR).await);
}

async fn an_unknown_calendar_id_is_invalid_on_members_and_routers(app: TestApp) {
    let t = app.northwind().await;
    // Another account's calendar is no calendar of this one.
    let other = app.token(GLOBEX, ALL_SCOPES).await;
    let foreign = app.create_calendar(&other, body("Globex", false)).await;
    for value in [json!("not-a-uuid"), json!(foreign), json!(42)] {
        let a = app
            .call(
                Method::PATCH,
                &format!("/users/{BEN_ID}"),
                &t,
                Some(json!({"holiday_calendar_id": value})),
            )
            .await;
        assert_error(&a, StatusCode::BAD_REQUEST, "Invalid holiday_calendar_id");
        let a = app
            .call(
                Method::POST,
                "/routers",
                &t,
                Some(router_body("Bad", &[BEN], value.as_str())),
            )
            .await;
        if value.is_string() {
            assert_error(&a, StatusCode::BAD_REQUEST, "Invalid holiday_calendar_id");
            assert_eq!(a.body["field"], "settings.holiday_calendar_id");
        }
    }
    let read = app
        .call(Method::GET, &format!("/users/{BEN_ID}"), &t, None)
        .await;
    assert_eq!(
        read.body["holiday_calendar_id"],
        Value::Null,
        "nothing written"
    );
    // The foreign calendar is still free to delete: no reference was taken.
    assert_eq!(
        app.delete_calendar(&other, &foreign).await.status,
        StatusCode::NO_CONTENT
    );
}

async fn a_holiday_makes_the_member_or_the_whole_pool_unavailable(app: TestApp) {
    let t = app.northwind().await;
    let today = app.create_calendar(&t, body("Today off", true)).await;
    let router = app.router_with(&t, &[BEN, CHEN], None).await;
    let contact = app.new_contact(&t).await;
    // Ben's own calendar: Ben is on holiday, Chen takes every record.
    app.call(
        Method::PATCH,
        &format!("/users/{BEN_ID}"),
        &t,
        Some(json!({"holiday_calendar_id": today})),
    )
    .await;
    let explained = app.explain(&t, &router, &contact).await;
    assert_eq!(
        explained["explanation"]["candidates"],
        json!([
            {"user": BEN, "eligible": false, "reasons": ["holiday"]},
            {"user": CHEN, "eligible": true, "reasons": []}
        ]),
        "{explained}"
    );
    assert_eq!(explained["user"], CHEN);
    for _ in 0..2 {
        let contact = app.new_contact(&t).await;
        assert_eq!(app.dispatch(&t, &router, &contact).await["user"], CHEN);
    }
    // The router's calendar: the whole pool is on holiday; the backup user takes it.
    let mut on_holiday = router_body("Holidays", &[CHEN], Some(&today));
    on_holiday["settings"]["default_user"] = json!(DORA);
    let draft = app.put_draft(&t, &router, on_holiday).await;
    assert_eq!(draft.status, StatusCode::OK, "{}", draft.body);
    let drafted = app
        .call(
            Method::POST,
            "/dispatch/router/explain",
            &t,
            Some(json!({"router_id": router, "object_id": contact, "revision": "draft"})),
        )
        .await;
    assert_eq!(drafted.status, StatusCode::OK, "{}", drafted.body);
    assert_eq!(
        drafted.body["explanation"]["candidates"],
        json!([{"user": CHEN, "eligible": false, "reasons": ["holiday"]}]),
        "{}",
        drafted.body
    );
    assert_eq!(
        (drafted.body["user"].clone(), drafted.body["reason"].clone()),
        (json!(DORA), json!("backup"))
    );
    // Section 6.10 under the router's holiday: the matched company's owner is unavailable too.
    // The demo's Dana works at a company Ana owns; without the calendar Ana takes her record.
    let mut matching = router_body("Holidays", &[CHEN], None);
    matching["settings"]["account_matching"] = json!(true);
    matching["settings"]["default_user"] = json!(DORA);
    let draft = app.put_draft(&t, &router, matching.clone()).await;
    assert_eq!(draft.status, StatusCode::OK, "{}", draft.body);
    let explain_draft = |body: Value| {
        let app = &app;
        let t = &t;
        async move {
            let a = app
                .call(Method::POST, "/dispatch/router/explain", t, Some(body))
                .await;
            assert_eq!(a.status, StatusCode::OK, "{}", a.body);
            a.body
        }
    };
    let request = json!({"router_id": router, "object_id": DANA, "revision": "draft"});
    let matched = explain_draft(request.clone()).await;
    assert_eq!(
        (matched["user"].clone(), matched["reason"].clone()),
        (json!(ANA), json!("account_matching")),
        "{matched}"
    );
    matching["settings"]["holiday_calendar_id"] = json!(today);
    let etag = draft.headers["etag"].to_str().unwrap().to_string();
    let draft = app
        .with_headers(
            Method::PUT,
            &format!("/routers/{router}/draft"),
            &t,
            &[("if-match", &etag)],
            Some(matching),
        )
        .await;
    assert_eq!(draft.status, StatusCode::OK, "{}", draft.body);
    let on_holiday = explain_draft(request).await;
    assert_eq!(
        on_holiday["explanation"]["account_match"]["eligible"], false,
        "{on_holiday}"
    );
    assert_eq!(
        (on_holiday["user"].clone(), on_holiday["reason"].clone()),
        (json!(DORA), json!("backup")),
        "{on_holiday}"
    );
}
