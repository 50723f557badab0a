//! The store contract of due work (`docs/design.md`, "Work that happens later") on both adapters:
//! claims with an attempt number and a lease, settlement on the lease, the sweeper's index and its
//! re-arming, and due items written only with the transaction that causes them.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;
use chrono::{DateTime, Duration, TimeZone, Utc};
use common::Backend;
use shared::model::due::{DueChanges, DueId, DueItem, DueKind, Lease, NextAttempt, Settlement};
use shared::model::{
    AssignmentReason, CrmSyncState, CrmSyncStatus, DispatchEntry, DispatchSource,
    MessageDeduplicationId, ObjectType,
};
use shared::store::{Store, StoreError};
use shared::types::{AccountId, Email, RouterId};
use std::sync::Arc;
use uuid::Uuid;

shared::on_both_stores!(
    an_item_is_claimed_once_per_attempt_and_again_only_after_its_lease_lapses,
    fifty_concurrent_claims_of_one_item_let_exactly_one_hold_it,
    a_claim_retried_after_it_applied_still_holds_the_item,
    settling_on_the_lease_removes_the_item_or_moves_it_to_its_next_attempt,
    a_settlement_without_the_lease_is_refused_and_writes_nothing,
    the_overdue_items_come_oldest_first_up_to_the_limit,
    of_racing_sweepers_exactly_one_rearms_an_item,
    a_history_entry_and_its_due_item_are_written_together,
    a_crm_sync_state_and_its_settlement_are_written_together_or_not_at_all,
    a_sweep_whose_rounds_outlast_the_grace_hands_each_item_on_once,
);

/// Hand-offs that take a while: each moves the clock on by `step` (longer than the grace).
struct Slow {
    clock: Arc<shared::clock::FixedClock>,
    step: Duration,
    handed: std::sync::Mutex<Vec<DueId>>,
}

#[async_trait::async_trait]
impl shared::due::Handoff for Slow {
    async fn hand_off(
        &self, message: &shared::due::DueMessage,
    ) -> Result<(), shared::error::BoxError> {
        use shared::clock::Clock;
        self.handed.lock().unwrap().push(message.id.clone());
        self.clock.set(self.clock.now() + self.step);
        Ok(())
    }
    fn grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs(2)
    }
    fn reach(&self) -> Option<std::time::Duration> {
        None
    }
}

/// A sweep of a backlog takes rounds; items re-armed by an early round (resume time moved by
/// the 2 s grace) are not found again by a later round that starts after the grace has passed
/// (SLA checks due at once by the thousand: the `sla_sweep` benchmark found it).
async fn a_sweep_whose_rounds_outlast_the_grace_hands_each_item_on_once(backend: Backend) {
    let store = backend.store().await;
    let now = base();
    let items: Vec<DueItem> = (0..6)
        .map(|n| {
            let at = now - Duration::seconds(60 - n);
            item(DueKind::SlaCheck, &format!("backlog-{n}"), at, at)
        })
        .collect();
    put(&store, items).await;
    let clock = Arc::new(shared::clock::FixedClock::new(now));
    let slow = Arc::new(Slow {
        clock: clock.clone(),
        step: Duration::seconds(3),
        handed: std::sync::Mutex::new(Vec::new()),
    });
    let worker = shared::due::DueWorker::new(
        store.clone(),
        clock.clone(),
        shared::due::DueSettings::default(),
        slow.clone(),
    );
    let report = worker
        .sweep_all(2, std::time::Duration::from_secs(5))
        .await
        .unwrap();
    let handed = slow.handed.lock().unwrap().clone();
    let mut unique = handed.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(handed.len(), 6, "each item handed on once");
    assert_eq!(unique.len(), 6);
    assert_eq!((report.found, report.handed_on), (6, 6));
}

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 24, 9, 0, 0).unwrap()
}

fn item(kind: DueKind, subject: &str, due_at: DateTime<Utc>, resume_at: DateTime<Utc>) -> DueItem {
    DueItem::new(
        DueId::new(kind, subject),
        serde_json::json!({"entry": subject}),
        due_at,
        resume_at,
    )
}

fn lease(now: DateTime<Utc>, seconds: u64) -> Lease {
    Lease::new(now, std::time::Duration::from_secs(seconds))
}

/// Stores `items` through the one write that puts due items without anything else of its own:
/// a history entry of a run that assigned nothing.
async fn put(store: &Arc<dyn Store>, items: Vec<DueItem>) -> DispatchEntry {
    let entry = entry(None);
    store
        .record_dispatch(
            &entry,
            None,
            None,
            None,
            &DueChanges {
                put: items,
                ..DueChanges::default()
            },
        )
        .await
        .unwrap();
    entry
}

