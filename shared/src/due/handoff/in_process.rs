//! The in-process hand-off: due items as timers of this process (the local server without a
//! queue), the twin of the SQS hand-off, and the worker whose hand-offs they are
//! ([`DueWorker::in_process`]).

use super::port::Handoff;
use crate::clock::Clock;
use crate::due::message::DueMessage;
use crate::due::{DueSettings, DueWorker};
use crate::error::{BoxError, ErrorChain};
use crate::store::DueStore;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

/// Due items as timers of this process (the local server without a queue): a task sleeps until
/// the item is due, then runs it, at most [`InProcessHandoff::CONCURRENCY`] at once (as Lambda's
/// event source mapping bounds its concurrency). Timers die with the process; the sweeper resumes
/// their items.
pub struct InProcessHandoff {
    worker: Weak<DueWorker>,
    running: Arc<tokio::sync::Semaphore>,
}

impl InProcessHandoff {
    /// How long after its due time a timer's item is resumed by the sweeper: timers fire on time,
    /// so only a dead process leaves one behind.
    pub const GRACE: Duration = Duration::from_secs(2);

    /// Items run at once; the others wait for a turn (thousands of items due at one instant
    /// do not turn into thousands of concurrent store transactions).
    pub const CONCURRENCY: usize = 16;

    /// Timers that run their items on `worker` (held weakly: the worker owns its hand-off).
    pub fn new(worker: Weak<DueWorker>) -> Self {
        Self {
            worker,
            running: Arc::new(tokio::sync::Semaphore::new(Self::CONCURRENCY)),
        }
    }
}

#[async_trait]
impl Handoff for InProcessHandoff {
    async fn hand_off(&self, message: &DueMessage) -> Result<(), BoxError> {
        let Some(worker) = self.worker.upgrade() else {
            return Ok(());
        };
        // The wait is read on the worker's clock (tests move a fixed one).
        let wait = (message.due_at - worker.clock.now())
            .to_std()
            .unwrap_or(Duration::ZERO);
        let worker = Arc::downgrade(&worker);
        let message = message.clone();
        let running = self.running.clone();
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let Ok(_turn) = running.acquire_owned().await else {
                return;
            };
            let Some(worker) = worker.upgrade() else {
                return;
            };
            if let Err(error) = worker.run(&message.id, message.attempt).await {
                tracing::error!(
                    due_id = %message.id,
                    error = %ErrorChain(&error),
                    "due work failed; the sweeper resumes it"
                );
            }
        });
        Ok(())
    }

    fn grace(&self) -> Duration {
        Self::GRACE
    }

    fn reach(&self) -> Option<Duration> {
        None
    }
}

impl DueWorker {
    /// A worker whose hand-offs are timers of this process ([`InProcessHandoff`]).
    pub fn in_process(
        store: Arc<dyn DueStore>, clock: Arc<dyn Clock>, settings: DueSettings,
    ) -> Arc<Self> {
        Arc::new_cyclic(|worker| Self {
            store,
            clock,
            settings,
            handoff: Arc::new(InProcessHandoff::new(worker.clone())),
            jobs: RwLock::new(HashMap::new()),
        })
    }
}
