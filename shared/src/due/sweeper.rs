//! The sweeper of due work ([`DueWorker::sweep`], [`DueWorker::sweep_all`]): finds the items
//! whose resume time has passed (a lost hand-off, a crash, an item due beyond the hand-off's
//! reach), moves each one's resume time with a conditional write (of racing sweepers one wins)
//! and hands it on again.

use super::message::DueMessage;
use super::worker::DueWorker;
use crate::error::{DomainError, ErrorChain};
use crate::model::due::DueKind;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use strum::IntoEnumIterator;

/// Items the sweeper hands on concurrently.
const SWEEP_CONCURRENCY: usize = 16;

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

impl DueWorker {
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
