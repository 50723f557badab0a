//! The worker of due work: registers each kind's job, schedules new items, hands them on,
//! claims an item that arrives and runs its job, releases or parks a run that failed, and hands
//! the next attempt on. The sweeper's rounds are in `sweeper.rs`, the hand-offs in `handoff/`
//! (with [`DueWorker::in_process`], the worker whose hand-offs are timers of this process).

use super::claim::{carried, resume_at, Claimed, DueJob, Ran};
use super::handoff::Handoff;
use super::message::DueMessage;
use super::settings::DueSettings;
use crate::clock::Clock;
use crate::error::{DomainError, ErrorChain};
use crate::model::due::{DueId, DueItem, DueKind, Lease, Parking};
use crate::store::{DueStore, StoreError};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// What [`DueWorker::run`] did with a hand-off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// The item is gone, holds another attempt count, or another worker holds it.
    NotClaimed,
    /// Not due yet: handed on again for the time that remains.
    Postponed,
    /// No job is registered for the item's kind (this worker cannot run it).
    NoJob,
    /// An attempt was made.
    Ran(Ran),
}

/// The worker of one instance: the store, the clock, the hand-off and the registered jobs.
#[derive(derive_more::Debug)]
pub struct DueWorker {
    #[debug(skip)]
    pub(super) store: Arc<dyn DueStore>,
    #[debug(skip)]
    pub(super) clock: Arc<dyn Clock>,
    pub(super) settings: DueSettings,
    #[debug(skip)]
    pub(super) handoff: Arc<dyn Handoff>,
    #[debug(skip)]
    pub(super) jobs: RwLock<HashMap<DueKind, Arc<dyn DueJob>>>,
}

