//! The dispatch engine: evaluates a router for one record and assigns its owner
//! (spec "Dispatch"; BEHAVIOR 5 and 6). The HTTP route and the SQS queue run this same engine.
//!
//! Checks run in BEHAVIOR 6's order; each one that stops the run is a non-error outcome
//! ([`Skip`], answered 200 with only `message`). An assignment is ONE atomic store write
//! ([`crate::store::DispatchStore::commit_assignment`]): owner field, its assigned date,
//! `updated_at`, rotation state, the member's capacity counters, the account's monthly count, the
//! log item and the queue message's de-duplication marker. A write that loses a race (a condition
//! failed) is re-evaluated from fresh reads and retried with jitter until
//! [`DispatchEngine::deadline`]; only then does the call fail (500). So concurrent dispatches never
//! share a rotation turn, never push a member past `max_capacity` and never push the account past
//! its quota.

pub mod capacity;
pub mod directory;
pub mod distribution;
pub mod engine;
pub mod explain;
pub mod hints;
pub mod holidays;
pub mod outcome;
pub mod replay;
pub mod request;
pub mod steps;

pub use capacity::under_capacity;
pub use engine::{DispatchEngine, Dispatched, DEFAULT_DEADLINE, DEFAULT_HISTORY_RETENTION_DAYS};
pub use explain::{Candidate, CandidateReason, ExplainAnswer, Explanation, Preview};
pub use hints::{RouterHint, RouterHints};
pub use outcome::{Assigned, DispatchAnswer, Outcome, Skip};
pub use replay::{Replayer, Simulation};
pub use request::{AccountContext, DispatchRequest, INVALID_EVENT};
