//! HTTP glue shared by the function handlers: query and body parsing, the bearer-token extractor,
//! method and route fallbacks, request ids. Handlers stay thin: they call these, then the domain.

mod auth;
mod query;

pub use auth::Authenticated;
pub use query::{item_properties, ListQuery};

use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::MethodRouter;
use axum::Router;
use serde_json::{Map, Value};
use tracing::Instrument;

/// Largest accepted request body: 1 MiB (BEHAVIOR 2); larger -> 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Parses a request body that must be one JSON object.
///
/// Errors: 400 `Invalid JSON: <parser message>` when it does not parse or is not an object.
pub fn json_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::bad_request(
            "Invalid JSON: the body must be a JSON object",
        )),
        Err(e) => Err(ApiError::bad_request(format!("Invalid JSON: {e}"))),
    }
}

/// The raw request body, at most [`MAX_BODY_BYTES`].
///
/// Rejection: 413 in the contract's error shape.
#[derive(Debug, Clone)]
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES)
            .await
            .map(RawBody)
            .map_err(|_| ApiError::PayloadTooLarge)
    }
}

/// A method router for a path that answers `allow`'s methods; every other method gets 405 with
/// `Allow` and the contract body (BEHAVIOR 2).
pub fn with_405<S: Clone + Send + Sync + 'static>(
    router: MethodRouter<S>,
    allow: &'static str,
) -> MethodRouter<S> {
    router.fallback(move || async move { ApiError::MethodNotAllowed { allow } })
}

/// A handler answering 400 `Missing path parameter: <name>`: a method defined on the item path
/// sent to the collection, or an item path with an empty id (BEHAVIOR 2).
pub fn missing_path_parameter(name: &'static str) -> ApiError {
    ApiError::bad_field(name, format!("Missing path parameter: {name}"))
}

/// Finishes a router of routes: unknown routes -> 404 in the contract shape, an `x-request-id`
/// on every response (API Gateway's request id when there is one), one tracing span and one log
/// line per request. The local server applies it once to the merged routes of every function.
pub fn finish(routes: Router) -> Router {
    routes
        .fallback(|| async { ApiError::not_found("Not found") })
        .layer(axum::middleware::from_fn(request_span))
}

async fn request_span(req: Request, next: Next) -> Response {
    let request_id =
        api_gateway_request_id(&req).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let span = tracing::info_span!("request", request_id = %request_id, %method, %path);
    let started = std::time::Instant::now();
    let mut response = next.run(req).instrument(span.clone()).await;
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "request done"
        )
    });
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

fn api_gateway_request_id(req: &Request) -> Option<String> {
    use lambda_http::request::RequestContext;
    match req.extensions().get::<RequestContext>()? {
        RequestContext::ApiGatewayV2(ctx) => ctx.request_id.clone(),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}
