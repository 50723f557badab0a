//! The Salesforce adapter (BEHAVIOR 7 "Salesforce as it is"; Salesforce's REST API and OAuth
//! 2.0 guides). One owner update is, in this order, as needed:
//!
//! 1. an access token from the org's My Domain (`POST {base_url}/services/oauth2/token`): the
//!    client-credentials grant (`grant_type=client_credentials`, `client_id`, `client_secret`;
//!    the External Client App's Run As user) or, when the connection holds a refresh token, the
//!    refresh-token grant. The answer's `access_token` is kept until Salesforce refuses it
//!    (Salesforce sends no `expires_in`; at most 24 h), and every REST call goes to its
//!    `instance_url`, which must pass the outbound guard as the base URL does;
//! 2. the owner: the member's `external_id` (a User Id), or the active user with the member's
//!    e-mail, found by SOQL (`GET {instance_url}/services/data/v{api_version}/query?q=SELECT Id
//!    FROM User WHERE Email = '<e-mail>' AND IsActive = true`, [`soql`]);
//! 3. `PATCH {instance_url}/services/data/v{api_version}/sobjects/{object}/{id}` with
//!    `Sforce-Auto-Assign: FALSE` (the org's assignment rules must not overwrite the owner just
//!    written) and `{"OwnerId": "<user id>"}`.
//!
//! How answers read is [`answers`]: `INVALID_SESSION_ID` takes a new token, `UNABLE_TO_LOCK_ROW`,
//! 5xx and the concurrent-request limit are retried, the daily total waits, and every answer's
//! `Sforce-Limit-Info` holds the account's syncs while the org's usage is at or above the
//! connection's `max_api_share`.

pub mod answers;
pub mod soql;

use super::adapter::{CrmAdapter, Session, MAX_TOKEN_LIFETIME};
use super::exchange::{base_prefix, bearer, Exchange, Refusal, Request, SEGMENT};
use super::port::{
    CrmFailure, AUTHORIZATION_FAILED, NO_SALESFORCE_USER_WITH_EMAIL,
    SEVERAL_SALESFORCE_USERS_WITH_EMAIL,
};
use super::reading::{Classified, PaceSignal, ReadAnswers};
use crate::model::account::{CrmCredentials, CrmProvider, MAX_API_SHARE, SALESFORCE_API_VERSION};
use crate::model::object_type::ObjectType;
use crate::secrets::OpenCrmConnection;
use async_trait::async_trait;
use percent_encoding::utf8_percent_encode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::Method;
use serde::Deserialize;
use std::time::{Duration, Instant, SystemTime};

/// The request header of Salesforce's Assignment Rule header.
pub const AUTO_ASSIGN: &str = "sforce-auto-assign";

/// Requests per second per account (BEHAVIOR 7's pace, as for HubSpot).
pub const REQUESTS_PER_SECOND: u32 = 10;

/// How long the org's daily total (`REQUEST_LIMIT_EXCEEDED`) and an API usage at the share wait
/// by default (BEHAVIOR 7: 1 hour; `CRM_SYNC_LIMIT_WAIT`).
pub const LIMIT_WAIT: Duration = Duration::from_secs(3600);

/// The sObject of `object_type` (BEHAVIOR 7): contacts `Contact` (or `Lead` when the connection
/// says so), companies `Account`, deals `Opportunity`, tickets `Case`.
pub fn sobject(object_type: ObjectType, connection: &OpenCrmConnection) -> &str {
    match object_type {
        ObjectType::Contacts => connection
            .options
            .contacts_object
            .as_deref()
            .unwrap_or("Contact"),
        ObjectType::Companies => "Account",
        ObjectType::Deals => "Opportunity",
        ObjectType::Tickets => "Case",
    }
}

/// The REST API version of the connection (`66.0` when it names none).
pub fn api_version(connection: &OpenCrmConnection) -> &str {
    connection
        .options
        .api_version
        .as_deref()
        .unwrap_or(SALESFORCE_API_VERSION)
}

