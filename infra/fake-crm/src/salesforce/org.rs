//! The fake's Salesforce org: its External Client Apps, users, queues, records, assignment
//! rules and API allowance, and how Salesforce answers requests about them (as its REST API and
//! OAuth 2.0 guides document):
//!
//! - `POST /services/oauth2/token`: the client-credentials grant only on the org's My Domain
//!   host (elsewhere `invalid_grant`, "request not supported on this domain"), the
//!   refresh-token grant of a refresh token the app holds; an unknown client id or a wrong
//!   secret is `invalid_client`, an unknown refresh token `invalid_grant`. The answer has
//!   `access_token`, `instance_url` (a host name other than the My Domain's), `id`,
//!   `token_type`, `issued_at`, `signature`; never `refresh_token` nor `expires_in`.
//! - `POST /services/oauth2/revoke`: an access token, or a refresh token and its sessions.
//! - a REST call without a live session is 401 `INVALID_SESSION_ID`; every REST answer carries
//!   `Sforce-Limit-Info: api-usage=N/M`, and a call past the org's daily allowance is 403
//!   `REQUEST_LIMIT_EXCEEDED` (`TotalRequests Limit exceeded.`).
//! - `GET /services/data/vNN.N/query?q=`: the one query the sync sends, `SELECT Id FROM User
//!   WHERE Email = '<literal>' AND IsActive = true` (keywords in any case), with SOQL's string
//!   escapes; a literal with a bad escape, an unescaped quote or any other query is 400
//!   `MALFORMED_QUERY`. E-mails compare without case.
//! - `PATCH /services/data/vNN.N/sobjects/{sObject}/{id}`: 204; an unknown sObject or record
//!   404 `NOT_FOUND`; an id of the wrong form or key prefix 400 `MALFORMED_ID`; an `OwnerId`
//!   that is no user 400 `INVALID_CROSS_REFERENCE_KEY`, an inactive user 400
//!   `INACTIVE_OWNER_OR_USER`, a queue on an object without queues (Account, Contact,
//!   Opportunity) 400 `FIELD_INTEGRITY_EXCEPTION`. An Account, Case or Lead updated without
//!   `Sforce-Auto-Assign: FALSE` gets the owner of the org's active assignment rule for it.
//!
//! Errors have Salesforce's shape: `[{"message", "errorCode", "fields"}]` (the token endpoint's
//! RFC 6749's `{"error", "error_description"}`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

/// The demo org (README "CRM sync"): Umbrella's Salesforce, matching the demo seed.
pub const DEMO_ORG: &str = include_str!("../../demo-org.json");

/// An External Client App of the org.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct App {
    /// Its consumer key.
    pub client_id: String,
    /// Its consumer secret.
    pub client_secret: String,
    /// The Run As user of its client-credentials flow (a User Id).
    pub run_as: String,
    /// Refresh tokens the app's users granted.
    #[serde(default)]
    pub refresh_tokens: Vec<String>,
}

/// A user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    /// Its Id (`005...`).
    pub id: String,
    /// Its e-mail.
    pub email: String,
    /// Whether it is active.
    #[serde(default = "yes")]
    pub active: bool,
}

fn yes() -> bool {
    true
}

/// A queue (a `Group` of type Queue, `00G...`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    /// Its Id.
    pub id: String,
    /// The sObjects it takes (Lead, Case).
    #[serde(default)]
    pub objects: Vec<String>,
}

/// A record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Its Id.
    #[serde(rename = "Id")]
    pub id: String,
    /// Its owner.
    #[serde(rename = "OwnerId", default)]
    pub owner_id: Option<String>,
}

/// The org's content, as `PUT /_fake/org` and `--salesforce-org FILE` take it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OrgSpec {
    /// External Client Apps.
    #[serde(default)]
    pub apps: Vec<App>,
    /// Users.
    #[serde(default)]
    pub users: Vec<User>,
    /// Queues.
    #[serde(default)]
    pub queues: Vec<Queue>,
    /// Records per sObject.
    #[serde(default)]
    pub records: BTreeMap<String, Vec<Record>>,
    /// The owner the active assignment rule gives, per sObject (Account, Case, Lead).
    #[serde(default)]
    pub assignment_rules: BTreeMap<String, String>,
    /// The org's daily API allowance (default 15,000).
    #[serde(default)]
    pub api_limit: Option<u64>,
    /// API requests used today.
    #[serde(default)]
    pub api_used: u64,
}

