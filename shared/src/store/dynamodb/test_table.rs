//! Fresh tables for tests, on the emulator named by `AWS_ENDPOINT_URL` (feature `test-util`).

use super::counter::RequestCounter;
use super::env::sdk_config;
use super::{table, DynamoStore};
use aws_config::SdkConfig;
use aws_sdk_dynamodb::Client;

/// What a test that needs DynamoDB says when no emulator is configured.
pub const EMULATOR_MISSING: &str =
    "AWS_ENDPOINT_URL is not set: the DynamoDB tests need the local \
emulator. Run the README's test command, `bash infra/scripts/test.sh`, which starts moto and \
runs every test against it (or start it yourself: `source infra/scripts/emulator.sh`)";

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A DynamoDB client over `sdk` that counts its requests in `counter`.
pub fn counted_client(sdk: &SdkConfig, counter: RequestCounter) -> Client {
    let builder = aws_sdk_dynamodb::config::Builder::from(sdk).interceptor(counter);
    Client::from_conf(builder.build())
}

/// A table of its own for one test, created from `infra/table.json` on the emulator named by
/// `AWS_ENDPOINT_URL`, deleted by [`TestTable::delete`].
#[derive(Debug, Clone)]
pub struct TestTable {
    /// The adapter over the table.
    pub store: DynamoStore,
    /// Every request of the adapter, by operation.
    pub counter: RequestCounter,
}

impl TestTable {
    /// Creates a fresh, uniquely named table.
    ///
    /// Errors: [`EMULATOR_MISSING`] when `AWS_ENDPOINT_URL` is unset; the SDK's otherwise.
    pub async fn create() -> Result<Self, String> {
        if var("AWS_ENDPOINT_URL").is_none() {
            return Err(EMULATOR_MISSING.to_string());
        }
        let counter = RequestCounter::new();
        let client = counted_client(&sdk_config().await, counter.clone());
        let name = format!("test-{}", uuid::Uuid::new_v4().simple());
        table::create_table_if_missing(&client, &name)
            .await
            .map_err(|e| {
                format!(
                    "cannot create table {name} on {}: {}",
                    var("AWS_ENDPOINT_URL").unwrap_or_default(),
                    aws_sdk_dynamodb::error::DisplayErrorContext(&*e)
                )
            })?;
        counter.take();
        Ok(Self {
            store: DynamoStore::new(client, name),
            counter,
        })
    }

    /// Deletes the table (best effort: the emulator is discarded after the run anyway).
    pub async fn delete(self) {
        let _ = table::delete_table(self.store.client(), self.store.table_name()).await;
    }
}

/// An attribute value from its DynamoDB JSON (`{"S": "..."}`, `{"N": "3"}`, `{"BOOL": true}`,
/// `{"NULL": true}`, `{"L": [...]}`, `{"M": {...}}`, `{"SS"|"NS": [...]}`, `{"B": "<base64>"}`).
///
/// Errors: the path-free description of a value that is not one of these.
pub fn attribute_from_json(
    value: &serde_json::Value,
) -> Result<aws_sdk_dynamodb::types::AttributeValue, String> {
    use aws_sdk_dynamodb::types::AttributeValue as A;
    use base64::Engine as _;
    let strings = |v: &serde_json::Value| -> Result<Vec<String>, String> {
        v.as_array()
            .ok_or("a set is not an array")?
            .iter()
            .map(|s| {
                s.as_str()
                    .map(str::to_string)
                    .ok_or("a set element is not a string".into())
            })
            .collect()
    };
    let object = value.as_object().filter(|o| o.len() == 1);
    let Some((kind, inner)) = object.and_then(|o| o.iter().next()) else {
        return Err(format!("not a DynamoDB JSON value: {value}"));
    };
    let text = || {
        inner
            .as_str()
            .map(str::to_string)
            .ok_or(format!("{kind} of {inner}"))
    };
    Ok(match kind.as_str() {
        "S" => A::S(text()?),
        "N" => A::N(text()?),
        "BOOL" => A::Bool(inner.as_bool().ok_or(format!("BOOL of {inner}"))?),
        "NULL" => A::Null(true),
        "L" => A::L(
            inner
                .as_array()
                .ok_or(format!("L of {inner}"))?
                .iter()
                .map(attribute_from_json)
                .collect::<Result<_, _>>()?,
        ),
        "M" => A::M(item_from_json(inner)?),
        "SS" => A::Ss(strings(inner)?),
        "NS" => A::Ns(strings(inner)?),
        "B" => A::B(aws_sdk_dynamodb::primitives::Blob::new(
            base64::engine::general_purpose::STANDARD
                .decode(text()?)
                .map_err(|e| e.to_string())?,
        )),
        other => return Err(format!("unknown DynamoDB JSON type {other}")),
    })
}

/// An item (or map) from its DynamoDB JSON object.
///
/// Errors: as [`attribute_from_json`].
pub fn item_from_json(
    value: &serde_json::Value,
) -> Result<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>, String> {
    value
        .as_object()
        .ok_or(format!("not an object: {value}"))?
        .iter()
        .map(|(name, v)| Ok((name.clone(), attribute_from_json(v)?)))
        .collect()
}

impl TestTable {
    /// Writes `items` (DynamoDB JSON objects, as a table fixture of `infra/compat/` holds them)
    /// unchanged into the table: `BatchWriteItem`, 25 puts a request, unprocessed items sent
    /// again.
    ///
    /// Errors: an item that is not DynamoDB JSON; the SDK's.
    pub async fn load(&self, items: &[serde_json::Value]) -> Result<(), String> {
        use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
        let requests: Vec<WriteRequest> = items
            .iter()
            .map(|item| {
                let put = PutRequest::builder()
                    .set_item(Some(item_from_json(item)?))
                    .build()
                    .map_err(|e| e.to_string())?;
                Ok(WriteRequest::builder().put_request(put).build())
            })
            .collect::<Result<_, String>>()?;
        for chunk in requests.chunks(25) {
            let mut pending = chunk.to_vec();
            while !pending.is_empty() {
                let out = self
                    .store
                    .client()
                    .batch_write_item()
                    .request_items(self.store.table_name(), pending)
                    .send()
                    .await
                    .map_err(|e| aws_sdk_dynamodb::error::DisplayErrorContext(e).to_string())?;
                pending = out
                    .unprocessed_items
                    .and_then(|mut u| u.remove(self.store.table_name()))
                    .unwrap_or_default();
            }
        }
        self.counter.take();
        Ok(())
    }
}
