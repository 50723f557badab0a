//! The HubSpot adapter of the CRM port (BEHAVIOR 7, "Request" and "HubSpot as it is"). One owner
//! update is, in this order, as needed:
//!
//! 1. an access token: a private app's as stored, or an OAuth app's from the refresh-token grant
//!    (`POST {base_url}/oauth/v1/token`, form `grant_type=refresh_token`, `client_id`,
//!    `client_secret`, `refresh_token`; RFC 6749 section 6), kept by the instance until 60 s
//!    before its `expires_in` and shared by its concurrent syncs, one refresh at a time;
//! 2. the owner id: the member's `external_id`, or the active owner with the member's e-mail
//!    (`GET {base_url}/crm/v3/owners?email=<e-mail>`, following `paging.next.after`), kept per
//!    account and member for at most an hour (a lookup that found nobody too), one lookup at a
//!    time per member;
//! 3. `PATCH {base_url}/crm/v3/objects/{type}/{id}[?idProperty=<name>]` with
//!    `{"properties": {"hubspot_owner_id": "<owner id>"}}`.
//!
//! A 401 of an OAuth app's request refreshes the token once and sends once more; a 400 naming
//! `INVALID_OWNER_ID` for an owner id that came from the owners API forgets it, looks it up once
//! more and sends once more. Every request waits for the account's turn ([`super::pace`]) and
//! its answer's `X-HubSpot-RateLimit-*` headers are read there.
//!
//! Requests go through the outbound guard ([`crate::outbound::OutboundClient`]: the base URL
//! and the addresses it resolves to are checked before every request, no redirects, a body read
//! at most to 64 KiB, and the owner update's 2xx body never read), built once per instance with
//! BEHAVIOR 7's 3 s timeout on each exchange.

use super::memo::Memo;
use super::pace::{header_number, Pace, DAILY_REMAINING, INTERVAL_MILLISECONDS};
use super::port::{
    redact_all, CrmClient, CrmFailure, Next, Owner, OwnerUpdate, AUTHORIZATION_FAILED,
    NO_OWNER_WITH_EMAIL, RATE_LIMIT_DEFERRED, REQUEST_TIMEOUT, TIMED_OUT,
};
use crate::model::account::{CrmCredentials, CrmSecret, OAuthApp};
use crate::outbound::{ClientBuildError, OutboundClient, OutboundError, OutboundPolicy};
use crate::types::ids::{AccountId, MemberId};
use async_trait::async_trait;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

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

/// Bytes of an answer's body read at most (a JSON `message`, a token, an owners page fit).
const MAX_BODY_BYTES: usize = 64 * 1024;

/// The longest `Retry-After` honoured; a longer one is cut to this (BEHAVIOR 7: 477's wait is at
/// most 24 h).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// The least wait after HubSpot's 423 Locked (its error guide: at least 2 s).
pub const LOCKED_WAIT: Duration = Duration::from_secs(2);

/// Pages of the owners API read at most for one lookup.
const MAX_OWNER_PAGES: usize = 20;

/// What a HubSpot client of one instance remembers, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubSpotSettings {
    /// How long an owner found by e-mail (or found missing) is remembered (BEHAVIOR 7: at most
    /// 1 hour).
    pub owner_ttl: Duration,
    /// How long before its `expires_in` an OAuth access token is replaced (BEHAVIOR 7: 60 s).
    pub token_margin: Duration,
    /// Requests per second per account (BEHAVIOR 7: 10).
    pub requests_per_second: u32,
}

impl Default for HubSpotSettings {
    fn default() -> Self {
        Self {
            owner_ttl: Duration::from_secs(3600),
            token_margin: Duration::from_secs(60),
            requests_per_second: super::pace::REQUESTS_PER_SECOND,
        }
    }
}

/// An OAuth access token the instance keeps.
#[derive(Debug, Clone)]
struct KeptToken {
    token: CrmSecret,
    /// The refresh token it came from (a connection provisioned anew does not use it).
    refresh_token: CrmSecret,
    /// When it is replaced: 60 s before it expires.
    replace_at: Instant,
}

