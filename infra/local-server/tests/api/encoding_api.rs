//! Path ids and query values that are not valid percent-encoded UTF-8 (BEHAVIOR 12, last
//! bullet): every route answers them in the contract's error shape, after 401 and
//! 403, never with the framework's plain-text 400. A record id is 404 (it names no record), a
//! user or router id 400 naming the parameter; a query value of a known parameter 400 naming it.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{json, Value};

/// Ids whose percent-decoding is not UTF-8: a lone continuation byte, an overlong encoding, a
/// truncated sequence after a valid prefix, a UTF-16 surrogate encoded as UTF-8.
const BAD_IDS: [&str; 4] = ["%FF", "%C0%AF", "abc%E2%82", "%ED%A0%80"];

/// (method, item path with `{id}`, scope the method needs, expected status with every scope,
/// field)
const ITEM_ROUTES: [(Method, &str, &str, u16, Option<&str>); 21] = [
    (Method::GET, "/contacts/{id}", "service-api/read", 404, None),
    (
        Method::PATCH,
        "/contacts/{id}",
        "service-api/update",
        404,
        None,
    ),
    (
        Method::DELETE,
        "/contacts/{id}",
        "service-api/delete",
        404,
        None,
    ),
    (
        Method::GET,
        "/contacts/{id}/dispatches",
        "service-api/read",
        404,
        None,
    ),
    (
        Method::GET,
        "/companies/{id}",
        "service-api/read",
        404,
        None,
    ),
    (
        Method::PATCH,
        "/companies/{id}",
        "service-api/update",
        404,
        None,
    ),
    (
        Method::DELETE,
        "/companies/{id}",
        "service-api/delete",
        404,
        None,
    ),
    (
        Method::GET,
        "/companies/{id}/dispatches",
        "service-api/read",
        404,
        None,
    ),
    (Method::GET, "/deals/{id}", "service-api/read", 404, None),
    (
        Method::PATCH,
        "/deals/{id}",
        "service-api/update",
        404,
        None,
    ),
    (
        Method::DELETE,
        "/deals/{id}",
        "service-api/delete",
        404,
        None,
    ),
    (
        Method::GET,
        "/deals/{id}/dispatches",
        "service-api/read",
        404,
        None,
    ),
    (Method::GET, "/tickets/{id}", "service-api/read", 404, None),
    (
        Method::PATCH,
        "/tickets/{id}",
        "service-api/update",
        404,
        None,
    ),
    (
        Method::DELETE,
        "/tickets/{id}",
        "service-api/delete",
        404,
        None,
    ),
    (
        Method::GET,
        "/tickets/{id}/dispatches",
        "service-api/read",
        404,
        None,
    ),
    (
        Method::GET,
        "/users/{id}",
        "service-api/read",
        400,
        Some("userId"),
    ),
    (
        Method::PATCH,
        "/users/{id}",
        "service-api/update",
        400,
        Some("userId"),
    ),
    (
        Method::GET,
        "/routers/{id}",
        "service-api/read",
        400,
        Some("routerId"),
    ),
    (
        Method::GET,
        "/routers/{id}/dispatches",
        "service-api/read",
        400,
        Some("routerId"),
    ),
    (
        Method::GET,
        "/routers/{id}/stats",
        "service-api/read",
        400,
        Some("routerId"),
    ),
];

/// A 400 in the error shape naming `field` as not valid percent-encoded UTF-8 (BEHAVIOR 12).
fn assert_undecodable_query(answer: &Answer, uri: &str, field: &str) {
    assert_error_shape(answer, 400, uri);
    assert_eq!(answer.body["field"], field, "{uri}");
    assert!(
        answer.body["message"]
            .as_str()
            .unwrap()
            .contains("percent-encoded UTF-8"),
        "{uri}: {}",
        answer.body
    );
}

fn assert_error_shape(answer: &Answer, status: u16, case: &str) {
    assert_eq!(answer.status.as_u16(), status, "{case}: {}", answer.body);
    assert_eq!(
        answer
            .headers
            .get("content-type")
            .map(|v| v.to_str().unwrap()),
        Some("application/json"),
        "{case}"
    );
    assert_eq!(answer.body["error"], json!(true), "{case}: {}", answer.body);
    assert!(
        answer.body["message"].is_string(),
        "{case}: {}",
        answer.body
    );
}