/// The token endpoint's answer (Salesforce's OAuth 2.0 guide): no `expires_in`.
#[derive(Deserialize)]
pub struct TokenAnswer {
    /// The access token.
    pub access_token: String,
    /// Where the REST calls go.
    pub instance_url: String,
}

impl TokenAnswer {
    /// A token answer from a body.
    ///
    /// Errors: a body that is not a token answer.
    pub fn parse(body: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(body)
    }
}

/// A page of the Query resource (`{totalSize, done, records: [{attributes, Id}]}`).
#[derive(Debug, Deserialize)]
pub struct QueryAnswer {
    /// How many records match.
    #[serde(rename = "totalSize")]
    pub total_size: u64,
    /// The records of this page.
    pub records: Vec<QueryRecord>,
}

/// A record of a query answer.
#[derive(Debug, Deserialize)]
pub struct QueryRecord {
    /// The record's id.
    #[serde(rename = "Id")]
    pub id: String,
}

impl QueryAnswer {
    /// A query answer from a body.
    ///
    /// Errors: a body that is not a query answer.
    pub fn parse(body: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(body)
    }

    /// The one user the query found.
    ///
    /// Errors: nobody, or several (both final, BEHAVIOR 7).
    pub fn the_user(&self) -> Result<&str, &'static str> {
        match self.records.as_slice() {
            [one] if self.total_size <= 1 => Ok(one.id.as_str()),
            [] => Err(NO_SALESFORCE_USER_WITH_EMAIL),
            _ => Err(SEVERAL_SALESFORCE_USERS_WITH_EMAIL),
        }
    }
}

/// Salesforce (see the module's doc).
#[derive(Debug, Clone, Copy)]
pub struct Salesforce {
    /// How long the org's daily total and an API usage at the share wait (`CRM_SYNC_LIMIT_WAIT`).
    pub limit_wait: Duration,
}

impl Default for Salesforce {
    fn default() -> Self {
        Self {
            limit_wait: LIMIT_WAIT,
        }
    }
}

fn data_url(session: &Session, connection: &OpenCrmConnection, rest: &str) -> String {
    format!(
        "{}/services/data/v{}/{rest}",
        session.api_base,
        api_version(connection)
    )
}

impl ReadAnswers for Salesforce {
    fn classify(
        &self, status: u16, headers: &HeaderMap, text: &str, now: SystemTime,
    ) -> Classified {
        answers::classify(status, headers, text, now, self.limit_wait)
    }

    fn limits(&self, headers: &HeaderMap, connection: &OpenCrmConnection) -> Vec<PaceSignal> {
        let share = connection.options.max_api_share.unwrap_or(MAX_API_SHARE);
        answers::limits(headers, share, self.limit_wait)
    }

    fn requests_per_second(&self, _connection: &OpenCrmConnection) -> u32 {
        REQUESTS_PER_SECOND
    }
}

#[async_trait]
impl CrmAdapter for Salesforce {
    fn provider(&self) -> CrmProvider {
        CrmProvider::Salesforce
    }

    fn reader(&self) -> &dyn ReadAnswers {
        self
    }

    fn standing_session(
        &self, _connection: &OpenCrmConnection,
    ) -> Result<Option<Session>, CrmFailure> {
        Ok(None)
    }

