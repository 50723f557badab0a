//! HTTP-level tests of the token function: real requests through `routes(...)`, in process.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use axum::body::Body;
use axum::http::{header, Method, Request, Response, StatusCode};
use axum::Router;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use chrono::{DateTime, TimeZone, Utc};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use shared::auth::{
    Scope, SigningKey, TokenIssuer, TokenVerifier, DEFAULT_AUDIENCE, DEFAULT_ISSUER,
    DEV_SIGNING_KEY_PEM,
};
use shared::clock::FixedClock;
use shared::store::faulty::FaultyStore;
use shared::store::memory::MemoryStore;
use shared::store::prelude::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use token_function::{api, TokenState, MAX_BODY_BYTES};
use tower::ServiceExt;
use uuid::Uuid;

const CLIENT_ID: &str = "northwind-integration";
const SECRET: &str = "dev-secret-change-me";
const ACCOUNT: shared::types::AccountId =
    shared::types::AccountId::from_uuid(Uuid::from_u128(0x5b1c_0000_0000_4000_8000_0000_0000_0001));
const FORM: &str = "application/x-www-form-urlencoded";
const GOOD_FORM: &str = "grant_type=client_credentials&client_id=northwind-integration&client_secret=dev-secret-change-me&scope=service-api%2Fread";

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 22, 9, 30, 0)
        .single()
        .expect("a valid instant")
}

fn dev_key() -> SigningKey {
    SigningKey::from_pem(DEV_SIGNING_KEY_PEM).expect("the dev key parses")
}

/// The embedded store with the client of `events/token-post.json` (may read and create, not
/// update or delete), wrapped so a test can take the backend down.
async fn store() -> Arc<FaultyStore> {
    let seed = json!({"accounts": [{"id": ACCOUNT, "name": "Northwind", "clients": [
        {"client_id": CLIENT_ID, "client_secret": SECRET, "scopes": ["service-api/read", "service-api/create"]}
    ]}]});
    let memory = MemoryStore::new();
    let plan = shared::seed::load(
        &seed.to_string(),
        t0(),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .expect("valid test seed");
    memory.provision(&plan).await.expect("provisioned");
    Arc::new(FaultyStore::new(Arc::new(memory)))
}

/// The function as Lambda runs it (its routes, finished: 404 fallback, request ids) over
/// `store`, at a fixed time.
fn app_with(store: Arc<FaultyStore>) -> Router {
    shared::api::finish(
        api(
            TokenState {
                store,
                issuer: Arc::new(TokenIssuer::new(
                    dev_key(),
                    DEFAULT_ISSUER,
                    DEFAULT_AUDIENCE,
                    3600,
                )),
                clock: Arc::new(FixedClock::new(t0())),
            },
            shared::api::openapi::Description::RoutesOnly,
        )
        .split_for_parts()
        .0,
    )
}

async fn app() -> Router {
    app_with(store().await)
}

fn verifier() -> TokenVerifier {
    TokenVerifier::from_signing_key(&dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE)
        .expect("a verifier")
}

fn post(
    content_type: Option<&str>, authorization: Option<&str>, body: impl Into<Body>,
) -> Request<Body> {
    let mut request = Request::builder().method(Method::POST).uri("/oauth2/token");
    if let Some(content_type) = content_type {
        request = request.header(header::CONTENT_TYPE, content_type);
    }
    if let Some(authorization) = authorization {
        request = request.header(header::AUTHORIZATION, authorization);
    }
    request.body(body.into()).expect("a valid request")
}

async fn send<B>(app: Router, request: Request<B>) -> (Response<Body>, Value)
where
    Router: tower::Service<Request<B>, Response = Response<Body>, Error = std::convert::Infallible>,
{
    let response = app.oneshot(request).await.expect("infallible");
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.expect("the body reads").to_bytes();
    let json = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).expect("a JSON body")
    };
    (Response::from_parts(parts, Body::empty()), json)
}

