//! The HubSpot adapter (BEHAVIOR 7, "Request" and "HubSpot as it is"). One owner update is, in
//! this order, as needed:
//!
//! 1. an access token: a private app's as stored, or an OAuth app's from the refresh-token grant
//!    (`POST {base_url}/oauth/v1/token`, form `grant_type=refresh_token`, `client_id`,
//!    `client_secret`, `refresh_token`; RFC 6749 section 6), kept until 60 s before its
//!    `expires_in` (at most 24 h);
//! 2. the owner id: the member's `external_id`, or the active owner with the member's e-mail
//!    (`GET {base_url}/crm/v3/owners?email=<e-mail>`, following `paging.next.after`);
//! 3. `PATCH {base_url}/crm/v3/objects/{type}/{id}[?idProperty=<name>]` with
//!    `{"properties": {"hubspot_owner_id": "<owner id>"}}`.
//!
//! How answers read is [`answers`]: a 401 takes a new token, a 400 naming `INVALID_OWNER_ID`
//! looks a found owner up again, 423, 477, 429 and 5xx are retried, a `DAILY` 429 waits.

pub mod answers;

use super::adapter::{CrmAdapter, Session};
use super::exchange::{base_prefix, bearer, Exchange, Refusal, Request, SEGMENT};
use super::port::{CrmFailure, OwnerUpdate, AUTHORIZATION_FAILED, NO_OWNER_WITH_EMAIL};
use super::reading::{Classified, PaceSignal, ReadAnswers};
use crate::model::account::{CrmCredentials, CrmProvider, CrmSecret, OAuthApp};
use crate::secrets::OpenCrmConnection;
use async_trait::async_trait;
use percent_encoding::utf8_percent_encode;
use reqwest::header::HeaderMap;
use reqwest::Method;
use serde::Deserialize;
use std::time::{Duration, Instant, SystemTime};

/// Pages of the owners API read at most for one look-up.
const MAX_OWNER_PAGES: usize = 20;

/// Requests per second per account when the connection names none (BEHAVIOR 7).
pub const REQUESTS_PER_SECOND: u32 = 10;

/// The request URL: `{base_url}/crm/v3/objects/{type}/{external_id}`, the id percent-encoded as
/// one path segment, with `?idProperty=<name>` when the connection names the type's id property.
/// A trailing `/` of the base URL is dropped; its query and fragment too.
///
/// Errors: a base URL that is not an absolute http(s) URL.
pub fn owner_url(update: &OwnerUpdate) -> Result<String, String> {
    let prefix = base_prefix(&update.connection.base_url)?;
    Ok(owner_url_at(&prefix, update))
}

fn owner_url_at(prefix: &str, update: &OwnerUpdate) -> String {
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
    url
}

