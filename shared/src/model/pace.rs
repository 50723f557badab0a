//! The stored pace of one account's requests to one CRM (BEHAVIOR 7 "Rate limits": the service
//! as a whole, every instance sharing one store, sends at most so many requests per second per
//! account): a GCRA limiter (the generic cell rate algorithm of ATM networks, as the `governor`
//! crate and most API gateways implement it) kept as one small item per account and CRM, its
//! theoretical arrival time (TAT) moved by one conditional update per request, and the hold the
//! org's API usage puts on the account (Salesforce's `Sforce-Limit-Info`).
//!
//! Times are microseconds since the Unix epoch (wall clock: instances compare them).

use super::account::CrmProvider;
use crate::types::ids::AccountId;
use serde::{Deserialize, Serialize};

/// Whose requests are paced together: one account's to one CRM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PaceKey {
    /// The account.
    pub account: AccountId,
    /// The CRM.
    pub provider: CrmProvider,
}

/// The rate: one request per `interval_us`, `burst` of them at once after an idle time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaceRule {
    /// Microseconds between two requests (1,000,000 / requests per second).
    pub interval_us: i64,
    /// Requests allowed at once (1: none ahead of its interval).
    pub burst: u32,
}

impl PaceRule {
    /// `per_second` requests per second (at least 1), `burst` at once (at least 1).
    pub fn per_second(per_second: u32, burst: u32) -> Self {
        Self {
            interval_us: 1_000_000 / i64::from(per_second.max(1)),
            burst: burst.max(1),
        }
    }

    /// How far ahead of the TAT a request still conforms: `(burst - 1) * interval`.
    pub fn tolerance_us(&self) -> i64 {
        i64::from(self.burst - 1).saturating_mul(self.interval_us)
    }
}

/// One request asking for its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnAsk {
    /// Now.
    pub now_us: i64,
    /// The rate.
    pub rule: PaceRule,
    /// How far from now a turn may be reserved (beyond, the request is not sent).
    pub horizon_us: i64,
    /// The TAT this instance saw last for the key (a hint the DynamoDB adapter picks its
    /// update by; any value, or none, gives the same result).
    pub hint_us: Option<i64>,
}

/// A hold on an account's requests while its org's API usage is at or above the share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageHold {
    /// Requests used, as last read.
    pub used: u64,
    /// The org's daily allowance, as last read.
    pub limit: u64,
    /// Until when.
    pub until_us: i64,
}

/// What the store gave a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// A turn at `at_us` (now or within the horizon), reserved: the TAT is now `tat_us`.
    Granted {
        /// When the request may go.
        at_us: i64,
        /// The TAT after the reservation.
        tat_us: i64,
    },
    /// No turn within the horizon: the earliest would be at `at_us`. Nothing reserved.
    TooFar {
        /// The earliest turn.
        at_us: i64,
        /// The TAT as stored.
        tat_us: i64,
    },
    /// The account's syncs wait for its API usage. Nothing reserved.
    UsageHeld(UsageHold),
}

/// The stored state of a key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PaceState {
    /// The theoretical arrival time; `None` before the first request.
    pub tat_us: Option<i64>,
    /// The usage hold, if any (an expired one is ignored).
    pub usage: Option<UsageHold>,
}

impl PaceState {
    /// GCRA: the turn `ask` gets from this state, and the new TAT when one is reserved. A
    /// request conforms at `max(now, TAT - tolerance)`; it is reserved when that is within the
    /// horizon, moving the TAT to `max(TAT, now) + interval`.
    pub fn take(&self, ask: &TurnAsk) -> (Turn, Option<i64>) {
        if let Some(hold) = self.usage.filter(|h| h.until_us > ask.now_us) {
            return (Turn::UsageHeld(hold), None);
        }
        let base = self.tat_us.unwrap_or(ask.now_us).max(ask.now_us);
        let at_us = base.saturating_sub(ask.rule.tolerance_us()).max(ask.now_us);
        if at_us.saturating_sub(ask.now_us) > ask.horizon_us {
            return (
                Turn::TooFar {
                    at_us,
                    tat_us: base,
                },
                None,
            );
        }
        let tat_us = base.saturating_add(ask.rule.interval_us);
        (Turn::Granted { at_us, tat_us }, Some(tat_us))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(now_us: i64, burst: u32) -> TurnAsk {
        TurnAsk {
            now_us,
            rule: PaceRule::per_second(10, burst),
            horizon_us: 3_000_000,
            hint_us: None,
        }
    }

    fn run(state: &mut PaceState, ask: &TurnAsk) -> Turn {
        let (turn, tat) = state.take(ask);
        if tat.is_some() {
            state.tat_us = tat;
        }
        turn
    }

    #[test]
    fn turns_are_an_interval_apart_and_a_burst_goes_at_once() {
        let mut state = PaceState::default();
        let turns: Vec<Turn> = (0..3).map(|_| run(&mut state, &ask(1_000, 1))).collect();
        let at: Vec<i64> = turns
            .iter()
            .map(|t| match t {
                Turn::Granted { at_us, .. } => *at_us,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(at, [1_000, 101_000, 201_000]);
        let mut burst = PaceState::default();
        let at: Vec<i64> = (0..12)
            .map(|_| match run(&mut burst, &ask(0, 10)) {
                Turn::Granted { at_us, .. } => at_us,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(&at[..10], &[0; 10]);
        assert_eq!(&at[10..], &[100_000, 200_000]);
    }

    #[test]
    fn a_turn_beyond_the_horizon_is_refused_and_reserves_nothing() {
        let mut state = PaceState {
            tat_us: Some(5_000_000),
            usage: None,
        };
        let before = state;
        assert_eq!(
            run(&mut state, &ask(1_000_000, 1)),
            Turn::TooFar {
                at_us: 5_000_000,
                tat_us: 5_000_000
            }
        );
        assert_eq!(state, before);
        // An idle key restarts from now.
        state.tat_us = Some(10);
        assert_eq!(
            run(&mut state, &ask(1_000_000, 1)),
            Turn::Granted {
                at_us: 1_000_000,
                tat_us: 1_100_000
            }
        );
    }

    #[test]
    fn a_usage_hold_refuses_until_it_ends() {
        let hold = UsageHold {
            used: 95,
            limit: 100,
            until_us: 2_000,
        };
        let state = PaceState {
            tat_us: None,
            usage: Some(hold),
        };
        assert_eq!(state.take(&ask(1_000, 1)).0, Turn::UsageHeld(hold));
        assert!(matches!(state.take(&ask(2_000, 1)).0, Turn::Granted { .. }));
    }
}
