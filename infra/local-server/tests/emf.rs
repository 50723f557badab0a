//! Metrics (`docs/operations.md`, "Metrics"): each function's output for one invocation is valid
//! CloudWatch Embedded Metric Format, every metric it names is one of `shared::telemetry::METRICS`
//! with exactly its declared dimensions, which `docs/operations.md` lists (name for name), and an
//! API invocation writes one document of less than 1 KiB. Each function is driven through its own
//! application (an API request, an SQS batch, the schedule) and the metrics recorded by that
//! invocation are flushed and parsed.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;

use axum::body::Body;
use http_body_util::BodyExt;
use local_server::{build_app, AppConfig, DEMO_SEED};
use serde_json::Value;
use shared::telemetry::{METRICS, NAMESPACE};
use std::collections::BTreeSet;
use tower::ServiceExt;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../events/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

async fn serve(app: &axum::Router, event: &str, token: &str) -> u16 {
    let request = lambda_http::request::from_str(event).unwrap();
    let (mut parts, body) = request.into_parts();
    if parts.headers.contains_key("authorization") && !parts.uri.path().starts_with("/oauth2") {
        parts
            .headers
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
    }
    let response = app
        .clone()
        .oneshot(axum::http::Request::from_parts(
            parts,
            Body::from(body.to_vec()),
        ))
        .await
        .unwrap();
    let status = response.status().as_u16();
    let _ = response.into_body().collect().await;
    status
}

/// What one flush wrote: the metric names, the documents and the bytes.
struct Flushed {
    names: BTreeSet<String>,
    documents: usize,
    bytes: usize,
}

impl Flushed {
    fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }
}

/// The EMF documents flushed now, each checked against the format and the catalogue.
fn flushed(what: &str) -> Flushed {
    let mut out = Vec::new();
    let bytes =
        shared::telemetry::flush_to(&mut out, Some("req-1"), Some("Root=1-abc-def")).unwrap();
    assert_eq!(bytes, out.len(), "{what}");
    let text = String::from_utf8(out).unwrap();
    let mut names = BTreeSet::new();
    let mut documents = 0;
    for line in text.lines() {
        documents += 1;
        let doc: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{what}: not one JSON object per line: {e}: {line}"));
        let aws = &doc["_aws"];
        assert!(
            aws["Timestamp"].as_u64().is_some(),
            "{what}: Timestamp: {line}"
        );
        assert_eq!(
            doc["request_id"], "req-1",
            "{what}: the Lambda request id: {line}"
        );
        assert_eq!(doc["xray_trace_id"], "Root=1-abc-def", "{what}");
        for id in [
            "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01",
            "01936b2a-7c00-7a00-8000-000000000002",
        ] {
            assert!(
                !line.contains(id),
                "{what}: an account or record id in a metric document: {line}"
            );
        }
        let directives = aws["CloudWatchMetrics"].as_array().unwrap();
        assert!(!directives.is_empty(), "{what}: {line}");
        for directive in directives {
            assert_eq!(directive["Namespace"], NAMESPACE, "{what}");
            let dimension_sets = directive["Dimensions"].as_array().unwrap();
            assert_eq!(dimension_sets.len(), 1, "{what}");
            let dimensions: Vec<&str> = dimension_sets[0]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_str().unwrap())
                .collect();
            assert!(dimensions.len() <= 30, "{what}: at most 30 dimensions");
            assert_eq!(dimensions.first(), Some(&"function"), "{what}: {line}");
            for dimension in &dimensions {
                assert!(
                    doc[*dimension].is_string(),
                    "{what}: dimension {dimension} has a string value: {line}"
                );
            }
            for metric in directive["Metrics"].as_array().unwrap() {
                let name = metric["Name"].as_str().unwrap();
                let spec = METRICS
                    .iter()
                    .find(|m| m.name == name)
                    .unwrap_or_else(|| panic!("{what}: {name} is not in the catalogue"));
                let value = &doc[name];
                assert!(
                    value.is_number()
                        || value
                            .as_array()
                            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_number)),
                    "{what}: {name} has a number or an array of numbers: {line}"
                );
                let declared: BTreeSet<&str> = spec.dimensions.iter().copied().collect();
                let carried: BTreeSet<&str> = dimensions[1..].iter().copied().collect();
                assert_eq!(
                    carried, declared,
                    "{what}: {name} carries exactly its declared dimensions"
                );
                names.insert(name.to_string());
            }
        }
    }
    Flushed {
        names,
        documents,
        bytes,
    }
}