fn header_of<'a>(response: &'a Response<Body>, name: &str) -> Option<&'a str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn a_valid_form_request_gets_a_token_that_must_not_be_cached() {
    let (response, body) = send(app().await, post(Some(FORM), None, GOOD_FORM)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        header_of(&response, "content-type"),
        Some("application/json")
    );
    assert_eq!(header_of(&response, "cache-control"), Some("no-store"));
    assert_eq!(header_of(&response, "pragma"), Some("no-cache"));
    assert_eq!(header_of(&response, "www-authenticate"), None);
    let mut keys: Vec<&str> = body
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        vec!["access_token", "expires_in", "scope", "token_type"]
    );
    assert_eq!(body["expires_in"], 3600);
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["scope"], "service-api/read");
    let token = body["access_token"].as_str().expect("a string");
    let principal = verifier().verify(token, t0()).expect("the token verifies");
    assert_eq!(
        (principal.client_id.as_str(), principal.account_id),
        (CLIENT_ID, ACCOUNT)
    );
}

#[tokio::test]
async fn basic_credentials_get_a_token() {
    let authorization = format!("Basic {}", STANDARD.encode(format!("{CLIENT_ID}:{SECRET}")));
    let request = post(
        Some("application/x-www-form-urlencoded;charset=UTF-8"),
        Some(&authorization),
        "grant_type=client_credentials&scope=service-api%2Fcreate+service-api%2Fread",
    );
    let (response, body) = send(app().await, request).await;
    assert_eq!(response.status(), StatusCode::OK, "{body}");
    assert_eq!(body["scope"], "service-api/create service-api/read");
}

/// (case, content type, Authorization, body, status, error, WWW-Authenticate)
type Case<'a> = (
    &'a str,
    Option<&'a str>,
    Option<&'a str>,
    &'a str,
    u16,
    &'a str,
    Option<&'a str>,
);

#[tokio::test]
async fn refused_requests_get_rfc_6749_error_bodies() {
    let bad_basic = format!("Basic {}", STANDARD.encode(format!("{CLIENT_ID}:wrong")));
    let cases: [Case; 7] = [
        ("JSON body", Some("application/json"), None, r#"{"grant_type":"client_credentials"}"#, 400, "invalid_request", None),
        ("no grant_type", Some(FORM), None, "scope=service-api%2Fread", 400, "invalid_request", None),
        ("wrong grant_type", Some(FORM), Some(&bad_basic), "grant_type=password", 400, "unsupported_grant_type", None),
        ("scope not allowed", Some(FORM), None, "grant_type=client_credentials&client_id=northwind-integration&client_secret=dev-secret-change-me&scope=service-api%2Fdelete", 400, "invalid_scope", None),
        ("no scope", Some(FORM), None, "grant_type=client_credentials&client_id=northwind-integration&client_secret=dev-secret-change-me", 400, "invalid_request", None),
        ("wrong secret in the form", Some(FORM), None, "grant_type=client_credentials&client_id=northwind-integration&client_secret=wrong&scope=service-api%2Fread", 401, "invalid_client", None),
        ("wrong secret in Basic", Some(FORM), Some(&bad_basic), "grant_type=client_credentials&scope=service-api%2Fread", 401, "invalid_client", Some("Basic realm=\"account-routing-api\"")),
    ];
    for (case, content_type, authorization, form, status, error, challenge) in cases {
        let (response, body) = send(
            app().await,
            post(content_type, authorization, form.to_owned()),
        )
        .await;
        assert_eq!(response.status().as_u16(), status, "{case}: {body}");
        assert_eq!(
            header_of(&response, "www-authenticate"),
            challenge,
            "{case}"
        );
        assert_eq!(
            header_of(&response, "cache-control"),
            Some("no-store"),
            "{case}"
        );
        let keys: Vec<&str> = body
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, vec!["error", "error_description"], "{case}");
        assert_eq!(body["error"], error, "{case}");
    }
}

