//! The Lambda functions' metrics recorder: CloudWatch Embedded Metric Format (EMF), one document
//! per invocation (issue 36).
//!
//! The values are kept by `metrics-util`'s registry (lock-free atomics; a histogram's values in an
//! [`AtomicBucket`], so recording never blocks, however many values wait). [`EmfRecorder::write`]
//! takes what was recorded since the last call and writes it as EMF: one JSON document holding
//! every metric, each label set a directive of its own (`CloudWatchMetrics` is a list of
//! directives, each with its dimension set and metrics; the values and dimension values are the
//! document's members). A second document is written only when two label sets cannot share one:
//! the same dimension with two values (a queue batch whose dispatches ended differently), or the
//! same metric under two label sets (two routes, which one invocation of one request never
//! records). An API invocation writes one document of 450 to 700 bytes (`docs/operations.md`,
//! "Metrics").
//!
//! Why not `metrics_cloudwatch_embedded`, used before: it writes one document per label set (an
//! API invocation wrote two or three) and writes every gauge again at every flush, so a value a
//! sweep found once was reported by every later invocation of the instance.
//!
//! Limits of the format (the AWS EMF specification): at most 100 values per metric in a
//! document (more values of one histogram are split over documents), 30 dimensions per
//! dimension set, 100 metrics per directive (a label set here carries at most three).

use super::METRICS;
use metrics::{
    Counter, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use metrics_util::registry::{Registry, Storage};
use metrics_util::storage::AtomicBucket;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The most values of one metric a document may hold.
pub const MAX_VALUES_PER_METRIC: usize = 100;

/// Members of a document that are not dimensions or metrics.
const RESERVED: [&str; 3] = ["_aws", "request_id", "xray_trace_id"];

/// A gauge that remembers whether it was set since the last write: a gauge is written once per
/// setting, not again at every later invocation.
#[derive(Debug, Default)]
pub struct FreshGauge {
    bits: AtomicU64,
    fresh: AtomicBool,
}

impl FreshGauge {
    /// The value set since the last call, if any.
    fn take(&self) -> Option<f64> {
        self.fresh
            .swap(false, Ordering::AcqRel)
            .then(|| f64::from_bits(self.bits.load(Ordering::Acquire)))
    }

    fn update(&self, change: impl Fn(f64) -> f64) {
        let _ = self
            .bits
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |bits| {
                Some(change(f64::from_bits(bits)).to_bits())
            });
        self.fresh.store(true, Ordering::Release);
    }
}

impl GaugeFn for FreshGauge {
    fn increment(&self, value: f64) {
        self.update(|v| v + value);
    }

    fn decrement(&self, value: f64) {
        self.update(|v| v - value);
    }

    fn set(&self, value: f64) {
        self.bits.store(value.to_bits(), Ordering::Release);
        self.fresh.store(true, Ordering::Release);
    }
}

/// The registry's storage: counters and histograms as `metrics-util`'s atomics, gauges as
/// [`FreshGauge`].
#[derive(Debug)]
pub struct EmfStorage;

impl Storage<Key> for EmfStorage {
    type Counter = Arc<AtomicU64>;
    type Gauge = Arc<FreshGauge>;
    type Histogram = Arc<AtomicBucket<f64>>;

    fn counter(&self, _: &Key) -> Self::Counter {
        Arc::new(AtomicU64::new(0))
    }

    fn gauge(&self, _: &Key) -> Self::Gauge {
        Arc::new(FreshGauge::default())
    }

    fn histogram(&self, _: &Key) -> Self::Histogram {
        Arc::new(AtomicBucket::new())
    }
}

/// Records metrics for EMF documents in `namespace`, each carrying the dimension `function`.
pub struct EmfRecorder {
    registry: Registry<Key, EmfStorage>,
    namespace: &'static str,
    function: &'static str,
}

impl std::fmt::Debug for EmfRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmfRecorder")
            .field("namespace", &self.namespace)
            .field("function", &self.function)
            .finish_non_exhaustive()
    }
}

/// One metric's values under one label set, taken for a document.
struct Taken {
    labels: Vec<(String, String)>,
    /// Which part of a histogram's values (0 for counters and gauges): parts never share a
    /// document.
    part: usize,
    name: String,
    value: Value,
}

/// A document being filled.
#[derive(Default)]
struct Document {
    /// Dimension values already in the document.
    dimensions: BTreeMap<String, String>,
    /// The directives: each label set's dimension names and metrics.
    directives: Vec<Value>,
    /// The metric values.
    values: Map<String, Value>,
}

impl Document {
    /// Whether a label set with `labels` and `names` can join without changing a value.
    fn accepts(&self, labels: &[(String, String)], names: &[&str]) -> bool {
        labels
            .iter()
            .all(|(k, v)| self.dimensions.get(k).is_none_or(|held| held == v))
            && names
                .iter()
                .all(|n| !self.values.contains_key(*n) && !self.dimensions.contains_key(*n))
            && labels.iter().all(|(k, _)| !self.values.contains_key(k))
    }
}

/// CloudWatch's name of `unit` (the EMF `Unit`), `None` where CloudWatch has no such unit.
pub fn cloudwatch_unit(unit: Unit) -> Option<&'static str> {
    Some(match unit {
        Unit::Count => "Count",
        Unit::Percent => "Percent",
        Unit::Seconds => "Seconds",
        Unit::Milliseconds => "Milliseconds",
        Unit::Microseconds => "Microseconds",
        Unit::Bytes => "Bytes",
        Unit::BitsPerSecond => "Bits/Second",
        Unit::CountPerSecond => "Count/Second",
        _ => return None,
    })
}