/// An API invocation's metrics are one EMF document of less than 1 KiB.
fn one_small_document(what: &str, flushed: &Flushed) {
    assert_eq!(flushed.documents, 1, "{what}: one document per invocation");
    assert!(flushed.bytes < 1024, "{what}: {} bytes", flushed.bytes);
    println!("{what}: one EMF document of {} bytes", flushed.bytes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_function_writes_valid_emf_with_catalogued_names_only() {
    assert!(
        shared::telemetry::install("test"),
        "the EMF recorder installs"
    );
    let app = build_app(AppConfig {
        seed: DEMO_SEED.into(),
        signing_key_pem: None,
    })
    .await
    .unwrap();
    let token = common::TestApp {
        router: app.router.clone(),
    }
    .northwind()
    .await;
    let f = &app.functions;
    let _ = flushed("before"); // what building the app recorded

    assert_eq!(
        serve(&f.token, &fixture("token-post.json"), &token).await,
        200
    );
    let names = flushed("token");
    assert!(
        names.contains("TokenRequests") && names.contains("Requests"),
        "{:?}",
        names.names
    );
    one_small_document("POST /oauth2/token", &names);

    let create = fixture("records-create-contact-idempotent.json");
    serve(&f.records, &create, &token).await;
    one_small_document("POST /contacts", &flushed("records create"));
    serve(&f.records, &create, &token).await;
    let names = flushed("records replay");
    assert!(names.contains("IdempotentReplays"), "{:?}", names.names);
    assert!(names.contains("RequestLatency"), "{:?}", names.names);
    one_small_document("POST /contacts (replayed)", &names);
    assert_eq!(
        serve(&f.records, &fixture("records-get-contact.json"), &token).await,
        200
    );
    one_small_document("GET /contacts/{contactId}", &flushed("records get"));

    assert_eq!(
        serve(&f.users, &fixture("users-list.json"), &token).await,
        200
    );
    let names = flushed("users");
    assert!(names.contains("Requests"));
    one_small_document("GET /users", &names);
    assert_eq!(
        serve(&f.routers, &fixture("routers-list.json"), &token).await,
        200
    );
    let names = flushed("routers");
    assert!(names.contains("Requests"));
    one_small_document("GET /routers", &names);

    // Dispatch: an API request, a queue batch, the schedule.
    assert_eq!(
        serve(&f.dispatch, &fixture("dispatch-router.json"), &token).await,
        200
    );
    let names = flushed("dispatch (API)");
    assert!(names.contains("Dispatches"), "{:?}", names.names);
    one_small_document("POST /dispatch/router", &names);
    // The queue batch and the schedule as the Lambda handler runs them (its `handle` flushes
    // to stdout at the end of the invocation; here the test flushes instead).
    let batch = serde_json::from_str(&fixture("sqs-dispatch-valid.json")).unwrap();
    dispatch_function::handle_sqs_batch(&app.engine, batch).await;
    dispatch_function::handle_schedule(&app.engine)
        .await
        .unwrap();
    let names = flushed("dispatch (queue, schedule)");
    for expected in ["Dispatches", "QueueBatchSize", "DueWorkOverdueSeconds"] {
        assert!(names.contains(expected), "{expected}: {:?}", names.names);
    }

    assert_eq!(
        serve(&f.webhooks, &fixture("webhooks-list.json"), &token).await,
        200
    );
    one_small_document("GET /webhooks", &flushed("webhooks API"));
    let batch = serde_json::from_str(&fixture("sqs-webhook-delivery.json")).unwrap();
    webhooks_function::handle_sqs_batch(&app.deps.due, batch).await;
    let names = flushed("webhooks");
    assert!(names.contains("QueueBatchSize"), "{:?}", names.names);
}

/// `docs/operations.md` names every metric of the catalogue, and names no other in its
/// metrics table.
#[test]
fn the_runbook_lists_exactly_the_catalogued_metrics() {
    let runbook = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/operations.md"
    ))
    .unwrap();
    let table: BTreeSet<String> = runbook
        .lines()
        .filter_map(|l| l.strip_prefix("| metric `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_string)
        .collect();
    let catalogue: BTreeSet<String> = METRICS.iter().map(|m| m.name.to_string()).collect();
    assert_eq!(table, catalogue);
}
