//! The conflict and failure policy of due work (`docs/design.md`, "Work that
//! happens later"), on both adapters: a job's commit that conflicts is run again on fresh
//! reads, an item whose commit keeps conflicting stays due without an attempt recorded, only a
//! subject that is gone ends an item, and a job that keeps failing is parked after a bounded
//! number of runs, kept for inspection.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;
use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use common::Backend;
use shared::clock::{Clock, FixedClock};
use shared::due::{
    Claimed, Commit, DueJob, DueMessage, DueSettings, DueWorker, Handoff, Ran, RunOutcome,
};
use shared::error::{BoxError, DomainError};
use shared::model::due::{DueChanges, DueId, DueItem, DueKind};
use shared::store::{Store, StoreError};
use shared::types::{AccountId, RouterId};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

shared::on_both_stores!(
    a_commit_that_conflicts_is_made_again_on_fresh_reads,
    an_item_whose_commit_keeps_conflicting_stays_due_without_an_attempt,
    a_gone_subject_ends_the_item_and_a_lost_lease_changes_nothing,
    a_job_that_keeps_failing_is_parked_after_ten_runs_and_kept_for_inspection,
    a_run_that_makes_progress_starts_the_count_of_runs_again,
);

/// What the test job does in each commit round, in order (the last one repeats).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Round {
    Conflict,
    Settle,
    Again,
    Gone,
    Fail,
}

struct Scripted {
    script: Vec<Round>,
    rounds: AtomicU32,
    store: Arc<dyn Store>,
}

#[async_trait]
impl DueJob for Scripted {
    fn kind(&self) -> DueKind {
        DueKind::CrmSync
    }

    async fn run(&self, claimed: &Claimed) -> Result<Ran, DomainError> {
        claimed
            .commit(|_| {
                let n = self.rounds.fetch_add(1, Ordering::SeqCst) as usize;
                let step = self.script[n.min(self.script.len() - 1)];
                async move {
                    let settlement = match step {
                        Round::Conflict => return Err(StoreError::Conflict.into()),
                        Round::Gone => return Ok(Commit::SubjectGone),
                        Round::Fail => return Err(DomainError::internal("the job broke").into()),
                        Round::Settle => claimed.done(),
                        Round::Again => claimed.again(claimed.claimed_at + Duration::seconds(30)),
                    };
                    // The job's one write: here the settlement alone.
                    self.store.settle_due(&settlement).await?;
                    let label = if step == Round::Settle {
                        "settled"
                    } else {
                        "again"
                    };
                    Ok(Commit::stored(label, settlement))
                }
            })
            .await
    }
}

/// Hand-offs kept in a list (nothing runs by itself).
#[derive(Default)]
struct Kept(Mutex<Vec<DueMessage>>);

#[async_trait]
impl Handoff for Kept {
    async fn hand_off(&self, message: &DueMessage) -> Result<(), BoxError> {
        self.0.lock().unwrap().push(message.clone());
        Ok(())
    }
    fn grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs(2)
    }
    fn reach(&self) -> Option<std::time::Duration> {
        None
    }
}

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 26, 9, 0, 0).unwrap()
}

struct Scene {
    store: Arc<dyn Store>,
    clock: Arc<FixedClock>,
    worker: Arc<DueWorker>,
    id: DueId,
}

/// A worker with a job following `script` registered and one item of its kind due now, stored
/// with a history entry (the one write that puts due items by themselves).
async fn scene(backend: Backend, script: &[Round]) -> (Scene, Arc<Scripted>) {
    let store = backend.store().await;
    let job = Arc::new(Scripted {
        script: script.to_vec(),
        rounds: AtomicU32::new(0),
        store: store.clone(),
    });
    let clock = Arc::new(FixedClock::new(base()));
    let worker = DueWorker::new(
        store.clone(),
        clock.clone(),
        DueSettings {
            lease: std::time::Duration::from_secs(60),
        },
        Arc::new(Kept::default()),
    );
    worker.register(job.clone());
    let id = DueId::new(DueKind::CrmSync, uuid::Uuid::now_v7().to_string());
    let entry = shared::model::DispatchEntry::unassigned(
        AccountId::from(uuid::Uuid::new_v4()),
        RouterId::from(uuid::Uuid::new_v4()),
        shared::model::ObjectType::Contacts,
        "gone".into(),
        "Trigger did not match".into(),
        shared::model::DispatchSource::Api,
        base(),
    );
    let item = DueItem::new(id.clone(), serde_json::json!({}), base(), base());
    store
        .record_dispatch(
            &entry,
            None,
            None,
            None,
            &DueChanges {
                put: vec![item],
                ..DueChanges::default()
            },
        )
        .await
        .unwrap();
    let scene = Scene {
        store,
        clock,
        worker,
        id,
    };
    (scene, job)
}

impl Scene {
    async fn item(&self) -> Option<DueItem> {
        self.store.get_due(&self.id).await.unwrap()
    }

    async fn run(&self, attempt: u32) -> RunOutcome {
        self.worker.run(&self.id, attempt).await.unwrap()
    }
}

async fn a_commit_that_conflicts_is_made_again_on_fresh_reads(backend: Backend) {
    let (s, job) = scene(backend, &[Round::Conflict, Round::Conflict, Round::Settle]).await;
    let RunOutcome::Ran(ran) = s.run(0).await else {
        panic!("not run")
    };
    assert_eq!(ran.outcome, "settled");
    assert_eq!(
        job.rounds.load(Ordering::SeqCst),
        3,
        "two conflicts, then the write"
    );
    assert_eq!(s.item().await, None, "settled: the item is gone");
}

