//! The bearer-token extractor (RFC 6750 section 2.1).

use super::error::ApiError;
use crate::auth::token::principal::Principal;
use crate::auth::token::verify::TokenVerifier;
use axum::extract::{FromRef, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use chrono::Utc;
use std::sync::Arc;

/// The verified caller of a request. As the first extractor of a handler it makes 401 the first
/// check of every route (BEHAVIOR 2); the handler then checks its scope with
/// [`Principal::require`] (403).
#[derive(Debug, Clone)]
pub struct Authenticated(pub Arc<Principal>);

impl<S> FromRequestParts<S> for Authenticated
where
    Arc<TokenVerifier>: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let verifier = Arc::<TokenVerifier>::from_ref(state);
        let header = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let principal = verifier.authenticate(header, Utc::now())?;
        // A re-keyed or disabled client's earlier tokens (BEHAVIOR 1).
        verifier.check_client(&principal).await?;
        // Every later log line of the request names the account (`docs/decisions.md`, "HTTP",
        // request log).
        tracing::Span::current()
            .record("account_id", tracing::field::display(principal.account_id));
        Ok(Authenticated(principal))
    }
}
