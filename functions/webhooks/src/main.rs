//! Lambda entry point of the webhooks function. One binary serves both event sources through
//! [`webhooks_function::LambdaHandler`]: API Gateway requests (the subscription routes) and SQS
//! batches of the webhook delivery queue (answered with a partial batch response).

use lambda_runtime::{service_fn, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    shared::deps::init_tracing();
    shared::telemetry::install("webhooks");
    let deps = shared::deps::Deps::from_env().await?;
    let handler = webhooks_function::LambdaHandler::new(&deps)?;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let handler = handler.clone();
        async move { handler.handle(event).await }
    }))
    .await
}
