//! The what-if replay (BEHAVIOR 16): `POST /routers/{id}/simulate` runs a router's draft (or
//! any revision) over the records its history says it routed in a window, and answers what
//! would have changed. It writes nothing.
//!
//! One engine: each entry is replayed by [`steps::evaluate`], the evaluation of steps 7 to 14
//! that dispatch, the queue, SLA reassignment and explain run, after the same step 5
//! ([`steps::settings`]) and step 6 ([`steps::record`]) functions. The replay only supplies
//! the inputs differently: the instant is the entry's `dispatched_at` (availability, working
//! hours and out-of-office of [`crate::schedule::availability`] at that instant), the record's
//! owner field holds the entry's `previous_owner` (for an entry that assigned nobody, the
//! record's current owner), the rotation state lives in memory from empty and moves as each
//! rotation assignment moves it, and [`steps::Limits::Ignored`] leaves out the quota and capacity
//! (the history does not hold their past values).
//!
//! Bounded cost (`docs/performance.md`, "What-if replay in bounded memory"): the
//! window's entries are read and replayed [`REPLAY_WINDOW`] at a time, oldest first, until
//! [`MAX_REPLAYED`] of the replay set were replayed, and never more than [`READ_FACTOR`] times
//! that many entries read, skipped ones included (then `truncated: true`). Each window's
//! records no earlier window read are read [`RECORDS_PER_READ`] at a time
//! ([`crate::store::RecordStore::get_records`]), bounded in bytes as well as in entries: at most
//! [`RECORD_READ_BYTES`] of whole records at DynamoDB's record limit are held at once, each read
//! projected before the next (the fields the evaluation reads: the trigger's, the owner field,
//! `email`; the projections kept for later windows [`MEMO_BYTES`] at most), so a record named by
//! entries of several windows is read once. A company is projected onto its owner as soon as it
//! is found ([`COMPANY_LOOKUPS_AT_ONCE`] whole companies at most in flight).
//! Members, companies (their owner alone), owners and calendars a window names are read once
//! for the replay, each set de-duplicated through hash sets, company lookups
//! [`COMPANY_LOOKUPS_AT_ONCE`] at a time, owner lookups [`steps::OWNER_LOOKUPS_AT_ONCE`] at a
//! time. Beyond that the replay keeps its running tallies and the first [`MAX_SAMPLES`] changed
//! entries.
//!
//! This file holds [`Replayer::simulate`], which runs the replay; each concept has a file of its
//! own: `bounds.rs` the bounds above, `request.rs` the body and its parsing
//! ([`SimulateRequest`]), `walk.rs` the walk of the window's replay set, `window.rs` the replay
//! of one window's entries (what they name read once, each entry evaluated), `answer.rs` the
//! running tallies and the answer ([`Simulation`]).

mod answer;
mod bounds;
mod request;
mod walk;
mod window;

pub use answer::{ReplayMember, ReplaySample, Simulation};
pub use bounds::{
    COMPANY_LOOKUPS_AT_ONCE, DEFAULT_WINDOW_DAYS, MAX_REPLAYED, MAX_SAMPLES, MEMO_BYTES,
    READ_FACTOR, RECORDS_PER_READ, RECORD_READ_BYTES, REPLAY_WINDOW,
};
pub use request::{SimulateBody, SimulateRequest};

use super::steps;
use crate::clock::Clock;
use crate::error::DomainError;
use crate::fields::cache::CatalogueCache;
use crate::routers::manage::ROUTER_NOT_FOUND;
use crate::routers::roster::{read_roster, Named};
use crate::store::ReplayPorts;
use crate::types::ids::{AccountId, RouterId};
use answer::Tally;
use serde_json::{Map, Value};
use std::sync::Arc;
use walk::Walk;
use window::{pool_of, skip_of, Configuration, Replay};

/// Runs what-if replays over the store.
pub struct Replayer {
    store: Arc<dyn ReplayPorts>,
    clock: Arc<dyn Clock>,
    catalogues: Arc<CatalogueCache>,
    /// Most entries replayed ([`MAX_REPLAYED`]).
    cap: usize,
    /// Entries read and replayed together ([`REPLAY_WINDOW`]).
    window: usize,
    /// Bytes of record projections kept ([`MEMO_BYTES`]).
    memo_bytes: usize,
    /// Records asked for in one read ([`RECORDS_PER_READ`]).
    records_per_read: usize,
}

