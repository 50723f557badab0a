//! Metrics: every figure an operator alarms or graphs on, recorded through the
//! `metrics` facade. The names, kinds, units and dimensions are listed in [`METRICS`] and in
//! `docs/operations.md` (a test keeps the two equal). Recording costs no I/O; where the figures
//! go depends on the process:
//!
//! - **Lambda** ([`install`]): CloudWatch Embedded Metric Format ([`emf`]), one JSON document
//!   per invocation written to stdout when the invocation ends ([`flush`]; CloudWatch Logs turns
//!   it into metrics, no API call). An API invocation writes one line of 450 to 700 bytes.
//! - **The local server** (a long-running process): Prometheus text on `GET /metrics`, through
//!   `metrics-exporter-prometheus` (installed by the local server with the same names, units in
//!   the help text ([`describe`]) and labels, plus `function="local-server"`); nothing in its log.
//!
//! Dimensions (Prometheus labels) are bounded sets: the function, a route template
//! (`/contacts/{contactId}`), a status class, an outcome or reason label, a due-work kind. Never
//! an account, record, member or request id (those go to the EMF documents' properties,
//! searchable in Logs Insights, not metrics).

pub mod catalogue;
pub mod emf;
#[cfg(test)]
mod emf_tests;

pub use catalogue::*;
use emf::EmfRecorder;
use metrics::{counter, gauge, histogram};
use metrics::{Key, Label};
use std::collections::HashMap;
use std::sync::{OnceLock, PoisonError, RwLock};
use std::time::Duration;

static EMF: OnceLock<&'static EmfRecorder> = OnceLock::new();

/// Installs the EMF recorder for this process (a Lambda function), its documents carrying
/// `function` as a dimension; later calls are ignored. Returns `false` when another recorder
/// was installed first (its metrics then go there, and [`flush`] writes nothing).
pub fn install(function: &'static str) -> bool {
    if EMF.get().is_some() {
        return true;
    }
    let recorder: &'static EmfRecorder = Box::leak(Box::new(EmfRecorder::new(NAMESPACE, function)));
    if metrics::set_global_recorder(recorder).is_err() {
        return false;
    }
    EMF.set(recorder).is_ok()
}

/// Describes every metric of [`METRICS`] to the installed recorder: its kind, unit and meaning
/// (the local server's Prometheus exporter writes them as `# TYPE` and `# HELP`; EMF takes the
/// units from the catalogue itself).
pub fn describe() {
    for spec in METRICS {
        let help = format!("{} ({})", spec.meaning, spec.unit.as_str());
        match spec.kind {
            MetricKind::Counter => metrics::describe_counter!(spec.name, spec.unit, help),
            MetricKind::Gauge => metrics::describe_gauge!(spec.name, spec.unit, help),
            MetricKind::Histogram => metrics::describe_histogram!(spec.name, spec.unit, help),
        }
    }
}

/// Writes the metrics recorded since the last flush as EMF (one document, a JSON line; a second
/// only when label values cannot share one, see [`emf`]) to `writer` in one write, with the
/// Lambda request id and X-Ray trace id as properties when known; returns the bytes written.
/// Nothing when nothing was recorded or the EMF recorder is not installed.
///
/// Errors: the writer's.
pub fn flush_to(
    mut writer: impl std::io::Write, request_id: Option<&str>, trace_id: Option<&str>,
) -> std::io::Result<usize> {
    let Some(recorder) = EMF.get() else {
        return Ok(0);
    };
    let mut properties = Vec::with_capacity(2);
    if let Some(id) = request_id {
        properties.push(("request_id", id));
    }
    if let Some(id) = trace_id {
        properties.push(("xray_trace_id", id));
    }
    let timestamp_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut out = Vec::with_capacity(512);
    recorder.write(&mut out, &properties, timestamp_ms);
    if !out.is_empty() {
        writer.write_all(&out)?;
        writer.flush()?;
    }
    Ok(out.len())
}

/// [`flush_to`] stdout: the end of a Lambda invocation (CloudWatch Logs reads the line and turns
/// it into metrics; no API call).
pub fn flush(request_id: Option<&str>, trace_id: Option<&str>) {
    let stdout = std::io::stdout();
    if let Err(error) = flush_to(stdout.lock(), request_id, trace_id) {
        tracing::warn!(%error, "metrics flush failed");
    }
}