    /// The client-credentials grant, or the refresh-token grant when the connection holds a
    /// refresh token (BEHAVIOR 7 "Token"; RFC 6749 sections 4.4 and 6).
    async fn grant(&self, x: &mut Exchange<'_>) -> Result<Session, CrmFailure> {
        let CrmCredentials::OAuth(app) = &x.connection().credentials else {
            return Err(CrmFailure::permanent(AUTHORIZATION_FAILED));
        };
        let app = app.clone();
        let prefix = base_prefix(&x.connection().base_url)
            .map_err(|e| CrmFailure::permanent(format!("CRM request failed: {e}")))?;
        let form = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            match &app.refresh_token {
                Some(refresh_token) => form
                    .append_pair("grant_type", "refresh_token")
                    .append_pair("client_id", &app.client_id)
                    .append_pair("client_secret", app.client_secret.expose())
                    .append_pair("refresh_token", refresh_token.expose()),
                None => form
                    .append_pair("grant_type", "client_credentials")
                    .append_pair("client_id", &app.client_id)
                    .append_pair("client_secret", app.client_secret.expose()),
            };
            form.finish()
        };
        let asked = Instant::now();
        let answer = x
            .post_token_form(
                format!("{prefix}/services/oauth2/token"),
                form,
                "Salesforce refused to grant an access token",
            )
            .await?;
        let token = TokenAnswer::parse(&answer.body).map_err(|_| {
            CrmFailure::transient(
                "CRM request failed: the token endpoint answered no access_token and instance_url",
                None,
            )
        })?;
        x.keep_secret(&token.access_token);
        let api_base = base_prefix(&token.instance_url)
            .and_then(|base| x.check_url(&base).map(|()| base))
            .map_err(|why| {
                CrmFailure::permanent(format!("CRM request failed: instance_url {why}"))
            })?;
        tracing::info!(
            account_id = %x.account(),
            "Salesforce access token granted"
        );
        Ok(Session {
            token: crate::model::account::CrmSecret::new(token.access_token),
            api_base,
            replace_at: Session::replace_at(asked, MAX_TOKEN_LIFETIME, Duration::ZERO),
        })
    }

    /// A SOQL query over `User`: the one active user with `email`.
    async fn find_owner(
        &self, x: &mut Exchange<'_>, session: &Session, email: &str,
    ) -> Result<String, Refusal> {
        let query = soql::query_parameter(&soql::active_user_with(email));
        let url = data_url(session, x.connection(), &format!("query?q={query}"));
        let answer = x
            .send(Request {
                method: Method::GET,
                url,
                headers: bearer(&session.token)?,
                body: Vec::new(),
                read_success: true,
                host_of: "instance_url",
                update: false,
            })
            .await?;
        if !answer.status.is_success() {
            return Err(x.refusal(&answer));
        }
        let found = QueryAnswer::parse(&answer.body).map_err(|_| {
            CrmFailure::transient("CRM request failed: unreadable query answer", None)
        })?;
        match found.the_user() {
            Ok(id) => Ok(id.to_string()),
            Err(none_or_several) => {
                tracing::info!(
                    account_id = %x.account(),
                    users = found.total_size,
                    "no single active Salesforce user with the member's e-mail"
                );
                Err(CrmFailure::permanent(none_or_several).into())
            }
        }
    }

    async fn update(
        &self, x: &mut Exchange<'_>, session: &Session, owner_id: &str,
    ) -> Result<(), Refusal> {
        let connection = x.connection();
        let path = format!(
            "sobjects/{}/{}",
            sobject(x.update.object_type, connection),
            utf8_percent_encode(&x.update.record_external_id, SEGMENT)
        );
        let url = data_url(session, connection, &path);
        let mut headers = bearer(&session.token)?;
        headers.insert(
            HeaderName::from_static(AUTO_ASSIGN),
            HeaderValue::from_static("FALSE"),
        );
        let body = serde_json::json!({ "OwnerId": owner_id });
        x.patch_owner(url, headers, &body, "instance_url").await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_answer_gives_one_user_or_says_nobody_or_several() {
        let answer = |body: &str| QueryAnswer::parse(body.as_bytes()).unwrap();
        let record = |id: &str| {
            format!(
                r#"{{"attributes": {{"type": "User", "url": "/services/data/v66.0/sobjects/User/{id}"}}, "Id": "{id}"}}"#
            )
        };
        assert_eq!(
            answer(&format!(
                r#"{{"totalSize": 1, "done": true, "records": [{}]}}"#,
                record("005A")
            ))
            .the_user(),
            Ok("005A")
        );
        assert_eq!(
            answer(r#"{"totalSize": 0, "done": true, "records": []}"#).the_user(),
            Err(NO_SALESFORCE_USER_WITH_EMAIL)
        );
        assert_eq!(
            answer(&format!(
                r#"{{"totalSize": 2, "done": true, "records": [{}, {}]}}"#,
                record("005A"),
                record("005B")
            ))
            .the_user(),
            Err(SEVERAL_SALESFORCE_USERS_WITH_EMAIL)
        );
    }
}
