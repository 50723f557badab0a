//! The job of `sla_check` due items (BEHAVIOR 14).

use super::check::{verdict, CheckSubject, SlaRun, Verdict};
use crate::dispatch::engine::{DispatchEngine, Reassignment};
use crate::dispatch::outcome::Assigned;
use crate::dispatch::outcome::Skip;
use crate::due::{Claimed, Commit, DueJob, Ran};
use crate::error::DomainError;
use crate::model::dispatch::{DispatchEntry, DispatchEntryKey};
use crate::model::due::{DueChanges, DueKind};
use crate::model::sla::SlaStatus;
use crate::store::SlaPorts;
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
    store: Arc<dyn SlaPorts>,
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
    /// settlement, in one write, through the mechanism's commit ([`Claimed::commit`]): a write
    /// that conflicts is made again on a fresh read of the entry; a check that is no longer
    /// pending (or an entry that is gone) ends the item.
    async fn end(
        &self, claimed: &Claimed, entry: &DispatchEntry, status: SlaStatus,
    ) -> Result<Ran, DomainError> {
        let label = label_of(status);
        let key = entry.key();
        claimed
            .commit(|round| {
                let key = key.clone();
                async move {
                    let entry = match round {
                        0 => entry.clone(),
                        _ => match self.pending_entry(&key).await? {
                            Some(fresh) => fresh,
                            None => return Ok(Commit::SubjectGone),
                        },
                    };
                    let done = claimed.done();
                    self.store
                        .end_sla_check(&key, status, &DueChanges::settling(done.clone()))
                        .await?;
                    log(&entry, label, None);
                    Ok(Commit::stored(label, done))
                }
            })
            .await
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
                return claimed.drop_item().await;
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
                    log(&entry, "reassigned", Some(&assigned));
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

/// Logs a check's end. Members are named by id, never by e-mail (the entry's id leads to the
/// owner in the history, for those allowed to read it).
fn log(entry: &DispatchEntry, status: &str, assigned: Option<&Assigned>) {
    tracing::info!(
        entry_id = %entry.id,
        router_id = %entry.router_id,
        object_id = %entry.object_id,
        status,
        owner_member_id = assigned.and_then(|a| a.previous_member_id).map(|id| id.to_string()),
        reassigned_to_member_id = assigned.map(|a| a.member_id.to_string()),
        "SLA check"
    );
}
