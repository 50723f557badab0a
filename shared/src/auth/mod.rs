//! OAuth 2.0 client-credentials auth (RFC 6749 section 4.4) with JWT bearer tokens (RFC 7519,
//! RFC 6750), as decided in BEHAVIOR 1.
//!
//! - [`scope`]: the four scope names.
//! - [`attempts`]: the limit on failed client authentications per client and source address.
//! - [`secret`]: client secrets, stored only as argon2id PHC strings.
//! - [`keys`]: the ES256 signing key (P-256), its RFC 7638 `kid` and the public JWKS.
//! - [`token`]: issuing and verifying access tokens, the [`Principal`] they carry, and the
//!   `Authorization: Bearer` header parsing every route but the token endpoint uses.
//! - [`oauth`]: the token endpoint (`POST /oauth2/token`) as a framework-independent function.

pub mod attempts;
pub mod keys;
pub mod oauth;
pub mod scope;
pub mod secret;
pub mod token;

pub use keys::{
    development_key_allowed, jwks_lists_development_key, KeyError, SigningKey,
    ALLOW_DEVELOPMENT_SIGNING_KEY, DEFAULT_AUDIENCE, DEFAULT_ISSUER, DEV_SIGNING_KEY_PEM,
};
pub use oauth::{token_endpoint, OAuthError, OAuthErrorBody, TokenRequestForm, TokenResponse};
pub use scope::{Scope, UnknownScope};
pub use secret::{burn_verification, hash_secret, verify_secret, HashingLimit, SecretError};
pub use token::{
    bearer_token, AuthError, Claims, IssueError, IssuedToken, Principal, TokenIssuer,
    TokenVerifier, CLOCK_LEEWAY_SECONDS,
};
