//! Validation of requests against a CRM's published API description: HubSpot's
//! (`infra/fake-crm/hubspot-api.json`, a schema written from HubSpot's OpenAPI descriptions of
//! CRM objects v3, owners v3 and OAuth v1; their source repository and commit are in the file,
//! HubSpot's files themselves are not licensed for reuse) and Salesforce's
//! (`infra/fake-crm/salesforce-api.json`, written from Salesforce's REST API and OAuth 2.0
//! guides, the pages named in the file). Every request a fake receives on a CRM path is checked:
//! an operation with its method and path template, the path and query parameters declared (no
//! other) with their types, the required ones present, declared headers against their schema
//! when sent (and present when required), the body's media type and its JSON Schema (form bodies
//! as an object of strings), and a bearer token where the operation is secured.

use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::OnceLock;

/// What the violation of an operation's security says (a request without a bearer token).
pub const NEEDS_BEARER: &str = "needs Authorization: Bearer <token>";

/// HubSpot's schema's text.
pub const SCHEMA: &str = include_str!("../hubspot-api.json");

/// Salesforce's schema's text.
pub const SALESFORCE_SCHEMA: &str = include_str!("../salesforce-api.json");

/// One described operation.
#[derive(Debug, Clone, Deserialize)]
pub struct Operation {
    /// HubSpot's operation id.
    pub id: String,
    /// HTTP method.
    pub method: String,
    /// Path template, `{name}` for a parameter.
    pub path: String,
    /// Declared parameters.
    #[serde(default)]
    pub parameters: Vec<Parameter>,
    /// The request body, when the operation takes one.
    #[serde(default)]
    pub request_body: Option<RequestBody>,
    /// `bearer` or `none`.
    pub security: String,
}

/// A declared parameter.
#[derive(Debug, Clone, Deserialize)]
pub struct Parameter {
    /// Its name.
    pub name: String,
    /// `path` or `query`.
    #[serde(rename = "in")]
    pub location: String,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
    /// Its JSON Schema.
    pub schema: Value,
}

/// A declared request body.
#[derive(Debug, Clone, Deserialize)]
pub struct RequestBody {
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
    /// Its media type.
    pub media_type: String,
    /// Its JSON Schema.
    pub schema: Value,
}

#[derive(Debug, Deserialize)]
struct Document {
    operations: Vec<Operation>,
}

/// A CRM's described operations.
#[derive(Debug)]
pub struct Description {
    /// The CRM, as violations name it.
    pub name: &'static str,
    /// Its operations.
    pub operations: Vec<Operation>,
}

impl Description {
    fn parse(name: &'static str, text: &str) -> Self {
        Self {
            name,
            operations: serde_json::from_str::<Document>(text)
                .map(|d| d.operations)
                .unwrap_or_default(),
        }
    }

    /// HubSpot's description.
    pub fn hubspot() -> &'static Self {
        static HUBSPOT: OnceLock<Description> = OnceLock::new();
        HUBSPOT.get_or_init(|| Self::parse("HubSpot", SCHEMA))
    }

    /// Salesforce's description.
    pub fn salesforce() -> &'static Self {
        static SALESFORCE: OnceLock<Description> = OnceLock::new();
        SALESFORCE.get_or_init(|| Self::parse("Salesforce", SALESFORCE_SCHEMA))
    }
}

/// HubSpot's described operations.
pub fn operations() -> &'static [Operation] {
    &Description::hubspot().operations
}

/// Whether `path` is one of Salesforce's (its OAuth endpoints and its REST API).
pub fn is_salesforce_path(path: &str) -> bool {
    path.starts_with("/services/")
}

/// Whether `path` is one of HubSpot's (the fake's other paths are its control routes and the
/// webhook receiver's).
pub fn is_hubspot_path(path: &str) -> bool {
    path.starts_with("/crm/") || path.starts_with("/oauth/")
}

