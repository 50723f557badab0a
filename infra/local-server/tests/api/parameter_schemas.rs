//! The path and query parameters of the API description say only what the server enforces: a
//! value the document rules out (a `format: uuid` or `date-time` that is neither, a value outside
//! an `enum` or a `pattern`, an integer outside `minimum`/`maximum`, a boolean that is not one)
//! is never answered 2xx. A fuzzer that sends such a value (schemathesis' negative phase) must
//! see it refused, and a client generated from the document must not be told a rule the server
//! does not keep.
//!
//! The test walks every `GET` of the document: the operation with valid values first (ids of the
//! demo account, each typed query parameter at its example or a well-formed value), which must
//! succeed, then each typed parameter alone made invalid, which must be 400 (a query parameter:
//! naming it in `field`) or, for a path id, 400 or 404. Every other operation with a typed path
//! id is sent with an id the document rules out, which must be a 4xx. A new route's parameters
//! are held to the same rules.

use crate::common;
use crate::request_schemas::{json_body, resolve, setup};

use axum::http::{Method, StatusCode};
use common::TestApp;
use serde_json::Value;

/// A parameter of an operation with a rule the document states about its values.
#[derive(Debug, Clone)]
struct Typed {
    name: String,
    location: String,
    schema: Value,
    example: Option<Value>,
}

/// The parameters of `operation` (references followed) whose schema has a format, an enum, a
/// pattern, integer bounds or a boolean type.
fn typed_parameters(document: &Value, operation: &Value) -> Vec<Typed> {
    let mut out = Vec::new();
    for parameter in operation["parameters"].as_array().into_iter().flatten() {
        let parameter = resolve(document, parameter);
        let location = parameter["in"].as_str().unwrap_or_default();
        if !matches!(location, "path" | "query") {
            continue;
        }
        let schema = resolve(document, &parameter["schema"]).clone();
        let typed = ["format", "enum", "pattern", "minimum", "maximum"]
            .iter()
            .any(|k| schema.get(*k).is_some())
            || schema["type"] == "boolean";
        if typed {
            out.push(Typed {
                name: parameter["name"].as_str().unwrap().to_string(),
                location: location.to_string(),
                example: parameter
                    .get("example")
                    .or_else(|| schema.get("example"))
                    .cloned(),
                schema,
            });
        }
    }
    out
}

