//! Dead letters (`docs/operations.md`, "Dead letters"): list the messages of a
//! dead-letter queue, move them back to their queue, or delete one. A move sends each message
//! again (body and message attributes kept) and deletes it from the dead-letter queue only once
//! the send succeeded: a crash in between leaves a copy in both queues, never in neither.

use anyhow::Context;
use aws_sdk_sqs::types::{MessageAttributeValue, MessageSystemAttributeName};
use aws_sdk_sqs::Client;
use std::collections::HashMap;

/// A dead-lettered message as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    /// The SQS message id.
    pub message_id: String,
    /// How many times it was received (`ApproximateReceiveCount`).
    pub receive_count: u32,
    /// Its body.
    pub body: String,
    /// Its message attributes.
    pub attributes: HashMap<String, MessageAttributeValue>,
    receipt_handle: String,
}

/// Receives up to `max` messages of `queue_url` (hidden from other consumers for `visibility`
/// seconds while this runs).
async fn receive(
    sqs: &Client, queue_url: &str, max: usize, visibility: i32,
) -> anyhow::Result<Vec<DeadLetter>> {
    let mut found = Vec::new();
    while found.len() < max {
        let answer = sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10.min((max - found.len()) as i32))
            .visibility_timeout(visibility)
            .wait_time_seconds(1)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .message_attribute_names("All")
            .send()
            .await
            .with_context(|| format!("cannot receive from {queue_url}"))?;
        let messages = answer.messages.unwrap_or_default();
        if messages.is_empty() {
            break;
        }
        for m in messages {
            found.push(DeadLetter {
                message_id: m.message_id.clone().unwrap_or_default(),
                receive_count: m
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0),
                body: m.body.clone().unwrap_or_default(),
                attributes: m.message_attributes.clone().unwrap_or_default(),
                receipt_handle: m.receipt_handle.clone().unwrap_or_default(),
            });
        }
    }
    Ok(found)
}

/// The messages of the dead-letter queue `dlq_url` (at most `max`); they become visible again
/// a few seconds later, unchanged.
///
/// Errors: SQS refused the request.
pub async fn list(sqs: &Client, dlq_url: &str, max: usize) -> anyhow::Result<Vec<DeadLetter>> {
    let found = receive(sqs, dlq_url, max, 5).await?;
    for message in &found {
        // Visible again at once for whoever looks next.
        let _ = sqs
            .change_message_visibility()
            .queue_url(dlq_url)
            .receipt_handle(&message.receipt_handle)
            .visibility_timeout(0)
            .send()
            .await;
    }
    Ok(found)
}

/// Moves every message of `dlq_url` (at most `max`) to `queue_url`; returns how many moved.
///
/// Errors: SQS refused a receive, a send or a delete (what moved before stays moved; the
/// message being moved may be in both queues).
pub async fn move_all(
    sqs: &Client, dlq_url: &str, queue_url: &str, max: usize,
) -> anyhow::Result<usize> {
    let mut moved = 0;
    loop {
        let batch = receive(sqs, dlq_url, 10.min(max - moved), 60).await?;
        if batch.is_empty() {
            return Ok(moved);
        }
        for message in batch {
            sqs.send_message()
                .queue_url(queue_url)
                .message_body(&message.body)
                .set_message_attributes(
                    (!message.attributes.is_empty()).then(|| message.attributes.clone()),
                )
                .send()
                .await
                .with_context(|| format!("cannot send {} to {queue_url}", message.message_id))?;
            sqs.delete_message()
                .queue_url(dlq_url)
                .receipt_handle(&message.receipt_handle)
                .send()
                .await
                .with_context(|| format!("cannot delete {} from {dlq_url}", message.message_id))?;
            moved += 1;
        }
        if moved >= max {
            return Ok(moved);
        }
    }
}

/// Deletes the message `message_id` of `dlq_url`; whether it was found.
///
/// Errors: SQS refused the request.
pub async fn delete(sqs: &Client, dlq_url: &str, message_id: &str) -> anyhow::Result<bool> {
    let found = receive(sqs, dlq_url, 1_000, 30).await?;
    let mut deleted = false;
    for message in found {
        if message.message_id == message_id {
            sqs.delete_message()
                .queue_url(dlq_url)
                .receipt_handle(&message.receipt_handle)
                .send()
                .await
                .with_context(|| format!("cannot delete {message_id}"))?;
            deleted = true;
        } else {
            let _ = sqs
                .change_message_visibility()
                .queue_url(dlq_url)
                .receipt_handle(&message.receipt_handle)
                .visibility_timeout(0)
                .send()
                .await;
        }
    }
    Ok(deleted)
}