fn entry(crm_sync: Option<CrmSyncState>) -> DispatchEntry {
    let at = base();
    DispatchEntry {
        id: Uuid::now_v7(),
        account_id: AccountId::from(Uuid::new_v4()),
        router_id: RouterId::from(Uuid::new_v4()),
        router_revision: 1,
        object_type: ObjectType::Contacts,
        object_id: Uuid::now_v7().to_string(),
        message: "Owner assigned".into(),
        success: crm_sync.is_some(),
        user: Some(Email::parse("a@acme.example").unwrap()),
        reason: Some(AssignmentReason::Rotation),
        previous_owner: None,
        field_name: Some("Contact owner".into()),
        owner_field: Some("contact_owner".into()),
        source: DispatchSource::Api,
        dispatched_at: at,
        crm_sync,
        sla: None,
        expires_at: at + Duration::days(400),
    }
}

async fn an_item_is_claimed_once_per_attempt_and_again_only_after_its_lease_lapses(
    backend: Backend,
) {
    let store = backend.store().await;
    let now = base();
    let due = item(DueKind::CrmSync, "e1", now, now);
    put(&store, vec![due.clone()]).await;
    assert_eq!(store.get_due(&due.id).await.unwrap(), Some(due.clone()));

    assert_eq!(
        store
            .claim_due(&due.id, 1, &lease(now, 60), now)
            .await
            .unwrap(),
        None,
        "a claim for another attempt count gets nothing"
    );
    let first = lease(now, 60);
    let claimed = store
        .claim_due(&due.id, 0, &first, now)
        .await
        .unwrap()
        .expect("claimed");
    assert_eq!(claimed.lease, Some(first.clone()));
    assert_eq!(
        claimed.resume_at, first.until,
        "resumed when the lease ends"
    );
    assert_eq!(store.get_due(&due.id).await.unwrap(), Some(claimed.clone()));

    let later = now + Duration::seconds(59);
    assert_eq!(
        store
            .claim_due(&due.id, 0, &lease(later, 60), later)
            .await
            .unwrap(),
        None,
        "held while the lease lasts"
    );
    let lapsed = now + Duration::seconds(60);
    let second = lease(lapsed, 60);
    let taken = store
        .claim_due(&due.id, 0, &second, lapsed)
        .await
        .unwrap()
        .expect("taken over once the lease lapsed");
    assert_eq!(taken.lease, Some(second));
    assert_eq!(
        store
            .claim_due(
                &DueId::new(DueKind::CrmSync, "nothing"),
                0,
                &lease(now, 60),
                now
            )
            .await
            .unwrap(),
        None
    );
}

/// The SDK retries a request whose response was lost (a timeout, a reset connection, a 5xx
/// after the write applied): the retried claim finds its own lease on the item. It must learn
/// that it holds the item; otherwise nobody runs it until the lease lapses.
async fn a_claim_retried_after_it_applied_still_holds_the_item(backend: Backend) {
    let store = backend.store().await;
    let now = base();
    let due = item(DueKind::SlaCheck, "e3", now, now);
    put(&store, vec![due.clone()]).await;
    let held = lease(now, 60);
    let first = store.claim_due(&due.id, 0, &held, now).await.unwrap();
    let retried = store.claim_due(&due.id, 0, &held, now).await.unwrap();
    assert!(first.is_some());
    assert_eq!(
        retried, first,
        "the retry gets the item as its first attempt stored it"
    );
    assert_eq!(
        store
            .claim_due(&due.id, 0, &lease(now, 60), now)
            .await
            .unwrap(),
        None,
        "another lease still gets nothing"
    );
}

async fn fifty_concurrent_claims_of_one_item_let_exactly_one_hold_it(backend: Backend) {
    let store = backend.store().await;
    let now = base();
    let due = item(DueKind::SlaCheck, "e2", now, now);
    put(&store, vec![due.clone()]).await;
    let mut claims = tokio::task::JoinSet::new();
    for _ in 0..50 {
        let store = store.clone();
        let id = due.id.clone();
        claims.spawn(async move { store.claim_due(&id, 0, &lease(now, 60), now).await });
    }
    let mut won = 0;
    while let Some(claim) = claims.join_next().await {
        if claim.unwrap().unwrap().is_some() {
            won += 1;
        }
    }
    assert_eq!(won, 1);
}

