//! How HubSpot's answers read (BEHAVIOR 7 "HubSpot as it is"; HubSpot's error-handling and
//! API-usage guides): the retry classification table, the detail of a refusal, `Retry-After`,
//! and the `X-HubSpot-RateLimit-*` headers.

use super::super::port::Next;
use super::super::reading::{cut, retry_after, Classified, PaceSignal, Remedy, MAX_RETRY_AFTER};
use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};

/// HubSpot's header: requests left in the current window (10 s) of the app's burst limit.
pub const REMAINING: &str = "x-hubspot-ratelimit-remaining";
/// HubSpot's header: the window of the burst limit, in milliseconds.
pub const INTERVAL_MILLISECONDS: &str = "x-hubspot-ratelimit-interval-milliseconds";
/// HubSpot's header: requests left in the current second.
pub const SECONDLY_REMAINING: &str = "x-hubspot-ratelimit-secondly-remaining";
/// HubSpot's header: requests left today (private apps only).
pub const DAILY_REMAINING: &str = "x-hubspot-ratelimit-daily-remaining";

/// The window assumed when `X-HubSpot-RateLimit-Remaining: 0` comes without its interval.
const DEFAULT_WINDOW: Duration = Duration::from_secs(10);

/// The longest hold a rate-limit header may put on an account.
const MAX_HOLD: Duration = Duration::from_secs(60);

/// The least wait after HubSpot's 423 Locked (its error guide: at least 2 s).
pub const LOCKED_WAIT: Duration = Duration::from_secs(2);

/// A number header's value (a value that is not a whole number, or overflows, reads as none).
pub fn header_number(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// What follows a non-2xx answer `status` with `headers` and the (redacted) body `text`, and
/// what the attempt may do first (BEHAVIOR 7 and "HubSpot as it is"):
///
/// | answer | what follows |
/// |---|---|
/// | 401 | a new token and one more send (an OAuth app), else final |
/// | 400 naming `INVALID_OWNER_ID` | for an owner found by e-mail, one more look-up and send; else final |
/// | 429 whose `policyName` is `DAILY`, or with `X-HubSpot-RateLimit-Daily-Remaining: 0` | wait for `Retry-After` or the next 00:00 UTC (at least 60 s), no retry spent |
/// | any other 429 | retry, after at least `Retry-After` or the window of `X-HubSpot-RateLimit-Interval-Milliseconds` |
/// | 423 Locked | retry after at least 2 s (or its longer `Retry-After`) |
/// | 477 Migration in progress, 5xx | retry, after at least their `Retry-After` |
/// | any other status | final |
pub fn next_after(status: u16, headers: &HeaderMap, text: &str, now: SystemTime) -> Next {
    let retry_after = retry_after(headers, now);
    match status {
        429 => {
            let policy = serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .and_then(|v| v.get("policyName")?.as_str().map(str::to_string));
            if policy.as_deref() == Some("DAILY")
                || header_number(headers, DAILY_REMAINING) == Some(0)
            {
                Next::Daily { retry_after }
            } else {
                let window = header_number(headers, INTERVAL_MILLISECONDS)
                    .map(|ms| Duration::from_millis(ms).min(MAX_RETRY_AFTER));
                Next::Retry {
                    at_least: retry_after.or(window),
                }
            }
        }
        423 => Next::Retry {
            at_least: Some(retry_after.unwrap_or(LOCKED_WAIT).max(LOCKED_WAIT)),
        },
        477 => Next::Retry {
            at_least: retry_after,
        },
        s if s >= 500 => Next::Retry {
            at_least: retry_after,
        },
        _ => Next::Final,
    }
}

/// The whole reading of a refusal: [`next_after`], the remedy, and the detail.
pub fn classify(status: u16, headers: &HeaderMap, text: &str, now: SystemTime) -> Classified {
    let remedy = match status {
        401 => Remedy::Reauthenticate,
        400 if text.contains("INVALID_OWNER_ID") => Remedy::LookUpOwnerAgain,
        _ => Remedy::None,
    };
    Classified {
        detail: detail_of(text),
        next: next_after(status, headers, text, now),
        remedy,
    }
}

/// The detail of a non-2xx answer whose (redacted) body is `text` (BEHAVIOR 7): the JSON body's
/// `message` when it is a string, else the body; its first 200 characters either way.
pub fn detail_of(text: &str) -> String {
    let message = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(mut map)) => match map.remove("message") {
            Some(serde_json::Value::String(message)) => Some(message),
            _ => None,
        },
        _ => None,
    };
    cut(message.as_deref().unwrap_or(text))
}

