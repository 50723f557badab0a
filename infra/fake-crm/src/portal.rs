//! The fake's HubSpot portal: its CRM objects, owners, apps and their tokens, and how HubSpot
//! answers requests about them (as HubSpot's API description and its guides document):
//!
//! - objects have numeric ids (`PATCH`/`GET /crm/v3/objects/{type}/{id}`, or `?idProperty=` a
//!   unique property); an unknown object is 404 `OBJECT_NOT_FOUND`;
//! - `hubspot_owner_id` must be an active owner's id, else 400 `VALIDATION_ERROR` naming
//!   `INVALID_OWNER_ID`;
//! - `GET /crm/v3/owners` filters by `email` and `archived` (default active owners only), pages
//!   by `limit` (default 100, at most 500) and `after`;
//! - `POST /oauth/v1/token` takes the refresh-token grant of a known app and gives an access token
//!   that expires after the app's `expires_in`;
//! - a request without a known token is 401 (`INVALID_AUTHENTICATION`), with an expired one 401
//!   (`EXPIRED_AUTHENTICATION`); without the scope the operation needs, 403 (`MISSING_SCOPES`);
//! - every authenticated answer carries `X-HubSpot-RateLimit-Max`, `-Remaining` and
//!   `-Interval-Milliseconds` (a private app's also `-Daily` and `-Daily-Remaining`), and a
//!   request past the app's burst limit (default 100 per 10 s) is 429 with `policyName`
//!   `TEN_SECONDLY_ROLLING`.
//!
//! Error bodies have HubSpot's shape: `{status, message, correlationId, category}` (plus
//! `errors`, `context` where HubSpot adds them).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// The demo portal (README "CRM sync"): Initech's HubSpot, matching the demo seed.
pub const DEMO_PORTAL: &str = include_str!("../demo-portal.json");

/// A private app of the portal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivateApp {
    /// Its access token.
    pub token: String,
    /// Its scopes.
    pub scopes: Vec<String>,
}

/// An OAuth app installed in the portal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuthApp {
    /// Client id.
    pub client_id: String,
    /// Client secret.
    pub client_secret: String,
    /// The refresh token of its install.
    pub refresh_token: String,
    /// The scopes of its install.
    pub scopes: Vec<String>,
    /// Lifetime of its access tokens, seconds (HubSpot: 1800).
    #[serde(default = "half_an_hour")]
    pub expires_in: u64,
}

fn half_an_hour() -> u64 {
    1800
}

/// An owner (a HubSpot user, `PublicOwner`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Owner {
    /// Owner id.
    pub id: String,
    /// E-mail.
    #[serde(default)]
    pub email: Option<String>,
    /// First name.
    #[serde(default, rename = "firstName")]
    pub first_name: Option<String>,
    /// Last name.
    #[serde(default, rename = "lastName")]
    pub last_name: Option<String>,
    /// The user id (not an owner id: typing it in place of one is a classic mistake).
    #[serde(default, rename = "userId")]
    pub user_id: Option<u64>,
    /// Deactivated owners are archived.
    #[serde(default)]
    pub archived: bool,
}

/// A CRM object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Object {
    /// Numeric id, as a string.
    pub id: String,
    /// Property values.
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
}

/// The portal's content, as `PUT /_fake/portal` and `--portal FILE` take it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PortalSpec {
    /// Private apps.
    #[serde(default)]
    pub private_apps: Vec<PrivateApp>,
    /// OAuth apps.
    #[serde(default)]
    pub oauth_apps: Vec<OAuthApp>,
    /// Owners.
    #[serde(default)]
    pub owners: Vec<Owner>,
    /// Objects per type.
    #[serde(default)]
    pub objects: BTreeMap<String, Vec<Object>>,
    /// Requests per app per 10 s before a 429 (default 100, a free portal's private app).
    #[serde(default)]
    pub burst_limit: Option<usize>,
}

impl PortalSpec {
    /// The demo portal.
    pub fn demo() -> Self {
        serde_json::from_str(DEMO_PORTAL).unwrap_or_default()
    }
}

