//! The job of `sla_check` due items (BEHAVIOR 14).

use super::check::{verdict, CheckSubject, SlaRun, Verdict};
use crate::dispatch::engine::{DispatchEngine, Reassignment};
use crate::dispatch::outcome::Skip;
use crate::due::{Claimed, DueJob, Ran};
use crate::error::DomainError;
use crate::model::dispatch::{DispatchEntry, DispatchEntryKey};
use crate::model::due::{DueChanges, DueKind};
use crate::model::sla::SlaStatus;
use crate::store::{Store, StoreError};
use async_trait::async_trait;
use std::sync::{Arc, Weak};

/// Rounds of one check when the record keeps changing between the verdict and the
/// reassignment's read of it.
const MAX_ROUNDS: usize = 3;

/// Runs SLA checks: reads the check's entry, its router and record, decides ([`verdict`]) and
/// ends the check, or has the dispatch engine reassign the record ([`DispatchEngine::reassign`]).
#[derive(derive_more::Debug)]
pub struct SlaChecks {
    /// The engine that reassigns (held weakly: the engine's worker holds this job).
    #[debug(skip)]
    engine: Weak<DispatchEngine>,
    #[debug(skip)]
    store: Arc<dyn Store>,
}

impl SlaChecks {
    /// Registers the job of `sla_check` due items on the due-work worker of `engine`, which
    /// reassigns through `engine` (replacing a job registered before).
    pub fn register(engine: &Arc<DispatchEngine>) {
        engine.due().register(Arc::new(Self {
            engine: Arc::downgrade(engine),
            store: engine.store().clone(),
        }));
    }

    /// Ends the check of `entry` with `status` (`met`, `cancelled`, `expired`) and the item's
    /// settlement, in one write. A check that is no longer pending drops the item; a lease lost
    /// to another worker does nothing.
    async fn end(
        &self, claimed: &Claimed, entry: &DispatchEntry, status: SlaStatus,
    ) -> Result<Ran, DomainError> {
        let done = claimed.done();
        let label = label_of(status);
        match self
            .store
            .end_sla_check(&entry.key(), status, &DueChanges::settling(done.clone()))
            .await
        {
            Ok(()) => {
                log(entry, label, None);
                Ok(Ran::settled(label, &done))
            }
            Err(StoreError::Conflict) => self.drop_item(claimed).await,
            Err(StoreError::LeaseLost) => Ok(Ran::nothing("lease_lost")),
            Err(e) => Err(e.into()),
        }
    }

    /// Ends an item whose check is over (or whose entry is gone) without writing anything else.
    async fn drop_item(&self, claimed: &Claimed) -> Result<Ran, DomainError> {
        let done = claimed.done();
        match self.store.settle_due(&done).await {
            Ok(()) => Ok(Ran::settled("dropped", &done)),
            Err(StoreError::LeaseLost) => Ok(Ran::nothing("lease_lost")),
            Err(e) => Err(e.into()),
        }
    }

    /// The entry of the check, when its check is still pending.
    async fn pending_entry(
        &self, key: &DispatchEntryKey,
    ) -> Result<Option<DispatchEntry>, DomainError> {
        Ok(self.store.get_dispatch(key).await?.filter(|e| {
            e.sla
                .as_ref()
                .is_some_and(|s| s.status == SlaStatus::Pending)
        }))
    }
}

#[async_trait]
impl DueJob for SlaChecks {
    fn kind(&self) -> DueKind {
        DueKind::SlaCheck
    }

    /// One check: `met` when the record was worked (tested first); `cancelled` when the record
    /// or router is archived, the router unpublished, or the owner no longer the assigned
    /// member; otherwise the reassignment, which ends the check `reassigned` in its own
    /// transaction, or `expired` when it assigns nobody (BEHAVIOR 14).
    async fn run(&self, claimed: &Claimed) -> Result<Ran, DomainError> {
        let subject: CheckSubject = claimed.subject()?;
        for _ in 0..MAX_ROUNDS {
            let Some(entry) = self.pending_entry(&subject.entry).await? else {
                return self.drop_item(claimed).await;
            };
            let record_id = entry.record_id();
            let (router, record) = tokio::try_join!(
                self.store.get_router(entry.account_id, entry.router_id),
                async {
                    match record_id {
                        Some(id) => {
                            self.store
                                .get_record(entry.account_id, entry.object_type, id)
                                .await
                        }
                        None => Ok(None),
                    }
                }
            )?;
            let decided = verdict(
                &entry,
                router.as_ref(),
                record.as_ref(),
                subject.started.as_deref(),
            );
            let (Verdict::Reassign, Some(router), Some(record), Some(owner)) =
                (decided, router, record, entry.user.clone())
            else {
                let status = match decided {
                    Verdict::Met => SlaStatus::Met,
                    _ => SlaStatus::Cancelled,
                };
                return self.end(claimed, &entry, status).await;
            };
            let engine = self.engine.upgrade().ok_or_else(|| {
                DomainError::internal("the dispatch engine of this process is gone")
            })?;
            let run = SlaRun {
                account_id: entry.account_id,
                check: entry.key(),
                record_id: record.id.to_string(),
                owner,
                record_version: record.version,
                reassignments: subject.reassignments,
                settle: claimed.done(),
            };
            match engine.reassign(&run, &router).await? {
                Reassignment::Assigned(assigned) => {
                    log(&entry, "reassigned", Some(&assigned.user));
                    return Ok(Ran::settled("reassigned", &run.settle));
                }
                Reassignment::Stopped(skip) => {
                    // The causes of `cancelled` found by the run itself (a write between the
                    // verdict and the run); any other run that assigns nobody is `expired`.
                    let status = match skip {
                        Skip::RouterNotFound | Skip::RouterUnpublished | Skip::ObjectNotFound => {
                            SlaStatus::Cancelled
                        }
                        _ => SlaStatus::Expired,
                    };
                    return self.end(claimed, &entry, status).await;
                }
                Reassignment::RecordMoved => continue,
                Reassignment::CheckLost => return Ok(Ran::nothing("lease_lost")),
            }
        }
        Err(DomainError::internal(
            "the record kept changing while its SLA check ran; the sweeper runs it again",
        ))
    }
}

/// The label of a final status, as in the history.
fn label_of(status: SlaStatus) -> &'static str {
    match status {
        SlaStatus::Pending => "pending",
        SlaStatus::Met => "met",
        SlaStatus::Cancelled => "cancelled",
        SlaStatus::Reassigned => "reassigned",
        SlaStatus::Expired => "expired",
    }
}

fn log(entry: &DispatchEntry, status: &str, to: Option<&str>) {
    tracing::info!(
        entry_id = %entry.id,
        router_id = %entry.router_id,
        object_id = %entry.object_id,
        owner = entry.user.as_deref().unwrap_or(""),
        status,
        reassigned_to = to.unwrap_or(""),
        "SLA check"
    );
}