/// A value the schema admits, for the valid request: the example, else one made from the rule;
/// `None` when none can be made without the server's help (a cursor).
fn valid_value(typed: &Typed) -> Option<String> {
    if let Some(example) = &typed.example {
        return Some(match example {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    }
    let schema = &typed.schema;
    match schema["format"].as_str() {
        Some("uuid") => return Some(uuid::Uuid::new_v4().to_string()),
        Some("date-time") => return Some("2026-11-01T00:00:00Z".into()),
        _ => {}
    }
    if let Some(first) = schema["enum"].get(0) {
        return first.as_str().map(str::to_string);
    }
    None
}

/// Values the schema rules out (at least one per rule it states).
fn invalid_values(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match schema["format"].as_str() {
        Some("uuid") => out.extend(["not-a-uuid".to_string(), "12345".into()]),
        Some("date-time") => {
            out.extend(["yesterday".to_string(), "2026-13-01T00:00:00Z".into()]);
        }
        _ => {}
    }
    if schema.get("enum").is_some() {
        out.push("not-an-option".into());
    }
    if let Some(pattern) = schema["pattern"].as_str() {
        let candidate = "%3E%20not%20matching".to_string();
        let regex = regex::Regex::new(pattern).unwrap();
        assert!(!regex.is_match("> not matching"), "{pattern}");
        out.push(candidate);
    }
    if let Some(min) = schema["minimum"].as_i64() {
        out.push((min - 1).to_string());
    }
    if let Some(max) = schema["maximum"].as_i64() {
        out.push((max + 1).to_string());
    }
    if schema["type"] == "integer" {
        out.push("1.5".into());
        out.push("x".into());
    }
    if schema["type"] == "boolean" {
        out.push("maybe".into());
    }
    out
}

/// `template` with each path parameter replaced by an item of the account: the first item of the
/// list before it (its `id`, or a revision's number), else one created from the list's create
/// example, else (a list the API cannot add to, as a webhook's deliveries) a fresh UUID, which
/// only the checks of ids the document rules out use.
async fn concrete_path(test: &TestApp, token: &str, document: &Value, template: &str) -> String {
    let mut path = String::new();
    for segment in template.split('/').skip(1) {
        if !segment.starts_with('{') {
            path.push('/');
            path.push_str(segment);
            continue;
        }
        let list = test
            .call(Method::GET, &format!("{path}?limit=1"), token, None)
            .await;
        let first = &list.body["data"][0];
        let id = match (first["id"].as_str(), first["revision"].as_u64()) {
            (Some(id), _) => id.to_string(),
            (None, Some(revision)) => revision.to_string(),
            (None, None) => match json_body(document, &document["paths"][&path]["post"]) {
                Some((_, example)) => {
                    let created = test.call(Method::POST, &path, token, Some(example)).await;
                    assert!(created.status.is_success(), "POST {path}: {}", created.body);
                    created.body["id"].as_str().unwrap().to_string()
                }
                None => uuid::Uuid::new_v4().to_string(),
            },
        };
        path.push('/');
        path.push_str(&id);
    }
    path
}

/// `path` with its path parameter (counted in `template`) replaced by `value`.
fn with_path_value(template: &str, path: &str, name: &str, value: &str) -> String {
    let position = template
        .split('/')
        .position(|s| s == format!("{{{name}}}"))
        .unwrap();
    let mut segments: Vec<&str> = path.split('/').collect();
    segments[position] = value;
    segments.join("/")
}

fn query_string(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Sends `GET path?query` and returns the answer.
async fn get(
    test: &TestApp, token: &str, path: &str, query: &[(String, String)],
) -> common::Answer {
    let uri = if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", query_string(query))
    };
    test.call(Method::GET, &uri, token, None).await
}

#[tokio::test]
async fn every_typed_path_and_query_parameter_is_enforced_by_the_server() {
    let (test, token, document) = setup().await;
    // One history entry and one audit event to read by id (the demo seed has neither).
    let dispatched = test
        .call(
            Method::POST,
            "/dispatch/router",
            &token,
            Some(serde_json::json!({
                "router_id": "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45",
                "object_id": "01936b2a-7c00-7a00-8000-000000000002"
            })),
        )
        .await;
    assert_eq!(dispatched.status, StatusCode::OK, "{}", dispatched.body);
    let patched = test
        .call(
            Method::PATCH,
            "/users/2e8f9a01-b2c3-4d4e-9f50-6b7c8d9e0f12",
            &token,
            Some(serde_json::json!({"phone": "+1 555 0100"})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    // A draft of the router the paths name (the first listed), for `GET .../draft`.
    let first = test
        .call(Method::GET, "/routers?limit=1", &token, None)
        .await;
    let router = first.body["data"][0]["id"].as_str().unwrap().to_string();
    let restored = test
        .call(
            Method::POST,
            &format!("/routers/{router}/revisions/1/restore"),
            &token,
            None,
        )
        .await;
    assert_eq!(restored.status, StatusCode::OK, "{}", restored.body);
    let mut checked = 0;
    for (template, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let Ok(method) = Method::from_bytes(method.to_uppercase().as_bytes()) else {
                continue;
            };
            let typed = typed_parameters(&document, operation);
            if typed.is_empty() {
                continue;
            }
            let id = operation["operationId"].as_str().unwrap_or(template);
            let path = concrete_path(&test, &token, &document, template).await;
            if method != Method::GET {
                // Another method: an id the document rules out is refused, whatever the body.
                let body = json_body(&document, operation).map(|(_, example)| example);
                for t in typed.iter().filter(|t| t.location == "path") {
                    for bad in invalid_values(&t.schema) {
                        let uri = with_path_value(template, &path, &t.name, &bad);
                        let answer = test.call(method.clone(), &uri, &token, body.clone()).await;
                        assert!(
                            answer.status.is_client_error(),
                            "{id}: {} = {bad:?} answered {} {}",
                            t.name,
                            answer.status,
                            answer.body
                        );
                        checked += 1;
                    }
                }
                continue;
            }
            let valid: Vec<(String, String)> = typed
                .iter()
                .filter(|t| t.location == "query")
                .filter_map(|t| valid_value(t).map(|v| (t.name.clone(), v)))
                .collect();
            let answer = get(&test, &token, &path, &valid).await;
            assert!(
                answer.status.is_success(),
                "{id}: the valid request {path}?{} answered {} {}",
                query_string(&valid),
                answer.status,
                answer.body
            );
            for t in &typed {
                for bad in invalid_values(&t.schema) {
                    let answer = if t.location == "path" {
                        let uri = with_path_value(template, &path, &t.name, &bad);
                        get(&test, &token, &uri, &valid).await
                    } else {
                        let mut query: Vec<_> = valid
                            .iter()
                            .filter(|(k, _)| *k != t.name)
                            .cloned()
                            .collect();
                        query.push((t.name.clone(), bad.clone()));
                        get(&test, &token, &path, &query).await
                    };
                    let refused = if t.location == "path" {
                        matches!(
                            answer.status,
                            StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND
                        )
                    } else {
                        answer.status == StatusCode::BAD_REQUEST && answer.body["field"] == *t.name
                    };
                    assert!(
                        refused,
                        "{id}: the document rules out {} {} = {bad:?}, the server answers {} {}",
                        t.location, t.name, answer.status, answer.body
                    );
                    assert_eq!(answer.body["error"], true, "{id}: {}", answer.body);
                    checked += 1;
                }
            }
        }
    }
    // Lists (limit, offset, after, archived) of 17 routes, the ids of routers, users, calendars,
    // webhooks and audit events, the audit filters and the stats window.
    assert!(checked >= 150, "only {checked} refusals checked");
}
