//! Access tokens: ES256-signed JWTs (RFC 7519, RFC 7518 section 3.4) carrying the account
//! context, and the `Authorization: Bearer` parsing (RFC 6750 section 2.1) of every route but the
//! token endpoint.
//!
//! Claims (BEHAVIOR 1): `iss`, `aud`, `sub` (the client id), `account_id` (the account context),
//! `scope` (space-separated), `iat`, `exp` (seconds since the epoch), `jti` (a random UUID) and
//! `gen` (the client's key generation: [`clients`] refuses a token its client moved past).
//! The header has `alg: ES256`, `typ: JWT` and the signing key's `kid`.
//!
//! Verification follows RFC 8725 (JWT best current practices): the algorithm is pinned to ES256
//! (`alg: none`, HMAC and every other algorithm are refused, so a public key can never be used
//! as an HMAC secret), the header's `kid` must name a configured key, and the signature, `exp`,
//! `iss` and `aud` are checked with a leeway of [`CLOCK_LEEWAY_SECONDS`]; a lifetime
//! (`exp - iat`) over 24 h, any `crit` header (RFC 7515 section 4.1.11) and a high-S signature
//! ([`signature`]) are refused.
//!
//! - [`claims`]: the claims; [`issue`]: signing them; [`verify`]: checking a token against the
//!   configured public keys; [`principal`]: who the caller is; [`bearer`]: the header.

pub mod bearer;
pub mod claims;
pub mod clients;
pub mod issue;
pub mod principal;
pub mod signature;
pub mod verify;

pub use bearer::bearer_token;
pub use claims::Claims;
pub use clients::ClientGenerations;
pub use issue::{IssueError, IssuedToken, TokenIssuer};
pub use principal::{AuthError, Principal};
pub use verify::{TokenVerifier, CLOCK_LEEWAY_SECONDS};

#[cfg(test)]
pub(crate) mod fixtures;
