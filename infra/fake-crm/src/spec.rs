//! Validation of requests against HubSpot's published API description (issue 50 point 6):
//! `infra/fake-crm/hubspot-api.json`, a schema written from HubSpot's OpenAPI descriptions of
//! CRM objects v3, owners v3 and OAuth v1 (their source repository and commit are in the file;
//! HubSpot's files themselves are not licensed for reuse). Every request the fake receives on a
//! HubSpot path is checked: an operation with its method and path template, the path and query
//! parameters declared (no other) with their types, the required ones present, the body's media
//! type and its JSON Schema (form bodies as an object of strings), and a bearer token where the
//! operation is secured.

use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::OnceLock;

/// What the violation of an operation's security says (a request without a bearer token).
pub const NEEDS_BEARER: &str = "needs Authorization: Bearer <token>";

/// The schema's text.
pub const SCHEMA: &str = include_str!("../hubspot-api.json");

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

/// The described operations.
pub fn operations() -> &'static [Operation] {
    static OPERATIONS: OnceLock<Vec<Operation>> = OnceLock::new();
    OPERATIONS.get_or_init(|| {
        serde_json::from_str::<Document>(SCHEMA)
            .map(|d| d.operations)
            .unwrap_or_default()
    })
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

/// Everything `request` does that the description does not allow (empty: it validates).
pub fn violations(request: &Request<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let found = operations().iter().find_map(|op| {
        (op.method.eq_ignore_ascii_case(request.method))
            .then(|| matches(&op.path, request.path).map(|params| (op, params)))
            .flatten()
    });
    let Some((op, path_values)) = found else {
        out.push(format!(
            "no operation {} {} in HubSpot's description",
            request.method, request.path
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
}
