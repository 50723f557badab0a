//! HTTP glue shared by the function handlers: query and body parsing, the bearer-token extractor,
//! method and route fallbacks, request ids. Handlers stay thin: they call these, then the domain.

mod auth;
pub mod body;
pub mod error;
pub mod idempotency;
pub mod json;
pub mod lambda;
pub mod openapi;
mod path;
mod query;
pub mod source;

pub use auth::Authenticated;
pub use body::{Body, MAX_BODY_BYTES};
pub use error::{ApiError, ErrorBody};
pub use json::Json;
pub use path::{PathId, PathIds};
pub use query::{audit_query, item_properties, stats_window, ListQuery, QueryParams};
pub use source::Source;

use crate::auth::scope::Scope;
use crate::auth::token::verify::TokenVerifier;
use crate::error::DomainError;
use axum::extract::{FromRef, MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use axum::Router;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use tracing::Instrument;
use utoipa::openapi::path::Paths;

/// A method router for a path that answers `allow`'s methods; every other method gets 405 with
/// `Allow` and the contract body (BEHAVIOR 2), before authentication (a routing fact).
pub fn with_405<S: Clone + Send + Sync + 'static>(
    router: MethodRouter<S>, allow: impl Into<Arc<str>>,
) -> MethodRouter<S> {
    let allow = allow.into();
    router.fallback(move || {
        let allow = allow.clone();
        async move { ApiError::MethodNotAllowed { allow } }
    })
}

/// The `Allow` value (RFC 9110 section 10.2.1) of the operations `paths` describes: their
/// methods, each once, in the order GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS, TRACE.
pub fn allow_of(paths: &Paths) -> Arc<str> {
    let mut allowed: Vec<&str> = Vec::new();
    for item in paths.paths.values() {
        let operations = [
            ("GET", &item.get),
            ("HEAD", &item.head),
            ("PUT", &item.put),
            ("POST", &item.post),
            ("PATCH", &item.patch),
            ("DELETE", &item.delete),
            ("OPTIONS", &item.options),
            ("TRACE", &item.trace),
        ];
        for (method, operation) in operations {
            if operation.is_some() && !allowed.contains(&method) {
                allowed.push(method);
            }
        }
    }
    const ORDER: [&str; 8] = [
        "GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS", "TRACE",
    ];
    allowed.sort_by_key(|m| ORDER.iter().position(|o| o == m));
    allowed.join(", ").into()
}

/// The routes of one path as `described_routes!` builds them (schemas, description, method
/// router), answering 405 to the methods they do not route with the `Allow` value of their own
/// handlers ([`allow_of`]; [`with_405`]): no `Allow` value typed by hand.
pub fn with_own_405<X, S: Clone + Send + Sync + 'static>(
    (schemas, paths, methods): (X, Paths, MethodRouter<S>),
) -> (X, Paths, MethodRouter<S>) {
    let allow = allow_of(&paths);
    (schemas, paths, with_405(methods, allow))
}

/// Like [`with_405`] for a collection path whose item path defines more methods: those methods
/// (`item_methods`, each with the scope it needs) answer 400 `Missing path parameter: <param>`
/// after 401 and 403, the spec's "id missing from path" (BEHAVIOR 2); other methods get 405.
/// Those answers are not operations of the API description: no request to them can succeed.
pub fn with_item_methods<S>(
    router: MethodRouter<S>, allow: impl Into<Arc<str>>, item_methods: &'static [(Method, Scope)],
    param: &'static str,
) -> MethodRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<TokenVerifier>: FromRef<S>,
{
    let allow = allow.into();
    router.fallback(
        move |method: Method, auth: Result<Authenticated, ApiError>| {
            let allow = allow.clone();
            async move {
                let Some((_, scope)) = item_methods.iter().find(|(m, _)| *m == method) else {
                    return ApiError::MethodNotAllowed { allow };
                };
                match auth {
                    Ok(Authenticated(principal)) => match principal.require(*scope) {
                        Ok(()) => missing_path_parameter(param).into(),
                        Err(e) => e.into(),
                    },
                    Err(e) => e,
                }
            }
        },
    )
}

/// [`with_item_methods`] for the routes of a collection path as `described_routes!` builds them
/// (schemas, description, method router): the `Allow` value of its 405s is that of its own
/// handlers ([`allow_of`]; RFC 9110 section 10.2.1, BEHAVIOR 2), not the item methods it answers
/// 400, which are no operations of its own. No `Allow` value typed by hand.
pub fn with_own_item_methods<X, S>(
    (schemas, paths, methods): (X, Paths, MethodRouter<S>),
    item_methods: &'static [(Method, Scope)], param: &'static str,
) -> (X, Paths, MethodRouter<S>)
where
    S: Clone + Send + Sync + 'static,
    Arc<TokenVerifier>: FromRef<S>,
{
    let allow = allow_of(&paths);
    (
        schemas,
        paths,
        with_item_methods(methods, allow, item_methods, param),
    )
}

