//! The worker of due work: claims, runs the kind's job, hands the next attempt on, sweeps.

use super::handoff::Handoff;
use super::message::DueMessage;
use crate::clock::Clock;
use crate::error::{BoxError, DomainError, ErrorChain};
use crate::model::due::{DueId, DueItem, DueKind, Lease, NextAttempt, Parking, Settlement};
pub use crate::store::retry::RoundError;
use crate::store::retry::{write_rounds, Kept};
use crate::store::{Backoff, DueStore, StoreError, CONFLICT_DEADLINE};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;
use strum::IntoEnumIterator;

/// Default lease of a claim: longer than any attempt takes (a CRM request 3 s, a webhook
/// delivery 15 s, an SLA reassignment a few seconds of dispatch), so only a dead worker lets
/// one lapse.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// Items the sweeper hands on concurrently.
const SWEEP_CONCURRENCY: usize = 16;

/// What the worker is configured with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DueSettings {
    /// How long a claim holds an item (`DUE_WORK_LEASE_SECONDS`, default 60 s).
    pub lease: Duration,
}

impl Default for DueSettings {
    fn default() -> Self {
        Self {
            lease: DEFAULT_LEASE,
        }
    }
}

impl DueSettings {
    /// The name of the lease's environment variable.
    pub const LEASE_VARIABLE: &'static str = "DUE_WORK_LEASE_SECONDS";

    /// The settings from the environment, the defaults when unset.
    ///
    /// Errors: as [`Self::parse_lease`].
    pub fn from_env() -> Result<Self, String> {
        let mut settings = Self::default();
        if let Some(text) = std::env::var(Self::LEASE_VARIABLE)
            .ok()
            .filter(|v| !v.trim().is_empty())
        {
            settings.lease = Self::parse_lease(&text)?;
        }
        Ok(settings)
    }

    /// Parses a lease: whole seconds from 1 to 900.
    ///
    /// Errors: a message naming the variable and the value.
    pub fn parse_lease(text: &str) -> Result<Duration, String> {
        text.trim()
            .parse::<u64>()
            .ok()
            .filter(|s| (1..=900).contains(s))
            .map(Duration::from_secs)
            .ok_or_else(|| {
                format!(
                    "{}={text} is not a number of seconds from 1 to 900",
                    Self::LEASE_VARIABLE
                )
            })
    }
}

/// What one kind of due work does with a claimed item.
#[async_trait]
pub trait DueJob: Send + Sync + 'static {
    /// The kind it runs.
    fn kind(&self) -> DueKind;

    /// Makes one attempt of `claimed`: performs the side effect and stores its outcome together
    /// with the item's settlement ([`Claimed::done`] or [`Claimed::again`]) in one write,
    /// conditional on the lease, through [`Claimed::commit`] (which holds the conflict policy).
    /// An item whose subject is gone or final ends through [`Claimed::drop_item`] without a side
    /// effect.
    ///
    /// Errors: the run failed (nothing settled): the worker leaves the item due with the error
    /// and claims it again later; after [`DueItem::MAX_RUNS`] runs without progress it is parked.
    async fn run(&self, claimed: &Claimed) -> Result<Ran, DomainError>;
}

/// An item this worker holds (its lease is on the stored item), with the store and clock the
/// mechanism settles it through.
#[derive(derive_more::Debug, Clone)]
pub struct Claimed {
    /// The item as claimed.
    pub item: DueItem,
    /// When it was claimed.
    pub claimed_at: DateTime<Utc>,
    grace: Duration,
    reach: Option<Duration>,
    lease: Duration,
    #[debug(skip)]
    store: Arc<dyn DueStore>,
    #[debug(skip)]
    clock: Arc<dyn Clock>,
}

impl Claimed {
    /// How long [`Self::commit`] runs a conflicting commit again: the retry deadline of every
    /// write ([`crate::store::CONFLICT_DEADLINE`]), or half the lease when that is shorter, so
    /// that the last round still commits on the lease it holds.
    pub fn commit_deadline(&self) -> Duration {
        CONFLICT_DEADLINE.min(self.lease / 2)
    }

    /// The lease's id.
    pub fn lease_id(&self) -> &str {
        self.item.lease.as_ref().map_or("", |l| l.id.as_str())
    }