impl DueWorker {
    /// A worker handing items on through `handoff`.
    pub fn new(
        store: Arc<dyn DueStore>, clock: Arc<dyn Clock>, settings: DueSettings,
        handoff: Arc<dyn Handoff>,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            clock,
            settings,
            handoff,
            jobs: RwLock::new(HashMap::new()),
        })
    }

    /// Registers the job of its kind (replacing one registered before).
    pub fn register(&self, job: Arc<dyn DueJob>) {
        self.jobs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(job.kind(), job);
    }

    /// The settings.
    pub fn settings(&self) -> DueSettings {
        self.settings
    }

    fn job(&self, kind: DueKind) -> Option<Arc<dyn DueJob>> {
        self.jobs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&kind)
            .cloned()
    }

    /// A new item `id` due at `due_at`, to store in the transaction of the change that causes
    /// it, then hand on ([`Self::hand_off`]) once that committed.
    pub fn schedule(&self, id: DueId, subject: Value, due_at: DateTime<Utc>) -> DueItem {
        let now = self.clock.now();
        let resume_at = resume_at(
            id.kind(),
            due_at,
            now,
            self.handoff.grace(),
            self.handoff.reach(),
        );
        DueItem::new(id, subject, due_at, resume_at)
    }

    /// A new item `id` due now and already held by this process, to store in the transaction
    /// of the change that causes it, then run right after that committed
    /// ([`Self::run_claimed`]). Should this process die in between, the lease lapses and the
    /// sweeper resumes the item.
    pub fn claimed_now(&self, id: DueId, subject: Value) -> Claimed {
        let now = self.clock.now();
        let lease = Lease::new(now, self.settings.lease);
        let item = DueItem {
            resume_at: lease.until,
            lease: Some(lease),
            runs: 1,
            ..DueItem::new(id, subject, now, now)
        };
        self.claimed(item, now)
    }

    fn claimed(&self, item: DueItem, claimed_at: DateTime<Utc>) -> Claimed {
        Claimed {
            item,
            claimed_at,
            grace: self.handoff.grace(),
            reach: self.handoff.reach(),
            lease: self.settings.lease,
            store: self.store.clone(),
            clock: self.clock.clone(),
        }
    }

    /// Hands a stored item on (the fast path), when the hand-off reaches its due time. A failure
    /// is logged, not returned: the item is stored, and the sweeper resumes it.
    pub async fn hand_off(&self, item: &DueItem) {
        self.hand_off_message(&DueMessage::of(item)).await;
    }

    /// Hands stored items on together ([`Handoff::hand_off_all`]: SQS `SendMessageBatch`es of
    /// up to 10), those the hand-off reaches. A failure is logged, not returned: each item is
    /// stored, and the sweeper resumes the ones not handed on.
    pub async fn hand_off_all(&self, items: &[DueItem]) {
        let now = self.clock.now();
        let reach = self.handoff.reach();
        let messages: Vec<DueMessage> = items
            .iter()
            .map(DueMessage::of)
            .filter(|m| carried(m.due_at, now, reach))
            .collect();
        if messages.is_empty() {
            return;
        }
        let results = self.handoff.hand_off_all(&messages).await;
        for (message, result) in messages.iter().zip(results) {
            if let Err(error) = result {
                tracing::warn!(
                    due_id = %message.id,
                    attempt = message.attempt,
                    error = %ErrorChain(error.as_ref()),
                    "due work not handed on; the sweeper resumes it"
                );
            }
        }
    }

    async fn hand_off_message(&self, message: &DueMessage) {
        if !carried(message.due_at, self.clock.now(), self.handoff.reach()) {
            return;
        }
        if let Err(error) = self.handoff.hand_off(message).await {
            tracing::warn!(
                due_id = %message.id,
                attempt = message.attempt,
                error = %ErrorChain(error.as_ref()),
                "due work not handed on; the sweeper resumes it"
            );
        }
    }

    /// Handles a hand-off that arrived (a queue message, a timer): one received before its due
    /// time is handed on again for the rest; otherwise [`Self::run`].
    ///
    /// Errors: as [`Self::run`].
    pub async fn receive(&self, message: &DueMessage) -> Result<RunOutcome, DomainError> {
        let early = (message.due_at - self.clock.now())
            .to_std()
            .unwrap_or(Duration::ZERO);
        if early > Duration::from_secs(1) {
            self.handoff
                .hand_off(message)
                .await
                .map_err(DomainError::Internal)?;
            return Ok(RunOutcome::Postponed);
        }
        self.run(&message.id, message.attempt).await
    }

    /// Handles one queue message of due work (its body already read as a [`DueMessage`]):
    /// `Err(())` means "report it failed" (already logged): a malformed body, or a store failure
    /// (the message is redelivered; the item stays stored and the sweeper resumes it). A failed
    /// side effect is not a failure of the message: its job stored the next attempt.
    pub async fn receive_message(
        &self, message_id: &str, message: Result<DueMessage, String>,
    ) -> Result<(), ()> {
        let message = match message {
            Ok(message) => message,
            Err(error) => {
                tracing::warn!(message_id, outcome = "invalid_body", %error, "due work message rejected");
                return Err(());
            }
        };
        match self.receive(&message).await {
            Ok(outcome) => {
                tracing::info!(
                    message_id,
                    due_id = %message.id,
                    attempt = message.attempt,
                    outcome = ?outcome,
                    "due work message processed"
                );
                Ok(())
            }
            Err(error) => {
                tracing::error!(
                    message_id,
                    due_id = %message.id,
                    outcome = "error",
                    error = %ErrorChain(&error),
                    "due work message failed; it will be redelivered"
                );
                Err(())
            }
        }
    }

    /// Claims item `id` for its attempt after `attempt` attempts and runs it; a claim that
    /// loses (a duplicate, a racing sweeper, an attempt already made) does nothing.
    ///
    /// Errors: the store failed, or the job did (the lease lapses, the sweeper resumes it).
    pub async fn run(&self, id: &DueId, attempt: u32) -> Result<RunOutcome, DomainError> {
        let Some(job) = self.job(id.kind()) else {
            return Ok(RunOutcome::NoJob);
        };
        let now = self.clock.now();
        let lease = Lease::new(now, self.settings.lease);
        let Some(item) = self.store.claim_due(id, attempt, &lease, now).await? else {
            return Ok(RunOutcome::NotClaimed);
        };
        let claimed = self.claimed(item, now);
        if claimed.item.runs > DueItem::MAX_RUNS {
            return self.park(&claimed).await.map(RunOutcome::Ran);
        }
        let ran = self.attempt(job.as_ref(), &claimed).await?;
        Ok(RunOutcome::Ran(ran))
    }

    /// Runs an item this process claimed itself ([`Self::claimed_now`]) once its transaction
    /// committed.
    ///
    /// Errors: as [`Self::run`].
    pub async fn run_claimed(&self, claimed: &Claimed) -> Result<Ran, DomainError> {
        let Some(job) = self.job(claimed.item.kind()) else {
            return Err(DomainError::internal(format!(
                "no job runs due items of kind {}",
                claimed.item.kind()
            )));
        };
        self.attempt(job.as_ref(), claimed).await
    }

    /// One run of `job` on `claimed`: a run that fails (an error, not an answer) leaves the item
    /// due with its error ([`Claimed::release`]), to be claimed again after a delay that grows
    /// with its runs.
    ///
    /// Errors: the store failed to release it too (the lease lapses; the sweeper resumes it).
    async fn attempt(&self, job: &dyn DueJob, claimed: &Claimed) -> Result<Ran, DomainError> {
        let ran = match job.run(claimed).await {
            Ok(ran) => ran,
            Err(error) => {
                let text = ErrorChain(&error).to_string();
                tracing::warn!(
                    due_id = %claimed.item.id,
                    runs = claimed.item.runs,
                    error = %text,
                    "due work run failed; the item stays due"
                );
                let ran = claimed.release(text).await?;
                Ran {
                    outcome: "error",
                    ..ran
                }
            }
        };
        record_run(claimed, &ran);
        self.follow_up(&claimed.item.id, &ran).await;
        Ok(ran)
    }

    /// Gives up on an item that ran [`DueItem::MAX_RUNS`] times without progress: it stays
    /// stored, parked (out of the sweeper's index, claimed by nobody) with its last error, for
    /// an operator to inspect ([`crate::store::DueStore::parked_due_items`]); the `DueWorkParked`
    /// metric and its alarm tell them.
    ///
    /// Errors: the store failed (the lease lapses; the next claim parks it).
    async fn park(&self, claimed: &Claimed) -> Result<Ran, DomainError> {
        let parking = Parking {
            id: claimed.item.id.clone(),
            lease_id: claimed.lease_id().to_string(),
            at: self.clock.now(),
            error: claimed.item.last_error.clone().unwrap_or_else(|| {
                "its runs ended without an answer (a crash or a timeout)".into()
            }),
        };
        match self.store.park_due(&parking).await {
            Ok(()) => {
                tracing::error!(
                    due_id = %parking.id,
                    kind = claimed.item.kind().as_str(),
                    runs = claimed.item.runs,
                    error = %parking.error,
                    "due work parked: it ran {} times without progress",
                    DueItem::MAX_RUNS
                );
                crate::telemetry::due_work_parked();
                let ran = Ran::nothing("parked");
                record_run(claimed, &ran);
                Ok(ran)
            }
            Err(StoreError::LeaseLost) => Ok(Ran::nothing("lease_lost")),
            Err(e) => Err(e.into()),
        }
    }

    /// After an attempt stored its outcome: hands the next attempt on, and logs the outcome.
    pub async fn follow_up(&self, id: &DueId, ran: &Ran) {
        tracing::info!(
            due_id = %id,
            outcome = ran.outcome,
            next_due_at = ?ran.next.as_ref().map(|n| n.due_at),
            "due work attempt"
        );
        if let Some(next) = &ran.next {
            self.hand_off_message(next).await;
        }
        for spawned in &ran.spawned {
            self.hand_off_message(spawned).await;
        }
    }
}

/// Counts an attempt that ran (`DueWorkRuns`) and how late it started (`DueWorkLateness`).
fn record_run(claimed: &Claimed, ran: &Ran) {
    let late = (claimed.claimed_at - claimed.item.due_at)
        .to_std()
        .unwrap_or(Duration::ZERO);
    crate::telemetry::due_work_run(claimed.item.kind().as_str(), ran.outcome, late);
}
