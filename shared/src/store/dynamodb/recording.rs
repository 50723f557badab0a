//! Recording of every AWS call the functions' code makes (least-privilege IAM
//! derived from the code: `docs/deploy.md`, "Permissions: from the code to the
//! policies"). Test builds only (`test-util`).
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
//! [`lose_first_answers`] makes DynamoDB's answer to writes on a table get lost after they were
//! applied, as a 500 or a timeout can (the tests of writes that survive a lost answer).

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
    /// Tables whose writes lose their first answer, with the requests seen (digests of their
    /// bodies) and how many answers were lost.
    losing: BTreeMap<String, (std::collections::HashSet<u64>, usize)>,
    /// Tables whose index queries are answered from the past: by request digest, the first
    /// answer given to it (status, headers, body), `None` until it arrives.
    lagging: BTreeMap<String, std::collections::HashMap<u64, Option<StoredAnswer>>>,
}

/// An answer kept to be given again ([`lagging_index`]).
type StoredAnswer = (u16, Vec<(String, String)>, bytes::Bytes);

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

/// The DynamoDB operations that write.
const WRITES: [&str; 5] = [
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "TransactWriteItems",
    "BatchWriteItem",
];

/// From now on, the first answer to each distinct write request (`PutItem`, `UpdateItem`,
/// `DeleteItem`, `TransactWriteItems`, `BatchWriteItem`; distinct by its bytes) that names
/// `table` is lost after DynamoDB applied the write: the request is sent and answered, and the
/// SDK gets a 500 `InternalServerError` in place of the answer (DynamoDB's "the request may or
/// may not have succeeded"). The SDK sends the same request again (its standard retry mode),
/// and that answer arrives. Scoped to one table, so tests of other tables in the same process
/// are untouched.
pub fn lose_first_answers(table: &str) {
    state().losing.entry(table.to_string()).or_default();
}

/// From now on, every `Query` of an index of `table` (a global secondary index, eventually
/// consistent in DynamoDB) gets the answer the first identical request got after this call: the
/// index lags behind the table from here on, as DynamoDB's may for a while (the emulator's
/// indexes are always current). Reads of the table itself stay fresh.
pub fn lagging_index(table: &str) {
    state().lagging.entry(table.to_string()).or_default();
}

/// Ends [`lagging_index`] for `table`.
pub fn current_index(table: &str) {
    state().lagging.remove(table);
}

/// How many answers [`lose_first_answers`] has lost on `table`.
pub fn lost_answers(table: &str) -> usize {
    state().losing.get(table).map_or(0, |(_, lost)| *lost)
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

/// The `x-amzn-trace-id` header of the last AWS request sent (X-Ray propagation).
pub fn last_trace_header() -> Option<String> {
    state().trace_header.clone()
}

/// What becomes of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fate {
    /// Sent as it is.
    Send,
    /// Fails without being sent ([`fail_next`]).
    Fail,
    /// Sent, and its answer replaced by a 500 ([`lose_first_answers`]).
    LoseAnswer,
    /// An index query of a lagging table ([`lagging_index`]): answered as before when an
    /// answer is kept, else sent and its answer kept.
    Lagging(String, u64),
}

/// Records `request` under the current function; answers what becomes of it.
fn observe(request: &HttpRequest) -> Fate {
    state().trace_header = request.headers().get("x-amzn-trace-id").map(str::to_string);
    let Some((service, operation, resources)) = read(request) else {
        return Fate::Send;
    };
    let mut state = state();
    let mut fate = if state.fail_next.remove(&operation) {
        Fate::Fail
    } else {
        Fate::Send
    };
    let digest = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        request.body().bytes().unwrap_or_default().hash(&mut h);
        h.finish()
    };
    if fate == Fate::Send && service == "dynamodb" && operation == "Query" {
        for (resource, _) in &resources {
            if let Some(table) = resource.strip_suffix("/index") {
                if state.lagging.contains_key(table) {
                    fate = Fate::Lagging(table.to_string(), digest);
                }
            }
        }
    }
    if fate == Fate::Send && service == "dynamodb" && WRITES.contains(&operation.as_str()) {
        for (table, _) in &resources {
            if let Some((seen, lost)) = state.losing.get_mut(table) {
                if seen.insert(digest) {
                    *lost += 1;
                    fate = Fate::LoseAnswer;
                }
                break;
            }
        }
    }
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
    fate
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
        match observe(&request) {
            Fate::Send => self.0.call(request),
            Fate::Fail => HttpConnectorFuture::ready(Err(ConnectorError::other(
                "failure injected by the IAM recording harness".into(),
                None,
            ))),
            Fate::LoseAnswer => {
                let applied = self.0.call(request);
                HttpConnectorFuture::new(async move {
                    // The write reaches DynamoDB and is answered; the answer is then lost.
                    let _ = applied.await;
                    Ok(lost_answer())
                })
            }
            Fate::Lagging(table, digest) => {
                let kept = state()
                    .lagging
                    .get(&table)
                    .and_then(|answers| answers.get(&digest).cloned().flatten());
                if let Some(answer) = kept {
                    return HttpConnectorFuture::ready(Ok(answer_of(answer)));
                }
                let sent = self.0.call(request);
                HttpConnectorFuture::new(async move {
                    let answer = sent.await?;
                    let status = answer.status().as_u16();
                    let headers: Vec<(String, String)> = answer
                        .headers()
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect();
                    let body = aws_smithy_types::byte_stream::ByteStream::new(answer.into_body())
                        .collect()
                        .await
                        .map_err(|e| ConnectorError::io(e.into()))?
                        .into_bytes();
                    let answer = (status, headers, body);
                    if let Some(answers) = state().lagging.get_mut(&table) {
                        answers
                            .entry(digest)
                            .or_insert_with(|| Some(answer.clone()));
                    }
                    Ok(answer_of(answer))
                })
            }
        }
    }
}

/// An answer made again from one kept ([`lagging_index`]).
fn answer_of(
    (status, headers, body): StoredAnswer,
) -> aws_smithy_runtime_api::client::orchestrator::HttpResponse {
    use aws_smithy_runtime_api::http::{Response, StatusCode};
    use aws_smithy_types::body::SdkBody;
    let mut response = Response::new(
        StatusCode::try_from(status).unwrap_or_else(|_| unreachable!("a status it answered")),
        SdkBody::from(body),
    );
    for (name, value) in headers {
        if !name.eq_ignore_ascii_case("content-length") {
            response.headers_mut().append(name, value);
        }
    }
    response
}

/// The answer a lost one is replaced with: DynamoDB's 500 `InternalServerError`.
fn lost_answer() -> aws_smithy_runtime_api::client::orchestrator::HttpResponse {
    use aws_smithy_runtime_api::http::{Response, StatusCode};
    use aws_smithy_types::body::SdkBody;
    let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error (the test harness lost the answer)"}"#;
    let mut response = Response::new(
        StatusCode::try_from(500).unwrap_or_else(|_| unreachable!("500 is a status")),
        SdkBody::from(body),
    );
    response
        .headers_mut()
        .insert("content-type", "application/x-amz-json-1.0");
    response
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
