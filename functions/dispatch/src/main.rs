//! Lambda entry point of the dispatch function. One binary serves both event sources: API
//! Gateway requests (through [`dispatch_function::routes`]) and SQS batches (through
//! [`dispatch_function::handle_sqs_batch`], answering a partial batch response).

use lambda_http::request::LambdaRequest;
use lambda_http::{Adapter, Service};
use lambda_runtime::{service_fn, LambdaEvent};
use serde_json::Value;
use shared::dispatch::DispatchEngine;
use shared::fields::CatalogueCache;
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    shared::runtime::init_tracing();
    let verifier = Arc::new(shared::runtime::verifier_from_env()?);
    let store = shared::runtime::store_from_env().await?;
    let engine = Arc::new(DispatchEngine::new(
        store,
        shared::runtime::clock(),
        Arc::new(CatalogueCache::default()),
    ));
    let app = shared::api::finish(dispatch_function::routes(
        dispatch_function::DispatchState {
            engine: engine.clone(),
            verifier,
        },
    ));
    let handler = service_fn(move |event: LambdaEvent<Value>| {
        let engine = engine.clone();
        let app = app.clone();
        async move {
            let LambdaEvent { payload, context } = event;
            if dispatch_function::is_sqs_event(&payload) {
                let batch = serde_json::from_value(payload)?;
                let response = dispatch_function::handle_sqs_batch(&engine, batch).await;
                return Ok::<Value, lambda_runtime::Error>(serde_json::to_value(response)?);
            }
            let request: LambdaRequest = serde_json::from_str(&payload.to_string())?;
            let mut adapter = Adapter::from(app);
            let response = adapter.call(LambdaEvent::new(request, context)).await?;
            Ok(serde_json::to_value(response)?)
        }
    });
    lambda_runtime::run(handler).await
}
