//! Client secrets: stored only as a slow, salted hash (BEHAVIOR 1).
//!
//! The hash is argon2id (RFC 9106) with the `argon2` crate's defaults (19 MiB memory, 2 passes,
//! 1 lane; the OWASP recommendation) and a random 16-byte salt, kept as a PHC string
//! (`$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`). Verification recomputes the hash with the
//! parameters and salt stored in the PHC string and compares in constant time.
//!
//! Test suites only (the `test-util` feature): [`use_lowest_cost_for_tests`] makes the hashes of
//! the process argon2id's lowest cost, as Devise's `stretches = 1` and Django's test password
//! hasher do: every in-process test application hashes its seed's client secrets and verifies
//! one per token request, which was 8 % of the CPU of the whole test run (perf). Production
//! builds have no such function; the hashes keep the cost they were made with.

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{Output, PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
#[cfg(feature = "test-util")]
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::Semaphore;

/// A PHC string hashed with the same algorithm and parameters as [`hash_secret`] produces, of a
/// random secret nobody knows. [`burn_verification`] verifies against it so that a request for
/// an unknown client costs as long as one for a known client.
const DUMMY_PHC: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$VMu6aAd+R4jziTwoU78Ogw$B7hmPnIVXzPRxoT62qIoza8C2y5GGuB/RAfQcboKuqA";

/// Why a secret could not be hashed.
#[derive(Debug, thiserror::Error)]
#[error("could not hash the client secret: {0}")]
pub struct SecretError(argon2::password_hash::Error);

/// Set by [`use_lowest_cost_for_tests`]; read by [`hashing_params`].
#[cfg(feature = "test-util")]
static LOWEST_COST_FOR_TESTS: AtomicBool = AtomicBool::new(false);

/// Makes every later [`hash_secret`] of this process use argon2id's lowest cost (8 KiB, one
/// pass, one lane) and [`burn_verification`] verify against a hash of that cost, so that an
/// unknown client still costs what a known one does. For test suites that build applications in
/// process and are not about the hashing cost (the hashes verify as before: the cost is read
/// from each PHC string). Only with the `test-util` feature; idempotent.
#[cfg(feature = "test-util")]
pub fn use_lowest_cost_for_tests() {
    LOWEST_COST_FOR_TESTS.store(true, Ordering::SeqCst);
}

/// The cost of the hashes [`hash_secret`] makes: the `argon2` crate's defaults (19 MiB, 2
/// passes, 1 lane), unless a test suite asked for the lowest ([`use_lowest_cost_for_tests`]).
fn hashing_params() -> Params {
    #[cfg(feature = "test-util")]
    if LOWEST_COST_FOR_TESTS.load(Ordering::SeqCst) {
        if let Ok(lowest) = Params::new(Params::MIN_M_COST, Params::MIN_T_COST, 1, None) {
            return lowest;
        }
    }
    Params::default()
}

/// The PHC string [`burn_verification`] verifies against: [`DUMMY_PHC`], or in a test suite at
/// the lowest cost a hash of that cost of a random secret.
fn dummy_phc() -> &'static str {
    #[cfg(feature = "test-util")]
    if LOWEST_COST_FOR_TESTS.load(Ordering::SeqCst) {
        static LOWEST: OnceLock<String> = OnceLock::new();
        return LOWEST.get_or_init(|| {
            let nobody_knows = SaltString::generate(&mut OsRng);
            hash_secret(nobody_knows.as_str()).unwrap_or_else(|_| DUMMY_PHC.to_owned())
        });
    }
    DUMMY_PHC
}

/// Hashes `secret` with argon2id and a fresh random salt; returns the PHC string to store.
///
/// Costs about 20 ms of CPU in an optimised build. Errors: [`SecretError`] when the system's
/// random source or argon2 fails (not for any particular secret).
pub fn hash_secret(secret: &str) -> Result<String, SecretError> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::new(Algorithm::Argon2id, Version::V0x13, hashing_params())
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

/// [`verify_secret`] computing in `memory`, which is grown to the hash's block count and kept
/// for the next call (argon2's own verification allocates and frees its ~19 MiB every time, and
/// the allocator keeps freed blocks of that size resident: about 6 x 19 MiB per thread seen on
/// the local server). Same algorithm, parameters, salt and constant-time comparison.
pub fn verify_secret_in(secret: &str, phc: &str, memory: &mut Vec<Block>) -> bool {
    let Ok(hash) = PasswordHash::new(phc) else {
        return false;
    };
    let (Some(salt), Some(expected)) = (hash.salt, hash.hash) else {
        return false;
    };
    let (Ok(algorithm), Ok(params)) =
        (Algorithm::try_from(hash.algorithm), Params::try_from(&hash))
    else {
        return false;
    };
    let version = match hash.version.map(Version::try_from) {
        None => Version::default(),
        Some(Ok(version)) => version,
        Some(Err(_)) => return false,
    };
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let mut out = [0u8; Output::MAX_LENGTH];
    let Some(out) = out.get_mut(..expected.len()) else {
        return false;
    };
    if memory.len() < params.block_count() {
        memory.resize(params.block_count(), Block::default());
    }
    let Some(blocks) = memory.get_mut(..params.block_count()) else {
        return false;
    };
    Argon2::new(algorithm, version, params)
        .hash_password_into_with_memory(secret.as_bytes(), salt, out, blocks)
        .is_ok()
        // `Output`'s equality is constant-time.
        && Output::new(out).is_ok_and(|computed| computed == expected)
}

