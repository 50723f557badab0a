//! A fake HubSpot CRM v3 (BEHAVIOR 7), in process for tests and as a binary for the demo.
//!
//! It serves `PATCH /crm/v3/objects/{type}/{id}` (and any other path) and records every
//! request it gets: method, raw path (percent-encoding kept), headers, body, time. Answers come
//! from a script: a queue of [`Scripted`] answers, each used `times` times (status, body,
//! headers such as `Retry-After`, a delay before answering); when the script is empty it answers
//! 200 with a HubSpot-like object and remembers the owner it was given, which
//! `GET /crm/v3/objects/{type}/{id}` then shows.
//!
//! Control routes (under `/_fake`, for the binary and scripts): `POST /_fake/script` (one
//! [`Scripted`] or an array), `GET /_fake/requests`, `DELETE /_fake/requests` (forget requests
//! and script).

use axum::body::Bytes;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One scripted answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scripted {
    /// HTTP status.
    pub status: u16,
    /// Body, sent as JSON when it is not a string (a string is sent as it is).
    #[serde(default)]
    pub body: Option<Value>,
    /// `Retry-After` header value, when set.
    #[serde(default)]
    pub retry_after: Option<String>,
    /// Milliseconds to wait before answering (a timeout is a delay past the client's limit).
    #[serde(default)]
    pub delay_ms: u64,
    /// How many requests get this answer (default 1).
    #[serde(default = "one")]
    pub times: usize,
}

fn one() -> usize {
    1
}

impl Scripted {
    /// An answer with `status` and no body.
    pub fn status(status: u16) -> Self {
        Self {
            status,
            body: None,
            retry_after: None,
            delay_ms: 0,
            times: 1,
        }
    }

    /// The same answer with `body`.
    pub fn body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    /// The same answer with a `Retry-After` header.
    pub fn retry_after(mut self, value: impl Into<String>) -> Self {
        self.retry_after = Some(value.into());
        self
    }

    /// The same answer after `delay`.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay_ms = delay.as_millis() as u64;
        self
    }

    /// The same answer for `times` requests.
    pub fn times(mut self, times: usize) -> Self {
        self.times = times;
        self
    }
}

/// A request the fake received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// Method, e.g. `PATCH`.
    pub method: String,
    /// Path as sent (percent-encoded).
    pub path: String,
    /// Headers (lowercase names; the last value of a repeated one).
    pub headers: BTreeMap<String, String>,
    /// The body, parsed as JSON when it is (else a string).
    pub body: Value,
    /// The body exactly as received (UTF-8, invalid sequences replaced): what a webhook
    /// signature covers.
    #[serde(default)]
    pub raw_body: String,
    /// Receive time, milliseconds since the epoch.
    pub at_ms: u128,
}

#[derive(Debug, Default)]
struct Inner {
    script: VecDeque<Scripted>,
    requests: Vec<Recorded>,
    /// (type, id) -> last owner set.
    owners: HashMap<(String, String), Value>,
}

/// The fake's shared state: what it was told to answer and what it received.
#[derive(Debug, Clone, Default)]
pub struct FakeCrm {
    inner: Arc<Mutex<Inner>>,
}

impl FakeCrm {
    /// A fake with an empty script.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `answer` to the end of the script.
    pub fn push(&self, answer: Scripted) {
        self.lock().script.push_back(answer);
    }

    /// Every request received so far, in order (control routes excluded).
    pub fn requests(&self) -> Vec<Recorded> {
        self.lock().requests.clone()
    }

    /// Forgets the requests and the script.
    pub fn reset(&self) {
        let mut inner = self.lock();
        inner.requests.clear();
        inner.script.clear();
    }

