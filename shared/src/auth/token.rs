//! Access tokens: ES256-signed JWTs (RFC 7519, RFC 7518 section 3.4) carrying the account
//! context, and the `Authorization: Bearer` parsing (RFC 6750 section 2.1) of every route but the
//! token endpoint.
//!
//! Claims (BEHAVIOR 1): `iss`, `aud`, `sub` (the client id), `account_id` (the account context),
//! `scope` (space-separated), `iat`, `exp` (seconds since the epoch) and `jti` (a random UUID).
//! The header has `alg: ES256`, `typ: JWT` and the signing key's `kid`.
//!
//! Verification follows RFC 8725 (JWT best current practices): the algorithm is pinned to ES256
//! (`alg: none`, HMAC and every other algorithm are refused, so a public key can never be used
//! as an HMAC secret), the header's `kid` must name a configured key, and the signature, `exp`,
//! `iss` and `aud` are checked with a leeway of [`CLOCK_LEEWAY_SECONDS`].

use crate::auth::keys::{coordinates, thumbprint, KeyError, SigningKey};
use crate::auth::Scope;
use crate::error::ApiError;
use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use uuid::Uuid;

/// Clock skew tolerated when checking `exp`, in seconds.
pub const CLOCK_LEEWAY_SECONDS: u64 = 30;

/// The claims of an access token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Issuer (RFC 7519 section 4.1.1); [`DEFAULT_ISSUER`](crate::auth::DEFAULT_ISSUER) unless
    /// configured.
    pub iss: String,
    /// Audience (RFC 7519 section 4.1.3), a single string.
    pub aud: String,
    /// Subject: the OAuth `client_id` the token was issued to.
    pub sub: String,
    /// The account context: the client's account id as a hyphenated UUID. Tokens without it (or
    /// with an empty or non-UUID value) are refused with
    /// [`AuthError::MissingAccountContext`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// Granted scope names, space-separated (RFC 6749 section 3.3).
    pub scope: String,
    /// Issued at, seconds since the Unix epoch.
    pub iat: i64,
    /// Expiry, seconds since the Unix epoch.
    pub exp: i64,
    /// Token id: a random (v4) UUID, unique per token.
    pub jti: String,
}

/// A freshly issued access token, as the token endpoint reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    /// The compact-serialized JWT (`header.payload.signature`).
    pub access_token: String,
    /// Lifetime in seconds from issuance (`exp - iat`).
    pub expires_in: u64,
    /// Granted scope names, space-separated, without duplicates, in the order given.
    pub scope: String,
}

/// Why a token could not be issued. Both are server faults, never the client's.
#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    /// `now + ttl` does not fit the `exp` claim.
    #[error("token lifetime of {0} s is out of range")]
    Lifetime(u64),
    /// jsonwebtoken could not sign.
    #[error("could not sign the access token")]
    Signing(#[source] jsonwebtoken::errors::Error),
}

/// Issues access tokens signed with the token function's private key.
#[derive(Debug, Clone)]
pub struct TokenIssuer {
    key: SigningKey,
    issuer: String,
    audience: String,
    ttl_seconds: u64,
}

impl TokenIssuer {
    /// An issuer signing with `key`, writing `issuer` as `iss` and `audience` as `aud`, with
    /// tokens valid for `ttl_seconds` seconds (BEHAVIOR 1: default 3600).
    pub fn new(
        key: SigningKey,
        issuer: impl Into<String>,
        audience: impl Into<String>,
        ttl_seconds: u64,
    ) -> Self {
        Self {
            key,
            issuer: issuer.into(),
            audience: audience.into(),
            ttl_seconds,
        }
    }

    /// Issues a token for `client_id` of account `account_id` with `scopes` (duplicates are
    /// dropped, order kept), valid from `now` for the configured lifetime.
    ///
    /// Errors: [`IssueError::Lifetime`] when `now + ttl` overflows, [`IssueError::Signing`] when
    /// signing fails.
    pub fn issue(
        &self,
        client_id: &str,
        account_id: Uuid,
        scopes: &[Scope],
        now: DateTime<Utc>,
    ) -> Result<IssuedToken, IssueError> {
        let iat = now.timestamp();
        let exp = i64::try_from(self.ttl_seconds)
            .ok()
            .and_then(|ttl| iat.checked_add(ttl))
            .ok_or(IssueError::Lifetime(self.ttl_seconds))?;
        let scope = scope_string(scopes);
        let claims = Claims {
            iss: self.issuer.clone(),
            aud: self.audience.clone(),
            sub: client_id.to_owned(),
            account_id: Some(account_id.hyphenated().to_string()),
            scope: scope.clone(),
            iat,
            exp,
            jti: Uuid::new_v4().to_string(),
        };
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("JWT".to_owned());
        header.kid = Some(self.key.kid().to_owned());
        let access_token = jsonwebtoken::encode(&header, &claims, self.key.encoding_key())
            .map_err(IssueError::Signing)?;
        Ok(IssuedToken {
            access_token,
            expires_in: self.ttl_seconds,
            scope,
        })
    }

