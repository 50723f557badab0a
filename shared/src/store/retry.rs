//! Retrying writes that meet concurrent writes: one deadline ([`CONFLICT_DEADLINE`]) and one
//! jittered backoff ([`Backoff`]) for every path that can lose a race.
//!
//! Two depths use it, each for what it can redo on its own:
//!
//! - the DynamoDB adapter sends a transaction cancelled only by `TransactionConflict` (or
//!   throttling) again as it is, and a single-item write refused with
//!   `TransactionConflictException`: nothing was written, the request is still right;
//! - a service whose conditional write failed on a version ([`super::StoreError::Conflict`])
//!   reads the item again and applies the request again: what it writes depends on what is
//!   stored.
//!
//! Both stop at the same deadline, counted from the first attempt; after it the store answers
//! [`super::StoreError::Conflict`] and the service answers 409 (BEHAVIOR 12: "concurrent valid
//! writes are each applied or answered 409, never 500"), except dispatch, which fails (500) as
//! BEHAVIOR 6 says. A service's deadline starts before the adapter's, so an adapter that used
//! the whole deadline leaves the service no further round: the two never add up.
//!
//! One deadline per request: the HTTP layer (`finish` in the `api` module) runs each request within
//! [`within_request_deadline`], half a second before its Lambda invocation ends (or
//! [`REQUEST_DEADLINE`] after its start outside Lambda), and every [`Backoff`] of the request
//! ends by it as well as by its own deadline, however deeply it is nested: a retry that starts
//! late in the request gets what is left of the request, not a fresh [`CONFLICT_DEADLINE`]. So a
//! request that keeps meeting other writes answers its 409 (or the dispatch's 500) before the
//! function's timeout.
//!
//! Within one process, writes to one item take turns ([`Turns`]) rather than race: a Lambda
//! instance serves one request at a time, but the local server (and a queue batch) serve many,
//! and optimistic writers of one item cost each other a read and a write per lost race (16
//! PATCHes of one member at once took 4.4 s on the emulator racing, 1.4 s in turns). Writers in
//! different processes still race, and the retries above settle that.

use super::StoreError;
use crate::error::DomainError;
use rand::Rng;
use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

tokio::task_local! {
    /// The instant by which the current request's writes stop retrying.
    static CURRENT_REQUEST_DEADLINE: Instant;
}

/// Runs `work` (one request, or one queue message) with `deadline` as the deadline of every
/// [`Backoff`] inside it: none retries past it, whatever its own deadline says. An inner call
/// of this function can only bring the deadline nearer.
pub async fn within_request_deadline<F: Future>(deadline: Instant, work: F) -> F::Output {
    let deadline = request_deadline().map_or(deadline, |outer| outer.min(deadline));
    CURRENT_REQUEST_DEADLINE.scope(deadline, work).await
}

/// The current request's deadline ([`within_request_deadline`]), if it has one.
pub fn request_deadline() -> Option<Instant> {
    CURRENT_REQUEST_DEADLINE.try_with(|d| *d).ok()
}

/// How long a write that keeps losing races is tried again: BEHAVIOR 6's "deadline of a few
/// seconds", for every write (dispatch, router, member, record, calendar, webhook writes, due
/// work, `Idempotency-Key` claims). API Gateway waits 29 s for an answer; every function's
/// timeout in `template.yaml` is longer than this.
pub const CONFLICT_DEADLINE: Duration = Duration::from_secs(5);

/// A request's (or a queue message's) deadline when the platform gives none (outside Lambda):
/// the shortest function timeout of `template.yaml` (the records and users functions', 10 s)
/// less the time to answer.
pub const REQUEST_DEADLINE: Duration = Duration::from_millis(9_500);

/// The first pause's upper bound; each lost race doubles it up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(10);
/// The largest pause's upper bound: contenders on one item keep trying often enough that the
/// item's writes follow each other closely (a 20-way race on one count item ends in well under
/// a second on the emulator).
const MAX_PAUSE: Duration = Duration::from_millis(160);

/// The retries of one write: how long it has been tried, and the pause before the next try,
/// "full jitter" (a uniform pause up to a bound that doubles with each lost race: AWS
/// Architecture Blog, "Exponential Backoff And Jitter", 2015), so that writers that lost to
/// each other do not meet again.
#[derive(Debug, Clone)]
pub struct Backoff {
    started: Instant,
    deadline: Duration,
    /// When the retries stop: `deadline` after `started`, or the request's deadline when that
    /// comes first.
    ends: Instant,
    lost: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

impl Backoff {
    /// The retries of a write starting now, until [`CONFLICT_DEADLINE`].
    pub fn new() -> Self {
        Self::until(CONFLICT_DEADLINE)
    }

