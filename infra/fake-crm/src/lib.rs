//! A fake HubSpot (BEHAVIOR 7, "HubSpot as it is"), in process for tests and as a binary for
//! the demo; a fake Salesforce beside it ([`salesforce::FakeSalesforce`], "Salesforce as it is"). It answers as HubSpot documents ([`portal`]: numeric object ids, the owners API,
//! `INVALID_OWNER_ID`, tokens and scopes, the OAuth token endpoint, rate-limit headers and 429s,
//! error bodies in HubSpot's shape), validates every request on a HubSpot path against HubSpot's
//! published API description ([`spec`]; a request that does not validate is answered 400 and its
//! violations are recorded), and records every request it gets: method, raw path
//! (percent-encoding kept), query, headers, body, time, violations.
//!
//! Faults come from a script: a queue of [`Scripted`] answers (status, body, headers such as
//! `Retry-After`, a delay), each used `times` times by the requests it matches (a method and a
//! path prefix, or any request); 423, 477, a `DAILY` 429 or a 5xx are scripted this way.
//!
//! It doubles as a local webhook receiver: a `POST` with a `webhook-id` header to any other path
//! is answered 204 and recorded.
//!
//! Control routes (under `/_fake`, for the binary and scripts): `POST /_fake/script` (one
//! [`Scripted`] or an array), `GET /_fake/requests`, `DELETE /_fake/requests` (forget requests
//! and script), `GET`/`PUT /_fake/portal` (the portal's content, [`portal::PortalSpec`]),
//! `POST /_fake/objects/{type}` (`{"id"?, "properties"}`: a seeded object, answered with its id)
//! and `GET /_fake/objects/{type}/{id}` (an object as the portal holds it).

pub mod portal;
pub mod salesforce;
pub mod spec;

use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use portal::{Portal, PortalSpec};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
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
    /// More headers (e.g. `X-HubSpot-RateLimit-Remaining`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Milliseconds to wait before answering (a timeout is a delay past the client's limit).
    #[serde(default)]
    pub delay_ms: u64,
    /// How many requests get this answer (default 1).
    #[serde(default = "one")]
    pub times: usize,
    /// Only requests with this method get it (any when unset).
    #[serde(default)]
    pub method: Option<String>,
    /// Only requests whose path starts with this get it (any when unset).
    #[serde(default)]
    pub path: Option<String>,
    /// After the delay, answer as the CRM would (the status, body and headers are not used):
    /// a slow CRM, not a failing one.
    #[serde(default)]
    pub pass: bool,
}

fn one() -> usize {
    1
}

impl Scripted {
    /// An answer with `status` and no body, to any request.
    pub fn status(status: u16) -> Self {
        Self {
            status,
            body: None,
            retry_after: None,
            headers: BTreeMap::new(),
            delay_ms: 0,
            times: 1,
            method: None,
            path: None,
            pass: false,
        }
    }

    /// No answer of its own: the CRM's answer, after `delay` (a slow CRM).
    pub fn stall(delay: Duration) -> Self {
        Self {
            pass: true,
            ..Self::status(200).delay(delay)
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

    /// The same answer with the header `name: value`.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
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

    /// The same answer, only to `method` requests whose path starts with `path`.
    pub fn on(mut self, method: &str, path: &str) -> Self {
        self.method = Some(method.to_string());
        self.path = Some(path.to_string());
        self
    }

    /// The same answer, only to owner updates (`PATCH /crm/v3/objects/...`).
    pub fn for_updates(self) -> Self {
        self.on("PATCH", "/crm/v3/objects/")
    }

    /// A HubSpot error body: `{status, message, correlationId, category}`.
    pub fn hubspot_error(self, category: &str, message: &str) -> Self {
        self.body(json!({
            "status": "error",
            "message": message,
            "correlationId": "aeb5f871-7f07-4993-9211-075dc63e7cbf",
            "category": category
        }))
    }

    pub(crate) fn applies_to(&self, method: &str, path: &str) -> bool {
        self.method
            .as_deref()
            .is_none_or(|m| m.eq_ignore_ascii_case(method))
            && self.path.as_deref().is_none_or(|p| path.starts_with(p))
    }
}

/// A request the fake received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// Method, e.g. `PATCH`.
    pub method: String,
    /// Path as sent (percent-encoded).
    pub path: String,
    /// Query as sent, without `?`.
    #[serde(default)]
    pub query: Option<String>,
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
    /// What HubSpot's description does not allow in it (empty: it validates; always empty off
    /// HubSpot's paths).
    #[serde(default)]
    pub violations: Vec<String>,
}

impl Recorded {
    /// Whether it is a request to HubSpot's API (not a webhook delivery).
    pub fn is_hubspot(&self) -> bool {
        spec::is_hubspot_path(&self.path)
    }

