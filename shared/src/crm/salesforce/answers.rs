//! How Salesforce's answers read (BEHAVIOR 7 "Salesforce as it is"; Salesforce's REST API
//! guide, "Status Codes and Error Responses" and "Limit Info Header", and its OAuth 2.0 guide):
//! the retry classification table, the detail of a refusal, and `Sforce-Limit-Info`.

use super::super::port::Next;
use super::super::reading::{retry_after, Classified, PaceSignal, Remedy, DETAIL_CHARS};
use reqwest::header::HeaderMap;
use serde::Deserialize;
use std::time::{Duration, SystemTime};

/// Salesforce's response header with the org's daily API usage (`api-usage=N/M`).
pub const LIMIT_INFO: &str = "sforce-limit-info";

/// One element of Salesforce's error array (`[{"message", "errorCode", "fields"}]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ApiError {
    /// The error code (`INVALID_SESSION_ID`, `UNABLE_TO_LOCK_ROW`, ...).
    #[serde(rename = "errorCode", default)]
    pub error_code: String,
    /// The message.
    #[serde(default)]
    pub message: String,
}

/// An OAuth 2.0 error answer of the token endpoint (RFC 6749 section 5.2).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct OAuthError {
    /// `invalid_grant`, `invalid_client`, ...
    pub error: String,
    /// Salesforce's words for it.
    #[serde(default)]
    pub error_description: Option<String>,
}

/// The first error of a (redacted) body that is Salesforce's error array, if it is one.
pub fn first_error(text: &str) -> Option<ApiError> {
    serde_json::from_str::<Vec<ApiError>>(text)
        .ok()?
        .into_iter()
        .next()
}

/// The detail of a non-2xx answer whose (redacted) body is `text` (BEHAVIOR 7): the first
/// element of the error array as `<errorCode>: <message>`, an OAuth error as `<error>:
/// <error_description>`, else the body; at most 200 characters either way.
pub fn detail_of(text: &str) -> String {
    let detail = if let Some(error) = first_error(text) {
        format!("{}: {}", error.error_code, error.message)
    } else if let Ok(error) = serde_json::from_str::<OAuthError>(text) {
        match error.error_description {
            Some(description) => format!("{}: {description}", error.error),
            None => error.error,
        }
    } else {
        text.to_string()
    };
    detail.chars().take(DETAIL_CHARS).collect()
}

/// What follows a non-2xx answer `status` with `headers` and the (redacted) body `text`, and
/// what the attempt may do first; `limit_wait` is how long the org's daily total waits
/// (`CRM_SYNC_LIMIT_WAIT`):
///
/// | answer | what follows |
/// |---|---|
/// | 401 naming `INVALID_SESSION_ID` | a new token and one more send |
/// | `UNABLE_TO_LOCK_ROW` (any status) | retry |
/// | 403 `REQUEST_LIMIT_EXCEEDED` whose message names `ConcurrentRequests` | retry |
/// | any other 403 `REQUEST_LIMIT_EXCEEDED` (the org's daily total) | wait `limit_wait`, no retry spent |
/// | 429, 5xx | retry, after at least their `Retry-After` |
/// | any other status | final |
pub fn classify(
    status: u16, headers: &HeaderMap, text: &str, now: SystemTime, limit_wait: Duration,
) -> Classified {
    let error = first_error(text);
    let code = error.as_ref().map(|e| e.error_code.as_str()).unwrap_or("");
    let message = error.as_ref().map(|e| e.message.as_str()).unwrap_or("");
    let retry = Next::Retry {
        at_least: retry_after(headers, now),
    };
    let (next, remedy) = match (status, code) {
        (401, "INVALID_SESSION_ID") => (Next::Final, Remedy::Reauthenticate),
        (_, "UNABLE_TO_LOCK_ROW") => (retry, Remedy::None),
        (403, "REQUEST_LIMIT_EXCEEDED") if message.contains("ConcurrentRequests") => {
            (retry, Remedy::None)
        }
        (403, "REQUEST_LIMIT_EXCEEDED") => (Next::Wait { wait: limit_wait }, Remedy::None),
        (429, _) => (retry, Remedy::None),
        (s, _) if s >= 500 => (retry, Remedy::None),
        _ => (Next::Final, Remedy::None),
    };
    Classified {
        detail: detail_of(text),
        next,
        remedy,
    }
}

/// The org's API usage in a `Sforce-Limit-Info` value (`api-usage=N/M`, possibly among other
/// `;`-separated entries): `(N, M)`. Anything else (a missing entry, numbers that are not whole
/// or do not fit) reads as none.
pub fn api_usage(value: &str) -> Option<(u64, u64)> {
    value.split(';').find_map(|entry| {
        let (name, usage) = entry.trim().split_once('=')?;
        if name.trim() != "api-usage" {
            return None;
        }
        let (used, limit) = usage.trim().split_once('/')?;
        Some((used.trim().parse().ok()?, limit.trim().parse().ok()?))
    })
}

