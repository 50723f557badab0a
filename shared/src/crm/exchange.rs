//! One owner update's requests, whatever the CRM: each waits for the account's turn
//! ([`super::pace`]), goes through the outbound guard ([`crate::outbound::OutboundClient`]: the
//! URL and the addresses it resolves to checked before every request, no redirects, at most
//! 64 KiB of an answer read), and gives up at the attempt's deadline. Every answer's limit
//! headers go to the pace; every text kept from an answer is redacted (every secret the update
//! knows: the connection's and every access token granted since) and a refusal is read by the
//! adapter's classification ([`super::reading::ReadAnswers::classify`]).

use super::pace::{Deferral, Pace, BURST};
use super::port::{
    redact_all, CrmFailure, Next, OwnerUpdate, AUTHORIZATION_FAILED, RATE_LIMIT_DEFERRED, TIMED_OUT,
};
use super::reading::{cut, Classified, ReadAnswers, Remedy};
use crate::model::account::CrmSecret;
use crate::model::pace::{PaceKey, PaceRule};
use crate::outbound::{OutboundClient, OutboundError};
use crate::secrets::OpenCrmConnection;
use crate::types::ids::AccountId;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use std::time::{Duration, Instant, SystemTime};

/// Characters of an id kept as they are in a path segment: RFC 3986's unreserved set
/// (`ALPHA / DIGIT / "-" / "." / "_" / "~"`); every other byte is percent-encoded, so the id is
/// always exactly one segment (`/`, `?`, `#`, `%`, spaces and `+` included).
pub const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A base URL without its query, fragment and trailing `/` (what request paths are appended
/// to).
///
/// Errors: a base URL that is not an absolute http(s) URL.
pub fn base_prefix(base_url: &str) -> Result<String, String> {
    let mut base = url::Url::parse(base_url).map_err(|e| format!("invalid base_url: {e}"))?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err("invalid base_url: not an http(s) URL".into());
    }
    base.set_query(None);
    base.set_fragment(None);
    Ok(base.as_str().trim_end_matches('/').to_string())
}

/// One request to send.
#[derive(Debug)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The whole URL.
    pub url: String,
    /// Headers (an `Authorization` header marked sensitive, [`bearer`]).
    pub headers: HeaderMap,
    /// The body.
    pub body: Vec<u8>,
    /// Whether the body of a 2xx answer is read (a token, a page of owners); the owner update's
    /// 2xx body is never read.
    pub read_success: bool,
    /// Which host the URL is on, for a refusal's message (`base_url`, `instance_url`).
    pub host_of: &'static str,
    /// Whether it is the owner update (counted in `attempts`), not a grant or a look-up.
    pub update: bool,
}

/// A CRM's HTTP answer to one request, as far as it was read.
#[derive(Debug)]
pub struct CrmAnswer {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// At most 64 KiB of the body (empty for a 2xx answer not read).
    pub body: Vec<u8>,
}

/// A refused request: the failure and what the attempt may still do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The failure, as final as the CRM's answer makes it.
    pub failure: CrmFailure,
    /// What the attempt may do once before giving the failure up.
    pub remedy: Remedy,
}

impl From<CrmFailure> for Refusal {
    fn from(failure: CrmFailure) -> Self {
        Self {
            failure,
            remedy: Remedy::None,
        }
    }
}

/// The headers of a request presenting `token` (`Authorization: Bearer`, marked sensitive so
/// it never reaches a log line).
///
/// Errors: a token that is not a valid header value (final; nothing sent).
pub fn bearer(token: &CrmSecret) -> Result<HeaderMap, CrmFailure> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose())).map_err(|_| {
        CrmFailure::permanent("CRM request failed: the access token is not a valid header value")
    })?;
    value.set_sensitive(true);
    let mut headers = HeaderMap::new();
    headers.insert(AUTHORIZATION, value);
    Ok(headers)
}

/// One owner update in progress: where it sends, by when, what it sent and which secrets it
/// holds.
pub struct Exchange<'a> {
    http: &'a OutboundClient,
    pace: &'a Pace,
    reader: &'a dyn ReadAnswers,
    /// The update.
    pub update: &'a OwnerUpdate,
    deadline: Instant,
    updates: u32,
    secrets: Vec<String>,
}

