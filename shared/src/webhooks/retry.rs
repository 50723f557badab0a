//! The retry schedule of failed deliveries (BEHAVIOR 13).

use crate::types::delays::{Delays, Schedule, Setting};

/// The delays before each retry of a failed delivery (BEHAVIOR 13): 5 s, 5 min, 30 min, 2 h,
/// 5 h, 10 h, 10 h by default; `WEBHOOK_RETRY_DELAYS` (comma-separated seconds, at least one)
/// sets them.
pub type RetrySchedule = Delays<WebhookDeliveryRetries>;

/// The schedule of webhook delivery retries (see [`RetrySchedule`]).
pub enum WebhookDeliveryRetries {}

impl Schedule for WebhookDeliveryRetries {
    const SETTING: Setting = Setting::new(
        "WEBHOOK_RETRY_DELAYS",
        1,
        &[5, 300, 1800, 7200, 18_000, 36_000, 36_000],
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn deliveries_retry_seven_times_by_default_and_a_setting_needs_one_delay() {
        let default = RetrySchedule::default();
        assert_eq!(default.as_slice().len(), 7);
        assert_eq!(default.after_attempt(1), Some(Duration::from_secs(5)));
        assert_eq!(default.after_attempt(7), Some(Duration::from_secs(36_000)));
        assert_eq!(default.after_attempt(8), None);
        assert_eq!(
            RetrySchedule::parse("60").unwrap().as_slice(),
            [Duration::from_secs(60)]
        );
        assert!(RetrySchedule::parse("").is_err());
        assert!(RetrySchedule::parse("1,x")
            .unwrap_err()
            .contains("WEBHOOK_RETRY_DELAYS"));
    }
}