    /// The item's subject, read as the job wrote it.
    ///
    /// Errors: a subject of another shape (an internal error).
    pub fn subject<T: DeserializeOwned>(&self) -> Result<T, DomainError> {
        serde_json::from_value(self.item.subject.clone()).map_err(|e| {
            DomainError::internal(format!(
                "due item {} has a malformed subject: {e}",
                self.item.id
            ))
        })
    }

    /// The settlement that ends the work: the item is removed.
    pub fn done(&self) -> Settlement {
        Settlement {
            id: self.item.id.clone(),
            lease_id: self.lease_id().to_string(),
            next: None,
        }
    }

    /// A new item `id` due at `due_at`, to store with this attempt's outcome and hand on after
    /// it (work the attempt causes, e.g. an event to deliver: [`Ran::spawning`]).
    pub fn schedule(&self, id: DueId, subject: Value, due_at: DateTime<Utc>) -> DueItem {
        let resume_at = resume_at(id.kind(), due_at, self.claimed_at, self.grace, self.reach);
        DueItem::new(id, subject, due_at, resume_at)
    }

    /// The settlement that makes another attempt due at `due_at` (this one recorded).
    pub fn again(&self, due_at: DateTime<Utc>) -> Settlement {
        self.next(due_at, self.item.attempt + 1, None, None)
    }

    /// The settlement of a run that did part of a longer piece of work: the next attempt, due at
    /// `due_at`, reads `subject` (e.g. a position in a list) instead of the item's.
    pub fn again_from(&self, due_at: DateTime<Utc>, subject: Value) -> Settlement {
        self.next(due_at, self.item.attempt + 1, None, Some(subject))
    }

    /// The settlement that leaves the item due without an attempt recorded (its runs kept,
    /// `error` kept as its last error): it is claimed again after a delay that doubles with its
    /// runs, from 1 s up to the lease.
    fn stays_due(&self, error: String) -> Settlement {
        let doubling = 1u64 << self.item.runs.saturating_sub(1).min(16);
        let delay = Duration::from_secs(doubling).min(self.lease);
        let due_at = self.clock.now() + chrono::Duration::from_std(delay).unwrap_or_default();
        self.next(due_at, self.item.attempt, Some(error), None)
    }

    fn next(
        &self, due_at: DateTime<Utc>, attempt: u32, error: Option<String>, subject: Option<Value>,
    ) -> Settlement {
        Settlement {
            id: self.item.id.clone(),
            lease_id: self.lease_id().to_string(),
            next: Some(NextAttempt {
                due_at,
                attempt,
                resume_at: resume_at(
                    self.item.kind(),
                    due_at,
                    self.clock.now().max(self.claimed_at),
                    self.grace,
                    self.reach,
                ),
                error,
                subject,
            }),
        }
    }

    /// Stores the outcome of this run through `round`, the job's commit: each round reads what
    /// it writes against afresh (round 0 may use what the run read before its side effect) and
    /// makes one conditional write that settles the item with the outcome, or finds the item's
    /// subject gone. The conflict policy of every kind lives here (`docs/design.md`, "Work that
    /// happens later"):
    ///
    /// - a write that fails its condition because something else changed
    ///   ([`StoreError::Conflict`]) is run again on fresh reads, with a jittered pause, until
    ///   the commit deadline ([`Self::commit_deadline`]); when it still conflicts the item stays
    ///   due (no attempt recorded; its runs grow, and it is parked after
    ///   [`DueItem::MAX_RUNS`]);
    /// - [`Commit::SubjectGone`] (deleted, expired, already final) ends the item, and is the only
    ///   way an item ends without its job's write;
    /// - a lost lease ([`StoreError::LeaseLost`]: another worker holds the item) does nothing.
    ///
    /// Errors: any other store failure, or the round's own error (nothing settled; the worker
    /// releases the item with the error, [`DueWorker::run`]).
    pub async fn commit<'a, F, Fut>(&self, round: F) -> Result<Ran, DomainError>
    where
        F: FnMut(u32) -> Fut,
        Fut: std::future::Future<Output = Result<Commit, RoundError>> + Send + 'a,
    {
        let mut backoff = Backoff::until(self.commit_deadline());
        match write_rounds(&mut backoff, round, |Kept(round, _), n| Box::pin(round(n))).await {
            Ok(Commit::Stored {
                label,
                settlement,
                spawned,
            }) => Ok(Ran::settled(label, &settlement).spawning(&spawned)),
            Ok(Commit::SubjectGone) => self.drop_item().await,
            Err(RoundError::Store(StoreError::Conflict)) => self
                .release(format!(
                    "the commit conflicted {} times in a row for {:?}; the item stays due",
                    backoff.lost() + 1,
                    backoff.elapsed()
                ))
                .await
                .map(|ran| Ran {
                    outcome: "conflict",
                    ..ran
                }),
            Err(RoundError::Store(StoreError::LeaseLost)) => Ok(Ran::nothing("lease_lost")),
            Err(RoundError::Store(error)) => Err(error.into()),
            Err(RoundError::Domain(error)) => Err(error),
        }
    }

