//! The token function: `POST /oauth2/token`, the OAuth 2.0 client-credentials grant
//! (RFC 6749 section 4.4; spec "Token", BEHAVIOR 1).
//!
//! This crate is the HTTP glue only: it reads the headers and the body (at most
//! [`MAX_BODY_BYTES`]), calls [`shared::auth::token_endpoint`] and maps its result to a response.
//! The same [`routes`] serve Lambda (through `lambda_http`) and the local server.
//!
//! Responses:
//! - 200 `{access_token, expires_in, token_type: "Bearer", scope}`;
//! - 400/401/500 `{error, error_description}` (RFC 6749 section 5.2), a 401 to a client that
//!   sent an `Authorization` header with `WWW-Authenticate: Basic realm="account-routing-api"`;
//!
//! both with `Cache-Control: no-store` and `Pragma: no-cache` (RFC 6749 section 5.1).
//! Transport-level errors use the common body `{message, error: true}` (BEHAVIOR 2): 405 with
//! `Allow: POST` for another method on the path, 413 for a body over 1 MiB, 404 elsewhere.
//! [`shared::api::finish`] adds the 404 fallback and `x-request-id` (BEHAVIOR 2).

pub mod config;
pub mod secret;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use shared::auth::{token_endpoint, OAuthError, TokenIssuer};
use shared::clock::Clock;
use shared::store::Store;
use shared::ApiError;
use std::borrow::Cow;
use std::sync::Arc;

pub use config::{ConfigError, TokenConfig};

/// Largest accepted request body, in bytes (1 MiB, BEHAVIOR 2); larger bodies get 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The path of the token endpoint (spec "Token").
pub const TOKEN_PATH: &str = "/oauth2/token";

/// Value of `WWW-Authenticate` on a 401 to a client that used HTTP Basic (RFC 7617).
pub const BASIC_CHALLENGE: &str = "Basic realm=\"account-routing-api\"";

/// What the handler needs, built once at cold start and shared by every request.
#[derive(Clone)]
pub struct TokenState {
    /// Where API clients are looked up.
    pub store: Arc<dyn Store>,
    /// Signs the access tokens.
    pub issuer: Arc<TokenIssuer>,
    /// The current time for `iat` and `exp`.
    pub clock: Arc<dyn Clock>,
}

/// The token function's routes: `POST /oauth2/token`, 405 for other methods on that path.
/// Unfinished: [`shared::api::finish`] adds the 404 fallback and request ids.
pub fn routes(state: TokenState) -> Router {
    Router::new()
        .route(TOKEN_PATH, post(token).fallback(method_not_allowed))
        .with_state(state)
}

/// `POST /oauth2/token`.
async fn token(State(state): State<TokenState>, headers: HeaderMap, body: Body) -> Response {
    let body = match read_body(body).await {
        Ok(body) => body,
        Err(BodyError::TooLarge) => return ApiError::PayloadTooLarge.into_response(),
        Err(BodyError::Unreadable) => {
            return oauth_error(OAuthError {
                status: 400,
                error: "invalid_request",
                error_description: "The request body could not be read".to_owned(),
                www_authenticate_basic: false,
            })
        }
    };
    let content_type = header_text(&headers, &header::CONTENT_TYPE);
    let authorization = header_text(&headers, &header::AUTHORIZATION);
    let result = token_endpoint(
        state.store.as_ref(),
        &state.issuer,
        state.clock.as_ref(),
        content_type.as_deref(),
        authorization.as_deref(),
        &body,
    )
    .await;
    match result {
        Ok(token) => no_store((StatusCode::OK, Json(token)).into_response()),
        Err(error) => oauth_error(error),
    }
}

/// A header's value as text; bytes that are not UTF-8 become U+FFFD, so a malformed header is
/// still seen (and refused) rather than taken as absent.
fn header_text<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<Cow<'a, str>> {
    headers
        .get(name)
        .map(|value| String::from_utf8_lossy(value.as_bytes()))
}

enum BodyError {
    TooLarge,
    Unreadable,
}

/// The whole body, refusing more than [`MAX_BODY_BYTES`].
async fn read_body(body: Body) -> Result<Bytes, BodyError> {
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(BodyError::TooLarge),
        Err(error) => {
            tracing::warn!(%error, "could not read the request body");
            Err(BodyError::Unreadable)
        }
    }
}

/// An RFC 6749 section 5.2 error response.
fn oauth_error(error: OAuthError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = no_store((status, Json(error.body())).into_response());
    if error.www_authenticate_basic {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(BASIC_CHALLENGE),
        );
    }
    response
}

/// Adds `Cache-Control: no-store` and `Pragma: no-cache` (RFC 6749 section 5.1).
fn no_store(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed { allow: "POST" }
}
