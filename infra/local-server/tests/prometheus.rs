//! The local server's metrics (`docs/operations.md`, "Metrics"): after a few requests, `GET
//! /metrics` answers Prometheus text holding the catalogue of `shared::telemetry::METRICS` (the
//! names, kinds, units in the help text and labels of `docs/operations.md`, label names as
//! Prometheus expects them), and the binary's log holds no metric document and no line per
//! successful request. In a test binary of its own: the recorder is process-wide.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;

use axum::http::{Method, StatusCode};
use common::TestApp;
use http_body_util::BodyExt;
use local_server::{build_app_with, AppConfig, DEMO_SEED};
use serde_json::json;
use shared::telemetry::{MetricKind, METRICS};
use std::collections::{BTreeMap, BTreeSet};
use tower::ServiceExt;

const CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000002";
const ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
/// Initech's router, synced to its CRM, and one of its contacts.
const CRM_ROUTER: &str = "f6b7c8d9-e0f1-4a2b-9c34-d5e6f7a8b920";
const CRM_CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000021";

/// One sample line: metric name, labels, value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Whether `name` is a valid Prometheus metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
fn metric_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Whether `name` is a valid Prometheus label name (`[a-zA-Z_][a-zA-Z0-9_]*`, not `__`-led).
fn label_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    !name.starts_with("__")
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses Prometheus text (exposition format 0.0.4): the `# HELP` and `# TYPE` lines by metric,
/// and the samples.
fn parse(
    text: &str,
) -> (
    BTreeMap<String, String>,
    BTreeMap<String, String>,
    Vec<Sample>,
) {
    let (mut help, mut types, mut samples) = (BTreeMap::new(), BTreeMap::new(), Vec::new());
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap();
            help.insert(name.to_string(), text.to_string());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            types.insert(name.to_string(), kind.to_string());
            continue;
        }
        assert!(!line.starts_with('#'), "an unknown comment: {line}");
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            other => other.parse().unwrap_or_else(|_| panic!("a value: {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series.to_string(), BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').unwrap();
                let mut labels = BTreeMap::new();
                // Values are quoted; the catalogue's values hold no quote, comma or backslash.
                for pair in body.split("\",").filter(|p| !p.is_empty()) {
                    let (key, value) = pair.split_once("=\"").unwrap();
                    labels.insert(key.to_string(), value.trim_end_matches('"').to_string());
                }
                (name.to_string(), labels)
            }
        };
        samples.push(Sample {
            name,
            labels,
            value,
        });
    }
    (help, types, samples)
}