    /// Settles the item with `settlement` and nothing else written (a job whose side effects
    /// were their own writes, each idempotent), labelled `label`, through [`Self::commit`].
    ///
    /// Errors: a store failure.
    pub async fn settle(
        &self, label: &'static str, settlement: Settlement,
    ) -> Result<Ran, DomainError> {
        self.commit(|_| {
            let settlement = settlement.clone();
            async move {
                self.store.settle_due(&settlement).await?;
                Ok(Commit::stored(label, settlement))
            }
        })
        .await
    }

    /// Ends the item without a write of its job's: its subject is gone (deleted, expired) or
    /// already final. The one place an item is dropped.
    pub async fn drop_item(&self) -> Result<Ran, DomainError> {
        let settlement = self.done();
        match self.store.settle_due(&settlement).await {
            Ok(()) => Ok(Ran::settled("dropped", &settlement)),
            Err(StoreError::LeaseLost) => Ok(Ran::nothing("lease_lost")),
            Err(e) => Err(e.into()),
        }
    }

    /// Leaves the item due without an attempt recorded, keeping `error` on it (a run that
    /// failed, a commit that kept conflicting): see [`Self::stays_due`].
    ///
    /// Errors: a store failure (the lease lapses and the sweeper resumes the item).
    async fn release(&self, error: String) -> Result<Ran, DomainError> {
        let settlement = self.stays_due(error);
        match self.store.settle_due(&settlement).await {
            Ok(()) => Ok(Ran::settled("released", &settlement)),
            Err(StoreError::LeaseLost) => Ok(Ran::nothing("lease_lost")),
            Err(e) => Err(e.into()),
        }
    }
}

/// What one commit round of a job did ([`Claimed::commit`]).
// One value a round, returned and matched at once: boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Commit {
    /// The round's write stored the run's outcome with `settlement` (labelled `label` in logs
    /// and metrics) and the new items `spawned`, to hand on.
    Stored {
        /// The outcome's label (`synced`, `delivered`, `retrying`, ...).
        label: &'static str,
        /// The item's settlement, written in the same write.
        settlement: Settlement,
        /// Items the write stored, to hand on.
        spawned: Vec<DueItem>,
    },
    /// The item's subject is gone (deleted, expired) or already final: the item ends.
    SubjectGone,
}

impl Commit {
    /// The round stored `settlement` labelled `label`, and nothing new.
    pub fn stored(label: &'static str, settlement: Settlement) -> Self {
        Self::Stored {
            label,
            settlement,
            spawned: Vec::new(),
        }
    }
}

/// When the sweeper resumes an item of `kind` due at `due_at`, scheduled at `now`: after the
/// grace when the hand-off can carry it there, at once when it is due beyond the hand-off's
/// reach. An SLA check is resumable at its due time whatever carries it (BEHAVIOR 14: checks
/// run at most one minute late, and the sweeper runs at least every minute): should its
/// hand-off be lost, the next sweep runs it; should both arrive, one claim wins.
fn resume_at(
    kind: DueKind, due_at: DateTime<Utc>, now: DateTime<Utc>, grace: Duration,
    reach: Option<Duration>,
) -> DateTime<Utc> {
    if kind == DueKind::SlaCheck {
        return due_at;
    }
    if carried(due_at, now, reach) {
        due_at + chrono::Duration::from_std(grace).unwrap_or(chrono::Duration::zero())
    } else {
        due_at
    }
}

