//! The Lambda side of the functions fed by a queue (the dispatch and webhooks functions): the
//! one switch between the events a function receives (an SQS batch, an EventBridge scheduled
//! event, an API Gateway request) and the one SQS batch loop with its partial batch response.
//!
//! A function says what it does with one message (and with its schedule, if it has one) by
//! implementing [`QueueConsumer`]; [`handle_event`] and [`sqs_batch`] do the rest the same way
//! for both.

use crate::api::is_sqs_event;
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_http::request::LambdaRequest;
use lambda_http::{Adapter, Service};
use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use tracing::Instrument;

/// The answer of a function's schedule ([`QueueConsumer::schedule`]): the raw JSON answer of the
/// invocation, or its error.
pub type ScheduleRun<'a> = Pin<Box<dyn Future<Output = Result<Value, Error>> + Send + 'a>>;

/// What a function fed by a queue does with what it receives.
pub trait QueueConsumer: Sync {
    /// Processes the message `message_id` whose body is `body`. `Err(())` reports it failed (it
    /// is listed in the batch's `batchItemFailures`, SQS delivers it again); the consumer has
    /// logged why.
    fn message(&self, message_id: &str, body: &str) -> impl Future<Output = Result<(), ()>> + Send;

    /// The run of an EventBridge scheduled event, for a function that has a schedule; `None`
    /// (the default) for one that has none, whose every event but an SQS batch is an API Gateway
    /// request.
    fn schedule(&self) -> Option<ScheduleRun<'_>> {
        None
    }
}

/// Whether a raw Lambda event is an EventBridge scheduled event (`"detail-type": "Scheduled
/// Event"`, `"source": "aws.events"`).
pub fn is_schedule_event(event: &Value) -> bool {
    event["source"].as_str() == Some("aws.events")
        && event["detail-type"].as_str() == Some("Scheduled Event")
}

/// Processes one SQS batch in order, each message in a `sqs_message` span of its own, and
/// answers the SQS partial batch response: the messages [`QueueConsumer::message`] reported
/// failed. The batch's size and failures go to the metrics ([`crate::telemetry::queue_batch`]).
pub async fn sqs_batch(consumer: &impl QueueConsumer, event: SqsEvent) -> SqsBatchResponse {
    let mut failures = Vec::new();
    let size = event.records.len();
    for message in event.records {
        let message_id = message.message_id.clone().unwrap_or_default();
        let span = tracing::info_span!("sqs_message", message_id = %message_id);
        let body = message.body.as_deref().unwrap_or("");
        if consumer
            .message(&message_id, body)
            .instrument(span)
            .await
            .is_err()
        {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = message_id;
            failures.push(failure);
        }
    }
    crate::telemetry::queue_batch(size, failures.len());
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failures;
    response
}

/// Handles one raw event of a function fed by a queue and returns the raw answer: an SQS batch
/// goes to [`sqs_batch`] (the answer is the partial batch response), an EventBridge scheduled
/// event to [`QueueConsumer::schedule`] when the function has one, anything else is an API
/// Gateway (HTTP API, payload 2.0) request served by `app`. A batch or a schedule runs in an
/// `invocation` span carrying the Lambda request and X-Ray trace ids, and its metrics are flushed
/// when it ends (an API request does both in its own middleware).
///
/// Errors: an event that is none of these; a schedule's error.
pub async fn handle_event(
    consumer: &impl QueueConsumer, app: &axum::Router, event: LambdaEvent<Value>,
) -> Result<Value, Error> {
    let LambdaEvent { payload, context } = event;
    let schedule = match is_schedule_event(&payload) {
        true => consumer.schedule(),
        false => None,
    };
    if is_sqs_event(&payload) || schedule.is_some() {
        let span = tracing::info_span!(
            "invocation",
            lambda_request_id = %context.request_id,
            xray_trace_id = context.xray_trace_id.as_deref().unwrap_or_default(),
        );
        let answer = async {
            match schedule {
                Some(run) => run.await,
                None => {
                    let batch: SqsEvent = serde_json::from_value(payload)?;
                    Ok(serde_json::to_value(sqs_batch(consumer, batch).await)?)
                }
            }
        }
        .instrument(span)
        .await;
        crate::telemetry::flush(Some(&context.request_id), context.xray_trace_id.as_deref());
        return answer;
    }
    let request: LambdaRequest = serde_json::from_value(payload)?;
    let mut adapter = Adapter::from(app.clone());
    let response = adapter.call(LambdaEvent::new(request, context)).await?;
    Ok(serde_json::to_value(response)?)
}