/// What HubSpot's `X-HubSpot-RateLimit-*` headers say: `Remaining: 0` holds the account for the
/// window (`Interval-Milliseconds`, 10 s when absent, at most 60 s), `Secondly-Remaining: 0`
/// for one second.
pub fn limits(headers: &HeaderMap) -> Vec<PaceSignal> {
    if header_number(headers, REMAINING) == Some(0) {
        let window = header_number(headers, INTERVAL_MILLISECONDS)
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_WINDOW)
            .min(MAX_HOLD);
        return vec![PaceSignal::Hold(window)];
    }
    if header_number(headers, SECONDLY_REMAINING) == Some(0) {
        return vec![PaceSignal::Hold(Duration::from_secs(1))];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn a_json_message_is_the_detail_else_the_first_200_characters() {
        assert_eq!(
            detail_of(r#"{"status":"error","message":"Property values were not valid"}"#),
            "Property values were not valid"
        );
        let long = "é".repeat(250);
        assert_eq!(detail_of(&long).chars().count(), 200);
        let message = serde_json::json!({"message": "m".repeat(65_000)}).to_string();
        assert_eq!(detail_of(&message), "m".repeat(200));
        let message = serde_json::json!({"message": "m".repeat(65_000)}).to_string();
        assert_eq!(detail_of(&message), "m".repeat(200));
        assert_eq!(detail_of(""), "");
        assert_eq!(detail_of(r#"{"message": 5}"#), r#"{"message": 5}"#);
    }

    #[test]
    fn hubspots_answers_say_what_follows() {
        let now = SystemTime::UNIX_EPOCH;
        let none = HeaderMap::new();
        let with = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_static(v));
            }
            h
        };
        let daily = r#"{"status":"error","message":"You have reached your daily limit.","errorType":"RATE_LIMIT","policyName":"DAILY"}"#;
        let burst = r#"{"status":"error","message":"You have reached your ten_secondly_rolling limit.","errorType":"RATE_LIMIT","policyName":"TEN_SECONDLY_ROLLING"}"#;
        assert_eq!(
            next_after(429, &none, daily, now),
            Next::Daily { retry_after: None }
        );
        assert_eq!(
            next_after(429, &with(&[("retry-after", "600")]), daily, now),
            Next::Daily {
                retry_after: Some(Duration::from_secs(600))
            }
        );
        assert_eq!(
            next_after(429, &with(&[(DAILY_REMAINING, "0")]), "{}", now),
            Next::Daily { retry_after: None }
        );
        assert_eq!(
            next_after(429, &with(&[(INTERVAL_MILLISECONDS, "10000")]), burst, now),
            Next::Retry {
                at_least: Some(Duration::from_secs(10))
            }
        );
        assert_eq!(
            next_after(423, &none, "", now),
            Next::Retry {
                at_least: Some(LOCKED_WAIT)
            }
        );
        assert_eq!(
            next_after(477, &with(&[("retry-after", "90000")]), "", now),
            Next::Retry {
                at_least: Some(MAX_RETRY_AFTER)
            }
        );
        assert_eq!(
            next_after(503, &none, "", now),
            Next::Retry { at_least: None }
        );
        for status in [400, 401, 403, 404, 409] {
            assert_eq!(next_after(status, &none, "", now), Next::Final, "{status}");
        }
        assert_eq!(classify(401, &none, "", now).remedy, Remedy::Reauthenticate);
        assert_eq!(
            classify(400, &none, "x INVALID_OWNER_ID y", now).remedy,
            Remedy::LookUpOwnerAgain
        );
    }

    #[test]
    fn a_spent_window_holds_the_account() {
        let mut headers = HeaderMap::new();
        headers.insert(REMAINING, HeaderValue::from_static("0"));
        headers.insert(INTERVAL_MILLISECONDS, HeaderValue::from_static("10000"));
        assert_eq!(
            limits(&headers),
            [PaceSignal::Hold(Duration::from_secs(10))]
        );
        let mut second = HeaderMap::new();
        second.insert(SECONDLY_REMAINING, HeaderValue::from_static("0"));
        assert_eq!(limits(&second), [PaceSignal::Hold(Duration::from_secs(1))]);
        assert!(limits(&HeaderMap::new()).is_empty());
    }
}
