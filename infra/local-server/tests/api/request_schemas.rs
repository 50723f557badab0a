//! The request schemas of the API description accept what the server accepts and say only what
//! it enforces (`docs/decisions.md`, "API description"): a typed client generated from
//! `openapi.json` must be able to send every valid request, and must not be told a rule the server
//! does not keep.
//!
//! - Every `enum` in a request body is one the server enforces: a value outside it (a made-up
//!   one, and a listed one in another letter case) is 400 naming the key. An `enum` the server
//!   does not keep (account-defined options, any letter case) belongs in `examples`.
//! - Every closed request object (`additionalProperties: false`) is one whose unknown keys the
//!   server refuses, naming the key.
//! - What the server accepts validates against the request schema (JSON Schema 2020-12 with
//!   formats, `jsonschema`): every writable field of the demo account (standard and custom) with
//!   each form of value its type takes, an enumeration's options by internal and display name in
//!   any case and the options the account added, a custom `properties` name, and every IANA
//!   time zone.
//!
//! The first two walk the whole document, so a new route's request schemas are held to the same
//! rules; they send each operation's example first, which must succeed.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use common::TestApp;
use local_server::{build_app, AppConfig, DEMO_SEED};
use serde_json::{json, Value};
use shared::fields::catalogue::Catalogue;
use shared::fields::definition::FieldType;
use shared::model::object_type::ObjectType;

/// The application over the demo seed, a Northwind token of every scope, and the document.
pub(crate) async fn setup() -> (TestApp, String, Value) {
    crate::common::cheap_secret_hashing();
    let app = build_app(AppConfig {
        seed: DEMO_SEED.into(),
        signing_key_pem: None,
    })
    .await
    .unwrap();
    let document = serde_json::to_value(app.openapi().unwrap()).unwrap();
    let test = TestApp { router: app.router };
    let token = test.northwind().await;
    (test, token, document)
}

/// `schema` with its `$ref`s followed (references within the document only).
pub(crate) fn resolve<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    let mut schema = schema;
    for _ in 0..16 {
        let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let pointer = reference.trim_start_matches('#');
        schema = document
            .pointer(pointer)
            .unwrap_or_else(|| panic!("unresolved {reference}"));
    }
    schema
}

/// A validator of `schema` within the document (so that its references resolve), formats on.
fn validator(document: &Value, schema: &Value) -> jsonschema::Validator {
    let mut root = document.as_object().unwrap().clone();
    for (key, value) in resolve(document, schema).as_object().unwrap() {
        root.insert(key.clone(), value.clone());
    }
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&Value::Object(root))
        .unwrap()
}

/// One step into a request body: an object's key, or an array's first item.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Item,
}

/// What a request schema says at one place of the body.
#[derive(Debug)]
enum Rule {
    /// `enum`: only these values.
    Enum(Vec<Value>),
    /// `additionalProperties: false`: no other keys.
    Closed,
}

/// Every `enum` and closed object of `schema`, with where it applies in the body.
fn rules(document: &Value, schema: &Value, at: &mut Vec<Step>, out: &mut Vec<(Vec<Step>, Rule)>) {
    if at.len() > 12 {
        return;
    }
    let schema = resolve(document, schema);
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        out.push((at.clone(), Rule::Enum(values.clone())));
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        out.push((at.clone(), Rule::Closed));
    }
    for combined in ["anyOf", "oneOf", "allOf"] {
        for part in schema
            .get(combined)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            rules(document, part, at, out);
        }
    }
    for (key, property) in schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        at.push(Step::Key(key.clone()));
        rules(document, property, at, out);
        at.pop();
    }
    if let Some(items) = schema.get("items") {
        at.push(Step::Item);
        rules(document, items, at, out);
        at.pop();
    }
}

