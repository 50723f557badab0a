//! How a CRM's answers read, whatever the CRM: what the attempt may do about a refusal
//! ([`Remedy`]), the reading of a refusal ([`Classified`]), what an answer's headers say about the
//! account's pace ([`PaceSignal`]), `Retry-After` (RFC 9110), and the one trait the exchange
//! reads answers through ([`ReadAnswers`], which every adapter implements with its own table).

use super::port::Next;
use crate::secrets::OpenCrmConnection;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use std::time::{Duration, SystemTime};

/// Characters of an answer's detail kept in a `crm_error` (BEHAVIOR 7: at most 200, after
/// redaction).
pub const DETAIL_CHARS: usize = 200;

/// The first [`DETAIL_CHARS`] characters of `detail` (already redacted: a secret is never cut
/// in two).
pub fn cut(detail: &str) -> String {
    detail.chars().take(DETAIL_CHARS).collect()
}

/// The longest `Retry-After` honoured; a longer one is cut to this (BEHAVIOR 7: at most 24 h).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// A `Retry-After` value (RFC 9110 section 10.2.3): delay-seconds or an HTTP-date, as a
/// duration from `now` (a date in the past is zero), at most [`MAX_RETRY_AFTER`].
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let delay = match value.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds.min(MAX_RETRY_AFTER.as_secs())),
        Err(_) => {
            let at = httpdate::parse_http_date(value).ok()?;
            at.duration_since(now).unwrap_or(Duration::ZERO)
        }
    };
    Some(delay.min(MAX_RETRY_AFTER))
}

/// The `Retry-After` of `headers`, read at `now`.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, now))
}

/// What the attempt may do about a refusal, once, before giving the failure up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// Nothing: the failure stands.
    None,
    /// The access token was refused (HubSpot's 401, Salesforce's `INVALID_SESSION_ID`): take a
    /// new one and send once more (an OAuth app's connection only).
    Reauthenticate,
    /// The owner id was refused (HubSpot's `INVALID_OWNER_ID`): when it was found by e-mail,
    /// forget it, look it up once more and send once more.
    LookUpOwnerAgain,
}

/// How a non-2xx answer reads: the detail of `CRM answered <status>: <detail>` (at most 200
/// characters, from a redacted body), what follows, and what the attempt may do first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    /// The detail.
    pub detail: String,
    /// What follows when the failure stands.
    pub next: Next,
    /// What the attempt may do once first.
    pub remedy: Remedy,
}

/// What an answer's headers say about the account's pace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PaceSignal {
    /// The CRM's allowance is spent: no request of the account for this long (HubSpot's
    /// `X-HubSpot-RateLimit-Remaining: 0`, `-Secondly-Remaining: 0`).
    Hold(Duration),
    /// The org's API usage (Salesforce's `Sforce-Limit-Info: api-usage=N/M`): at or above the
    /// connection's `max_api_share` the account's syncs wait `hold`; below it, `hold` is `None`
    /// and a usage hold ends.
    ApiUsage {
        /// Requests used (`N`).
        used: u64,
        /// The org's daily allowance (`M`).
        limit: u64,
        /// How long the account's syncs wait, when the usage is at or above the share.
        hold: Option<Duration>,
    },
}

/// How one CRM's answers read: its retry classification table, its rate-limit headers, its pace.
pub trait ReadAnswers: Send + Sync {
    /// How a non-2xx answer `status` with `headers` and the redacted body `text` reads.
    fn classify(&self, status: u16, headers: &HeaderMap, text: &str, now: SystemTime)
        -> Classified;

    /// What an answer's headers say about the account's pace.
    fn limits(&self, headers: &HeaderMap, connection: &OpenCrmConnection) -> Vec<PaceSignal>;

    /// Requests per second per account the connection allows (BEHAVIOR 7: 10, or HubSpot's
    /// `max_requests_per_second`).
    fn requests_per_second(&self, connection: &OpenCrmConnection) -> u32;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(120));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(120))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(120));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("99999999", now), Some(MAX_RETRY_AFTER));
    }
}
