//! Handler of the dispatch function: `POST /dispatch/router` (spec "Dispatch") and batches from
//! the SQS dispatch queue (spec "Events"; BEHAVIOR 6, "Queue path"). Both run
//! [`shared::dispatch::DispatchEngine`].
//!
//! The queue handler answers with a partial batch response (`batchItemFailures`, Lambda's
//! `ReportBatchItemFailures`): a message whose processing hit an error (store failure, lost
//! races past the deadline) or whose body is not valid JSON with both ids is reported failed, so
//! SQS redelivers it and, after the queue's `maxReceiveCount`, moves it to the dead-letter
//! queue. Every non-error outcome counts as processed. The SQS message id is the idempotency
//! key, so a redelivered message never assigns twice.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use axum::extract::{FromRef, State};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::Value;
use shared::api::{Authenticated, RawBody};
use shared::auth::{Scope, TokenVerifier};
use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest};
use shared::ApiError;
use std::sync::Arc;
use tracing::Instrument;

/// What the handler needs, built once per cold start.
#[derive(Clone)]
pub struct DispatchState {
    /// The engine.
    pub engine: Arc<DispatchEngine>,
    /// Bearer-token verification.
    pub verifier: Arc<TokenVerifier>,
}

impl FromRef<DispatchState> for Arc<TokenVerifier> {
    fn from_ref(state: &DispatchState) -> Self {
        state.verifier.clone()
    }
}

/// `POST /dispatch/router`; other methods on the path answer 405 with `Allow: POST`.
/// Unfinished: [`shared::api::finish`] adds the 404 fallback and request ids.
pub fn routes(state: DispatchState) -> Router {
    Router::new()
        .route(
            "/dispatch/router",
            shared::api::with_405(post(dispatch), "POST"),
        )
        .with_state(state)
}

async fn dispatch(
    Authenticated(p): Authenticated,
    State(s): State<DispatchState>,
    RawBody(body): RawBody,
) -> Result<Json<Value>, ApiError> {
    p.require(Scope::Update)?;
    let request = DispatchRequest::parse(&body)?;
    let outcome = s
        .engine
        .dispatch(AccountContext::Token(p.account_id), &request, None)
        .await?;
    tracing::info!(
        router_id = %request.router_id,
        object_id = %request.object_id,
        outcome = outcome.label(),
        "dispatch"
    );
    Ok(Json(outcome.body()))
}

/// Processes one SQS batch in order and reports the messages to retry.
pub async fn handle_sqs_batch(engine: &DispatchEngine, event: SqsEvent) -> SqsBatchResponse {
    let mut failures = Vec::new();
    for message in event.records {
        let message_id = message.message_id.clone().unwrap_or_default();
        let span = tracing::info_span!("sqs_message", message_id = %message_id);
        if process_message(engine, &message_id, message.body.as_deref().unwrap_or(""))
            .instrument(span)
            .await
            .is_err()
        {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = message_id;
            failures.push(failure);
        }
    }
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failures;
    response
}

/// Processes one message; `Err(())` means "report it failed" (already logged).
async fn process_message(engine: &DispatchEngine, message_id: &str, body: &str) -> Result<(), ()> {
    let Ok(request) = DispatchRequest::parse(body.as_bytes()) else {
        tracing::warn!(
            message_id,
            outcome = "invalid_body",
            "dispatch message rejected: {}",
            shared::dispatch::INVALID_EVENT
        );
        return Err(());
    };
    let key = (!message_id.is_empty()).then_some(message_id);
    match engine
        .dispatch(AccountContext::RouterOwner, &request, key)
        .await
    {
        Ok(outcome) => {
            tracing::info!(
                message_id,
                router_id = %request.router_id,
                object_id = %request.object_id,
                outcome = outcome.label(),
                "dispatch message processed"
            );
            Ok(())
        }
        Err(error) => {
            tracing::error!(
                message_id,
                router_id = %request.router_id,
                object_id = %request.object_id,
                outcome = "error",
                error = %error_chain(&error),
                "dispatch message failed; it will be retried"
            );
            Err(())
        }
    }
}

fn error_chain(error: &ApiError) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Whether a raw Lambda event is an SQS batch (rather than an API Gateway request).
pub fn is_sqs_event(event: &Value) -> bool {
    event["Records"]
        .as_array()
        .and_then(|r| r.first())
        .and_then(|r| r["eventSource"].as_str())
        == Some("aws:sqs")
}