impl<'a> Exchange<'a> {
    /// An exchange of `update` through `http`, paced by `pace`, its answers read by `reader`
    /// (the CRM's adapter), ending at `deadline`.
    pub fn new(
        http: &'a OutboundClient, pace: &'a Pace, reader: &'a dyn ReadAnswers,
        update: &'a OwnerUpdate, deadline: Instant,
    ) -> Self {
        Self {
            http,
            pace,
            reader,
            update,
            deadline,
            updates: 0,
            secrets: update
                .connection
                .credentials
                .secrets()
                .into_iter()
                .map(str::to_string)
                .collect(),
        }
    }

    /// The connection.
    pub fn connection(&self) -> &OpenCrmConnection {
        &self.update.connection
    }

    /// The account.
    pub fn account(&self) -> AccountId {
        self.update.connection.account_id
    }

    /// Update requests sent so far (or that may have reached the CRM: a timeout, a connection
    /// error), the resend included (BEHAVIOR 7 `attempts`).
    pub fn updates(&self) -> u32 {
        self.updates
    }

    /// `secret` is redacted from every text kept from now on (an access token just granted).
    pub fn keep_secret(&mut self, secret: &str) {
        self.secrets.push(secret.to_string());
    }

    /// `text` with every secret the exchange knows redacted.
    pub fn redact(&self, text: &str) -> String {
        let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
        redact_all(text, &secrets)
    }

    /// Whether the outbound guard allows calling `url` (Salesforce's `instance_url`).
    ///
    /// Errors: why not.
    pub fn check_url(&self, url: &str) -> Result<(), String> {
        crate::outbound::OutboundUrl::parse(url, self.http.policy()).map(|_| ())
    }

    fn key(&self) -> PaceKey {
        PaceKey {
            account: self.account(),
            provider: self.update.connection.provider,
        }
    }

    fn rule(&self) -> PaceRule {
        PaceRule::per_second(
            self.reader.requests_per_second(&self.update.connection),
            BURST,
        )
    }