/// Spends the time of one [`verify_secret`] against a fixed dummy hash, and discards the result.
///
/// Call it when the client id is unknown, so the response time does not reveal which client ids
/// exist.
pub fn burn_verification() {
    // The result is meaningless by design; only the work matters.
    let _ = std::hint::black_box(verify_secret("burn-verification", dummy_phc()));
}

/// Bounds how many argon2 computations run at once (`docs/decisions.md`, "Token endpoint").
///
/// Each [`verify_secret`] holds about 19 MiB while it runs, and tokio's blocking pool grows to
/// 512 threads: unbounded, a burst of token requests on one process (the local server) could hold
/// gigabytes. [`HashingLimit::run`] waits asynchronously for one of `limit` permits (a waiting
/// request holds only its future), then runs the work on the blocking pool. The permit is released
/// by the blocking task itself when the work ends, so a request abandoned by its client (its
/// future dropped) still counts until its computation finishes: at most `limit` computations ever
/// run at once. On Lambda an instance serves one request at a time, so the bound never waits.
///
/// Verification memory is reused: each running verification takes one buffer of argon2 blocks
/// from a pool and puts it back, so there are never more than `limit` buffers (about
/// `limit` x 19 MiB resident, allocated once) whatever the number of requests.
#[derive(Debug)]
pub struct HashingLimit {
    permits: Arc<Semaphore>,
    limit: usize,
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    memory: Arc<Mutex<Vec<Vec<Block>>>>,
}

/// The work given to [`HashingLimit::run`] panicked or was cancelled with its runtime.
#[derive(Debug, thiserror::Error)]
#[error("secret hashing task failed: {0}")]
pub struct HashingTaskFailed(String);