/// `body` with `value` at `at` (missing objects and arrays made on the way).
fn with_value(body: &Value, at: &[Step], value: Value) -> Value {
    fn set(node: &mut Value, at: &[Step], value: Value) {
        match at.split_first() {
            None => *node = value,
            Some((Step::Key(key), rest)) => {
                if !node.is_object() {
                    *node = json!({});
                }
                let child = node
                    .as_object_mut()
                    .unwrap()
                    .entry(key.clone())
                    .or_insert(Value::Null);
                set(child, rest, value);
            }
            Some((Step::Item, rest)) => {
                if node.as_array().is_none_or(Vec::is_empty) {
                    *node = json!([null]);
                }
                set(&mut node[0], rest, value);
            }
        }
    }
    let mut body = body.clone();
    set(&mut body, at, value);
    body
}

/// The key a refusal must name: the innermost object key on the way to `at`.
fn key_of(at: &[Step]) -> Option<&str> {
    at.iter().rev().find_map(|step| match step {
        Step::Key(key) => Some(key.as_str()),
        Step::Item => None,
    })
}

/// A JSON request body of an operation: its schema and its example (the media type's, else the
/// schema's).
pub(crate) fn json_body<'a>(
    document: &'a Value, operation: &'a Value,
) -> Option<(&'a Value, Value)> {
    let media = operation.pointer("/requestBody/content/application~1json")?;
    let schema = media.get("schema")?;
    let resolved = resolve(document, schema);
    let example = media
        .get("example")
        .or_else(|| resolved.get("example"))
        .or_else(|| resolved.get("examples").and_then(|e| e.get(0)))
        .cloned();
    Some((schema, example.unwrap_or(Value::Null)))
}

/// `template` with each path parameter replaced by an id of the account: the first item of the
/// list before it, or one created from the list's create example when the list is empty.
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
        let id = match list.body.pointer("/data/0/id").and_then(Value::as_str) {
            Some(id) => id.to_string(),
            None => {
                let create = &document["paths"][&path]["post"];
                let (_, example) = json_body(document, create)
                    .unwrap_or_else(|| panic!("{path}: empty, and no create example"));
                let created = test.call(Method::POST, &path, token, Some(example)).await;
                assert!(created.status.is_success(), "POST {path}: {}", created.body);
                created.body["id"].as_str().unwrap().to_string()
            }
        };
        path.push('/');
        path.push_str(&id);
    }
    path
}

/// Every operation with a JSON body: (method, path template, operation).
fn body_operations(document: &Value) -> Vec<(Method, String, Value)> {
    let mut out = Vec::new();
    for (template, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if operation
                .pointer("/requestBody/content/application~1json")
                .is_some()
            {
                let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                out.push((method, template.clone(), operation.clone()));
            }
        }
    }
    out
}

#[tokio::test]
async fn every_enum_and_closed_object_of_a_request_schema_is_enforced_by_the_server() {
    let (test, token, document) = setup().await;
    let mut checked = 0;
    for (method, template, operation) in body_operations(&document) {
        let id = operation["operationId"].as_str().unwrap();
        let (schema, example) = json_body(&document, &operation).unwrap();
        let mut found = Vec::new();
        rules(&document, schema, &mut Vec::new(), &mut found);
        if found.is_empty() {
            continue;
        }
        assert!(
            !example.is_null(),
            "{id}: a request body without an example"
        );
        let path = concrete_path(&test, &token, &document, &template).await;
        let answer = test
            .call(method.clone(), &path, &token, Some(example.clone()))
            .await;
        assert!(
            answer.status.is_success(),
            "{id}: its example is refused: {}",
            answer.body
        );
        for (at, rule) in found {
            let (bodies, named) = match &rule {
                Rule::Enum(values) => {
                    let first = values[0].as_str().unwrap_or("option").to_string();
                    let mut refused = vec![json!(format!("{first}-not-an-option"))];
                    let upper = first.to_uppercase();
                    if !values.contains(&json!(upper)) {
                        refused.push(json!(upper));
                    }
                    let bodies = refused
                        .into_iter()
                        .map(|v| with_value(&example, &at, v))
                        .collect();
                    (bodies, key_of(&at).unwrap_or_default().to_string())
                }
                Rule::Closed => {
                    let mut unknown = at.clone();
                    unknown.push(Step::Key("zz_unknown_key".into()));
                    (
                        vec![with_value(&example, &unknown, json!("x"))],
                        "zz_unknown_key".into(),
                    )
                }
            };
            for body in bodies {
                let answer = test
                    .call(method.clone(), &path, &token, Some(body.clone()))
                    .await;
                let said = format!("{} {}", answer.body["field"], answer.body["message"]);
                assert!(
                    answer.status == StatusCode::BAD_REQUEST && said.contains(&named),
                    "{id}: the schema says {rule:?} at {at:?}, but the server answers {} {} to {body}",
                    answer.status,
                    answer.body
                );
                checked += 1;
            }
        }
    }
    // WebhookCreate and WebhookPatch (closed, `events` an enum), UserPatch (closed).
    assert!(checked >= 7, "only {checked} refusals checked");
}

