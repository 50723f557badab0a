//! The verified-token cache: tokens that passed every check, remembered by their exact text
//! until their `exp` (plus the leeway), so that presenting one again skips the signature check
//! but not the time checks. Why this is as safe as verifying every time: the module
//! documentation of [`super`].

use super::{expired, premature};
use crate::auth::token::principal::Principal;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// How many verified tokens a verifier remembers at most (about 1 KiB each: the token text of
/// about 600 bytes and its principal), i.e. about 1 MiB at most.
pub const DEFAULT_CACHE_CAPACITY: usize = 1024;

/// Tokens that passed every check of [`TokenVerifier::verify_uncached`], by their exact text,
/// with their principal and `exp`. Bounded: when full, expired entries are dropped, and if none
/// was, all are (the next presentations are verified again, as without a cache).
///
/// Hashed with foldhash (seeded per process) rather than SipHash: a token is about 500 bytes and
/// is hashed on every request, and SipHash took 3,000 instructions of it. SipHash's resistance to
/// chosen collisions is not needed here: only tokens that carry our own valid signature are
/// inserted, so a client cannot fill the table with keys of its choosing.
pub(super) struct VerifiedTokens {
    pub(super) capacity: usize,
    entries: Mutex<HashMap<Box<str>, Verified, foldhash::fast::RandomState>>,
}

/// A verified token's principal, expiry, and the later of its `nbf` and `iat` (seconds since the
/// Unix epoch).
#[derive(Clone)]
pub(super) struct Verified {
    pub(super) principal: Arc<Principal>,
    pub(super) exp: i64,
    pub(super) not_before: i64,
}