/// The owners API URL for `email`, from the page `after` when given.
pub fn owners_url(prefix: &str, email: &str, after: Option<&str>) -> String {
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
pub struct OwnersPage {
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

impl OwnersPage {
    /// A page from an answer's body.
    ///
    /// Errors: a body that is not an owners page.
    pub fn parse(body: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(body)
    }

    /// The first owner of the page that is active and has `email` (case aside).
    pub fn active_with(&self, email: &str) -> Option<&str> {
        self.results
            .iter()
            .find(|o| {
                !o.archived
                    && o.email
                        .as_deref()
                        .is_some_and(|e| e.eq_ignore_ascii_case(email))
            })
            .map(|o| o.id.as_str())
    }

    /// The cursor of the next page, if any.
    pub fn next_after(&self) -> Option<&str> {
        self.paging
            .as_ref()
            .and_then(|p| p.next.as_ref())
            .map(|n| n.after.as_str())
    }
}

/// The token endpoint's answer (RFC 6749 section 5.1; HubSpot's `AccessTokenResponse`).
#[derive(Deserialize)]
pub struct TokenAnswer {
    /// The access token.
    pub access_token: String,
    /// Its lifetime in seconds (any number HubSpot sends; clamped when kept).
    pub expires_in: u64,
}

impl TokenAnswer {
    /// A token answer from a body.
    ///
    /// Errors: a body that is not a token answer.
    pub fn parse(body: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(body)
    }

    /// The lifetime (at most [`super::adapter::MAX_TOKEN_LIFETIME`]).
    pub fn lifetime(&self) -> Duration {
        Duration::from_secs(self.expires_in).min(super::adapter::MAX_TOKEN_LIFETIME)
    }
}

/// HubSpot (see the module's doc).
#[derive(Debug, Clone, Copy)]
pub struct HubSpot {
    /// How long before its `expires_in` an access token is replaced (BEHAVIOR 7: 60 s).
    pub token_margin: Duration,
}

impl Default for HubSpot {
    fn default() -> Self {
        Self {
            token_margin: Duration::from_secs(60),
        }
    }
}

fn prefix_of(connection: &OpenCrmConnection) -> Result<String, CrmFailure> {
    base_prefix(&connection.base_url)
        .map_err(|e| CrmFailure::permanent(format!("CRM request failed: {e}")))
}

impl HubSpot {
    fn app(connection: &OpenCrmConnection) -> Result<&OAuthApp, CrmFailure> {
        match &connection.credentials {
            CrmCredentials::OAuth(app) => Ok(app),
            CrmCredentials::PrivateApp(_) => Err(CrmFailure::permanent(AUTHORIZATION_FAILED)),
        }
    }
}

impl ReadAnswers for HubSpot {
    fn classify(
        &self, status: u16, headers: &HeaderMap, text: &str, now: SystemTime,
    ) -> Classified {
        answers::classify(status, headers, text, now)
    }

    fn limits(&self, headers: &HeaderMap, _connection: &OpenCrmConnection) -> Vec<PaceSignal> {
        answers::limits(headers)
    }

    fn requests_per_second(&self, connection: &OpenCrmConnection) -> u32 {
        connection
            .options
            .max_requests_per_second
            .unwrap_or(REQUESTS_PER_SECOND)
            .clamp(1, REQUESTS_PER_SECOND)
    }
}

#[async_trait]
impl CrmAdapter for HubSpot {
    fn provider(&self) -> CrmProvider {
        CrmProvider::HubSpot
    }

    fn reader(&self) -> &dyn ReadAnswers {
        self
    }

    fn standing_session(
        &self, connection: &OpenCrmConnection,
    ) -> Result<Option<Session>, CrmFailure> {
        let api_base = prefix_of(connection)?;
        Ok(match &connection.credentials {
            CrmCredentials::PrivateApp(token) => Some(Session {
                token: token.clone(),
                api_base,
                replace_at: Instant::now() + super::adapter::MAX_TOKEN_LIFETIME,
            }),
            CrmCredentials::OAuth(_) => None,
        })
    }

    /// The refresh-token grant (BEHAVIOR 7 "OAuth apps"; RFC 6749 section 6).
    async fn grant(&self, x: &mut Exchange<'_>) -> Result<Session, CrmFailure> {
        let app = Self::app(x.connection())?.clone();
        let prefix = prefix_of(x.connection())?;
        let refresh_token = app
            .refresh_token
            .clone()
            .unwrap_or_else(|| CrmSecret::new(""));
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "refresh_token")
            .append_pair("client_id", &app.client_id)
            .append_pair("client_secret", app.client_secret.expose())
            .append_pair("refresh_token", refresh_token.expose())
            .finish();
        let asked = Instant::now();
        let answer = x
            .post_token_form(
                format!("{prefix}/oauth/v1/token"),
                form,
                "HubSpot refused to refresh the OAuth access token",
            )
            .await?;
        let token = TokenAnswer::parse(&answer.body).map_err(|_| {
            CrmFailure::transient(
                "CRM request failed: the token endpoint answered no access_token",
                None,
            )
        })?;
        x.keep_secret(&token.access_token);
        tracing::info!(
            account_id = %x.account(),
            expires_in = token.expires_in,
            "HubSpot OAuth access token refreshed"
        );
        Ok(Session {
            replace_at: Session::replace_at(asked, token.lifetime(), self.token_margin),
            token: CrmSecret::new(token.access_token),
            api_base: prefix,
        })
    }

    /// The owners API: the first active owner whose e-mail is `email`, page after page.
    async fn find_owner(
        &self, x: &mut Exchange<'_>, session: &Session, email: &str,
    ) -> Result<String, Refusal> {
        let mut after: Option<String> = None;
        for _ in 0..MAX_OWNER_PAGES {
            let answer = x
                .send(Request {
                    method: Method::GET,
                    url: owners_url(&session.api_base, email, after.as_deref()),
                    headers: bearer(&session.token)?,
                    body: Vec::new(),
                    read_success: true,
                    host_of: "base_url",
                    update: false,
                })
                .await?;
            if !answer.status.is_success() {
                return Err(x.refusal(&answer));
            }
            let page = OwnersPage::parse(&answer.body).map_err(|_| {
                CrmFailure::transient("CRM request failed: unreadable owners page", None)
            })?;
            if let Some(id) = page.active_with(email) {
                return Ok(id.to_string());
            }
            match page.next_after() {
                Some(next) => after = Some(next.to_string()),
                None => break,
            }
        }
        tracing::info!(
            account_id = %x.account(),
            "the owners API has no active owner with the member's e-mail"
        );
        Err(CrmFailure::permanent(NO_OWNER_WITH_EMAIL).into())
    }

    async fn update(
        &self, x: &mut Exchange<'_>, session: &Session, owner_id: &str,
    ) -> Result<(), Refusal> {
        let url = owner_url_at(&session.api_base, x.update);
        x.patch_owner(
            url,
            bearer(&session.token)?,
            &owner_body(owner_id),
            "base_url",
        )
        .await
    }
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
                provider: CrmProvider::HubSpot,
                base_url: base.into(),
                credentials: CrmCredentials::PrivateApp(CrmSecret::new("tok")),
                options: Default::default(),
            },
            object_type: ObjectType::Deals,
            record_external_id: id.into(),
            owner: super::super::port::Owner::Id("77".into()),
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
        u.connection.options.id_properties =
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
}
