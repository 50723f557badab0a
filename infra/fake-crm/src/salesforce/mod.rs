//! A fake Salesforce (BEHAVIOR 7 "Salesforce as it is"), in process for tests and beside the
//! fake HubSpot in the binary. It answers as Salesforce documents ([`org`]), validates every
//! request on a Salesforce path against `salesforce-api.json` (a schema of the four endpoints
//! written from Salesforce's REST API and OAuth 2.0 guides; a request that does not validate is
//! answered 400 and its violations are recorded), checks that REST calls go to the token
//! answer's `instance_url` (a violation otherwise), and records every request.
//!
//! It listens on one loopback port under two host names: `http://localhost:<port>` is the
//! org's My Domain (the connection's `base_url`, where the token endpoint takes the
//! client-credentials grant), `http://127.0.0.1:<port>` the instance the token answer names.
//!
//! Faults come from the same script as the fake HubSpot's ([`crate::Scripted`]):
//! `UNABLE_TO_LOCK_ROW`, both kinds of `REQUEST_LIMIT_EXCEEDED`, 503 are scripted this way.
//! Control routes: `POST /_fake/script`, `GET`/`DELETE /_fake/requests`, `GET`/`PUT /_fake/org`,
//! `GET /_fake/records/{sObject}/{id}`.

pub mod org;

use crate::{header_pairs, now_ms, respond, Recorded, Scripted};
use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use org::{Org, OrgSpec};
use serde_json::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// What a violation says when a REST call goes elsewhere than the instance URL.
pub const NOT_THE_INSTANCE: &str = "REST call not sent to the token answer's instance_url";

#[derive(Debug)]
struct Inner {
    script: VecDeque<Scripted>,
    requests: Vec<Recorded>,
    org: Org,
}

/// The fake's shared state: its org, what it was told to answer and what it received.
#[derive(Debug, Clone)]
pub struct FakeSalesforce {
    inner: Arc<Mutex<Inner>>,
    /// The My Domain host (`localhost:<port>`).
    my_domain: String,
    /// The instance host (`127.0.0.1:<port>`).
    instance: String,
}

impl FakeSalesforce {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Serves a fake holding `org` on a free loopback port in the background; returns it with
    /// its My Domain URL (`http://localhost:<port>`, the connection's `base_url`).
    ///
    /// Errors: no loopback port can be bound.
    pub async fn start_with(org: OrgSpec) -> std::io::Result<(Self, String)> {
        Self::serve(org, SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Serves a fake holding the demo org (Umbrella's Salesforce of the demo seed).
    ///
    /// Errors: no loopback port can be bound.
    pub async fn start_demo() -> std::io::Result<(Self, String)> {
        Self::start_with(OrgSpec::demo()).await
    }

    /// Serves a fake holding `org` on `addr` (a loopback address; port 0 picks one) in the
    /// background; returns it with its My Domain URL.
    ///
    /// Errors: the address cannot be bound.
    pub async fn serve(org: OrgSpec, addr: SocketAddr) -> std::io::Result<(Self, String)> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let (fake, base) = Self::on(org, &listener)?;
        let app = fake.router();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok((fake, base))
    }

    /// A fake holding `org` for `listener`; returns it with its My Domain URL (the caller serves
    /// [`Self::router`] on the listener).
    ///
    /// Errors: the listener's address cannot be read.
    pub fn on(org: OrgSpec, listener: &tokio::net::TcpListener) -> std::io::Result<(Self, String)> {
        let port = listener.local_addr()?.port();
        let my_domain = format!("localhost:{port}");
        let instance = format!("127.0.0.1:{port}");
        let fake = Self {
            inner: Arc::new(Mutex::new(Inner {
                script: VecDeque::new(),
                requests: Vec::new(),
                org: Org::new(org, &my_domain, &format!("http://{instance}")),
            })),
            my_domain: my_domain.clone(),
            instance,
        };
        Ok((fake, format!("http://{my_domain}")))
    }

    /// Adds `answer` to the end of the script.
    pub fn push(&self, answer: Scripted) {
        self.lock().script.push_back(answer);
    }

    /// Every request received so far, in order (control routes excluded).
    pub fn requests(&self) -> Vec<Recorded> {
        self.lock().requests.clone()
    }

    /// The requests received whose path starts with `prefix`, in order.
    pub fn requests_under(&self, prefix: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.starts_with(prefix))
            .collect()
    }

    /// The token requests received.
    pub fn token_requests(&self) -> Vec<Recorded> {
        self.requests_under("/services/oauth2/token")
    }

    /// The owner updates received (`PATCH .../sobjects/...`).
    pub fn updates(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "PATCH" && r.path.contains("/sobjects/"))
            .collect()
    }