    /// The signing key (its `kid` and public JWKS).
    pub fn key(&self) -> &SigningKey {
        &self.key
    }

    /// The `iss` written into tokens.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The `aud` written into tokens.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// Token lifetime in seconds.
    pub fn ttl_seconds(&self) -> u64 {
        self.ttl_seconds
    }
}

/// Space-separated scope names without duplicates, in the order given.
fn scope_string(scopes: &[Scope]) -> String {
    let mut unique: Vec<Scope> = Vec::with_capacity(scopes.len());
    for scope in scopes {
        if !unique.contains(scope) {
            unique.push(*scope);
        }
    }
    unique
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why a bearer token was refused. Both answer 401 (spec "Authentication" 3, BEHAVIOR 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// Malformed, badly signed, expired, wrong issuer or audience, unknown `kid`, or an algorithm
    /// other than ES256. The reason is logged at debug level, never sent.
    #[error("Unauthorized: invalid token")]
    InvalidToken,
    /// A valid token whose `account_id` claim is absent, empty or not a UUID.
    #[error("Unauthorized: missing account context")]
    MissingAccountContext,
}

impl From<AuthError> for ApiError {
    /// 401 with the error's message and `WWW-Authenticate: Bearer`.
    fn from(e: AuthError) -> Self {
        ApiError::Unauthorized(e.to_string())
    }
}

/// The authenticated caller of a request: who it is, for which account, allowed to do what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The OAuth client id (the token's `sub`).
    pub client_id: String,
    /// The account context; all data access is limited to it (spec "Authentication" 6).
    pub account_id: Uuid,
    /// Granted scopes. Scope names this build does not know are ignored (they grant nothing).
    pub scopes: Vec<Scope>,
    /// The token id (`jti`), for logs.
    pub jti: String,
}

