//! The pace of the service's CRM requests per account (BEHAVIOR 7 "Rate limits"): the service
//! as a whole, every Lambda instance and local server sharing one store, sends at most 10
//! requests per second per account and CRM (or a HubSpot connection's
//! `max_requests_per_second`), and a request whose turn is more than 3 s away (or past its
//! attempt's deadline) is not sent: it goes to the background retry at once.
//!
//! - The rate is a GCRA limiter kept in the store ([`crate::store::PaceStore`], one small item
//!   per account and CRM, [`crate::model::pace`]): each request reserves its turn with one
//!   conditional update and waits for it here. No burst: turns are one interval apart (100 ms at
//!   10 per second), so any T seconds hold at most 10·T + 1 of an account's requests.
//! - The CRM's own signals ([`super::reading::PaceSignal`], read from every answer) hold the
//!   account in the store too: HubSpot's spent window moves the TAT past it; Salesforce's API
//!   usage at the connection's share stores a usage hold, during which syncs wait
//!   (`Salesforce API usage at N/M: request deferred`) and which a later answer below the share
//!   ends.
//! - The instance keeps only hints: the TAT it saw last per key (which update form to try
//!   first) and the keys it saw held.

use super::reading::PaceSignal;
use crate::model::pace::{PaceKey, PaceRule, Turn, TurnAsk, UsageHold};
use crate::store::PaceStore;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The longest a request waits for its turn before it is deferred (BEHAVIOR 7).
pub const MAX_TURN: Duration = Duration::from_secs(3);

/// Requests at once after an idle time (1: none ahead of its interval).
pub const BURST: u32 = 1;

/// The longest hold a CRM's rate-limit header may put on an account.
const MAX_HOLD: Duration = Duration::from_secs(60);

/// How long a request waits when the store could not give it a turn (it is deferred).
const STORE_UNAVAILABLE_WAIT: Duration = Duration::from_secs(1);

/// Most hints kept (past that, they are dropped: a hint only saves a round trip).
const MAX_HINTS: usize = 10_000;

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

/// Microseconds since the Unix epoch, now.
fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

fn duration_us(us: i64) -> Duration {
    Duration::from_micros(u64::try_from(us).unwrap_or(0))
}

/// The pace, over the store that keeps it.
#[derive(derive_more::Debug)]
pub struct Pace {
    #[debug(skip)]
    store: Arc<dyn PaceStore>,
    /// The TAT each key's last turn showed.
    seen: Mutex<HashMap<PaceKey, i64>>,
    /// Keys this instance saw held for their API usage.
    held: Mutex<HashSet<PaceKey>>,
}

impl Pace {
    /// The pace kept in `store`.
    pub fn new(store: Arc<dyn PaceStore>) -> Self {
        Self {
            store,
            seen: Mutex::new(HashMap::new()),
            held: Mutex::new(HashSet::new()),
        }
    }

