//! Building the SDK client from the standard AWS environment.
//!
//! Region and credentials come from the standard chain (`AWS_REGION`, `AWS_ACCESS_KEY_ID`, ...,
//! or the Lambda role); `AWS_ENDPOINT_URL`, when set, points the client at a local emulator.
//! The SDK's standard retry mode retries throttling and transient service errors.

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::Client;

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The shared AWS configuration: `BehaviorVersion::latest()`, standard retries, and
/// `AWS_ENDPOINT_URL` when set.
pub async fn sdk_config() -> SdkConfig {
    let mut loader =
        aws_config::defaults(BehaviorVersion::latest()).retry_config(RetryConfig::standard());
    if let Some(url) = var("AWS_ENDPOINT_URL") {
        loader = loader.endpoint_url(url);
    }
    loader.load().await
}

/// A DynamoDB client over `sdk`.
pub fn client(sdk: &SdkConfig) -> Client {
    Client::new(sdk)
}
