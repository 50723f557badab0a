//! The local server's metrics (`docs/operations.md`, "Metrics"): the catalogue of
//! [`shared::telemetry::METRICS`] as Prometheus text on `GET /metrics`, through
//! `metrics-exporter-prometheus`. Recording a value is an atomic update in the exporter's registry;
//! the text is made only when scraped, and nothing is written to the log.
//!
//! Names, labels and values are the catalogue's, as the Lambda functions write them in EMF:
//! `Requests{function="local-server",route="/contacts/{contactId}",status_class="2xx"}`, the
//! latency in milliseconds, and so on; each metric's unit is in its `# HELP` line. Counters count
//! from the server's start. Histograms are Prometheus histograms with the buckets below
//! (`_bucket{le=...}`, `_sum`, `_count`), so several servers' figures add up.
//! `docs/operations.md` says how to scrape it.

use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use axum::Router;
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};
use shared::telemetry::{
    MetricKind, DUE_WORK_LATENESS, METRICS, QUEUE_BATCH_SIZE, REQUEST_LATENCY,
};

/// Where the metrics are served.
pub const PATH: &str = "/metrics";

/// The `function` label of every metric of the local server.
pub const FUNCTION: &str = "local-server";

/// The media type of Prometheus' text exposition format (version 0.0.4).
pub const CONTENT_TYPE_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How often the exporter's upkeep runs (it drains the histograms' pending values).
pub const UPKEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// Upper bounds of the buckets of every histogram of the catalogue, in its unit: request latency
/// in milliseconds, due-work lateness in seconds (up to the 10 h of the longest webhook retry),
/// queue batch sizes in messages (a batch holds at most 10).
pub const BUCKETS: &[(&str, &[f64])] = &[
    (
        REQUEST_LATENCY,
        &[
            0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0,
            10000.0,
        ],
    ),
    (
        DUE_WORK_LATENESS,
        &[
            0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 10800.0, 36000.0,
        ],
    ),
    (QUEUE_BATCH_SIZE, &[1.0, 2.0, 3.0, 5.0, 10.0]),
];

/// Installs the Prometheus recorder for this process with the catalogue's descriptions and
/// [`BUCKETS`], every metric labelled `function="local-server"`; returns the handle that renders
/// the text ([`router`]) and runs the upkeep ([`upkeep_periodically`]).
///
/// Errors: a recorder is already installed, or a histogram of the catalogue has no buckets.
pub fn install() -> Result<PrometheusHandle, BuildError> {
    let mut builder = PrometheusBuilder::new().add_global_label("function", FUNCTION);
    for spec in METRICS.iter().filter(|m| m.kind == MetricKind::Histogram) {
        let buckets = BUCKETS
            .iter()
            .find(|(name, _)| *name == spec.name)
            .map(|(_, buckets)| *buckets)
            .unwrap_or_default();
        builder = builder.set_buckets_for_metric(Matcher::Full(spec.name.to_string()), buckets)?;
    }
    let handle = builder.install_recorder()?;
    shared::telemetry::describe();
    Ok(handle)
}

/// `GET /metrics`: the Prometheus text of `handle` (outside the API: no token, not counted as a
/// request, not in the API description).
pub fn router(handle: PrometheusHandle) -> Router {
    Router::new().route(
        PATH,
        get(move || {
            let text = handle.render();
            async move { ([(CONTENT_TYPE, CONTENT_TYPE_TEXT)], text) }
        }),
    )
}

/// Runs the exporter's upkeep every [`UPKEEP_INTERVAL`] until `stop` turns true (without it the
/// histograms' pending values would only be drained by a scrape).
pub async fn upkeep_periodically(
    handle: PrometheusHandle, mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(UPKEEP_INTERVAL) => handle.run_upkeep(),
            _ = stop.changed() => return,
        }
    }
}