/// An owners API lookup's result for one member.
#[derive(Debug, Clone)]
struct FoundOwner {
    /// The e-mail looked up (a member whose e-mail changed is looked up again).
    email: String,
    /// The active owner's id, `None` when there is none.
    id: Option<String>,
}

/// HubSpot, through the outbound guard: the HTTP client, the account's pace, and the tokens and
/// owners the instance keeps.
#[derive(Debug)]
pub struct HubSpotClient {
    http: OutboundClient,
    settings: HubSpotSettings,
    pace: Pace,
    tokens: Memo<(AccountId, String), KeptToken>,
    owners: Memo<(AccountId, MemberId), FoundOwner>,
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
        Self::with_settings(http, HubSpotSettings::default())
    }

    /// A client over `http` keeping owners and tokens as `settings` say (tests shorten them).
    pub fn with_settings(http: OutboundClient, settings: HubSpotSettings) -> Self {
        Self {
            http,
            settings,
            pace: Pace::new(settings.requests_per_second),
            tokens: Memo::default(),
            owners: Memo::default(),
        }
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

/// The base URL without its query, fragment and trailing `/`.
///
/// Errors: a base URL that is not an absolute http(s) URL.
fn base_prefix(base_url: &str) -> Result<String, String> {
    let mut base = url::Url::parse(base_url).map_err(|e| format!("invalid base_url: {e}"))?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err("invalid base_url: not an http(s) URL".into());
    }
    base.set_query(None);
    base.set_fragment(None);
    Ok(base.as_str().trim_end_matches('/').to_string())
}

/// The request URL: `{base_url}/crm/v3/objects/{type}/{external_id}`, the id percent-encoded as
/// one path segment, with `?idProperty=<name>` when the connection names the type's id property.
/// A trailing `/` of the base URL is dropped; its query and fragment too.
///
/// Errors: a base URL that is not an absolute http(s) URL.
pub fn owner_url(update: &OwnerUpdate) -> Result<String, String> {
    let prefix = base_prefix(&update.connection.base_url)?;
    let mut url = format!(
        "{prefix}/crm/v3/objects/{}/{}",
        update.object_type.as_str(),
        utf8_percent_encode(&update.record_external_id, SEGMENT)
    );
    if let Some(property) = update.id_property() {
        url.push('?');
        url.push_str(
            &form_urlencoded::Serializer::new(String::new())
                .append_pair("idProperty", property)
                .finish(),
        );
    }
    Ok(url)
}

/// The owners API URL for `email`, from the page `after` when given.
fn owners_url(prefix: &str, email: &str, after: Option<&str>) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("email", email);
    if let Some(after) = after {
        query.append_pair("after", after);
    }
    format!("{prefix}/crm/v3/owners?{}", query.finish())
}

/// The JSON body of the owner update.
pub fn owner_body(owner_id: &str) -> serde_json::Value {
    serde_json::json!({"properties": {"hubspot_owner_id": owner_id}})
}

/// One page of the owners API (HubSpot's `CollectionResponsePublicOwnerForwardPaging`).
#[derive(Debug, Deserialize)]
struct OwnersPage {
    results: Vec<PublicOwner>,
    #[serde(default)]
    paging: Option<Paging>,
}

#[derive(Debug, Deserialize)]
struct PublicOwner {
    id: String,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    archived: bool,
}

#[derive(Debug, Deserialize)]
struct Paging {
    #[serde(default)]
    next: Option<NextPage>,
}

#[derive(Debug, Deserialize)]
struct NextPage {
    after: String,
}

/// The token endpoint's answer (RFC 6749 section 5.1; HubSpot's `AccessTokenResponse`).
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: u64,
}

/// An answer as far as it was read.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

