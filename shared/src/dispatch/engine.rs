//! The dispatch engine of one warm instance: runs [`steps::plan`], commits the assignment in one
//! atomic store write, and retries lost races with jitter until a deadline (BEHAVIOR 6,
//! "Assignment writes").

use super::outcome::Outcome;
use super::request::{AccountContext, DispatchRequest};
use super::steps::{self, Context, Stop};
use crate::clock::Clock;
use crate::error::DomainError;
use crate::fields::cache::CatalogueCache;
use crate::idempotency::{IdempotencyClaim, IdempotencyCompletion, StoredResponse};
use crate::store::{Store, StoreError};
use rand::Rng;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default time a dispatch keeps retrying lost races before failing with 500.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(5);

/// The engine of one warm instance.
pub struct DispatchEngine {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    catalogues: Arc<CatalogueCache>,
    deadline: Duration,
    /// One async lock per router id: dispatches of one warm instance on one router take turns
    /// instead of racing each other in the store (a Lambda instance serves one event at a time,
    /// but the local server and a queue batch run many). Races between instances are still
    /// settled by the store's conditional write.
    turns: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl DispatchEngine {
    /// An engine over `store`, retrying conflicts for [`DEFAULT_DEADLINE`].
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        catalogues: Arc<CatalogueCache>,
    ) -> Self {
        Self {
            store,
            clock,
            catalogues,
            deadline: DEFAULT_DEADLINE,
            turns: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The same engine with another retry deadline.
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// How long lost races are retried.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Runs one dispatch. `idempotency_key` (the SQS message id) makes a redelivery a no-op.
    ///
    /// Errors: 500 when the store fails or the write keeps losing races past the deadline.
    pub async fn dispatch(
        &self,
        context: AccountContext,
        request: &DispatchRequest,
        idempotency_key: Option<&str>,
    ) -> Result<Outcome, DomainError> {
        self.run(context, request, idempotency_key, None).await
    }

    /// Runs one dispatch of an HTTP request holding the `Idempotency-Key` `claim`
    /// (BEHAVIOR 10): an assignment stores its 200 answer with the assignment, in the same
    /// atomic write. Other outcomes write nothing; the caller stores their answer.
    ///
    /// Errors: as [`Self::dispatch`]; 409 when the claim's lease was lost before the commit.
    pub async fn dispatch_completing(
        &self,
        context: AccountContext,
        request: &DispatchRequest,
        claim: &IdempotencyClaim,
    ) -> Result<Outcome, DomainError> {
        self.run(context, request, None, Some(claim)).await
    }

    async fn run(
        &self,
        context: AccountContext,
        request: &DispatchRequest,
        idempotency_key: Option<&str>,
        claim: Option<&IdempotencyClaim>,
    ) -> Result<Outcome, DomainError> {
        if let Some(key) = idempotency_key {
            if self.store.idempotency_key_used(key).await? {
                return Ok(Outcome::AlreadyProcessed);
            }
        }
        let turn = self.turn_lock(&request.router_id);
        let outcome = {
            let _turn = turn.lock().await;
            self.dispatch_in_turn(context, request, idempotency_key, claim)
                .await
        };
        self.release_turn_lock(&request.router_id, turn);
        outcome
    }

    async fn dispatch_in_turn(
        &self,
        context: AccountContext,
        request: &DispatchRequest,
        idempotency_key: Option<&str>,
        claim: Option<&IdempotencyClaim>,
    ) -> Result<Outcome, DomainError> {
        let cx = Context {
            store: self.store.as_ref(),
            clock: self.clock.as_ref(),
            catalogues: &self.catalogues,
        };
        let started = Instant::now();
        let mut attempt: u32 = 0;
        loop {
            let mut planned = match steps::plan(&cx, context, request, idempotency_key).await {
                Ok(planned) => planned,
                Err(Stop::Skip(skip)) => return Ok(Outcome::Skipped(skip)),
                Err(Stop::Failed(error)) => return Err(error),
            };
            if let Some(claim) = claim {
                let answer = Outcome::Assigned(planned.assigned.clone()).answer();
                planned.write.completion = Some(IdempotencyCompletion {
                    claim: claim.clone(),
                    response: StoredResponse::json(200, &answer)?,
                });
            }
            match self.store.commit_assignment(&planned.write).await {
                Ok(()) => return Ok(Outcome::Assigned(planned.assigned)),
                Err(StoreError::AlreadyApplied) => return Ok(Outcome::AlreadyProcessed),
                Err(StoreError::Conflict) if started.elapsed() < self.deadline => {
                    attempt += 1;
                    let cap = 5u64 << attempt.min(5); // 10..160 ms
                    let pause = rand::thread_rng().gen_range(1..=cap);
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                }
                Err(StoreError::Conflict) => {
                    return Err(DomainError::internal(format!(
                        "dispatch lost {attempt} races in a row and gave up after {:?}",
                        self.deadline
                    )))
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn turn_lock(&self, router_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        turns.entry(router_id.to_string()).or_default().clone()
    }

    /// Drops the router's lock from the map when nobody else holds or waits for it, so the map
    /// holds only routers being dispatched right now (whatever ids callers send).
    fn release_turn_lock(&self, router_id: &str, turn: Arc<tokio::sync::Mutex<()>>) {
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        // Two references: the map's and ours.
        if Arc::strong_count(&turn) == 2 {
            turns.remove(router_id);
        }
    }
}
