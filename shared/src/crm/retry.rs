//! The delays between the attempts of a failed CRM sync (BEHAVIOR 7, "Retry"). The retries
//! themselves are due work ([`crate::due`]): each is the next attempt of the entry's `crm_sync`
//! due item.

use std::time::Duration;

/// The delays between attempts (BEHAVIOR 7): one retry per delay, after the first attempt.
/// Default 30 s, 5 min, 30 min; `CRM_SYNC_RETRY_DELAYS` (comma-separated seconds) sets them.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryDelays(Vec<Duration>);

impl Default for RetryDelays {
    fn default() -> Self {
        Self(vec![
            Duration::from_secs(30),
            Duration::from_secs(300),
            Duration::from_secs(1800),
        ])
    }
}

impl RetryDelays {
    /// The name of the environment variable.
    pub const VARIABLE: &'static str = "CRM_SYNC_RETRY_DELAYS";

    /// Parses comma-separated seconds (`30,300,1800`; decimals allowed, e.g. `0.5`), at least
    /// three (BEHAVIOR 7: at least 3 more attempts), each from 0 to 86,400.
    ///
    /// Errors: a message naming the value that is not such a number.
    pub fn parse(text: &str) -> Result<Self, String> {
        crate::types::delays::parse(Self::VARIABLE, text, 3).map(Self)
    }

    /// The delays from the environment, the default when unset.
    ///
    /// Errors: as [`Self::parse`].
    pub fn from_env() -> Result<Self, String> {
        Ok(crate::types::delays::from_env(Self::VARIABLE, Self::parse)?.unwrap_or_default())
    }

    /// The delays, in order.
    pub fn as_slice(&self) -> &[Duration] {
        &self.0
    }

    /// The delay before the retry that follows attempt number `attempts` (1-based), or `None`
    /// when that attempt was the last.
    pub fn after_attempt(&self, attempts: u32) -> Option<Duration> {
        crate::types::delays::after_attempt(&self.0, attempts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
