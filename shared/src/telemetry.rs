//! Metrics (issue 22): every figure an operator alarms or graphs on, recorded through the
//! `metrics` facade and written as CloudWatch Embedded Metric Format (EMF) documents by
//! `metrics_cloudwatch_embedded`: in Lambda one flush per invocation to stdout (CloudWatch Logs
//! turns the documents into metrics, no API call), in the local server one flush a minute to its
//! log. The names, units and dimensions are listed in [`METRICS`] and in `docs/operations.md`
//! (a test keeps the two equal and validates the documents).
//!
//! Dimensions are bounded sets: the function, a route template (`/contacts/{contactId}`), a
//! status class, an outcome or reason label, a due-work kind. Never an account, record, member
//! or request id (those go to the documents' properties, searchable in Logs Insights, not
//! metrics).

use metrics::{counter, gauge, histogram, Unit};
use metrics_cloudwatch_embedded::Collector;
use std::sync::OnceLock;
use std::time::Duration;

/// The CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "AccountRouting";

/// One metric: its name, unit and the dimensions (labels) it carries besides `function`.
#[derive(Debug, Clone, Copy)]
pub struct MetricSpec {
    /// The metric's name.
    pub name: &'static str,
    /// Its CloudWatch unit.
    pub unit: Unit,
    /// Its labels (each a bounded set).
    pub dimensions: &'static [&'static str],
    /// What it counts.
    pub meaning: &'static str,
}

/// Requests served, by route template and status class (`2xx`, `4xx`, `5xx`).
pub const REQUESTS: &str = "Requests";
/// Request latency in milliseconds, by route template.
pub const REQUEST_LATENCY: &str = "RequestLatency";
/// Dispatch outcomes (API and queue), by outcome (`assigned`, a message label, `error`) and
/// reason (`rotation`, `backup`, `account_matching`, `sla_reassignment`, `none`).
pub const DISPATCHES: &str = "Dispatches";
/// Idempotent replays answered from a stored answer (BEHAVIOR 10).
pub const IDEMPOTENT_REPLAYS: &str = "IdempotentReplays";
/// Token requests, by result (`granted`, `refused`).
pub const TOKEN_REQUESTS: &str = "TokenRequests";
/// SQS messages received per batch, by queue function.
pub const QUEUE_BATCH_SIZE: &str = "QueueBatchSize";
/// SQS messages reported failed in a batch response.
pub const QUEUE_MESSAGE_FAILURES: &str = "QueueMessageFailures";
/// Due-work runs, by kind (`crm_sync`, `webhook_delivery`, `sla_check`) and outcome (CRM sync:
/// `synced`, `retrying`, `failed`, `superseded`; webhooks: `delivered`, `retrying`, `failed`,
/// `gone`, ...).
pub const DUE_WORK_RUNS: &str = "DueWorkRuns";
/// How late a due-work attempt started after its due time, seconds, by kind (the retry age).
pub const DUE_WORK_LATENESS: &str = "DueWorkLateness";
/// Due items a sweep found past their resume time, by kind.
pub const DUE_WORK_SWEPT: &str = "DueWorkSwept";
/// The oldest overdue item a sweep found, seconds past its due time, by kind (0 when none).
pub const DUE_WORK_OVERDUE: &str = "DueWorkOverdueSeconds";
/// Due items parked after `DueItem::MAX_RUNS` runs without progress (any kind: the log line
/// names it); any is alarmed.
pub const DUE_WORK_PARKED: &str = "DueWorkParked";

/// Every metric the service writes (`docs/operations.md` lists the same).
pub const METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: REQUESTS,
        unit: Unit::Count,
        dimensions: &["route", "status_class"],
        meaning: "HTTP requests served",
    },
    MetricSpec {
        name: REQUEST_LATENCY,
        unit: Unit::Milliseconds,
        dimensions: &["route"],
        meaning: "time to answer a request",
    },
    MetricSpec {
        name: DISPATCHES,
        unit: Unit::Count,
        dimensions: &["outcome", "reason"],
        meaning: "dispatch outcomes, API and queue",
    },
    MetricSpec {
        name: IDEMPOTENT_REPLAYS,
        unit: Unit::Count,
        dimensions: &[],
        meaning: "answers replayed for a repeated Idempotency-Key",
    },
    MetricSpec {
        name: TOKEN_REQUESTS,
        unit: Unit::Count,
        dimensions: &["result"],
        meaning: "token requests granted or refused",
    },
    MetricSpec {
        name: QUEUE_BATCH_SIZE,
        unit: Unit::Count,
        dimensions: &[],
        meaning: "messages in an SQS batch",
    },
    MetricSpec {
        name: QUEUE_MESSAGE_FAILURES,
        unit: Unit::Count,
        dimensions: &[],
        meaning: "messages of a batch reported failed (retried, then dead-lettered)",
    },
    MetricSpec {
        name: DUE_WORK_RUNS,
        unit: Unit::Count,
        dimensions: &["kind", "outcome"],
        meaning: "attempts of due work (CRM sync, webhook delivery, SLA check) by outcome",
    },
    MetricSpec {
        name: DUE_WORK_LATENESS,
        unit: Unit::Seconds,
        dimensions: &["kind"],
        meaning: "how late an attempt started after its due time",
    },
    MetricSpec {
        name: DUE_WORK_SWEPT,
        unit: Unit::Count,
        dimensions: &["kind"],
        meaning: "overdue items a sweep found (and handed on again)",
    },
    MetricSpec {
        name: DUE_WORK_OVERDUE,
        unit: Unit::Seconds,
        dimensions: &["kind"],
        meaning: "the oldest overdue item a sweep found",
    },
    MetricSpec {
        name: DUE_WORK_PARKED,
        unit: Unit::Count,
        dimensions: &[],
        meaning: "due items given up after ten runs without progress (kept for inspection)",
    },
];

