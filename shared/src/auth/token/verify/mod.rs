//! Verifying access tokens against the configured public keys (RFC 8725; BEHAVIOR 1).
//!
//! A token that passed every check is remembered, keyed by its exact text, until its `exp`
//! (plus the leeway): presenting the same string again skips the signature check (about 40 µs of
//! ES256 with aws-lc-rs) but not the expiry check. Why this is as safe as verifying every time
//! is argued in `docs/performance.md` ("Verified-token cache"); in short: the outcome of the
//! checks depends only on the string, the key set and issuer/audience (fixed for a verifier's
//! lifetime, and the cache belongs to the verifier) and on the time (through `exp`, re-checked on
//! every hit); only successes are remembered, and the cache holds at most
//! [`DEFAULT_CACHE_CAPACITY`] tokens.
//!
//! This file holds the checks; `window.rs` the time checks with their leeway, `jwks.rs` reads
//! the configured key set, `cache.rs` remembers the tokens that passed; `tests.rs` tests them
//! through the verifier.

mod cache;
mod jwks;
#[cfg(test)]
mod tests;
mod window;

pub use cache::DEFAULT_CACHE_CAPACITY;
use cache::{Verified, VerifiedTokens};
pub use window::CLOCK_LEEWAY_SECONDS;
use window::{expired, premature};

use super::bearer::bearer_token;
use super::claims::Claims;
use super::principal::{AuthError, Principal};
use super::signature::is_high_s;
use crate::auth::keys::{KeyError, SigningKey};
use crate::auth::scope::Scope;
use crate::error::DomainError;
use crate::types::ids::AccountId;
use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// The longest lifetime (`exp - iat`) of an accepted token, in seconds: 24 h, the longest the
/// issuer can be configured with (BEHAVIOR 1). A token claiming more was not issued here.
pub const MAX_LIFETIME_SECONDS: i64 = 86_400;

/// Whether the protected header of compact JWS `token` has a `crit` member (any value). A
/// header that does not decode answers `false`: the header check refuses it.
fn names_crit(token: &str) -> bool {
    use base64::Engine as _;
    let Some(segment) = token.split('.').next() else {
        return false;
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(segment)
        .ok()
        .and_then(|json| {
            serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&json).ok()
        })
        .is_some_and(|header| header.contains_key("crit"))
}

/// Verifies access tokens against a set of ES256 public keys selected by `kid`.
///
/// Clones share one cache of verified tokens.
#[derive(Clone)]
pub struct TokenVerifier {
    keys: HashMap<String, DecodingKey>,
    validation: Validation,
    cache: Arc<VerifiedTokens>,
    /// The clients' key generations a token must still match (BEHAVIOR 1); `None` checks
    /// nothing (a verifier alone, in tests and benchmarks).
    clients: Option<Arc<super::clients::ClientGenerations>>,
}

impl TokenVerifier {
    /// A verifier for the public keys of a JWK Set (RFC 7517 section 5), e.g. the output of
    /// [`SigningKey::public_jwks`], expecting `issuer` and `audience`. Several keys may be listed
    /// during a rotation; a token's `kid` picks one.
    ///
    /// Each key must be `kty: EC`, `crv: P-256` with valid `x`/`y` coordinates of a point on the
    /// curve; `alg` (if present) must be `ES256`, `use` (if present) `sig`. A key without `kid`
    /// gets its RFC 7638 thumbprint as `kid`.
    ///
    /// Errors: [`KeyError::InvalidJwks`] when there is no `keys` array or it is empty, a key is
    /// unusable, holds private material (`d`), or two keys share a `kid`.
    pub fn from_jwks(
        jwks: &serde_json::Value, issuer: &str, audience: &str,
    ) -> Result<TokenVerifier, KeyError> {
        let keys = jwks::decoding_keys(jwks)?;
        Ok(Self {
            keys,
            validation: validation(issuer, audience),
            cache: Arc::new(VerifiedTokens::new(DEFAULT_CACHE_CAPACITY)),
            clients: None,
        })
    }

