//! The token function: `POST /oauth2/token`, the OAuth 2.0 client-credentials grant
//! (RFC 6749 section 4.4; spec "Token", BEHAVIOR 1).
//!
//! This crate is the HTTP glue only: it reads the headers and the body (at most
//! [`MAX_BODY_BYTES`]), calls [`shared::auth::token_endpoint`] and maps its result to a response.
//! The same [`api`] serves Lambda (through `lambda_http`, [`app`]) and the local server. The
//! function also serves the API description, `GET /openapi.json`, without authentication.
//!
//! Responses:
//! - 200 `{access_token, expires_in, token_type: "Bearer", scope}`;
//! - 400/401/429/500 `{error, error_description}` (RFC 6749 section 5.2), a 401 to a client that
//!   sent an `Authorization` header with `WWW-Authenticate: Basic realm="account-routing-api"`,
//!   a 429 (too many failed authentications of the client from the request's source address,
//!   BEHAVIOR 1) with `Retry-After`;
//!
//! both with `Cache-Control: no-store` and `Pragma: no-cache` (RFC 6749 section 5.1).
//! Transport-level errors use the common body `{message, error: true}` (BEHAVIOR 2): 405 with
//! `Allow: POST` for another method on the path, 413 for a body over 1 MiB, 404 elsewhere.
//! [`shared::api::finish`] adds the 404 fallback and `x-request-id` (BEHAVIOR 2).

pub mod config;
pub mod secret;