    /// The retries of a write starting now, until `deadline` has passed or the request's
    /// deadline ([`within_request_deadline`]) has come, whichever is first.
    pub fn until(deadline: Duration) -> Self {
        let started = Instant::now();
        let own = started + deadline;
        Self {
            started,
            deadline,
            ends: request_deadline().map_or(own, |request| request.min(own)),
            lost: 0,
        }
    }

    /// After a lost race: waits a jittered pause and answers `true` while the deadline leaves
    /// time for another attempt, `false` (at once) when it has passed. A pause never runs past
    /// the deadline.
    pub async fn again(&mut self) -> bool {
        let now = Instant::now();
        if now >= self.ends {
            return false;
        }
        self.lost += 1;
        let bound = FIRST_PAUSE
            .saturating_mul(1 << (self.lost - 1).min(8))
            .min(MAX_PAUSE);
        let pause = rand::thread_rng().gen_range(Duration::from_millis(1)..=bound);
        tokio::time::sleep(pause.min(self.ends - now)).await;
        true
    }

    /// Whether the deadline has passed (no attempt is left).
    pub fn expired(&self) -> bool {
        Instant::now() >= self.ends
    }

    /// Races lost so far (each [`Self::again`] that answered `true`).
    pub fn lost(&self) -> u32 {
        self.lost
    }

    /// The deadline.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Time since the first attempt.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// One async lock per key (an item's id, or the count item of an account, named by the caller):
/// the writes of one process to one item take turns. Holds only the keys being written now.
#[derive(Debug, Default)]
pub struct Turns {
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A turn taken with [`Turns::take`]: the key's writes of this process wait until it is dropped.
#[derive(Debug)]
pub struct Turn<'a> {
    turns: &'a Turns,
    key: String,
    lock: Option<Arc<tokio::sync::Mutex<()>>>,
    held: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Turns {
    /// Waits for the turn of `key` (first come, first served: tokio's mutex is fair).
    pub async fn take(&self, key: impl Into<String>) -> Turn<'_> {
        let key = key.into();
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry(key.clone()).or_default().clone()
        };
        let held = lock.clone().lock_owned().await;
        Turn {
            turns: self,
            key,
            lock: Some(lock),
            held: Some(held),
        }
    }

    /// Keys whose lock is held or waited for now.
    pub fn len(&self) -> usize {
        self.locks.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no key is held or waited for.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        drop(self.held.take());
        let Some(lock) = self.lock.take() else { return };
        let mut locks = self.turns.locks.lock().unwrap_or_else(|e| e.into_inner());
        // Two references, the map's and this turn's: nobody else holds or waits for the key
        // (a waiter clones it under the map's lock, which is held here).
        if Arc::strong_count(&lock) == 2 {
            locks.remove(&self.key);
        }
    }
}

/// The 409 message of a write that kept losing races until [`CONFLICT_DEADLINE`] (BEHAVIOR 12):
/// the request changed nothing and may be sent again.
pub const KEPT_CHANGING: &str = "The item kept changing while the request applied; retry it";

/// Why a round of a conditional write ([`write_rounds`]) stopped without its answer: a store
/// answer the caller's policy reads ([`StoreError::Conflict`], [`StoreError::LeaseLost`], ...),
/// or an error of the round itself. `?` turns either into it.
#[derive(Debug)]
pub enum RoundError {
    /// The store's answer.
    Store(StoreError),
    /// Anything else that went wrong.
    Domain(DomainError),
}

impl From<StoreError> for RoundError {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

impl From<DomainError> for RoundError {
    fn from(error: DomainError) -> Self {
        Self::Domain(error)
    }
}

impl RoundError {
    /// The answer of a request whose rounds ended with this (BEHAVIOR 12): a race still lost at
    /// the deadline is 409 [`KEPT_CHANGING`] (nothing was written), any other store failure
    /// its own answer, the round's own error as it is.
    pub fn answer(self) -> DomainError {
        self.answer_with(KEPT_CHANGING)
    }

