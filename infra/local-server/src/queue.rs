//! The local stand-in for Lambda's SQS event source mapping: long-polls a queue, hands each batch
//! to the dispatch function's handler exactly as Lambda would, deletes the processed messages and
//! leaves the failed ones (`batchItemFailures`) to reappear after the visibility timeout, so the
//! queue's redrive policy moves poison messages to its dead-letter queue.

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, MessageSystemAttributeName};
use shared::dispatch::DispatchEngine;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Messages per receive: Lambda's default SQS batch size is 10, SQS's maximum.
pub const BATCH_SIZE: i32 = 10;

/// Long-poll wait per receive, seconds.
pub const WAIT_SECONDS: i32 = 2;

/// Polls `queue_url` until `stop` turns true.
pub async fn poll(
    client: aws_sdk_sqs::Client, queue_url: String, engine: Arc<DispatchEngine>,
    mut stop: watch::Receiver<bool>,
) {
    tracing::info!(%queue_url, "polling the dispatch queue");
    loop {
        if *stop.borrow() {
            return;
        }
        let receive = client
            .receive_message()
            .queue_url(&queue_url)
            .max_number_of_messages(BATCH_SIZE)
            .wait_time_seconds(WAIT_SECONDS)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send();
        let output = tokio::select! {
            output = receive => output,
            _ = stop.changed() => return,
        };
        let messages = match output {
            Ok(output) => output.messages.unwrap_or_default(),
            Err(error) => {
                tracing::warn!(error = %aws_sdk_sqs::error::DisplayErrorContext(&error), "receive failed; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if messages.is_empty() {
            continue;
        }
        process_batch(&client, &queue_url, &engine, messages).await;
    }
}

async fn process_batch(
    client: &aws_sdk_sqs::Client, queue_url: &str, engine: &DispatchEngine,
    messages: Vec<aws_sdk_sqs::types::Message>,
) {
    let mut event = SqsEvent::default();
    let mut receipts = Vec::new();
    for m in messages {
        let mut message = SqsMessage::default();
        message.message_id = m.message_id.clone();
        message.receipt_handle = m.receipt_handle.clone();
        message.body = m.body.clone();
        message.md5_of_body = m.md5_of_body.clone();
        message.event_source = Some("aws:sqs".into());
        message.attributes = m
            .attributes
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k.as_str().to_string(), v))
            .collect();
        receipts.push((
            m.message_id.unwrap_or_default(),
            m.receipt_handle.unwrap_or_default(),
        ));
        event.records.push(message);
    }
    let response = dispatch_function::handle_sqs_batch(engine, event).await;
    let failed: HashSet<String> = response
        .batch_item_failures
        .into_iter()
        .map(|f| f.item_identifier)
        .collect();
    let entries: Vec<DeleteMessageBatchRequestEntry> = receipts
        .iter()
        .enumerate()
        .filter(|(_, (id, _))| !failed.contains(id))
        .filter_map(|(i, (_, receipt))| {
            DeleteMessageBatchRequestEntry::builder()
                .id(format!("m{i}"))
                .receipt_handle(receipt)
                .build()
                .ok()
        })
        .collect();
    if entries.is_empty() {
        return;
    }
    if let Err(error) = client
        .delete_message_batch()
        .queue_url(queue_url)
        .set_entries(Some(entries))
        .send()
        .await
    {
        // The messages come back after the visibility timeout; idempotency makes that harmless.
        tracing::warn!(error = %aws_sdk_sqs::error::DisplayErrorContext(&error), "delete failed");
    }
}

/// An SQS client from the standard AWS environment (`AWS_ENDPOINT_URL`, credentials, region).
pub async fn client_from_env() -> aws_sdk_sqs::Client {
    let config = shared::store::dynamodb::env::sdk_config().await;
    aws_sdk_sqs::Client::new(&config)
}