async fn settling_on_the_lease_removes_the_item_or_moves_it_to_its_next_attempt(backend: Backend) {
    let store = backend.store().await;
    let now = base();
    let again = item(DueKind::CrmSync, "again", now, now);
    let done = item(DueKind::CrmSync, "done", now, now);
    put(&store, vec![again.clone(), done.clone()]).await;

    let held = lease(now, 60);
    store
        .claim_due(&again.id, 0, &held, now)
        .await
        .unwrap()
        .unwrap();
    let next = NextAttempt {
        due_at: now + Duration::seconds(30),
        attempt: 1,
        resume_at: now + Duration::seconds(90),
        error: None,
        subject: None,
    };
    store
        .settle_due(&Settlement {
            id: again.id.clone(),
            lease_id: held.id.clone(),
            next: Some(next.clone()),
        })
        .await
        .unwrap();
    let moved = store.get_due(&again.id).await.unwrap().unwrap();
    assert_eq!(
        (moved.due_at, moved.attempt, moved.resume_at, moved.lease),
        (next.due_at, 1, next.resume_at, None)
    );
    assert_eq!(moved.subject, again.subject);
    // The next attempt is claimed with the new count, at once (claims do not wait for the due
    // time: the hand-off does).
    assert!(store
        .claim_due(&again.id, 1, &lease(now, 60), now)
        .await
        .unwrap()
        .is_some());

    let held = lease(now, 60);
    store
        .claim_due(&done.id, 0, &held, now)
        .await
        .unwrap()
        .unwrap();
    store
        .settle_due(&Settlement {
            id: done.id.clone(),
            lease_id: held.id,
            next: None,
        })
        .await
        .unwrap();
    assert_eq!(store.get_due(&done.id).await.unwrap(), None);
}