    /// [`Self::answer`] with `kept_changing` as the 409's message (one that names the item).
    pub fn answer_with(self, kept_changing: &str) -> DomainError {
        match self {
            Self::Store(StoreError::Conflict) => DomainError::conflict(kept_changing),
            Self::Store(error) => error.into(),
            Self::Domain(error) => error,
        }
    }
}

/// One round of [`write_rounds`]: a future that may borrow the round's state for `'s`, and is
/// `Send` (declared, so that a caller's future stays `Send` whatever the round borrows).
pub type Round<'s, T> = Pin<Box<dyn Future<Output = Result<T, RoundError>> + Send + 's>>;

/// What the rounds of [`write_rounds`] keep from one round to the next (`.0`: the item read
/// last, a body parsed once), borrowed by each round in turn. Its lifetime `'env` is that of what
/// the rounds borrow around them (`self`, the request): `&'s mut Kept<'env, S>` tells the compiler
/// that `'env` outlives every round `'s` (as `std::thread::scope`'s `Scope` does).
pub struct Kept<'env, S>(pub S, pub PhantomData<&'env mut &'env ()>);

/// Read, decide, conditional write, back off: the one retry loop of the writes that can lose a
/// race. Runs `round(kept, n)` for n = 0, 1, ... until it answers anything but a lost race
/// ([`StoreError::Conflict`]), with `backoff`'s jittered pause between rounds; a race still lost
/// when `backoff`'s deadline (its own, or the request's: [`within_request_deadline`]) has come is
/// answered as it is, `Err(RoundError::Store(StoreError::Conflict))`, for the caller's policy
/// ([`RoundError::answer`]'s 409, the dispatch's 500, due work staying due).
///
/// Each round reads afresh what its write is conditional on (round 0 may use what was read
/// before: `state`), decides, and makes one conditional write; `state` is what a round leaves
/// the next one ([`Kept`]). `backoff` tells afterwards how many races were lost and how long it
/// took.
pub async fn write_rounds<'env, S, T>(
    backoff: &mut Backoff, state: S,
    mut round: impl for<'s> FnMut(&'s mut Kept<'env, S>, u32) -> Round<'s, T>,
) -> Result<T, RoundError> {
    let mut kept = Kept(state, PhantomData);
    let mut n = 0;
    loop {
        match round(&mut kept, n).await {
            Err(RoundError::Store(StoreError::Conflict)) if backoff.again().await => n += 1,
            answer => return answer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn pauses_until_the_deadline_then_stops_at_once() {
        let mut backoff = Backoff::until(Duration::from_millis(120));
        let mut rounds = 0;
        while backoff.again().await {
            rounds += 1;
            assert!(rounds < 1000);
        }
        assert!(backoff.elapsed() >= Duration::from_millis(120));
        // The last pause is cut at the deadline: none runs past it.
        assert!(
            backoff.elapsed() <= Duration::from_millis(120) + MAX_PAUSE,
            "{backoff:?}"
        );
        assert_eq!(backoff.lost(), rounds);
        assert!(rounds >= 2, "{rounds}");
        let before = Instant::now();
        assert!(!backoff.again().await);
        assert_eq!(before.elapsed(), Duration::ZERO);
    }

    /// A retry loop inside another (an adapter's inside a service's round) that starts late in
    /// the request ends with the request, not a whole deadline later.
    #[tokio::test(start_paused = true)]
    async fn nested_retries_share_the_requests_deadline() {
        let started = Instant::now();
        // A request whose deadline is the conflict deadline: the nested loop gets what is left.
        let request = started + CONFLICT_DEADLINE;
        let ended = within_request_deadline(request, async {
            let mut service = Backoff::new();
            tokio::time::sleep(Duration::from_millis(4_990)).await;
            assert!(service.again().await);
            let mut adapter = Backoff::until(CONFLICT_DEADLINE);
            while adapter.again().await {}
            assert!(adapter.expired());
            assert!(!service.again().await);
            Instant::now()
        })
        .await;
        assert_eq!(
            ended, request,
            "the adapter stopped at the request's deadline"
        );
        // Without a request deadline, the inner loop has its own whole deadline.
        let mut service = Backoff::new();
        tokio::time::sleep(Duration::from_millis(4_990)).await;
        assert!(service.again().await);
        let inner_start = Instant::now();
        let mut adapter = Backoff::until(CONFLICT_DEADLINE);
        while adapter.again().await {}
        assert_eq!(Instant::now() - inner_start, CONFLICT_DEADLINE);
        // A nested request deadline only comes nearer.
        let outer = Instant::now() + Duration::from_secs(1);
        within_request_deadline(outer, async {
            within_request_deadline(outer + Duration::from_secs(10), async {
                assert_eq!(request_deadline(), Some(outer));
            })
            .await;
        })
        .await;
        assert_eq!(request_deadline(), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn writes_to_one_key_take_turns_and_the_map_keeps_only_keys_in_use() {
        let turns = Arc::new(Turns::default());
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let (turns, inside, most) = (turns.clone(), inside.clone(), most.clone());
                tokio::spawn(async move {
                    let _turn = turns.take("member:1").await;
                    let now = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                })
            })
            .collect();
        // Another key is not held up by them.
        let other = turns.take("member:2").await;
        drop(other);
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(most.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(turns.is_empty(), "{turns:?}");
    }

    #[tokio::test]
    async fn the_pause_bound_doubles_up_to_its_cap() {
        let mut backoff = Backoff::until(Duration::from_secs(60));
        for _ in 0..12 {
            let before = Instant::now();
            assert!(backoff.again().await);
            let bound = FIRST_PAUSE * (1 << (backoff.lost() - 1).min(8));
            let slept = before.elapsed();
            // The sleep's own overshoot aside, never above the bound of this round.
            assert!(
                slept <= bound.min(MAX_PAUSE) + Duration::from_millis(30),
                "{slept:?}"
            );
        }
    }
}
