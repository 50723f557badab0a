//! The authenticated caller of a request, and why a bearer token is refused.

use crate::auth::scope::Scope;
use crate::error::DomainError;
use crate::types::ids::AccountId;

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

impl From<AuthError> for DomainError {
    /// 401 with the error's message.
    fn from(e: AuthError) -> Self {
        DomainError::Unauthorized(e.to_string())
    }
}

/// The authenticated caller of a request: who it is, for which account, allowed to do what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The OAuth client id (the token's `sub`).
    pub client_id: String,
    /// The account context; all data access is limited to it (spec "Authentication" 6).
    pub account_id: AccountId,
    /// Granted scopes. Scope names this build does not know are ignored (they grant nothing).
    pub scopes: Vec<Scope>,
    /// The token id (`jti`), for logs.
    pub jti: String,
    /// The client's key generation the token was issued under (claim `gen`; 0 when absent).
    pub generation: u64,
}

impl Principal {
    /// Whether the token grants `scope`.
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    /// Who asks, for the writes that record it (BEHAVIOR 15's `*_by`, BEHAVIOR 18's actor): the
    /// account and the client (the token's `sub`).
    pub fn actor(&self) -> crate::audit::Actor<'_> {
        crate::audit::Actor {
            account_id: self.account_id,
            sub: &self.client_id,
        }
    }

    /// `Ok` when the token grants `scope`.
    ///
    /// Errors: [`DomainError::InsufficientScope`] (403, RFC 6750 section 3.1 `insufficient_scope`,
    /// BEHAVIOR 1) naming the scope.
    pub fn require(&self, scope: Scope) -> Result<(), DomainError> {
        if self.has(scope) {
            Ok(())
        } else {
            Err(DomainError::InsufficientScope(scope.as_str()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ApiError;
    use crate::auth::token::fixtures::*;
    use serde_json::json;

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
            let api = ApiError::from(DomainError::from(error));
            assert_eq!(api.status(), http::StatusCode::UNAUTHORIZED);
            assert_eq!(
                serde_json::to_value(api.body()).unwrap(),
                json!({"message": message, "error": true})
            );
        }
    }

    #[test]
    fn a_principal_without_the_scope_gets_403_naming_it() {
        let principal = Principal {
            client_id: "c".to_owned(),
            account_id: ACCOUNT,
            scopes: vec![Scope::Read],
            jti: "j".to_owned(),
            generation: 0,
        };
        assert!(principal.require(Scope::Read).is_ok());
        let error = principal
            .require(Scope::Delete)
            .expect_err("delete is not granted");
        assert_eq!(
            error.to_string(),
            "Insufficient scope: requires service-api/delete"
        );
        assert_eq!(ApiError::from(error).status(), http::StatusCode::FORBIDDEN);
    }
}