fn body_for(method: &Method) -> Option<Value> {
    (*method == Method::PATCH).then(|| json!({"fields": {"first_name": "x"}}))
}

#[tokio::test]
async fn an_item_id_that_is_not_utf8_is_answered_in_the_error_shape_after_401_and_403() {
    let app = TestApp::spawn().await;
    let every_scope = app.northwind().await;
    for (method, template, scope, status, field) in ITEM_ROUTES {
        // A token with every scope but the one this method needs.
        let others: Vec<&str> = ALL_SCOPES.split(' ').filter(|s| *s != scope).collect();
        let without_scope = app.token(NORTHWIND, &others.join(" ")).await;
        for id in BAD_IDS {
            let uri = template.replace("{id}", id);
            let case = format!("{method} {uri}");

            let anonymous = app.raw(method.clone(), &uri, &[], Vec::new()).await;
            assert_error_shape(&anonymous, 401, &format!("{case} without a token"));

            let forbidden = app
                .call(method.clone(), &uri, &without_scope, body_for(&method))
                .await;
            assert_error_shape(&forbidden, 403, &format!("{case} without {scope}"));

            let answer = app
                .call(method.clone(), &uri, &every_scope, body_for(&method))
                .await;
            assert_error_shape(&answer, status, &case);
            assert_eq!(answer.body["field"].as_str(), field, "{case}");
        }
    }
}

#[tokio::test]
async fn a_known_query_parameter_that_is_not_utf8_is_400_naming_it_and_unknown_ones_are_ignored() {
    let app = TestApp::spawn().await;
    let t = app.northwind().await;
    let lists = [
        "/contacts",
        "/companies",
        "/deals",
        "/tickets",
        "/users",
        "/routers",
        "/contacts/01936b2a-7c00-7a00-8000-000000000002/dispatches",
        "/routers/5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45/dispatches",
    ];
    for list in lists {
        for (query, field) in [
            ("limit=%FF", "limit"),
            ("offset=1%C0", "offset"),
            ("archived=%FFtrue", "archived"),
            ("after=abc%E2%82", "after"),
        ] {
            let uri = format!("{list}?{query}");
            let anonymous = app.raw(Method::GET, &uri, &[], Vec::new()).await;
            assert_error_shape(&anonymous, 401, &uri);
            assert_undecodable_query(&app.call(Method::GET, &uri, &t, None).await, &uri, field);
        }
        let ignored = app
            .call(
                Method::GET,
                &format!("{list}?x=%FF&%FE=1&limit=2"),
                &t,
                None,
            )
            .await;
        assert_eq!(ignored.status, StatusCode::OK, "{list}: {}", ignored.body);
        assert_eq!(ignored.body["pagination"]["limit"], 2, "{list}");
    }
    // `properties` on a list and on an item.
    for uri in [
        "/contacts?properties=region,%FF".to_string(),
        "/contacts/01936b2a-7c00-7a00-8000-000000000002?properties=%C3".to_string(),
    ] {
        let answer = app.call(Method::GET, &uri, &t, None).await;
        assert_error_shape(&answer, 400, &uri);
        assert_eq!(answer.body["field"], "properties", "{uri}");
    }
    // The stats window.
    for (query, field) in [
        ("from=%FF", "from"),
        ("from=2026-11-01T00:00:00Z&to=%C3", "to"),
    ] {
        let uri = format!("/routers/5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45/stats?{query}");
        assert_undecodable_query(&app.call(Method::GET, &uri, &t, None).await, &uri, field);
    }
    // Dispatch reads no query parameter: an undecodable one is ignored like any unknown one,
    // and the body decides (here: a body that is not JSON, the route's own 400).
    let answer = app
        .raw(
            Method::POST,
            "/dispatch/router?x=%FF",
            &[
                ("authorization", &format!("Bearer {t}")),
                ("content-type", "application/json"),
            ],
            b"{".to_vec(),
        )
        .await;
    assert_error_shape(&answer, 400, "POST /dispatch/router?x=%FF");
}