/// One owner update in progress: what it sent and which secrets it holds.
struct Exchange<'a> {
    client: &'a HubSpotClient,
    update: &'a OwnerUpdate,
    prefix: String,
    /// Whether a request reached the CRM.
    sent: bool,
    /// Every secret this exchange knows (redacted from every text kept).
    secrets: Vec<String>,
    /// The last answer was a 401.
    unauthorized: bool,
    /// The last answer was a 400 naming `INVALID_OWNER_ID`.
    invalid_owner: bool,
}

impl<'a> Exchange<'a> {
    fn account(&self) -> AccountId {
        self.update.connection.account_id
    }

    fn redact(&self, text: &str) -> String {
        let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
        redact_all(text, &secrets)
    }

    /// Sends one request in the account's turn; reads the body of a 2xx answer when
    /// `read_success` (always that of another answer).
    async fn send(
        &mut self, method: Method, url: &str, headers: HeaderMap, body: Vec<u8>, read_success: bool,
    ) -> Result<Answer, CrmFailure> {
        self.unauthorized = false;
        self.invalid_owner = false;
        if let Err(wait) = self.client.pace.turn(self.account()).await {
            return Err(CrmFailure {
                error: RATE_LIMIT_DEFERRED.into(),
                next: Next::Deferred { wait },
                sent: self.sent,
            });
        }
        let response = match self.client.http.send(method, url, headers, body).await {
            Ok(response) => response,
            Err(OutboundError::Refused(why)) => {
                return Err(
                    CrmFailure::permanent(format!("CRM request failed: base_url {why}"))
                        .sent(self.sent),
                )
            }
            Err(error) => {
                self.sent = true;
                return Err(self.request_failure(&error));
            }
        };
        self.sent = true;
        self.client
            .pace
            .note_headers(self.account(), response.headers());
        let status = response.status();
        let headers = response.headers().clone();
        let body = if status.is_success() && !read_success {
            Vec::new()
        } else {
            response
                .body()
                .await
                .map_err(|error| self.request_failure(&error))?
        };
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// A request that got no (whole) answer: `CRM request timed out` or `CRM request failed:
    /// <detail>` with the error's causes (never the URL, never a secret), both retried.
    fn request_failure(&self, error: &OutboundError) -> CrmFailure {
        let error = match error {
            OutboundError::TimedOut => return CrmFailure::transient(TIMED_OUT, None).sent(true),
            OutboundError::Refused(why) => {
                return CrmFailure::permanent(format!("CRM request failed: base_url {why}"))
                    .sent(self.sent)
            }
            OutboundError::Failed(error) => error,
        };
        let detail = self.redact(&crate::error::ErrorChain(&error).without_urls());
        CrmFailure::transient(format!("CRM request failed: {detail}"), None).sent(true)
    }

    /// The failure of a non-2xx answer (BEHAVIOR 7): `CRM answered <status>: <detail>` and what
    /// follows it.
    fn failure(&mut self, answer: &Answer) -> CrmFailure {
        let status = answer.status.as_u16();
        let text = self.redact(&String::from_utf8_lossy(&answer.body));
        let error = format!("CRM answered {status}: {}", detail_of(&text));
        self.unauthorized = status == 401;
        self.invalid_owner = status == 400 && text.contains("INVALID_OWNER_ID");
        CrmFailure {
            error,
            next: next_after(status, &answer.headers, &text, SystemTime::now()),
            sent: true,
        }
    }

    fn bearer(token: &CrmSecret) -> Result<HeaderMap, CrmFailure> {
        let mut bearer =
            HeaderValue::from_str(&format!("Bearer {}", token.expose())).map_err(|_| {
                CrmFailure::permanent(
                    "CRM request failed: the access token is not a valid header value",
                )
            })?;
        bearer.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, bearer);
        Ok(headers)
    }

