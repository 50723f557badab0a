//! The HubSpot adapter of the CRM port (BEHAVIOR 7, "Request"): HubSpot CRM v3's
//! `PATCH {base_url}/crm/v3/objects/{type}/{id}` with
//! `{"properties": {"hubspot_owner_id": "<owner's external_id>"}}`.
//!
//! Requests go through the outbound guard ([`crate::outbound::OutboundClient`]: the base URL
//! and the addresses it resolves to are checked before every request, no redirects, the
//! answer's body read only for a non-2xx answer and then at most 64 KiB), built once per
//! instance with BEHAVIOR 7's 3 s timeout on the whole exchange.

use super::port::{redact, CrmClient, CrmFailure, OwnerUpdate, REQUEST_TIMEOUT, TIMED_OUT};
use crate::outbound::{ClientBuildError, OutboundClient, OutboundError, OutboundPolicy};
use async_trait::async_trait;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

/// Characters of an id kept as they are in a path segment: RFC 3986's unreserved set
/// (`ALPHA / DIGIT / "-" / "." / "_" / "~"`); every other byte is percent-encoded, so the id is
/// always exactly one segment (`/`, `?`, `#`, `%`, spaces and `+` included).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Characters of an answer's body kept in a `crm_error` when it has no JSON `message`.
pub const DETAIL_CHARS: usize = 200;

/// Bytes of a non-2xx answer's body read at most (a JSON `message` is found in less).
const MAX_BODY_BYTES: usize = 64 * 1024;

/// The longest `Retry-After` honoured; a longer one is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// HubSpot CRM v3, through the outbound guard.
#[derive(Debug, Clone)]
pub struct HubSpotClient {
    http: OutboundClient,
}

impl HubSpotClient {
    /// A client under `policy` with BEHAVIOR 7's 3 s timeout.
    ///
    /// Errors: the TLS configuration or the client cannot be built.
    pub fn new(policy: OutboundPolicy) -> Result<Self, ClientBuildError> {
        Self::with_timeout(policy, REQUEST_TIMEOUT)
    }

    /// A client whose requests time out after `timeout` (connection and answer included).
    ///
    /// Errors: as [`Self::new`].
    pub fn with_timeout(
        policy: OutboundPolicy, timeout: Duration,
    ) -> Result<Self, ClientBuildError> {
        Ok(Self::over(OutboundClient::new(
            policy,
            timeout,
            MAX_BODY_BYTES,
        )?))
    }

    /// A client over the guarded `http` client (tests give it a fixed resolver).
    pub fn over(http: OutboundClient) -> Self {
        Self { http }
    }
}

/// A [`HubSpotClient`] built at its first request (issue 36): an instance whose requests sync
/// nothing never builds the HTTP client, and a cold start does not pay for it. Built once and
/// kept for the instance's life (one per process, as [`HubSpotClient`] before); a build that
/// fails (the TLS configuration, never seen) fails that attempt as transient and is tried again
/// at the next.
#[derive(Debug)]
pub struct LazyHubSpotClient {
    policy: OutboundPolicy,
    timeout: Duration,
    client: OnceLock<HubSpotClient>,
}

impl LazyHubSpotClient {
    /// A client under `policy` with BEHAVIOR 7's 3 s timeout, not built yet.
    pub fn new(policy: OutboundPolicy) -> Self {
        Self::with_timeout(policy, REQUEST_TIMEOUT)
    }

    /// A client whose requests time out after `timeout`, not built yet.
    pub fn with_timeout(policy: OutboundPolicy, timeout: Duration) -> Self {
        Self {
            policy,
            timeout,
            client: OnceLock::new(),
        }
    }

    /// The client, built now if this is the first request.
    ///
    /// Errors: as [`HubSpotClient::new`].
    pub fn client(&self) -> Result<&HubSpotClient, ClientBuildError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let built = HubSpotClient::with_timeout(self.policy, self.timeout)?;
        Ok(self.client.get_or_init(|| built))
    }

    /// Whether the client was built.
    pub fn is_built(&self) -> bool {
        self.client.get().is_some()
    }
}

#[async_trait]
impl CrmClient for LazyHubSpotClient {
    async fn set_owner(&self, update: &OwnerUpdate) -> Result<(), CrmFailure> {
        let client = self.client().map_err(|e| {
            CrmFailure::transient(format!("CRM request failed: no HTTP client: {e}"), None)
        })?;
        client.set_owner(update).await
    }
}

/// The request URL: `{base_url}/crm/v3/objects/{type}/{external_id}`, the id percent-encoded as
/// one path segment. A trailing `/` of the base URL is dropped; its query and fragment too.
///
/// Errors: a base URL that is not an absolute http(s) URL.
pub fn owner_url(update: &OwnerUpdate) -> Result<String, String> {
    let base = url::Url::parse(&update.base_url).map_err(|e| format!("invalid base_url: {e}"))?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err("invalid base_url: not an http(s) URL".into());
    }
    let mut prefix = base.clone();
    prefix.set_query(None);
    prefix.set_fragment(None);
    let prefix = prefix.as_str().trim_end_matches('/').to_string();
    Ok(format!(
        "{prefix}/crm/v3/objects/{}/{}",
        update.object_type.as_str(),
        utf8_percent_encode(&update.record_external_id, SEGMENT)
    ))
}

