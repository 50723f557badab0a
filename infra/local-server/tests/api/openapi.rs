//! The OpenAPI 3.1 description: generated from the routes and types, committed as
//! `openapi.json`, served without authentication, and complete: every route the application
//! serves is described (adding a route without its description fails here), every described
//! operation is served, and every operation says its id, tag, scope and error answers.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::Method;
use local_server::{build_app, AppConfig, DEMO_SEED, DOCS_PATH};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const COMMITTED: &str = include_str!("../../../../openapi.json");

async fn app() -> local_server::App {
    crate::common::cheap_secret_hashing();
    build_app(AppConfig {
        seed: DEMO_SEED.into(),
        signing_key_pem: None,
    })
    .await
    .unwrap()
}

fn document(app: &local_server::App) -> Value {
    serde_json::to_value(app.openapi().unwrap()).unwrap()
}

/// (path, methods) of every route of an axum router, read from its `Debug` output (axum prints
/// its route table: `RouteId(n): MethodRouter(MethodRouter { get: Route, post: None, ... })` and
/// `paths: {RouteId(n): "/path"}`; there is no other way to list a router's routes). A method
/// answered only by the method router's fallback (405, `Missing path parameter`) is not a route
/// of its own.
fn routes_of(router: &axum::Router) -> BTreeMap<String, BTreeSet<String>> {
    let full = format!("{router:?}");
    // `Router { path_router: ..., fallback_router: ... }`: only the first holds routes.
    let text = full.split("fallback_router:").next().unwrap();
    let endpoint =
        regex::Regex::new(r"RouteId\((\d+)\): MethodRouter\(MethodRouter \{([^}]*)\}").unwrap();
    let path = regex::Regex::new(r#"RouteId\((\d+)\): "([^"]*)""#).unwrap();
    let method =
        regex::Regex::new(r"(get|head|delete|options|patch|post|put|trace|connect): (\w+)")
            .unwrap();
    let mut methods: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in endpoint.captures_iter(text) {
        let set = method
            .captures_iter(&c[2])
            .filter(|m| &m[2] != "None" && &m[1] != "head")
            .map(|m| m[1].to_string())
            .collect();
        methods.insert(c[1].to_string(), set);
    }
    let mut routes = BTreeMap::new();
    for c in path.captures_iter(text) {
        routes.insert(c[2].to_string(), methods.remove(&c[1]).unwrap_or_default());
    }
    assert!(
        !routes.is_empty(),
        "no routes read from the router's Debug output"
    );
    routes
}

#[tokio::test]
async fn the_committed_document_is_the_generated_one() {
    let generated = local_server::generated_openapi_json().await.unwrap();
    assert!(
        COMMITTED == generated,
        "openapi.json is stale: regenerate it with `cargo run -q -p local-server --bin openapi > openapi.json`"
    );
    let doc: Value = serde_json::from_str(COMMITTED).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
}

#[tokio::test]
async fn every_served_route_is_described_and_every_described_operation_is_served() {
    let app = app().await;
    let doc = document(&app);
    let described: BTreeMap<String, BTreeSet<String>> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(path, item)| {
            let methods = item
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| {
                    [
                        "get", "put", "post", "delete", "patch", "options", "head", "trace",
                    ]
                    .contains(&k.as_str())
                })
                .cloned()
                .collect();
            (path.clone(), methods)
        })
        .collect();
    // The functions' routes, and the whole local server (less its interactive docs page).
    for router in [&app.routes, &app.router] {
        let served = routes_of(router);
        for (path, methods) in &served {
            if path.starts_with(DOCS_PATH) {
                continue;
            }
            if path.ends_with(shared::api::EMPTY_ID_SUFFIX) && path.len() > 1 {
                // `/contacts/` and the like: the empty id of a described item path.
                assert!(
                    methods.is_empty(),
                    "{path}: an empty-id route answers by fallback only"
                );
                let collection = path.trim_end_matches('/');
                assert!(
                    described.contains_key(collection),
                    "{path}: no described {collection}"
                );
                continue;
            }
            assert_eq!(
                described.get(path),
                Some(methods),
                "{path}: served with {methods:?}, described with {:?}",
                described.get(path)
            );
        }
        for path in described.keys() {
            assert!(
                served.contains_key(path),
                "{path} is described but not served"
            );
        }
    }
}

