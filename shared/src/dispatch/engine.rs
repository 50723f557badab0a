//! The dispatch engine of one warm instance: runs [`steps::plan`], commits the assignment in one
//! atomic store write, and retries lost races with jitter until a deadline (BEHAVIOR 6,
//! "Assignment writes").

use super::directory::DirectoryCache;
use super::explain::{Explanation, Preview};
use super::hints::RouterHints;
use super::outcome::{Assigned, Outcome, Skip};
use super::request::{AccountContext, DispatchRequest};
use super::steps::{self, Context, Run, Stop, Trace};
use crate::clock::Clock;
use crate::crm::{CrmSync, OwnerUpdate, SyncResult};
use crate::due::{Claimed, DueSettings, DueWorker};
use crate::error::DomainError;
use crate::fields::cache::CatalogueCache;
use crate::idempotency::{IdempotencyClaim, IdempotencyCompletion, StoredResponse};
use crate::model::dispatch::{
    CrmSyncStatus, DispatchEntry, DispatchSource, MessageDeduplicationId,
};
use crate::model::due::DueChanges;
use crate::model::due::DueItem;
use crate::model::router::Router;
use crate::model::webhook::EventType;
use crate::routers::revision::RevisionChoice;
use crate::secrets::{LocalSealer, Sealer};
use crate::sla::{CheckSubject, SlaMinute, SlaRun};
use crate::store::retry::{write_rounds, Kept};
use crate::store::DispatchPorts;
use crate::store::{Backoff, RoundError, StoreError, Turns};
use crate::types::ids::AccountId;
use crate::webhooks::{add_deliveries, Notify, SubscriptionCache};
use std::sync::Arc;
use std::time::Duration;

/// Default time a dispatch keeps retrying lost races before failing with 500: the retry
/// deadline of every write ([`crate::store::CONFLICT_DEADLINE`]).
pub const DEFAULT_DEADLINE: Duration = crate::store::CONFLICT_DEADLINE;

pub use crate::model::dispatch::DEFAULT_HISTORY_RETENTION_DAYS;

/// The engine of one warm instance.
pub struct DispatchEngine {
    store: Arc<dyn DispatchPorts>,
    clock: Arc<dyn Clock>,
    catalogues: Arc<CatalogueCache>,
    deadline: Duration,
    /// One async lock per router id: dispatches of one warm instance on one router take turns
    /// instead of racing each other in the store (a Lambda instance serves one event at a time,
    /// but the local server and a queue batch run many). Races between instances are still
    /// settled by the store's conditional write.
    turns: Turns,
    /// The CRM sync of `has_integration` routers (BEHAVIOR 7); `None` only when the HTTP client
    /// could not be built.
    crm: Option<Arc<CrmSync>>,
    /// The worker of due work: the CRM sync's attempts run on it.
    due: Arc<DueWorker>,
    /// Opens the accounts' stored CRM tokens.
    sealer: Arc<dyn Sealer>,
    /// How long history entries are kept.
    history_retention: chrono::Duration,
    /// Accounts and their teams, cached for a short TTL.
    directory: DirectoryCache,
    /// What each router's last run on this instance read after the router (its pool's members,
    /// holiday calendars), read with the router by its next run.
    hints: RouterHints,
    /// The accounts' webhook subscriptions as this instance last read them, with their version.
    subscriptions: SubscriptionCache,
    /// How long an SLA minute lasts (BEHAVIOR 14).
    sla_minute: SlaMinute,
}

/// The result of a dispatch holding an `Idempotency-Key` claim.
#[derive(Debug, Clone)]
pub struct Dispatched {
    /// What happened.
    pub outcome: Outcome,
    /// Whether the answer was stored with the write it answers (the caller stores it otherwise).
    pub answer_stored: bool,
}