/// Whether a hand-off of reach `reach` carries an item due at `due_at` from `now`.
fn carried(due_at: DateTime<Utc>, now: DateTime<Utc>, reach: Option<Duration>) -> bool {
    let wait = (due_at - now).to_std().unwrap_or(Duration::ZERO);
    reach.is_none_or(|reach| wait <= reach)
}

/// What an attempt did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// A short label of the outcome (`synced`, `retrying`, `dropped`, ...), for logs and metrics.
    pub outcome: &'static str,
    /// The next attempt to hand on, when the settlement made one.
    pub next: Option<DueMessage>,
    /// New items the attempt stored with its outcome, to hand on too.
    pub spawned: Vec<DueMessage>,
}

impl Ran {
    /// The attempt ended with `settlement` (stored), labelled `outcome`.
    pub fn settled(outcome: &'static str, settlement: &Settlement) -> Self {
        Self {
            spawned: Vec::new(),
            outcome,
            next: settlement.next.as_ref().map(|next| DueMessage {
                kind: super::message::DUE_WORK.to_string(),
                id: settlement.id.clone(),
                attempt: next.attempt,
                due_at: next.due_at,
            }),
        }
    }

    /// Nothing was stored (the lease was lost to another worker, or the subject is gone and the
    /// item was settled `done`).
    pub fn nothing(outcome: &'static str) -> Self {
        Self {
            outcome,
            next: None,
            spawned: Vec::new(),
        }
    }

    /// The same, with `items` stored by the attempt to hand on.
    pub fn spawning(mut self, items: &[DueItem]) -> Self {
        self.spawned.extend(items.iter().map(DueMessage::of));
        self
    }
}

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

/// What one sweep found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Items whose resume time had passed.
    pub found: usize,
    /// Items this sweep re-armed and handed on (the others were taken by a racing sweeper or
    /// worker in between).
    pub handed_on: usize,
    /// Per kind, how long the most overdue item found was past its due time.
    pub oldest_overdue: BTreeMap<DueKind, Duration>,
}

/// The worker of one instance: the store, the clock, the hand-off and the registered jobs.
#[derive(derive_more::Debug)]
pub struct DueWorker {
    #[debug(skip)]
    store: Arc<dyn DueStore>,
    #[debug(skip)]
    clock: Arc<dyn Clock>,
    settings: DueSettings,
    #[debug(skip)]
    handoff: Arc<dyn Handoff>,
    #[debug(skip)]
    jobs: RwLock<HashMap<DueKind, Arc<dyn DueJob>>>,
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

    /// One sweep: reads up to `limit` items whose resume time has passed, oldest first, and
    /// hands each on again after moving its resume time by the hand-off's grace (a conditional
    /// write: of racing sweepers one hands it on).
    ///
    /// Errors: the store failed to read the index (items already handed on stay so).
    pub async fn sweep(self: &Arc<Self>, limit: usize) -> Result<SweepReport, DomainError> {
        let now = self.clock.now();
        self.sweep_up_to(now, limit).await
    }