/// The Lambda functions build their routes without the description (`Description::RoutesOnly`:
/// building it costs milliseconds of every cold start); those routes must be exactly the
/// described ones, path for path and method for method.
#[tokio::test]
async fn the_functions_built_without_the_description_serve_exactly_the_described_routes() {
    let app = app().await;
    let f = &app.functions;
    let mut served: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for router in [
        &f.token,
        &f.records,
        &f.users,
        &f.routers,
        &f.dispatch,
        &f.webhooks,
    ] {
        for (path, methods) in routes_of(router) {
            assert!(
                served.insert(path.clone(), methods).is_none(),
                "{path} is served by two functions"
            );
        }
    }
    assert_eq!(served, routes_of(&app.routes));
}

#[tokio::test]
async fn every_operation_has_an_id_a_tag_its_scope_and_its_error_answers() {
    let app = app().await;
    let doc = document(&app);
    let tags: BTreeSet<&str> = doc["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let mut ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let what = format!("{method} {path}");
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{what}: no operationId"));
            assert!(ids.insert(id.to_string()), "{what}: operationId {id} twice");
            let tag = op["tags"][0]
                .as_str()
                .unwrap_or_else(|| panic!("{what}: no tag"));
            assert!(tags.contains(tag), "{what}: tag {tag} is not declared");
            assert!(
                op["summary"].is_string() && op["description"].is_string(),
                "{what}"
            );
            let responses = op["responses"].as_object().unwrap();
            // No operation exists only to refuse: each has a success answer and a client error
            // (redocly's operation-2xx-response and operation-4xx-response, both on).
            assert!(
                responses.keys().any(|s| s.starts_with('2')),
                "{what}: no success answer"
            );
            assert!(
                responses.keys().any(|s| s.starts_with('4')),
                "{what}: no client error"
            );
            assert!(responses.contains_key("500"), "{what}: no 500");
            let public = path == "/oauth2/token" || path == "/openapi.json";
            if public {
                continue;
            }
            // Bearer-protected: the OAuth 2.0 scheme with the route's scope (BEHAVIOR 1), and
            // the bearer scheme for a token obtained elsewhere.
            let security = op["security"]
                .as_array()
                .unwrap_or_else(|| panic!("{what}: no security"));
            let scope = security
                .iter()
                .find_map(|s| s["oauth2"].as_array())
                .and_then(|s| s.first())
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("{what}: no oauth2 scope"));
            let expected = match method.as_str() {
                "get" => "service-api/read",
                // Explain is a read (BEHAVIOR 9): it writes nothing.
                "post" if path == "/dispatch/router/explain" => "service-api/read",
                // The what-if replay is a read too (BEHAVIOR 16): it writes nothing.
                "post" if path.ends_with("/simulate") => "service-api/read",
                "post" if path.starts_with("/dispatch") => "service-api/update",
                // Rotating a secret and retrying a delivery change what exists (BEHAVIOR 13).
                "post" if path.ends_with("/rotate-secret") || path.ends_with("/retry") => {
                    "service-api/update"
                }
                // Router management (BEHAVIOR 15): publishing, unpublishing and restoring change
                // a router, and its draft is written and dropped with update.
                "post" if path.starts_with("/routers/") => "service-api/update",
                "put" => "service-api/update",
                "delete" if path.ends_with("/draft") => "service-api/update",
                "post" => "service-api/create",
                "patch" => "service-api/update",
                "delete" => "service-api/delete",
                other => panic!("{what}: unexpected method {other}"),
            };
            assert_eq!(scope, expected, "{what}");
            assert!(security.iter().any(|s| s.get("bearer").is_some()), "{what}");
            for status in ["401", "403"] {
                let schema = &responses
                    .get(status)
                    .unwrap_or_else(|| panic!("{what}: no {status}"))["content"]
                    ["application/json"]["schema"]["$ref"];
                assert_eq!(schema, "#/components/schemas/ErrorBody", "{what} {status}");
            }
        }
    }
    assert!(ids.len() >= 35, "only {} operations", ids.len());
}