use axum::extract::{FromRef, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use shared::api::openapi::responses::{InternalError, PayloadTooLarge, Throttled};
use shared::api::openapi::Description;
use shared::api::openapi::{TAG_META, TAG_TOKEN};
use shared::api::Json;
use shared::api::{with_own_405, ApiError, Body, Source};
use shared::auth::{
    token_endpoint, OAuthError, OAuthErrorBody, TokenIssuer, TokenRequestForm, TokenResponse,
};
use shared::clock::Clock;
use shared::deps::{ConfigError, Deps};
use shared::described_routes;
use shared::store::TokenPorts;
use std::borrow::Cow;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;

pub use config::{ConfigError as TokenConfigError, TokenConfig};
pub use shared::api::MAX_BODY_BYTES;

/// The function's cold start: the configuration ([`TokenConfig::from_env`]),
/// [`Deps::from_env`], and the signing key (from Secrets Manager in AWS, through the same AWS
/// configuration, or from `JWT_SIGNING_KEY_PEM` locally), each read once and failing fast with a
/// message naming what to fix (also logged).
///
/// Errors: that message.
pub async fn deps_from_env() -> Result<Deps, String> {
    let failed = |error: String| {
        tracing::error!(%error, "invalid configuration");
        error
    };
    let config = TokenConfig::from_env().map_err(|e| failed(e.to_string()))?;
    let mut deps = Deps::from_env().await.map_err(|e| failed(e.to_string()))?;
    let (signing_key, key_source) = match config.key_source.clone() {
        config::SigningKeySource::Pem(key) => (key, "JWT_SIGNING_KEY_PEM"),
        config::SigningKeySource::SecretArn(arn) => {
            let sdk = deps.aws().await;
            let key = secret::signing_key_from_secret(&sdk, &arn)
                .await
                .map_err(|e| failed(e.to_string()))?;
            (key, "secrets-manager")
        }
    };
    // The committed development key only with ALLOW_DEVELOPMENT_SIGNING_KEY=true (the PEM source
    // was checked with the configuration).
    config
        .accept_key(&signing_key, key_source)
        .map_err(|e| failed(e.to_string()))?;
    let issuer = TokenIssuer::new(
        signing_key,
        config.issuer,
        config.audience,
        config.ttl_seconds,
    );
    tracing::info!(
        kid = issuer.key().kid(),
        key_source,
        ttl_seconds = issuer.ttl_seconds(),
        "token function ready"
    );
    Ok(deps.with_issuer(issuer))
}

/// The path of the token endpoint (spec "Token").
pub const TOKEN_PATH: &str = "/oauth2/token";

/// Value of `WWW-Authenticate` on a 401 to a client that used HTTP Basic (RFC 7617).
pub const BASIC_CHALLENGE: &str = "Basic realm=\"account-routing-api\"";

/// The committed API description (`openapi.json` at the repository root; a test keeps it equal
/// to the one generated from the code).
pub const OPENAPI_JSON: &str = include_str!("../../../openapi.json");

/// What the handler needs, built once at cold start and shared by every request.
#[derive(Clone, FromRef)]
pub struct TokenState {
    /// Where API clients are looked up.
    pub store: Arc<dyn TokenPorts>,
    /// Signs the access tokens.
    pub issuer: Arc<TokenIssuer>,
    /// The current time for `iat` and `exp`.
    pub clock: Arc<dyn Clock>,
}

impl TokenState {
    /// The state over `deps`.
    ///
    /// Errors: no signing key configured.
    pub fn new(deps: &Deps) -> Result<Self, ConfigError> {
        Ok(Self {
            store: deps.store.clone(),
            issuer: deps.issuer()?,
            clock: deps.clock.clone(),
        })
    }
}

/// The routes of the function: `POST /oauth2/token`, and `GET /openapi.json` (the API
/// description, served without authentication).
///
/// With [`Description::Full`] the routes carry their OpenAPI description (what `openapi.json` is
/// generated from); with [`Description::RoutesOnly`] the same routes without it (the local
/// server, which serves the committed document).
pub fn api(state: TokenState, description: Description) -> OpenApiRouter {
    routes(state, description)
}

/// The function's routes, with their OpenAPI description or without it ([`Description`]: the
/// Lambda function never serves it and saves building it at every cold start).
fn routes(state: TokenState, description: Description) -> OpenApiRouter {
    OpenApiRouter::new()
        .routes(with_own_405(described_routes!(description; token)))
        .routes(with_own_405(described_routes!(description; openapi_json)))
        .with_state(state)
}

/// The function's application: its routes, finished ([`shared::api::finish`]).
///
/// Errors: no signing key configured.
pub fn app(deps: &Deps) -> Result<axum::Router, ConfigError> {
    let (router, _) = routes(TokenState::new(deps)?, Description::RoutesOnly).split_for_parts();
    Ok(shared::api::finish(router))
}

/// Issues an access token.
#[utoipa::path(
    post,
    path = "/oauth2/token",
    operation_id = "issueToken",
    tag = TAG_TOKEN,
    summary = "Get an access token (client credentials)",
    description = "The OAuth 2.0 client-credentials grant (RFC 6749 section 4.4). The client authenticates with `client_id` and `client_secret` in the form, or with HTTP Basic (not both). Request only the scopes the calls need. Checks, in order: the body is form-encoded, `grant_type`, client authentication, `scope`. Errors are RFC 6749 section 5.2 bodies `{error, error_description}`; every answer carries `Cache-Control: no-store`.",
    request_body(content = TokenRequestForm, content_type = "application/x-www-form-urlencoded"),
    // The client authenticates with HTTP Basic, or with `client_id` and `client_secret` in the
    // form, which OpenAPI has no security scheme for: the empty requirement says so. Never the
    // bearer token it is there to issue.
    security(("client_basic" = []), ()),
    responses(
        (status = 200, description = "The access token (an ES256 JWT)", body = TokenResponse),
        (status = 400, description = "`invalid_request`, `unsupported_grant_type` or `invalid_scope`", body = OAuthErrorBody),
        (status = 401, description = "`invalid_client`; with `WWW-Authenticate: Basic` after HTTP Basic", body = OAuthErrorBody),
        (status = 429, description = "`temporarily_unavailable`: 20 failed client authentications of this `client_id` from this source address within 60 s; every attempt of the pair, a correct secret included, is refused until the window ends", body = OAuthErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until the window ends")),
            example = json!({"error": "temporarily_unavailable", "error_description": "Too many failed attempts"})),
        PayloadTooLarge,
        (status = 500, description = "`server_error`", body = OAuthErrorBody)
    )
)]
pub async fn token(
    State(state): State<TokenState>, Source(source): Source, headers: HeaderMap,
    body: Result<Body, ApiError>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(ApiError::PayloadTooLarge) => return ApiError::PayloadTooLarge.into_response(),
        Err(_) => {
            return oauth_error(OAuthError {
                status: 400,
                error: "invalid_request",
                error_description: "The request body could not be read".to_owned(),
                www_authenticate_basic: false,
                retry_after: None,
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
        body.bytes(),
        &source,
    )
    .await;
    shared::telemetry::token_request(result.is_ok());
    match result {
        Ok(token) => no_store((StatusCode::OK, Json(token)).into_response()),
        Err(error) => oauth_error(error),
    }
}

/// Serves the API description.
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "getOpenApiDocument",
    tag = TAG_META,
    summary = "This API's OpenAPI 3.1 description",
    description = "The OpenAPI 3.1 document of every route, generated from the code. No authentication.",
    security(()),
    responses(
        (status = 200, description = "The OpenAPI document", content_type = "application/json", body = Object),
        Throttled, InternalError
    )
)]
pub async fn openapi_json() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        OPENAPI_JSON,
    )
        .into_response()
}

/// A header's value as text; bytes that are not UTF-8 become U+FFFD, so a malformed header is
/// still seen (and refused) rather than taken as absent.
fn header_text<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<Cow<'a, str>> {
    headers
        .get(name)
        .map(|value| String::from_utf8_lossy(value.as_bytes()))
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
    if let Some(seconds) = error.retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
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