/// A request as the validator reads it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Method.
    pub method: &'a str,
    /// Path as sent (percent-encoded).
    pub path: &'a str,
    /// Query as sent, without `?`.
    pub query: Option<&'a str>,
    /// `Content-Type`.
    pub content_type: Option<&'a str>,
    /// `Authorization`.
    pub authorization: Option<&'a str>,
    /// Every header, lowercase names (the declared ones are checked).
    pub headers: &'a [(&'a str, &'a str)],
    /// Body.
    pub body: &'a [u8],
}

/// The values of `template`'s parameters in `path`, when it matches.
fn matches(template: &str, path: &str) -> Option<Vec<(String, String)>> {
    let t: Vec<&str> = template.trim_matches('/').split('/').collect();
    let p: Vec<&str> = path.trim_matches('/').split('/').collect();
    if t.len() != p.len() {
        return None;
    }
    let mut values = Vec::new();
    for (t, p) in t.iter().zip(&p) {
        match t.strip_prefix('{').and_then(|n| n.strip_suffix('}')) {
            Some(name) if !p.is_empty() => {
                let decoded = percent_decode(p)?;
                values.push((name.to_string(), decoded));
            }
            Some(_) => return None,
            None if t == p => {}
            None => return None,
        }
    }
    Some(values)
}

fn percent_decode(text: &str) -> Option<String> {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

/// A parameter's text as the JSON value its schema reads (`integer`, `boolean`, else a string).
fn typed(text: &str, schema: &Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => text
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::String(text.to_string())),
        Some("boolean") => match text {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            other => Value::String(other.to_string()),
        },
        _ => Value::String(text.to_string()),
    }
}

fn check(schema: &Value, value: &Value, what: &str, out: &mut Vec<String>) {
    match jsonschema::validator_for(schema) {
        Ok(validator) => {
            for error in validator.iter_errors(value) {
                out.push(format!("{what}: {error} (at {})", error.instance_path()));
            }
        }
        Err(error) => out.push(format!("{what}: the schema does not compile: {error}")),
    }
}

/// Everything `request` does that HubSpot's description does not allow (empty: it validates).
pub fn violations(request: &Request<'_>) -> Vec<String> {
    violations_of(Description::hubspot(), request)
}

