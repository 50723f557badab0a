//! The fast path of due work: how a stored item's next attempt reaches a worker on time.

use super::message::DueMessage;
use crate::error::BoxError;
use crate::model::due::DueKind;
use async_trait::async_trait;
use std::collections::HashMap;
use std::time::Duration;

/// The longest delay SQS gives one message (`DelaySeconds` at most 900).
pub const MAX_SQS_DELAY: Duration = Duration::from_secs(900);

/// Where handed-on due items wait until they are due.
#[async_trait]
pub trait Handoff: Send + Sync + 'static {
    /// Hands `message` on, to reach a worker at its `due_at` (at once when that has passed).
    ///
    /// Errors: it could not be handed on (the item stays stored; the sweeper resumes it).
    async fn hand_off(&self, message: &DueMessage) -> Result<(), BoxError>;

    /// How long after its due time a handed-on item may still be on its way before the sweeper
    /// resumes it.
    fn grace(&self) -> Duration;

    /// The longest delay it carries; an item due later is left to the sweeper (`None`: any).
    fn reach(&self) -> Option<Duration>;
}

/// Due items as SQS messages, delayed until due (Lambda, and the local server polling a queue).
/// Each kind goes to its queue: the dispatch queue by default, webhook deliveries to theirs.
/// The SQS client is built at the first hand-off (issue 36: a cold start whose first request
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

    /// The SQS client, built now if this is the first hand-off.
    fn client(&self) -> &aws_sdk_sqs::Client {
        self.client
            .get_or_init(|| aws_sdk_sqs::Client::new(&self.sdk))
    }
}

#[async_trait]
impl Handoff for SqsHandoff {
    async fn hand_off(&self, message: &DueMessage) -> Result<(), BoxError> {
        let wait = (message.due_at - chrono::Utc::now())
            .to_std()
            .unwrap_or(Duration::ZERO)
            .min(MAX_SQS_DELAY);
        let seconds = i32::try_from(wait.as_secs_f64().ceil() as u64).unwrap_or(900);
        self.client()
            .send_message()
            .queue_url(self.queue_of(message.id.kind()))
            .message_body(message.to_json())
            .delay_seconds(seconds)
            .send()
            .await
            .map_err(|e| BoxError::from(aws_sdk_sqs::error::DisplayErrorContext(e).to_string()))?;
        Ok(())
    }

    fn grace(&self) -> Duration {
        self.grace
    }

    fn reach(&self) -> Option<Duration> {
        Some(MAX_SQS_DELAY)
    }
}
