//! Issuing access tokens: ES256-signed JWTs carrying the account context.

use super::claims::Claims;
use crate::auth::keys::SigningKey;
use crate::auth::scope::Scope;
use crate::types::ids::AccountId;
use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, Header};
use uuid::Uuid;

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
        key: SigningKey, issuer: impl Into<String>, audience: impl Into<String>, ttl_seconds: u64,
    ) -> Self {
        Self {
            key,
            issuer: issuer.into(),
            audience: audience.into(),
            ttl_seconds,
        }
    }

    /// Issues a token for `client_id` of account `account_id` with `scopes` (duplicates are
    /// dropped, order kept), valid from `now` for the configured lifetime, at key generation 0.
    ///
    /// Errors: [`IssueError::Lifetime`] when `now + ttl` overflows, [`IssueError::Signing`] when
    /// signing fails.
    pub fn issue(
        &self, client_id: &str, account_id: AccountId, scopes: &[Scope], now: DateTime<Utc>,
    ) -> Result<IssuedToken, IssueError> {
        self.issue_at_generation(client_id, account_id, scopes, 0, now)
    }

    /// [`Self::issue`] for a client at key generation `generation` (claim `gen`: the token is
    /// refused once the client moves past it, BEHAVIOR 1).
    ///
    /// Errors: as [`Self::issue`].
    pub fn issue_at_generation(
        &self, client_id: &str, account_id: AccountId, scopes: &[Scope], generation: u64,
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
            account_id: Some(account_id.to_string()),
            scope: scope.clone(),
            iat,
            exp,
            nbf: None,
            jti: Uuid::new_v4().to_string(),
            r#gen: Some(generation),
        };
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("JWT".to_owned());
        header.kid = Some(self.key.kid().to_owned());
        let access_token = jsonwebtoken::encode(&header, &claims, self.key.encoding_key())
            .map_err(IssueError::Signing)?;
        // aws-lc signs with either `s`; the verifier accepts the low-S form only.
        let access_token = super::signature::low_s(access_token);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::token::fixtures::*;
    use serde_json::json;

    fn issuer() -> TokenIssuer {
        TokenIssuer::new(dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, 3600)
    }

    /// The verifier refuses high-S signatures, so every issued token must be
    /// low-S (aws-lc signs with either half: 64 tokens all low-S by chance is 2^-64).
    #[test]
    fn every_issued_token_has_a_low_s_signature() {
        let issuer = issuer();
        for _ in 0..64 {
            let token = issuer
                .issue("c", ACCOUNT, &[Scope::Read], t0())
                .expect("issues")
                .access_token;
            let segment = token.rsplit('.').next().expect("a signature");
            assert!(!super::super::signature::is_high_s(segment), "{token}");
        }
    }

    #[test]
    fn an_issued_token_carries_every_claim_and_a_typed_header_with_the_kid() {
        let issued = issuer()
            .issue_at_generation(
                "northwind-integration",
                ACCOUNT,
                &[Scope::Read, Scope::Read],
                7,
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
                "gen": 7,
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
}