    /// Whether it is an owner update (`PATCH /crm/v3/objects/{type}/{id}`).
    pub fn is_owner_update(&self) -> bool {
        self.method == "PATCH" && self.path.starts_with("/crm/v3/objects/")
    }
}

#[derive(Debug)]
struct Inner {
    script: VecDeque<Scripted>,
    requests: Vec<Recorded>,
    portal: Portal,
}

/// The fake's shared state: its portal, what it was told to answer and what it received.
#[derive(Debug, Clone)]
pub struct FakeCrm {
    inner: Arc<Mutex<Inner>>,
}

impl Default for FakeCrm {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeCrm {
    /// A fake with an empty portal and an empty script.
    pub fn new() -> Self {
        Self::with_portal(PortalSpec::default())
    }

    /// A fake holding `portal`.
    pub fn with_portal(portal: PortalSpec) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                script: VecDeque::new(),
                requests: Vec::new(),
                portal: Portal::new(portal),
            })),
        }
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

    /// The owner updates received so far (`PATCH /crm/v3/objects/...`), in order.
    pub fn owner_updates(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(Recorded::is_owner_update)
            .collect()
    }

    /// The requests received on `path` (an exact path, query excluded), in order.
    pub fn requests_to(&self, path: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    /// Every violation of HubSpot's description among the requests received, each with its
    /// request's method and path.
    pub fn violations(&self) -> Vec<String> {
        self.requests()
            .iter()
            .flat_map(|r| {
                r.violations
                    .iter()
                    .map(move |v| format!("{} {}: {v}", r.method, r.path))
            })
            .collect()
    }

    /// Forgets the requests and the script (the portal stays).
    pub fn reset(&self) {
        let mut inner = self.lock();
        inner.requests.clear();
        inner.script.clear();
    }

    /// Changes the portal with `change`.
    pub fn portal<T>(&self, change: impl FnOnce(&mut Portal) -> T) -> T {
        change(&mut self.lock().portal)
    }

    /// Adds a private app with `token` and `scopes`.
    pub fn private_app(&self, token: &str, scopes: &[&str]) {
        self.portal(|p| {
            p.spec_mut().private_apps.push(portal::PrivateApp {
                token: token.into(),
                scopes: scopes.iter().map(|s| s.to_string()).collect(),
            })
        });
    }

    /// Adds an OAuth app's install.
    pub fn oauth_app(&self, app: portal::OAuthApp) {
        self.portal(|p| p.spec_mut().oauth_apps.push(app));
    }

    /// Adds an owner with `id` and `email` (active).
    pub fn add_owner(&self, id: &str, email: &str) {
        self.portal(|p| {
            p.spec_mut().owners.push(portal::Owner {
                id: id.into(),
                email: Some(email.into()),
                first_name: None,
                last_name: None,
                user_id: None,
                archived: false,
            })
        });
    }

    /// Archives owner `id` (a deactivated user).
    pub fn archive_owner(&self, id: &str) {
        self.portal(|p| {
            for owner in p.spec_mut().owners.iter_mut().filter(|o| o.id == id) {
                owner.archived = true;
            }
        });
    }

    /// Adds an object of `object_type` with `properties` (and `id`, else a new numeric one);
    /// returns its id.
    pub fn add_object(
        &self, object_type: &str, id: Option<&str>, properties: &[(&str, &str)],
    ) -> String {
        let properties = properties
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.portal(|p| p.add_object(object_type, id.map(str::to_string), properties))
    }

    /// A property of object `id` of `object_type`, as the portal holds it.
    pub fn property(&self, object_type: &str, id: &str, name: &str) -> Option<String> {
        self.portal(|p| p.object(object_type, id)?.properties.get(name).cloned())
    }

    /// The routes of the fake.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/_fake/script", post(control_script).delete(control_reset))
            .route(
                "/_fake/requests",
                get(control_requests).delete(control_reset),
            )
            .route("/_fake/portal", get(control_portal).put(control_set_portal))
            .route("/_fake/objects/{object_type}", post(control_add_object))
            .route("/_fake/objects/{object_type}/{id}", get(control_object))
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

    /// Starts a fake with an empty portal on a free loopback port; returns it with its base URL.
    ///
    /// Errors: no loopback port can be bound.
    pub async fn start() -> std::io::Result<(Self, String)> {
        Self::start_with(PortalSpec::default()).await
    }

    /// Starts a fake holding `portal` on a free loopback port.
    ///
    /// Errors: no loopback port can be bound.
    pub async fn start_with(portal: PortalSpec) -> std::io::Result<(Self, String)> {
        let fake = Self::with_portal(portal);
        let base = fake.serve(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        Ok((fake, base))
    }

    /// Starts a fake holding the demo portal (Initech's HubSpot of the demo seed).
    ///
    /// Errors: no loopback port can be bound.
    pub async fn start_demo() -> std::io::Result<(Self, String)> {
        Self::start_with(PortalSpec::demo()).await
    }
}

pub(crate) fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// Every header as (lowercase name, value) pairs (a value that is not UTF-8 read lossily).
pub(crate) fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

pub(crate) fn respond(status: u16, body: Option<Value>, headers: &[(String, String)]) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = match body {
        Some(Value::String(text)) => (status, text).into_response(),
        Some(Value::Null) | None => status.into_response(),
        Some(body) => (status, Json(body)).into_response(),
    };
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

async fn answer(
    State(fake): State<FakeCrm>, method: Method, OriginalUri(uri): OriginalUri, headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let path = uri.path().to_string();
    let hubspot = spec::is_hubspot_path(&path);
    let violations = if hubspot {
        let pairs = header_pairs(&headers);
        let pairs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        spec::violations(&spec::Request {
            method: method.as_str(),
            path: &path,
            query: uri.query(),
            content_type: header(&headers, "content-type"),
            authorization: header(&headers, "authorization"),
            headers: &pairs,
            body: &body,
        })
    } else {
        Vec::new()
    };
    let recorded = Recorded {
        method: method.to_string(),
        path: path.clone(),
        query: uri.query().map(str::to_string),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: parsed,
        raw_body: String::from_utf8_lossy(&body).into_owned(),
        at_ms: now_ms(),
        violations: violations.clone(),
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
    if !violations.is_empty() {
        tracing::warn!(method = %method, path = %path, ?violations, "request does not validate against HubSpot's description");
    }
    let scripted = {
        let mut inner = fake.lock();
        inner.requests.push(recorded);
        let at = inner
            .script
            .iter()
            .position(|s| s.applies_to(method.as_str(), &path));
        at.and_then(|at| {
            let next = inner.script.get_mut(at).map(|s| {
                s.times = s.times.saturating_sub(1);
                s.clone()
            });
            if inner.script.get(at).is_some_and(|s| s.times == 0) {
                inner.script.remove(at);
            }
            next
        })
    };
    if let Some(s) = &scripted {
        if s.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(s.delay_ms)).await;
        }
    }
    if let Some(s) = scripted.filter(|s| !s.pass) {
        let mut extra: Vec<(String, String)> = s.headers.into_iter().collect();
        if let Some(value) = s.retry_after {
            extra.push(("retry-after".to_string(), value));
        }
        return respond(s.status, s.body, &extra);
    }
    if hubspot {
        let answer = {
            let mut inner = fake.lock();
            // A missing bearer token is recorded as a violation, and answered as HubSpot does
            // (401); anything else HubSpot's description does not allow is refused with a 400.
            let refused: Vec<&String> = violations
                .iter()
                .filter(|v| !v.contains(spec::NEEDS_BEARER))
                .collect();
            if refused.is_empty() {
                inner.portal.answer(
                    method.as_str(),
                    &path,
                    uri.query(),
                    header(&headers, "authorization"),
                    &body,
                )
            } else {
                let mut answer = inner.portal.error(
                    400,
                    "VALIDATION_ERROR",
                    &format!(
                        "Invalid request: {}",
                        refused
                            .iter()
                            .map(|v| v.as_str())
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                );
                answer.status = 400;
                answer
            }
        };
        return respond(answer.status, Some(answer.body), &answer.headers);
    }
    if method == Method::POST && headers.contains_key("webhook-id") {
        // A webhook delivery (Standard Webhooks headers): accepted, as a receiver would.
        return StatusCode::NO_CONTENT.into_response();
    }
    (
        StatusCode::NOT_FOUND,
        Json(json!({"status": "error", "message": "Not found"})),
    )
        .into_response()
}

impl Scripted {
    /// The answers a control request's body scripts: one answer object or an array of them;
    /// empty when the body is neither (the control endpoints then answer 400).
    pub fn list_of(body: Value) -> Vec<Scripted> {
        match body {
            Value::Array(_) => serde_json::from_value(body).unwrap_or_default(),
            other => serde_json::from_value(other)
                .map(|s| vec![s])
                .unwrap_or_default(),
        }
    }
}

async fn control_script(State(fake): State<FakeCrm>, Json(body): Json<Value>) -> StatusCode {
    let answers = Scripted::list_of(body);
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

async fn control_portal(State(fake): State<FakeCrm>) -> Json<PortalSpec> {
    Json(fake.portal(|p| p.spec().clone()))
}

async fn control_set_portal(
    State(fake): State<FakeCrm>, Json(spec): Json<PortalSpec>,
) -> StatusCode {
    fake.portal(|p| *p = Portal::new(spec));
    StatusCode::NO_CONTENT
}

/// `POST /_fake/objects/{type}` body.
#[derive(Debug, Deserialize)]
struct NewObject {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    properties: BTreeMap<String, String>,
}

async fn control_add_object(
    State(fake): State<FakeCrm>, Path(object_type): Path<String>, Json(new): Json<NewObject>,
) -> (StatusCode, Json<Value>) {
    let id = fake.portal(|p| p.add_object(&object_type, new.id, new.properties));
    (StatusCode::CREATED, Json(json!({"id": id})))
}

async fn control_object(
    State(fake): State<FakeCrm>, Path((object_type, id)): Path<(String, String)>,
) -> Response {
    match fake.portal(|p| p.object(&object_type, &id).cloned()) {
        Some(object) => Json(object).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
