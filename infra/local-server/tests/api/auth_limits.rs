//! Failed client authentications are limited per `client_id` and source address (BEHAVIOR 1):
//! after 20 within 60 s every further attempt of that pair, a correct
//! secret included, is 429 with `Retry-After` (seconds until the window ends) and the RFC 6749
//! body `temporarily_unavailable`; other addresses and other clients are unaffected. The count
//! lives in the store, so two instances over one store share it. On both stores, the peer
//! address given as the local server's listener gives it (`ConnectInfo`).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use base64::Engine as _;
use chrono::{TimeZone, Utc};
use common::{NORTHWIND, NORTHWIND_READONLY};
use http_body_util::BodyExt;
use local_server::{build_app_with, with_local_keys, AppConfig, DEMO_SEED};
use serde_json::Value;
use shared::clock::{Clock, FixedClock};
use shared::deps::Deps;
use shared::store::Store;
use std::net::SocketAddr;
use std::sync::Arc;
use tower::ServiceExt;

shared::on_both_stores!(
    store:
    twenty_failures_shut_out_that_client_from_that_address_for_the_rest_of_the_minute,
    instances_over_one_store_share_the_count,
);

struct Instance {
    router: axum::Router,
    clock: Arc<FixedClock>,
}

async fn instance(store: Arc<dyn Store>) -> Instance {
    common::cheap_secret_hashing();
    let clock = Arc::new(FixedClock::new(
        Utc.with_ymd_and_hms(2026, 11, 22, 9, 30, 0).unwrap(),
    ));
    let deps = with_local_keys(Deps::new(store), None)
        .unwrap()
        .with_outbound(shared::outbound::OutboundPolicy::LOCAL)
        .with_clock(clock.clone());
    let built = build_app_with(
        AppConfig {
            seed: DEMO_SEED.to_string(),
            signing_key_pem: None,
        },
        deps,
    )
    .await
    .unwrap();
    Instance {
        router: built.router,
        clock,
    }
}

/// A token request for `client` from `peer`, with the credentials in the form or in Basic.
async fn token(
    instance: &Instance, client: (&str, &str), peer: &str, basic: bool,
) -> (StatusCode, Option<String>, Value) {
    let scope = "scope=service-api%2Fread";
    let mut request =
        Request::post("/oauth2/token").header("content-type", "application/x-www-form-urlencoded");
    let body = if basic {
        let credentials =
            base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", client.0, client.1));
        request = request.header("authorization", format!("Basic {credentials}"));
        format!("grant_type=client_credentials&{scope}")
    } else {
        format!(
            "grant_type=client_credentials&client_id={}&client_secret={}&{scope}",
            client.0, client.1
        )
    };
    let mut request = request.body(Body::from(body)).unwrap();
    let peer: SocketAddr = peer.parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(peer));
    let response = instance.router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        retry_after,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn wrong<'a>(client: (&'a str, &'a str)) -> (&'a str, &'static str) {
    (client.0, "not-the-secret-of-this-client")
}

const TOO_MANY: &str =
    r#"{"error": "temporarily_unavailable", "error_description": "Too many failed attempts"}"#;

async fn twenty_failures_shut_out_that_client_from_that_address_for_the_rest_of_the_minute(
    store: Arc<dyn Store>,
) {
    let i = instance(store).await;
    let start = i.clock.now();
    for n in 0..20 {
        let (status, _, body) = token(&i, wrong(NORTHWIND), "203.0.113.7:40000", n % 2 == 0).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "failure {n}: {body}");
    }
    let too_many: Value = serde_json::from_str(TOO_MANY).unwrap();
    // The 21st attempt, wrong or right, from the same address (another port), in either form.
    for (client, peer, basic) in [
        (wrong(NORTHWIND), "203.0.113.7:40001", false),
        (NORTHWIND, "203.0.113.7:40002", false),
        (NORTHWIND, "203.0.113.7:40003", true),
    ] {
        let (status, retry_after, body) = token(&i, client, peer, basic).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{peer}: {body}");
        assert_eq!(body, too_many);
        assert_eq!(retry_after.as_deref(), Some("60"), "the window began now");
    }
    // Another address, another client from the same address: unaffected.
    let (status, _, body) = token(&i, NORTHWIND, "203.0.113.8:40000", false).await;
    assert_eq!(status, StatusCode::OK, "another address: {body}");
    let (status, _, body) = token(&i, NORTHWIND_READONLY, "203.0.113.7:40000", false).await;
    assert_eq!(status, StatusCode::OK, "another client: {body}");
    let (status, _, _) = token(&i, wrong(NORTHWIND_READONLY), "203.0.113.7:40000", false).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "another client's own count"
    );

    // Half way: Retry-After counts down; at the window's end the pair may try again.
    i.clock.set(start + chrono::Duration::seconds(45));
    let (status, retry_after, _) = token(&i, NORTHWIND, "203.0.113.7:40000", false).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(retry_after.as_deref(), Some("15"));
    i.clock.set(start + chrono::Duration::seconds(60));
    let (status, _, body) = token(&i, NORTHWIND, "203.0.113.7:40000", false).await;
    assert_eq!(status, StatusCode::OK, "a new window: {body}");
}

async fn instances_over_one_store_share_the_count(store: Arc<dyn Store>) {
    let first = instance(store.clone()).await;
    let second = instance(store).await;
    for n in 0..20 {
        let i = if n % 2 == 0 { &first } else { &second };
        let (status, _, _) = token(i, wrong(NORTHWIND), "[2001:db8::1]:5000", false).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "failure {n}");
    }
    for i in [&first, &second] {
        let (status, _, body) = token(i, NORTHWIND, "[2001:db8::1]:5001", false).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    }
}