#[tokio::test]
async fn a_store_failure_is_a_500_server_error_without_details() {
    let store = store().await;
    store.faults.backend_down.store(true, Ordering::SeqCst);
    let app = app_with(store);
    let (response, body) = send(app, post(Some(FORM), None, GOOD_FORM)).await;
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        body,
        json!({"error": "server_error", "error_description": "Internal server error"})
    );
}

#[tokio::test]
async fn other_methods_on_the_token_path_get_405_allowing_post() {
    for method in [
        Method::GET,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::HEAD,
    ] {
        let request = Request::builder()
            .method(method.clone())
            .uri("/oauth2/token")
            .body(Body::empty())
            .expect("a valid request");
        let (response, body) = send(app().await, request).await;
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method}"
        );
        assert_eq!(header_of(&response, "allow"), Some("POST"), "{method}");
        if method != Method::HEAD {
            assert_eq!(
                body,
                json!({"message": "Method not allowed", "error": true}),
                "{method}"
            );
        }
    }
}

#[tokio::test]
async fn a_body_over_one_mebibyte_gets_413_and_one_of_exactly_one_does_not() {
    let (response, body) = send(
        app().await,
        post(Some(FORM), None, vec![b'a'; MAX_BODY_BYTES + 1]),
    )
    .await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        body,
        json!({"message": "Request body too large", "error": true})
    );

    let (response, body) = send(
        app().await,
        post(Some(FORM), None, vec![b'a'; MAX_BODY_BYTES]),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "invalid_request");
}

#[tokio::test]
async fn other_paths_are_404() {
    let request = Request::builder()
        .method(Method::POST)
        .uri("/oauth2/tokens")
        .header(header::CONTENT_TYPE, FORM)
        .body(Body::from(GOOD_FORM))
        .expect("a valid request");
    let (response, body) = send(app().await, request).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(body, json!({"message": "Not found", "error": true}));
}

#[tokio::test]
async fn every_response_carries_a_request_id() {
    let (ok, _) = send(app().await, post(Some(FORM), None, GOOD_FORM)).await;
    let (refused, _) = send(app().await, post(None, None, "")).await;
    for response in [ok, refused] {
        let id = header_of(&response, "x-request-id").expect("an x-request-id");
        assert!(
            Uuid::parse_str(id).is_ok(),
            "outside API Gateway the id is a fresh UUID: {id}"
        );
    }
}

#[tokio::test]
async fn the_sample_api_gateway_event_gets_a_token() {
    let event = include_str!("../../../events/token-post.json");
    let request = lambda_http::request::from_str(event).expect("the event parses");
    let (response, body) = send(app().await, request).await;
    assert_eq!(response.status(), StatusCode::OK, "{body}");
    assert_eq!(
        header_of(&response, "x-request-id"),
        Some("Bq3XPjQ0DoEEMnA=")
    );
    assert_eq!(header_of(&response, "cache-control"), Some("no-store"));
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 3600);
    assert_eq!(body["scope"], "service-api/read service-api/create");
    let token = body["access_token"].as_str().expect("a string");
    let principal = verifier().verify(token, t0()).expect("the token verifies");
    assert_eq!(principal.client_id, CLIENT_ID);
    assert_eq!(principal.account_id, ACCOUNT);
    assert_eq!(principal.scopes, vec![Scope::Read, Scope::Create]);
}

