//! What every answer tells a browser, and what the local
//! server's `/docs` page gives away. API answers carry `Cache-Control: no-store` (they hold
//! personal data and tokens: no shared or browser cache keeps them) and
//! `X-Content-Type-Options: nosniff` (a JSON body is never run as a script or a page); `/docs`
//! carries a Content-Security-Policy; the page is pre-filled with a client secret only for the
//! demo seed on a loopback address.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{HeaderMap, Method, StatusCode};
use common::{TestApp, ALL_SCOPES};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn assert_protected(what: &str, headers: &HeaderMap) {
    assert_eq!(
        headers.get("cache-control").map(|v| v.to_str().unwrap()),
        Some("no-store"),
        "{what}: {headers:?}"
    );
    assert_eq!(
        headers
            .get("x-content-type-options")
            .map(|v| v.to_str().unwrap()),
        Some("nosniff"),
        "{what}: {headers:?}"
    );
}

#[tokio::test]
async fn every_api_answer_is_no_store_and_nosniff() {
    let app = TestApp::spawn().await;
    let token = app.northwind().await;
    let id = app.new_contact(&token).await;
    let answers = [
        (
            "a list",
            app.call(Method::GET, "/contacts", &token, None).await,
        ),
        (
            "a record",
            app.call(Method::GET, &format!("/contacts/{id}"), &token, None)
                .await,
        ),
        (
            "a create",
            app.call(
                Method::POST,
                "/contacts",
                &token,
                Some(serde_json::json!({"fields": {"first_name": "Jo"}})),
            )
            .await,
        ),
        (
            "members",
            app.call(Method::GET, "/users", &token, None).await,
        ),
        (
            "routers",
            app.call(Method::GET, "/routers", &token, None).await,
        ),
        (
            "webhooks",
            app.call(Method::GET, "/webhooks", &token, None).await,
        ),
        (
            "a 401",
            app.call(Method::GET, "/contacts", "not-a-token", None)
                .await,
        ),
        (
            "a 404",
            app.call(Method::GET, "/no-such-route", &token, None).await,
        ),
        (
            "a 405",
            app.call(Method::PUT, &format!("/contacts/{id}"), &token, None)
                .await,
        ),
        (
            "the API description",
            app.raw(Method::GET, "/openapi.json", &[], Vec::new()).await,
        ),
    ];
    for (what, answer) in &answers {
        assert!(answer.status != StatusCode::INTERNAL_SERVER_ERROR, "{what}");
        assert_protected(what, &answer.headers);
    }
    let form = format!(
        "grant_type=client_credentials&client_id=northwind-integration&client_secret=dev-secret-change-me&scope={}",
        ALL_SCOPES.replace(' ', "+").replace('/', "%2F")
    );
    let token_answer = app
        .raw(
            Method::POST,
            "/oauth2/token",
            &[("content-type", "application/x-www-form-urlencoded")],
            form.into_bytes(),
        )
        .await;
    assert_eq!(token_answer.status, StatusCode::OK);
    assert_protected("the token endpoint", &token_answer.headers);
}

#[tokio::test]
async fn the_docs_page_has_a_content_security_policy() {
    let app = TestApp::spawn().await;
    for path in ["/docs/", "/docs/swagger-initializer.js"] {
        let page = app.raw(Method::GET, path, &[], Vec::new()).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        let policy = page
            .headers
            .get("content-security-policy")
            .unwrap_or_else(|| panic!("{path}: no Content-Security-Policy"))
            .to_str()
            .unwrap();
        for directive in [
            "default-src 'self'",
            "script-src 'self'",
            "object-src 'none'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        ] {
            assert!(
                policy.contains(directive),
                "{path}: {directive} in {policy}"
            );
        }
        assert_eq!(page.headers["x-content-type-options"], "nosniff", "{path}");
    }
}

/// The `local-server` binary on `addr` with `args`; killed when dropped.
struct Running {
    child: std::process::Child,
    port: u16,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(addr: &str, args: &[&str]) -> Running {
    let mut child = Command::new(env!("CARGO_BIN_EXE_local-server"))
        .args(["--addr", addr])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = loop {
        let line = lines.next().expect("an address line").unwrap();
        if let Some(rest) = line.strip_prefix("account routing API listening on http://") {
            break rest.trim().rsplit(':').next().unwrap().parse().unwrap();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Running { child, port }
}

/// The page's initializer script (the OAuth settings of "Authorize") as served on loopback.
async fn initializer(server: &Running) -> String {
    common::http()
        .get(format!(
            "http://127.0.0.1:{}/docs/swagger-initializer.js",
            server.port
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn docs_is_prefilled_only_with_the_demo_seed_on_a_loopback_address() {
    let demo_on_loopback = run("127.0.0.1:0", &[]);
    let script = initializer(&demo_on_loopback).await;
    assert!(
        script.contains("northwind-integration") && script.contains("dev-secret-change-me"),
        "the demo client is filled in on loopback: {script}"
    );
    drop(demo_on_loopback);

    let demo_on_every_address = run("0.0.0.0:0", &[]);
    let script = initializer(&demo_on_every_address).await;
    assert!(
        !script.contains("dev-secret-change-me"),
        "no secret on a page other hosts can reach: {script}"
    );
    drop(demo_on_every_address);

    let minimal = format!("{}/../seed/minimal.json", env!("CARGO_MANIFEST_DIR"));
    let own_seed = run("127.0.0.1:0", &["--seed", &minimal]);
    let script = initializer(&own_seed).await;
    assert!(
        !script.contains("fabrikam-local-secret"),
        "no secret of a seed other than the demo: {script}"
    );
}