impl VerifiedTokens {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: Mutex::new(HashMap::default()),
        }
    }

    /// The remembered principal of `token` if it is valid at `now`: not expired and not before
    /// its `nbf`/`iat` (leeway included both ways), the time checks of a full verification.
    pub(super) fn get(&self, token: &str, now: i64) -> Option<Arc<Principal>> {
        if self.capacity == 0 {
            return None;
        }
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(token)
            .filter(|verified| !expired(verified.exp, now) && !premature(verified.not_before, now))
            .map(|verified| verified.principal.clone())
    }

    pub(super) fn insert(&self, token: &str, verified: Verified, now: i64) {
        if self.capacity == 0 {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= self.capacity {
            entries.retain(|_, v| !expired(v.exp, now));
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(token.into(), verified);
    }

    pub(super) fn len(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}
#[cfg(test)]
mod tests {
    use super::super::TokenVerifier;
    use super::*;
    use crate::auth::scope::Scope;
    use crate::auth::token::fixtures::*;
    use crate::auth::token::issue::TokenIssuer;
    use crate::auth::token::principal::AuthError;
    use serde_json::json;

    fn issuer() -> TokenIssuer {
        TokenIssuer::new(dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, 3600)
    }

    fn verifier() -> TokenVerifier {
        TokenVerifier::from_signing_key(&dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE)
            .expect("the dev key makes a verifier")
    }

    #[test]
    fn a_remembered_token_answers_its_principal_until_the_leeway_after_expiry_and_not_after() {
        let verifier = verifier();
        let issued = issuer()
            .issue("c", ACCOUNT, &[Scope::Read], t0())
            .expect("issues");
        let first = verifier
            .verify(&issued.access_token, t0())
            .expect("verifies");
        assert_eq!(
            verifier.cached_tokens(),
            1,
            "a verified token is remembered"
        );
        let expiry = t0() + chrono::Duration::seconds(3600 + 30);
        assert_eq!(verifier.verify(&issued.access_token, expiry), Ok(first));
        assert_eq!(
            verifier.verify(&issued.access_token, expiry + chrono::Duration::seconds(1)),
            Err(AuthError::InvalidToken),
            "the cache never extends a token's life"
        );
    }

    #[test]
    fn a_remembered_token_is_refused_before_its_iat_like_a_fresh_one() {
        // The cache re-checks every time-dependent condition, `iat`/`nbf` included (a clock
        // that steps back must not make the cache more lenient than a full verification).
        let verifier = verifier();
        let token = sign(&dev_key(), Some(dev_key().kid()), &claims());
        assert!(verifier.verify(&token, t0()).is_ok());
        assert_eq!(verifier.cached_tokens(), 1);
        let early = t0() + chrono::Duration::seconds(claims().iat - t0().timestamp() - 31);
        assert_eq!(
            verifier.verify_uncached(&token, early),
            Err(AuthError::InvalidToken)
        );
        assert_eq!(verifier.verify(&token, early), Err(AuthError::InvalidToken));
    }

    #[test]
    fn tampered_copies_of_a_remembered_token_are_still_refused() {
        let verifier = verifier();
        let token = sign(&dev_key(), Some(dev_key().kid()), &claims());
        assert!(verifier.verify(&token, t0()).is_ok());
        let parts: Vec<&str> = token.split('.').collect();
        let mut forged = claims();
        forged.account_id = Some(Uuid::from_u128(7).to_string());
        let mut signature = URL_SAFE_NO_PAD.decode(parts[2]).expect("base64url");
        signature[5] ^= 0x01;
        let cases = [
            (
                "payload",
                format!("{}.{}.{}", parts[0], segment(&json!(forged)), parts[2]),
            ),
            (
                "signature",
                format!(
                    "{}.{}.{}",
                    parts[0],
                    parts[1],
                    URL_SAFE_NO_PAD.encode(signature)
                ),
            ),
            ("a byte appended", format!("{token}A")),
            ("a prefix", token[..token.len() - 1].to_owned()),
        ];
        for (name, tampered) in cases {
            assert_eq!(
                verifier.verify(&tampered, t0()),
                Err(AuthError::InvalidToken),
                "{name}"
            );
        }
        assert_eq!(verifier.cached_tokens(), 1, "refusals are not remembered");
    }

    #[test]
    fn refused_tokens_and_tokens_without_account_context_are_not_remembered() {
        let verifier = verifier();
        let mut no_account = claims();
        no_account.account_id = None;
        let without_context = sign(&dev_key(), Some(dev_key().kid()), &no_account);
        for _ in 0..2 {
            assert_eq!(
                verifier.verify(&without_context, t0()),
                Err(AuthError::MissingAccountContext)
            );
            let stranger = sign(&other_key(), Some(dev_key().kid()), &claims());
            assert_eq!(
                verifier.verify(&stranger, t0()),
                Err(AuthError::InvalidToken)
            );
        }
        assert_eq!(verifier.cached_tokens(), 0);
    }

    #[test]
    fn the_cache_holds_at_most_its_capacity_and_drops_expired_tokens_first() {
        let bounded = verifier().with_cache_capacity(3);
        let short = TokenIssuer::new(dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, 60);
        let long = TokenIssuer::new(dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, 3600);
        let issue = |issuer: &TokenIssuer| {
            issuer
                .issue("c", ACCOUNT, &[Scope::Read], t0())
                .expect("issues")
                .access_token
        };
        let (expiring, kept) = (issue(&short), issue(&long));
        for token in [&expiring, &kept, &issue(&long)] {
            assert!(bounded.verify(token, t0()).is_ok());
        }
        assert_eq!(bounded.cached_tokens(), 3);
        // Full: the expired token makes room, the others stay.
        let later = t0() + chrono::Duration::seconds(600);
        assert!(bounded.verify(&issue(&long), later).is_ok());
        assert_eq!(bounded.cached_tokens(), 3);
        // Full of live tokens: never more than the capacity.
        for _ in 0..10 {
            assert!(bounded.verify(&issue(&long), later).is_ok());
            assert!(bounded.cached_tokens() <= 3);
        }
        assert!(bounded.verify(&kept, later).is_ok(), "still verifies");
        let off = verifier().with_cache_capacity(0);
        assert!(off.verify(&kept, t0()).is_ok());
        assert_eq!(off.cached_tokens(), 0, "capacity 0 remembers nothing");
    }

    #[test]
    fn verify_uncached_checks_in_full_and_remembers_nothing() {
        let verifier = verifier();
        let token = sign(&dev_key(), Some(dev_key().kid()), &claims());
        assert_eq!(
            verifier.verify_uncached(&token, t0()),
            verifier.verify(&token, t0()).map(Arc::unwrap_or_clone)
        );
        assert_eq!(verifier.cached_tokens(), 1, "only verify remembers");
    }
}
