//! Lambda entry point of the dispatch function. One binary serves both event sources through
//! [`dispatch_function::LambdaHandler`]: API Gateway requests and SQS batches (answered with a
//! partial batch response).

use lambda_runtime::{service_fn, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    shared::deps::init_tracing();
    shared::telemetry::install("dispatch");
    let deps =
        shared::deps::Deps::from_env_with_connections(shared::dispatch::steps::CONCURRENT_READS)
            .await?;
    let handler = dispatch_function::LambdaHandler::new(&deps)?;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let handler = handler.clone();
        async move { handler.handle(event).await }
    }))
    .await
}
