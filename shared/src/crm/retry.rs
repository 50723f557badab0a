//! The delays between the attempts of a failed CRM sync (BEHAVIOR 7, "Retry"). The retries
//! themselves are due work ([`crate::due`]): each is the next attempt of the entry's `crm_sync`
//! due item.

use crate::types::delays::{Delays, Schedule, Setting};

/// The delays between attempts (BEHAVIOR 7): one retry per delay, after the first attempt.
/// Default 30 s, 5 min, 30 min; `CRM_SYNC_RETRY_DELAYS` (comma-separated seconds, at least
/// three: BEHAVIOR 7 makes at least 3 more attempts) sets them.
pub type RetryDelays = Delays<CrmSyncRetries>;

/// The schedule of CRM sync retries (see [`RetryDelays`]).
pub enum CrmSyncRetries {}

impl Schedule for CrmSyncRetries {
    const SETTING: Setting = Setting::new("CRM_SYNC_RETRY_DELAYS", 3, &[30, 300, 1800]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
