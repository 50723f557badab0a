//! The pace of one instance's CRM requests per account (BEHAVIOR 7 "Rate limits"): at most 10
//! requests per second per account, and a request whose turn is more than 3 s away is not sent
//! (it goes to the background retry at once).
//!
//! - The rate is a GCRA limiter per account (the `governor` crate): one request every 100 ms,
//!   no burst, so no second of wall time ever holds more than 10 of an account's requests.
//!   HubSpot's burst limits (100 to 190 requests per 10 s) are shared by every app of the
//!   customer's portal; 10 per second keeps this service at most at the 100 a free portal has.
//! - A request's turn is the limiter's wait plus 100 ms per request of the account already
//!   waiting. When that is more than [`MAX_TURN`] away the request is deferred at once; a request
//!   that waited and still has no turn when [`MAX_TURN`] has passed is deferred then.
//! - HubSpot's `X-HubSpot-RateLimit-*` headers hold the account back when they say the portal's
//!   allowance is spent ([`Pace::note`], read by the HubSpot adapter): `X-HubSpot-RateLimit-Remaining: 0` until the
//!   window (`X-HubSpot-RateLimit-Interval-Milliseconds`, 10 s) has passed, and
//!   `X-HubSpot-RateLimit-Secondly-Remaining: 0` for one second. A hold beyond [`MAX_TURN`]
//!   defers the account's requests.

use super::adapter::PaceSignal;
use crate::model::account::CrmProvider;
use crate::types::ids::AccountId;
use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest a request waits for its turn before it is deferred (BEHAVIOR 7).
pub const MAX_TURN: Duration = Duration::from_secs(3);

/// Requests per second per account and instance (BEHAVIOR 7).
pub const REQUESTS_PER_SECOND: u32 = 10;

/// Whose requests are paced together: one account's to one CRM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PaceKey {
    /// The account.
    pub account: AccountId,
    /// The CRM.
    pub provider: CrmProvider,
}

/// Why a request is not sent now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deferral {
    /// Its turn is more than [`MAX_TURN`] away (or past the attempt's deadline): this far.
    Turn(Duration),
    /// The org's API usage is at or above the connection's share (Salesforce): `used` of
    /// `limit`, held for `wait` more.
    ApiUsage {
        /// Requests used.
        used: u64,
        /// The org's daily allowance.
        limit: u64,
        /// How long the hold lasts from now.
        wait: Duration,
    },
}

/// A hold on an account's requests because of its API usage.
#[derive(Debug, Clone, Copy)]
struct UsageHold {
    used: u64,
    limit: u64,
    until: Instant,
}

/// The pace of one instance: the per-account limiter, who waits, and HubSpot's holds.
#[derive(derive_more::Debug)]
pub struct Pace {
    #[debug(skip)]
    limiter: DefaultKeyedRateLimiter<PaceKey>,
    #[debug(skip)]
    clock: DefaultClock,
    /// The period between two requests of one account.
    interval: Duration,
    waiting: Mutex<HashMap<PaceKey, usize>>,
    holds: Mutex<HashMap<PaceKey, Instant>>,
    usage: Mutex<HashMap<PaceKey, UsageHold>>,
}

impl Default for Pace {
    fn default() -> Self {
        Self::new(REQUESTS_PER_SECOND)
    }
}

/// A request counted as waiting for its account's turn until dropped.
struct Waiting<'a> {
    pace: &'a Pace,
    account: PaceKey,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut waiting = self.pace.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = waiting.get_mut(&self.account) {
            *n -= 1;
            if *n == 0 {
                waiting.remove(&self.account);
            }
        }
    }
}

impl Pace {
    /// A pace of `per_second` requests per second per account (no burst).
    pub fn new(per_second: u32) -> Self {
        let per_second = NonZeroU32::new(per_second).unwrap_or(NonZeroU32::MIN);
        let interval = Duration::from_secs(1) / per_second.get();
        let quota = Quota::per_second(per_second).allow_burst(NonZeroU32::MIN);
        Self {
            limiter: DefaultKeyedRateLimiter::hashmap(quota),
            clock: DefaultClock::default(),
            interval,
            waiting: Mutex::new(HashMap::new()),
            holds: Mutex::new(HashMap::new()),
            usage: Mutex::new(HashMap::new()),
        }
    }

    fn hold(&self, account: PaceKey) -> Option<Instant> {
        let mut holds = self.holds.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        holds.retain(|_, until| *until > now);
        holds.get(&account).copied()
    }

    fn enter(&self, account: PaceKey) -> (Waiting<'_>, usize) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        let n = waiting.entry(account).or_default();
        let ahead = *n;
        *n += 1;
        (
            Waiting {
                pace: self,
                account,
            },
            ahead,
        )
    }

    fn ahead_of_me(&self, account: PaceKey) -> usize {
        let waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting
            .get(&account)
            .copied()
            .unwrap_or(1)
            .saturating_sub(1)
    }