impl OrgSpec {
    /// The demo org.
    pub fn demo() -> Self {
        serde_json::from_str(DEMO_ORG).unwrap_or_default()
    }
}

/// A session the token endpoint gave.
#[derive(Debug, Clone)]
struct Session {
    client_id: String,
    /// The refresh token it came from, if any (revoking that revokes it).
    refresh_token: Option<String>,
}

/// An answer of the org.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// JSON body (`Null`: none).
    pub body: Value,
}

impl Answer {
    fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body,
        }
    }

    /// Salesforce's error array with one error.
    pub fn error(status: u16, code: &str, message: &str, fields: &[&str]) -> Self {
        Self::json(
            status,
            json!([{"message": message, "errorCode": code, "fields": fields}]),
        )
    }

    fn oauth_error(error: &str, description: &str) -> Self {
        Self::json(
            400,
            json!({"error": error, "error_description": description}),
        )
    }
}

/// A request as the org reads it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Method.
    pub method: &'a str,
    /// Path as sent (percent-encoded).
    pub path: &'a str,
    /// Query as sent.
    pub query: Option<&'a str>,
    /// The `Host` header.
    pub host: Option<&'a str>,
    /// `Authorization`.
    pub authorization: Option<&'a str>,
    /// `Sforce-Auto-Assign`.
    pub auto_assign: Option<&'a str>,
    /// Body.
    pub body: &'a [u8],
}

/// The sObjects the fake knows, with their key prefixes.
const SOBJECTS: [(&str, &str); 5] = [
    ("Account", "001"),
    ("Contact", "003"),
    ("Opportunity", "006"),
    ("Lead", "00Q"),
    ("Case", "500"),
];

/// The org's state.
#[derive(Debug, Default)]
pub struct Org {
    spec: OrgSpec,
    sessions: HashMap<String, Session>,
    tokens_issued: u64,
    /// The My Domain host (`localhost:<port>`), where the client-credentials flow is allowed.
    my_domain: String,
    /// The instance URL the token answer names (`http://127.0.0.1:<port>`).
    instance_url: String,
}

