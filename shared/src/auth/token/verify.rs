//! Verifying access tokens against the configured public keys (RFC 8725; BEHAVIOR 1).

use super::bearer::bearer_token;
use super::claims::Claims;
use super::principal::{AuthError, Principal};
use crate::auth::keys::{coordinates, thumbprint, KeyError, SigningKey};
use crate::auth::scope::Scope;
use crate::error::DomainError;
use crate::types::ids::AccountId;
use chrono::{DateTime, Utc};
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, EllipticCurveKeyType, Jwk, JwkSet, KeyAlgorithm,
    PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use std::collections::HashMap;
use std::fmt;

/// Clock skew tolerated when checking `exp`, in seconds.
pub const CLOCK_LEEWAY_SECONDS: u64 = 30;

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
        if !jwks.get("keys").is_some_and(serde_json::Value::is_array) {
            return Err(invalid(
                "expected an object with a \"keys\" array".to_owned(),
            ));
        }
        // The typed set cannot tell a published private key: look for `d` in the raw members.
        if let Some(index) = jwks["keys"]
            .as_array()
            .and_then(|keys| keys.iter().position(|k| k.get("d").is_some()))
        {
            return Err(invalid(format!(
                "key {index}: holds a private key (d); publish public keys only"
            )));
        }
        let set: JwkSet = serde_json::from_value(jwks.clone())
            .map_err(|e| invalid(format!("not a JWK Set: {e}")))?;
        if set.keys.is_empty() {
            return Err(invalid("the \"keys\" array is empty".to_owned()));
        }
        let mut keys = HashMap::with_capacity(set.keys.len());
        for (index, jwk) in set.keys.iter().enumerate() {
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
    /// more than [`CLOCK_LEEWAY_SECONDS`] before `now`, and neither `nbf` (when present) nor
    /// `iat` more than that after it; then the account context.
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
        // RFC 7519 4.1.5; and an `iat` ahead of our clock was not stamped by our issuer.
        let latest = now.timestamp().saturating_add(leeway);
        if claims.nbf.is_some_and(|nbf| nbf > latest) || claims.iat > latest {
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
    /// Errors: 401 [`DomainError::Unauthorized`] with the message of the failed step.
    pub fn authenticate(
        &self,
        authorization_header: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Principal, DomainError> {
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

/// The `kid` and decoding key of one public P-256 JWK (RFC 7517, RFC 7518 section 6.2). The
/// point must lie on the curve; a key without `kid` gets its RFC 7638 thumbprint.
fn decoding_key(jwk: &Jwk) -> Result<(String, DecodingKey), String> {
    let AlgorithmParameters::EllipticCurve(ec) = &jwk.algorithm else {
        return Err("only kty EC with crv P-256 is supported".to_owned());
    };
    if ec.key_type != EllipticCurveKeyType::EC || ec.curve != EllipticCurve::P256 {
        return Err("only kty EC with crv P-256 is supported".to_owned());
    }
    if let Some(alg) = jwk.common.key_algorithm {
        if alg != KeyAlgorithm::ES256 {
            return Err(format!("alg {alg:?} is not ES256"));
        }
    }
    if let Some(usage) = &jwk.common.public_key_use {
        if *usage != PublicKeyUse::Signature {
            return Err(format!("use {usage:?} is not sig"));
        }
    }
    // Parse the point with p256 first: it must lie on the curve. Re-encoding it also normalises
    // the coordinates to 32 bytes each.
    let text = serde_json::json!({"kty": "EC", "crv": "P-256", "x": ec.x, "y": ec.y}).to_string();
    let public =
        p256::PublicKey::from_jwk_str(&text).map_err(|_| "x/y are not a P-256 point".to_owned())?;
    let (x, y) = coordinates(&public);
    let kid = match &jwk.common.key_id {
        Some(kid) if !kid.is_empty() => kid.clone(),
        Some(_) => return Err("kid is empty".to_owned()),
        None => thumbprint(&x, &y).map_err(|e| e.to_string())?,
    };
    let key = DecodingKey::from_ec_components(&x, &y).map_err(|e| e.to_string())?;
    Ok((kid, key))
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