/// Values a field of `field_type` takes, in the forms the server reads (BEHAVIOR 3), besides
/// the ones that clear it (null, and blank text for the types that have text).
fn accepted_values(name: &str, field_type: FieldType, n: usize) -> Vec<Value> {
    let mut values = match (field_type, name) {
        (FieldType::String, "email") => vec![json!(format!("Someone.{n}@Example.com"))],
        (FieldType::String, "website_url") => {
            vec![
                json!(format!("https://www.site-{n}.example/about")),
                json!(format!(" site-{n}.example ")),
            ]
        }
        (FieldType::String, _) => vec![json!("text"), json!(42.5), json!(true)],
        (FieldType::Number, _) => vec![json!(12.5), json!(0), json!(-3), json!(" 7.25 ")],
        (FieldType::Bool, _) => vec![json!(true), json!(" FALSE ")],
        (FieldType::Datetime, _) => vec![
            json!("2026-01-02T03:04:05Z"),
            json!("2026-01-02T03:04:05.250+01:00"),
            json!("2026-01-02T03:04"),
            json!("2026-01-02 03:04:05"),
            json!("2026-01-02"),
            json!("Fri, 02 Jan 2026 03:04:05 +0000"),
            json!(1_767_225_600_000_i64),
            json!(1_767_225_600),
            json!("1767225600"),
        ],
        (FieldType::Enumeration | FieldType::User, _) => Vec::new(),
    };
    values.push(Value::Null);
    if !matches!(field_type, FieldType::Number | FieldType::Bool) {
        values.push(json!(""));
        values.push(json!("  "));
    }
    values
}