/// An access token the token endpoint gave.
#[derive(Debug, Clone)]
struct Issued {
    client_id: String,
    scopes: Vec<String>,
    expires_at: Instant,
}

/// Who a request is authorized as.
#[derive(Debug, Clone)]
struct Caller {
    /// The app (its token, or its client id).
    app: String,
    scopes: Vec<String>,
    private: bool,
}

/// The portal's state.
#[derive(Debug, Default)]
pub struct Portal {
    spec: PortalSpec,
    issued: HashMap<String, Issued>,
    tokens_issued: u64,
    next_id: u64,
    /// Request times per app within the burst window.
    window: HashMap<String, VecDeque<Instant>>,
    daily: HashMap<String, u64>,
    correlation: u64,
}

/// An answer of the portal.
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
}

/// The burst window (HubSpot's `TEN_SECONDLY_ROLLING`).
const WINDOW: Duration = Duration::from_secs(10);
/// A private app's daily allowance in the fake.
const DAILY: u64 = 250_000;

/// The scope a request on `object_type` needs (`write` for an update).
pub fn object_scope(object_type: &str, write: bool) -> String {
    match object_type {
        "tickets" => "tickets".to_string(),
        other => format!(
            "crm.objects.{other}.{}",
            if write { "write" } else { "read" }
        ),
    }
}

impl Portal {
    /// A portal with `spec`.
    pub fn new(spec: PortalSpec) -> Self {
        let next_id = spec
            .objects
            .values()
            .flatten()
            .filter_map(|o| o.id.parse::<u64>().ok())
            .max()
            .unwrap_or(1000);
        Self {
            spec,
            next_id,
            ..Self::default()
        }
    }

    /// The portal's content now.
    pub fn spec(&self) -> &PortalSpec {
        &self.spec
    }

    /// The content, to change (tests: add owners, archive one, add apps).
    pub fn spec_mut(&mut self) -> &mut PortalSpec {
        &mut self.spec
    }

    /// Adds an object of `object_type` with `properties` (and `id` when given); returns its id.
    pub fn add_object(
        &mut self, object_type: &str, id: Option<String>, properties: BTreeMap<String, String>,
    ) -> String {
        let id = id.unwrap_or_else(|| {
            self.next_id += 1;
            self.next_id.to_string()
        });
        if let Ok(n) = id.parse::<u64>() {
            self.next_id = self.next_id.max(n);
        }
        let list = self
            .spec
            .objects
            .entry(object_type.to_string())
            .or_default();
        list.retain(|o| o.id != id);
        list.push(Object {
            id: id.clone(),
            properties,
        });
        id
    }

    /// The object `id` of `object_type`.
    pub fn object(&self, object_type: &str, id: &str) -> Option<&Object> {
        self.spec
            .objects
            .get(object_type)?
            .iter()
            .find(|o| o.id == id)
    }

    fn correlation_id(&mut self) -> String {
        self.correlation += 1;
        format!("5b1c2d34-0000-4000-8000-{:012x}", self.correlation)
    }

    /// An error answer in HubSpot's shape.
    pub fn error(&mut self, status: u16, category: &str, message: &str) -> Answer {
        let correlation = self.correlation_id();
        Answer::json(
            status,
            json!({"status": "error", "message": message, "correlationId": correlation, "category": category}),
        )
    }

    fn caller(&mut self, authorization: Option<&str>) -> Result<Caller, Answer> {
        let token = authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let Some(token) = token else {
            return Err(self.error(
                401,
                "INVALID_AUTHENTICATION",
                "Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview",
            ));
        };
        if let Some(app) = self.spec.private_apps.iter().find(|a| a.token == token) {
            return Ok(Caller {
                app: app.token.clone(),
                scopes: app.scopes.clone(),
                private: true,
            });
        }
        if let Some(issued) = self.issued.get(token).cloned() {
            let now = Instant::now();
            if issued.expires_at <= now {
                let ago = (now - issued.expires_at).as_secs();
                return Err(self.error(
                    401,
                    "EXPIRED_AUTHENTICATION",
                    &format!("The OAuth token used to make this call expired {ago} second(s) ago."),
                ));
            }
            return Ok(Caller {
                app: issued.client_id,
                scopes: issued.scopes,
                private: false,
            });
        }
        Err(self.error(
            401,
            "INVALID_AUTHENTICATION",
            "Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview",
        ))
    }

