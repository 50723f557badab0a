//! The Lambda functions' metrics recorder: CloudWatch Embedded Metric Format (EMF), one document
//! per invocation (`docs/operations.md`, "Metrics").
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

use super::catalogue::METRICS;
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