impl Principal {
    /// Whether the token grants `scope`.
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    /// `Ok` when the token grants `scope`.
    ///
    /// Errors: [`ApiError::InsufficientScope`] (403, RFC 6750 section 3.1 `insufficient_scope`,
    /// BEHAVIOR 1) naming the scope.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.has(scope) {
            Ok(())
        } else {
            Err(ApiError::InsufficientScope(scope.as_str()))
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header value (RFC 6750 section 2.1; the
/// scheme is case-insensitive per RFC 9110 section 11.1).
///
/// Errors (401): `Unauthorized: missing bearer token` when the header is absent;
/// `Unauthorized: invalid token` for another scheme, an empty token, or a token with spaces.
pub fn bearer_token(authorization_header: Option<&str>) -> Result<&str, ApiError> {
    let value = authorization_header
        .ok_or_else(|| ApiError::Unauthorized("Unauthorized: missing bearer token".to_owned()))?;
    let invalid = || ApiError::from(AuthError::InvalidToken);
    let value = value.trim();
    let (scheme, token) = value.split_once([' ', '\t']).ok_or_else(invalid)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer")
        || token.is_empty()
        || token.contains(|c: char| c.is_ascii_whitespace())
    {
        return Err(invalid());
    }
    Ok(token)
}

/// Verifies access tokens against a set of ES256 public keys selected by `kid`.
#[derive(Clone)]
pub struct TokenVerifier {
    keys: HashMap<String, DecodingKey>,
    validation: Validation,
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
        jwks: &serde_json::Value,
        issuer: &str,
        audience: &str,
    ) -> Result<TokenVerifier, KeyError> {
        let invalid = |why: String| KeyError::InvalidJwks(why);
        let list = jwks
            .get("keys")
            .and_then(|k| k.as_array())
            .ok_or_else(|| invalid("expected an object with a \"keys\" array".to_owned()))?;
        if list.is_empty() {
            return Err(invalid("the \"keys\" array is empty".to_owned()));
        }
        let mut keys = HashMap::with_capacity(list.len());
        for (index, jwk) in list.iter().enumerate() {
            let (kid, key) =
                decoding_key(jwk).map_err(|why| invalid(format!("key {index}: {why}")))?;
            if keys.insert(kid.clone(), key).is_some() {
                return Err(invalid(format!("key {index}: duplicate kid {kid}")));
            }
        }
        Ok(Self {
            keys,
            validation: validation(issuer, audience),
        })
    }

    /// [`TokenVerifier::from_jwks`] for a JWK Set given as JSON text (e.g. an environment
    /// variable).
    ///
    /// Errors: [`KeyError::InvalidJwks`] when the text is not JSON, or as `from_jwks`.
    pub fn from_jwks_str(
        jwks: &str,
        issuer: &str,
        audience: &str,
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
        key: &SigningKey,
        issuer: &str,
        audience: &str,
    ) -> Result<TokenVerifier, KeyError> {
        Self::from_jwks(&key.public_jwks(), issuer, audience)
    }

    /// The configured key ids.
    pub fn kids(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    /// Verifies `token` at instant `now` and returns its principal.
    ///
    /// Checks, in order: the header parses, `alg` is ES256 and `kid` names a configured key; the
    /// signature; `exp`, `iss`, `aud` and `sub` are present and `iss`/`aud` match; `exp` is not
    /// more than [`CLOCK_LEEWAY_SECONDS`] before `now`; then the account context.
    ///
    /// Errors: [`AuthError::InvalidToken`] for any failed check but the last,
    /// [`AuthError::MissingAccountContext`] when `account_id` is absent, empty or not a UUID.
    pub fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<Principal, AuthError> {
        let rejected = |reason: &dyn fmt::Display| {
            tracing::debug!(%reason, "bearer token rejected");
            AuthError::InvalidToken
        };
        let header = jsonwebtoken::decode_header(token).map_err(|e| rejected(&e))?;
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
        let claims = jsonwebtoken::decode::<Claims>(token, key, &self.validation)
            .map_err(|e| rejected(&e))?
            .claims;
        let leeway = i64::try_from(CLOCK_LEEWAY_SECONDS).unwrap_or(i64::MAX);
        if claims.exp.saturating_add(leeway) < now.timestamp() {
            return Err(rejected(&"expired"));
        }
        let account_id = claims
            .account_id
            .as_deref()
            .and_then(|id| Uuid::parse_str(id).ok())
            .ok_or(AuthError::MissingAccountContext)?;
        let scopes = claims
            .scope
            .split(' ')
            .filter_map(|name| name.parse().ok())
            .collect();
        Ok(Principal {
            client_id: claims.sub,
            account_id,
            scopes,
            jti: claims.jti,
        })
    }

    /// The principal of a request given its `Authorization` header value: [`bearer_token`] then
    /// [`TokenVerifier::verify`].
    ///
    /// Errors: 401 [`ApiError::Unauthorized`] with the message of the failed step.
    pub fn authenticate(
        &self,
        authorization_header: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Principal, ApiError> {
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

/// The `kid` and decoding key of one public P-256 JWK.
fn decoding_key(jwk: &serde_json::Value) -> Result<(String, DecodingKey), String> {
    let member = |name: &str| {
        jwk.get(name)
            .map(|v| v.as_str().ok_or(format!("{name} is not a string")))
    };
    let required = |name: &str| member(name).unwrap_or_else(|| Err(format!("{name} is missing")));
    if jwk.get("d").is_some() {
        return Err("holds a private key (d); publish public keys only".to_owned());
    }
    if required("kty")? != "EC" || required("crv")? != "P-256" {
        return Err("only kty EC with crv P-256 is supported".to_owned());
    }
    if let Some(alg) = member("alg").transpose()? {
        if alg != "ES256" {
            return Err(format!("alg {alg} is not ES256"));
        }
    }
    if let Some(usage) = member("use").transpose()? {
        if usage != "sig" {
            return Err(format!("use {usage} is not sig"));
        }
    }
    let (x, y) = (required("x")?, required("y")?);
    // Parse the point with p256 first: it must lie on the curve. Re-encoding it also normalises
    // the coordinates to 32 bytes each.
    let text = serde_json::json!({"kty": "EC", "crv": "P-256", "x": x, "y": y}).to_string();
    let public =
        p256::PublicKey::from_jwk_str(&text).map_err(|_| "x/y are not a P-256 point".to_owned())?;
    let (x, y) = coordinates(&public);
    let kid = match member("kid").transpose()? {
        Some(kid) if !kid.is_empty() => kid.to_owned(),
        Some(_) => return Err("kid is empty".to_owned()),
        None => thumbprint(&x, &y),
    };
    let key = DecodingKey::from_ec_components(&x, &y).map_err(|e| e.to_string())?;
    Ok((kid, key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{DEFAULT_AUDIENCE, DEFAULT_ISSUER, DEV_SIGNING_KEY_PEM};
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    use chrono::TimeZone;
    use p256::elliptic_curve::rand_core::OsRng;
    use p256::elliptic_curve::sec1::ToEncodedPoint;
    use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    use serde_json::json;

    const ACCOUNT: Uuid = Uuid::from_u128(0x5b1c_0000_0000_4000_8000_0000_0000_0001);

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 22, 9, 30, 0)
            .single()
            .expect("a valid instant")
    }

    fn dev_key() -> SigningKey {
        SigningKey::from_pem(DEV_SIGNING_KEY_PEM).expect("the development key parses")
    }

    fn other_key() -> SigningKey {
        let secret = p256::SecretKey::random(&mut OsRng);
        let pem = secret.to_pkcs8_pem(LineEnding::LF).expect("encodes");
        SigningKey::from_pem(&pem).expect("parses")
    }

    fn issuer() -> TokenIssuer {
        TokenIssuer::new(dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, 3600)
    }

    fn verifier() -> TokenVerifier {
        TokenVerifier::from_signing_key(&dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE)
            .expect("the dev key makes a verifier")
    }

    fn claims() -> Claims {
        Claims {
            iss: DEFAULT_ISSUER.to_owned(),
            aud: DEFAULT_AUDIENCE.to_owned(),
            sub: "northwind-integration".to_owned(),
            account_id: Some(ACCOUNT.to_string()),
            scope: "service-api/read".to_owned(),
            iat: t0().timestamp(),
            exp: t0().timestamp() + 3600,
            jti: Uuid::new_v4().to_string(),
        }
    }

    /// Signs `claims` with `key` as ES256, with `kid` in the header.
    fn sign(key: &SigningKey, kid: Option<&str>, claims: &Claims) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, key.encoding_key()).expect("signs")
    }

    fn segment(value: &serde_json::Value) -> String {
        URL_SAFE_NO_PAD.encode(value.to_string())
    }

    fn decode_segment(token: &str, index: usize) -> serde_json::Value {
        let part = token.split('.').nth(index).expect("three segments");
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("base64url")).expect("JSON")
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
    fn an_issued_token_carries_every_claim_and_a_typed_header_with_the_kid() {
        let issued = issuer()
            .issue(
                "northwind-integration",
                ACCOUNT,
                &[Scope::Read, Scope::Read],
                t0(),
            )
            .expect("issues");
        let header = decode_segment(&issued.access_token, 0);
        assert_eq!(
            header,
            json!({"alg": "ES256", "typ": "JWT", "kid": dev_key().kid()})
        );
        let claims = decode_segment(&issued.access_token, 1);
        let jti = claims["jti"].as_str().expect("jti is a string").to_owned();
        assert_eq!(Uuid::parse_str(&jti).map(|u| u.get_version_num()), Ok(4));
        assert_eq!(
            claims,
            json!({
                "iss": "account-routing-api",
                "aud": "account-routing-api",
                "sub": "northwind-integration",
                "account_id": ACCOUNT.to_string(),
                "scope": "service-api/read",
                "iat": t0().timestamp(),
                "exp": t0().timestamp() + 3600,
                "jti": jti,
            })
        );
    }

    #[test]
    fn every_token_gets_its_own_jti() {
        let a = issuer()
            .issue("c", ACCOUNT, &[Scope::Read], t0())
            .expect("issues");
        let b = issuer()
            .issue("c", ACCOUNT, &[Scope::Read], t0())
            .expect("issues");
        assert_ne!(
            decode_segment(&a.access_token, 1)["jti"],
            decode_segment(&b.access_token, 1)["jti"]
        );
    }

    #[test]
    fn a_lifetime_that_overflows_the_exp_claim_is_refused() {
        let issuer = TokenIssuer::new(dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, u64::MAX);
        assert!(matches!(
            issuer.issue("c", ACCOUNT, &[], t0()),
            Err(IssueError::Lifetime(u64::MAX))
        ));
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
    fn a_verifier_with_several_keys_accepts_each_by_kid() {
        let (old, new) = (dev_key(), other_key());
        let jwks = json!({"keys": [old.public_jwk(), new.public_jwk()]});
        let verifier =
            TokenVerifier::from_jwks(&jwks, DEFAULT_ISSUER, DEFAULT_AUDIENCE).expect("loads");
        for key in [&old, &new] {
            let issued = TokenIssuer::new(key.clone(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, 60)
                .issue("c", ACCOUNT, &[Scope::Read], t0())
                .expect("issues");
            assert_eq!(
                verifier
                    .verify(&issued.access_token, t0())
                    .map(|p| p.account_id),
                Ok(ACCOUNT)
            );
        }
        let third = sign(&other_key(), None, &claims());
        assert_eq!(verifier.verify(&third, t0()), Err(AuthError::InvalidToken));
    }

    #[test]
    fn a_jwks_given_as_text_loads_and_a_key_without_kid_gets_its_thumbprint() {
        let mut jwk = dev_key().public_jwk();
        jwk.as_object_mut().expect("an object").remove("kid");
        let text = json!({"keys": [jwk]}).to_string();
        let verifier =
            TokenVerifier::from_jwks_str(&text, DEFAULT_ISSUER, DEFAULT_AUDIENCE).expect("loads");
        assert_eq!(verifier.kids().collect::<Vec<_>>(), vec![dev_key().kid()]);
    }

    #[test]
    fn unusable_jwks_are_refused_at_load() {
        let good = dev_key().public_jwk();
        let with = |name: &str, value: serde_json::Value| {
            let mut jwk = good.clone();
            jwk[name] = value;
            json!({"keys": [jwk]})
        };
        let cases = [
            ("not a set", json!([good.clone()])),
            ("empty set", json!({"keys": []})),
            (
                "duplicate kid",
                json!({"keys": [good.clone(), good.clone()]}),
            ),
            ("RSA", with("kty", json!("RSA"))),
            ("P-384", with("crv", json!("P-384"))),
            ("HS256", with("alg", json!("HS256"))),
            ("encryption key", with("use", json!("enc"))),
            ("private member", with("d", json!("AAAA"))),
            (
                "point off the curve",
                with("y", json!(URL_SAFE_NO_PAD.encode([1u8; 32]))),
            ),
            ("x not a string", with("x", json!(1))),
            ("empty kid", with("kid", json!(""))),
        ];
        for (name, jwks) in cases {
            assert!(
                matches!(
                    TokenVerifier::from_jwks(&jwks, "i", "a"),
                    Err(KeyError::InvalidJwks(_))
                ),
                "{name}"
            );
        }
        assert!(matches!(
            TokenVerifier::from_jwks_str("{", "i", "a"),
            Err(KeyError::InvalidJwks(_))
        ));
    }

    #[test]
    fn auth_errors_become_401_with_their_message() {
        let cases = [
            (AuthError::InvalidToken, "Unauthorized: invalid token"),
            (
                AuthError::MissingAccountContext,
                "Unauthorized: missing account context",
            ),
        ];
        for (error, message) in cases {
            let api = ApiError::from(error);
            assert_eq!(api.status(), http::StatusCode::UNAUTHORIZED);
            assert_eq!(api.body(), json!({"message": message, "error": true}));
        }
    }

    #[test]
    fn bearer_headers_yield_their_token_or_a_401() {
        let missing = "Unauthorized: missing bearer token";
        let invalid = "Unauthorized: invalid token";
        let cases: [(Option<&str>, Result<&str, &str>); 10] = [
            (Some("Bearer abc.def.ghi"), Ok("abc.def.ghi")),
            (Some("bearer abc"), Ok("abc")),
            (Some("BEARER   abc  "), Ok("abc")),
            (None, Err(missing)),
            (Some(""), Err(invalid)),
            (Some("Bearer"), Err(invalid)),
            (Some("Bearer   "), Err(invalid)),
            (Some("Basic YTpi"), Err(invalid)),
            (Some("Bearer a b"), Err(invalid)),
            (Some("Token abc"), Err(invalid)),
        ];
        for (header, expected) in cases {
            let got = bearer_token(header).map_err(|e| {
                assert_eq!(e.status(), http::StatusCode::UNAUTHORIZED);
                e.to_string()
            });
            assert_eq!(got, expected.map_err(str::to_owned), "{header:?}");
        }
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

    #[test]
    fn a_principal_without_the_scope_gets_403_naming_it() {
        let principal = Principal {
            client_id: "c".to_owned(),
            account_id: ACCOUNT,
            scopes: vec![Scope::Read],
            jti: "j".to_owned(),
        };
        assert!(principal.require(Scope::Read).is_ok());
        let error = principal
            .require(Scope::Delete)
            .expect_err("delete is not granted");
        assert_eq!(error.status(), http::StatusCode::FORBIDDEN);
        assert_eq!(
            error.to_string(),
            "Insufficient scope: requires service-api/delete"
        );
    }
}
