//! The evaluation of one dispatch, as named steps in BEHAVIOR 6's order. Each step either
//! hands the next one what it found, or stops the run with a [`Skip`](super::outcome::Skip) (a
//! non-error outcome) or an error. [`plan`] runs them and ends with the one atomic write of an
//! assignment.
//!
//! This file holds [`plan`], which runs the steps in order; each concept has a file of its own:
//!
//! - `run.rs`: what the steps share: the run, what the engine hands them, what a run learns,
//!   why it stops;
//! - `reads.rs`: the reads around the decision: the first round (one wave of reads by key), the
//!   second (what the first could not know to read), and the fresh read of the chosen member;
//! - `checks.rs`: steps 2 to 9, each a pure check of what was read;
//! - `decide.rs`: the pure decision of steps 7 to 14 over what was read ([`Evaluation`]), the one
//!   that dispatch, the queue, SLA reassignment, explain and the what-if replay all run;
//!   `pool.rs`: the members it chooses among, as they stand at the run's instant;
//! - `company.rs`: step 10, account matching: the contact's company, its owner;
//! - `write.rs`: the one atomic write of an assignment ([`Planned`]) and the history entry of a
//!   run that stopped ([`stop_entry`]).

mod checks;
mod company;
mod decide;
mod pool;
mod reads;
mod run;
mod write;

pub(crate) use checks::{record, settings};
pub use company::OWNER_LOOKUPS_AT_ONCE;
pub(crate) use company::{add_company_owners, company_key, find_company};
pub use decide::{admit, decide, evaluate, Decided, Evaluation, Limits};
pub(crate) use reads::trigger_member_ids;
pub use run::{Context, Run, Step, Stop, Trace};
pub use write::{stop_entry, Planned};

use reads::{check, choose_owner, first_round, listed_subscriptions, Subscriptions};
use write::assign;

/// Runs every step of `run` and returns the assignment to commit, recording in `trace` what it
/// found. Writes nothing: dispatch commits the result, explain shows it (BEHAVIOR 9).
///
/// Errors: [`Stop::Skip`] at the first check that stops the run, [`Stop::Failed`] when the
/// store fails.
pub async fn plan(cx: &Context<'_>, run: &Run<'_>, trace: &mut Trace) -> Step<Planned> {
    let now = cx.clock.now();
    let first = first_round(cx, run, now).await?;
    let account_id = first.account_id;
    let mut subscriptions = first.subscriptions;
    if let Subscriptions::Known(known) = &subscriptions {
        trace.subscriptions = known.clone();
    }
    let planned = async {
        let checked = check(cx, run, first.found, &mut subscriptions, trace).await?; // steps 2 to 9
        let (member, reason, rotation) = choose_owner(cx, run, &checked, now, trace).await?;
        Ok(assign(cx, run, &checked, member, reason, rotation, now))
    }
    .await;
    if let Subscriptions::Known(known) = &subscriptions {
        trace.subscriptions = known.clone();
    }
    match planned {
        // A dispatch that stopped after the router was found appends a history entry, whose
        // events go to the subscriptions: read them now if the run stopped before it did.
        Err(Stop::Skip(skip)) if trace.router.is_some() && run.sla.is_none() => {
            if let Subscriptions::Changed(version) = subscriptions {
                trace.subscriptions = listed_subscriptions(cx, account_id, version).await?;
            }
            Err(Stop::Skip(skip))
        }
        planned => planned,
    }
}
