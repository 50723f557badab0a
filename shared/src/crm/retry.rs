//! Retries of a failed CRM sync (BEHAVIOR 7, "Retry"): the delays, the retry message and the
//! two ways a retry waits.
//!
//! A retry is a [`CrmRetry`]: which history entry, how many attempts it had when the retry was
//! scheduled (a duplicate delivery finds another count and is dropped), and when it is due.
//!
//! - In Lambda it is a message of the dispatch queue ([`SqsRetryQueue`]): the dispatch function
//!   tells it from a dispatch request by `kind` and hands it to [`super::CrmSync::retry`]. SQS
//!   delays a message by at most 15 minutes, so a longer delay is travelled in hops: a message
//!   received before `not_before` is sent again with the time that remains.
//! - In the local server without a queue it is a task that sleeps ([`super::sync::InProcessRetries`]).

use crate::error::BoxError;
use crate::model::dispatch::DispatchEntryKey;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `kind` of a retry message on the dispatch queue.
pub const CRM_SYNC_RETRY: &str = "crm_sync_retry";

/// The longest delay SQS gives one message (`DelaySeconds` at most 900).
pub const MAX_QUEUE_DELAY: Duration = Duration::from_secs(900);

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
        let delays = text
            .split(',')
            .map(|part| {
                let part = part.trim();
                part.parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && (0.0..=86_400.0).contains(s))
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| {
                        format!(
                            "{}: {part:?} is not a number of seconds from 0 to 86400",
                            Self::VARIABLE
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if delays.len() < 3 {
            return Err(format!(
                "{}: at least 3 delays are needed (BEHAVIOR 7), got {}",
                Self::VARIABLE,
                delays.len()
            ));
        }
        Ok(Self(delays))
    }

    /// The delays from the environment, the default when unset.
    ///
    /// Errors: as [`Self::parse`].
    pub fn from_env() -> Result<Self, String> {
        match std::env::var(Self::VARIABLE) {
            Ok(text) if !text.trim().is_empty() => Self::parse(&text),
            _ => Ok(Self::default()),
        }
    }

    /// The delays, in order.
    pub fn as_slice(&self) -> &[Duration] {
        &self.0
    }

    /// The delay before the retry that follows attempt number `attempts` (1-based), or `None`
    /// when that attempt was the last.
    pub fn after_attempt(&self, attempts: u32) -> Option<Duration> {
        let index = usize::try_from(attempts).ok()?.checked_sub(1)?;
        self.0.get(index).copied()
    }
}

/// A scheduled retry of one assignment's CRM sync.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrmRetry {
    /// Always [`CRM_SYNC_RETRY`].
    pub kind: String,
    /// The history entry's router.
    pub router_id: crate::types::ids::RouterId,
    /// The history entry's time (its exact stored instant).
    pub dispatched_at: DateTime<Utc>,
    /// The history entry's id.
    pub entry_id: uuid::Uuid,
    /// Attempts made when the retry was scheduled; the retry runs only while the entry still
    /// says `retrying` after exactly that many.
    pub attempts: u32,
    /// When the retry is due.
    pub not_before: DateTime<Utc>,
}

impl CrmRetry {
    /// The retry of entry `key` after `attempts` attempts, due at `not_before`.
    pub fn new(key: &DispatchEntryKey, attempts: u32, not_before: DateTime<Utc>) -> Self {
        Self {
            kind: CRM_SYNC_RETRY.to_string(),
            router_id: key.router_id,
            dispatched_at: key.dispatched_at,
            entry_id: key.id,
            attempts,
            not_before,
        }
    }

    /// The history entry it retries.
    pub fn entry(&self) -> DispatchEntryKey {
        DispatchEntryKey {
            router_id: self.router_id,
            dispatched_at: self.dispatched_at,
            id: self.entry_id,
        }
    }

    /// The message body.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a queue message body: `Some` when it is a retry message (its `kind` says so),
    /// `None` for anything else (a dispatch request, or junk).
    ///
    /// Errors: a body whose `kind` is [`CRM_SYNC_RETRY`] but whose fields are malformed.
    pub fn from_message(body: &str) -> Option<Result<Self, String>> {
        let value: serde_json::Value = serde_json::from_str(body).ok()?;
        if value.get("kind").and_then(|k| k.as_str()) != Some(CRM_SYNC_RETRY) {
            return None;
        }
        Some(serde_json::from_value(value).map_err(|e| e.to_string()))
    }
}

/// Where retries wait until they are due.
#[async_trait]
pub trait RetryQueue: Send + Sync + 'static {
    /// Hands `retry` over to run after `delay`.
    ///
    /// Errors: the retry could not be scheduled (e.g. the queue refused the message).
    async fn schedule(&self, retry: CrmRetry, delay: Duration) -> Result<(), BoxError>;
}

/// Retries as delayed messages of the dispatch queue (Lambda, and the local server polling a
/// queue).
#[derive(Debug, Clone)]
pub struct SqsRetryQueue {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsRetryQueue {
    /// Retries sent to `queue_url`.
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }
}

#[async_trait]
impl RetryQueue for SqsRetryQueue {
    async fn schedule(&self, retry: CrmRetry, delay: Duration) -> Result<(), BoxError> {
        let seconds = delay.min(MAX_QUEUE_DELAY).as_secs_f64().ceil() as i32;
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(retry.to_json())
            .delay_seconds(seconds)
            .send()
            .await
            .map_err(|e| BoxError::from(aws_sdk_sqs::error::DisplayErrorContext(e).to_string()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ids::RouterId;

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

    #[test]
    fn a_retry_message_round_trips_and_other_bodies_are_not_retries() {
        let key = DispatchEntryKey {
            router_id: RouterId::new_v4(),
            dispatched_at: Utc::now(),
            id: uuid::Uuid::now_v7(),
        };
        let retry = CrmRetry::new(&key, 2, Utc::now());
        let back = CrmRetry::from_message(&retry.to_json()).unwrap().unwrap();
        assert_eq!(back, retry);
        assert_eq!(back.entry(), key);
        assert!(CrmRetry::from_message(r#"{"router_id": "r", "object_id": "o"}"#).is_none());
        assert!(CrmRetry::from_message("not json").is_none());
        assert!(CrmRetry::from_message(r#"{"kind": "crm_sync_retry"}"#)
            .unwrap()
            .is_err());
    }
}