/// What an SLA reassignment run did (BEHAVIOR 14; [`DispatchEngine::reassign`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Reassignment {
    /// The record went to another member; the check's entry says `reassigned` (one write).
    Assigned(Assigned),
    /// The run assigned nobody, at this check: nothing was written.
    Stopped(Skip),
    /// The record changed since the check read it: nothing was written; read it again.
    RecordMoved,
    /// The check is no longer this worker's (its lease lapsed and another took it over, or its
    /// entry is no longer `pending`): nothing was written.
    CheckLost,
}

/// How a run ended, in the router's turn.
enum Ended {
    /// A dispatch outcome (an SLA run's `Assigned` and `Skipped` too).
    Outcome(Outcome),
    /// An SLA run found the record moved ([`Reassignment::RecordMoved`]).
    RecordMoved,
    /// An SLA run's check is gone ([`Reassignment::CheckLost`]).
    CheckLost,
}

/// What a dispatch's write left to do after it, out of the router's turn.
struct Committed {
    outcome: Ended,
    /// The CRM sync's first attempt (or the `crm_error` of a request that cannot be sent).
    crm: Option<PendingSync>,
    /// Whether the `Idempotency-Key` answer was stored with the write.
    answer_stored: bool,
    /// Due items the write stored to hand on (events to deliver, ...).
    handed: Vec<DueItem>,
}

impl Committed {
    fn nothing(outcome: Outcome) -> Self {
        Self::ended(Ended::Outcome(outcome))
    }

    fn ended(outcome: Ended) -> Self {
        Self {
            outcome,
            crm: None,
            answer_stored: false,
            handed: Vec::new(),
        }
    }
}

/// The CRM work an assignment leaves for after its commit.
enum PendingSync {
    /// The first attempt, whose due item the assignment stored claimed by this process.
    Attempt(Box<(Claimed, DispatchEntry, OwnerUpdate)>),
    /// No request can be sent: the `crm_error` of the answer (the entry says `failed`).
    Refused(String),
}

/// The outcome of a dispatch run (never an SLA run's own endings).
fn outcome_of(ended: Ended) -> Result<Outcome, DomainError> {
    match ended {
        Ended::Outcome(outcome) => Ok(outcome),
        Ended::RecordMoved | Ended::CheckLost => Err(DomainError::internal(
            "a dispatch ended as an SLA reassignment",
        )),
    }
}

/// `crm_error` when this instance has no CRM client.
const NO_CRM_CLIENT: &str = "CRM request failed: the CRM client is not available";

impl DispatchEngine {
    /// An engine over `store`, retrying conflicts for [`DEFAULT_DEADLINE`], keeping history
    /// entries [`DEFAULT_HISTORY_RETENTION_DAYS`], its due work on timers of this process
    /// ([`Self::with_due`] replaces them), and no CRM client until [`Self::with_crm`] gives one
    /// (the one HTTP client of the instance is built by the caller, once): a router with
    /// `has_integration` then records `CRM request failed: the CRM client is not available`.
    pub fn new(
        store: Arc<dyn DispatchPorts>, clock: Arc<dyn Clock>, catalogues: Arc<CatalogueCache>,
    ) -> Self {
        let due = DueWorker::in_process(store.clone(), clock.clone(), DueSettings::default());
        Self {
            store,
            clock,
            catalogues,
            deadline: DEFAULT_DEADLINE,
            turns: Turns::default(),
            crm: None,
            due,
            sealer: Arc::new(LocalSealer::development()),
            history_retention: chrono::Duration::days(DEFAULT_HISTORY_RETENTION_DAYS),
            directory: DirectoryCache::default(),
            hints: RouterHints::default(),
            subscriptions: SubscriptionCache::default(),
            sla_minute: SlaMinute::default(),
        }
    }

    /// The same engine with SLA minutes of `minute` (BEHAVIOR 14: `SLA_MINUTE_SECONDS`; default
    /// 60 s).
    pub fn with_sla_minute(mut self, minute: SlaMinute) -> Self {
        self.sla_minute = minute;
        self
    }