    /// Time left until the deadline; a failure `CRM request timed out` (retried) when none.
    fn time_left(&self) -> Result<Duration, CrmFailure> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(CrmFailure::transient(TIMED_OUT, None));
        }
        Ok(left)
    }

    /// Sends `request` in the account's turn, before the deadline.
    ///
    /// Errors: deferred (the turn too far), refused by the guard (final, nothing sent), timed
    /// out, or a connection or protocol error (both retried).
    pub async fn send(&mut self, request: Request) -> Result<CrmAnswer, CrmFailure> {
        self.time_left()?;
        if let Err(deferral) = self.pace.turn(self.key(), self.rule(), self.deadline).await {
            let (error, wait) = match deferral {
                Deferral::Turn(wait) => (RATE_LIMIT_DEFERRED.to_string(), wait),
                Deferral::ApiUsage { used, limit, wait } => (
                    format!("Salesforce API usage at {used}/{limit}: request deferred"),
                    wait,
                ),
            };
            return Err(CrmFailure {
                error,
                next: Next::Wait { wait },
                updates: 0,
            });
        }
        let left = self.time_left()?;
        if request.update {
            self.updates += 1;
        }
        let sending = self
            .http
            .send(request.method, &request.url, request.headers, request.body);
        let response = match tokio::time::timeout(left, sending).await {
            Err(_) => return Err(CrmFailure::transient(TIMED_OUT, None)),
            Ok(Ok(response)) => response,
            Ok(Err(OutboundError::Refused(why))) => {
                // Nothing was sent.
                self.updates -= u32::from(request.update);
                return Err(CrmFailure::permanent(format!(
                    "CRM request failed: {} {why}",
                    request.host_of
                )));
            }
            Ok(Err(error)) => return Err(self.request_failure(&error)),
        };
        let signals = self
            .reader
            .limits(response.headers(), &self.update.connection);
        self.pace.note(self.key(), self.rule(), &signals).await;
        let status = response.status();
        let headers = response.headers().clone();
        let body = if status.is_success() && !request.read_success {
            Vec::new()
        } else {
            let left = self.time_left()?;
            match tokio::time::timeout(left, response.body()).await {
                Err(_) => return Err(CrmFailure::transient(TIMED_OUT, None)),
                Ok(Ok(body)) => body,
                Ok(Err(error)) => return Err(self.request_failure(&error)),
            }
        };
        Ok(CrmAnswer {
            status,
            headers,
            body,
        })
    }

    /// A request that got no (whole) answer: `CRM request timed out` or `CRM request failed:
    /// <detail>` with the error's causes (never the URL, never a secret), both retried.
    fn request_failure(&self, error: &OutboundError) -> CrmFailure {
        let error = match error {
            OutboundError::TimedOut => return CrmFailure::transient(TIMED_OUT, None),
            OutboundError::Refused(why) => {
                return CrmFailure::permanent(format!("CRM request failed: {why}"))
            }
            OutboundError::Failed(error) => error,
        };
        let detail = self.redact(&crate::error::ErrorChain(&error).without_urls());
        CrmFailure::transient(format!("CRM request failed: {}", cut(&detail)), None)
    }

    /// Posts an OAuth 2.0 token request (RFC 6749 section 4: the form `form`, already
    /// URL-encoded) to `url` on the connection's `base_url` host and answers the 2xx answer.
    ///
    /// Errors: a 400, 401 or 403 is the CRM refusing the grant, final
    /// ([`AUTHORIZATION_FAILED`], logged at warn with `refused`, e.g. "HubSpot refused to refresh
    /// the OAuth access token"; the body is never logged, it may echo a secret); any other
    /// non-2xx answer is [`Self::refusal`]'s failure; a request that fails is [`Self::send`]'s.
    pub async fn post_token_form(
        &mut self, url: String, form: String, refused: &'static str,
    ) -> Result<CrmAnswer, CrmFailure> {
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        let answer = self
            .send(Request {
                method: Method::POST,
                url,
                headers,
                body: form.into_bytes(),
                read_success: true,
                host_of: "base_url",
                update: false,
            })
            .await?;
        if answer.status.is_success() {
            return Ok(answer);
        }
        if matches!(answer.status.as_u16(), 400 | 401 | 403) {
            tracing::warn!(
                account_id = %self.account(),
                status = answer.status.as_u16(),
                "{refused}"
            );
            return Err(CrmFailure::permanent(AUTHORIZATION_FAILED));
        }
        Err(self.refusal(&answer).failure)
    }

    /// Sends the owner update (BEHAVIOR 7): `PATCH url` with the JSON `body` and `headers` (the
    /// bearer token and whatever the CRM needs besides; `Content-Type: application/json` is
    /// added), on the host named by `host_of` (`base_url` or `instance_url`). A 2xx is all that
    /// is needed: its body is never read.
    ///
    /// Errors: a non-2xx answer is [`Self::refusal`]; a request that fails is [`Self::send`]'s.
    pub async fn patch_owner(
        &mut self, url: String, mut headers: HeaderMap, body: &serde_json::Value,
        host_of: &'static str,
    ) -> Result<(), Refusal> {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let body = serde_json::to_vec(body)
            .map_err(|e| CrmFailure::permanent(format!("CRM request failed: {e}")))?;
        let answer = self
            .send(Request {
                method: Method::PATCH,
                url,
                headers,
                body,
                read_success: false,
                host_of,
                update: true,
            })
            .await?;
        if answer.status.is_success() {
            return Ok(());
        }
        Err(self.refusal(&answer))
    }

    /// The refusal of a non-2xx `answer` (BEHAVIOR 7): `CRM answered <status>: <detail>`, the
    /// detail as the adapter reads the (redacted) body, and what follows.
    pub fn refusal(&self, answer: &CrmAnswer) -> Refusal {
        let status = answer.status.as_u16();
        let text = self.redact(&String::from_utf8_lossy(&answer.body));
        let Classified {
            detail,
            next,
            remedy,
        } = self
            .reader
            .classify(status, &answer.headers, &text, SystemTime::now());
        Refusal {
            failure: CrmFailure {
                error: format!("CRM answered {status}: {}", cut(&detail)),
                next,
                updates: 0,
            },
            remedy,
        }
    }
}
