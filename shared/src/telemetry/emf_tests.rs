//! Tests of the EMF writer ([`super::emf`]) fed by the recording functions of
//! [`crate::telemetry`] (kept apart from `emf.rs`, which the telemetry module imports).

use super::emf::*;
use crate::telemetry;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// Checks `document` against the EMF specification's rules used here and returns each
/// metric it carries: name, dimensions (name to value) and value.
fn metrics_of(document: &Value) -> Vec<(String, BTreeMap<String, String>, Value)> {
    let aws = &document["_aws"];
    assert!(aws["Timestamp"].is_u64(), "{document}");
    let mut found = Vec::new();
    for directive in aws["CloudWatchMetrics"].as_array().expect("directives") {
        assert_eq!(directive["Namespace"], "AccountRouting");
        let sets = directive["Dimensions"].as_array().expect("dimension sets");
        assert_eq!(sets.len(), 1);
        let names: Vec<&str> = sets[0]
            .as_array()
            .expect("a dimension set")
            .iter()
            .map(|d| d.as_str().expect("a dimension name"))
            .collect();
        assert!(names.len() <= 30);
        let dimensions: BTreeMap<String, String> = names
            .iter()
            .map(|n| {
                let value = document[*n]
                    .as_str()
                    .expect("a dimension's value is a string");
                ((*n).to_string(), value.to_string())
            })
            .collect();
        let metrics = directive["Metrics"].as_array().expect("metrics");
        assert!(metrics.len() <= 100);
        for metric in metrics {
            let name = metric["Name"].as_str().expect("a name");
            let value = document[name].clone();
            if let Some(values) = value.as_array() {
                assert!(!values.is_empty() && values.len() <= MAX_VALUES_PER_METRIC);
                assert!(values.iter().all(Value::is_number));
            } else {
                assert!(value.is_number(), "{name}: {document}");
            }
            found.push((name.to_string(), dimensions.clone(), value));
        }
    }
    found
}

