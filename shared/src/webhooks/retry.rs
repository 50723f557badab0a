//! The retry schedule of failed deliveries (BEHAVIOR 13).

use std::time::Duration;

/// The delays before each retry of a failed delivery (BEHAVIOR 13): 5 s, 5 min, 30 min, 2 h,
/// 5 h, 10 h, 10 h by default; `WEBHOOK_RETRY_DELAYS` (comma-separated seconds) sets them.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrySchedule(Vec<Duration>);

impl Default for RetrySchedule {
    fn default() -> Self {
        Self(
            [5, 300, 1800, 7200, 18_000, 36_000, 36_000]
                .into_iter()
                .map(Duration::from_secs)
                .collect(),
        )
    }
}

impl RetrySchedule {
    /// The environment variable.
    pub const VARIABLE: &'static str = "WEBHOOK_RETRY_DELAYS";

    /// Parses comma-separated seconds (decimals allowed), at least one, each 0 to 86,400.
    ///
    /// Errors: a message naming the value that is not such a number.
    pub fn parse(text: &str) -> Result<Self, String> {
        crate::types::delays::parse(Self::VARIABLE, text, 1).map(Self)
    }

    /// The schedule from the environment, the default when unset.
    ///
    /// Errors: as [`Self::parse`].
    pub fn from_env() -> Result<Self, String> {
        Ok(crate::types::delays::from_env(Self::VARIABLE, Self::parse)?.unwrap_or_default())
    }

    /// The delay before the retry after attempt number `attempts` (1-based), or `None` when that
    /// attempt was the last.
    pub fn after_attempt(&self, attempts: u32) -> Option<Duration> {
        crate::types::delays::after_attempt(&self.0, attempts)
    }
}