/// An item path with an empty id (`/contacts/`): the methods of the item path answer 400
/// `Missing path parameter: <param>` after 401 and 403 (BEHAVIOR 2), others 405 with `allow`,
/// the item path's own ([`allow_of`] its described routes). These routes are not operations of
/// their own and are not in the API description; [`EMPTY_ID_SUFFIX`] marks them for the test
/// that checks every route is described.
pub fn empty_id_route<S>(
    allow: impl Into<Arc<str>>, methods: &'static [(Method, Scope)], param: &'static str,
) -> MethodRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<TokenVerifier>: FromRef<S>,
{
    with_item_methods(MethodRouter::new(), allow, methods, param)
}

/// Whether a raw Lambda event is an SQS batch (rather than an API Gateway request or a
/// scheduled event): `Records[0].eventSource == "aws:sqs"`. The dispatch and webhooks functions
/// both tell their event sources apart with it.
pub fn is_sqs_event(event: &serde_json::Value) -> bool {
    event["Records"]
        .as_array()
        .and_then(|r| r.first())
        .and_then(|r| r["eventSource"].as_str())
        == Some("aws:sqs")
}

/// Every path that ends with this suffix is an [`empty_id_route`].
pub const EMPTY_ID_SUFFIX: &str = "/";

/// 400 `Missing path parameter: <name>`: a method defined on the item path sent to the
/// collection, or an item path with an empty id (BEHAVIOR 2).
pub fn missing_path_parameter(name: &'static str) -> DomainError {
    DomainError::bad_field(name, format!("Missing path parameter: {name}"))
}

/// Finishes a router of routes: unknown routes -> 404 in the contract shape, an `x-request-id`
/// on every response (API Gateway's request id when there is one), `Cache-Control: no-store`
/// and `X-Content-Type-Options: nosniff` on every response, one tracing span and one log line
/// per request. The local server applies it once to the merged routes of every function.
pub fn finish(routes: Router) -> Router {
    routes
        .fallback(|| async { DomainError::not_found("Not found") })
        .layer(RequestSpanLayer)
}

/// The layer [`finish`] puts around every route and the fallback: [`request_span`] around the
/// route's answer. A plain [`tower::Service`] rather than `axum::middleware::from_fn`, which
/// clones and boxes the inner service and boxes two futures for every request.
#[derive(Clone, Copy, Debug)]
struct RequestSpanLayer;

impl<S> tower::Layer<S> for RequestSpanLayer {
    type Service = RequestSpanService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestSpanService { inner }
    }
}

/// A route (or the fallback) with [`request_span`] around it.
#[derive(Clone, Debug)]
struct RequestSpanService<S> {
    inner: S,
}

impl<S> tower::Service<Request> for RequestSpanService<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = futures_util::future::BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let facts = RequestFacts {
            gateway_id: api_gateway_request_id(&req),
            lambda: req.extensions().get::<lambda_http::Context>().cloned(),
            route: req.extensions().get::<MatchedPath>().cloned(),
            method: req.method().clone(),
        };
        Box::pin(request_span(facts, self.inner.call(req)))
    }
}

/// What [`request_span`] needs of the request, taken before the route consumes it.
struct RequestFacts {
    gateway_id: Option<String>,
    lambda: Option<lambda_http::Context>,
    route: Option<MatchedPath>,
    method: Method,
}

/// The response header naming the request (API Gateway's request id, else a generated UUID).
const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// The tracing target of each request's span and of the one `request done` line it writes
/// (status and duration). Lambda's filter (`info`) keeps both, so every line of a request names
/// it (`docs/operations.md`). The local server's default filter leaves both out: it writes no
/// line for a request that succeeds, and one `request failed` line (this target, `warn`) naming
/// the request id and route of a 5xx; `RUST_LOG=info` shows the span and the done lines.
pub const REQUEST_LOG_TARGET: &str = "request";

