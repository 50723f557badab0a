//! ECDSA signature malleability (`docs/decisions.md`, "Token endpoint"): for a P-256 signature `(r,
//! s)`, `(r, n - s)` verifies too, so one token would have two valid strings (and two cache keys,
//! two `jti` look-alikes in logs). Like Bitcoin's BIP 62 and Ethereum's EIP-2, only the low-S form
//! is valid here: the issuer writes it, the verifier refuses the other.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use p256::ecdsa::Signature;

/// Whether a compact JWS's signature segment (base64url of the 64-byte `r || s`) is a P-256
/// signature with a high `s` (above half the group order). A segment that is not a signature at
/// all answers `false`: the signature check refuses it.
pub fn is_high_s(signature_segment: &str) -> bool {
    URL_SAFE_NO_PAD
        .decode(signature_segment)
        .ok()
        .and_then(|bytes| Signature::from_slice(&bytes).ok())
        .is_some_and(|signature| signature.normalize_s().is_some())
}

/// `token` (a compact ES256 JWS) with its signature in the low-S form: unchanged when it is
/// already, `(r, n - s)` otherwise. Both verify; only the low-S one is accepted.
pub fn low_s(token: String) -> String {
    let Some((input, segment)) = token.rsplit_once('.') else {
        return token;
    };
    let normalized = URL_SAFE_NO_PAD
        .decode(segment)
        .ok()
        .and_then(|bytes| Signature::from_slice(&bytes).ok())
        .and_then(|signature| signature.normalize_s());
    match normalized {
        Some(signature) => format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes())),
        None => token,
    }
}