    /// The same verifier remembering at most `capacity` verified tokens (0: none; every
    /// presentation is verified in full), with a cache of its own.
    pub fn with_cache_capacity(mut self, capacity: usize) -> Self {
        self.cache = Arc::new(VerifiedTokens::new(capacity));
        self
    }

    /// The same verifier (sharing its cache) also checking every principal's client against
    /// `clients` ([`TokenVerifier::check_client`]): how a function's verifier is built
    /// ([`crate::deps::Deps`]).
    pub fn checking_clients(mut self, clients: Arc<super::clients::ClientGenerations>) -> Self {
        self.clients = Some(clients);
        self
    }

    /// `Ok` when the client of `principal` still admits its token (not re-keyed past it, not
    /// disabled, BEHAVIOR 1), or when this verifier checks no clients.
    ///
    /// Errors: as [`super::clients::ClientGenerations::check`].
    pub async fn check_client(&self, principal: &Principal) -> Result<(), DomainError> {
        match &self.clients {
            Some(clients) => clients.check(principal).await,
            None => Ok(()),
        }
    }

    /// How many verified tokens are remembered now.
    pub fn cached_tokens(&self) -> usize {
        self.cache.len()
    }

    /// [`TokenVerifier::from_jwks`] for a JWK Set given as JSON text (e.g. an environment
    /// variable).
    ///
    /// Errors: [`KeyError::InvalidJwks`] when the text is not JSON, or as `from_jwks`.
    pub fn from_jwks_str(
        jwks: &str, issuer: &str, audience: &str,
    ) -> Result<TokenVerifier, KeyError> {
        let value: serde_json::Value = serde_json::from_str(jwks)
            .map_err(|e| KeyError::InvalidJwks(format!("not JSON: {e}")))?;
        Self::from_jwks(&value, issuer, audience)
    }

    /// A verifier for the public half of `key` alone; for local runs and tests.
    ///
    /// Errors: none in practice; [`KeyError::InvalidJwks`] if the key's own coordinates could not
    /// be encoded.
    pub fn from_signing_key(
        key: &SigningKey, issuer: &str, audience: &str,
    ) -> Result<TokenVerifier, KeyError> {
        Self::from_jwks(&key.public_jwks(), issuer, audience)
    }