async fn a_settlement_without_the_lease_is_refused_and_writes_nothing(backend: Backend) {
    let store = backend.store().await;
    let now = base();
    let due = item(DueKind::WebhookDelivery, "d1", now, now);
    put(&store, vec![due.clone()]).await;
    let settle = Settlement {
        id: due.id.clone(),
        lease_id: "not-the-lease".into(),
        next: None,
    };
    // Not claimed at all, then claimed by another lease.
    assert!(matches!(
        store.settle_due(&settle).await,
        Err(StoreError::LeaseLost)
    ));
    let held = lease(now, 60);
    let claimed = store.claim_due(&due.id, 0, &held, now).await.unwrap();
    assert!(matches!(
        store.settle_due(&settle).await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(store.get_due(&due.id).await.unwrap(), claimed);
}

async fn the_overdue_items_come_oldest_first_up_to_the_limit(backend: Backend) {
    let store = backend.store().await;
    let now = base();
    let at = |s: i64| now + Duration::seconds(s);
    // Spread over every shard of the index: 20 items resumed one second apart.
    let items: Vec<DueItem> = (0..20)
        .map(|n| {
            item(
                DueKind::SlaCheck,
                &format!("s{n:02}"),
                at(n - 100),
                at(n - 10),
            )
        })
        .collect();
    put(&store, items.clone()).await;
    let overdue = store.overdue_due_items(now, 100).await.unwrap();
    let ids: Vec<String> = overdue.iter().map(|i| i.id.to_string()).collect();
    let expected: Vec<String> = items[..=10].iter().map(|i| i.id.to_string()).collect();
    assert_eq!(ids, expected, "resumed at or before now, oldest first");
    let first_three = store.overdue_due_items(now, 3).await.unwrap();
    assert_eq!(first_three, items[..3].to_vec());
    // A claim moves the item's resume time to its lease's end: not overdue while held.
    store
        .claim_due(&items[0].id, 0, &lease(now, 60), now)
        .await
        .unwrap()
        .unwrap();
    let overdue = store.overdue_due_items(now, 100).await.unwrap();
    assert!(!overdue.iter().any(|i| i.id == items[0].id));
    assert_eq!(overdue.len(), 10);
}

async fn of_racing_sweepers_exactly_one_rearms_an_item(backend: Backend) {
    let store = backend.store().await;
    let now = base();
    let due = item(DueKind::CrmSync, "r1", now, now);
    put(&store, vec![due.clone()]).await;
    let resume = now + Duration::seconds(60);
    let mut sweepers = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let store = store.clone();
        let due = due.clone();
        sweepers.spawn(async move { store.rearm_due(&due, resume, now).await });
    }
    let mut rearmed = 0;
    while let Some(done) = sweepers.join_next().await {
        if done.unwrap().unwrap() {
            rearmed += 1;
        }
    }
    assert_eq!(rearmed, 1);
    assert_eq!(
        store.get_due(&due.id).await.unwrap().unwrap().resume_at,
        resume
    );
    assert!(store.overdue_due_items(now, 10).await.unwrap().is_empty());
    // A leased item is not re-armed.
    let held = store
        .claim_due(&due.id, 0, &lease(now, 600), now)
        .await
        .unwrap()
        .unwrap();
    assert!(!store.rearm_due(&held, now, now).await.unwrap());
}

async fn a_history_entry_and_its_due_item_are_written_together(backend: Backend) {
    let store = backend.store().await;
    let now = base();
    let due = item(DueKind::WebhookDelivery, "w1", now, now);
    let first = entry(None);
    store
        .record_dispatch(
            &first,
            None,
            Some(&MessageDeduplicationId::new("message-1")),
            None,
            &DueChanges {
                put: vec![due.clone()],
                ..DueChanges::default()
            },
        )
        .await
        .unwrap();
    assert!(store.get_due(&due.id).await.unwrap().is_some());
    // A redelivered message writes neither the entry nor a second item.
    let other = item(DueKind::WebhookDelivery, "w2", now, now);
    let again = store
        .record_dispatch(
            &entry(None),
            None,
            Some(&MessageDeduplicationId::new("message-1")),
            None,
            &DueChanges {
                put: vec![other.clone()],
                ..DueChanges::default()
            },
        )
        .await;
    assert!(
        matches!(again, Err(StoreError::AlreadyApplied)),
        "{again:?}"
    );
    assert_eq!(store.get_due(&other.id).await.unwrap(), None);
    // An item that exists already is not put twice, and the entry is not written either.
    let lone = entry(None);
    let twice = store
        .record_dispatch(
            &lone,
            None,
            None,
            None,
            &DueChanges {
                put: vec![due.clone()],
                ..DueChanges::default()
            },
        )
        .await;
    assert!(matches!(twice, Err(StoreError::Conflict)), "{twice:?}");
    assert_eq!(store.get_dispatch(&lone.key()).await.unwrap(), None);
}

async fn a_crm_sync_state_and_its_settlement_are_written_together_or_not_at_all(backend: Backend) {
    let store = backend.store().await;
    let now = base();
    let written = entry(Some(CrmSyncState::pending()));
    let due = item(DueKind::CrmSync, &written.id.to_string(), now, now);
    store
        .record_dispatch(
            &written,
            None,
            None,
            None,
            &DueChanges {
                put: vec![due.clone()],
                ..DueChanges::default()
            },
        )
        .await
        .unwrap();
    let held = lease(now, 60);
    store
        .claim_due(&due.id, 0, &held, now)
        .await
        .unwrap()
        .unwrap();
    let retrying = CrmSyncState {
        status: CrmSyncStatus::Retrying,
        attempts: 1,
        error: Some("CRM answered 503: ".into()),
    };
    let next = NextAttempt {
        due_at: now + Duration::seconds(30),
        attempt: 1,
        resume_at: now + Duration::seconds(90),
        error: None,
        subject: None,
    };
    // A settlement on another lease: nothing is written, the entry stays pending.
    let wrong = store
        .update_crm_sync(
            &written.key(),
            &CrmSyncState::pending(),
            &retrying,
            &DueChanges::settling(Settlement {
                id: due.id.clone(),
                lease_id: "another".into(),
                next: Some(next.clone()),
            }),
        )
        .await;
    assert!(matches!(wrong, Err(StoreError::LeaseLost)), "{wrong:?}");
    let stored = store.get_dispatch(&written.key()).await.unwrap().unwrap();
    assert_eq!(stored.crm_sync, Some(CrmSyncState::pending()));
    // From a state the entry is not in: nothing is written, the item keeps its lease.
    let stale = store
        .update_crm_sync(
            &written.key(),
            &retrying,
            &retrying,
            &DueChanges::settling(Settlement {
                id: due.id.clone(),
                lease_id: held.id.clone(),
                next: Some(next.clone()),
            }),
        )
        .await;
    assert!(matches!(stale, Err(StoreError::Conflict)), "{stale:?}");
    assert_eq!(
        store.get_due(&due.id).await.unwrap().unwrap().lease,
        Some(held.clone())
    );
    // The right state on the right lease: both written.
    store
        .update_crm_sync(
            &written.key(),
            &CrmSyncState::pending(),
            &retrying,
            &DueChanges::settling(Settlement {
                id: due.id.clone(),
                lease_id: held.id.clone(),
                next: Some(next.clone()),
            }),
        )
        .await
        .unwrap();
    let stored = store.get_dispatch(&written.key()).await.unwrap().unwrap();
    assert_eq!(stored.crm_sync, Some(retrying.clone()));
    let moved = store.get_due(&due.id).await.unwrap().unwrap();
    assert_eq!((moved.attempt, moved.lease), (1, None));
    // A final state never changes again, whatever the settlement says.
    let synced = CrmSyncState {
        status: CrmSyncStatus::Synced,
        attempts: 2,
        error: None,
    };
    store
        .update_crm_sync(&written.key(), &retrying, &synced, &DueChanges::none())
        .await
        .unwrap();
    let again = store
        .update_crm_sync(&written.key(), &synced, &retrying, &DueChanges::none())
        .await;
    assert!(matches!(again, Err(StoreError::Conflict)), "{again:?}");
}
