//! HTTP-level tests of the user and router routes (spec "Users", "Routers"; BEHAVIOR 4, 5).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{json, Value};

const ANA: &str = "1d7e8f90-a1b2-4c3d-8e4f-5a6b7c8d9e01";
const BEN: &str = "2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12";
const ELI_ARCHIVED: &str = "5c1d2e34-f5a6-4b71-8c83-9e0f1a2b3c56";
const GINA_GLOBEX: &str = "cc8d9eab-0c1d-4ce8-93fa-057a8b9cad23";
const ADMIN_ROLE: &str = "6a1f2b3c-4d5e-4f60-8a71-92b3c4d5e6f7";
const GLOBEX_ROLE: &str = "bb7c8d9a-fb0c-4bd7-82e9-f46f7a8b9c12";
const INBOUND_ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const PERCENT_ROUTER: &str = "7e3f4a56-b7c8-4d93-8ea5-b02b3c4d5e78";
const ARCHIVED_ROUTER: &str = "9a5b6c78-d9ea-4fb5-a0c7-d24d5e6f7a90";

fn emails(list: &Value) -> Vec<&str> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["email"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn users_are_listed_by_email_without_archived_members_unless_asked() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let a = app.call(Method::GET, "/users", &t, None).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(
        emails(&a.body),
        [
            "ana.lopez@northwind.example",
            "ben.okafor@northwind.example",
            "chen.wei@northwind.example",
            "dora.maier@northwind.example"
        ]
    );
    assert_eq!(
        a.body["pagination"],
        json!({"limit": 10, "offset": 0, "count": 4, "next_after": null})
    );
    let all = app
        .call(
            Method::GET,
            "/users?archived=true&limit=2&offset=4",
            &t,
            None,
        )
        .await;
    assert_eq!(emails(&all.body), ["eli.former@northwind.example"]);
    assert_eq!(all.body["data"][0]["archived_by"], "provisioning");
    for q in ["limit=0", "limit=101", "offset=-2", "archived=1"] {
        assert_eq!(
            app.call(Method::GET, &format!("/users?{q}"), &t, None)
                .await
                .status,
            StatusCode::BAD_REQUEST,
            "{q}"
        );
    }
}

#[tokio::test]
async fn a_user_reads_back_in_the_spec_shape() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let a = app
        .call(Method::GET, &format!("/users/{ANA}"), &t, None)
        .await;
    assert_eq!(a.status, StatusCode::OK);
    let keys: Vec<&str> = a
        .body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "email",
            "full_name",
            "first_name",
            "last_name",
            "role",
            "external_id",
            "phone",
            "office_status",
            "working_hours",
            "out_office_dates",
            "time_zone",
            "calendars",
            "holiday_calendar_id",
            "capacity",
            "can_receive_notifications",
            "notification_preferences",
            "archived"
        ]
    );
    assert_eq!(a.body["role"], "Sales Rep");
    assert_eq!(
        a.body["calendars"],
        json!({"google": "ana.lopez@northwind.example"})
    );
    assert_eq!(
        a.body["working_hours"],
        json!([{"days": "Mon - Fri", "start_date": "09:00", "end_date": "18:00"}])
    );
    assert_eq!(a.body["archived"], false);
    let archived = app
        .call(Method::GET, &format!("/users/{ELI_ARCHIVED}"), &t, None)
        .await;
    assert_eq!(archived.body["archived"], "2026-06-30T17:00:00.000Z");
}