/// Whether `used` of `limit` is at or above `share` (0 to 1) of it; a limit of 0 is spent.
pub fn at_share(used: u64, limit: u64, share: f64) -> bool {
    // u64 to f64 may round, by far less than a request of any real limit.
    limit == 0 || used as f64 >= share * limit as f64
}

/// What `Sforce-Limit-Info` says: the usage, and a hold of `limit_wait` when it is at or above
/// `share`.
pub fn limits(headers: &HeaderMap, share: f64, limit_wait: Duration) -> Vec<PaceSignal> {
    headers
        .get(LIMIT_INFO)
        .and_then(|v| v.to_str().ok())
        .and_then(api_usage)
        .map(|(used, limit)| PaceSignal::ApiUsage {
            used,
            limit,
            hold: at_share(used, limit, share).then_some(limit_wait),
        })
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    const HOUR: Duration = Duration::from_secs(3600);

    fn classified(status: u16, body: &str) -> (Next, Remedy, String) {
        let c = classify(
            status,
            &HeaderMap::new(),
            body,
            SystemTime::UNIX_EPOCH,
            HOUR,
        );
        (c.next, c.remedy, c.detail)
    }

    #[test]
    fn salesforces_answers_say_what_follows() {
        let error = |code: &str, message: &str| {
            serde_json::json!([{"message": message, "errorCode": code, "fields": []}]).to_string()
        };
        let retry = Next::Retry { at_least: None };
        assert_eq!(
            classified(
                401,
                &error("INVALID_SESSION_ID", "Session expired or invalid")
            ),
            (
                Next::Final,
                Remedy::Reauthenticate,
                "INVALID_SESSION_ID: Session expired or invalid".to_string()
            )
        );
        for status in [400, 409, 500] {
            assert_eq!(
                classified(
                    status,
                    &error(
                        "UNABLE_TO_LOCK_ROW",
                        "unable to obtain exclusive access to this record"
                    )
                )
                .0,
                retry,
                "{status}"
            );
        }
        assert_eq!(
            classified(
                403,
                &error(
                    "REQUEST_LIMIT_EXCEEDED",
                    "ConcurrentRequests (Concurrent API Requests) Limit exceeded."
                )
            )
            .0,
            retry
        );
        assert_eq!(
            classified(
                403,
                &error("REQUEST_LIMIT_EXCEEDED", "TotalRequests Limit exceeded.")
            )
            .0,
            Next::Wait { wait: HOUR }
        );
        assert_eq!(classified(503, "Service Unavailable").0, retry);
        for code in [
            "INVALID_CROSS_REFERENCE_KEY",
            "FIELD_INTEGRITY_EXCEPTION",
            "INACTIVE_OWNER_OR_USER",
            "NOT_FOUND",
            "MALFORMED_ID",
        ] {
            let (next, remedy, detail) = classified(400, &error(code, "no"));
            assert_eq!((next, remedy), (Next::Final, Remedy::None), "{code}");
            assert_eq!(detail, format!("{code}: no"));
        }
        assert_eq!(classified(401, &error("OTHER", "x")).1, Remedy::None);
        assert_eq!(
            classified(
                400,
                r#"{"error":"invalid_grant","error_description":"authentication failure"}"#
            )
            .2,
            "invalid_grant: authentication failure"
        );
        assert_eq!(
            classified(400, &error("X", &"m".repeat(500)))
                .2
                .chars()
                .count(),
            200
        );
    }

    #[test]
    fn the_limit_info_header_gives_the_usage_and_holds_at_the_share() {
        assert_eq!(api_usage("api-usage=18/5000"), Some((18, 5000)));
        assert_eq!(
            api_usage("api-usage=10018/100000; api-bursts=1/750"),
            Some((10018, 100000))
        );
        assert_eq!(
            api_usage(" per-app-api-usage=17/250(appName=x); api-usage=25/5000"),
            Some((25, 5000))
        );
        for bad in [
            "",
            "api-usage=",
            "api-usage=1",
            "api-usage=x/5",
            "api-usage=-1/5",
            "api-usage=1/99999999999999999999999",
        ] {
            assert_eq!(api_usage(bad), None, "{bad}");
        }
        assert!(at_share(90, 100, 0.9));
        assert!(!at_share(89, 100, 0.9));
        assert!(at_share(0, 0, 0.9));
        assert!(at_share(u64::MAX, u64::MAX, 1.0));
        let mut headers = HeaderMap::new();
        headers.insert(LIMIT_INFO, HeaderValue::from_static("api-usage=95/100"));
        assert_eq!(
            limits(&headers, 0.9, HOUR),
            [PaceSignal::ApiUsage {
                used: 95,
                limit: 100,
                hold: Some(HOUR)
            }]
        );
        assert_eq!(
            limits(&headers, 0.96, HOUR),
            [PaceSignal::ApiUsage {
                used: 95,
                limit: 100,
                hold: None
            }]
        );
        assert!(limits(&HeaderMap::new(), 0.9, HOUR).is_empty());
    }
}