    fn missing_scope(&mut self, scope: &str) -> Answer {
        let mut answer = self.error(
            403,
            "MISSING_SCOPES",
            "This app hasn't been granted all required scopes to make this call. Read more about required scopes here: https://developers.hubspot.com/scopes.",
        );
        answer.body["errors"] = json!([{
            "message": "One or more of the following scopes are required.",
            "context": {"requiredGranularScopes": [scope]}
        }]);
        answer
    }

    /// Counts the request against the caller's burst and daily limits: the rate-limit headers,
    /// or a 429 past the burst limit.
    fn count(&mut self, caller: &Caller) -> Result<Vec<(String, String)>, Answer> {
        let limit = self.spec.burst_limit.unwrap_or(100);
        let now = Instant::now();
        let times = self.window.entry(caller.app.clone()).or_default();
        while times.front().is_some_and(|t| now - *t >= WINDOW) {
            times.pop_front();
        }
        let used = times.len();
        let mut headers = vec![
            ("X-HubSpot-RateLimit-Max".to_string(), limit.to_string()),
            (
                "X-HubSpot-RateLimit-Interval-Milliseconds".to_string(),
                WINDOW.as_millis().to_string(),
            ),
        ];
        if used >= limit {
            headers.push(("X-HubSpot-RateLimit-Remaining".to_string(), "0".to_string()));
            let correlation = self.correlation_id();
            return Err(Answer {
                status: 429,
                headers,
                body: json!({
                    "status": "error",
                    "message": "You have reached your ten_secondly_rolling limit.",
                    "errorType": "RATE_LIMIT",
                    "correlationId": correlation,
                    "policyName": "TEN_SECONDLY_ROLLING",
                    "groupName": format!("fake:{}", caller.app.len()),
                }),
            });
        }
        times.push_back(now);
        headers.push((
            "X-HubSpot-RateLimit-Remaining".to_string(),
            (limit - used - 1).to_string(),
        ));
        if caller.private {
            let day = self.daily.entry(caller.app.clone()).or_default();
            *day += 1;
            headers.push(("X-HubSpot-RateLimit-Daily".to_string(), DAILY.to_string()));
            headers.push((
                "X-HubSpot-RateLimit-Daily-Remaining".to_string(),
                DAILY.saturating_sub(*day).to_string(),
            ));
        }
        Ok(headers)
    }

