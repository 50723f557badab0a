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