    /// The configured key ids.
    pub fn kids(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    /// Verifies `token` at instant `now` and returns its principal.
    ///
    /// A token verified before by this verifier (or a clone) and remembered answers its principal
    /// without the signature check, as long as it is not expired at `now`; otherwise as
    /// [`TokenVerifier::verify_uncached`], remembering the token when it passes.
    ///
    /// The principal is shared with the cache: a request's copy is a reference count, not three
    /// strings (docs/performance.md).
    ///
    /// Errors: as [`TokenVerifier::verify_uncached`].
    pub fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<Arc<Principal>, AuthError> {
        if let Some(principal) = self.cache.get(token, now.timestamp()) {
            return Ok(principal);
        }
        let verified = self.check(token, now)?;
        let principal = verified.principal.clone();
        self.cache.insert(token, verified, now.timestamp());
        Ok(principal)
    }

    /// Verifies `token` at instant `now` in full, without the cache, and returns its principal.
    ///
    /// Checks, in order: the header parses, has no `crit`, `alg` is ES256 and `kid` names a
    /// configured key; the signature is low-S and valid; `exp`, `iss`, `aud` and `sub` are
    /// present and `iss`/`aud` match; `exp - iat` is at most [`MAX_LIFETIME_SECONDS`]; `exp` is not
    /// more than [`CLOCK_LEEWAY_SECONDS`] before `now`, and neither `nbf` (when present) nor
    /// `iat` more than that after it; then the account context.
    ///
    /// Errors: [`AuthError::InvalidToken`] for any failed check but the last,
    /// [`AuthError::MissingAccountContext`] when `account_id` is absent, empty or not a UUID.
    pub fn verify_uncached(&self, token: &str, now: DateTime<Utc>) -> Result<Principal, AuthError> {
        self.check(token, now)
            .map(|verified| Arc::unwrap_or_clone(verified.principal))
    }

    fn check(&self, token: &str, now: DateTime<Utc>) -> Result<Verified, AuthError> {
        let rejected = |reason: &dyn fmt::Display| {
            tracing::debug!(%reason, "bearer token rejected");
            AuthError::InvalidToken
        };
        let header = jsonwebtoken::decode_header(token).map_err(|e| rejected(&e))?;
        // RFC 7515 4.1.11: the recipient must refuse a `crit` it does not understand, and no
        // extension is understood here (jsonwebtoken's header drops `crit`: read it from the
        // segment).
        if names_crit(token) {
            return Err(rejected(&"crit header"));
        }
        if header.alg != Algorithm::ES256 {
            return Err(rejected(&format_args!(
                "algorithm {:?} is not ES256",
                header.alg
            )));
        }
        let kid = header
            .kid
            .ok_or_else(|| rejected(&"no kid in the header"))?;
        let key = self
            .keys
            .get(&kid)
            .ok_or_else(|| rejected(&format_args!("unknown kid {kid}")))?;
        if token.rsplit('.').next().is_some_and(is_high_s) {
            return Err(rejected(&"high-S signature"));
        }
        let claims = jsonwebtoken::decode::<Claims>(token, key, &self.validation)
            .map_err(|e| rejected(&e))?
            .claims;
        if claims.exp.saturating_sub(claims.iat) > MAX_LIFETIME_SECONDS {
            return Err(rejected(&"lifetime (exp - iat) over 24 h"));
        }
        if expired(claims.exp, now.timestamp()) {
            return Err(rejected(&"expired"));
        }
        // RFC 7519 4.1.5; and an `iat` ahead of our clock was not stamped by our issuer.
        let not_before = claims.nbf.map_or(claims.iat, |nbf| nbf.max(claims.iat));
        if premature(not_before, now.timestamp()) {
            return Err(rejected(&"not yet valid (nbf or iat in the future)"));
        }
        let account_id = claims
            .account_id
            .as_deref()
            .and_then(AccountId::try_parse)
            .ok_or(AuthError::MissingAccountContext)?;
        let scopes = claims
            .scope
            .split(' ')
            .filter_map(|name| Scope::parse(name).ok())
            .collect();
        Ok(Verified {
            principal: Arc::new(Principal {
                client_id: claims.sub,
                account_id,
                scopes,
                jti: claims.jti,
                generation: claims.r#gen.unwrap_or(0),
            }),
            exp: claims.exp,
            not_before,
        })
    }

    /// The principal of a request given its `Authorization` header value: [`bearer_token`] then
    /// [`TokenVerifier::verify`].
    ///
    /// Errors: 401 [`DomainError::Unauthorized`] with the message of the failed step.
    pub fn authenticate(
        &self, authorization_header: Option<&str>, now: DateTime<Utc>,
    ) -> Result<Arc<Principal>, DomainError> {
        let token = bearer_token(authorization_header)?;
        Ok(self.verify(token, now)?)
    }
}

impl fmt::Debug for TokenVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenVerifier")
            .field("kids", &self.keys.keys().collect::<Vec<_>>())
            .field("iss", &self.validation.iss)
            .field("aud", &self.validation.aud)
            .field("cache_capacity", &self.cache.capacity)
            .finish()
    }
}

/// ES256 only; `exp`, `iss`, `aud`, `sub` required; `exp` is checked by
/// [`TokenVerifier::verify`] against the caller's `now` rather than the system clock.
fn validation(issuer: &str, audience: &str) -> Validation {
    let mut validation = Validation::new(Algorithm::ES256);
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.leeway = CLOCK_LEEWAY_SECONDS;
    validation
}
