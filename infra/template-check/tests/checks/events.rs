//! `events/` against `template.yaml`: every API Gateway event names the route API Gateway would
//! pick for its method and path (so `sam local invoke <Function> -e events/<file>` sends it to the
//! right function), every route of the spec has an event, and the SQS events are the ones the
//! dispatch tests drive. `infra/local-server/tests/api/events.rs` drives every API event through its
//! handler; `infra/local-server/tests/api/dispatch_api.rs` the SQS ones.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use serde_json::Value;
use std::collections::BTreeSet;
use template_check::{api_routes, parse_template, read_repo_file, repo_root, resolve_route};

/// Every `events/*.json`, by file name, parsed.
fn events() -> Vec<(String, Value)> {
    let dir = repo_root().join("events");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, json)
        })
        .collect()
}

/// (route key, how many events the route must have at least)
fn required_routes() -> Vec<(String, usize)> {
    let mut required = vec![
        ("POST /oauth2/token".to_string(), 1),
        ("GET /openapi.json".into(), 1),
        ("GET /users".into(), 1),
        ("GET /users/{userId}".into(), 1),
        ("PATCH /users/{userId}".into(), 2),
        ("GET /holiday-calendars".into(), 1),
        ("POST /holiday-calendars".into(), 1),
        ("GET /holiday-calendars/{id}".into(), 1),
        ("PUT /holiday-calendars/{id}".into(), 1),
        ("DELETE /holiday-calendars/{id}".into(), 1),
        ("GET /routers".into(), 1),
        ("GET /routers/{routerId}".into(), 1),
        ("POST /dispatch/router".into(), 1),
        ("POST /dispatch/router/explain".into(), 1),
        ("GET /routers/{routerId}/dispatches".into(), 1),
        ("GET /routers/{routerId}/stats".into(), 1),
        ("POST /routers/{routerId}/simulate".into(), 1),
        ("POST /routers".into(), 1),
        ("DELETE /routers/{routerId}".into(), 1),
        ("GET /routers/{routerId}/draft".into(), 1),
        ("PUT /routers/{routerId}/draft".into(), 1),
        ("DELETE /routers/{routerId}/draft".into(), 1),
        ("POST /routers/{routerId}/publish".into(), 1),
        ("POST /routers/{routerId}/unpublish".into(), 1),
        ("GET /routers/{routerId}/revisions".into(), 1),
        ("GET /routers/{routerId}/revisions/{revision}".into(), 1),
        (
            "POST /routers/{routerId}/revisions/{revision}/restore".into(),
            1,
        ),
        ("GET /contacts/{contactId}/dispatches".into(), 1),
        ("$default".into(), 1),
        ("GET /webhooks".into(), 1),
        ("POST /webhooks".into(), 1),
        ("GET /webhooks/{webhookId}".into(), 1),
        ("PATCH /webhooks/{webhookId}".into(), 1),
        ("DELETE /webhooks/{webhookId}".into(), 1),
        ("POST /webhooks/{webhookId}/rotate-secret".into(), 1),
        ("GET /webhooks/{webhookId}/deliveries".into(), 1),
        (
            "POST /webhooks/{webhookId}/deliveries/{deliveryId}/retry".into(),
            1,
        ),
    ];
    // Records: every method of every type.
    for (t, id) in [
        ("contacts", "contactId"),
        ("companies", "companyId"),
        ("deals", "dealId"),
        ("tickets", "ticketId"),
    ] {
        required.push((format!("GET /{t}"), 1));
        required.push((format!("POST /{t}"), 1));
        for method in ["GET", "PATCH", "DELETE"] {
            required.push((format!("{method} /{t}/{{{id}}}"), 1));
        }
    }
    required
}

#[test]
fn every_api_event_names_the_route_api_gateway_picks_for_it() {
    let template = parse_template(&read_repo_file("template.yaml")).expect("parses");
    let routes = api_routes(&template);
    for (name, event) in events() {
        if event.get("Records").is_some() || event["source"] == "aws.events" {
            continue;
        }
        assert_eq!(event["version"], "2.0", "{name}: payload format 2.0");
        let method = event["requestContext"]["http"]["method"].as_str().unwrap();
        let raw_path = event["rawPath"].as_str().unwrap();
        assert_eq!(event["requestContext"]["http"]["path"], raw_path, "{name}");
        assert_eq!(
            event["requestContext"]["stage"], "$default",
            "{name}: the template's stage"
        );
        let route = resolve_route(&routes, method, raw_path)
            .unwrap_or_else(|| panic!("{name}: no route for {method} {raw_path}"));
        assert_eq!(event["routeKey"], route.key(), "{name}: routeKey");
        assert_eq!(
            event["requestContext"]["routeKey"],
            route.key(),
            "{name}: requestContext.routeKey"
        );

        // Path parameters as API Gateway fills them from the route's `{name}` segments.
        let mut expected = serde_json::Map::new();
        if route.path != "$default" {
            for (segment, value) in route.path.split('/').zip(raw_path.split('/')) {
                if let Some(var) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    expected.insert(var.to_string(), value.into());
                }
            }
        }
        let actual = event["pathParameters"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(actual, expected, "{name}: pathParameters");

        // The token endpoint and the API description are public.
        let needs_token = !raw_path.starts_with("/oauth2/") && raw_path != "/openapi.json";
        let auth = event["headers"]["authorization"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(
            auth.starts_with("Bearer ey"),
            needs_token,
            "{name}: a bearer JWT on every route but the public ones"
        );
    }
}

#[test]
fn every_route_of_the_spec_has_an_event() {
    let mut covered: Vec<String> = Vec::new();
    for (_, event) in events() {
        if let Some(key) = event["routeKey"].as_str() {
            covered.push(key.to_string());
        }
    }
    for (route, at_least) in required_routes() {
        let n = covered.iter().filter(|k| **k == route).count();
        assert!(
            n >= at_least,
            "{route}: {n} event(s) in events/, want {at_least}"
        );
    }
}

#[test]
fn the_sqs_events_are_the_dispatch_batches_the_tests_drive() {
    let sqs: BTreeSet<String> = events()
        .into_iter()
        .filter(|(_, e)| e.get("Records").is_some())
        .map(|(name, event)| {
            for record in event["Records"].as_array().unwrap() {
                assert_eq!(record["eventSource"], "aws:sqs", "{name}");
                assert!(
                    record["messageId"].is_string() && record["body"].is_string(),
                    "{name}"
                );
            }
            name
        })
        .collect();
    let expected: BTreeSet<String> = [
        "sqs-dispatch-duplicate.json",
        "sqs-dispatch-invalid.json",
        "sqs-dispatch-valid.json",
        "sqs-due-work.json",
        "sqs-webhook-delivery.json",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(
        sqs, expected,
        "a new SQS event needs a test in infra/local-server/tests/api/dispatch_api.rs (dispatch queue) or webhooks_api.rs (webhook queue)"
    );
}

#[test]
fn the_schedule_event_is_the_sweep_the_template_schedules() {
    let schedules: Vec<String> = events()
        .into_iter()
        .filter(|(_, e)| e["source"] == "aws.events")
        .map(|(name, event)| {
            assert_eq!(event["detail-type"], "Scheduled Event", "{name}");
            name
        })
        .collect();
    assert_eq!(schedules, ["schedule-sweep.json"]);
    let template = read_repo_file("template.yaml");
    assert!(
        template.contains("Type: Schedule") && template.contains("rate(1 minute)"),
        "the dispatch function is invoked every minute to sweep due work"
    );
}