/// Whether `id` has a Salesforce id's form: 15 or 18 letters and digits.
fn is_id(id: &str) -> bool {
    matches!(id.len(), 15 | 18) && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

impl Org {
    /// An org with `spec`, on `my_domain` (a `host:port`) and `instance_url`.
    pub fn new(spec: OrgSpec, my_domain: &str, instance_url: &str) -> Self {
        Self {
            spec,
            my_domain: my_domain.to_string(),
            instance_url: instance_url.to_string(),
            ..Self::default()
        }
    }

    /// The content.
    pub fn spec(&self) -> &OrgSpec {
        &self.spec
    }

    /// The content, to change.
    pub fn spec_mut(&mut self) -> &mut OrgSpec {
        &mut self.spec
    }

    /// Replaces the content (sessions end).
    pub fn replace(&mut self, spec: OrgSpec) {
        self.spec = spec;
        self.sessions.clear();
    }

    /// The instance URL.
    pub fn instance_url(&self) -> &str {
        &self.instance_url
    }

    /// Access tokens the token endpoint gave so far.
    pub fn tokens_issued(&self) -> u64 {
        self.tokens_issued
    }

    /// Ends every session (as a session timeout or an admin's "revoke all" does).
    pub fn expire_sessions(&mut self) {
        self.sessions.clear();
    }

    /// The `Sforce-Limit-Info` of the org's usage now (every REST answer carries it).
    pub fn limit_info(&self) -> (String, String) {
        let limit = self.spec.api_limit.unwrap_or(15_000);
        (
            "Sforce-Limit-Info".to_string(),
            format!("api-usage={}/{limit}", self.spec.api_used.min(limit)),
        )
    }

    /// A record.
    pub fn record(&self, sobject: &str, id: &str) -> Option<&Record> {
        self.spec.records.get(sobject)?.iter().find(|r| r.id == id)
    }

    /// Answers `request` (a path under `/services/`).
    pub fn answer(&mut self, request: &Request<'_>) -> Answer {
        match (request.method, request.path) {
            ("POST", "/services/oauth2/token") => self.token(request),
            ("POST", "/services/oauth2/revoke") => self.revoke(request.body),
            _ => self.rest(request),
        }
    }

    fn form(body: &[u8]) -> HashMap<String, String> {
        form_urlencoded::parse(body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    fn token(&mut self, request: &Request<'_>) -> Answer {
        let form = Self::form(request.body);
        let field = |name: &str| form.get(name).cloned().unwrap_or_default();
        let Some(app) = self
            .spec
            .apps
            .iter()
            .find(|a| a.client_id == field("client_id"))
            .cloned()
        else {
            return Answer::oauth_error("invalid_client_id", "client identifier invalid");
        };
        let refresh_token = match field("grant_type").as_str() {
            "client_credentials" => {
                if request.host != Some(self.my_domain.as_str()) {
                    return Answer::oauth_error(
                        "invalid_grant",
                        "request not supported on this domain",
                    );
                }
                if app.client_secret != field("client_secret") {
                    return Answer::oauth_error("invalid_client", "invalid client credentials");
                }
                None
            }
            "refresh_token" => {
                if form.contains_key("client_secret") && app.client_secret != field("client_secret")
                {
                    return Answer::oauth_error("invalid_client", "invalid client credentials");
                }
                let token = field("refresh_token");
                if !app.refresh_tokens.contains(&token) {
                    return Answer::oauth_error("invalid_grant", "expired access/refresh token");
                }
                Some(token)
            }
            _ => return Answer::oauth_error("unsupported_grant_type", "grant type not supported"),
        };
        self.tokens_issued += 1;
        let access_token = format!(
            "00DFAKE0000000001!fake-session-{}-{}",
            app.client_id, self.tokens_issued
        );
        self.sessions.insert(
            access_token.clone(),
            Session {
                client_id: app.client_id.clone(),
                refresh_token,
            },
        );
        Answer::json(
            200,
            json!({
                "access_token": access_token,
                "signature": "c2lnbmF0dXJlLW9mLXRoZS1mYWtl",
                "instance_url": self.instance_url,
                "id": format!("https://login.salesforce.com/id/00DFAKE0000000001/{}", app.run_as),
                "token_type": "Bearer",
                "issued_at": crate::now_ms().to_string(),
                "scope": "api"
            }),
        )
    }

    fn revoke(&mut self, body: &[u8]) -> Answer {
        let token = Self::form(body).remove("token").unwrap_or_default();
        if self.sessions.remove(&token).is_none() {
            let mut found = false;
            for app in &mut self.spec.apps {
                let before = app.refresh_tokens.len();
                app.refresh_tokens.retain(|t| t != &token);
                found |= app.refresh_tokens.len() != before;
            }
            if !found {
                return Answer::oauth_error("invalid_token", "invalid token");
            }
            self.sessions
                .retain(|_, s| s.refresh_token.as_deref() != Some(token.as_str()));
        }
        Answer::json(200, Value::Null)
    }

    fn rest(&mut self, request: &Request<'_>) -> Answer {
        let session = request
            .authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .and_then(|t| self.sessions.get(t.trim()))
            .filter(|s| self.spec.apps.iter().any(|a| a.client_id == s.client_id));
        if session.is_none() {
            return Answer::error(401, "INVALID_SESSION_ID", "Session expired or invalid", &[]);
        }
        let limit = self.spec.api_limit.unwrap_or(15_000);
        self.spec.api_used = self.spec.api_used.saturating_add(1);
        let mut answer = if self.spec.api_used > limit {
            Answer::error(
                403,
                "REQUEST_LIMIT_EXCEEDED",
                "TotalRequests Limit exceeded.",
                &[],
            )
        } else {
            let segments: Vec<&str> = request.path.trim_matches('/').split('/').collect();
            match (request.method, segments.as_slice()) {
                ("GET", ["services", "data", _, "query"]) => self.query(request.query),
                ("PATCH", ["services", "data", _, "sobjects", sobject, id]) => {
                    let id = percent_encoding::percent_decode_str(id)
                        .decode_utf8_lossy()
                        .into_owned();
                    self.update(sobject, &id, request.auto_assign, request.body)
                }
                _ => Answer::error(
                    404,
                    "NOT_FOUND",
                    "The requested resource does not exist",
                    &[],
                ),
            }
        };
        answer.headers.push(self.limit_info());
        answer
    }

    fn query(&self, query: Option<&str>) -> Answer {
        let q = query
            .into_iter()
            .flat_map(|q| form_urlencoded::parse(q.as_bytes()))
            .find(|(k, _)| k == "q")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        let email = match parse_user_query(&q) {
            Ok(email) => email,
            Err(why) => return Answer::error(400, "MALFORMED_QUERY", &why, &[]),
        };
        let records: Vec<Value> = self
            .spec
            .users
            .iter()
            .filter(|u| u.active && u.email.eq_ignore_ascii_case(&email))
            .map(|u| {
                json!({
                    "attributes": {"type": "User", "url": format!("/services/data/v66.0/sobjects/User/{}", u.id)},
                    "Id": u.id
                })
            })
            .collect();
        Answer::json(
            200,
            json!({"totalSize": records.len(), "done": true, "records": records}),
        )
    }

    fn update(
        &mut self, sobject: &str, id: &str, auto_assign: Option<&str>, body: &[u8],
    ) -> Answer {
        let Some((sobject, prefix)) = SOBJECTS.iter().find(|(name, _)| *name == sobject) else {
            return Answer::error(
                404,
                "NOT_FOUND",
                "The requested resource does not exist",
                &[],
            );
        };
        if !is_id(id) || !id.starts_with(prefix) {
            return Answer::error(
                400,
                "MALFORMED_ID",
                &format!("{sobject} ID: id value of incorrect type: {id}"),
                &["Id"],
            );
        }
        if self.record(sobject, id).is_none() {
            return Answer::error(
                404,
                "NOT_FOUND",
                "The requested resource does not exist",
                &[],
            );
        }
        let fields: serde_json::Map<String, Value> = match serde_json::from_slice(body) {
            Ok(Value::Object(fields)) => fields,
            _ => {
                return Answer::error(
                    400,
                    "JSON_PARSER_ERROR",
                    "The request body is not a JSON object",
                    &[],
                )
            }
        };
        let mut owner = None;
        if let Some(value) = fields.get("OwnerId") {
            let Some(owner_id) = value.as_str() else {
                return Answer::error(
                    400,
                    "INVALID_FIELD",
                    "Owner ID: value not of required type",
                    &["OwnerId"],
                );
            };
            if let Err(refusal) = self.check_owner(sobject, owner_id) {
                return refusal;
            }
            owner = Some(owner_id.to_string());
        }
        let auto = auto_assign.is_none_or(|v| !v.eq_ignore_ascii_case("false"));
        let rule = matches!(*sobject, "Account" | "Case" | "Lead")
            .then(|| self.spec.assignment_rules.get(*sobject).cloned())
            .flatten()
            .filter(|_| auto);
        if let Some(record) = self
            .spec
            .records
            .get_mut(*sobject)
            .and_then(|list| list.iter_mut().find(|r| r.id == id))
        {
            if let Some(owner) = owner {
                record.owner_id = Some(owner);
            }
            // The org's active assignment rule runs after the update, unless told not to.
            if let Some(rule_owner) = rule {
                record.owner_id = Some(rule_owner);
            }
        }
        Answer::json(204, Value::Null)
    }

    fn check_owner(&self, sobject: &str, owner_id: &str) -> Result<(), Answer> {
        let incorrect = |code: &str| {
            Answer::error(
                400,
                code,
                &format!("Owner ID: id value of incorrect type: {owner_id}"),
                &["OwnerId"],
            )
        };
        if !is_id(owner_id) {
            return Err(incorrect("MALFORMED_ID"));
        }
        if owner_id.starts_with("00G") {
            let takes_queues = self
                .spec
                .queues
                .iter()
                .any(|q| q.id == owner_id && q.objects.iter().any(|o| o == sobject));
            return match takes_queues {
                true => Ok(()),
                false => Err(incorrect("FIELD_INTEGRITY_EXCEPTION")),
            };
        }
        match self.spec.users.iter().find(|u| u.id == owner_id) {
            None => Err(Answer::error(
                400,
                "INVALID_CROSS_REFERENCE_KEY",
                "invalid cross reference id",
                &["OwnerId"],
            )),
            Some(user) if !user.active => Err(Answer::error(
                400,
                "INACTIVE_OWNER_OR_USER",
                &format!(
                    "operation performed with inactive user [{owner_id}] as owner of {sobject}"
                ),
                &[],
            )),
            Some(_) => Ok(()),
        }
    }
}

/// The e-mail of `SELECT Id FROM User WHERE Email = '<literal>' AND IsActive = true` (keywords
/// in any case, any whitespace between tokens), the literal read with SOQL's escapes.
///
/// Errors: Salesforce's `MALFORMED_QUERY` message.
pub fn parse_user_query(q: &str) -> Result<String, String> {
    let rest = q.trim_start();
    let mut rest = rest;
    for keyword in ["SELECT", "Id", "FROM", "User", "WHERE", "Email", "="] {
        rest = expect(rest, keyword)?;
    }
    let (email, after) = string_literal(rest)?;
    let mut after = after;
    for keyword in ["AND", "IsActive", "=", "true"] {
        after = expect(after, keyword)?;
    }
    if !after.trim().is_empty() {
        return Err(format!("unexpected token: '{}'", after.trim()));
    }
    Ok(email)
}

/// `text` after the token `keyword` (any case; leading whitespace skipped).
fn expect<'a>(text: &'a str, keyword: &str) -> Result<&'a str, String> {
    let text = text.trim_start();
    match text.get(..keyword.len()) {
        Some(head) if head.eq_ignore_ascii_case(keyword) => Ok(&text[keyword.len()..]),
        _ => Err(format!(
            "unexpected token: '{}'",
            text.split_whitespace().next().unwrap_or("")
        )),
    }
}

/// A SOQL string literal at the start of `text` (after whitespace) and what follows it.
fn string_literal(text: &str) -> Result<(String, &str), String> {
    let text = text.trim_start();
    let mut chars = text.char_indices();
    if !matches!(chars.next(), Some((_, '\''))) {
        return Err("expected a string literal".into());
    }
    let mut value = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' => return Ok((value, &text[i + 1..])),
            '\\' => {
                let escaped = match chars.next().map(|(_, c)| c) {
                    Some('n' | 'N') => '\n',
                    Some('r' | 'R') => '\r',
                    Some('t' | 'T') => '\t',
                    Some('b' | 'B') => '\u{8}',
                    Some('f' | 'F') => '\u{c}',
                    Some(c @ ('"' | '\'' | '\\')) => c,
                    Some('u') => {
                        let hex: String = chars.by_ref().take(4).map(|(_, c)| c).collect();
                        u32::from_str_radix(&hex, 16)
                            .ok()
                            .filter(|_| hex.len() == 4)
                            .and_then(char::from_u32)
                            .ok_or("Invalid string literal: bad \\u escape")?
                    }
                    _ => return Err("Invalid string literal: bad escape sequence".into()),
                };
                value.push(escaped);
            }
            c => value.push(c),
        }
    }
    Err("Invalid string literal: no closing quote".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_query_reads_soql_string_escapes_and_refuses_bad_literals() {
        assert_eq!(
            parse_user_query("SELECT Id FROM User WHERE Email = 'a@b.example' AND IsActive = true"),
            Ok("a@b.example".into())
        );
        assert_eq!(
            parse_user_query(
                r"select id from user where email = 'o\'b\\x@b.example' and isactive = TRUE"
            ),
            Ok(r"o'b\x@b.example".into())
        );
        for bad in [
            "SELECT Id FROM User WHERE Email = 'o'b@b.example' AND IsActive = true",
            r"SELECT Id FROM User WHERE Email = 'a\q@b.example' AND IsActive = true",
            "SELECT Id FROM User WHERE Email = 'open AND IsActive = true",
            "SELECT Id FROM User WHERE Email = 'a@b.example'",
            "SELECT Id FROM Contact WHERE Email = 'a@b.example' AND IsActive = true",
            "SELECT Id FROM User WHERE Email = 'a@b.example' AND IsActive = true OR Id != ''",
        ] {
            assert!(parse_user_query(bad).is_err(), "{bad}");
        }
    }

    fn request<'a>(
        method: &'a str, path: &'a str, host: &'a str, auth: Option<&'a str>, body: &'a [u8],
    ) -> Request<'a> {
        Request {
            method,
            path,
            query: None,
            host: Some(host),
            authorization: auth,
            auto_assign: None,
            body,
        }
    }

    /// The token endpoint as Salesforce documents it: client credentials only on the My
    /// Domain, no refresh token nor lifetime in the answer, `invalid_client` and
    /// `invalid_grant`; a revoked token is `INVALID_SESSION_ID`; an update without
    /// `Sforce-Auto-Assign: FALSE` lets the Lead's assignment rule take the owner.
    #[test]
    fn tokens_sessions_and_assignment_rules_behave_as_salesforce_documents() {
        let mut org = Org::new(OrgSpec::demo(), "localhost:1", "http://127.0.0.1:1");
        let app = org.spec().apps[0].clone();
        let grant = format!(
            "grant_type=client_credentials&client_id={}&client_secret={}",
            app.client_id, app.client_secret
        );
        let elsewhere = org.answer(&request(
            "POST",
            "/services/oauth2/token",
            "login.salesforce.com",
            None,
            grant.as_bytes(),
        ));
        assert_eq!(
            (elsewhere.status, elsewhere.body["error"].as_str()),
            (400, Some("invalid_grant"))
        );
        let wrong = format!(
            "grant_type=client_credentials&client_id={}&client_secret=x",
            app.client_id
        );
        let refused = org.answer(&request(
            "POST",
            "/services/oauth2/token",
            "localhost:1",
            None,
            wrong.as_bytes(),
        ));
        assert_eq!(refused.body["error"], "invalid_client");
        let refresh = format!(
            "grant_type=refresh_token&client_id={}&client_secret={}&refresh_token=nope",
            app.client_id, app.client_secret
        );
        let refused = org.answer(&request(
            "POST",
            "/services/oauth2/token",
            "localhost:1",
            None,
            refresh.as_bytes(),
        ));
        assert_eq!(refused.body["error"], "invalid_grant");
        let granted = org.answer(&request(
            "POST",
            "/services/oauth2/token",
            "localhost:1",
            None,
            grant.as_bytes(),
        ));
        assert_eq!(granted.status, 200);
        assert_eq!(granted.body["instance_url"], "http://127.0.0.1:1");
        assert!(
            granted.body.get("refresh_token").is_none() && granted.body.get("expires_in").is_none()
        );
        let token = granted.body["access_token"].as_str().unwrap().to_string();
        let bearer = format!("Bearer {token}");
        let lead = org.spec().records["Lead"][0].id.clone();
        let path = format!("/services/data/v66.0/sobjects/Lead/{lead}");
        let body = json!({"OwnerId": "0055g0000000001"}).to_string();
        let updated = org.answer(&request(
            "PATCH",
            &path,
            "127.0.0.1:1",
            Some(&bearer),
            body.as_bytes(),
        ));
        assert_eq!(updated.status, 204);
        assert!(updated
            .headers
            .iter()
            .any(|(k, v)| k == "Sforce-Limit-Info" && v.starts_with("api-usage=")));
        assert_eq!(
            org.record("Lead", &lead).unwrap().owner_id.as_deref(),
            Some("00G5g0000000001"),
            "without Sforce-Auto-Assign: FALSE the Lead rule takes it"
        );
        let revoke = format!("token={token}");
        assert_eq!(
            org.answer(&request(
                "POST",
                "/services/oauth2/revoke",
                "localhost:1",
                None,
                revoke.as_bytes()
            ))
            .status,
            200
        );
        let refused = org.answer(&request(
            "PATCH",
            &path,
            "127.0.0.1:1",
            Some(&bearer),
            body.as_bytes(),
        ));
        assert_eq!(
            (refused.status, refused.body[0]["errorCode"].as_str()),
            (401, Some("INVALID_SESSION_ID"))
        );
    }

    #[test]
    fn owners_are_checked_as_salesforce_checks_them() {
        let mut org = Org::new(OrgSpec::demo(), "localhost:1", "http://127.0.0.1:1");
        let demo = org.spec().clone();
        let lead = demo.records["Lead"][0].id.clone();
        let account = demo.records["Account"][0].id.clone();
        let queue = demo.queues[0].id.clone();
        let inactive = demo.users.iter().find(|u| !u.active).unwrap().id.clone();
        let code = |answer: &Answer| answer.body[0]["errorCode"].as_str().map(str::to_string);
        let patch = |org: &mut Org, sobject: &str, id: &str, owner: &str| {
            let body = json!({"OwnerId": owner}).to_string();
            org.update(sobject, id, Some("FALSE"), body.as_bytes())
        };
        assert_eq!(patch(&mut org, "Lead", &lead, &queue).status, 204);
        assert_eq!(
            code(&patch(&mut org, "Account", &account, &queue)).as_deref(),
            Some("FIELD_INTEGRITY_EXCEPTION")
        );
        assert_eq!(
            code(&patch(&mut org, "Lead", &lead, &inactive)).as_deref(),
            Some("INACTIVE_OWNER_OR_USER")
        );
        assert_eq!(
            code(&patch(&mut org, "Lead", &lead, "005000000000999")).as_deref(),
            Some("INVALID_CROSS_REFERENCE_KEY")
        );
        assert_eq!(
            code(&patch(&mut org, "Lead", "003000000000001", &queue)).as_deref(),
            Some("MALFORMED_ID")
        );
        assert_eq!(
            code(&patch(&mut org, "Lead", "00Q000000000999", &queue)).as_deref(),
            Some("NOT_FOUND")
        );
    }
}
