//! OAuth 2.0 client-credentials auth (RFC 6749 section 4.4) with JWT bearer tokens (RFC 7519,
//! RFC 6750), as decided in BEHAVIOR 1.
//!
//! - [`secret`]: client secrets, stored only as argon2id PHC strings.
//! - [`keys`]: the ES256 signing key (P-256), its RFC 7638 `kid` and the public JWKS.
//! - [`token`]: issuing and verifying access tokens, the [`Principal`] they carry, and the
//!   `Authorization: Bearer` header parsing every route but the token endpoint uses.
//! - [`oauth`]: the token endpoint (`POST /oauth2/token`) as a framework-independent function.

pub mod keys;
pub mod oauth;
pub mod secret;
pub mod token;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

pub use keys::{KeyError, SigningKey, DEFAULT_AUDIENCE, DEFAULT_ISSUER, DEV_SIGNING_KEY_PEM};
pub use oauth::{token_endpoint, OAuthError, TokenResponse};
pub use secret::{burn_verification, hash_secret, verify_secret, SecretError};
pub use token::{
    bearer_token, AuthError, Claims, IssueError, IssuedToken, Principal, TokenIssuer,
    TokenVerifier, CLOCK_LEEWAY_SECONDS,
};

/// A scope name of the API (spec "Authentication" 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scope {
    /// `service-api/read`
    #[serde(rename = "service-api/read")]
    Read,
    /// `service-api/create`
    #[serde(rename = "service-api/create")]
    Create,
    /// `service-api/update`
    #[serde(rename = "service-api/update")]
    Update,
    /// `service-api/delete`
    #[serde(rename = "service-api/delete")]
    Delete,
}

impl Scope {
    /// Every scope of the API, in the order of the spec's table.
    pub const ALL: [Scope; 4] = [Self::Read, Self::Create, Self::Update, Self::Delete];

    /// The scope's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "service-api/read",
            Self::Create => "service-api/create",
            Self::Update => "service-api/update",
            Self::Delete => "service-api/delete",
        }
    }
}

/// A scope name that is not one of [`Scope::ALL`]; holds the name as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope: {0}")]
pub struct UnknownScope(pub String);

impl FromStr for Scope {
    type Err = UnknownScope;

    /// Parses the exact, case-sensitive scope name (`service-api/read`, ...); nothing else.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or_else(|| UnknownScope(s.to_owned()))
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scope_parses_back_from_its_name() {
        for scope in Scope::ALL {
            assert_eq!(scope.as_str().parse::<Scope>(), Ok(scope));
            assert_eq!(scope.to_string(), scope.as_str());
        }
    }

    #[test]
    fn scope_names_are_exact_and_case_sensitive() {
        for name in [
            "Service-API/read",
            "service-api/read ",
            "read",
            "service-api/",
            "",
        ] {
            assert_eq!(
                name.parse::<Scope>(),
                Err(UnknownScope(name.to_owned())),
                "{name:?}"
            );
        }
    }

    #[test]
    fn serde_names_match_the_scope_names() {
        for scope in Scope::ALL {
            let json = serde_json::to_value(scope).expect("a scope serializes");
            assert_eq!(json, serde_json::json!(scope.as_str()));
        }
    }
}
