//! The claims of an access token (RFC 7519; BEHAVIOR 1).

use serde::{Deserialize, Serialize};

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
    /// [`AuthError::MissingAccountContext`](super::principal::AuthError::MissingAccountContext).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// Granted scope names, space-separated (RFC 6749 section 3.3).
    pub scope: String,
    /// Issued at, seconds since the Unix epoch.
    pub iat: i64,
    /// Expiry, seconds since the Unix epoch.
    pub exp: i64,
    /// Not before, seconds since the Unix epoch (RFC 7519 section 4.1.5). Never issued; a token
    /// that carries it is refused before that instant (beyond the clock leeway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    /// Token id: a random (v4) UUID, unique per token.
    pub jti: String,
    /// The client's key generation when the token was issued ([`crate::model::ApiClient`]'s
    /// `generation`; absent: 0). A token of an older generation than the client's is refused
    /// (BEHAVIOR 1: re-keyed or disabled clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#gen: Option<u64>,
}