/// One span per request (target [`REQUEST_LOG_TARGET`]), on every log line of it: API Gateway's
/// request id, the Lambda request id and X-Ray trace id (when running in Lambda), the method,
/// the route template (never the raw path: ids and what a client typed stay out of logs), and
/// the account once the token is verified. One line at the end with the status and duration;
/// when a filter leaves the span out, only a 5xx writes a line, naming the request itself. The
/// request's metrics ([`crate::telemetry`]), flushed at once in Lambda (one invocation is one
/// request; the local server serves them on `GET /metrics` instead).
async fn request_span(
    facts: RequestFacts, answer: impl Future<Output = Result<Response, Infallible>>,
) -> Result<Response, Infallible> {
    let mut generated = [0u8; uuid::fmt::Hyphenated::LENGTH];
    let request_id: &str = match &facts.gateway_id {
        Some(id) => id,
        None => uuid::Uuid::new_v4()
            .hyphenated()
            .encode_lower(&mut generated),
    };
    let lambda = facts.lambda;
    let route = facts
        .route
        .as_ref()
        .map_or(crate::telemetry::UNMATCHED_ROUTE, MatchedPath::as_str);
    let span = tracing::info_span!(
        target: REQUEST_LOG_TARGET,
        "request",
        request_id = %request_id,
        lambda_request_id = tracing::field::Empty,
        xray_trace_id = tracing::field::Empty,
        method = %facts.method,
        route = %route,
        account_id = tracing::field::Empty,
    );
    let lambda_request_id = lambda.as_ref().map(|c| c.request_id.as_str());
    let trace_id = lambda.as_ref().and_then(|c| {
        c.xray_trace_id
            .clone()
            .or_else(|| std::env::var("_X_AMZN_TRACE_ID").ok())
    });
    if let Some(id) = lambda_request_id {
        span.record("lambda_request_id", id);
    }
    if let Some(id) = &trace_id {
        span.record("xray_trace_id", id.as_str());
    }
    let started = std::time::Instant::now();
    let answer = within_deadlines(lambda.as_ref(), answer);
    let Ok(mut response) = if span.is_disabled() {
        answer.await
    } else {
        answer.instrument(span.clone()).await
    };
    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    if !span.is_disabled() {
        span.in_scope(|| {
            tracing::info!(
                target: REQUEST_LOG_TARGET,
                status,
                elapsed_ms = elapsed.as_millis() as u64,
                "request done"
            )
        });
    } else if status >= 500 {
        tracing::warn!(
            target: REQUEST_LOG_TARGET,
            request_id = %request_id,
            route = %route,
            status,
            elapsed_ms = elapsed.as_millis() as u64,
            "request failed"
        );
    }
    crate::telemetry::request(route, status, elapsed);
    if lambda.is_some() {
        crate::telemetry::flush(lambda_request_id, trace_id.as_deref());
    }
    if let Ok(value) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    protect(response.headers_mut());
    Ok(response)
}

/// What every answer tells a browser (`docs/decisions.md`, "HTTP"): no cache keeps it
/// (`Cache-Control: no-store`, unless the route set its own: answers carry tokens and personal
/// data), and its body is never sniffed into a script or a page (`X-Content-Type-Options:
/// nosniff`).
fn protect(headers: &mut axum::http::HeaderMap) {
    use axum::http::header::{CACHE_CONTROL, X_CONTENT_TYPE_OPTIONS};
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
}

/// How long before the Lambda invocation's end a request that is still running is answered 503:
/// time for the answer to reach API Gateway before the function is stopped.
pub const LAMBDA_ANSWER_MARGIN: std::time::Duration = std::time::Duration::from_millis(500);

/// The time left before the invocation of `lambda` ends, as an instant of tokio's clock.
fn lambda_deadline(lambda: &lambda_http::Context) -> Option<tokio::time::Instant> {
    let left = lambda
        .deadline()
        .duration_since(std::time::SystemTime::now())
        .ok()?;
    Some(tokio::time::Instant::now() + left)
}

/// Runs a request's `answer` within its deadline (one deadline per request, passed down to every
/// store call): [`LAMBDA_ANSWER_MARGIN`] before the Lambda invocation ends, or
/// [`crate::store::REQUEST_DEADLINE`] after the request's start outside Lambda.
///
/// - every write of the request stops retrying a lost race by then, as well as by its own
///   [`crate::store::CONFLICT_DEADLINE`] ([`crate::store::within_request_deadline`]: a nested
///   retry never starts a fresh one past the request's); it then answers its 409 (or the
///   dispatch's 500, BEHAVIOR 6);
/// - in Lambda, a request still running [`LAMBDA_ANSWER_MARGIN`] before the invocation ends (a
///   store call that does not answer) is answered 503 with `Retry-After: 1` instead of being cut
///   off by the runtime: a write it made may or may not have been applied (an `Idempotency-Key`
///   makes the retry safe, BEHAVIOR 10).
async fn within_deadlines(
    lambda: Option<&lambda_http::Context>,
    answer: impl Future<Output = Result<Response, Infallible>>,
) -> Result<Response, Infallible> {
    let now = tokio::time::Instant::now();
    let ends = lambda
        .and_then(lambda_deadline)
        .map(|end| end.checked_sub(LAMBDA_ANSWER_MARGIN).unwrap_or(now));
    let requests = crate::store::within_request_deadline(
        ends.unwrap_or(now + crate::store::REQUEST_DEADLINE),
        answer,
    );
    match ends {
        None => requests.await,
        Some(end) => match tokio::time::timeout_at(end, requests).await {
            Ok(answered) => answered,
            Err(_) => Ok(DomainError::Unavailable(
                "Service unavailable: the request did not finish in time and may or may not \
                 have been applied; try again later"
                    .into(),
            )
            .into_response()),
        },
    }
}

fn api_gateway_request_id(req: &Request) -> Option<String> {
    use lambda_http::request::RequestContext;
    match req.extensions().get::<RequestContext>()? {
        RequestContext::ApiGatewayV2(ctx) => ctx.request_id.clone(),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}