#[tokio::test]
async fn user_paths_need_a_uuid_of_this_account() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let a = app.call(Method::GET, "/users/not-a-uuid", &t, None).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(a.body["field"], "userId");
    let a = app
        .call(Method::PATCH, "/users/123", &t, Some(json!({"phone": "1"})))
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        app.call(Method::GET, &format!("/users/{GINA_GLOBEX}"), &t, None)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.call(
            Method::PATCH,
            &format!("/users/{GINA_GLOBEX}"),
            &t,
            Some(json!({"phone": "1"}))
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );
    let a = app
        .call(Method::PATCH, "/users", &t, Some(json!({"phone": "1"})))
        .await;
    assert_eq!(a.body["message"], "Missing path parameter: userId");
    let a = app.call(Method::GET, "/users/", &t, None).await;
    assert_eq!(a.body["message"], "Missing path parameter: userId");
    let a = app
        .call(Method::DELETE, &format!("/users/{ANA}"), &t, None)
        .await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(a.headers["allow"], "GET, PATCH");
    assert_eq!(
        app.raw(Method::GET, "/users", &[], vec![]).await.status,
        StatusCode::UNAUTHORIZED
    );
    let read_only = app.token(NORTHWIND_READONLY, "service-api/read").await;
    let a = app
        .call(
            Method::PATCH,
            &format!("/users/{ANA}"),
            &read_only,
            Some(json!({"phone": "1"})),
        )
        .await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn patching_a_member_changes_the_sent_keys_and_validates_the_rest() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let body = json!({
        "time_zone": "America/New_York",
        "working_hours": [{"days": "mon-fri", "start_date": "08:30", "end_date": "17:00"}, {"days": "saturday", "start_date": "22:00", "end_date": "02:00"}],
        "out_office_dates": [{"start_date": "2026-12-24", "end_date": "2026-12-26", "created_by": "ignored"}],
        "role_id": ADMIN_ROLE,
        "office_status": false,
        "capacity": [{"id": "c1", "name": "Leads", "current_capacity": 2, "max_capacity": 9, "assignment_type": "contacts"}],
        "notification_preferences": ["assignment", "assignment", "digest"],
        "external_id": null,
        "phone": "+34 600 000 000"
    });
    let a = app
        .call(Method::PATCH, &format!("/users/{BEN}"), &t, Some(body))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["time_zone"], "America/New_York");
    assert_eq!(a.body["role"], "Admin");
    assert_eq!(a.body["office_status"], false);
    assert_eq!(
        a.body["out_office_dates"],
        json!([{"start_date": "2026-12-24", "end_date": "2026-12-26"}])
    );
    assert_eq!(a.body["working_hours"][1]["days"], "saturday");
    assert_eq!(
        a.body["notification_preferences"],
        json!(["assignment", "digest"])
    );
    assert_eq!(a.body["first_name"], "Ben");
    let again = app
        .call(Method::GET, &format!("/users/{BEN}"), &t, None)
        .await;
    assert_eq!(again.body, a.body);

    let bad = [
        (json!({}), None),
        (json!({"email": "x@y.example"}), Some("email")),
        (json!({"calendars": {}}), Some("calendars")),
        (json!({"unknown": 1}), Some("unknown")),
        (json!({"time_zone": "Europe/Atlantis"}), Some("time_zone")),
        (json!({"role_id": GLOBEX_ROLE}), Some("role_id")),
        (
            json!({"out_office_dates": [{"start_date": "2026-12-10", "end_date": "2026-12-01"}]}),
            Some("out_office_dates"),
        ),
        (
            json!({"working_hours": [{"days": "Mon-Sun", "start_date": "09:00", "end_date": "17:00"}]}),
            Some("working_hours"),
        ),
    ];
    for (body, field) in bad {
        let a = app
            .call(
                Method::PATCH,
                &format!("/users/{BEN}"),
                &t,
                Some(body.clone()),
            )
            .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(a.body.get("field").and_then(Value::as_str), field, "{body}");
    }
    let auth = format!("Bearer {t}");
    let a = app
        .raw(
            Method::PATCH,
            &format!("/users/{BEN}"),
            &[("authorization", auth.as_str())],
            b"{oops".to_vec(),
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        app.call(Method::GET, &format!("/users/{BEN}"), &t, None)
            .await
            .body,
        again.body,
        "rejected PATCHes write nothing"
    );
    let a = app
        .call(
            Method::PATCH,
            &format!("/users/{ELI_ARCHIVED}"),
            &t,
            Some(json!({"phone": "1"})),
        )
        .await;
    assert_eq!(a.status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn routers_read_back_in_the_spec_shape_without_internal_data() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let a = app
        .call(Method::GET, &format!("/routers/{INBOUND_ROUTER}"), &t, None)
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body["object_type"], "contacts");
    assert_eq!(a.body["settings"]["distribution_model"], "round robin");
    assert_eq!(
        a.body["settings"]["trigger"]["groups"][0]["conditions"][0]["operator"],
        "in"
    );
    assert_eq!(
        a.body["users"],
        json!([{"email": "ana.lopez@northwind.example"}, {"email": "ben.okafor@northwind.example"}])
    );
    assert_eq!(a.body["teams"], json!([{"name": "Inbound"}]));
    let settings_keys: Vec<&str> = a.body["settings"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        settings_keys,
        [
            "overwrite",
            "owner_field",
            "distribution_model",
            "default_user",
            "disable_default_assignment",
            "ignore_working_hours",
            "account_matching",
            "rotation_type",
            "trigger",
            "sla",
            "holiday_calendar_id"
        ]
    );
    assert_eq!(
        a.body["settings"]["sla"],
        Value::Null,
        "BEHAVIOR 14: null when unset"
    );
    let p = app
        .call(Method::GET, &format!("/routers/{PERCENT_ROUTER}"), &t, None)
        .await;
    assert_eq!(p.body["settings"]["default_user"], Value::Null);
    assert!(
        !p.body.to_string().contains("percentage\":"),
        "weights must not leak: {}",
        p.body
    );
    let list = app.call(Method::GET, "/routers", &t, None).await;
    let names: Vec<&str> = list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["Inbound leads", "Deals by share", "Support tickets"]
    );
    let all = app
        .call(Method::GET, "/routers?archived=true", &t, None)
        .await;
    assert_eq!(all.body["pagination"]["count"], 4);
    let archived = app
        .call(
            Method::GET,
            &format!("/routers/{ARCHIVED_ROUTER}"),
            &t,
            None,
        )
        .await;
    assert_eq!(archived.body["settings"], Value::Null);
    assert_eq!(archived.body["archived_by"], "provisioning");
}