/// The demo account's custom field definitions of `object_type` (seed `fields`).
fn seed_definitions(object_type: ObjectType) -> Vec<Value> {
    let seed: Value = serde_json::from_str(DEMO_SEED).unwrap();
    seed["accounts"][0]["fields"][object_type.as_str()]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Every writable field of the demo account for `object_type` (standard and custom), with the
/// values it takes: `(name, values)`.
fn account_fields(object_type: ObjectType, members: &[String]) -> Vec<(String, Vec<Value>)> {
    let definitions = seed_definitions(object_type);
    let added = |name: &str| -> Vec<(String, String)> {
        definitions
            .iter()
            .filter(|d| d["internal_name"] == name)
            .flat_map(|d| d["options"].as_array().cloned().unwrap_or_default())
            .map(|o| {
                (
                    o["internal_name"].as_str().unwrap().to_string(),
                    o["name"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let enumeration = |options: Vec<(String, String)>| -> Vec<Value> {
        let mut values = Vec::new();
        for (internal, display) in options {
            values.push(json!(internal));
            values.push(json!(display.to_uppercase()));
            values.push(json!(format!(" {display} ")));
        }
        values.extend([Value::Null, json!("")]);
        values
    };
    let mut out = Vec::new();
    let catalogue = Catalogue::standard(object_type);
    for (n, field) in catalogue
        .fields()
        .iter()
        .filter(|f| !f.is_system())
        .enumerate()
    {
        let values = match field.field_type {
            FieldType::Enumeration => {
                let mut options: Vec<(String, String)> = field
                    .options
                    .iter()
                    .map(|o| (o.internal_name.clone(), o.name.clone()))
                    .collect();
                options.extend(added(&field.internal_name));
                enumeration(options)
            }
            FieldType::User => {
                let mut values: Vec<Value> = members.iter().map(|m| json!(m)).collect();
                values.extend([Value::Null, json!("")]);
                values
            }
            other => accepted_values(&field.internal_name, other, n),
        };
        out.push((field.internal_name.clone(), values));
    }
    for definition in &definitions {
        let name = definition["internal_name"].as_str().unwrap();
        if catalogue.get(name).is_some() {
            continue;
        }
        let values = match definition["field_type_id"].as_str().unwrap() {
            "enumeration" => enumeration(added(name)),
            "number" => accepted_values(name, FieldType::Number, 0),
            "bool" => accepted_values(name, FieldType::Bool, 0),
            "datetime" => accepted_values(name, FieldType::Datetime, 0),
            "user" => members.iter().map(|m| json!(m)).collect(),
            _ => accepted_values(name, FieldType::String, 0),
        };
        out.push((name.to_string(), values));
    }
    out
}

#[tokio::test]
async fn every_value_the_server_accepts_validates_against_the_request_schemas() {
    let (test, token, document) = setup().await;
    let users = test.call(Method::GET, "/users?limit=2", &token, None).await;
    let members: Vec<String> = users.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|u| {
            [
                u["id"].as_str().unwrap().to_string(),
                u["email"].as_str().unwrap().to_uppercase(),
            ]
        })
        .collect();
    let mut checked = 0;
    for object_type in ObjectType::ALL {
        let ops = object_type.operation_ids();
        let plural = object_type.as_str();
        let find = |id: &str| -> Value {
            document["paths"]
                .as_object()
                .unwrap()
                .values()
                .flat_map(|item| item.as_object().unwrap().values())
                .find(|op| op["operationId"] == id)
                .cloned()
                .unwrap_or_else(|| panic!("no operation {id}"))
        };
        let update_operation = find(&ops.update);
        let (update_schema, _) = json_body(&document, &update_operation).unwrap();
        let update = validator(&document, update_schema);
        let create_operation = find(&ops.create);
        let (create_schema, create_example) = json_body(&document, &create_operation).unwrap();
        let create = validator(&document, create_schema);

        // Create: the example (its unique keys made unique: the demo data may hold the
        // example's own) with every custom field of the account set.
        let mut body = create_example.clone();
        for (key, unique) in [
            ("email", "created.by.the.test@example.com"),
            ("website_url", "https://www.created-by-the-test.example"),
            ("external_id", "created-by-the-test"),
        ] {
            if body["fields"].get(key).is_some() {
                body["fields"][key] = json!(unique);
            }
        }
        for (name, values) in account_fields(object_type, &members) {
            if !Catalogue::is_standard_name(object_type, &name) {
                body["fields"][&name] = values[0].clone();
            }
        }
        let created = test
            .call(
                Method::POST,
                &format!("/{plural}"),
                &token,
                Some(body.clone()),
            )
            .await;
        assert_eq!(
            created.status,
            StatusCode::CREATED,
            "{body} -> {}",
            created.body
        );
        let errors: Vec<String> = create.iter_errors(&body).map(|e| e.to_string()).collect();
        assert!(
            errors.is_empty(),
            "{}: the server accepts {body}, the schema refuses it: {errors:?}",
            ops.create
        );
        let item = format!("/{plural}/{}", created.body["id"].as_str().unwrap());

        // Update: each field with each value it takes, one at a time.
        for (name, values) in account_fields(object_type, &members) {
            for value in values {
                let body = json!({"fields": {&name: value}});
                let answer = test
                    .call(Method::PATCH, &item, &token, Some(body.clone()))
                    .await;
                assert_eq!(
                    answer.status,
                    StatusCode::OK,
                    "PATCH {item} {body} -> {}",
                    answer.body
                );
                let errors: Vec<String> =
                    update.iter_errors(&body).map(|e| e.to_string()).collect();
                assert!(
                    errors.is_empty(),
                    "{}: the server accepts {body}, the schema refuses it: {errors:?}",
                    ops.update
                );
                checked += 1;
            }
        }

        // `properties` with a custom name (and a standard one).
        let custom: Vec<String> = seed_definitions(object_type)
            .iter()
            .map(|d| d["internal_name"].as_str().unwrap().to_string())
            .filter(|name| !Catalogue::is_standard_name(object_type, name))
            .collect();
        let list = find(&ops.list);
        let parameter = list["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "properties")
            .unwrap();
        let names = validator(&document, &parameter["schema"]);
        for name in custom.iter().chain(&["external_id".to_string()]) {
            let answer = test
                .call(
                    Method::GET,
                    &format!("{item}?properties={name}"),
                    &token,
                    None,
                )
                .await;
            assert_eq!(
                answer.status,
                StatusCode::OK,
                "{item}?properties={name}: {}",
                answer.body
            );
            assert!(
                names.is_valid(&json!([name])),
                "{}: `properties` refuses {name}",
                ops.list
            );
            checked += 1;
        }
    }

    // A member's `time_zone`: every name of the tz database the server takes.
    let patch = &document["components"]["schemas"]["UserPatch"];
    let zones = validator(&document, patch);
    let member = format!("/users/{}", users.body["data"][0]["id"].as_str().unwrap());
    for (i, zone) in chrono_tz::TZ_VARIANTS.iter().enumerate() {
        let body = json!({"time_zone": zone.name()});
        assert!(
            zones.is_valid(&body),
            "UserPatch refuses the time zone {}",
            zone.name()
        );
        // The server takes each; a few go through it (the parser is tested with all of them).
        if i % 100 == 0 || ["GMT0", "GMT+0", "GMT-0", "Etc/GMT-14"].contains(&zone.name()) {
            let answer = test
                .call(Method::PATCH, &member, &token, Some(body.clone()))
                .await;
            assert_eq!(answer.status, StatusCode::OK, "{body}: {}", answer.body);
        }
        checked += 1;
    }
    assert!(checked > 800, "only {checked} values checked");
}

/// The checks above are not vacuous: the schemas still refuse what the server refuses for its
/// type (an object for a text field, a name that is blank, a zone with a space).
#[tokio::test]
async fn the_request_schemas_still_refuse_values_of_the_wrong_shape() {
    let (_, _, document) = setup().await;
    let schemas = &document["components"]["schemas"];
    let contact = validator(&document, &schemas["ContactUpdate"]);
    for refused in [
        json!({"fields": {"first_name": {"nested": true}}}),
        json!({"fields": {"region": [1, 2]}}),
        json!({"fields": {"email": 42}}),
        json!({"fields": {"lifecycle_stage": 3}}),
        json!({}),
    ] {
        assert!(!contact.is_valid(&refused), "ContactUpdate takes {refused}");
    }
    let deal = validator(&document, &schemas["DealCreate"]);
    assert!(!deal.is_valid(&json!({"fields": {"deal_name": "x", "pipeline": "default"}})));
    assert!(!deal.is_valid(
        &json!({"fields": {"deal_name": "x", "pipeline": "default", "deal_stage": " "}})
    ));
    let patch = validator(&document, &schemas["UserPatch"]);
    assert!(!patch.is_valid(&json!({"time_zone": "America/New York"})));
    assert!(!patch.is_valid(&json!({"unknown": 1})));
}
