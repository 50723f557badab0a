//! The verified-token cache: tokens that passed every check, remembered by their exact text
//! until their `exp` (plus the leeway), so that presenting one again skips the signature check
//! but not the time checks. Why this is as safe as verifying every time: the module
//! documentation of [`super`].

use super::window::{expired, premature};
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