impl Replayer {
    /// A replayer reading `store`, taking "now" (the default `to`, expired entries) from
    /// `clock` and field catalogues through `catalogues`.
    pub fn new(
        store: Arc<dyn ReplayPorts>, clock: Arc<dyn Clock>, catalogues: Arc<CatalogueCache>,
    ) -> Self {
        Self {
            store,
            clock,
            catalogues,
            cap: MAX_REPLAYED,
            window: REPLAY_WINDOW,
            memo_bytes: MEMO_BYTES,
            records_per_read: RECORDS_PER_READ,
        }
    }

    /// The same replayer replaying at most `cap` entries instead of [`MAX_REPLAYED`], and so
    /// reading at most [`READ_FACTOR`] times `cap` (tests show the rules on a small window).
    pub fn with_cap(mut self, cap: usize) -> Self {
        self.cap = cap;
        self
    }

    /// The same replayer reading and replaying `window` entries at a time instead of
    /// [`REPLAY_WINDOW`] (at least 1; tests show that a record named in several windows is
    /// still read once).
    pub fn with_window(mut self, window: usize) -> Self {
        self.window = window.max(1);
        self
    }

    /// The same replayer keeping at most `bytes` of record projections instead of
    /// [`MEMO_BYTES`] (tests show what happens past it: records named again are read again, the
    /// answer is the same).
    pub fn with_memo_bytes(mut self, bytes: usize) -> Self {
        self.memo_bytes = bytes;
        self
    }

    /// The same replayer asking for at most `records` records in one read instead of
    /// [`RECORDS_PER_READ`] (at least 1; the bench compares the whole window at once, as before
    /// reads were bounded in bytes).
    pub fn with_records_per_read(mut self, records: usize) -> Self {
        self.records_per_read = records.max(1);
        self
    }

    /// `POST /routers/{id}/simulate` (BEHAVIOR 16): replays `body`'s configuration over the
    /// window's entries. Writes nothing.
    ///
    /// Errors (in this order): 404 `Router not found`; `body`'s own error (not a JSON object)
    /// and the 400s of [`SimulateRequest::parse`]; 404 `Draft not found` / `Revision not
    /// found`; 500 when the store fails.
    pub async fn simulate(
        &self, account_id: AccountId, router_id: RouterId,
        body: Result<Map<String, Value>, DomainError>,
    ) -> Result<Simulation, DomainError> {
        let router = self
            .store
            .get_router(account_id, router_id)
            .await?
            .ok_or_else(|| DomainError::not_found(ROUTER_NOT_FOUND))?;
        let now = self.clock.now();
        let request = SimulateRequest::parse(&body?, now)?;
        let (config, teams, catalogues) = tokio::try_join!(
            async {
                Ok::<_, DomainError>(
                    request
                        .revision
                        .read(self.store.as_ref(), account_id, router_id)
                        .await?,
                )
            },
            async { Ok(self.store.list_teams(account_id).await?) },
            async { Ok(self.catalogues.get(self.store.as_ref(), account_id).await?) },
        )?;
        let router = request.revision.apply(&router, config.as_ref())?;
        let catalogue = catalogues.get(router.object_type);
        let roster = read_roster(
            self.store.as_ref(),
            account_id,
            &router,
            &teams,
            Named::default(),
        )
        .await?;
        let mut tally = Tally::default();
        let mut walk = Walk {
            store: self.store.as_ref(),
            account_id,
            router_id: router.id,
            window: request.window,
            now,
            page: self.window,
            cap: self.cap,
            budget: self.cap.saturating_mul(READ_FACTOR),
            read: 0,
            replayed: 0,
            after: None,
            ended: None,
        };
        match steps::settings(&router, catalogue) {
            Ok((settings, owner_field)) => {
                let config = Configuration {
                    router: &router,
                    settings,
                    owner_field,
                    catalogue,
                    teams: &teams,
                };
                let mut replay =
                    Replay::new(self.store.as_ref(), account_id, config, roster).await?;
                replay.memo_bytes = self.memo_bytes;
                replay.records_per_read = self.records_per_read;
                while let Some(entries) = walk.next().await? {
                    replay.window(&entries, &mut tally).await?;
                }
                tally.pool = replay.pool();
            }
            Err(stop) => {
                // Step 5 stops every run of this configuration: no record is read.
                let message = skip_of(stop)?.message();
                while let Some(entries) = walk.next().await? {
                    for entry in &entries {
                        tally.add(entry, None, message);
                    }
                }
                tally.pool = pool_of(&router, &teams, &roster.members);
            }
        }
        let truncated = walk.ended == Some(true);
        Ok(tally.answer(&router, request, truncated))
    }
}
