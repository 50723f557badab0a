//! The SQS hand-off: due items as SQS messages delayed until due (`DelaySeconds`, at most 15
//! minutes), sent alone or in `SendMessageBatch`es, each kind to its queue.

use super::port::Handoff;
use crate::due::message::DueMessage;
use crate::error::BoxError;
use crate::model::due::DueKind;
use async_trait::async_trait;
use std::collections::HashMap;
use std::time::Duration;

/// The longest delay SQS gives one message (`DelaySeconds` at most 900).
pub const MAX_SQS_DELAY: Duration = Duration::from_secs(900);

/// The most messages one SQS `SendMessageBatch` carries (SQS's limit).
pub const SQS_BATCH: usize = 10;

/// The `DelaySeconds` that makes `message` arrive at its `due_at` (at once when past; at most
/// [`MAX_SQS_DELAY`]).
fn delay_seconds(message: &DueMessage) -> i32 {
    let wait = (message.due_at - chrono::Utc::now())
        .to_std()
        .unwrap_or(Duration::ZERO)
        .min(MAX_SQS_DELAY);
    i32::try_from(wait.as_secs_f64().ceil() as u64).unwrap_or(900)
}

/// An SQS error as text.
fn sqs_error<E: std::error::Error + 'static, R: std::fmt::Debug>(
    e: aws_sdk_sqs::error::SdkError<E, R>,
) -> BoxError {
    BoxError::from(aws_sdk_sqs::error::DisplayErrorContext(e).to_string())
}

/// Due items as SQS messages, delayed until due (Lambda, and the local server polling a queue).
/// Each kind goes to its queue: the dispatch queue by default, webhook deliveries to theirs.
/// The SQS client is built at the first hand-off (a cold start whose first request
/// hands nothing on builds none), over the process's one AWS configuration and HTTP client.
#[derive(Debug, Clone)]
pub struct SqsHandoff {
    sdk: aws_config::SdkConfig,
    client: std::sync::OnceLock<aws_sdk_sqs::Client>,
    default_queue: String,
    queues: HashMap<DueKind, String>,
    grace: Duration,
}

impl SqsHandoff {
    /// Hand-offs to `default_queue` with an SQS client over `sdk` (built at the first hand-off),
    /// resumed by the sweeper `grace` after their due time.
    pub fn new(
        sdk: &aws_config::SdkConfig, default_queue: impl Into<String>, grace: Duration,
    ) -> Self {
        Self {
            sdk: sdk.clone(),
            client: std::sync::OnceLock::new(),
            default_queue: default_queue.into(),
            queues: HashMap::new(),
            grace,
        }
    }

    /// The same, sending items of `kind` to `queue` instead.
    pub fn with_queue(mut self, kind: DueKind, queue: impl Into<String>) -> Self {
        self.queues.insert(kind, queue.into());
        self
    }

    /// The queue that items of `kind` go to.
    pub fn queue_of(&self, kind: DueKind) -> &str {
        self.queues.get(&kind).unwrap_or(&self.default_queue)
    }

    /// Whether the SQS client was built (tests: not before the first hand-off).
    pub fn client_built(&self) -> bool {
        self.client.get().is_some()
    }