    /// How long an SLA minute lasts.
    pub fn sla_minute(&self) -> SlaMinute {
        self.sla_minute
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn DispatchPorts> {
        &self.store
    }

    /// The same engine syncing CRMs with `crm` (registered as the job of `crm_sync` due items).
    pub fn with_crm(mut self, crm: Arc<CrmSync>) -> Self {
        self.due.register(crm.clone());
        self.crm = Some(crm);
        self
    }

    /// The same engine running its due work on `due` (the CRM sync registered on it).
    pub fn with_due(mut self, due: Arc<DueWorker>) -> Self {
        if let Some(crm) = &self.crm {
            due.register(crm.clone());
        }
        self.due = due;
        self
    }

    /// The same engine opening stored CRM tokens with `sealer` (default: the development local
    /// key).
    pub fn with_sealer(mut self, sealer: Arc<dyn Sealer>) -> Self {
        self.sealer = sealer;
        self
    }

    /// The worker of the engine's due work (queue messages and sweeps go to it).
    pub fn due(&self) -> &Arc<DueWorker> {
        &self.due
    }

    /// The same engine keeping history entries for `retention`.
    pub fn with_history_retention(mut self, retention: chrono::Duration) -> Self {
        self.history_retention = retention;
        self
    }

    /// The CRM sync (its retries arrive on the dispatch queue too).
    pub fn crm(&self) -> Option<&Arc<CrmSync>> {
        self.crm.as_ref()
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

    /// Runs one dispatch. `deduplication_id` (a queued message's: its SQS message id) makes a
    /// redelivery a no-op.
    ///
    /// Errors: 500 when the store fails or the write keeps losing races past the deadline.
    pub async fn dispatch(
        &self, context: AccountContext, request: &DispatchRequest,
        deduplication_id: Option<&MessageDeduplicationId>,
    ) -> Result<Outcome, DomainError> {
        let run = Run::dispatch(context, request, deduplication_id);
        outcome_of(self.run(run, None).await?.0)
    }

    /// Runs one dispatch of an HTTP request holding the `Idempotency-Key` `claim`
    /// (BEHAVIOR 10): an outcome that writes (an assignment, or a history entry of a run that
    /// assigned nothing) stores its 200 answer in the same atomic write (`answer_stored`); the
    /// caller stores the answer of the others, which write nothing.
    ///
    /// Errors: as [`Self::dispatch`]; 409 when the claim's lease was lost before the write.
    pub async fn dispatch_completing(
        &self, context: AccountContext, request: &DispatchRequest, claim: &IdempotencyClaim,
    ) -> Result<Dispatched, DomainError> {
        let run = Run::dispatch(context, request, None);
        let (ended, answer_stored) = self.run(run, Some(claim)).await?;
        Ok(Dispatched {
            outcome: outcome_of(ended)?,
            answer_stored,
        })
    }

    /// Runs the SLA reassignment `check` asks for (BEHAVIOR 14) on `router` (as the check read
    /// it: routers change only through provisioning, so it is not read again): this engine's one
    /// evaluation, with the current owner left out of the pool and `overwrite` ignored, `source:
    /// sla` and `reason: sla_reassignment`; its transaction also settles the check's due item and
    /// moves the check's entry from `pending` to `reassigned`. A run that assigns nobody writes
    /// nothing (no history entry, no event).
    ///
    /// Errors: as [`Self::dispatch`].
    pub async fn reassign(
        &self, check: &SlaRun, router: &Router,
    ) -> Result<Reassignment, DomainError> {
        let request = DispatchRequest {
            router_id: check.check.router_id.to_string(),
            object_id: check.record_id.clone(),
            account_id: None,
        };
        let run = Run {
            context: AccountContext::Token(check.account_id),
            request: &request,
            deduplication_id: None,
            source: DispatchSource::Sla,
            known_router: Some(router),
            writes: true,
            sla: Some(check),
            revision: None,
        };
        Ok(match self.run(run, None).await?.0 {
            Ended::Outcome(Outcome::Assigned(assigned)) => Reassignment::Assigned(assigned),
            Ended::Outcome(Outcome::Skipped(skip)) => Reassignment::Stopped(skip),
            Ended::Outcome(Outcome::AlreadyProcessed) | Ended::CheckLost => Reassignment::CheckLost,
            Ended::RecordMoved => Reassignment::RecordMoved,
        })
    }

    /// What dispatch would do now for `request` in `account_id`, and why (BEHAVIOR 9): the
    /// same evaluation as [`Self::dispatch`], writing nothing (no owner, rotation state,
    /// counters, monthly count, history entry or CRM call).
    ///
    /// Errors: 500 when the store fails.
    pub async fn explain(
        &self, account_id: AccountId, request: &DispatchRequest,
    ) -> Result<(Preview, Explanation), DomainError> {
        self.explain_revision(account_id, request, None).await
    }

    /// [`Self::explain`] of the configuration `revision` names instead of the live one
    /// (BEHAVIOR 9: the body key `revision`), whatever the router's publication state; `None`:
    /// the live revision. The draft or revision is read in the run's first round of reads.
    ///
    /// Errors: 404 `Draft not found` / `Revision not found` when the router (found in the
    /// account, not archived) has no such draft or revision; 500 when the store fails.
    pub async fn explain_revision(
        &self, account_id: AccountId, request: &DispatchRequest, revision: Option<RevisionChoice>,
    ) -> Result<(Preview, Explanation), DomainError> {
        let run = Run {
            context: AccountContext::Token(account_id),
            request,
            deduplication_id: None,
            source: DispatchSource::Api,
            known_router: None,
            writes: false,
            sla: None,
            revision,
        };
        let mut trace = Trace::default();
        let preview = match steps::plan(&self.context(), &run, &mut trace).await {
            Ok(planned) => Preview::Assign {
                user: planned.assigned.user,
                field_name: planned.assigned.field_name,
                reason: planned.assigned.reason,
            },
            Err(Stop::Skip(skip)) => Preview::Stop(skip.message()),
            Err(Stop::Failed(error)) => return Err(error),
            Err(Stop::RecordMoved) => {
                return Err(DomainError::internal("explain is not an SLA reassignment"))
            }
            Err(Stop::AlreadyProcessed) => {
                return Err(DomainError::internal("explain has no queue message"))
            }
        };
        Ok((preview, trace.explanation))
    }

    fn context(&self) -> Context<'_> {
        Context {
            store: self.store.as_ref(),
            clock: self.clock.as_ref(),
            catalogues: &self.catalogues,
            directory: &self.directory,
            hints: &self.hints,
            subscriptions: &self.subscriptions,
            sealer: self.sealer.as_ref(),
            history_retention: self.history_retention,
            sla_minute: self.sla_minute,
        }
    }

    async fn run(
        &self, run: Run<'_>, claim: Option<&IdempotencyClaim>,
    ) -> Result<(Ended, bool), DomainError> {
        let request = run.request;
        // A redelivered queue message (its marker) is found in the run's first round of reads.
        let outcome = {
            let _turn = self.turns.take(request.router_id.as_str()).await;
            self.dispatch_in_turn(&run, claim).await
        };
        // BEHAVIOR 7: the first CRM attempt has 3 s in all, counted from the commit.
        let crm_deadline = std::time::Instant::now() + crate::crm::sync::FIRST_ATTEMPT_BOUND;
        let Committed {
            mut outcome,
            crm: pending,
            answer_stored,
            handed,
        } = outcome?;
        // One SendMessageBatch per 10 items (the events' deliveries), not one request each.
        self.due.hand_off_all(&handed).await;
        // The CRM is called after the turn: a slow CRM never holds up the router's rotation.
        if let (Ended::Outcome(Outcome::Assigned(assigned)), Some(pending)) =
            (&mut outcome, pending)
        {
            let failed_before = matches!(pending, PendingSync::Refused(_));
            assigned.crm = match pending {
                PendingSync::Refused(error) => Some(error),
                PendingSync::Attempt(attempt) => {
                    let (claimed, entry, update) = *attempt;
                    match &self.crm {
                        Some(crm) => {
                            let (result, ran) = crm
                                .first_attempt(&claimed, &entry, &update, crm_deadline)
                                .await;
                            self.due.follow_up(&claimed.item.id, &ran).await;
                            match result {
                                SyncResult::Synced => None,
                                SyncResult::Failed(error) => Some(error),
                            }
                        }
                        None => Some(NO_CRM_CLIENT.into()),
                    }
                }
            };
            // The transaction stored the answer known then; a sync failure found after it is
            // part of the answer a replay must repeat (BEHAVIOR 10).
            if let (Some(claim), Some(_), false) = (claim, &assigned.crm, failed_before) {
                let answer = Outcome::Assigned(assigned.clone()).answer();
                let completion = IdempotencyCompletion {
                    claim: claim.clone(),
                    response: StoredResponse::json(200, &answer)?,
                };
                if let Err(error) = self.store.amend_idempotency_response(&completion).await {
                    tracing::error!(error = %crate::error::ErrorChain(&error), "Idempotency-Key answer not amended");
                }
            }
        }
        Ok((outcome, answer_stored))
    }

    async fn dispatch_in_turn(
        &self, run: &Run<'_>, claim: Option<&IdempotencyClaim>,
    ) -> Result<Committed, DomainError> {
        let cx = self.context();
        let deadline = self.deadline_of(run);
        let mut backoff = Backoff::until(deadline);
        // A lost race re-reads everything the race can have changed: the record, members,
        // rotation state, count, and the router too (a publish moves it to a new revision, and
        // the run is then evaluated again on that one: BEHAVIOR 15). The router is read in the
        // first round with the others, so a retry costs no extra round.
        let known_router: Option<Router> = run.known_router.cloned();
        let cx = &cx;
        let committed = write_rounds(&mut backoff, known_router, |Kept(known_router, _), _| {
            Box::pin(async move {
                let mut trace = Trace::default();
                let known = known_router.take();
                let this_run = Run {
                    known_router: known.as_ref(),
                    ..*run
                };
                let planned = steps::plan(cx, &this_run, &mut trace).await;
                let mut planned = match planned {
                    Ok(planned) => planned,
                    Err(Stop::Skip(skip)) if run.sla.is_some() => {
                        // BEHAVIOR 14: a reassignment that assigns nobody appends nothing.
                        return Ok(Committed::nothing(Outcome::Skipped(skip)));
                    }
                    Err(Stop::RecordMoved) => return Ok(Committed::ended(Ended::RecordMoved)),
                    Err(Stop::AlreadyProcessed) => {
                        return Ok(Committed::nothing(Outcome::AlreadyProcessed))
                    }
                    Err(Stop::Skip(skip)) => {
                        let Some(router) = &trace.router else {
                            // Nothing written (BEHAVIOR 8): the caller stores the answer.
                            return Ok(Committed::nothing(Outcome::Skipped(skip)));
                        };
                        let entry = steps::stop_entry(cx, run, router, skip, self.clock.now());
                        // The entry, its events and the `Idempotency-Key` answer: one atomic write.
                        let completion = match claim {
                            Some(claim) => Some(IdempotencyCompletion {
                                claim: claim.clone(),
                                response: StoredResponse::json(
                                    200,
                                    &Outcome::Skipped(skip).answer(),
                                )?,
                            }),
                            None => None,
                        };
                        let mut due = DueChanges::none();
                        self.add_events(
                            &mut due,
                            &trace.subscriptions,
                            EventType::DispatchUnassigned,
                            &entry,
                            None,
                        )?;
                        // BEHAVIOR 18: the entry keeps what this run found, as explain shows it.
                        let snapshot = trace.explanation.snapshot();
                        check_stored_sizes(&entry, Some(&snapshot), completion.as_ref())?;
                        match self
                            .store
                            .record_dispatch(
                                &entry,
                                Some(&snapshot),
                                run.deduplication_id,
                                completion.as_ref(),
                                &due,
                            )
                            .await
                        {
                            Ok(()) => {}
                            Err(StoreError::AlreadyApplied) => {
                                return Ok(Committed::nothing(Outcome::AlreadyProcessed))
                            }
                            // Not retried: an entry of a run that stopped has no race to lose.
                            Err(e) => return Err(DomainError::from(e).into()),
                        }
                        return Ok(Committed {
                            outcome: Ended::Outcome(Outcome::Skipped(skip)),
                            crm: None,
                            answer_stored: completion.is_some(),
                            handed: due.put,
                        });
                    }
                    Err(Stop::Failed(error)) => return Err(error.into()),
                };
                let first_attempt = self.prepare_crm(&mut planned);
                let entry = planned.write.entry.clone();
                let notify = planned.notify;
                let mut due = std::mem::take(&mut planned.write.due);
                if let Some((due_at, subject)) = &planned.sla_check {
                    // BEHAVIOR 14: the check is stored with the assignment that starts it.
                    due.put.push(self.due.schedule(
                        CheckSubject::due_id(&subject.entry),
                        subject.to_value(),
                        *due_at,
                    ));
                }
                self.add_events(
                    &mut due,
                    &trace.subscriptions,
                    EventType::AssignmentCreated,
                    &entry,
                    Some(&notify),
                )?;
                if entry
                    .crm_sync
                    .as_ref()
                    .is_some_and(|s| s.status == CrmSyncStatus::Failed)
                {
                    // Final at commit (no request could be sent): its event too.
                    self.add_events(
                        &mut due,
                        &trace.subscriptions,
                        EventType::CrmSyncFailed,
                        &entry,
                        None,
                    )?;
                }
                planned.write.due = due;
                // BEHAVIOR 18: the entry keeps what this run found, as explain shows it.
                planned.write.snapshot = Some(trace.explanation.snapshot());
                if let Some(PendingSync::Refused(error)) = &first_attempt {
                    // Known before the commit: part of the answer stored with it (BEHAVIOR 10: a
                    // replay repeats it).
                    planned.assigned.crm = Some(error.clone());
                }
                if let Some(claim) = claim {
                    let answer = Outcome::Assigned(planned.assigned.clone()).answer();
                    planned.write.completion = Some(IdempotencyCompletion {
                        claim: claim.clone(),
                        response: StoredResponse::json(200, &answer)?,
                    });
                }
                check_stored_sizes(
                    &planned.write.entry,
                    planned.write.snapshot.as_ref(),
                    planned.write.completion.as_ref(),
                )?;
                match self.store.commit_assignment(&planned.write).await {
                    Ok(()) => {
                        // Leased items run here (the CRM's first attempt); the others are handed on.
                        let handed = planned
                            .write
                            .due
                            .put
                            .iter()
                            .filter(|item| item.lease.is_none())
                            .cloned()
                            .collect();
                        Ok(Committed {
                            outcome: Ended::Outcome(Outcome::Assigned(planned.assigned)),
                            crm: first_attempt,
                            answer_stored: planned.write.completion.is_some(),
                            handed,
                        })
                    }
                    Err(StoreError::AlreadyApplied) => {
                        Ok(Committed::nothing(Outcome::AlreadyProcessed))
                    }
                    Err(StoreError::LeaseLost) if run.sla.is_some() => {
                        Ok(Committed::ended(Ended::CheckLost))
                    }
                    Err(e) => Err(e.into()),
                }
            })
        })
        .await;
        match committed {
            Ok(committed) => Ok(committed),
            Err(RoundError::Store(StoreError::Conflict)) => Err(DomainError::internal(format!(
                "dispatch lost {} races in a row and gave up after {deadline:?}",
                backoff.lost()
            ))),
            Err(error) => Err(error.answer()),
        }
    }

    /// How long `run` retries lost races: [`Self::deadline`] for a dispatch (a client waits for
    /// its answer); for an SLA reassignment, a due item's job that nobody waits for, half the
    /// due-work lease when that is longer, so that the reassignments of a router's many checks
    /// falling due together take turns within one run each instead of giving up after a few
    /// seconds and waiting out the item's growing release delays (measured with 20 checks of
    /// one router and two workers). Half the lease leaves the run time to commit before its claim
    /// lapses.
    fn deadline_of(&self, run: &Run<'_>) -> Duration {
        match run.sla {
            Some(_) => self.deadline.max(self.due.settings().lease / 2),
            None => self.deadline,
        }
    }

    /// The CRM work of a planned assignment: for a request to send, its due item claimed by
    /// this process goes into the assignment's transaction (BEHAVIOR 7: `pending` until the
    /// first attempt is answered; a process that dies before leaves it to the sweeper).
    fn prepare_crm(&self, planned: &mut steps::Planned) -> Option<PendingSync> {
        let prepared = planned.crm.clone()?;
        let update = match (prepared, &self.crm) {
            (Err(error), _) => return Some(PendingSync::Refused(error)),
            (Ok(_), None) => {
                let refused = Err(NO_CRM_CLIENT.to_string());
                planned.write.entry.crm_sync = Some(CrmSync::initial_state(&refused));
                return Some(PendingSync::Refused(NO_CRM_CLIENT.into()));
            }
            (Ok(update), Some(_)) => update,
        };
        let key = planned.write.entry.key();
        let claimed = self
            .due
            .claimed_now(CrmSync::due_id(&key), CrmSync::due_subject(&key));
        planned.write.due.put.push(claimed.item.clone());
        let entry = planned.write.entry.clone();
        Some(PendingSync::Attempt(Box::new((claimed, entry, update))))
    }

    /// The deliveries of an event of `event_type` about `entry` to the account's subscriptions
    /// that receive it, added to the write's `due` changes (BEHAVIOR 13: made in the same
    /// transaction as the entry).
    fn add_events(
        &self, due: &mut DueChanges, subscriptions: &[crate::model::webhook::WebhookSubscription],
        event_type: EventType, entry: &DispatchEntry, notify: Option<&Notify>,
    ) -> Result<(), DomainError> {
        let schedule = |id, subject, due_at| self.due.schedule(id, subject, due_at);
        add_deliveries(
            due,
            subscriptions,
            event_type,
            entry,
            notify,
            self.clock.now(),
            &schedule,
        )
        .map_err(DomainError::internal)?;
        Ok(())
    }
}

/// The 400 of a dispatch whose history entry or stored answer would pass the size rule.
pub const HISTORY_ENTRY_TOO_LARGE: &str = "History entry too large";

/// BEHAVIOR 12: a history entry, its decision snapshot (BEHAVIOR 18) and the stored answer of its
/// `Idempotency-Key` request within the size rule of every stored item
/// ([`crate::store::size::check_write`]) before they are written, on either store. The entry's
/// fields are bounded (an `object_id` of 256 characters, a previous owner of at most a record
/// value's 65,536 characters) and the snapshot is fitted when it is made
/// ([`crate::model::dispatch::DecisionSnapshot::new`]), so this guards their future changes.
///
/// Errors: 400 `History entry too large`; nothing is written.
fn check_stored_sizes(
    entry: &DispatchEntry, snapshot: Option<&crate::model::dispatch::DecisionSnapshot>,
    completion: Option<&IdempotencyCompletion>,
) -> Result<(), DomainError> {
    let too_large = |_| DomainError::bad_request(HISTORY_ENTRY_TOO_LARGE);
    crate::store::size::check_write(entry).map_err(too_large)?;
    if let Some(snapshot) = snapshot {
        let item = crate::model::dispatch::SnapshotOf { entry, snapshot };
        crate::store::size::check_write(&item).map_err(too_large)?;
    }
    if let Some(completion) = completion {
        crate::store::size::check_write(completion).map_err(too_large)?;
    }
    Ok(())
}
