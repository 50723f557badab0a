//! The port of the fast path ([`Handoff`]): where the worker hands a stored item's next attempt,
//! to reach a worker at its due time.

use crate::due::message::DueMessage;
use crate::error::BoxError;
use async_trait::async_trait;
use std::time::Duration;

/// Where handed-on due items wait until they are due.
#[async_trait]
pub trait Handoff: Send + Sync + 'static {
    /// Hands `message` on, to reach a worker at its `due_at` (at once when that has passed).
    ///
    /// Errors: it could not be handed on (the item stays stored; the sweeper resumes it).
    async fn hand_off(&self, message: &DueMessage) -> Result<(), BoxError>;

    /// Hands each of `messages` on, as [`Self::hand_off`] does it alone; one result per message,
    /// in their order (a failed one stays stored; the sweeper resumes it). The default hands
    /// them on one after another; [`SqsHandoff`] sends them in batches.
    async fn hand_off_all(&self, messages: &[DueMessage]) -> Vec<Result<(), BoxError>> {
        let mut results = Vec::with_capacity(messages.len());
        for message in messages {
            results.push(self.hand_off(message).await);
        }
        results
    }

    /// How long after its due time a handed-on item may still be on its way before the sweeper
    /// resumes it.
    fn grace(&self) -> Duration;

    /// The longest delay it carries; an item due later is left to the sweeper (`None`: any).
    fn reach(&self) -> Option<Duration>;
}