    /// Waits for `account`'s next turn (at most [`MAX_TURN`]).
    ///
    /// Errors: how far the turn is, when that is more than [`MAX_TURN`] away (nothing waited
    /// beyond that): the request is deferred.
    pub async fn turn(&self, account: PaceKey, until: Instant) -> Result<(), Deferral> {
        let started = Instant::now();
        let deadline = (started + MAX_TURN).min(until);
        {
            let mut usage = self.usage.lock().unwrap_or_else(|e| e.into_inner());
            usage.retain(|_, hold| hold.until > started);
            if let Some(hold) = usage.get(&account) {
                return Err(Deferral::ApiUsage {
                    used: hold.used,
                    limit: hold.limit,
                    wait: hold.until - started,
                });
            }
        }
        if let Some(until) = self.hold(account) {
            if until > deadline {
                return Err(Deferral::Turn(until - started));
            }
            tokio::time::sleep_until(until.into()).await;
        }
        if self.limiter.len() > 10_000 {
            self.limiter.retain_recent();
        }
        let (_waiting, ahead) = self.enter(account);
        let mut ahead = ahead;
        loop {
            let wait = match self.limiter.check_key(&account) {
                Ok(()) => return Ok(()),
                Err(not_until) => not_until.wait_time_from(self.clock.now()),
            };
            let turn = wait + self.interval * u32::try_from(ahead).unwrap_or(u32::MAX);
            let now = Instant::now();
            if now + turn > deadline {
                // How far the turn is from when it was asked for (more than MAX_TURN).
                return Err(Deferral::Turn(
                    (now + turn).saturating_duration_since(started),
                ));
            }
            tokio::time::sleep(wait).await;
            ahead = self.ahead_of_me(account);
        }
    }

    /// Applies what an answer's headers said (`signals`) to `account`'s pace: a hold keeps its
    /// requests back for its time.
    pub fn note(&self, account: PaceKey, signals: &[PaceSignal]) {
        let now = Instant::now();
        for signal in signals {
            match *signal {
                PaceSignal::Hold(wait) => {
                    let until = now + wait.min(Duration::from_secs(60));
                    let mut holds = self.holds.lock().unwrap_or_else(|e| e.into_inner());
                    let held = holds.entry(account).or_insert(until);
                    *held = (*held).max(until);
                }
                PaceSignal::ApiUsage { used, limit, hold } => {
                    let mut usage = self.usage.lock().unwrap_or_else(|e| e.into_inner());
                    match hold.and_then(|wait| now.checked_add(wait)) {
                        Some(until) => {
                            usage.insert(account, UsageHold { used, limit, until });
                        }
                        None => {
                            usage.remove(&account);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(n: u128) -> PaceKey {
        PaceKey {
            account: uuid::Uuid::from_u128(n).into(),
            provider: CrmProvider::HubSpot,
        }
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    #[tokio::test]
    async fn an_account_gets_one_turn_per_interval_and_others_are_not_held_up() {
        let pace = Pace::default();
        let started = Instant::now();
        for _ in 0..5 {
            pace.turn(account(1), later()).await.unwrap();
        }
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(390), "5 turns in {took:?}");
        let other = Instant::now();
        pace.turn(account(2), later()).await.unwrap();
        assert!(
            other.elapsed() < Duration::from_millis(90),
            "not held by account 1"
        );
    }

    #[tokio::test]
    async fn a_turn_more_than_3_seconds_away_is_refused_at_once() {
        let pace = std::sync::Arc::new(Pace::default());
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..45 {
            let pace = pace.clone();
            set.spawn(async move {
                let asked = Instant::now();
                (pace.turn(account(1), later()).await, asked.elapsed())
            });
        }
        let (mut granted, mut deferred) = (0, 0);
        while let Some(done) = set.join_next().await {
            let (turn, waited) = done.unwrap();
            match turn {
                Ok(()) => granted += 1,
                Err(Deferral::Turn(far)) => {
                    deferred += 1;
                    assert!(far > MAX_TURN, "{far:?}");
                    assert!(waited <= MAX_TURN + Duration::from_secs(1), "{waited:?}");
                }
                Err(other) => panic!("{other:?}"),
            }
        }
        // 3 s of turns 100 ms apart: about 30 (fewer on a loaded machine), never more.
        assert!((20..=32).contains(&granted), "{granted} granted");
        assert_eq!(granted + deferred, 45);
    }

    #[tokio::test]
    async fn a_hold_keeps_the_account_back() {
        let pace = Pace::default();
        pace.note(account(1), &[PaceSignal::Hold(Duration::from_secs(10))]);
        let Err(Deferral::Turn(far)) = pace.turn(account(1), later()).await else {
            panic!("deferred")
        };
        assert!(far > Duration::from_secs(9), "{far:?}");
        assert!(pace.turn(account(2), later()).await.is_ok());
        pace.note(account(3), &[PaceSignal::Hold(Duration::from_secs(1))]);
        let started = Instant::now();
        pace.turn(account(3), later()).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(900));
    }
}