/// RFC 6749 section 2.3.1: "The client MUST NOT use more than one authentication method in
/// each request". HTTP Basic plus a form `client_secret` is two methods and
/// is refused even when both name the same client with the right secret; a form `client_id`
/// alone next to Basic only identifies the client (section 3.2.1) and is accepted when it names
/// the Basic client.
#[tokio::test]
async fn one_client_authentication_method_per_request() {
    let basic = format!("Basic {}", STANDARD.encode(format!("{CLIENT_ID}:{SECRET}")));
    let scope = "grant_type=client_credentials&scope=service-api%2Fread";
    let cases: [(&str, String, u16, &str); 4] = [
        (
            "Basic and the same credentials in the form",
            format!("{scope}&client_id={CLIENT_ID}&client_secret={SECRET}"),
            400,
            "invalid_request",
        ),
        (
            "Basic and a form client_secret",
            format!("{scope}&client_secret={SECRET}"),
            400,
            "invalid_request",
        ),
        (
            "Basic and another form client_id",
            format!("{scope}&client_id=someone-else"),
            400,
            "invalid_request",
        ),
        (
            "Basic and the same form client_id",
            format!("{scope}&client_id={CLIENT_ID}"),
            200,
            "",
        ),
    ];
    for (case, form, status, error) in cases {
        let (response, body) = send(app().await, post(Some(FORM), Some(&basic), form)).await;
        assert_eq!(response.status().as_u16(), status, "{case}: {body}");
        if status == 200 {
            assert_eq!(body["token_type"], "Bearer", "{case}");
        } else {
            assert_eq!(body["error"], error, "{case}");
            assert_eq!(header_of(&response, "www-authenticate"), None, "{case}");
        }
    }
}

/// A burst of token requests never runs more argon2 verifications at once
/// than the process's limit (one per CPU), counted by the limit itself around each computation.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_burst_of_token_requests_runs_at_most_the_limit_of_argon2_verifications_at_once() {
    let app = app().await;
    let mut burst = tokio::task::JoinSet::new();
    for i in 0..48 {
        let app = app.clone();
        // Half right, half wrong secrets, a few unknown clients: every path hashes.
        let form = match i % 4 {
            0 | 1 => GOOD_FORM.to_owned(),
            2 => GOOD_FORM.replace(SECRET, "wrong"),
            _ => GOOD_FORM.replace(CLIENT_ID, "nobody"),
        };
        burst.spawn(async move { send(app, post(Some(FORM), None, form)).await.0.status() });
    }
    let mut statuses = Vec::new();
    while let Some(status) = burst.join_next().await {
        statuses.push(status.expect("joins").as_u16());
    }
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 24);
    assert_eq!(statuses.iter().filter(|s| **s == 401).count(), 24);
    let limit = shared::auth::HashingLimit::global();
    assert!(
        limit.peak() <= limit.limit(),
        "{} verifications ran at once, limit {}",
        limit.peak(),
        limit.limit()
    );
}

/// BEHAVIOR 1: in Lambda the source address is API Gateway's
/// `requestContext.http.sourceIp`, never the client's `X-Forwarded-For`: 20 wrong secrets from
/// one source shut that source out (429 with `Retry-After`, a correct secret included, whatever
/// `X-Forwarded-For` claims), another source still gets its token.
#[tokio::test]
async fn failed_authentications_count_per_api_gateway_source_ip() {
    let store = store().await;
    let event = |source_ip: &str, forwarded_for: &str, secret: &str| {
        let mut event: Value =
            serde_json::from_str(include_str!("../../../events/token-post.json")).unwrap();
        event["requestContext"]["http"]["sourceIp"] = json!(source_ip);
        event["headers"]["x-forwarded-for"] = json!(forwarded_for);
        event["body"] = json!(format!(
            "grant_type=client_credentials&client_id={CLIENT_ID}&client_secret={secret}&scope=service-api%2Fread"
        ));
        lambda_http::request::from_str(&event.to_string()).expect("the event parses")
    };
    for n in 0..20 {
        let forwarded = format!("198.51.100.{n}");
        let (response, body) = send(
            app_with(store.clone()),
            event("203.0.113.10", &forwarded, "wrong-secret-0123456789"),
        )
        .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{n}: {body}");
    }
    let (response, body) = send(
        app_with(store.clone()),
        event("203.0.113.10", "198.51.100.99", SECRET),
    )
    .await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(header_of(&response, "retry-after"), Some("60"));
    assert_eq!(header_of(&response, "cache-control"), Some("no-store"));
    assert_eq!(
        body,
        json!({"error": "temporarily_unavailable", "error_description": "Too many failed attempts"})
    );
    let (response, body) = send(
        app_with(store.clone()),
        event("203.0.113.11", "203.0.113.10", SECRET),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK, "another source: {body}");
}