fn kind_name(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Counter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Histogram => "histogram",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_metrics_serves_the_catalogue_as_prometheus_text() {
    let handle = local_server::prometheus::install().expect("the recorder installs");
    // Initech's CRM is a fake that first answers 503, so that the sync's retry runs as due
    // work (a timer of this process, 0.2 s later).
    let (fake, base) = fake_crm::FakeCrm::start_demo().await.unwrap();
    fake.push(
        fake_crm::Scripted::status(503)
            .body(json!({"message": "down"}))
            .for_updates(),
    );
    let deps = local_server::with_local_keys(
        shared::deps::Deps::new(std::sync::Arc::new(
            shared::store::memory::MemoryStore::new(),
        ))
        .with_outbound(shared::outbound::OutboundPolicy::LOCAL)
        .with_crm_retry_delays(shared::crm::RetryDelays::parse("0.2,0.2,0.2").unwrap()),
        None,
    )
    .unwrap();
    let app = build_app_with(
        AppConfig {
            seed: DEMO_SEED.replace("http://127.0.0.1:4010", &base),
            signing_key_pem: None,
        },
        deps,
    )
    .await
    .unwrap();
    let engine = app.engine.clone();
    let deps = app.deps.clone();
    let client = TestApp {
        router: app
            .router
            .merge(local_server::prometheus::router(handle.clone())),
    };
    let token = client.northwind().await;
    for _ in 0..3 {
        let answer = client
            .call(Method::GET, &format!("/contacts/{CONTACT}"), &token, None)
            .await;
        assert_eq!(answer.status, StatusCode::OK);
    }
    let missing = "/contacts/01936b2a-7c00-7a00-8000-0000000000ff";
    assert_eq!(
        client.call(Method::GET, missing, &token, None).await.status,
        StatusCode::NOT_FOUND
    );
    let create = json!({"fields": {"email": "prometheus.scrape@example.com"}});
    for _ in 0..2 {
        let answer = client
            .raw(
                Method::POST,
                "/contacts",
                &[
                    ("authorization", &format!("Bearer {token}")),
                    ("content-type", "application/json"),
                    ("idempotency-key", "prometheus-scrape-1"),
                ],
                serde_json::to_vec(&create).unwrap(),
            )
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    }
    let dispatch = json!({"router_id": ROUTER, "object_id": CONTACT});
    let answer = client
        .call(Method::POST, "/dispatch/router", &token, Some(dispatch))
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    // A queue batch, a sweep and a due-work attempt, as the local server runs them.
    let fixture = |name: &str| {
        std::fs::read_to_string(format!(
            "{}/../../events/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    };
    let batch = serde_json::from_str(&fixture("sqs-dispatch-valid.json")).unwrap();
    dispatch_function::handle_sqs_batch(&engine, batch).await;
    dispatch_function::handle_schedule(&engine).await.unwrap();
    let batch = serde_json::from_str(&fixture("sqs-webhook-delivery.json")).unwrap();
    webhooks_function::handle_sqs_batch(&deps.due, batch).await;

    // An assignment on Initech's router: its CRM sync fails first, and its retry is due work
    // (DueWorkRuns, DueWorkLateness).
    let initech = client.token(common::INITECH, common::ALL_SCOPES).await;
    let crm_dispatch = json!({"router_id": CRM_ROUTER, "object_id": CRM_CONTACT});
    let answer = client
        .call(
            Method::POST,
            "/dispatch/router",
            &initech,
            Some(crm_dispatch),
        )
        .await;
    assert_eq!(answer.body["success"], true, "{}", answer.body);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !handle.render().contains("DueWorkRuns{") {
        assert!(
            std::time::Instant::now() < deadline,
            "the CRM sync ran: {} owner updates, {}",
            fake.owner_updates().len(),
            handle.render()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(fake.owner_updates().len(), 2);
    // A parking takes ten failing runs of one item (shared/tests/integration/due_policy.rs walks
    // them); the worker then counts it through this function, recorded here once so that the scrape
    // shows how the exporter renders it.
    shared::telemetry::due_work_parked();

    let response = client
        .router
        .clone()
        .oneshot(
            axum::http::Request::get("/metrics")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        local_server::prometheus::CONTENT_TYPE_TEXT
    );
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let (help, types, samples) = parse(&text);

    // Every metric described is catalogued with its kind, and its help names its unit.
    let catalogue: BTreeMap<&str, _> = METRICS.iter().map(|m| (m.name, m)).collect();
    for (name, kind) in &types {
        let spec = catalogue
            .get(name.as_str())
            .unwrap_or_else(|| panic!("{name} is not in the catalogue"));
        assert_eq!(kind, kind_name(spec.kind), "{name}");
        let text = help
            .get(name)
            .unwrap_or_else(|| panic!("{name} has no help"));
        assert!(text.contains(spec.unit.as_str()), "{name}: {text}");
        assert!(metric_name_ok(name), "{name}");
    }
    // Every catalogued metric was recorded by the requests above.
    let described: BTreeSet<&str> = types.keys().map(String::as_str).collect();
    assert_eq!(
        described,
        catalogue.keys().copied().collect::<BTreeSet<_>>()
    );

    // Every sample: a catalogued name (a histogram's series suffixed), exactly its labels.
    for sample in &samples {
        let (base, extra) = [("_bucket", Some("le")), ("_sum", None), ("_count", None)]
            .iter()
            .find_map(|(suffix, extra)| {
                let base = sample.name.strip_suffix(suffix)?;
                let spec = catalogue.get(base)?;
                (spec.kind == MetricKind::Histogram).then_some((base, *extra))
            })
            .unwrap_or((sample.name.as_str(), None));
        let spec = catalogue
            .get(base)
            .unwrap_or_else(|| panic!("{} is not in the catalogue", sample.name));
        let mut expected: BTreeSet<&str> = spec.dimensions.iter().copied().collect();
        expected.insert("function");
        expected.extend(extra);
        let carried: BTreeSet<&str> = sample.labels.keys().map(String::as_str).collect();
        assert_eq!(carried, expected, "{sample:?}");
        assert!(sample.labels.keys().all(|l| label_name_ok(l)), "{sample:?}");
        assert_eq!(sample.labels["function"], "local-server", "{sample:?}");
    }
    let value = |name: &str, labels: &[(&str, &str)]| -> f64 {
        samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(v))
            })
            .map(|s| s.value)
            .sum()
    };
    let contact = [("route", "/contacts/{contactId}"), ("status_class", "2xx")];
    assert_eq!(value("Requests", &contact), 3.0, "{text}");
    assert_eq!(
        value(
            "Requests",
            &[("route", "/contacts/{contactId}"), ("status_class", "4xx")]
        ),
        1.0
    );
    let latency = [("route", "/contacts/{contactId}"), ("le", "+Inf")];
    assert_eq!(value("RequestLatency_bucket", &latency), 4.0, "{text}");
    assert_eq!(
        value(
            "RequestLatency_count",
            &[("route", "/contacts/{contactId}")]
        ),
        4.0
    );
    assert_eq!(value("TokenRequests", &[("result", "granted")]), 2.0);
    assert_eq!(value("IdempotentReplays", &[]), 1.0);
    assert!(value("Dispatches", &[]) >= 2.0, "{text}");
    assert_eq!(value("QueueBatchSize_count", &[]), 2.0, "{text}");
    // Scraping is not an API request.
    assert!(
        samples
            .iter()
            .all(|s| s.labels.get("route").map(String::as_str) != Some("/metrics")),
        "{text}"
    );
}

/// The binary at its default log level: a few requests write no metric document and no
/// `request done` line, and `GET /metrics` counts them.
#[tokio::test]
async fn the_binary_logs_no_metrics_and_serves_them_on_get_metrics() {
    use std::process::{Command, Stdio};
    let dir = std::env::temp_dir().join(format!("local-server-log-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let log_path = dir.join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_local-server"))
        .args(["--addr", "127.0.0.1:0"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let mut base = None;
    for _ in 0..300 {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some(line) = text
            .lines()
            .find_map(|l| l.strip_prefix("account routing API listening on "))
        {
            base = Some(line.trim().to_string());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let base = base.unwrap_or_else(|| {
        let _ = child.kill();
        panic!(
            "no address: {}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        )
    });
    let started_lines = std::fs::read_to_string(&log_path).unwrap().lines().count();
    let http = common::http();
    let token: serde_json::Value = http
        .post(format!("{base}/oauth2/token"))
        .basic_auth(common::NORTHWIND.0, Some(common::NORTHWIND.1))
        .form(&[
            ("grant_type", "client_credentials"),
            ("scope", "service-api/read"),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = token["access_token"].as_str().unwrap().to_string();
    let requests = 20;
    for _ in 0..requests {
        let status = http
            .get(format!("{base}/contacts/{CONTACT}"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200);
    }
    let scrape = http.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(scrape.status(), 200);
    let text = scrape.text().await.unwrap();
    // The sweeper may log a line of its own; give the log a moment to settle.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(&log_path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    let (_, _, samples) = parse(&text);
    let served: f64 = samples
        .iter()
        .filter(|s| s.name == "Requests")
        .filter(|s| s.labels.get("route").map(String::as_str) == Some("/contacts/{contactId}"))
        .map(|s| s.value)
        .sum();
    assert_eq!(served, f64::from(requests), "{text}");
    assert!(
        !log.contains("_aws") && !log.contains("CloudWatchMetrics"),
        "a metric document in the log:\n{log}"
    );
    assert!(!log.contains("request done"), "{log}");
    let after_start = log.lines().count() - started_lines;
    assert!(
        after_start <= 2,
        "{after_start} lines for {requests} successful requests:\n{log}"
    );
}
