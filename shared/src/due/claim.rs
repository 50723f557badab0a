//! A claimed item and what a run settles it with: the job a kind of due work runs
//! ([`DueJob`]), the item it holds ([`Claimed`], whose [`Claimed::commit`] holds the conflict
//! policy of every kind), what one commit round did ([`Commit`]), what an attempt did ([`Ran`]),
//! and when the sweeper resumes an item should its hand-off be lost.

use super::message::DueMessage;
use crate::clock::Clock;
use crate::error::DomainError;
use crate::model::due::{DueId, DueItem, DueKind, NextAttempt, Settlement};
use crate::store::retry::{write_rounds, Kept, RoundError};
use crate::store::{Backoff, DueStore, StoreError, CONFLICT_DEADLINE};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

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
    pub(super) grace: Duration,
    pub(super) reach: Option<Duration>,
    pub(super) lease: Duration,
    #[debug(skip)]
    pub(super) store: Arc<dyn DueStore>,
    #[debug(skip)]
    pub(super) clock: Arc<dyn Clock>,
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
    pub(super) async fn release(&self, error: String) -> Result<Ran, DomainError> {
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
pub(super) fn resume_at(
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
pub(super) fn carried(due_at: DateTime<Utc>, now: DateTime<Utc>, reach: Option<Duration>) -> bool {
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
}