async fn an_item_whose_commit_keeps_conflicting_stays_due_without_an_attempt(backend: Backend) {
    let (s, job) = scene(backend, &[Round::Conflict]).await;
    let started = std::time::Instant::now();
    let RunOutcome::Ran(ran) = s.run(0).await else {
        panic!("not run")
    };
    assert_eq!(ran.outcome, "conflict");
    // Run again until the commit deadline (the retry deadline of every write, 5 s, under half
    // of this lease), then left due.
    let rounds = job.rounds.load(Ordering::SeqCst);
    assert!(rounds >= 5, "{rounds} rounds");
    assert!(started.elapsed() >= shared::store::CONFLICT_DEADLINE);
    let item = s.item().await.expect("the item stays");
    assert_eq!(item.attempt, 0, "no attempt recorded");
    assert_eq!(item.lease, None, "released");
    assert_eq!(item.runs, 1);
    assert!(item.last_error.as_deref().unwrap().contains("conflicted"));
    assert!(
        item.due_at > base(),
        "due again a moment later: {}",
        item.due_at
    );
    // It is handed on for the same attempt, and runs again then.
    let next = ran.next.expect("handed on again");
    assert_eq!((next.attempt, next.due_at), (0, item.due_at));
    s.clock.set(item.due_at);
    assert!(matches!(s.run(0).await, RunOutcome::Ran(_)));
    assert_eq!(s.item().await.unwrap().runs, 2);
}

async fn a_gone_subject_ends_the_item_and_a_lost_lease_changes_nothing(backend: Backend) {
    let (s, _) = scene(backend, &[Round::Gone]).await;
    let RunOutcome::Ran(ran) = s.run(0).await else {
        panic!("not run")
    };
    assert_eq!(ran.outcome, "dropped");
    assert_eq!(s.item().await, None);

    // A worker whose lease lapsed and was taken over settles nothing.
    let (s, _) = scene(backend, &[Round::Settle]).await;
    let lease = shared::model::due::Lease::new(base(), std::time::Duration::from_secs(1));
    let stale = s.store.claim_due(&s.id, 0, &lease, base()).await.unwrap();
    assert!(stale.is_some());
    let later = base() + Duration::seconds(5);
    s.clock.set(later);
    let RunOutcome::Ran(_) = s.run(0).await else {
        panic!("the lapsed lease lets another worker claim it")
    };
    assert_eq!(s.item().await, None, "the new holder settled it");
    let gone = s
        .store
        .settle_due(&shared::model::due::Settlement {
            id: s.id.clone(),
            lease_id: lease.id.clone(),
            next: None,
        })
        .await;
    assert!(matches!(gone, Err(StoreError::LeaseLost)), "{gone:?}");
}

async fn a_job_that_keeps_failing_is_parked_after_ten_runs_and_kept_for_inspection(
    backend: Backend,
) {
    let (s, job) = scene(backend, &[Round::Fail]).await;
    for run in 1..=DueItem::MAX_RUNS {
        let RunOutcome::Ran(ran) = s.run(0).await else {
            panic!("run {run} not made")
        };
        assert_eq!(ran.outcome, "error");
        let item = s.item().await.unwrap();
        assert_eq!((item.runs, item.attempt), (run, 0));
        assert_eq!(item.parked_at, None);
        assert!(item
            .last_error
            .as_deref()
            .unwrap()
            .contains("the job broke"));
        // Released for a while that doubles with the runs (1 s, 2 s, 4 s, ... up to the lease).
        let wait = item.due_at - s.clock.now();
        let expected = 1i64 << (run - 1).min(16);
        assert_eq!(wait.num_seconds(), expected.min(60), "run {run}");
        s.clock.set(item.due_at);
    }
    assert_eq!(job.rounds.load(Ordering::SeqCst), DueItem::MAX_RUNS);
    // The eleventh claim parks it instead of running the job again.
    let RunOutcome::Ran(ran) = s.run(0).await else {
        panic!("not claimed")
    };
    assert_eq!(ran.outcome, "parked");
    assert_eq!(job.rounds.load(Ordering::SeqCst), DueItem::MAX_RUNS);
    let parked = s.item().await.expect("kept for inspection");
    assert_eq!(parked.parked_at, Some(s.clock.now()));
    assert_eq!(parked.lease, None);
    assert!(parked
        .last_error
        .as_deref()
        .unwrap()
        .contains("the job broke"));
    // Listed for operators, out of the sweeper's index, claimed by nobody.
    let listed = s.store.parked_due_items(10).await.unwrap();
    assert_eq!(listed.iter().map(|i| &i.id).collect::<Vec<_>>(), [&s.id]);
    let far = s.clock.now() + Duration::days(30);
    let overdue = s.store.overdue_due_items(far, 100).await.unwrap();
    assert!(overdue.iter().all(|i| i.id != s.id), "{overdue:?}");
    assert!(matches!(s.run(0).await, RunOutcome::NotClaimed));
}

async fn a_run_that_makes_progress_starts_the_count_of_runs_again(backend: Backend) {
    let (s, _) = scene(backend, &[Round::Fail, Round::Fail, Round::Again]).await;
    for _ in 0..2 {
        s.run(0).await;
        s.clock.set(s.item().await.unwrap().due_at);
    }
    assert_eq!(s.item().await.unwrap().runs, 2);
    let RunOutcome::Ran(ran) = s.run(0).await else {
        panic!("not run")
    };
    assert_eq!(ran.outcome, "again");
    let item = s.item().await.unwrap();
    assert_eq!((item.attempt, item.runs, item.last_error), (1, 0, None));
}