    /// The access token to present: a private app's, or an OAuth app's kept one, refreshed when
    /// missing, about to expire, or `stale` (the one a 401 refused).
    async fn access_token(&mut self, stale: Option<&CrmSecret>) -> Result<CrmSecret, CrmFailure> {
        let app = match &self.update.connection.credentials {
            CrmCredentials::PrivateApp(token) => return Ok(token.clone()),
            CrmCredentials::OAuth(app) => app.clone(),
        };
        let client = self.client;
        let key = (self.account(), app.client_id.clone());
        let kept = client
            .tokens
            .get_or_load(
                &key,
                |kept| {
                    kept.value.replace_at > Instant::now()
                        && kept.value.refresh_token == app.refresh_token
                        && Some(&kept.value.token) != stale
                },
                || self.refresh(&app),
            )
            .await?;
        self.secrets.push(kept.token.expose().to_string());
        Ok(kept.token)
    }

    /// The refresh-token grant (BEHAVIOR 7 "OAuth apps"; RFC 6749 section 6).
    async fn refresh(&mut self, app: &OAuthApp) -> Result<KeptToken, CrmFailure> {
        let url = format!("{}/oauth/v1/token", self.prefix);
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "refresh_token")
            .append_pair("client_id", &app.client_id)
            .append_pair("client_secret", app.client_secret.expose())
            .append_pair("refresh_token", app.refresh_token.expose())
            .finish();
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        let asked = Instant::now();
        let answer = self
            .send(Method::POST, &url, headers, form.into_bytes(), true)
            .await?;
        if !answer.status.is_success() {
            let failure = self.failure(&answer);
            if matches!(answer.status.as_u16(), 400 | 401 | 403) {
                tracing::warn!(
                    account_id = %self.account(),
                    status = answer.status.as_u16(),
                    "HubSpot refused to refresh the OAuth access token"
                );
                return Err(CrmFailure::permanent(AUTHORIZATION_FAILED).sent(true));
            }
            return Err(failure);
        }
        let token: TokenAnswer = serde_json::from_slice(&answer.body).map_err(|_| {
            CrmFailure::transient(
                "CRM request failed: the token endpoint answered no access_token",
                None,
            )
            .sent(true)
        })?;
        self.secrets.push(token.access_token.clone());
        tracing::info!(
            account_id = %self.account(),
            expires_in = token.expires_in,
            "HubSpot OAuth access token refreshed"
        );
        let lifetime = Duration::from_secs(token.expires_in);
        Ok(KeptToken {
            token: CrmSecret::new(token.access_token),
            refresh_token: app.refresh_token.clone(),
            replace_at: asked + lifetime.saturating_sub(self.client.settings.token_margin),
        })
    }

    /// The owner id to set and whether it came from the owners API; a kept one equal to
    /// `forget` is looked up again.
    async fn owner_id(
        &mut self, token: &CrmSecret, forget: Option<&str>,
    ) -> Result<(String, bool), CrmFailure> {
        let (member_id, email) = match &self.update.owner {
            Owner::Id(id) => return Ok((id.clone(), false)),
            Owner::ByEmail { member_id, email } => (*member_id, email.clone()),
        };
        let client = self.client;
        let ttl = client.settings.owner_ttl;
        let found = client
            .owners
            .get_or_load(
                &(self.account(), member_id),
                |kept| {
                    kept.at.elapsed() < ttl
                        && kept.value.email == email
                        && (forget.is_none() || kept.value.id.as_deref() != forget)
                },
                || self.look_up(token, &email),
            )
            .await?;
        match found.id {
            Some(id) => Ok((id, true)),
            None => Err(CrmFailure::permanent(NO_OWNER_WITH_EMAIL).sent(self.sent)),
        }
    }

    /// The owners API: the first active owner whose e-mail is `email`, page after page.
    async fn look_up(&mut self, token: &CrmSecret, email: &str) -> Result<FoundOwner, CrmFailure> {
        let mut after: Option<String> = None;
        for _ in 0..MAX_OWNER_PAGES {
            let url = owners_url(&self.prefix, email, after.as_deref());
            let answer = self
                .send(Method::GET, &url, Self::bearer(token)?, Vec::new(), true)
                .await?;
            if !answer.status.is_success() {
                return Err(self.failure(&answer));
            }
            let page: OwnersPage = serde_json::from_slice(&answer.body).map_err(|_| {
                CrmFailure::transient("CRM request failed: unreadable owners page", None).sent(true)
            })?;
            if let Some(owner) = page.results.iter().find(|o| {
                !o.archived
                    && o.email
                        .as_deref()
                        .is_some_and(|e| e.eq_ignore_ascii_case(email))
            }) {
                return Ok(FoundOwner {
                    email: email.to_string(),
                    id: Some(owner.id.clone()),
                });
            }
            match page.paging.and_then(|p| p.next) {
                Some(next) => after = Some(next.after),
                None => break,
            }
        }
        tracing::info!(
            account_id = %self.account(),
            "the owners API has no active owner with the member's e-mail"
        );
        Ok(FoundOwner {
            email: email.to_string(),
            id: None,
        })
    }

    /// The owner update itself.
    async fn patch(&mut self, token: &CrmSecret, owner_id: &str) -> Result<(), CrmFailure> {
        let url = owner_url(self.update)
            .map_err(|e| CrmFailure::permanent(format!("CRM request failed: {e}")))?;
        let mut headers = Self::bearer(token)?;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let body = serde_json::to_vec(&owner_body(owner_id))
            .map_err(|e| CrmFailure::permanent(format!("CRM request failed: {e}")))?;
        let answer = self.send(Method::PATCH, &url, headers, body, false).await?;
        // A 2xx is all we need to know: its body is never read.
        if answer.status.is_success() {
            return Ok(());
        }
        Err(self.failure(&answer))
    }

    /// Whether a 401 may refresh the token and send once more (an OAuth app, not done yet).
    fn may_refresh(&self, refreshed: &mut bool) -> bool {
        let oauth = matches!(self.update.connection.credentials, CrmCredentials::OAuth(_));
        if self.unauthorized && oauth && !*refreshed {
            *refreshed = true;
            return true;
        }
        false
    }

    /// The whole update: token, owner, PATCH, with one refresh after a 401 and one lookup after
    /// an `INVALID_OWNER_ID` of a looked-up owner.
    async fn run(&mut self) -> Result<(), CrmFailure> {
        let mut token = self.access_token(None).await?;
        let mut refreshed = false;
        let mut looked_again = false;
        let mut forget: Option<String> = None;
        loop {
            let (owner_id, looked_up) = match self.owner_id(&token, forget.as_deref()).await {
                Ok(owner) => owner,
                Err(_) if self.may_refresh(&mut refreshed) => {
                    token = self.access_token(Some(&token)).await?;
                    continue;
                }
                Err(failure) => return Err(failure),
            };
            match self.patch(&token, &owner_id).await {
                Ok(()) => return Ok(()),
                Err(_) if self.may_refresh(&mut refreshed) => {
                    token = self.access_token(Some(&token)).await?;
                }
                Err(_) if self.invalid_owner && looked_up && !looked_again => {
                    looked_again = true;
                    tracing::info!(
                        account_id = %self.account(),
                        "HubSpot refused the owner found by e-mail (INVALID_OWNER_ID); looking it up again"
                    );
                    forget = Some(owner_id);
                }
                Err(failure) => return Err(failure),
            }
        }
    }
}

