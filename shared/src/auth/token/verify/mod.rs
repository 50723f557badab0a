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
//! This file holds the checks; `jwks.rs` reads the configured key set, `cache.rs` remembers
//! the tokens that passed.

mod cache;
mod jwks;

pub use cache::DEFAULT_CACHE_CAPACITY;
use cache::{Verified, VerifiedTokens};

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

/// Clock skew tolerated when checking `exp`, in seconds.
pub const CLOCK_LEEWAY_SECONDS: u64 = 30;

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

/// Whether a token expiring at `exp` is expired at `now` (seconds), [`CLOCK_LEEWAY_SECONDS`]
/// tolerated.
fn expired(exp: i64, now: i64) -> bool {
    exp.saturating_add(leeway()) < now
}

/// Whether a token valid from `not_before` (the later of `nbf` and `iat`) is not yet valid at
/// `now` (seconds), [`CLOCK_LEEWAY_SECONDS`] tolerated.
fn premature(not_before: i64, now: i64) -> bool {
    not_before > now.saturating_add(leeway())
}

fn leeway() -> i64 {
    i64::try_from(CLOCK_LEEWAY_SECONDS).unwrap_or(i64::MAX)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::token::fixtures::*;
    use crate::auth::token::issue::TokenIssuer;
    use p256::elliptic_curve::sec1::ToEncodedPoint;
    use p256::pkcs8::{EncodePublicKey, LineEnding};
    use serde_json::json;

    fn issuer() -> TokenIssuer {
        TokenIssuer::new(dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, 3600)
    }

    fn verifier() -> TokenVerifier {
        TokenVerifier::from_signing_key(&dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE)
            .expect("the dev key makes a verifier")
    }

    #[test]
    fn an_issued_token_verifies_to_its_principal() {
        let issued = issuer()
            .issue(
                "northwind-integration",
                ACCOUNT,
                &[Scope::Read, Scope::Update],
                t0(),
            )
            .expect("issues");
        assert_eq!(issued.expires_in, 3600);
        assert_eq!(issued.scope, "service-api/read service-api/update");
        let principal = verifier()
            .verify(&issued.access_token, t0())
            .expect("verifies");
        assert_eq!(principal.client_id, "northwind-integration");
        assert_eq!(principal.account_id, ACCOUNT);
        assert_eq!(principal.scopes, vec![Scope::Read, Scope::Update]);
        assert!(Uuid::parse_str(&principal.jti).is_ok(), "{}", principal.jti);
    }

    #[test]
    fn a_token_is_accepted_until_the_leeway_after_expiry_and_refused_after() {
        let issued = issuer()
            .issue("c", ACCOUNT, &[Scope::Read], t0())
            .expect("issues");
        let expiry = t0() + chrono::Duration::seconds(3600);
        let leeway = chrono::Duration::seconds(30);
        assert!(verifier()
            .verify(&issued.access_token, expiry + leeway)
            .is_ok());
        assert_eq!(
            verifier().verify(
                &issued.access_token,
                expiry + leeway + chrono::Duration::seconds(1)
            ),
            Err(AuthError::InvalidToken)
        );
    }

    #[test]
    fn tokens_of_another_issuer_or_audience_are_refused() {
        let cases = [
            (
                "wrong iss",
                TokenIssuer::new(dev_key(), "someone-else", DEFAULT_AUDIENCE, 3600),
            ),
            (
                "wrong aud",
                TokenIssuer::new(dev_key(), DEFAULT_ISSUER, "another-api", 3600),
            ),
        ];
        for (name, issuer) in cases {
            let issued = issuer
                .issue("c", ACCOUNT, &[Scope::Read], t0())
                .expect("issues");
            assert_eq!(
                verifier().verify(&issued.access_token, t0()),
                Err(AuthError::InvalidToken),
                "{name}"
            );
        }
    }

    #[test]
    fn tokens_missing_a_required_claim_are_refused() {
        for name in ["iss", "aud", "sub", "exp"] {
            let mut payload = serde_json::to_value(claims()).expect("serializes");
            payload.as_object_mut().expect("an object").remove(name);
            let header = Header {
                kid: Some(dev_key().kid().to_owned()),
                ..Header::new(Algorithm::ES256)
            };
            let token =
                jsonwebtoken::encode(&header, &payload, dev_key().encoding_key()).expect("signs");
            assert_eq!(
                verifier().verify(&token, t0()),
                Err(AuthError::InvalidToken),
                "without {name}"
            );
        }
    }

    #[test]
    fn a_token_signed_by_an_unknown_key_is_refused_whatever_its_kid() {
        let stranger = other_key();
        let cases = [
            ("its own kid", Some(stranger.kid().to_owned())),
            ("the trusted key's kid", Some(dev_key().kid().to_owned())),
            ("no kid", None),
        ];
        for (name, kid) in cases {
            let token = sign(&stranger, kid.as_deref(), &claims());
            assert_eq!(
                verifier().verify(&token, t0()),
                Err(AuthError::InvalidToken),
                "{name}"
            );
        }
    }

    #[test]
    fn a_trusted_key_without_the_kid_in_the_header_is_refused() {
        let token = sign(&dev_key(), None, &claims());
        assert_eq!(
            verifier().verify(&token, t0()),
            Err(AuthError::InvalidToken)
        );
    }

    #[test]
    fn a_tampered_signature_or_payload_is_refused() {
        let token = sign(&dev_key(), Some(dev_key().kid()), &claims());
        assert!(
            verifier().verify(&token, t0()).is_ok(),
            "the untampered token verifies"
        );
        let parts: Vec<&str> = token.split('.').collect();
        let mut signature = URL_SAFE_NO_PAD.decode(parts[2]).expect("base64url");
        signature[10] ^= 0x01;
        let bad_signature = format!(
            "{}.{}.{}",
            parts[0],
            parts[1],
            URL_SAFE_NO_PAD.encode(signature)
        );
        let mut forged = claims();
        forged.account_id = Some(Uuid::from_u128(7).to_string());
        let bad_payload = format!("{}.{}.{}", parts[0], segment(&json!(forged)), parts[2]);
        for (name, token) in [("signature", bad_signature), ("payload", bad_payload)] {
            assert_eq!(
                verifier().verify(&token, t0()),
                Err(AuthError::InvalidToken),
                "{name}"
            );
        }
    }

    #[test]
    fn an_unsigned_alg_none_token_is_refused() {
        let header = json!({"alg": "none", "typ": "JWT", "kid": dev_key().kid()});
        let payload = json!(claims());
        for signature in ["", "AAAA"] {
            let token = format!("{}.{}.{signature}", segment(&header), segment(&payload));
            assert_eq!(
                verifier().verify(&token, t0()),
                Err(AuthError::InvalidToken)
            );
        }
    }

    #[test]
    fn an_hs256_token_keyed_with_the_public_key_is_refused() {
        // Algorithm confusion (RFC 8725 section 2.1): an attacker signs with HMAC using the
        // public key, in each representation a verifier might use as "the key", as the secret.
        let key = dev_key();
        let point = key.public_key().to_encoded_point(false).as_bytes().to_vec();
        let pem = key
            .public_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("encodes");
        let jwks = key.public_jwks().to_string();
        for secret in [point, pem.into_bytes(), jwks.into_bytes()] {
            let mut header = Header::new(Algorithm::HS256);
            header.kid = Some(key.kid().to_owned());
            let token = jsonwebtoken::encode(
                &header,
                &claims(),
                &jsonwebtoken::EncodingKey::from_secret(&secret),
            )
            .expect("signs");
            assert_eq!(
                verifier().verify(&token, t0()),
                Err(AuthError::InvalidToken)
            );
        }
    }

    #[test]
    fn garbage_is_an_invalid_token_not_a_panic() {
        for token in [
            "",
            ".",
            "..",
            "a.b.c",
            "eyJhbGciOiJFUzI1NiJ9..",
            "\u{1F600}.x.y",
        ] {
            assert_eq!(
                verifier().verify(token, t0()),
                Err(AuthError::InvalidToken),
                "{token:?}"
            );
        }
    }

    #[test]
    fn a_valid_token_without_a_usable_account_id_lacks_account_context() {
        for account_id in [None, Some(""), Some("not-a-uuid"), Some("   ")] {
            let mut claims = claims();
            claims.account_id = account_id.map(str::to_owned);
            let token = sign(&dev_key(), Some(dev_key().kid()), &claims);
            assert_eq!(
                verifier().verify(&token, t0()),
                Err(AuthError::MissingAccountContext),
                "{account_id:?}"
            );
        }
    }

    #[test]
    fn a_forged_token_without_account_id_is_invalid_not_missing_context() {
        let mut claims = claims();
        claims.account_id = None;
        let token = sign(&other_key(), Some(dev_key().kid()), &claims);
        assert_eq!(
            verifier().verify(&token, t0()),
            Err(AuthError::InvalidToken)
        );
    }

    #[test]
    fn unknown_scope_names_in_a_token_grant_nothing() {
        let mut claims = claims();
        claims.scope = "service-api/read  service-api/admin service-api/delete".to_owned();
        let token = sign(&dev_key(), Some(dev_key().kid()), &claims);
        let principal = verifier().verify(&token, t0()).expect("verifies");
        assert_eq!(principal.scopes, vec![Scope::Read, Scope::Delete]);
    }

    #[test]
    fn authenticate_combines_header_parsing_and_verification() {
        let issued = issuer()
            .issue("c", ACCOUNT, &[Scope::Read], t0())
            .expect("issues");
        let header = format!("Bearer {}", issued.access_token);
        assert_eq!(
            verifier()
                .authenticate(Some(&header), t0())
                .map(|p| p.account_id)
                .ok(),
            Some(ACCOUNT)
        );
        let late = t0() + chrono::Duration::hours(2);
        assert_eq!(
            verifier()
                .authenticate(Some(&header), late)
                .map_err(|e| e.to_string()),
            Err("Unauthorized: invalid token".to_owned())
        );
    }
}