    /// One `SendMessageBatch` of the messages `indices` of `messages` to `queue` (at most
    /// [`SQS_BATCH`]), the entries SQS failed for a reason of its own sent once more; the result
    /// of each, by index.
    async fn send_batch(
        &self, queue: &str, messages: &[DueMessage], indices: &[usize],
    ) -> Vec<(usize, Result<(), BoxError>)> {
        let mut results = Vec::with_capacity(indices.len());
        let mut pending: Vec<usize> = indices.to_vec();
        for attempt in 0..2 {
            if pending.is_empty() {
                break;
            }
            let entries: Result<Vec<_>, _> = pending
                .iter()
                .map(|i| {
                    aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(messages[*i].to_json())
                        .delay_seconds(delay_seconds(&messages[*i]))
                        .build()
                })
                .collect();
            let sent = match entries {
                Ok(entries) => self
                    .client()
                    .send_message_batch()
                    .queue_url(queue)
                    .set_entries(Some(entries))
                    .send()
                    .await
                    .map_err(sqs_error),
                Err(e) => Err(BoxError::from(e.to_string())),
            };
            let output = match sent {
                Ok(output) => output,
                Err(error) => {
                    let text = error.to_string();
                    results.extend(pending.drain(..).map(|i| (i, Err(text.clone().into()))));
                    break;
                }
            };
            for ok in output.successful() {
                if let Some(at) = pending.iter().position(|i| i.to_string() == ok.id()) {
                    results.push((pending.remove(at), Ok(())));
                }
            }
            let mut again = Vec::new();
            for failed in output.failed() {
                let Some(at) = pending.iter().position(|i| i.to_string() == failed.id()) else {
                    continue;
                };
                let i = pending.remove(at);
                if !failed.sender_fault() && attempt == 0 {
                    again.push(i);
                } else {
                    let error = format!(
                        "SendMessageBatch entry failed: {} ({})",
                        failed.code(),
                        failed.message().unwrap_or_default()
                    );
                    results.push((i, Err(error.into())));
                }
            }
            // An entry the answer names neither way is reported failed rather than assumed sent.
            results.extend(
                pending
                    .drain(..)
                    .map(|i| (i, Err("SendMessageBatch answered nothing for it".into()))),
            );
            pending = again;
        }
        results
    }

    /// The SQS client, built now if this is the first hand-off.
    fn client(&self) -> &aws_sdk_sqs::Client {
        self.client
            .get_or_init(|| aws_sdk_sqs::Client::new(&self.sdk))
    }
}

#[async_trait]
impl Handoff for SqsHandoff {
    async fn hand_off(&self, message: &DueMessage) -> Result<(), BoxError> {
        self.client()
            .send_message()
            .queue_url(self.queue_of(message.id.kind()))
            .message_body(message.to_json())
            .delay_seconds(delay_seconds(message))
            .send()
            .await
            .map_err(sqs_error)?;
        Ok(())
    }

    /// The messages by queue, in `SendMessageBatch` requests of up to [`SQS_BATCH`], all sent
    /// at once. A batch answers per message: a message the batch did not take for a reason of
    /// SQS's own (`SenderFault` false: throttling, an internal error) is sent once more in one
    /// more batch with the others like it; one refused for a fault of the request, or twice, is
    /// reported failed (it stays stored, and the sweeper resumes it), as is every message of a
    /// request that failed whole (after the SDK's own retries).
    async fn hand_off_all(&self, messages: &[DueMessage]) -> Vec<Result<(), BoxError>> {
        let mut by_queue: Vec<(&str, Vec<usize>)> = Vec::new();
        for (i, message) in messages.iter().enumerate() {
            let queue = self.queue_of(message.id.kind());
            match by_queue.iter_mut().find(|(q, _)| *q == queue) {
                Some((_, indices)) => indices.push(i),
                None => by_queue.push((queue, vec![i])),
            }
        }
        let batches: Vec<(&str, &[usize])> = by_queue
            .iter()
            .flat_map(|(queue, indices)| indices.chunks(SQS_BATCH).map(move |c| (*queue, c)))
            .collect();
        let sent = futures_util::future::join_all(
            batches
                .iter()
                .map(|(queue, indices)| self.send_batch(queue, messages, indices)),
        )
        .await;
        let mut results: Vec<Option<Result<(), BoxError>>> =
            messages.iter().map(|_| None).collect();
        for outcome in sent {
            for (i, result) in outcome {
                results[i] = Some(result);
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err("not sent".into())))
            .collect()
    }

    fn grace(&self) -> Duration {
        self.grace
    }

    fn reach(&self) -> Option<Duration> {
        Some(MAX_SQS_DELAY)
    }
}
