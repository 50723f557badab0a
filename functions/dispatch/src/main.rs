//! Lambda entry point of the dispatch function. One binary serves both event sources through
//! [`dispatch_function::LambdaHandler`]: API Gateway requests and SQS batches (answered with a
//! partial batch response).

use lambda_runtime::{service_fn, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    shared::deps::init_tracing();
    shared::telemetry::install("dispatch");
    // One DynamoDB connection opened during init, as every function does: the first dispatch
    // opens the others its concurrent reads need. Five opened during init made the cold start
    // slower as a whole (init 2.0x the SDK floor's against 1.1x, the first response 16 ms later,
    // more CPU; docs/performance.md).
    let deps = shared::deps::Deps::from_env().await?;
    let handler = dispatch_function::LambdaHandler::new(&deps)?;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let handler = handler.clone();
        async move { handler.handle(event).await }
    }))
    .await
}
