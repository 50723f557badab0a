//! The catalogue of metrics (`docs/operations.md`, "Metrics"): each metric's name, kind, unit and
//! dimensions, which the EMF writer ([`super::emf`]), the local server's Prometheus exporter and
//! `docs/operations.md` all follow.

use metrics::Unit;

/// The CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "AccountRouting";

/// What a metric is: how its values add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// A count of events since the last flush (EMF) or since start (Prometheus).
    Counter,
    /// A value set from time to time (the latest is reported).
    Gauge,
    /// Every value recorded (EMF: the values; Prometheus: a histogram with buckets).
    Histogram,
}

/// One metric: its name, kind, unit and the dimensions (labels) it carries besides `function`.
#[derive(Debug, Clone, Copy)]
pub struct MetricSpec {
    /// The metric's name.
    pub name: &'static str,
    /// How its values add up.
    pub kind: MetricKind,
    /// Its unit (CloudWatch's unit in EMF; in the help text of Prometheus).
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
        kind: MetricKind::Counter,
        unit: Unit::Count,
        dimensions: &["route", "status_class"],
        meaning: "HTTP requests served",
    },
    MetricSpec {
        name: REQUEST_LATENCY,
        kind: MetricKind::Histogram,
        unit: Unit::Milliseconds,
        dimensions: &["route"],
        meaning: "time to answer a request",
    },
    MetricSpec {
        name: DISPATCHES,
        kind: MetricKind::Counter,
        unit: Unit::Count,
        dimensions: &["outcome", "reason"],
        meaning: "dispatch outcomes, API and queue",
    },
    MetricSpec {
        name: IDEMPOTENT_REPLAYS,
        kind: MetricKind::Counter,
        unit: Unit::Count,
        dimensions: &[],
        meaning: "answers replayed for a repeated Idempotency-Key",
    },
    MetricSpec {
        name: TOKEN_REQUESTS,
        kind: MetricKind::Counter,
        unit: Unit::Count,
        dimensions: &["result"],
        meaning: "token requests granted or refused",
    },
    MetricSpec {
        name: QUEUE_BATCH_SIZE,
        kind: MetricKind::Histogram,
        unit: Unit::Count,
        dimensions: &[],
        meaning: "messages in an SQS batch",
    },
    MetricSpec {
        name: QUEUE_MESSAGE_FAILURES,
        kind: MetricKind::Counter,
        unit: Unit::Count,
        dimensions: &[],
        meaning: "messages of a batch reported failed (retried, then dead-lettered)",
    },
    MetricSpec {
        name: DUE_WORK_RUNS,
        kind: MetricKind::Counter,
        unit: Unit::Count,
        dimensions: &["kind", "outcome"],
        meaning: "attempts of due work (CRM sync, webhook delivery, SLA check) by outcome",
    },
    MetricSpec {
        name: DUE_WORK_LATENESS,
        kind: MetricKind::Histogram,
        unit: Unit::Seconds,
        dimensions: &["kind"],
        meaning: "how late an attempt started after its due time",
    },
    MetricSpec {
        name: DUE_WORK_SWEPT,
        kind: MetricKind::Counter,
        unit: Unit::Count,
        dimensions: &["kind"],
        meaning: "overdue items a sweep found (and handed on again)",
    },
    MetricSpec {
        name: DUE_WORK_OVERDUE,
        kind: MetricKind::Gauge,
        unit: Unit::Seconds,
        dimensions: &["kind"],
        meaning: "the oldest overdue item a sweep found",
    },
    MetricSpec {
        name: DUE_WORK_PARKED,
        kind: MetricKind::Counter,
        unit: Unit::Count,
        dimensions: &[],
        meaning: "due items given up after ten runs without progress (kept for inspection)",
    },
];