impl HashingLimit {
    /// A limit of `limit` computations at once (at least 1).
    pub fn new(limit: usize) -> Self {
        let limit = limit.max(1);
        Self {
            permits: Arc::new(Semaphore::new(limit)),
            limit,
            running: Arc::new(AtomicUsize::new(0)),
            peak: Arc::new(AtomicUsize::new(0)),
            memory: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The process's limit, shared by every token request: one computation per available CPU
    /// (argon2 is CPU-bound, so more at once would only add memory, not throughput); so
    /// `available_parallelism` x 19 MiB at most.
    pub fn global() -> &'static HashingLimit {
        static GLOBAL: OnceLock<HashingLimit> = OnceLock::new();
        GLOBAL.get_or_init(|| {
            Self::new(std::thread::available_parallelism().map_or(2, std::num::NonZero::get))
        })
    }

    /// The most computations allowed at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The most computations that ever ran at once through this limit (a test and diagnostics
    /// counter; never above [`HashingLimit::limit`]).
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// Runs `work` (an argon2 computation) on tokio's blocking pool once a permit is free.
    /// Must be called inside a tokio runtime.
    ///
    /// Errors: [`HashingTaskFailed`] when the work panicked or the runtime is shutting down.
    pub async fn run<T: Send + 'static>(
        &self, work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, HashingTaskFailed> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| HashingTaskFailed(e.to_string()))?;
        let (running, peak) = (self.running.clone(), self.peak.clone());
        tokio::task::spawn_blocking(move || {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            let out = work();
            running.fetch_sub(1, Ordering::SeqCst);
            drop(permit);
            out
        })
        .await
        .map_err(|e| HashingTaskFailed(e.to_string()))
    }

    /// [`verify_secret`] under this limit, in a reused memory buffer ([`verify_secret_in`]).
    ///
    /// Errors: as [`HashingLimit::run`].
    pub async fn verify(&self, secret: String, phc: String) -> Result<bool, HashingTaskFailed> {
        let pool = self.memory.clone();
        self.run(move || {
            let taken = pool.lock().ok().and_then(|mut buffers| buffers.pop());
            let mut memory = taken.unwrap_or_default();
            let matched = verify_secret_in(&secret, &phc, &mut memory);
            if let Ok(mut buffers) = pool.lock() {
                buffers.push(memory);
            }
            matched
        })
        .await
    }

    /// [`burn_verification`] under this limit, in a reused memory buffer.
    ///
    /// Errors: as [`HashingLimit::run`].
    pub async fn burn(&self) -> Result<(), HashingTaskFailed> {
        let matched = self
            .verify("burn-verification".to_owned(), dummy_phc().to_owned())
            .await?;
        std::hint::black_box(matched);
        Ok(())
    }

    /// How many verification buffers exist (at most [`HashingLimit::limit`]).
    pub fn buffers(&self) -> usize {
        self.memory.lock().map_or(0, |buffers| buffers.len())
    }
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
        // The production cost: no unit test of this crate lowers it.
        assert!(
            first.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{first}"
        );
        assert_ne!(first, second, "each hash has its own salt");
        assert!(!first.contains("same secret"));
    }

    #[test]
    fn verifying_in_reused_memory_agrees_with_the_library() {
        let phc = hash_secret("dev-secret-change-me").expect("hashing works");
        let mut memory = Vec::new();
        for (secret, matches) in [
            ("dev-secret-change-me", true),
            ("dev-secret-change-mE", false),
            ("", false),
            ("dev-secret-change-me", true),
        ] {
            assert_eq!(
                verify_secret_in(secret, &phc, &mut memory),
                matches,
                "{secret:?}"
            );
            assert_eq!(verify_secret(secret, &phc), matches, "{secret:?}");
        }
        assert_eq!(memory.len(), 19 * 1024, "19 MiB of 1 KiB blocks, kept");
        // Other parameters, an argon2i and an argon2d hash: read from the PHC string.
        let small = Params::new(256, 1, 1, Some(16)).expect("valid parameters");
        for algorithm in [Algorithm::Argon2i, Algorithm::Argon2d, Algorithm::Argon2id] {
            let salt = SaltString::generate(&mut OsRng);
            let phc = Argon2::new(algorithm, Version::V0x10, small.clone())
                .hash_password(b"s3cret", &salt)
                .expect("hashes")
                .to_string();
            assert!(verify_secret_in("s3cret", &phc, &mut memory), "{phc}");
            assert!(!verify_secret_in("s3cre7", &phc, &mut memory), "{phc}");
        }
        for phc in [
            "",
            "plain",
            "$argon2id$",
            "$argon2id$v=19$m=19456,t=2,p=1$$",
            DUMMY_PHC,
        ] {
            assert!(!verify_secret_in("plain", phc, &mut memory), "{phc:?}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn verifications_reuse_at_most_limit_buffers() {
        let limit = Arc::new(HashingLimit::new(2));
        let phc = hash_secret("s").expect("hashing works");
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..12 {
            let (limit, phc) = (limit.clone(), phc.clone());
            tasks.spawn(async move {
                let secret = if i % 2 == 0 { "s" } else { "t" };
                (i, limit.verify(secret.to_owned(), phc).await.expect("runs"))
            });
        }
        while let Some(done) = tasks.join_next().await {
            let (i, matched) = done.expect("joins");
            assert_eq!(matched, i % 2 == 0);
        }
        limit.burn().await.expect("runs");
        assert!((1..=2).contains(&limit.buffers()), "{}", limit.buffers());
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_burst_never_runs_more_computations_at_once_than_the_limit() {
        let limit = Arc::new(HashingLimit::new(3));
        let overlap = Arc::new(AtomicUsize::new(0));
        let max_overlap = Arc::new(AtomicUsize::new(0));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..32 {
            let (limit, overlap, max_overlap) =
                (limit.clone(), overlap.clone(), max_overlap.clone());
            tasks.spawn(async move {
                limit
                    .run(move || {
                        // An independent count of the computations inside the work itself.
                        let now = overlap.fetch_add(1, Ordering::SeqCst) + 1;
                        max_overlap.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        overlap.fetch_sub(1, Ordering::SeqCst);
                    })
                    .await
            });
        }
        let mut done = 0;
        while let Some(result) = tasks.join_next().await {
            result.expect("joins").expect("runs");
            done += 1;
        }
        assert_eq!(done, 32);
        assert!(max_overlap.load(Ordering::SeqCst) <= 3, "{max_overlap:?}");
        assert!(limit.peak() <= 3, "{}", limit.peak());
        assert!(limit.peak() >= 1);
    }

    #[tokio::test]
    async fn an_abandoned_request_keeps_its_permit_until_its_computation_ends() {
        let limit = Arc::new(HashingLimit::new(1));
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let first = {
            let limit = limit.clone();
            tokio::spawn(async move {
                limit
                    .run(move || {
                        let _ = started_tx.send(());
                        let _ = release_rx.recv();
                    })
                    .await
            })
        };
        tokio::task::spawn_blocking(move || started_rx.recv())
            .await
            .expect("joins")
            .expect("the first computation started");
        first.abort(); // the client went away; its argon2 computation goes on
        let second = limit.run(|| 2);
        tokio::pin!(second);
        let waited = tokio::time::timeout(std::time::Duration::from_millis(50), &mut second).await;
        assert!(
            waited.is_err(),
            "the permit is still held by the running computation"
        );
        release_tx.send(()).expect("the computation listens");
        assert_eq!(second.await.expect("runs"), 2);
        assert_eq!(limit.peak(), 1);
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
