//! The failed-authentication port (BEHAVIOR 1): how many times a `client_id` failed to
//! authenticate from a source address in the current window, counted in the store so that every
//! instance of the token function sees the same count.

use crate::model::auth_attempt::{AttemptKey, FailureWindow};
use crate::store::StoreResult;
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// Failed client authentications per [`AttemptKey`], in fixed windows that open with a failure.
#[async_trait]
pub trait AuthAttemptStore: Send + Sync + 'static {
    /// The failures of `key` in its window open at `now`; `None` when there is none or it has
    /// ended (an ended window's item may linger until DynamoDB's TTL removes it: it is ignored).
    async fn failed_authentications(
        &self, key: &AttemptKey, now: DateTime<Utc>,
    ) -> StoreResult<Option<FailureWindow>>;

    /// Counts one failure of `key` at `now` and answers the window as counted: one more in the
    /// window open at `now`, or a count of 1 in a new window ending `window` after `now`. One
    /// atomic write per attempt (two when it opens a window): concurrent failures from any
    /// number of instances are each counted once.
    async fn count_failed_authentication(
        &self, key: &AttemptKey, now: DateTime<Utc>, window: chrono::Duration,
    ) -> StoreResult<FailureWindow>;
}
