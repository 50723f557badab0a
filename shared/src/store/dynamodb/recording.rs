//! Recording of every AWS call the functions' code makes (issue 21 point 1: least-privilege IAM
//! derived from the code). Test builds only (`test-util`).
//!
//! Every AWS client of the workspace is built on the HTTP client of [`super::env::http_client`];
//! in test builds it is wrapped by [`RecordingHttpClient`], which reads each request before it is
//! sent: the service and operation from `X-Amz-Target` (DynamoDB, SQS, KMS and Secrets Manager all
//! speak AWS JSON), and from the JSON body the resource (table, index, queue, secret, key) and,
//! for `TransactWriteItems`, the kind of each item (`Put`, `Update`, `Delete`, `ConditionCheck`).
//! A call is recorded under the function named by [`record_as`] (the harness drives one function
//! at a time), with the resource's logical name in the template when the harness named it
//! ([`name_resource`]). [`fail_next`] makes the next call of an operation fail without being
//! sent, so error paths (an `Idempotency-Key` released after a 5xx) are recorded too.

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, OnceLock};

/// One kind of call a function makes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordedCall {
    /// `dynamodb`, `sqs`, `kms`, `secretsmanager`.
    pub service: String,
    /// The API operation (`GetItem`, `TransactWriteItems`, `SendMessage`, ...).
    pub operation: String,
    /// The resource's logical id in `template.yaml` (`Table`, `Table/index`, `DispatchQueue`,
    /// ...), or its physical name when the harness did not name it.
    pub resource: String,
    /// For `TransactWriteItems`: the kinds of its items (`ConditionCheck`, `Delete`, `Put`,
    /// `Update`), sorted, without repeats; empty otherwise.
    pub items: Vec<String>,
}

#[derive(Default)]
struct State {
    /// The `x-amzn-trace-id` header of the last request sent, if it had one.
    trace_header: Option<String>,
    function: Option<String>,
    names: BTreeMap<String, String>,
    calls: BTreeMap<String, BTreeSet<RecordedCall>>,
    fail_next: BTreeSet<String>,
}

fn state() -> std::sync::MutexGuard<'static, State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Records the calls made from now on under `function` (`None`: stop recording).
pub fn record_as(function: Option<&str>) {
    state().function = function.map(str::to_string);
}

/// Calls naming `physical` (a table name, a queue URL, a secret ARN, a key id) are recorded with
/// `logical` (the template's logical id) instead.
pub fn name_resource(physical: &str, logical: &str) {
    state()
        .names
        .insert(physical.to_string(), logical.to_string());
}

/// The next call of `operation` fails (a connection error) without being sent.
pub fn fail_next(operation: &str) {
    state().fail_next.insert(operation.to_string());
}

/// Every call recorded so far, by function.
pub fn recorded() -> BTreeMap<String, BTreeSet<RecordedCall>> {
    state().calls.clone()
}

/// A resource a request names, with the kinds of its transaction items.
type Touched = (String, Vec<String>);

/// Reads one request: its service, operation and resources. `None` for a request of another
/// protocol (none is made here).
fn read(request: &HttpRequest) -> Option<(String, String, Vec<Touched>)> {
    let target = request.headers().get("x-amz-target")?;
    let (prefix, operation) = target.split_once('.')?;
    let service = match prefix {
        p if p.starts_with("DynamoDB") => "dynamodb",
        "AmazonSQS" => "sqs",
        "TrentService" => "kms",
        "secretsmanager" => "secretsmanager",
        other => other,
    };
    let body: serde_json::Value = request
        .body()
        .bytes()
        .and_then(|b| serde_json::from_slice(b).ok())
        .unwrap_or_default();
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let mut resources: Vec<Touched> = Vec::new();
    match operation {
        "TransactWriteItems" => {
            let mut by_table: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for item in body["TransactItems"].as_array().into_iter().flatten() {
                if let Some((kind, spec)) = item.as_object().and_then(|o| o.iter().next()) {
                    let table = text(&spec["TableName"]).unwrap_or_default();
                    by_table.entry(table).or_default().insert(kind.clone());
                }
            }
            resources.extend(
                by_table
                    .into_iter()
                    .map(|(table, kinds)| (table, kinds.into_iter().collect())),
            );
        }
        "BatchGetItem" | "BatchWriteItem" => {
            for table in body["RequestItems"].as_object().into_iter().flatten() {
                resources.push((table.0.clone(), Vec::new()));
            }
        }
        _ => {
            let table = text(&body["TableName"]);
            let resource = match (table, text(&body["IndexName"])) {
                (Some(table), Some(_)) => format!("{table}/index"),
                (Some(table), None) => table,
                (None, _) => text(&body["QueueUrl"])
                    .or_else(|| text(&body["SecretId"]))
                    .or_else(|| text(&body["KeyId"]))
                    .unwrap_or_default(),
            };
            resources.push((resource, Vec::new()));
        }
    }
    Some((service.to_string(), operation.to_string(), resources))
}

/// The `x-amzn-trace-id` header of the last AWS request sent (X-Ray propagation, issue 22).
pub fn last_trace_header() -> Option<String> {
    state().trace_header.clone()
}

/// Records `request` under the current function; answers whether it must fail.
fn observe(request: &HttpRequest) -> bool {
    state().trace_header = request.headers().get("x-amzn-trace-id").map(str::to_string);
    let Some((service, operation, resources)) = read(request) else {
        return false;
    };
    let mut state = state();
    let fail = state.fail_next.remove(&operation);
    if let Some(function) = state.function.clone() {
        for (resource, items) in resources {
            let resource = logical_name(&state.names, &resource);
            state
                .calls
                .entry(function.clone())
                .or_default()
                .insert(RecordedCall {
                    service: service.clone(),
                    operation: operation.clone(),
                    resource,
                    items,
                });
        }
    }
    fail
}

/// The logical name of `resource` (`<table>/index` as `<Table>/index`).
fn logical_name(names: &BTreeMap<String, String>, resource: &str) -> String {
    if let Some(name) = names.get(resource) {
        return name.clone();
    }
    if let Some(table) = resource.strip_suffix("/index") {
        if let Some(name) = names.get(table) {
            return format!("{name}/index");
        }
    }
    resource.to_string()
}

/// The HTTP client of the AWS clients, recording each request ([`observe`]).
#[derive(Debug, Clone)]
pub struct RecordingHttpClient(pub SharedHttpClient);

#[derive(Debug)]
struct RecordingConnector(SharedHttpConnector);

impl HttpConnector for RecordingConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        if observe(&request) {
            return HttpConnectorFuture::ready(Err(ConnectorError::other(
                "failure injected by the IAM recording harness".into(),
                None,
            )));
        }
        self.0.call(request)
    }
}

impl HttpClient for RecordingHttpClient {
    fn http_connector(
        &self, settings: &HttpConnectorSettings, components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(RecordingConnector(
            self.0.http_connector(settings, components),
        ))
    }
}