/// The JSON body of the request.
pub fn owner_body(update: &OwnerUpdate) -> serde_json::Value {
    serde_json::json!({"properties": {"hubspot_owner_id": update.owner_external_id}})
}

#[async_trait]
impl CrmClient for HubSpotClient {
    async fn set_owner(&self, update: &OwnerUpdate) -> Result<(), CrmFailure> {
        let token = update.access_token.expose();
        let url = owner_url(update)
            .map_err(|e| CrmFailure::permanent(format!("CRM request failed: {e}")))?;
        let mut bearer = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            CrmFailure::permanent(
                "CRM request failed: the access token is not a valid header value",
            )
        })?;
        bearer.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, bearer);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let body = serde_json::to_vec(&owner_body(update))
            .map_err(|e| CrmFailure::permanent(format!("CRM request failed: {e}")))?;
        let response = self
            .http
            .send(reqwest::Method::PATCH, &url, headers, body)
            .await
            .map_err(|error| request_failure(&error, token))?;
        let status = response.status();
        // A 2xx is all we need to know: its body is never read.
        if status.is_success() {
            return Ok(());
        }
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let body = response
            .body()
            .await
            .map_err(|error| request_failure(&error, token))?;
        let error = format!(
            "CRM answered {}: {}",
            status.as_u16(),
            answer_detail(&body, token)
        );
        if status.as_u16() == 429 || status.is_server_error() {
            Err(CrmFailure::transient(error, retry_after))
        } else {
            Err(CrmFailure::permanent(error))
        }
    }
}

/// A request that got no answer: `CRM request timed out` or `CRM request failed: <detail>`
/// with the error's causes (never the URL, never the token), both retried; a refusal of the
/// outbound guard is final (`CRM request failed: base_url must not point to ...`).
fn request_failure(error: &OutboundError, token: &str) -> CrmFailure {
    let error = match error {
        OutboundError::TimedOut => return CrmFailure::transient(TIMED_OUT, None),
        OutboundError::Refused(why) => {
            return CrmFailure::permanent(format!("CRM request failed: base_url {why}"))
        }
        OutboundError::Failed(error) => error,
    };
    let detail = redact(&crate::error::ErrorChain(&error).without_urls(), token);
    CrmFailure::transient(format!("CRM request failed: {detail}"), None)
}

/// The detail of a non-2xx answer (BEHAVIOR 7): the JSON body's `message` when it is a string,
/// else the body's first 200 characters; the token redacted first.
pub fn answer_detail(body: &[u8], token: &str) -> String {
    let text = redact(&String::from_utf8_lossy(body), token);
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(&text) {
        if let Some(serde_json::Value::String(message)) = map.get("message") {
            return message.clone();
        }
    }
    text.chars().take(DETAIL_CHARS).collect()
}

/// A `Retry-After` value (RFC 9110 section 10.2.3): delay-seconds or an HTTP-date, as a
/// duration from `now` (a date in the past is zero), at most [`MAX_RETRY_AFTER`].
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let delay = match value.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => {
            let at = httpdate::parse_http_date(value).ok()?;
            at.duration_since(now).unwrap_or(Duration::ZERO)
        }
    };
    Some(delay.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::account::CrmAccessToken;
    use crate::model::object_type::ObjectType;

    fn update(base: &str, id: &str) -> OwnerUpdate {
        OwnerUpdate {
            base_url: base.into(),
            access_token: CrmAccessToken::new("tok"),
            object_type: ObjectType::Deals,
            record_external_id: id.into(),
            owner_external_id: "77".into(),
        }
    }

    #[test]
    fn the_external_id_is_one_percent_encoded_segment() {
        assert_eq!(
            owner_url(&update("http://127.0.0.1:4010", "a b/c?d#e%f+g")).unwrap(),
            "http://127.0.0.1:4010/crm/v3/objects/deals/a%20b%2Fc%3Fd%23e%25f%2Bg"
        );
        assert_eq!(
            owner_url(&update("https://api.hubapi.com/", "123-x_y.z~")).unwrap(),
            "https://api.hubapi.com/crm/v3/objects/deals/123-x_y.z~"
        );
        assert_eq!(
            owner_url(&update("http://fake.test/hubspot/?q=1", "ü")).unwrap(),
            "http://fake.test/hubspot/crm/v3/objects/deals/%C3%BC"
        );
        assert!(owner_url(&update("not a url", "1")).is_err());
    }

    #[test]
    fn the_body_names_the_hubspot_owner() {
        assert_eq!(
            owner_body(&update("http://x", "1")),
            serde_json::json!({"properties": {"hubspot_owner_id": "77"}})
        );
    }

    #[test]
    fn a_json_message_is_the_detail_else_the_first_200_characters() {
        assert_eq!(
            answer_detail(
                br#"{"status":"error","message":"Property values were not valid"}"#,
                "t0k"
            ),
            "Property values were not valid"
        );
        let long = "é".repeat(250);
        assert_eq!(answer_detail(long.as_bytes(), "t0k").chars().count(), 200);
        assert_eq!(answer_detail(b"", "t0k"), "");
        assert_eq!(
            answer_detail(br#"{"message": 5}"#, "t0k"),
            r#"{"message": 5}"#
        );
        assert_eq!(
            answer_detail(br#"{"message":"token t0k is invalid"}"#, "t0k"),
            "token [REDACTED] is invalid"
        );
    }

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
