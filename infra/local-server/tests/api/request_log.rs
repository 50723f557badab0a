//! What a request writes to the log (`docs/decisions.md`, "HTTP", request log): under the
//! local server's default filter nothing for a success and one `request failed` line naming the
//! request of a 5xx; under `info` (what Lambda runs with) the request's span on every line of it
//! and one `request done` line.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use axum::http::{Request, StatusCode};
use axum::routing::get;
use axum::Router;
use std::sync::{Arc, Mutex, PoisonError};
use tower::ServiceExt;
use tracing_subscriber::fmt::MakeWriter;

/// Log output kept in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// A finished router with a route that succeeds and one that logs an error and answers 500.
fn app() -> Router {
    shared::api::finish(
        Router::new()
            .route("/fine/{id}", get(|| async { "fine" }))
            .route(
                "/broken",
                get(|| async {
                    tracing::error!("the store is down");
                    StatusCode::INTERNAL_SERVER_ERROR
                }),
            ),
    )
}

/// Sends `GET path` with the log filtered by `filter`; returns the status, the `x-request-id`
/// and what was logged.
async fn get_logged(filter: &str, path: &str) -> (StatusCode, String, String) {
    let log = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_ansi(false)
        .with_writer(log.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let response = app()
        .oneshot(Request::get(path).body(axum::body::Body::empty()).unwrap())
        .await
        .unwrap();
    let request_id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    (response.status(), request_id, log.text())
}

#[tokio::test]
async fn by_default_a_success_writes_nothing_and_a_5xx_one_line_naming_its_request() {
    let (status, _, log) = get_logged(local_server::DEFAULT_LOG_FILTER, "/fine/7").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(log, "", "a successful request writes no line");

    let (status, request_id, log) = get_logged(local_server::DEFAULT_LOG_FILTER, "/broken").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(lines[0].contains("the store is down"), "{log}");
    assert!(lines[1].contains("WARN"), "{log}");
    assert!(lines[1].contains("request failed"), "{log}");
    assert!(
        lines[1].contains(&format!("request_id={request_id}")),
        "the line names the x-request-id: {log}"
    );
    assert!(lines[1].contains("route=/broken"), "{log}");
    assert!(lines[1].contains("status=500"), "{log}");
}

#[tokio::test]
async fn at_info_every_line_of_a_request_carries_its_span_and_one_line_ends_it() {
    let (status, request_id, log) = get_logged("info", "/fine/7").await;
    assert_eq!(status, StatusCode::OK);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(lines[0].contains("request done"), "{log}");
    assert!(
        lines[0].contains(&format!(
            "request{{request_id={request_id} method=GET route=/fine/{{id}}}}"
        )),
        "the span names the request, its method and its route template, not the path: {log}"
    );
    assert!(lines[0].contains("status=200"), "{log}");

    let (_, request_id, log) = get_logged("info", "/broken").await;
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(lines[0].contains("the store is down"), "{log}");
    for line in &lines {
        assert!(
            line.contains(&format!("request_id={request_id}")),
            "every line of the request names it: {log}"
        );
    }
    assert!(
        lines[1].contains("request done") && lines[1].contains("status=500"),
        "{log}"
    );
    assert!(!log.contains("request failed"), "{log}");
}

/// A value from a request cannot forge a log line at any level. A bearer
/// token whose header `kid` holds a newline and a made-up line is refused and logged at debug
/// (`unknown kid ...`) by the local server's log: the newline is written escaped, so the
/// made-up line never starts a line of its own.
#[tokio::test]
async fn a_newline_in_a_logged_request_value_does_not_start_a_line() {
    use base64::Engine as _;
    let log = Captured::default();
    let subscriber = local_server::log_subscriber(
        tracing_subscriber::EnvFilter::new("warn,shared=debug"),
        log.clone(),
        false,
    );
    let _guard = tracing::subscriber::set_default(subscriber);
    crate::common::cheap_secret_hashing();
    let app = local_server::build_app(local_server::AppConfig {
        seed: local_server::DEMO_SEED.to_string(),
        signing_key_pem: None,
    })
    .await
    .unwrap();
    let forged = "2026-11-22T09:30:00.000000Z  INFO shared::auth: admin signed in";
    let b64 = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let token = format!(
        "{}.{}.c2ln",
        b64(serde_json::json!({"alg": "ES256", "typ": "JWT", "kid": format!("k\n{forged}\r\n")})),
        b64(serde_json::json!({"sub": "x"}))
    );
    let response = app
        .router
        .oneshot(
            Request::get("/contacts")
                .header("authorization", format!("Bearer {token}"))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let text = log.text();
    assert!(text.contains("unknown kid k\\n"), "logged, escaped: {text}");
    for line in text.lines() {
        assert!(
            !line.starts_with(forged),
            "a request wrote a line of its own: {line:?}\n{text}"
        );
    }
}