#[tokio::test]
async fn router_paths_need_a_uuid_of_this_account() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let globex = app.token(GLOBEX, ALL_SCOPES).await;
    assert_eq!(
        app.call(Method::GET, "/routers/xyz", &t, None).await.status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        app.call(
            Method::GET,
            &format!("/routers/{INBOUND_ROUTER}"),
            &globex,
            None
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.call(Method::GET, "/routers", &globex, None).await.body["pagination"]["count"],
        0
    );
    let a = app.call(Method::PUT, "/routers", &t, Some(json!({}))).await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(a.headers["allow"], "GET, POST");
    assert_eq!(
        app.call(Method::GET, "/routers/", &t, None).await.body["message"],
        "Missing path parameter: routerId"
    );
    assert_eq!(
        app.call(Method::GET, "/routers?limit=500", &t, None)
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn store_failures_are_opaque_500s_on_user_and_router_routes() {
    use std::sync::atomic::Ordering;
    let (app, faulty) = spawn_on_faulty_store().await;
    let t = app.northwind().await;
    faulty.faults.backend_down.store(true, Ordering::SeqCst);
    let calls = [
        (Method::GET, "/users".to_string(), None),
        (Method::GET, format!("/users/{ANA}"), None),
        (
            Method::PATCH,
            format!("/users/{ANA}"),
            Some(json!({"phone": "1"})),
        ),
        (Method::GET, "/routers".to_string(), None),
        (Method::GET, format!("/routers/{INBOUND_ROUTER}"), None),
    ];
    for (method, path, body) in calls {
        let a = app.call(method, &path, &t, body).await;
        assert_eq!(a.status, StatusCode::INTERNAL_SERVER_ERROR, "{path}");
        assert_eq!(
            a.body,
            json!({"message": "Internal server error", "error": true})
        );
    }
}
