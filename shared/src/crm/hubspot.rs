//! The HubSpot adapter of the CRM port (BEHAVIOR 7, "Request"): HubSpot CRM v3's
//! `PATCH {base_url}/crm/v3/objects/{type}/{id}` with
//! `{"properties": {"hubspot_owner_id": "<owner's external_id>"}}`.
//!
//! One [`reqwest::Client`] per instance, built at cold start: rustls with the aws-lc-rs provider
//! (the crypto the AWS SDK already links) and the Mozilla root store compiled in (no trust
//! store read from disk at start), a 3 s timeout on the whole exchange (connection, request,
//! answer), and no redirects (a redirect is an answer, not followed with the token).

use super::port::{redact, CrmClient, CrmFailure, OwnerUpdate, REQUEST_TIMEOUT, TIMED_OUT};
use async_trait::async_trait;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use std::sync::Arc;
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

/// Bytes of an answer's body read at most (a JSON `message` is found in less).
const MAX_BODY_BYTES: usize = 64 * 1024;

/// The longest `Retry-After` honoured; a longer one is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// HubSpot CRM v3 over HTTPS (or HTTP, for a local fake).
#[derive(Debug, Clone)]
pub struct HubSpotClient {
    http: reqwest::Client,
}

/// The HTTP client could not be built (a TLS set-up failure; never expected).
#[derive(Debug, thiserror::Error)]
#[error("cannot build the CRM HTTP client: {0}")]
pub struct ClientBuildError(String);

impl HubSpotClient {
    /// A client with BEHAVIOR 7's 3 s timeout.
    ///
    /// Errors: the TLS configuration or the client cannot be built.
    pub fn new() -> Result<Self, ClientBuildError> {
        Self::with_timeout(REQUEST_TIMEOUT)
    }

    /// A client whose requests time out after `timeout` (connection and answer included).
    ///
    /// Errors: as [`Self::new`].
    pub fn with_timeout(timeout: Duration) -> Result<Self, ClientBuildError> {
        ensure_crypto_provider();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientBuildError(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("account-routing-api/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientBuildError(e.to_string()))?;
        Ok(Self { http })
    }
}

/// Makes aws-lc-rs (the crypto the AWS SDK links) rustls' process-wide default provider when
/// none is set, so every rustls client of the process (reqwest's included, whose own default
/// would be `ring`, not linked here) finds one. Idempotent.
pub fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another installer is fine: a provider is installed either way.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
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
        let body = serde_json::to_vec(&owner_body(update))
            .map_err(|e| CrmFailure::permanent(format!("CRM request failed: {e}")))?;
        let sent = self
            .http
            .patch(url)
            .header(AUTHORIZATION, bearer)
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) => return Err(request_failure(&error, token)),
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let body = match read_body(response).await {
            Ok(body) => body,
            Err(error) => return Err(request_failure(&error, token)),
        };
        if status.is_success() {
            return Ok(());
        }
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

/// At most [`MAX_BODY_BYTES`] of the answer's body.
async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = MAX_BODY_BYTES.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_BODY_BYTES {
            break;
        }
    }
    Ok(body)
}

/// A request that got no answer: `CRM request timed out`, or `CRM request failed: <detail>`
/// with the error's causes (never the URL, never the token). Both are retried.
fn request_failure(error: &reqwest::Error, token: &str) -> CrmFailure {
    if error.is_timeout() {
        return CrmFailure::transient(TIMED_OUT, None);
    }
    let mut causes = Vec::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = current {
        let text = match cause.downcast_ref::<reqwest::Error>() {
            Some(e) => {
                // reqwest's message without the URL.
                let mut e = e.to_string();
                if let Some(at) = e.find(" for url (") {
                    e.truncate(at);
                }
                e
            }
            None => cause.to_string(),
        };
        if !text.is_empty() && causes.last() != Some(&text) {
            causes.push(text);
        }
        current = cause.source();
    }
    let detail = redact(&causes.join(": "), token);
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