#[async_trait]
impl CrmClient for HubSpotClient {
    async fn set_owner(&self, update: &OwnerUpdate) -> Result<(), CrmFailure> {
        let prefix = base_prefix(&update.connection.base_url)
            .map_err(|e| CrmFailure::permanent(format!("CRM request failed: {e}")))?;
        let mut exchange = Exchange {
            client: self,
            update,
            prefix,
            sent: false,
            secrets: update
                .connection
                .credentials
                .secrets()
                .into_iter()
                .map(str::to_string)
                .collect(),
            unauthorized: false,
            invalid_owner: false,
        };
        exchange.run().await.map_err(|failure| CrmFailure {
            // Every text kept is redacted once more, whatever produced it.
            error: exchange.redact(&failure.error),
            ..failure
        })
    }
}

/// What follows a non-2xx answer `status` with `headers` and the (redacted) body `text`
/// (BEHAVIOR 7 and "HubSpot as it is"):
///
/// - 429: a `DAILY` limit (the body's `policyName`, or `X-HubSpot-RateLimit-Daily-Remaining: 0`)
///   waits for `Retry-After` or the next 00:00 UTC without spending a retry; any other 429 is
///   retried, after at least its `Retry-After` or else the window of
///   `X-HubSpot-RateLimit-Interval-Milliseconds`;
/// - 423 Locked: retried after at least 2 s (or its longer `Retry-After`);
/// - 477 Migration in progress and 5xx: retried, after at least their `Retry-After`;
/// - any other status: final.
pub fn next_after(status: u16, headers: &HeaderMap, text: &str, now: SystemTime) -> Next {
    let retry_after = headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, now));
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