/// Every link (a created or listed record leads to reading and updating it, a listed user to
/// the same) names an operation of the document and a path parameter of that operation, and each
/// record type's create and list operations carry them.
#[tokio::test]
async fn every_link_leads_to_an_operation_and_one_of_its_path_parameters() {
    let app = app().await;
    let doc = document(&app);
    let mut path_parameters: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut links = Vec::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            let id = op["operationId"].as_str().unwrap().to_string();
            let names = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                // Path parameters, and headers a link may carry (a draft's `ETag` into
                // `If-Match`, BEHAVIOR 15).
                .filter(|p| p["in"] == "path" || p["in"] == "header")
                .map(|p| p["name"].as_str().unwrap().to_string())
                .collect();
            path_parameters.insert(id.clone(), names);
            for answer in op["responses"].as_object().unwrap().values() {
                for link in answer["links"]
                    .as_object()
                    .into_iter()
                    .flat_map(|m| m.values())
                {
                    links.push((id.clone(), link.clone()));
                }
            }
        }
    }
    for (from, link) in &links {
        let target = link["operationId"].as_str().unwrap();
        let known = path_parameters
            .get(target)
            .unwrap_or_else(|| panic!("{from} links to {target}, which is not an operation"));
        for name in link["parameters"].as_object().unwrap().keys() {
            assert!(
                known.contains(name),
                "{from} -> {target}: no path or header parameter {name}"
            );
        }
    }
    for from in [
        "createContact",
        "listCompanies",
        "createDeal",
        "listTickets",
        "listUsers",
    ] {
        let targets: BTreeSet<&str> = links
            .iter()
            .filter(|(id, _)| id == from)
            .map(|(_, link)| link["operationId"].as_str().unwrap())
            .collect();
        assert_eq!(targets.len(), 2, "{from}: {targets:?}");
    }
}