fn written(recorder: &EmfRecorder) -> (Vec<u8>, Vec<Value>) {
    let mut out = Vec::new();
    let count = recorder.write(&mut out, &[("request_id", "req-1")], 1_700_000_000_000);
    let documents: Vec<Value> = std::str::from_utf8(&out)
        .expect("utf-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    assert_eq!(documents.len(), count);
    (out, documents)
}

#[test]
fn an_api_invocation_is_one_document_under_a_kilobyte() {
    let recorder = EmfRecorder::new(telemetry::NAMESPACE, "dispatch");
    metrics::with_local_recorder(&recorder, || {
        telemetry::request("/dispatch/router", 200, Duration::from_micros(4_250));
        telemetry::dispatch("assigned", "rotation");
        telemetry::idempotent_replay();
    });
    let (bytes, documents) = written(&recorder);
    assert_eq!(documents.len(), 1, "{}", String::from_utf8_lossy(&bytes));
    assert!(bytes.len() < 1024, "{} bytes", bytes.len());
    let document = &documents[0];
    assert_eq!(document["request_id"], "req-1");
    let mut metrics = metrics_of(document);
    metrics.sort_by(|a, b| a.0.cmp(&b.0));
    let summary: Vec<(&str, Vec<&str>)> = metrics
        .iter()
        .map(|(name, dims, _)| (name.as_str(), dims.keys().map(String::as_str).collect()))
        .collect();
    assert_eq!(
        summary,
        [
            ("Dispatches", vec!["function", "outcome", "reason"]),
            ("IdempotentReplays", vec!["function"]),
            ("RequestLatency", vec!["function", "route"]),
            ("Requests", vec!["function", "route", "status_class"]),
        ]
    );
    assert_eq!(document["function"], "dispatch");
    assert_eq!(document["route"], "/dispatch/router");
    assert_eq!(document["status_class"], "2xx");
    assert_eq!(document["RequestLatency"], serde_json::json!([4.25]));
    let units: Vec<&str> = document["_aws"]["CloudWatchMetrics"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .flat_map(|d| d["Metrics"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["Name"] == "RequestLatency")
        .filter_map(|m| m["Unit"].as_str().map(str::to_string))
        .map(|u| {
            if u == "Milliseconds" {
                "Milliseconds"
            } else {
                "other"
            }
        })
        .collect();
    assert_eq!(units, ["Milliseconds"]);
}

#[test]
fn every_status_is_counted_under_its_status_class_and_routes_keep_their_own_labels() {
    let recorder = EmfRecorder::new(telemetry::NAMESPACE, "records");
    metrics::with_local_recorder(&recorder, || {
        for status in [200, 201, 204, 299, 304, 400, 401, 404, 499, 500, 503, 599] {
            telemetry::request("/contacts/{contactId}", status, Duration::from_millis(1));
        }
        telemetry::request(telemetry::UNMATCHED_ROUTE, 404, Duration::from_millis(1));
    });
    let (_, documents) = written(&recorder);
    let all: Vec<_> = documents.iter().flat_map(metrics_of).collect();
    let requests = |route: &str, class: &str| -> u64 {
        all.iter()
            .filter(|(name, dims, _)| {
                name == "Requests"
                    && dims.get("route").map(String::as_str) == Some(route)
                    && dims.get("status_class").map(String::as_str) == Some(class)
            })
            .map(|(_, _, value)| value.as_u64().expect("a count"))
            .sum()
    };
    let route = "/contacts/{contactId}";
    assert_eq!(requests(route, "2xx"), 4);
    assert_eq!(requests(route, "3xx"), 1);
    assert_eq!(requests(route, "4xx"), 4);
    assert_eq!(requests(route, "5xx"), 3);
    assert_eq!(requests(telemetry::UNMATCHED_ROUTE, "4xx"), 1);
    assert_eq!(requests(telemetry::UNMATCHED_ROUTE, "2xx"), 0);
    let latencies: usize = all
        .iter()
        .filter(|(name, dims, _)| {
            name == "RequestLatency" && dims.get("route").map(String::as_str) == Some(route)
        })
        .map(|(_, dims, value)| {
            assert!(!dims.contains_key("status_class"), "{dims:?}");
            value.as_array().map_or(1, Vec::len)
        })
        .sum();
    assert_eq!(latencies, 12, "one latency per request of the route");
}

#[test]
fn label_values_that_cannot_share_a_document_go_to_another_and_every_value_is_written() {
    let recorder = EmfRecorder::new(telemetry::NAMESPACE, "dispatch");
    metrics::with_local_recorder(&recorder, || {
        // A queue batch: two assignments, an error, a CRM sync (its own `outcome`).
        telemetry::dispatch("assigned", "rotation");
        telemetry::dispatch("assigned", "rotation");
        telemetry::dispatch_error();
        telemetry::due_work_run("crm_sync", "synced", Duration::from_secs(2));
        telemetry::queue_batch(4, 1);
    });
    let (_, documents) = written(&recorder);
    assert!(documents.len() >= 3, "{documents:?}");
    let all: Vec<_> = documents.iter().flat_map(metrics_of).collect();
    let count = |name: &str, outcome: &str| -> u64 {
        all.iter()
            .filter(|(n, d, _)| n == name && d.get("outcome").map(String::as_str) == Some(outcome))
            .map(|(_, _, v)| v.as_u64().unwrap_or(0))
            .sum()
    };
    assert_eq!(count("Dispatches", "assigned"), 2);
    assert_eq!(count("Dispatches", "error"), 1);
    assert_eq!(count("DueWorkRuns", "synced"), 1);
    let names: BTreeMap<&str, usize> = all.iter().fold(BTreeMap::new(), |mut m, (n, _, _)| {
        *m.entry(n.as_str()).or_default() += 1;
        m
    });
    assert_eq!(
        names,
        BTreeMap::from([
            ("Dispatches", 2),
            ("DueWorkLateness", 1),
            ("DueWorkRuns", 1),
            ("QueueBatchSize", 1),
            ("QueueMessageFailures", 1),
        ])
    );
}

#[test]
fn a_flush_takes_what_was_recorded_since_the_last_and_a_gauge_is_written_once_per_setting() {
    let recorder = EmfRecorder::new(telemetry::NAMESPACE, "dispatch");
    metrics::with_local_recorder(&recorder, || {
        telemetry::sweep("sla_check", 3, Duration::from_secs(400));
        telemetry::request("/routers", 200, Duration::from_millis(2));
    });
    let (_, first) = written(&recorder);
    let names: Vec<String> = first.iter().flat_map(metrics_of).map(|m| m.0).collect();
    assert!(
        names.contains(&"DueWorkOverdueSeconds".to_string()),
        "{names:?}"
    );
    // Nothing recorded since: nothing written (the gauge is not repeated).
    let (bytes, second) = written(&recorder);
    assert!(bytes.is_empty() && second.is_empty(), "{second:?}");
    metrics::with_local_recorder(&recorder, || {
        telemetry::request("/routers", 200, Duration::from_millis(2));
    });
    let (_, third) = written(&recorder);
    let metrics: Vec<_> = third.iter().flat_map(metrics_of).collect();
    assert!(
        metrics.iter().all(|m| m.0 != "DueWorkOverdueSeconds"),
        "{third:?}"
    );
    let requests: Vec<&Value> = metrics
        .iter()
        .filter(|m| m.0 == "Requests")
        .map(|m| &m.2)
        .collect();
    assert_eq!(
        requests,
        [&Value::from(1)],
        "the counter starts again from 0"
    );
}

#[test]
fn many_values_of_one_histogram_are_split_in_documents_of_at_most_100_without_blocking() {
    let recorder = EmfRecorder::new(telemetry::NAMESPACE, "local");
    metrics::with_local_recorder(&recorder, || {
        for i in 0..5_000u64 {
            telemetry::request("/contacts", 200, Duration::from_micros(i));
        }
    });
    let (_, documents) = written(&recorder);
    let latencies: Vec<f64> = documents
        .iter()
        .flat_map(metrics_of)
        .filter(|m| m.0 == "RequestLatency")
        .flat_map(|m| m.2.as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_f64())
        .collect();
    assert_eq!(latencies.len(), 5_000);
    assert_eq!(documents.len(), 50);
    let requests: u64 = documents
        .iter()
        .flat_map(metrics_of)
        .filter(|m| m.0 == "Requests")
        .filter_map(|m| m.2.as_u64())
        .sum();
    assert_eq!(requests, 5_000);
}