    /// Answers a request on a HubSpot path (`query` without `?`, `body` as received).
    pub fn answer(
        &mut self, method: &str, path: &str, query: Option<&str>, authorization: Option<&str>,
        body: &[u8],
    ) -> Answer {
        let params: Vec<(String, String)> = query
            .map(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let param = |name: &str| {
            params
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        if method == "POST" && path == "/oauth/v1/token" {
            return self.token(body);
        }
        let caller = match self.caller(authorization) {
            Ok(caller) => caller,
            Err(answer) => return answer,
        };
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (needed, route) = match (method, segments.as_slice()) {
            ("GET", ["crm", "v3", "owners"]) => ("crm.objects.owners.read".to_string(), 0),
            ("PATCH", ["crm", "v3", "objects", t, _]) => (object_scope(t, true), 1),
            ("GET", ["crm", "v3", "objects", t, _]) => (object_scope(t, false), 2),
            _ => {
                return self.error(404, "OBJECT_NOT_FOUND", "resource not found");
            }
        };
        let allowed = caller.scopes.iter().any(|s| s == &needed)
            || (route == 0 && caller.scopes.iter().any(|s| s == "automation"))
            || (route == 2
                && caller
                    .scopes
                    .iter()
                    .any(|s| s == &needed.replace(".read", ".write")));
        if !allowed {
            return self.missing_scope(&needed);
        }
        let limits = match self.count(&caller) {
            Ok(headers) => headers,
            Err(answer) => return answer,
        };
        let mut answer = match route {
            0 => self.owners(
                param("email"),
                param("after"),
                param("limit"),
                param("archived"),
            ),
            _ => {
                let object_type = segments[3].to_string();
                let id = decode(segments[4]);
                let found = match param("idProperty") {
                    Some(property) => self.spec.objects.get(&object_type).and_then(|list| {
                        list.iter()
                            .find(|o| o.properties.get(&property) == Some(&id))
                            .map(|o| o.id.clone())
                    }),
                    None => self.object(&object_type, &id).map(|o| o.id.clone()),
                };
                match (found, route) {
                    (None, _) => self.error(
                        404,
                        "OBJECT_NOT_FOUND",
                        "Object not found.  objectId are usually numeric.",
                    ),
                    (Some(id), 1) => self.update(&object_type, &id, body),
                    (Some(id), _) => self.read(&object_type, &id),
                }
            }
        };
        answer.headers.extend(limits);
        answer
    }

    fn object_json(object: &Object) -> Value {
        json!({
            "id": object.id,
            "properties": object.properties,
            "createdAt": "2026-01-05T09:00:00.000Z",
            "updatedAt": "2026-11-18T10:00:00.000Z",
            "archived": false
        })
    }

    fn read(&mut self, object_type: &str, id: &str) -> Answer {
        match self.object(object_type, id) {
            Some(object) => Answer::json(200, Self::object_json(object)),
            None => self.error(404, "OBJECT_NOT_FOUND", "resource not found"),
        }
    }

    fn update(&mut self, object_type: &str, id: &str, body: &[u8]) -> Answer {
        let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let Some(properties) = parsed.get("properties").and_then(Value::as_object) else {
            return self.error(400, "VALIDATION_ERROR", "Invalid input JSON: no properties");
        };
        let mut values = BTreeMap::new();
        for (name, value) in properties {
            let Some(value) = value.as_str() else {
                return self.error(
                    400,
                    "VALIDATION_ERROR",
                    &format!("Invalid input JSON: {name} is not a string"),
                );
            };
            if name == "hubspot_owner_id"
                && !value.is_empty()
                && !self
                    .spec
                    .owners
                    .iter()
                    .any(|o| o.id == value && !o.archived)
            {
                let detail = json!([{
                    "isValid": false,
                    "message": format!("{value} is not a valid owner id"),
                    "error": "INVALID_OWNER_ID",
                    "name": "hubspot_owner_id",
                    "localizedErrorMessage": format!("{value} is not a valid owner id"),
                }]);
                return self.error(
                    400,
                    "VALIDATION_ERROR",
                    &format!("Property values were not valid: {detail}"),
                );
            }
            values.insert(name.clone(), value.to_string());
        }
        let Some(object) = self
            .spec
            .objects
            .get_mut(object_type)
            .and_then(|list| list.iter_mut().find(|o| o.id == id))
        else {
            return self.error(404, "OBJECT_NOT_FOUND", "resource not found");
        };
        object.properties.extend(values);
        Answer::json(200, Self::object_json(object))
    }

    fn owners(
        &mut self, email: Option<String>, after: Option<String>, limit: Option<String>,
        archived: Option<String>,
    ) -> Answer {
        let archived = archived.as_deref() == Some("true");
        let limit = limit
            .and_then(|l| l.parse::<usize>().ok())
            .unwrap_or(100)
            .clamp(1, 500);
        let start = after.and_then(|a| a.parse::<usize>().ok()).unwrap_or(0);
        let all: Vec<&Owner> = self
            .spec
            .owners
            .iter()
            .filter(|o| o.archived == archived)
            .filter(|o| {
                email.as_deref().is_none_or(|e| {
                    o.email
                        .as_deref()
                        .is_some_and(|mine| mine.eq_ignore_ascii_case(e))
                })
            })
            .collect();
        let page: Vec<Value> = all
            .iter()
            .skip(start)
            .take(limit)
            .map(|o| {
                json!({
                    "id": o.id,
                    "email": o.email,
                    "firstName": o.first_name,
                    "lastName": o.last_name,
                    "userId": o.user_id,
                    "type": "PERSON",
                    "archived": o.archived,
                    "createdAt": "2025-03-01T09:00:00.000Z",
                    "updatedAt": "2026-10-01T09:00:00.000Z",
                    "teams": []
                })
            })
            .collect();
        let mut body = json!({"results": page});
        if start + limit < all.len() {
            let next = (start + limit).to_string();
            body["paging"] = json!({"next": {"after": next, "link": format!("?after={next}")}});
        }
        Answer::json(200, body)
    }

    /// The token endpoint: the refresh-token grant (RFC 6749 section 6).
    fn token(&mut self, body: &[u8]) -> Answer {
        let form: HashMap<String, String> = form_urlencoded::parse(body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let field = |name: &str| form.get(name).cloned().unwrap_or_default();
        if field("grant_type") != "refresh_token" {
            return self.oauth_error("BAD_GRANT_TYPE", "unsupported grant type");
        }
        let Some(app) = self
            .spec
            .oauth_apps
            .iter()
            .find(|a| a.client_id == field("client_id"))
            .cloned()
        else {
            return self.oauth_error("BAD_CLIENT_ID", "missing or unknown client id");
        };
        if app.client_secret != field("client_secret") {
            return self.oauth_error("BAD_CLIENT_SECRET", "missing or invalid client secret");
        }
        if app.refresh_token != field("refresh_token") {
            return self.oauth_error("BAD_REFRESH_TOKEN", "missing or invalid refresh token");
        }
        self.tokens_issued += 1;
        let access_token = format!("fake-oauth-{}-{}", app.client_id, self.tokens_issued);
        self.issued.insert(
            access_token.clone(),
            Issued {
                client_id: app.client_id.clone(),
                scopes: app.scopes.clone(),
                expires_at: Instant::now()
                    .checked_add(Duration::from_secs(app.expires_in))
                    .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 86_400)),
            },
        );
        Answer::json(
            200,
            json!({
                "token_type": "bearer",
                "refresh_token": app.refresh_token,
                "access_token": access_token,
                "expires_in": app.expires_in,
            }),
        )
    }

    fn oauth_error(&mut self, status: &str, message: &str) -> Answer {
        let correlation = self.correlation_id();
        Answer::json(
            400,
            json!({"status": status, "message": message, "correlationId": correlation, "category": "VALIDATION_ERROR"}),
        )
    }

    /// Access tokens the token endpoint gave so far.
    pub fn tokens_issued(&self) -> u64 {
        self.tokens_issued
    }

    /// Makes every access token given so far expired (as half an hour later).
    pub fn expire_tokens(&mut self) {
        let now = Instant::now();
        for issued in self.issued.values_mut() {
            issued.expires_at = now;
        }
    }
}

/// Percent-decodes a path segment (UTF-8, invalid sequences replaced).
fn decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn portal() -> Portal {
        let mut p = Portal::new(PortalSpec::demo());
        p.spec_mut().owners.push(Owner {
            id: "90".into(),
            email: Some("peter.gibbons@initech.example".into()),
            first_name: None,
            last_name: None,
            user_id: None,
            archived: true,
        });
        p
    }