#[tokio::test]
async fn every_schema_reference_resolves() {
    let app = app().await;
    let doc = document(&app);
    let text = doc.to_string();
    let defined: BTreeSet<&String> = doc["components"]["schemas"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    let re = regex::Regex::new(r##""#/components/schemas/([^"]+)""##).unwrap();
    for c in re.captures_iter(&text) {
        assert!(
            defined.contains(&c[1].to_string()),
            "unresolved $ref {}",
            &c[1]
        );
    }
    let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
    assert_eq!(
        schemes["oauth2"]["flows"]["clientCredentials"]["tokenUrl"],
        "/oauth2/token"
    );
    let scopes = schemes["oauth2"]["flows"]["clientCredentials"]["scopes"]
        .as_object()
        .unwrap();
    assert_eq!(scopes.len(), 4);
}

#[tokio::test]
async fn the_document_is_served_without_authentication_and_the_docs_page_with_it() {
    let test = common::TestApp::spawn().await;
    let answer = test
        .raw(Method::GET, "/openapi.json", &[], Vec::new())
        .await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.headers["content-type"], "application/json");
    assert_eq!(
        answer.body,
        serde_json::from_str::<Value>(COMMITTED).unwrap()
    );
    let page = test.raw(Method::GET, "/docs/", &[], Vec::new()).await;
    assert_eq!(page.status, 200);
    let page = test
        .raw(Method::GET, "/docs/swagger-initializer.js", &[], Vec::new())
        .await;
    assert_eq!(page.status, 200);
}

/// BEHAVIOR 2: a method the spec defines on an item path, sent to its collection (`PATCH` and
/// `DELETE /{type}`, `PATCH /users`), answers 400 `Missing path parameter: <name>` after 401 and
/// 403. These answers are not operations of the document: no request to them can succeed, so a
/// generated client has no method for them, and the collection's 405 does not list them in
/// `Allow` (RFC 9110 10.2.1: the methods the resource supports, the described ones).
#[tokio::test]
async fn an_item_method_sent_to_its_collection_is_400_and_no_operation_of_the_document() {
    const REFUSED: [(&str, &str, &str, &str); 9] = [
        ("PATCH", "/contacts", "contactId", "service-api/update"),
        ("DELETE", "/contacts", "contactId", "service-api/delete"),
        ("PATCH", "/companies", "companyId", "service-api/update"),
        ("DELETE", "/companies", "companyId", "service-api/delete"),
        ("PATCH", "/deals", "dealId", "service-api/update"),
        ("DELETE", "/deals", "dealId", "service-api/delete"),
        ("PATCH", "/tickets", "ticketId", "service-api/update"),
        ("DELETE", "/tickets", "ticketId", "service-api/delete"),
        ("PATCH", "/users", "userId", "service-api/update"),
    ];
    let doc: Value = serde_json::from_str(COMMITTED).unwrap();
    let test = common::TestApp::spawn().await;
    let every_scope = test.northwind().await;
    let read_only = test
        .token(common::NORTHWIND_READONLY, "service-api/read")
        .await;
    for (method, path, param, scope) in REFUSED {
        let what = format!("{method} {path}");
        let item = doc["paths"][path].as_object().unwrap();
        assert!(
            item.contains_key("get"),
            "{what}: the collection is described"
        );
        assert!(
            !item.contains_key(&method.to_lowercase()),
            "{what} is an operation of the document"
        );
        let a = test.call(Method::PUT, path, &every_scope, None).await;
        assert_eq!(a.status, 405, "PUT {path}");
        let allowed: BTreeSet<String> = a.headers["allow"]
            .to_str()
            .unwrap()
            .split(", ")
            .map(str::to_lowercase)
            .collect();
        assert_eq!(
            allowed,
            item.keys().cloned().collect::<BTreeSet<_>>(),
            "PUT {path}: Allow is the described methods"
        );
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let a = test.raw(method.clone(), path, &[], Vec::new()).await;
        assert_eq!(a.status, 401, "{what}: {}", a.body);
        let a = test.call(method.clone(), path, &read_only, None).await;
        assert_eq!(a.status, 403, "{what}: {}", a.body);
        assert_eq!(
            a.body["message"],
            format!("Insufficient scope: requires {scope}"),
            "{what}"
        );
        let a = test
            .call(method, path, &every_scope, Some(serde_json::json!({})))
            .await;
        assert_eq!(a.status, 400, "{what}: {}", a.body);
        assert_eq!(
            a.body,
            serde_json::json!({
                "message": format!("Missing path parameter: {param}"),
                "error": true,
                "field": param
            }),
            "{what}"
        );
    }
}

/// BEHAVIOR 2, RFC 9110 10.2.1: every path answers a method it does not define with 405 and an
/// `Allow` value that is exactly its described methods, in the order GET, PUT, POST, PATCH,
/// DELETE; an item path with an empty id (`/contacts/`) allows what its item path does. Checked
/// path by path against the committed document, so an `Allow` value that drifts from the
/// handlers (a method added or removed without it) fails here.
#[tokio::test]
async fn every_path_405s_with_the_allow_value_of_its_described_methods() {
    const ORDER: [&str; 8] = [
        "get", "head", "put", "post", "patch", "delete", "options", "trace",
    ];
    let doc: Value = serde_json::from_str(COMMITTED).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    let allow_of = |path: &str| -> String {
        let item = paths[path].as_object().unwrap();
        ORDER
            .iter()
            .filter(|m| item.contains_key(**m))
            .map(|m| m.to_uppercase())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let placeholder = regex::Regex::new(r"\{[^}]*\}").unwrap();
    let mut expected: Vec<(String, String)> = paths
        .keys()
        .map(|path| {
            (
                placeholder.replace_all(path, "x").into_owned(),
                allow_of(path),
            )
        })
        .collect();
    // The empty-id routes the functions serve, each with its item path's methods.
    let empty_ids: Vec<String> = routes_of(&app().await.routes)
        .into_keys()
        .filter(|p| p.ends_with(shared::api::EMPTY_ID_SUFFIX) && p.len() > 1)
        .collect();
    assert!(!empty_ids.is_empty(), "no empty-id routes read");
    for empty in empty_ids {
        let item = paths
            .keys()
            .find(|p| {
                p.strip_prefix(empty.as_str())
                    .is_some_and(|rest| placeholder.is_match(rest) && !rest.contains('/'))
            })
            .unwrap_or_else(|| panic!("{empty}: no described item path"));
        expected.push((empty.clone(), allow_of(item)));
    }
    assert!(expected.iter().all(|(_, allow)| !allow.is_empty()));
    let test = common::TestApp::spawn().await;
    for (uri, allow) in expected {
        let a = test.raw(Method::TRACE, &uri, &[], Vec::new()).await;
        assert_eq!(a.status, 405, "TRACE {uri}: {}", a.body);
        assert_eq!(
            a.headers.get("allow").map(|v| v.to_str().unwrap()),
            Some(allow.as_str()),
            "TRACE {uri}"
        );
    }
}