/// A request answered: its route template, status and duration. `route` is a template
/// (`/contacts/{contactId}`) or [`UNMATCHED_ROUTE`], never a raw path: each distinct value becomes a
/// label kept for the life of the process.
pub fn request(route: &str, status: u16, elapsed: Duration) {
    // An index into `STATUS_CLASSES`.
    let class = match status {
        200..=299 => 0,
        300..=399 => 1,
        400..=499 => 2,
        _ => 3,
    };
    let labels = route_labels(route);
    // What `counter!` and `histogram!` do, with keys over labels made once per route: the macros
    // build a `Vec` of labels for every call with a runtime label value.
    static METADATA: metrics::Metadata<'static> =
        metrics::Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));
    metrics::with_recorder(|recorder| {
        let requests = Key::from_static_parts(REQUESTS, &labels.requests[class]);
        recorder.register_counter(&requests, &METADATA).increment(1);
        let latency = Key::from_static_parts(REQUEST_LATENCY, &labels.latency);
        recorder
            .register_histogram(&latency, &METADATA)
            .record(elapsed.as_secs_f64() * 1000.0);
    });
}

/// The `route` label of a request that matched no route (a 404 or 405 of the router).
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// The `status_class` label values of `Requests`, in the order [`request`] indexes them.
const STATUS_CLASSES: [&str; 4] = ["2xx", "3xx", "4xx", "5xx"];

/// The labels of one route's request metrics: `Requests` by status class (`2xx`, `3xx`, `4xx`,
/// `5xx`, in that order) and `RequestLatency`.
struct RouteLabels {
    requests: [[Label; 2]; 4],
    latency: [Label; 1],
}

/// The labels of `route`'s request metrics, made once per route and kept for the life of the
/// process, so recording a request copies no string and builds no key. The routes are templates
/// (`/contacts/{contactId}`, never a raw path) or [`UNMATCHED_ROUTE`], a set fixed by the router, so what
/// is kept is bounded.
fn route_labels(route: &str) -> &'static RouteLabels {
    type Routes = HashMap<&'static str, &'static RouteLabels, foldhash::fast::RandomState>;
    static ROUTES: OnceLock<RwLock<Routes>> = OnceLock::new();
    let routes = ROUTES.get_or_init(Default::default);
    if let Some(known) = routes
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(route)
    {
        return known;
    }
    let mut routes = routes.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(known) = routes.get(route) {
        return known;
    }
    let kept: &'static str = Box::leak(route.into());
    let requests = STATUS_CLASSES.map(|class| {
        [
            Label::from_static_parts("route", kept),
            Label::from_static_parts("status_class", class),
        ]
    });
    let labels: &'static RouteLabels = Box::leak(Box::new(RouteLabels {
        requests,
        latency: [Label::from_static_parts("route", kept)],
    }));
    routes.insert(kept, labels);
    labels
}

/// A dispatch's outcome label and the assignment's reason (`none` without an assignment).
pub fn dispatch(outcome: &'static str, reason: &'static str) {
    counter!(DISPATCHES, "outcome" => outcome, "reason" => reason).increment(1);
}

/// A dispatch that failed with an error (a 5xx, or a queue message reported failed).
pub fn dispatch_error() {
    dispatch("error", "none");
}

/// An answer replayed for a repeated `Idempotency-Key`.
pub fn idempotent_replay() {
    counter!(IDEMPOTENT_REPLAYS).increment(1);
}

/// A token request: granted or refused.
pub fn token_request(granted: bool) {
    counter!(TOKEN_REQUESTS, "result" => if granted { "granted" } else { "refused" }).increment(1);
}

/// An SQS batch: its size and how many messages were reported failed.
pub fn queue_batch(size: usize, failures: usize) {
    histogram!(QUEUE_BATCH_SIZE).record(size as f64);
    counter!(QUEUE_MESSAGE_FAILURES).increment(failures as u64);
}

/// A due-work attempt ran: its kind, outcome label and how late it started.
pub fn due_work_run(kind: &'static str, outcome: &'static str, late: Duration) {
    counter!(DUE_WORK_RUNS, "kind" => kind, "outcome" => outcome).increment(1);
    histogram!(DUE_WORK_LATENESS, "kind" => kind).record(late.as_secs_f64());
}

/// A sweep: per kind, the items handed on again and the oldest one's lateness.
pub fn sweep(kind: &'static str, swept: usize, oldest: Duration) {
    counter!(DUE_WORK_SWEPT, "kind" => kind).increment(swept as u64);
    gauge!(DUE_WORK_OVERDUE, "kind" => kind).set(oldest.as_secs_f64());
}

/// A due item parked after running too often without progress.
pub fn due_work_parked() {
    counter!(DUE_WORK_PARKED).increment(1);
}