    fn token(p: &mut Portal) -> String {
        let app = p.spec().oauth_apps[0].clone();
        let body = format!(
            "grant_type=refresh_token&client_id={}&client_secret={}&refresh_token={}",
            app.client_id, app.client_secret, app.refresh_token
        );
        let answer = p.answer("POST", "/oauth/v1/token", None, None, body.as_bytes());
        assert_eq!(answer.status, 200, "{answer:?}");
        format!("Bearer {}", answer.body["access_token"].as_str().unwrap())
    }

    #[test]
    fn owners_page_by_limit_and_after_and_leave_archived_owners_out() {
        let mut p = portal();
        let auth = token(&mut p);
        let first = p.answer("GET", "/crm/v3/owners", Some("limit=1"), Some(&auth), b"");
        assert_eq!(first.body["results"].as_array().unwrap().len(), 1);
        let after = first.body["paging"]["next"]["after"]
            .as_str()
            .unwrap()
            .to_string();
        let second = p.answer(
            "GET",
            "/crm/v3/owners",
            Some(&format!("limit=1&after={after}")),
            Some(&auth),
            b"",
        );
        assert_ne!(
            second.body["results"][0]["id"],
            first.body["results"][0]["id"]
        );
        let peter = p.answer(
            "GET",
            "/crm/v3/owners",
            Some("email=PETER.GIBBONS%40initech.example"),
            Some(&auth),
            b"",
        );
        let ids: Vec<&str> = peter.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["71234501"], "the archived owner is left out");
        let archived = p.answer(
            "GET",
            "/crm/v3/owners",
            Some("archived=true"),
            Some(&auth),
            b"",
        );
        let archived: Vec<&str> = archived.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["id"].as_str().unwrap())
            .collect();
        assert_eq!(archived, ["71234499", "90"]);
        assert!(first
            .headers
            .iter()
            .any(|(k, _)| k == "X-HubSpot-RateLimit-Remaining"));
    }

    #[test]
    fn hubspot_s_refusals_have_its_shape() {
        let mut p = portal();
        let none = p.answer("GET", "/crm/v3/owners", None, None, b"");
        assert_eq!(none.status, 401);
        for key in ["status", "message", "correlationId", "category"] {
            assert!(none.body.get(key).is_some(), "{key}: {none:?}");
        }
        let auth = token(&mut p);
        let body = br#"{"properties": {"hubspot_owner_id": "90"}}"#;
        let invalid = p.answer(
            "PATCH",
            "/crm/v3/objects/contacts/5101",
            None,
            Some(&auth),
            body,
        );
        assert_eq!(invalid.status, 400);
        assert!(invalid.body["message"]
            .as_str()
            .unwrap()
            .contains("INVALID_OWNER_ID"));
        let missing = p.answer(
            "PATCH",
            "/crm/v3/objects/contacts/77",
            None,
            Some(&auth),
            body,
        );
        assert_eq!(
            (missing.status, missing.body["category"].as_str()),
            (404, Some("OBJECT_NOT_FOUND"))
        );
        let scope = p.answer("PATCH", "/crm/v3/objects/deals/1", None, Some(&auth), body);
        assert_eq!(
            (scope.status, scope.body["category"].as_str()),
            (403, Some("MISSING_SCOPES"))
        );
        p.expire_tokens();
        let expired = p.answer("GET", "/crm/v3/owners", None, Some(&auth), b"");
        assert_eq!(
            (expired.status, expired.body["category"].as_str()),
            (401, Some("EXPIRED_AUTHENTICATION"))
        );
        let refused = p.answer(
            "POST",
            "/oauth/v1/token",
            None,
            None,
            b"grant_type=refresh_token&client_id=x",
        );
        assert_eq!(refused.status, 400);
    }

    #[test]
    fn an_app_past_its_burst_limit_gets_hubspot_s_429() {
        let mut p = portal();
        p.spec_mut().burst_limit = Some(2);
        let auth = token(&mut p);
        for _ in 0..2 {
            assert_eq!(
                p.answer("GET", "/crm/v3/owners", None, Some(&auth), b"")
                    .status,
                200
            );
        }
        let limited = p.answer("GET", "/crm/v3/owners", None, Some(&auth), b"");
        assert_eq!(limited.status, 429);
        assert_eq!(limited.body["policyName"], "TEN_SECONDLY_ROLLING");
        assert!(limited
            .headers
            .contains(&("X-HubSpot-RateLimit-Remaining".to_string(), "0".to_string())));
    }

    #[test]
    fn an_object_is_found_by_its_id_property_and_its_owner_set() {
        let mut p = portal();
        let auth = token(&mut p);
        let body = br#"{"properties": {"hubspot_owner_id": "71234502"}}"#;
        let by_email = p.answer(
            "PATCH",
            "/crm/v3/objects/contacts/bill%40initech-customer.example",
            Some("idProperty=email"),
            Some(&auth),
            body,
        );
        assert_eq!(by_email.status, 200, "{by_email:?}");
        assert_eq!(
            p.object("contacts", "5102").unwrap().properties["hubspot_owner_id"],
            "71234502"
        );
        assert_eq!(decode("a%20b%2Fc%C3%BC"), "a b/cü");
    }
}
