//! The delays between the attempts of a failed CRM sync (BEHAVIOR 7, "Retry"). The retries
//! themselves are due work ([`crate::due`]): each is the next attempt of the entry's `crm_sync`
//! due item.

use crate::types::delays::{Delays, Schedule, Setting};
use std::time::Duration;

/// The delays between attempts (BEHAVIOR 7): one retry per delay, after the first attempt.
/// Default 30 s, 5 min, 30 min; `CRM_SYNC_RETRY_DELAYS` (comma-separated seconds, at least
/// three: BEHAVIOR 7 makes at least 3 more attempts) sets them.
pub type RetryDelays = Delays<CrmSyncRetries>;

/// The schedule of CRM sync retries (see [`RetryDelays`]).
pub enum CrmSyncRetries {}

impl Schedule for CrmSyncRetries {
    const SETTING: Setting = Setting::new("CRM_SYNC_RETRY_DELAYS", 3, &[30, 300, 1800]);
}

/// How long Salesforce's daily total (a 403 `REQUEST_LIMIT_EXCEEDED` that is not about
/// concurrent requests) and an org's API usage at the connection's share make the account's
/// syncs wait, without spending a retry (BEHAVIOR 7: 1 hour by default; `CRM_SYNC_LIMIT_WAIT`,
/// seconds, so tests can use 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitWait(pub Duration);

impl Default for LimitWait {
    fn default() -> Self {
        Self(Duration::from_secs(3600))
    }
}

impl LimitWait {
    /// The environment variable.
    pub const VARIABLE: &'static str = "CRM_SYNC_LIMIT_WAIT";

    /// The wait `text` gives: seconds, decimals allowed, more than 0 and at most 86,400.
    ///
    /// Errors: a message naming the variable and the value.
    pub fn parse(text: &str) -> Result<Self, String> {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
            .map(|s| Self(Duration::from_secs_f64(s)))
            .ok_or_else(|| {
                format!(
                    "{}={text} is not a number of seconds above 0 and at most 86400",
                    Self::VARIABLE
                )
            })
    }

    /// The wait the environment sets, the default when unset or blank.
    ///
    /// Errors: as [`Self::parse`].
    pub fn from_env() -> Result<Self, String> {
        match std::env::var(Self::VARIABLE) {
            Ok(text) if !text.trim().is_empty() => Self::parse(&text),
            _ => Ok(Self::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_wait_is_seconds_with_an_hour_by_default() {
        assert_eq!(LimitWait::default().0, Duration::from_secs(3600));
        assert_eq!(LimitWait::parse("1").unwrap().0, Duration::from_secs(1));
        assert_eq!(
            LimitWait::parse(" 0.5 ").unwrap().0,
            Duration::from_millis(500)
        );
        for bad in ["", "0", "-1", "x", "inf", "86401"] {
            assert!(LimitWait::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn delays_parse_as_comma_separated_seconds_with_at_least_three() {
        assert_eq!(
            RetryDelays::parse("1, 1,1").unwrap().as_slice(),
            [Duration::from_secs(1); 3]
        );
        assert_eq!(
            RetryDelays::parse("0.5,2,3,4").unwrap().as_slice()[0],
            Duration::from_millis(500)
        );
        for bad in ["", "1,2", "1,x,3", "1,-1,3", "1,inf,3", "1,90000,3"] {
            assert!(RetryDelays::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            RetryDelays::default().as_slice(),
            [30, 300, 1800].map(Duration::from_secs)
        );
    }

    #[test]
    fn each_attempt_but_the_last_is_followed_by_its_delay() {
        let d = RetryDelays::parse("1,2,3").unwrap();
        assert_eq!(d.after_attempt(0), None);
        assert_eq!(d.after_attempt(1), Some(Duration::from_secs(1)));
        assert_eq!(d.after_attempt(3), Some(Duration::from_secs(3)));
        assert_eq!(d.after_attempt(4), None);
    }
}
