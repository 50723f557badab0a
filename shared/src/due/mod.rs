//! Work that happens later, one mechanism for every kind (`docs/design.md`, "Work that happens
//! later"): CRM sync attempts (BEHAVIOR 7), webhook deliveries (BEHAVIOR 13) and SLA checks
//! (BEHAVIOR 14).
//!
//! 1. **State first.** A due item ([`crate::model::due::DueItem`]) is stored in the same store
//!    transaction as the change that causes it (the assignment, the history entry, the failed
//!    attempt): an outbox. Nothing is scheduled in memory before it is stored.
//! 2. **Fast path.** After the commit the item's key is handed on ([`Handoff`]): a delayed SQS
//!    message in Lambda ([`SqsHandoff`]), a timer in the local server ([`InProcessHandoff`]). The
//!    message carries the key and the attempt ([`DueMessage`]), never the work. Items due beyond
//!    what the hand-off can carry (SQS delays at most 15 minutes) are left to the sweeper.
//! 3. **Claim.** A worker ([`DueWorker::run`]) claims the item with one conditional write: the
//!    attempt number it means to make and a lease that expires. A claim that loses the race (a
//!    duplicate message, a racing sweeper, an attempt already made) does nothing.
//! 4. **Settle.** The job ([`DueJob`]) performs the side effect and stores its outcome together
//!    with the item's settlement (removed, or moved to its next attempt and due time) in one
//!    write, conditional on the lease ([`Claimed::commit`]); then the worker hands the next
//!    attempt on.
//! 5. **Conflicts belong to the mechanism.** A job's write that fails its condition because
//!    something else changed is run again on fresh reads (until
//!    [`Claimed::commit_deadline`]); the item stays due when it still conflicts. An item is dropped only when its job finds the subject
//!    gone or final ([`Commit::SubjectGone`]); a lost lease does nothing. State that many items
//!    write (a subscription's `failing_since`) is written with conditions on that state alone.
//! 6. **Bounded failure.** A run that fails (an error, a crash, a commit that keeps
//!    conflicting) leaves the item due with its error, claimed again after a delay that doubles
//!    from 1 s up to the lease; after [`crate::model::due::DueItem::MAX_RUNS`] runs without
//!    progress the item is parked: kept for inspection, out of the sweeper's index, counted by
//!    the `DueWorkParked` metric and its alarm.
//! 7. **Sweep.** The sweeper ([`DueWorker::sweep`]; an EventBridge schedule every minute in
//!    Lambda, a task in the local server) reads the items whose `resume_at` has passed (a lost
//!    message, a crash, a restart, an item due beyond the hand-off's reach), moves each one's
//!    `resume_at` with a conditional write (of racing sweepers one wins) and hands it on again.
//!
//! Kinds only say what an attempt does and when the next is due: they implement [`DueJob`] and
//! are registered on the worker ([`DueWorker::register`]).
//!
//! One concept a file: `settings.rs` the lease; `claim.rs` the job of a kind, the claimed item
//! and its commit (the conflict policy), what a run did; `worker.rs` the worker (claim, run,
//! release or park, hand on); `sweeper.rs` the sweep; `handoff/` the fast path, its SQS and
//! in-process carriers side by side; `message.rs` what a hand-off carries.

mod claim;
mod handoff;
mod message;
mod settings;
mod sweeper;
mod worker;

pub use crate::store::retry::RoundError;
pub use claim::{Claimed, Commit, DueJob, Ran};
pub use handoff::{Handoff, InProcessHandoff, SqsHandoff, MAX_SQS_DELAY, SQS_BATCH};
pub use message::DueMessage;
pub use settings::{DueSettings, DEFAULT_LEASE};
pub use sweeper::SweepReport;
pub use worker::{DueWorker, RunOutcome};