    /// [`Self::sweep`] of the items whose resume time is at or before `bound` (a round of
    /// [`Self::sweep_all`]: items it re-armed itself are not found again, however long its
    /// rounds take).
    async fn sweep_up_to(
        self: &Arc<Self>, bound: DateTime<Utc>, limit: usize,
    ) -> Result<SweepReport, DomainError> {
        let now = self.clock.now();
        let overdue = self.store.overdue_due_items(bound, limit).await?;
        let mut report = SweepReport {
            found: overdue.len(),
            ..SweepReport::default()
        };
        for item in &overdue {
            let late = (now - item.due_at).to_std().unwrap_or(Duration::ZERO);
            let oldest = report.oldest_overdue.entry(item.kind()).or_default();
            *oldest = (*oldest).max(late);
        }
        for kind in DueKind::iter() {
            let found = overdue.iter().filter(|i| i.kind() == kind).count();
            let oldest = report
                .oldest_overdue
                .get(&kind)
                .copied()
                .unwrap_or_default();
            crate::telemetry::sweep(kind.as_str(), found, oldest);
        }
        let resume = now
            + chrono::Duration::from_std(self.handoff.grace()).unwrap_or(chrono::Duration::zero());
        for chunk in overdue.chunks(SWEEP_CONCURRENCY) {
            let mut set = tokio::task::JoinSet::new();
            for item in chunk {
                let worker = self.clone();
                let item = item.clone();
                set.spawn(async move {
                    if !worker.store.rearm_due(&item, resume, now).await? {
                        return Ok::<bool, DomainError>(false);
                    }
                    worker
                        .handoff
                        .hand_off(&DueMessage::of(&item))
                        .await
                        .map_err(DomainError::Internal)?;
                    Ok(true)
                });
            }
            while let Some(done) = set.join_next().await {
                match done.map_err(DomainError::internal)? {
                    Ok(true) => report.handed_on += 1,
                    Ok(false) => {}
                    // A failed hand-off stays overdue: the next sweep tries it again.
                    Err(error) => {
                        tracing::warn!(error = %ErrorChain(&error), "sweep hand-off failed")
                    }
                }
            }
        }
        if report.found > 0 {
            tracing::info!(
                found = report.found,
                handed_on = report.handed_on,
                oldest_overdue = ?report.oldest_overdue,
                "due work swept"
            );
        }
        Ok(report)
    }

    /// Sweeps in rounds of `batch` until a round finds fewer than `batch` items or `budget` has
    /// passed (a scheduled Lambda invocation has a time limit). Every round takes the items
    /// overdue when the sweep began: an item re-armed by an earlier round (its resume time moved
    /// by the grace) is not handed on twice, even when the rounds outlast the grace.
    ///
    /// Errors: as [`Self::sweep`].
    pub async fn sweep_all(
        self: &Arc<Self>, batch: usize, budget: Duration,
    ) -> Result<SweepReport, DomainError> {
        let started = std::time::Instant::now();
        let bound = self.clock.now();
        let mut total = SweepReport::default();
        loop {
            let round = self.sweep_up_to(bound, batch).await?;
            total.found += round.found;
            total.handed_on += round.handed_on;
            for (kind, late) in round.oldest_overdue {
                let oldest = total.oldest_overdue.entry(kind).or_default();
                *oldest = (*oldest).max(late);
            }
            if round.found < batch || started.elapsed() >= budget {
                return Ok(total);
            }
        }
    }
}

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

/// Counts an attempt that ran (`DueWorkRuns`) and how late it started (`DueWorkLateness`).
fn record_run(claimed: &Claimed, ran: &Ran) {
    let late = (claimed.claimed_at - claimed.item.due_at)
        .to_std()
        .unwrap_or(Duration::ZERO);
    crate::telemetry::due_work_run(claimed.item.kind().as_str(), ran.outcome, late);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_within_reach_is_resumed_after_the_grace_and_one_beyond_at_its_due_time() {
        let now = Utc::now();
        let grace = Duration::from_secs(60);
        let soon = now + chrono::Duration::seconds(600);
        let later = now + chrono::Duration::seconds(3600);
        let reach = Some(Duration::from_secs(900));
        let crm = DueKind::CrmSync;
        assert_eq!(
            resume_at(crm, soon, now, grace, reach),
            soon + chrono::Duration::seconds(60)
        );
        assert_eq!(resume_at(crm, later, now, grace, reach), later);
        assert_eq!(
            resume_at(crm, later, now, grace, None),
            later + chrono::Duration::seconds(60)
        );
        // An SLA check is the sweeper's as soon as it is due (BEHAVIOR 14).
        assert_eq!(resume_at(DueKind::SlaCheck, soon, now, grace, reach), soon);
        assert_eq!(resume_at(DueKind::SlaCheck, soon, now, grace, None), soon);
    }

    #[test]
    fn the_lease_setting_reads_whole_seconds_in_range() {
        assert_eq!(DueSettings::parse_lease(" 5 "), Ok(Duration::from_secs(5)));
        assert_eq!(
            DueSettings::parse_lease("900"),
            Ok(Duration::from_secs(900))
        );
        for bad in ["0", "901", "1.5", "x", ""] {
            assert!(DueSettings::parse_lease(bad).is_err(), "{bad}");
        }
    }
}