    fn hint(&self, key: &PaceKey) -> Option<i64> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.get(key).copied()
    }

    fn saw(&self, key: PaceKey, tat_us: i64) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() >= MAX_HINTS && !seen.contains_key(&key) {
            seen.clear();
        }
        seen.insert(key, tat_us);
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashSet<PaceKey>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for `key`'s next turn under `rule`, at most [`MAX_TURN`] and not past `until`.
    ///
    /// Errors: the turn is further (nothing reserved, nothing waited), the account is held for
    /// its API usage, or the store could not give a turn (logged): the request is deferred.
    pub async fn turn(&self, key: PaceKey, rule: PaceRule, until: Instant) -> Result<(), Deferral> {
        let asked = Instant::now();
        let now = now_us();
        let horizon = MAX_TURN.min(until.saturating_duration_since(asked));
        let ask = TurnAsk {
            now_us: now,
            rule,
            horizon_us: micros(horizon),
            hint_us: self.hint(&key),
        };
        match self.store.take_turn(&key, &ask).await {
            Ok(Turn::Granted { at_us, tat_us }) => {
                self.saw(key, tat_us);
                let wait = duration_us(at_us.saturating_sub(now));
                if !wait.is_zero() {
                    tokio::time::sleep_until((asked + wait).into()).await;
                }
                Ok(())
            }
            Ok(Turn::TooFar { at_us, tat_us }) => {
                self.saw(key, tat_us);
                Err(Deferral::Turn(duration_us(at_us.saturating_sub(now))))
            }
            Ok(Turn::UsageHeld(hold)) => {
                self.held().insert(key);
                Err(Deferral::ApiUsage {
                    used: hold.used,
                    limit: hold.limit,
                    wait: duration_us(hold.until_us.saturating_sub(now)),
                })
            }
            Err(error) => {
                tracing::error!(
                    account_id = %key.account,
                    error = %crate::error::ErrorChain(&error),
                    "CRM pace not available; the request is deferred"
                );
                Err(Deferral::Turn(STORE_UNAVAILABLE_WAIT))
            }
        }
    }

    /// Applies what an answer's headers said (`signals`) to `key`'s stored pace under `rule`:
    /// a hold keeps its requests back for its time (at most 60 s); an API usage at the share
    /// holds its syncs, one below it ends a hold this instance saw. A store failure is logged
    /// (the pace stays as it was).
    pub async fn note(&self, key: PaceKey, rule: PaceRule, signals: &[PaceSignal]) {
        let now = now_us();
        for signal in signals {
            let stored = match *signal {
                PaceSignal::Hold(wait) => {
                    let until = now.saturating_add(micros(wait.min(MAX_HOLD)));
                    self.store
                        .hold_pace(&key, until.saturating_add(rule.tolerance_us()))
                        .await
                }
                PaceSignal::ApiUsage {
                    used,
                    limit,
                    hold: Some(wait),
                } => {
                    self.held().insert(key);
                    let hold = UsageHold {
                        used,
                        limit,
                        until_us: now.saturating_add(micros(wait)),
                    };
                    self.store.set_usage_hold(&key, Some(&hold)).await
                }
                PaceSignal::ApiUsage { hold: None, .. } => {
                    if !self.held().remove(&key) {
                        continue;
                    }
                    self.store.set_usage_hold(&key, None).await
                }
            };
            if let Err(error) = stored {
                tracing::error!(
                    account_id = %key.account,
                    error = %crate::error::ErrorChain(&error),
                    "CRM pace signal not stored"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::account::CrmProvider;
    use crate::store::memory::MemoryStore;

    fn account(n: u128) -> PaceKey {
        PaceKey {
            account: uuid::Uuid::from_u128(n).into(),
            provider: CrmProvider::HubSpot,
        }
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    fn pace() -> Pace {
        Pace::new(Arc::new(MemoryStore::new()))
    }

    const TEN: PaceRule = PaceRule {
        interval_us: 100_000,
        burst: 1,
    };

    #[tokio::test]
    async fn an_account_gets_one_turn_per_interval_and_others_are_not_held_up() {
        let pace = pace();
        let started = Instant::now();
        for _ in 0..5 {
            pace.turn(account(1), TEN, later()).await.unwrap();
        }
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(390), "5 turns in {took:?}");
        let other = Instant::now();
        pace.turn(account(2), TEN, later()).await.unwrap();
        assert!(
            other.elapsed() < Duration::from_millis(90),
            "not held by account 1"
        );
    }

    #[tokio::test]
    async fn a_turn_more_than_3_seconds_away_is_refused_at_once() {
        let pace = Arc::new(pace());
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..45 {
            let pace = pace.clone();
            set.spawn(async move {
                let asked = Instant::now();
                (pace.turn(account(1), TEN, later()).await, asked.elapsed())
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
                    assert!(
                        waited < Duration::from_secs(1),
                        "refused at once: {waited:?}"
                    );
                }
                Err(other) => panic!("{other:?}"),
            }
        }
        // Turns 100 ms apart within 3 s: 31 (the first now, the last 3 s from it), never more.
        assert!((25..=32).contains(&granted), "{granted} granted");
        assert_eq!(granted + deferred, 45);
    }

    #[tokio::test]
    async fn a_turn_past_the_deadline_is_refused() {
        let pace = pace();
        pace.turn(account(1), TEN, later()).await.unwrap();
        let soon = Instant::now() + Duration::from_millis(20);
        assert!(matches!(
            pace.turn(account(1), TEN, soon).await,
            Err(Deferral::Turn(_))
        ));
    }

    #[tokio::test]
    async fn a_hold_keeps_the_account_back_and_a_usage_hold_defers_until_released() {
        let pace = pace();
        pace.note(
            account(1),
            TEN,
            &[PaceSignal::Hold(Duration::from_secs(10))],
        )
        .await;
        let Err(Deferral::Turn(far)) = pace.turn(account(1), TEN, later()).await else {
            panic!("deferred")
        };
        assert!(far > Duration::from_secs(9), "{far:?}");
        assert!(pace.turn(account(2), TEN, later()).await.is_ok());
        pace.note(account(3), TEN, &[PaceSignal::Hold(Duration::from_secs(1))])
            .await;
        let started = Instant::now();
        pace.turn(account(3), TEN, later()).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(900));
        let usage = |hold| PaceSignal::ApiUsage {
            used: 95,
            limit: 100,
            hold,
        };
        pace.note(account(4), TEN, &[usage(Some(Duration::from_secs(3600)))])
            .await;
        assert!(matches!(
            pace.turn(account(4), TEN, later()).await,
            Err(Deferral::ApiUsage {
                used: 95,
                limit: 100,
                ..
            })
        ));
        pace.note(account(4), TEN, &[usage(None)]).await;
        assert!(pace.turn(account(4), TEN, later()).await.is_ok());
    }
}