/// Everything `request` does that `description` does not allow (empty: it validates).
pub fn violations_of(description: &Description, request: &Request<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let found = description.operations.iter().find_map(|op| {
        (op.method.eq_ignore_ascii_case(request.method))
            .then(|| matches(&op.path, request.path).map(|params| (op, params)))
            .flatten()
    });
    let Some((op, path_values)) = found else {
        out.push(format!(
            "no operation {} {} in {}'s description",
            request.method, request.path, description.name
        ));
        return out;
    };
    for (name, value) in &path_values {
        match op
            .parameters
            .iter()
            .find(|p| p.location == "path" && &p.name == name)
        {
            Some(p) => check(
                &p.schema,
                &typed(value, &p.schema),
                &format!("path parameter {name}"),
                &mut out,
            ),
            None => out.push(format!("path parameter {name} is not declared")),
        }
    }
    let query: Vec<(String, String)> = request
        .query
        .map(|q| {
            form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default();
    for (name, value) in &query {
        match op
            .parameters
            .iter()
            .find(|p| p.location == "query" && &p.name == name)
        {
            Some(p) => check(
                &p.schema,
                &typed(value, &p.schema),
                &format!("query parameter {name}"),
                &mut out,
            ),
            None => out.push(format!(
                "query parameter {name} is not declared by {}",
                op.id
            )),
        }
        if query.iter().filter(|(n, _)| n == name).count() > 1 {
            out.push(format!("query parameter {name} is given more than once"));
        }
    }
    for p in op
        .parameters
        .iter()
        .filter(|p| p.required && p.location == "query")
    {
        if !query.iter().any(|(n, _)| n == &p.name) {
            out.push(format!("query parameter {} is required", p.name));
        }
    }
    for p in op.parameters.iter().filter(|p| p.location == "header") {
        let name = p.name.to_ascii_lowercase();
        match request.headers.iter().find(|(n, _)| *n == name) {
            Some((_, value)) => check(
                &p.schema,
                &typed(value, &p.schema),
                &format!("header {}", p.name),
                &mut out,
            ),
            None if p.required => out.push(format!("header {} is required", p.name)),
            None => {}
        }
    }
    match &op.request_body {
        Some(body) => {
            let media = request.content_type.map(|c| {
                c.split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase()
            });
            if request.body.is_empty() {
                if body.required {
                    out.push(format!("{} requires a body", op.id));
                }
            } else if media.as_deref() != Some(body.media_type.as_str()) {
                out.push(format!(
                    "the body's Content-Type is {:?}, not {}",
                    request.content_type, body.media_type
                ));
            } else {
                let value = if body.media_type == "application/x-www-form-urlencoded" {
                    let mut fields = Map::new();
                    for (k, v) in form_urlencoded::parse(request.body) {
                        fields.insert(k.into_owned(), Value::String(v.into_owned()));
                    }
                    Ok(Value::Object(fields))
                } else {
                    serde_json::from_slice::<Value>(request.body)
                };
                match value {
                    Ok(value) => check(&body.schema, &value, "body", &mut out),
                    Err(error) => out.push(format!("the body is not {}: {error}", body.media_type)),
                }
            }
        }
        None if !request.body.is_empty() => out.push(format!("{} takes no body", op.id)),
        None => {}
    }
    if op.security == "bearer" {
        let bearer = request
            .authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .is_some_and(|t| !t.trim().is_empty());
        if !bearer {
            out.push(format!("{} {NEEDS_BEARER}", op.id));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(
        method: &'a str, path: &'a str, query: Option<&'a str>, body: &'a [u8],
    ) -> Request<'a> {
        Request {
            method,
            path,
            query,
            content_type: Some("application/json"),
            authorization: Some("Bearer t"),
            headers: &[],
            body,
        }
    }

    #[test]
    fn the_schema_reads_and_the_sync_s_requests_validate() {
        assert_eq!(operations().len(), 3);
        let body = br#"{"properties": {"hubspot_owner_id": "71234501"}}"#;
        assert_eq!(
            violations(&request(
                "PATCH",
                "/crm/v3/objects/contacts/5101",
                None,
                body
            )),
            Vec::<String>::new()
        );
        assert!(violations(&request(
            "PATCH",
            "/crm/v3/objects/contacts/a%40b.example",
            Some("idProperty=email"),
            body
        ))
        .is_empty());
        assert!(violations(&request(
            "GET",
            "/crm/v3/owners",
            Some("email=a%40b.example&after=2"),
            b""
        ))
        .is_empty());
        let form = b"grant_type=refresh_token&client_id=c&client_secret=s&refresh_token=r";
        let token = Request {
            content_type: Some("application/x-www-form-urlencoded"),
            authorization: None,
            ..request("POST", "/oauth/v1/token", None, form)
        };
        assert!(violations(&token).is_empty(), "{:?}", violations(&token));
    }

    #[test]
    fn what_hubspot_does_not_describe_is_reported() {
        let cases: Vec<(Request<'_>, &str)> = vec![
            (
                request(
                    "PATCH",
                    "/crm/v3/objects/contacts/1",
                    None,
                    br#"{"properties": {"hubspot_owner_id": 7}}"#,
                ),
                "body",
            ),
            (
                request(
                    "PATCH",
                    "/crm/v3/objects/contacts/1",
                    None,
                    br#"{"hubspot_owner_id": "7"}"#,
                ),
                "body",
            ),
            (
                request("PATCH", "/crm/v3/objects/contacts/1", None, b""),
                "requires a body",
            ),
            (
                request(
                    "PATCH",
                    "/crm/v3/objects/contacts/1",
                    Some("id_property=email"),
                    br#"{"properties": {}}"#,
                ),
                "not declared",
            ),
            (
                request(
                    "PUT",
                    "/crm/v3/objects/contacts/1",
                    None,
                    br#"{"properties": {}}"#,
                ),
                "no operation",
            ),
            (
                request("GET", "/crm/v3/owners", Some("limit=many"), b""),
                "query parameter limit",
            ),
            (
                request("GET", "/crm/v3/owners", Some("archived=yes"), b""),
                "query parameter archived",
            ),
            (request("GET", "/crm/v4/owners", None, b""), "no operation"),
            (
                Request {
                    authorization: None,
                    ..request("GET", "/crm/v3/owners", None, b"")
                },
                "Bearer",
            ),
            (
                Request {
                    content_type: Some("text/plain"),
                    ..request(
                        "PATCH",
                        "/crm/v3/objects/contacts/1",
                        None,
                        br#"{"properties": {}}"#,
                    )
                },
                "Content-Type",
            ),
            (
                Request {
                    content_type: Some("application/x-www-form-urlencoded"),
                    ..request("POST", "/oauth/v1/token", None, b"grant_type=password")
                },
                "body",
            ),
        ];
        for (request, expected) in cases {
            let found = violations(&request);
            assert!(
                found.iter().any(|v| v.contains(expected)),
                "{request:?}: {found:?} should name {expected}"
            );
        }
    }

    #[test]
    fn salesforces_schema_reads_and_the_syncs_requests_validate_and_others_do_not() {
        let salesforce = Description::salesforce();
        assert_eq!(salesforce.operations.len(), 4);
        let form = |body: &'static [u8]| Request {
            content_type: Some("application/x-www-form-urlencoded"),
            authorization: None,
            ..request("POST", "/services/oauth2/token", None, body)
        };
        for ok in [
            form(b"grant_type=client_credentials&client_id=c&client_secret=s"),
            form(b"grant_type=refresh_token&client_id=c&client_secret=s&refresh_token=r"),
        ] {
            assert_eq!(violations_of(salesforce, &ok), Vec::<String>::new());
        }
        let query = request(
            "GET",
            "/services/data/v66.0/query",
            Some("q=SELECT%20Id%20FROM%20User%20WHERE%20Email%20%3D%20%27a%40b.example%27%20AND%20IsActive%20%3D%20true"),
            b"",
        );
        assert_eq!(violations_of(salesforce, &query), Vec::<String>::new());
        let patch = Request {
            headers: &[("sforce-auto-assign", "FALSE")],
            ..request(
                "PATCH",
                "/services/data/v66.0/sobjects/Lead/00Q5g0000000001",
                None,
                br#"{"OwnerId": "0055g0000000001"}"#,
            )
        };
        assert_eq!(violations_of(salesforce, &patch), Vec::<String>::new());
        let cases: Vec<(Request<'_>, &str)> = vec![
            (form(b"grant_type=client_credentials&client_id=c"), "body"),
            (form(b"grant_type=password_x&client_id=c"), "body"),
            (form(b"grant_type=refresh_token&client_id=c"), "body"),
            (
                request("GET", "/services/data/v66.0/query", None, b""),
                "query parameter q is required",
            ),
            (
                request("GET", "/services/data/66.0/query", Some("q=x"), b""),
                "path parameter version",
            ),
            (
                Request {
                    headers: &[("sforce-auto-assign", "no")],
                    ..request(
                        "PATCH",
                        "/services/data/v66.0/sobjects/Lead/00Q5g0000000001",
                        None,
                        br#"{"OwnerId": "0055g0000000001"}"#,
                    )
                },
                "header Sforce-Auto-Assign",
            ),
            (
                request(
                    "PATCH",
                    "/services/data/v66.0/sobjects/Lead/00Q5g0000000001",
                    None,
                    br#"{"OwnerId": 5}"#,
                ),
                "body",
            ),
            (
                request(
                    "PUT",
                    "/services/data/v66.0/sobjects/Lead/00Q5g0000000001",
                    None,
                    b"{}",
                ),
                "no operation",
            ),
            (
                Request {
                    authorization: None,
                    ..query
                },
                "Bearer",
            ),
        ];
        for (request, expected) in cases {
            let found = violations_of(salesforce, &request);
            assert!(
                found.iter().any(|v| v.contains(expected)),
                "{request:?}: {found:?} should name {expected}"
            );
        }
    }
}