/// The detail of a non-2xx answer whose (redacted) body is `text` (BEHAVIOR 7): the JSON body's
/// `message` when it is a string, else the body's first 200 characters.
fn detail_of(text: &str) -> String {
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(text) {
        if let Some(serde_json::Value::String(message)) = map.get("message") {
            return message.clone();
        }
    }
    text.chars().take(DETAIL_CHARS).collect()
}

/// The detail of a non-2xx answer (BEHAVIOR 7): the JSON body's `message` when it is a string,
/// else the body's first 200 characters; `secrets` redacted first.
pub fn answer_detail(body: &[u8], secrets: &[&str]) -> String {
    detail_of(&redact_all(&String::from_utf8_lossy(body), secrets))
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
    use crate::model::object_type::ObjectType;
    use crate::secrets::OpenCrmConnection;

    fn update(base: &str, id: &str) -> OwnerUpdate {
        OwnerUpdate {
            connection: OpenCrmConnection {
                account_id: uuid::Uuid::nil().into(),
                base_url: base.into(),
                credentials: CrmCredentials::PrivateApp(CrmSecret::new("tok")),
                id_properties: Default::default(),
            },
            object_type: ObjectType::Deals,
            record_external_id: id.into(),
            owner: Owner::Id("77".into()),
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
    fn an_id_property_goes_out_as_the_id_property_parameter() {
        let mut u = update("https://api.hubapi.com", "lead@prospect.example");
        u.connection.id_properties =
            crate::model::account::IdProperties::new([(ObjectType::Deals, "deal_key".into())]);
        assert_eq!(
            owner_url(&u).unwrap(),
            "https://api.hubapi.com/crm/v3/objects/deals/lead%40prospect.example?idProperty=deal_key"
        );
        assert_eq!(
            owners_url("https://api.hubapi.com", "a+b@x.example", Some("42")),
            "https://api.hubapi.com/crm/v3/owners?email=a%2Bb%40x.example&after=42"
        );
    }

    #[test]
    fn the_body_names_the_hubspot_owner() {
        assert_eq!(
            owner_body("77"),
            serde_json::json!({"properties": {"hubspot_owner_id": "77"}})
        );
    }

    #[test]
    fn a_json_message_is_the_detail_else_the_first_200_characters() {
        assert_eq!(
            answer_detail(
                br#"{"status":"error","message":"Property values were not valid"}"#,
                &["t0k"]
            ),
            "Property values were not valid"
        );
        let long = "é".repeat(250);
        assert_eq!(
            answer_detail(long.as_bytes(), &["t0k"]).chars().count(),
            200
        );
        assert_eq!(answer_detail(b"", &["t0k"]), "");
        assert_eq!(
            answer_detail(br#"{"message": 5}"#, &["t0k"]),
            r#"{"message": 5}"#
        );
        assert_eq!(
            answer_detail(br#"{"message":"token t0k is invalid"}"#, &["t0k"]),
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
    }
}