    /// The SOQL queries received.
    pub fn queries(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "GET" && r.path.ends_with("/query"))
            .collect()
    }

    /// Every violation of Salesforce's description among the requests received, each with its
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

    /// Forgets the requests and the script (the org stays).
    pub fn reset(&self) {
        let mut inner = self.lock();
        inner.requests.clear();
        inner.script.clear();
    }

    /// Changes the org with `change`.
    pub fn org<T>(&self, change: impl FnOnce(&mut Org) -> T) -> T {
        change(&mut self.lock().org)
    }

    /// The owner Salesforce holds for record `id` of `sobject`.
    pub fn owner(&self, sobject: &str, id: &str) -> Option<String> {
        self.org(|o| o.record(sobject, id).and_then(|r| r.owner_id.clone()))
    }

    /// The routes of the fake.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/_fake/script", post(control_script).delete(control_reset))
            .route(
                "/_fake/requests",
                get(control_requests).delete(control_reset),
            )
            .route("/_fake/org", get(control_org).put(control_set_org))
            .route("/_fake/records/{sobject}/{id}", get(control_record))
            .fallback(answer)
            .with_state(self.clone())
    }
}

async fn answer(
    State(fake): State<FakeSalesforce>, method: Method, OriginalUri(uri): OriginalUri,
    headers: HeaderMap, body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let pairs = header_pairs(&headers);
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let salesforce = crate::spec::is_salesforce_path(&path);
    let mut violations = Vec::new();
    if salesforce {
        let refs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        violations = crate::spec::violations_of(
            crate::spec::Description::salesforce(),
            &crate::spec::Request {
                method: method.as_str(),
                path: &path,
                query: uri.query(),
                content_type: get("content-type"),
                authorization: get("authorization"),
                headers: &refs,
                body: &body,
            },
        );
        if path.starts_with("/services/data/") && get("host") != Some(fake.instance.as_str()) {
            violations.push(format!(
                "{NOT_THE_INSTANCE} ({}, not {})",
                get("host").unwrap_or("no host"),
                fake.instance
            ));
        }
        if path == "/services/oauth2/token"
            && body_field(&body, "grant_type").as_deref() == Some("client_credentials")
            && get("host") != Some(fake.my_domain.as_str())
        {
            // Answered as Salesforce does (invalid_grant); recorded for the tests too.
            violations.push("client credentials sent elsewhere than the My Domain".into());
        }
    }
    let recorded = Recorded {
        method: method.to_string(),
        path: path.clone(),
        query: uri.query().map(str::to_string),
        headers: pairs.iter().cloned().collect(),
        body: serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned())),
        raw_body: String::from_utf8_lossy(&body).into_owned(),
        at_ms: now_ms(),
        violations: violations.clone(),
    };
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
        // Every REST answer carries the org's usage, scripted ones too (unless they set it).
        if path.starts_with("/services/data/")
            && !extra
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("sforce-limit-info"))
        {
            extra.push(fake.org(|o| o.limit_info()));
        }
        return respond(s.status, s.body, &extra);
    }
    if !salesforce {
        return (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!([{"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}])),
        )
            .into_response();
    }
    let refused: Vec<&String> = violations
        .iter()
        .filter(|v| {
            !v.contains(crate::spec::NEEDS_BEARER)
                && !v.starts_with(NOT_THE_INSTANCE)
                && !v.starts_with("client credentials")
        })
        .collect();
    let answer = if refused.is_empty() {
        fake.org(|org| {
            org.answer(&org::Request {
                method: method.as_str(),
                path: &path,
                query: uri.query(),
                host: get("host"),
                authorization: get("authorization"),
                auto_assign: get("sforce-auto-assign"),
                body: &body,
            })
        })
    } else {
        let message = refused
            .iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        org::Answer::error(400, "INVALID_REQUEST", &message, &[])
    };
    let body = (!answer.body.is_null()).then_some(answer.body);
    respond(answer.status, body, &answer.headers)
}

fn body_field(body: &[u8], name: &str) -> Option<String> {
    form_urlencoded::parse(body)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

async fn control_script(State(fake): State<FakeSalesforce>, Json(body): Json<Value>) -> StatusCode {
    let answers = Scripted::list_of(body);
    if answers.is_empty() {
        return StatusCode::BAD_REQUEST;
    }
    for a in answers {
        fake.push(a);
    }
    StatusCode::NO_CONTENT
}

async fn control_requests(State(fake): State<FakeSalesforce>) -> Json<Vec<Recorded>> {
    Json(fake.requests())
}

async fn control_reset(State(fake): State<FakeSalesforce>) -> StatusCode {
    fake.reset();
    StatusCode::NO_CONTENT
}

async fn control_org(State(fake): State<FakeSalesforce>) -> Json<OrgSpec> {
    Json(fake.org(|o| o.spec().clone()))
}

async fn control_set_org(
    State(fake): State<FakeSalesforce>, Json(spec): Json<OrgSpec>,
) -> StatusCode {
    fake.org(|o| o.replace(spec));
    StatusCode::NO_CONTENT
}

async fn control_record(
    State(fake): State<FakeSalesforce>, Path((sobject, id)): Path<(String, String)>,
) -> Response {
    match fake.org(|o| o.record(&sobject, &id).cloned()) {
        Some(record) => Json(record).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
