//! Client secrets: stored only as a slow, salted hash (BEHAVIOR 1).
//!
//! The hash is argon2id (RFC 9106) with the `argon2` crate's defaults (19 MiB memory, 2 passes,
//! 1 lane; the OWASP recommendation) and a random 16-byte salt, kept as a PHC string
//! (`$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`). Verification recomputes the hash with the
//! parameters and salt stored in the PHC string and compares in constant time.

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

/// A PHC string hashed with the same algorithm and parameters as [`hash_secret`] produces, of a
/// random secret nobody knows. [`burn_verification`] verifies against it so that a request for
/// an unknown client costs as long as one for a known client.
const DUMMY_PHC: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$VMu6aAd+R4jziTwoU78Ogw$B7hmPnIVXzPRxoT62qIoza8C2y5GGuB/RAfQcboKuqA";

/// Why a secret could not be hashed.
#[derive(Debug, thiserror::Error)]
#[error("could not hash the client secret: {0}")]
pub struct SecretError(argon2::password_hash::Error);

/// Hashes `secret` with argon2id and a fresh random salt; returns the PHC string to store.
///
/// Costs about 20 ms of CPU in an optimised build. Errors: [`SecretError`] when the system's
/// random source or argon2 fails (not for any particular secret).
pub fn hash_secret(secret: &str) -> Result<String, SecretError> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(secret.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(SecretError)
}

/// Whether `secret` matches the stored PHC string `phc`.
///
/// Uses the algorithm, parameters and salt recorded in `phc`; the final comparison of the hash
/// outputs is constant-time. A `phc` that does not parse as a PHC string is a mismatch (`false`).
pub fn verify_secret(secret: &str, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(hash) => Argon2::default()
            .verify_password(secret.as_bytes(), &hash)
            .is_ok(),
        Err(_) => false,
    }
}

/// Spends the time of one [`verify_secret`] against a fixed dummy hash, and discards the result.
///
/// Call it when the client id is unknown, so the response time does not reveal which client ids
/// exist.
pub fn burn_verification() {
    // The result is meaningless by design; only the work matters.
    let _ = std::hint::black_box(verify_secret("burn-verification", DUMMY_PHC));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hashed_secret_verifies_and_a_different_one_does_not() {
        let phc = hash_secret("dev-secret-change-me").expect("hashing works");
        assert!(verify_secret("dev-secret-change-me", &phc));
        assert!(!verify_secret("dev-secret-change-mE", &phc));
        assert!(!verify_secret("", &phc));
    }

    #[test]
    fn hashes_are_argon2id_phc_strings_with_a_fresh_salt_each_time() {
        let first = hash_secret("same secret").expect("hashing works");
        let second = hash_secret("same secret").expect("hashing works");
        assert!(first.starts_with("$argon2id$v=19$"), "{first}");
        assert_ne!(first, second, "each hash has its own salt");
        assert!(!first.contains("same secret"));
    }

    #[test]
    fn a_stored_hash_that_is_not_a_phc_string_never_matches() {
        for phc in [
            "",
            "plain-text-secret",
            "$argon2id$",
            "$argon2id$v=19$m=19456,t=2,p=1$$",
        ] {
            assert!(!verify_secret("plain-text-secret", phc), "{phc:?}");
        }
    }

    #[test]
    fn the_dummy_hash_uses_the_same_algorithm_and_cost_as_real_hashes() {
        let real = hash_secret("x").expect("hashing works");
        let real = PasswordHash::new(&real).expect("a PHC string");
        let dummy = PasswordHash::new(DUMMY_PHC).expect("the dummy is a PHC string");
        assert_eq!(dummy.algorithm, real.algorithm);
        assert_eq!(dummy.version, real.version);
        assert_eq!(dummy.params, real.params);
        assert_eq!(dummy.hash.map(|h| h.len()), real.hash.map(|h| h.len()));
        assert_eq!(dummy.salt.map(|s| s.len()), real.salt.map(|s| s.len()));
    }
}