static COLLECTOR: OnceLock<&'static Collector> = OnceLock::new();

/// Where a flush that the recording itself triggers writes: stdout in Lambda (CloudWatch Logs),
/// stderr in the local server (its log).
static AUTO_SINK_IS_STDERR: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Histogram values recorded since the last flush, all metrics together.
static PENDING_VALUES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The collector keeps at most 100 values per histogram between flushes and blocks the
/// recording thread beyond that; a flush is made once this many values wait, so no recording
/// ever blocks (a long-running local server, a large batch).
const FLUSH_AT_VALUES: usize = 50;

/// Counts a histogram value and flushes when [`FLUSH_AT_VALUES`] wait.
fn note_value() {
    let pending = PENDING_VALUES.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    if pending >= FLUSH_AT_VALUES {
        let result = if AUTO_SINK_IS_STDERR.load(std::sync::atomic::Ordering::SeqCst) {
            flush_to(std::io::stderr(), None, None)
        } else {
            flush_to(std::io::stdout(), None, None)
        };
        if let Err(error) = result {
            tracing::warn!(%error, "metrics flush failed");
        }
    }
}

/// Flushes that the recording triggers go to stderr (the local server's log) instead of stdout.
pub fn auto_flush_to_stderr() {
    AUTO_SINK_IS_STDERR.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Installs the EMF recorder for this process, its documents carrying `function` as a
/// dimension; later calls (and a recorder installed by someone else) are ignored. Returns the
/// collector to flush.
pub fn install(function: &'static str) -> Option<&'static Collector> {
    if let Some(collector) = COLLECTOR.get() {
        return Some(collector);
    }
    let collector = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace(NAMESPACE)
        .with_dimension("function", function)
        .init()
        .ok()?;
    for spec in METRICS {
        metrics::describe_counter!(spec.name, spec.unit, spec.meaning);
    }
    Some(*COLLECTOR.get_or_init(|| collector))
}

/// The installed collector, if any.
pub fn collector() -> Option<&'static Collector> {
    COLLECTOR.get().copied()
}

/// Writes the metrics recorded since the last flush as EMF documents (one JSON line per label
/// set) to `writer`, with the Lambda request id and X-Ray trace id as properties when known.
/// Nothing when no collector is installed.
///
/// Errors: the writer's.
pub fn flush_to(
    writer: impl std::io::Write, request_id: Option<&str>, trace_id: Option<&str>,
) -> std::io::Result<()> {
    let Some(collector) = collector() else {
        return Ok(());
    };
    PENDING_VALUES.store(0, std::sync::atomic::Ordering::SeqCst);
    if let Some(id) = request_id {
        collector.set_property("request_id", id.to_string());
    }
    if let Some(id) = trace_id {
        collector.set_property("xray_trace_id", id.to_string());
    }
    collector.flush(writer)
}

/// [`flush_to`] stdout (a Lambda invocation's end; CloudWatch Logs reads the lines).
pub fn flush(request_id: Option<&str>, trace_id: Option<&str>) {
    let stdout = std::io::stdout();
    if let Err(error) = flush_to(stdout.lock(), request_id, trace_id) {
        tracing::warn!(%error, "metrics flush failed");
    }
}

/// A request answered: its route template, status and duration.
pub fn request(route: &str, status: u16, elapsed: Duration) {
    let class = match status {
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    };
    counter!(REQUESTS, "route" => route.to_string(), "status_class" => class).increment(1);
    histogram!(REQUEST_LATENCY, "route" => route.to_string())
        .record(elapsed.as_secs_f64() * 1000.0);
    note_value();
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
    note_value();
    counter!(QUEUE_MESSAGE_FAILURES).increment(failures as u64);
}

/// A due-work attempt ran: its kind, outcome label and how late it started.
pub fn due_work_run(kind: &'static str, outcome: &'static str, late: Duration) {
    counter!(DUE_WORK_RUNS, "kind" => kind, "outcome" => outcome).increment(1);
    histogram!(DUE_WORK_LATENESS, "kind" => kind).record(late.as_secs_f64());
    note_value();
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