impl EmfRecorder {
    /// A recorder for documents in `namespace` with the dimension `function`.
    pub fn new(namespace: &'static str, function: &'static str) -> Self {
        Self {
            registry: Registry::new(EmfStorage),
            namespace,
            function,
        }
    }

    /// Writes what was recorded since the last call as EMF documents, one JSON object per line
    /// (nothing when nothing was recorded), with `properties` (the Lambda request id, the X-Ray
    /// trace id) in each, timestamped `timestamp_ms` (milliseconds since the Unix epoch); returns
    /// how many documents were written. Counters written are reset, histogram values written
    /// are removed, a gauge is written once per setting.
    pub fn write(
        &self, out: &mut Vec<u8>, properties: &[(&str, &str)], timestamp_ms: u64,
    ) -> usize {
        let documents = self.documents(properties, timestamp_ms);
        for document in &documents {
            // A map of strings and numbers always serializes.
            if serde_json::to_writer(&mut *out, document).is_ok() {
                out.push(b'\n');
            }
        }
        documents.len()
    }

    /// The documents [`Self::write`] writes.
    pub fn documents(&self, properties: &[(&str, &str)], timestamp_ms: u64) -> Vec<Value> {
        type Group = (usize, Vec<(String, String)>);
        let mut groups: BTreeMap<Group, Vec<(String, Value)>> = BTreeMap::new();
        for taken in self.take() {
            groups
                .entry((taken.part, taken.labels))
                .or_default()
                .push((taken.name, taken.value));
        }
        let mut documents: Vec<Document> = Vec::new();
        for ((_, labels), metrics) in groups {
            let names: Vec<&str> = metrics.iter().map(|(n, _)| n.as_str()).collect();
            let index = match documents.iter().position(|d| d.accepts(&labels, &names)) {
                Some(index) => index,
                None => {
                    let mut document = Document::default();
                    document
                        .dimensions
                        .insert("function".into(), self.function.into());
                    documents.push(document);
                    documents.len() - 1
                }
            };
            let document = &mut documents[index];
            let mut dimension_names = vec![Value::from("function")];
            for (key, value) in &labels {
                dimension_names.push(Value::from(key.as_str()));
                document.dimensions.insert(key.clone(), value.clone());
            }
            let mut definitions = Vec::new();
            for (name, value) in metrics {
                let mut definition = Map::new();
                definition.insert("Name".into(), Value::from(name.as_str()));
                let unit = METRICS
                    .iter()
                    .find(|m| m.name == name)
                    .and_then(|m| cloudwatch_unit(m.unit));
                if let Some(unit) = unit {
                    definition.insert("Unit".into(), Value::from(unit));
                }
                definitions.push(Value::Object(definition));
                document.values.insert(name, value);
            }
            let mut directive = Map::new();
            directive.insert("Namespace".into(), Value::from(self.namespace));
            directive.insert(
                "Dimensions".into(),
                Value::Array(vec![Value::Array(dimension_names)]),
            );
            directive.insert("Metrics".into(), Value::Array(definitions));
            document.directives.push(Value::Object(directive));
        }
        documents
            .into_iter()
            .map(|document| {
                let mut aws = Map::new();
                aws.insert("Timestamp".into(), Value::from(timestamp_ms));
                aws.insert(
                    "CloudWatchMetrics".into(),
                    Value::Array(document.directives),
                );
                let mut object = Map::new();
                object.insert("_aws".into(), Value::Object(aws));
                for (key, value) in document.dimensions {
                    object.insert(key, Value::from(value));
                }
                object.extend(document.values);
                for (key, value) in properties {
                    if !object.contains_key(*key) {
                        object.insert((*key).to_string(), Value::from(*value));
                    }
                }
                Value::Object(object)
            })
            .collect()
    }

    /// Every metric recorded since the last call, its values taken; histograms of more than
    /// [`MAX_VALUES_PER_METRIC`] values in several parts.
    fn take(&self) -> Vec<Taken> {
        let mut taken = Vec::new();
        let labels = |key: &Key| -> Vec<(String, String)> {
            key.labels()
                .filter(|l| !RESERVED.contains(&l.key()) && l.key() != "function")
                .map(|l| (l.key().to_string(), l.value().to_string()))
                .collect()
        };
        self.registry.visit_counters(|key, counter| {
            let value = counter.swap(0, Ordering::AcqRel);
            if value > 0 {
                taken.push(Taken {
                    labels: labels(key),
                    part: 0,
                    name: key.name().to_string(),
                    value: Value::from(value),
                });
            }
        });
        self.registry.visit_gauges(|key, gauge| {
            if let Some(value) = gauge.take() {
                taken.push(Taken {
                    labels: labels(key),
                    part: 0,
                    name: key.name().to_string(),
                    value: Value::from(value),
                });
            }
        });
        self.registry.visit_histograms(|key, histogram| {
            let mut values = Vec::new();
            histogram.clear_with(|block| values.extend_from_slice(block));
            for (part, values) in values.chunks(MAX_VALUES_PER_METRIC).enumerate() {
                taken.push(Taken {
                    labels: labels(key),
                    part,
                    name: key.name().to_string(),
                    value: Value::Array(values.iter().copied().map(Value::from).collect()),
                });
            }
        });
        taken
    }
}

impl Recorder for EmfRecorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        self.registry
            .get_or_create_counter(key, |c| Counter::from_arc(c.clone()))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        self.registry
            .get_or_create_gauge(key, |g| Gauge::from_arc(g.clone()))
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        self.registry
            .get_or_create_histogram(key, |h| Histogram::from_arc(h.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry;
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
                .filter(|(n, d, _)| {
                    n == name && d.get("outcome").map(String::as_str) == Some(outcome)
                })
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
}