    /// The fake's routes.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/_fake/script", post(control_script).delete(control_reset))
            .route(
                "/_fake/requests",
                get(control_requests).delete(control_reset),
            )
            .fallback(answer)
            .with_state(self.clone())
    }

    /// Serves the fake on `addr` (port 0 picks a free one) in the background; returns its base
    /// URL, e.g. `http://127.0.0.1:41234`.
    ///
    /// Errors: the address cannot be bound.
    pub async fn serve(&self, addr: SocketAddr) -> std::io::Result<String> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let base = format!("http://{}", listener.local_addr()?);
        let app = self.router();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(base)
    }

    /// Starts a fake on a free loopback port; returns it with its base URL.
    ///
    /// Errors: no loopback port can be bound.
    pub async fn start() -> std::io::Result<(Self, String)> {
        let fake = Self::new();
        let base = fake.serve(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        Ok((fake, base))
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

async fn answer(
    State(fake): State<FakeCrm>, method: Method, OriginalUri(uri): OriginalUri, headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let recorded = Recorded {
        method: method.to_string(),
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: parsed.clone(),
        raw_body: String::from_utf8_lossy(&body).into_owned(),
        at_ms: now_ms(),
    };
    if let Some(id) = headers.get("webhook-id") {
        // The fake doubles as a local webhook receiver (README "Webhooks"): say what came.
        tracing::info!(
            webhook_id = %String::from_utf8_lossy(id.as_bytes()),
            event_type = recorded.body["type"].as_str().unwrap_or_default(),
            path = %recorded.path,
            "webhook delivery received"
        );
    }
    let scripted = {
        let mut inner = fake.lock();
        inner.requests.push(recorded);
        let next = inner.script.front_mut().map(|s| {
            s.times = s.times.saturating_sub(1);
            s.clone()
        });
        if inner.script.front().is_some_and(|s| s.times == 0) {
            inner.script.pop_front();
        }
        next
    };
    let object = object_of(uri.path());
    match scripted {
        Some(s) => {
            if s.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(s.delay_ms)).await;
            }
            let status =
                StatusCode::from_u16(s.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = match s.body {
                Some(Value::String(text)) => (status, text).into_response(),
                Some(body) => (status, Json(body)).into_response(),
                None => status.into_response(),
            };
            if let Some(value) = s.retry_after.and_then(|v| HeaderValue::from_str(&v).ok()) {
                response
                    .headers_mut()
                    .insert(HeaderName::from_static("retry-after"), value);
            }
            response
        }
        None => match (method, object) {
            (Method::PATCH, Some(key)) => {
                let owner = parsed["properties"]["hubspot_owner_id"].clone();
                fake.lock().owners.insert(key.clone(), owner.clone());
                Json(json!({"id": key.1, "properties": {"hubspot_owner_id": owner}}))
                    .into_response()
            }
            (Method::GET, Some(key)) => {
                let owner = fake.lock().owners.get(&key).cloned().unwrap_or(Value::Null);
                Json(json!({"id": key.1, "properties": {"hubspot_owner_id": owner}}))
                    .into_response()
            }
            // A webhook delivery (Standard Webhooks headers): accepted, as a receiver would.
            (Method::POST, None) if headers.contains_key("webhook-id") => {
                StatusCode::NO_CONTENT.into_response()
            }
            _ => (
                StatusCode::NOT_FOUND,
                Json(json!({"status": "error", "message": "Not found"})),
            )
                .into_response(),
        },
    }
}

/// `(type, id)` of `/crm/v3/objects/{type}/{id}`, the id as sent.
fn object_of(path: &str) -> Option<(String, String)> {
    let rest = path.strip_prefix("/crm/v3/objects/")?;
    let (object_type, id) = rest.split_once('/')?;
    (!id.is_empty() && !id.contains('/')).then(|| (object_type.to_string(), id.to_string()))
}

async fn control_script(State(fake): State<FakeCrm>, Json(body): Json<Value>) -> StatusCode {
    let answers: Vec<Scripted> = match body {
        Value::Array(_) => serde_json::from_value(body).unwrap_or_default(),
        other => serde_json::from_value(other)
            .map(|s| vec![s])
            .unwrap_or_default(),
    };
    if answers.is_empty() {
        return StatusCode::BAD_REQUEST;
    }
    for a in answers {
        fake.push(a);
    }
    StatusCode::NO_CONTENT
}

async fn control_requests(State(fake): State<FakeCrm>) -> Json<Vec<Recorded>> {
    Json(fake.requests())
}

async fn control_reset(State(fake): State<FakeCrm>) -> StatusCode {
    fake.reset();
    StatusCode::NO_CONTENT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_paths_are_read_with_the_id_as_sent() {
        assert_eq!(
            object_of("/crm/v3/objects/contacts/a%20b"),
            Some(("contacts".into(), "a%20b".into()))
        );
        assert_eq!(object_of("/crm/v3/objects/contacts/"), None);
        assert_eq!(object_of("/other"), None);
    }
}
