//! The dispatch contract ([`shared::store::DispatchStore`]): the assignment's one write and each
//! condition that cancels it, SLA checks ended once, monthly counts, history windows.

use super::*;

shared::on_both_stores!(
    threads = 2; store:
    an_assignment_writes_record_rotation_member_count_and_log_together,
    an_assignment_on_a_stale_record_writes_nothing,
    an_assignment_on_a_stale_rotation_writes_nothing,
    an_assignment_by_a_revision_no_longer_live_writes_nothing,
    an_assignment_on_a_stale_or_archived_member_writes_nothing,
    an_assignment_without_counters_still_needs_the_member_active_at_the_version_read,
    an_assignment_past_the_quota_writes_nothing,
    an_assignment_with_a_used_idempotency_key_is_already_applied,
    an_sla_check_ends_once_from_pending_with_its_items_settlement,
    a_reassignment_ends_its_check_in_its_own_write_and_only_once,
    monthly_counts_are_per_account_and_month,
    a_window_of_router_history_is_walked_oldest_first_in_pages,
    a_first_round_reads_every_key_at_once_as_each_read_alone_would,
    every_write_that_changes_what_dispatch_makes_of_subscriptions_moves_their_version,
);

pub(super) struct Scene {
    pub(super) account: Account,
    pub(super) member: Member,
    pub(super) router: Router,
    pub(super) record: Record,
}

pub(super) async fn scene(store: &Arc<dyn Store>, quota: Option<u64>) -> Scene {
    let acc = account(quota);
    let mut plan = plan_of(&acc);
    let m = member(acc.id, "rep@x.co", 1);
    let r = router(acc.id, "R", 2);
    let rec = record(acc.id, ObjectType::Contacts, 3, &[("email", "lead@x.co")]);
    plan.members = vec![m.clone()];
    plan.routers = vec![r.clone()];
    plan.records = vec![planned(rec.clone(), "accounts[0].records.contacts[0]")];
    provision(store, vec![plan]).await;
    Scene {
        account: acc,
        member: m,
        router: r,
        record: rec,
    }
}

pub(super) fn assignment(
    s: &Scene, month: &str, deduplication_id: Option<&str>,
) -> AssignmentWrite {
    let now = at(1000);
    let mut record = s.record.clone();
    record
        .values
        .insert("contact_owner".into(), s.member.email.to_string());
    record.values.insert(
        "contact_owner_assigned_date".into(),
        "2026-03-10T09:00:01.000Z".into(),
    );
    record.updated_at = now;
    record.version = s.record.version + 1;
    let mut member = s.member.clone();
    member.capacity[0] = member.capacity[0].counted();
    member.version = s.member.version + 1;
    let rotation = RotationState {
        version: 1,
        last_member: Some(s.member.email.clone()),
        counts: BTreeMap::from([(s.member.email.clone(), 1)]),
        total: 1,
        ..RotationState::default()
    };
    AssignmentWrite {
        record,
        record_version: s.record.version,
        router_version: s.router.version,
        rotation: Some(RotationWrite {
            router_id: s.router.id,
            next: rotation,
            read_version: 0,
        }),
        chosen: (s.member.id, s.member.version),
        member: Some((member, s.member.version)),
        month: month.into(),
        quota: s.account.assignment_quota,
        entry: DispatchEntry {
            id: new_id_v7(),
            account_id: s.account.id,
            router_id: s.router.id,
            router_revision: 1,
            object_type: ObjectType::Contacts,
            object_id: s.record.id.to_string(),
            message: "Owner assigned".into(),
            success: true,
            user: Some(s.member.email.clone()),
            reason: Some(AssignmentReason::Rotation),
            previous_owner: None,
            field_name: Some("Contact owner".into()),
            owner_field: Some("contact_owner".into()),
            source: DispatchSource::Api,
            dispatched_at: now,
            crm_sync: None,
            sla: None,
            expires_at: now + Duration::days(400),
        },
        snapshot: None,
        deduplication_id: deduplication_id.map(MessageDeduplicationId::new),
        due: Default::default(),
        completion: None,
        ends_check: None,
    }
}

/// The record's history entries (first 100, newest first).
async fn record_history(
    store: &Arc<dyn Store>, account: AccountId, record: RecordId,
) -> Vec<DispatchEntry> {
    store
        .list_record_dispatches(
            account,
            ObjectType::Contacts,
            record,
            &PageRequest::first(100, false),
        )
        .await
        .unwrap()
        .items
}

/// Asserts that no part of an assignment was written.
async fn nothing_assigned(store: &Arc<dyn Store>, s: &Scene, key: Option<&str>) {
    let acc = s.account.id;
    assert_eq!(
        store
            .get_record(acc, ObjectType::Contacts, s.record.id)
            .await
            .unwrap(),
        Some(s.record.clone())
    );
    assert_eq!(
        store.rotation_state(s.router.id).await.unwrap(),
        RotationState::default()
    );
    assert_eq!(
        store.get_member(acc, s.member.id).await.unwrap(),
        Some(s.member.clone())
    );
    assert_eq!(store.assignment_count(acc, "2026-03").await.unwrap(), 0);
    assert!(record_history(store, acc, s.record.id).await.is_empty());
    if let Some(key) = key {
        assert!(!store
            .deduplication_id_used(&MessageDeduplicationId::new(key))
            .await
            .unwrap());
    }
}

async fn an_assignment_writes_record_rotation_member_count_and_log_together(store: Arc<dyn Store>) {
    let s = scene(&store, Some(5)).await;
    let w = assignment(&s, "2026-03", Some("msg-1"));
    assert!(!store
        .deduplication_id_used(&MessageDeduplicationId::new("msg-1"))
        .await
        .unwrap());
    store.commit_assignment(&w).await.unwrap();
    let acc = s.account.id;
    assert_eq!(
        store
            .get_record(acc, ObjectType::Contacts, s.record.id)
            .await
            .unwrap(),
        Some(w.record.clone())
    );
    let rotation = w.rotation.as_ref().map(|r| r.next.clone()).unwrap();
    assert_eq!(store.rotation_state(s.router.id).await.unwrap(), rotation);
    assert_eq!(
        store.get_member(acc, s.member.id).await.unwrap(),
        w.member.as_ref().map(|(m, _)| m.clone())
    );
    assert_eq!(store.assignment_count(acc, "2026-03").await.unwrap(), 1);
    assert_eq!(
        record_history(&store, acc, s.record.id).await,
        vec![w.entry.clone()]
    );
    assert!(record_history(&store, new_id(), s.record.id)
        .await
        .is_empty());
    assert!(store
        .deduplication_id_used(&MessageDeduplicationId::new("msg-1"))
        .await
        .unwrap());

    // A second assignment from the written state: the rotation moves on, the count grows,
    // the history keeps both, newest first.
    let mut next = assignment(&s, "2026-03", None);
    next.record_version = w.record.version;
    next.record = w.record.clone();
    next.record.version = w.record.version + 1;
    let mut rotation2 = rotation.clone();
    rotation2.version = 2;
    rotation2.total = 2;
    next.rotation = Some(RotationWrite {
        router_id: s.router.id,
        next: rotation2.clone(),
        read_version: 1,
    });
    next.member = None;
    next.chosen = (s.member.id, s.member.version + 1);
    next.entry.id = new_id_v7();
    next.entry.dispatched_at = w.entry.dispatched_at + Duration::seconds(1);
    next.entry.reason = Some(AssignmentReason::Backup);
    store.commit_assignment(&next).await.unwrap();
    assert_eq!(store.rotation_state(s.router.id).await.unwrap(), rotation2);
    assert_eq!(store.assignment_count(acc, "2026-03").await.unwrap(), 2);
    assert_eq!(
        record_history(&store, acc, s.record.id).await,
        vec![next.entry, w.entry]
    );
}

/// The first assignment of `s` with an SLA check `pending` and its due item stored with it.
async fn assigned_with_a_check(store: &Arc<dyn Store>, s: &Scene) -> AssignmentWrite {
    let mut w = assignment(s, "2026-03", None);
    w.entry.sla = Some(shared::model::SlaState::pending(
        w.entry.dispatched_at + Duration::minutes(30),
    ));
    w.due.put.push(shared::model::due::DueItem::new(
        shared::sla::CheckSubject::due_id(&w.entry.key()),
        serde_json::Value::Null,
        at(2000),
        at(2000),
    ));
    store.commit_assignment(&w).await.unwrap();
    w
}

/// The SLA status of the record's history entries, newest first.
async fn sla_statuses(store: &Arc<dyn Store>, s: &Scene) -> Vec<Option<shared::model::SlaStatus>> {
    record_history(store, s.account.id, s.record.id)
        .await
        .iter()
        .map(|e| e.sla.map(|sla| sla.status))
        .collect()
}

async fn an_sla_check_ends_once_from_pending_with_its_items_settlement(store: Arc<dyn Store>) {
    use shared::model::due::{DueChanges, Lease};
    use shared::model::SlaStatus;
    let s = scene(&store, None).await;
    let w = assigned_with_a_check(&store, &s).await;
    let key = w.entry.key();
    let item = w.due.put[0].id.clone();
    let lease = Lease::new(at(2000), std::time::Duration::from_secs(60));
    store
        .claim_due(&item, 0, &lease, at(2000))
        .await
        .unwrap()
        .unwrap();
    let settle = |lease_id: &str| {
        DueChanges::settling(shared::model::due::Settlement {
            id: item.clone(),
            lease_id: lease_id.into(),
            next: None,
        })
    };
    // Another worker's lease: nothing written.
    assert!(matches!(
        store
            .end_sla_check(&key, SlaStatus::Met, &settle("other"))
            .await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(sla_statuses(&store, &s).await, [Some(SlaStatus::Pending)]);
    assert!(store.get_due(&item).await.unwrap().is_some());
    // The holder ends it: status and settlement in one write.
    store
        .end_sla_check(&key, SlaStatus::Met, &settle(&lease.id))
        .await
        .unwrap();
    assert_eq!(sla_statuses(&store, &s).await, [Some(SlaStatus::Met)]);
    assert_eq!(store.get_due(&item).await.unwrap(), None);
    // A final status never changes again; an entry without a check or no entry has none.
    for status in [SlaStatus::Expired, SlaStatus::Met] {
        assert!(matches!(
            store.end_sla_check(&key, status, &DueChanges::none()).await,
            Err(StoreError::Conflict)
        ));
    }
    let mut missing = key.clone();
    missing.id = new_id_v7();
    assert!(matches!(
        store
            .end_sla_check(&missing, SlaStatus::Cancelled, &DueChanges::none())
            .await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(sla_statuses(&store, &s).await, [Some(SlaStatus::Met)]);
}

async fn a_reassignment_ends_its_check_in_its_own_write_and_only_once(store: Arc<dyn Store>) {
    use shared::model::SlaStatus;
    let s = scene(&store, None).await;
    let w = assigned_with_a_check(&store, &s).await;
    let reassignment = |record_version: u64, rotation_version: u64| {
        let mut next = assignment(&s, "2026-03", None);
        next.record_version = record_version;
        next.record = w.record.clone();
        next.record.version = record_version + 1;
        next.rotation = next.rotation.map(|mut rotation| {
            rotation.next.version = rotation_version + 1;
            rotation.read_version = rotation_version;
            rotation
        });
        next.member = None;
        next.chosen = (s.member.id, s.member.version + 1);
        next.entry.id = new_id_v7();
        next.entry.dispatched_at = w.entry.dispatched_at + Duration::seconds(1);
        next.entry.reason = Some(AssignmentReason::SlaReassignment);
        next.entry.source = DispatchSource::Sla;
        next.ends_check = Some(w.entry.key());
        next
    };
    let first = reassignment(w.record.version, 1);
    store.commit_assignment(&first).await.unwrap();
    assert_eq!(
        sla_statuses(&store, &s).await,
        [None, Some(SlaStatus::Reassigned)]
    );
    // A second run of the same check, even on fresh versions, is refused like a lost lease.
    let second = reassignment(first.record.version, 2);
    assert!(matches!(
        store.commit_assignment(&second).await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(
        store
            .get_record(s.account.id, ObjectType::Contacts, s.record.id)
            .await
            .unwrap()
            .map(|r| r.version),
        Some(first.record.version),
        "nothing of the second run written"
    );
    assert_eq!(
        record_history(&store, s.account.id, s.record.id)
            .await
            .len(),
        2
    );
}

async fn an_assignment_on_a_stale_record_writes_nothing(store: Arc<dyn Store>) {
    let s = scene(&store, None).await;
    let mut w = assignment(&s, "2026-03", Some("k"));
    w.record_version = 7;
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    nothing_assigned(&store, &s, Some("k")).await;
}

async fn an_assignment_on_a_stale_rotation_writes_nothing(store: Arc<dyn Store>) {
    let s = scene(&store, None).await;
    let mut w = assignment(&s, "2026-03", Some("k"));
    if let Some(rotation) = w.rotation.as_mut() {
        rotation.read_version = 3;
    }
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    nothing_assigned(&store, &s, Some("k")).await;
}

/// BEHAVIOR 15: an assignment commits only while the router is still at the version its run
/// read, so never by a revision that a publish replaced in between.
async fn an_assignment_by_a_revision_no_longer_live_writes_nothing(store: Arc<dyn Store>) {
    let s = scene(&store, None).await;
    let mut published = s.router.clone();
    published.revision = 2;
    published.version = s.router.version + 1;
    let write = shared::model::RouterWrite {
        router: published,
        expected_version: s.router.version,
        revision: None,
        draft: shared::model::DraftChange::Keep,
        rotation: None,
        archives: false,
        completion: None,
        calendars: Default::default(),
        audit: None,
    };
    store.write_router(&write).await.unwrap();
    let w = assignment(&s, "2026-03", Some("k"));
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    nothing_assigned(&store, &s, Some("k")).await;
    let mut again = assignment(&s, "2026-03", Some("k"));
    again.router_version = s.router.version + 1;
    again.entry.router_revision = 2;
    store.commit_assignment(&again).await.unwrap();
}

/// Without a capacity entry to count, the chosen member is still a condition
/// of the write: a member changed (e.g. switched off) or archived since it was read is never
/// assigned.
async fn an_assignment_without_counters_still_needs_the_member_active_at_the_version_read(
    store: Arc<dyn Store>,
) {
    let s = scene(&store, None).await;
    let mut w = assignment(&s, "2026-03", Some("k"));
    w.member = None;
    w.chosen = (s.member.id, s.member.version + 3);
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    nothing_assigned(&store, &s, Some("k")).await;
    // Archived at the version read: refused too.
    let mut archived = s.member.clone();
    archived.archived_at = Some(at(500));
    archived.version = s.member.version + 1;
    store
        .update_member(
            &archived,
            s.member.version,
            &shared::model::CalendarRefs::none(),
            None,
        )
        .await
        .unwrap();
    let mut w = assignment(&s, "2026-03", Some("k"));
    w.member = None;
    w.chosen = (s.member.id, archived.version);
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    assert!(record_history(&store, s.account.id, s.record.id)
        .await
        .is_empty());
    // At the version read and active: written.
    let s = scene(&store, None).await;
    let mut w = assignment(&s, "2026-03", None);
    w.member = None;
    store.commit_assignment(&w).await.unwrap();
    assert_eq!(
        store.get_member(s.account.id, s.member.id).await.unwrap(),
        Some(s.member.clone()),
        "a condition check writes nothing"
    );
}

async fn an_assignment_on_a_stale_or_archived_member_writes_nothing(store: Arc<dyn Store>) {
    let s = scene(&store, None).await;
    let mut w = assignment(&s, "2026-03", Some("k"));
    if let Some((_, version)) = w.member.as_mut() {
        *version = 9;
    }
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    nothing_assigned(&store, &s, Some("k")).await;

    // Archive the member, then try at the right version.
    let mut archived = s.member.clone();
    archived.archived_at = Some(at(50));
    archived.archived_by = Some("admin".into());
    archived.version = 2;
    store
        .update_member(&archived, 1, &shared::model::CalendarRefs::none(), None)
        .await
        .unwrap();
    let mut w = assignment(&s, "2026-03", None);
    if let Some((m, version)) = w.member.as_mut() {
        *version = 2;
        m.version = 3;
    }
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-03")
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .get_record(s.account.id, ObjectType::Contacts, s.record.id)
            .await
            .unwrap(),
        Some(s.record.clone())
    );
}

async fn an_assignment_past_the_quota_writes_nothing(store: Arc<dyn Store>) {
    let s = scene(&store, Some(1)).await;
    // Another record uses up this month's quota of one.
    let other = record(s.account.id, ObjectType::Contacts, 9, &[]);
    store.create_record(&other, &[]).await.unwrap();
    let first = Scene {
        account: s.account.clone(),
        member: s.member.clone(),
        router: s.router.clone(),
        record: other.clone(),
    };
    let mut w = assignment(&first, "2026-03", None);
    w.rotation = None;
    w.member = None;
    store.commit_assignment(&w).await.unwrap();
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-03")
            .await
            .unwrap(),
        1
    );

    let w = assignment(&s, "2026-03", Some("k"));
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-03")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .get_record(s.account.id, ObjectType::Contacts, s.record.id)
            .await
            .unwrap(),
        Some(s.record.clone())
    );
    assert_eq!(
        store.rotation_state(s.router.id).await.unwrap(),
        RotationState::default()
    );
    assert!(!store
        .deduplication_id_used(&MessageDeduplicationId::new("k"))
        .await
        .unwrap());

    // A quota of zero admits nothing, even in a fresh month.
    let mut zero = assignment(&s, "2026-04", None);
    zero.quota = Some(0);
    assert!(matches!(
        store.commit_assignment(&zero).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-04")
            .await
            .unwrap(),
        0
    );
    // The next month starts from zero.
    let april = assignment(&s, "2026-04", None);
    store.commit_assignment(&april).await.unwrap();
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-04")
            .await
            .unwrap(),
        1
    );
}

async fn an_assignment_with_a_used_idempotency_key_is_already_applied(store: Arc<dyn Store>) {
    let s = scene(&store, Some(100)).await;
    let w = assignment(&s, "2026-03", Some("msg-7"));
    store.commit_assignment(&w).await.unwrap();
    // The redelivered message, even re-read at the new versions, is recognised.
    let mut again = assignment(&s, "2026-03", Some("msg-7"));
    again.record_version = w.record.version;
    again.record.version = w.record.version + 1;
    again.rotation = None;
    again.member = None;
    again.entry.id = new_id_v7();
    assert!(matches!(
        store.commit_assignment(&again).await,
        Err(StoreError::AlreadyApplied)
    ));
    // Also when other conditions fail at the same time.
    assert!(matches!(
        store.commit_assignment(&w).await,
        Err(StoreError::AlreadyApplied)
    ));
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-03")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        record_history(&store, s.account.id, s.record.id)
            .await
            .len(),
        1
    );
}

async fn monthly_counts_are_per_account_and_month(store: Arc<dyn Store>) {
    // An account without a quota keeps no count (no write every router contends on).
    let unlimited = scene(&store, None).await;
    let mut w = assignment(&unlimited, "2026-03", None);
    w.rotation = None;
    w.member = None;
    store.commit_assignment(&w).await.unwrap();
    assert_eq!(
        store
            .assignment_count(unlimited.account.id, "2026-03")
            .await
            .unwrap(),
        0
    );
    let s = scene(&store, Some(100)).await;
    let mut w = assignment(&s, "2026-03", None);
    w.rotation = None;
    w.member = None;
    store.commit_assignment(&w).await.unwrap();
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-03")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .assignment_count(s.account.id, "2026-02")
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store.assignment_count(new_id(), "2026-03").await.unwrap(),
        0
    );
}

async fn a_window_of_router_history_is_walked_oldest_first_in_pages(store: Arc<dyn Store>) {
    let s = scene(&store, None).await;
    let mut other_router = router(s.account.id, "Other", 9);
    other_router.id = new_id();
    let mut plan = plan_of(&s.account);
    plan.routers = vec![other_router.clone()];
    provision(&store, vec![plan]).await;
    let entry = |router: &Router, at_ms: i64, id: Uuid| DispatchEntry {
        id,
        account_id: s.account.id,
        router_id: router.id,
        router_revision: 1,
        object_type: ObjectType::Contacts,
        object_id: s.record.id.to_string(),
        message: "Trigger did not match".into(),
        success: false,
        user: None,
        reason: None,
        previous_owner: None,
        field_name: None,
        owner_field: None,
        source: DispatchSource::Queue,
        dispatched_at: at(at_ms),
        crm_sync: None,
        sla: None,
        expires_at: base() + Duration::days(400), // whole seconds (a TTL)
    };
    let (from, to) = (at(10_000), at(20_000));
    let id = |n: u128| Uuid::from_u128(n);
    // Before the window, at `from`, inside (two at one instant, ordered by id), the last
    // millisecond, at `to` (excluded), after; one entry of another router inside.
    let mut written = vec![
        entry(&s.router, 9_999, id(1)),
        entry(&s.router, 10_000, id(2)),
        entry(&s.router, 15_000, id(4)),
        entry(&s.router, 15_000, id(3)),
        entry(&s.router, 12_000, id(5)),
        entry(&s.router, 19_999, id(6)),
        entry(&s.router, 20_000, id(7)),
        entry(&s.router, 25_000, id(8)),
        entry(&other_router, 15_000, id(9)),
    ];
    for e in &written {
        store
            .record_dispatch(e, None, None, None, &Default::default())
            .await
            .unwrap();
    }
    written
        .retain(|e| e.router_id == s.router.id && e.dispatched_at >= from && e.dispatched_at < to);
    written.sort_by_key(|e| (e.dispatched_at, e.id));
    let expected: Vec<Uuid> = written.iter().map(|e| e.id).collect();
    assert_eq!(expected, vec![id(2), id(5), id(3), id(4), id(6)]);

    for limit in [1, 2, 5, 100] {
        let mut walked = Vec::new();
        let mut after = None;
        loop {
            let page = store
                .list_router_dispatches_between(
                    s.account.id,
                    s.router.id,
                    from,
                    to,
                    after.as_ref(),
                    limit,
                )
                .await
                .unwrap();
            assert!(page.items.len() <= limit);
            walked.extend(page.items.iter().map(|e| e.id));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert_eq!(walked, expected, "limit {limit}");
    }
    let whole = store
        .list_router_dispatches_between(s.account.id, s.router.id, from, to, None, 100)
        .await
        .unwrap();
    assert_eq!(whole.items, written, "entries read back exactly");
    assert_eq!(whole.next, None);
    // A position before the window starts at `from`; one at its end finds nothing.
    let early = shared::store::dispatch_position(&entry(&s.router, 1, id(1)));
    let from_early = store
        .list_router_dispatches_between(s.account.id, s.router.id, from, to, Some(&early), 100)
        .await
        .unwrap();
    assert_eq!(from_early.items.len(), 5);
    let last = shared::store::dispatch_position(&written[4]);
    let after_last = store
        .list_router_dispatches_between(s.account.id, s.router.id, from, to, Some(&last), 100)
        .await
        .unwrap();
    assert!(after_last.items.is_empty() && after_last.next.is_none());
    // Another account sees nothing; an empty window holds nothing.
    for (account_id, from, to) in [(new_id(), from, to), (s.account.id, to, to)] {
        let page = store
            .list_router_dispatches_between(account_id, s.router.id, from, to, None, 100)
            .await
            .unwrap();
        assert!(page.items.is_empty(), "{account_id} {from} {to}");
    }
}

/// A dispatch's first round ([`shared::store::DispatchStore::first_round_reads`]) reads
/// at once, by key, everything a warm dispatch needs, each answered as its own read would: the
/// account, router, record, rotation state, count, the members asked (in the order asked, each
/// once, only the account's, archived ones too, more than one `BatchGetItem` holds: 105), the
/// holiday calendars asked (only the account's), the webhook subscriptions' version and a queue
/// message's marker.
async fn a_first_round_reads_every_key_at_once_as_each_read_alone_would(store: Arc<dyn Store>) {
    use shared::store::FirstReads;
    let acc = account(Some(100));
    let other = account(None);
    let stranger = member(other.id, "stranger@y.co", 1);
    let chosen = member(acc.id, "rep@x.co", 1);
    let many: Vec<Member> = (0..104)
        .map(|i| member(acc.id, &format!("m{i:03}@x.co"), 10 + i))
        .collect();
    let r = router(acc.id, "R", 2);
    let rec = record(acc.id, ObjectType::Contacts, 3, &[("email", "lead@x.co")]);
    let mut plan = plan_of(&acc);
    plan.members = std::iter::once(chosen.clone())
        .chain(many.clone())
        .collect();
    plan.routers = vec![r.clone()];
    plan.records = vec![planned(rec.clone(), "accounts[0].records.contacts[0]")];
    let mut other_plan = plan_of(&other);
    other_plan.members = vec![stranger.clone()];
    provision(&store, vec![plan, other_plan]).await;
    let s = Scene {
        account: acc,
        member: chosen,
        router: r,
        record: rec,
    };
    let calendar = |account_id: AccountId, name: &str| shared::model::HolidayCalendar {
        id: shared::types::HolidayCalendarId::new_v7(),
        account_id,
        name: name.into(),
        time_zone: IanaTimeZone::parse("Europe/Berlin").unwrap(),
        holidays: serde_json::from_value(serde_json::json!([])).unwrap(),
        created_at: base(),
        updated_at: base(),
        version: 1,
    };
    let berlin = calendar(s.account.id, "Berlin");
    let elsewhere = calendar(other.id, "Elsewhere");
    store
        .create_holiday_calendar(&berlin, 20, None)
        .await
        .unwrap();
    store
        .create_holiday_calendar(&elsewhere, 20, None)
        .await
        .unwrap();
    let w = assignment(&s, "2026-03", Some("msg-1"));
    store.commit_assignment(&w).await.unwrap();
    let mut asked: Vec<shared::types::MemberId> = vec![many[3].id, stranger.id, s.member.id];
    asked.extend(many.iter().map(|m| m.id));
    asked.push(s.member.id);
    asked.push(new_id());
    let reads = FirstReads {
        account: true,
        router: Some(s.router.id),
        record: Some(s.record.id),
        rotation: Some(s.router.id),
        month: Some("2026-03".into()),
        members: asked,
        calendars: vec![elsewhere.id, berlin.id, berlin.id],
        webhooks_version: true,
        marker: Some(MessageDeduplicationId::new("msg-1")),
        ..FirstReads::of(s.account.id)
    };
    let found = store.first_round_reads(&reads).await.unwrap();
    assert_eq!(found.account.as_ref().map(|a| a.id), Some(s.account.id));
    assert_eq!(found.router.as_ref().map(|r| r.id), Some(s.router.id));
    assert_eq!(
        found.record.as_ref().map(|r| r.version),
        Some(w.record.version)
    );
    assert_eq!(found.rotation.version, 1);
    assert_eq!(found.count, 1);
    let mut expected: Vec<shared::types::MemberId> = vec![many[3].id, s.member.id];
    expected.extend(many.iter().filter(|m| m.id != many[3].id).map(|m| m.id));
    let got: Vec<shared::types::MemberId> = found.members.iter().map(|m| m.id).collect();
    assert_eq!(
        got, expected,
        "in the order asked, each once, only the account's"
    );
    let counted = found.members.iter().find(|m| m.id == s.member.id).unwrap();
    assert_eq!(counted.version, s.member.version + 1, "read as it is now");
    assert_eq!(found.calendars, vec![berlin.clone()]);
    assert_eq!(
        found.webhooks_version, 0,
        "no subscription was ever written"
    );
    assert!(found.marker_used);
    // Nothing asked but the account: nothing else answered.
    let bare = store
        .first_round_reads(&FirstReads {
            marker: Some(MessageDeduplicationId::new("msg-2")),
            ..FirstReads::of(s.account.id)
        })
        .await
        .unwrap();
    assert!(bare.account.is_none() && bare.router.is_none() && bare.members.is_empty());
    assert!(!bare.marker_used);
    // Another account's router, record and rotation state are not this account's.
    let foreign = store
        .first_round_reads(&FirstReads {
            router: Some(s.router.id),
            record: Some(s.record.id),
            members: vec![s.member.id],
            ..FirstReads::of(other.id)
        })
        .await
        .unwrap();
    assert!(foreign.router.is_none() && foreign.record.is_none() && foreign.members.is_empty());
}

/// BEHAVIOR 13: every write that changes what a dispatch makes of an account's
/// subscriptions moves the account's subscriptions version (create, update, delete, a delivery
/// attempt that disables one), which dispatch reads by key to know whether the subscriptions its
/// instance keeps are still the account's; an attempt that only marks one failing does not move
/// it, and another account's version stays where it is.
async fn every_write_that_changes_what_dispatch_makes_of_subscriptions_moves_their_version(
    store: Arc<dyn Store>,
) {
    use shared::model::webhook::{
        DeliveryStatus, EventType, HealthChange, SubscriptionHealth, WebhookDelivery,
        WebhookSubscription,
    };
    use shared::store::FirstReads;
    let acc = account(None);
    let other = account(None);
    provision(&store, vec![plan_of(&acc), plan_of(&other)]).await;
    let version = |account_id: AccountId| {
        let store = store.clone();
        async move {
            store
                .first_round_reads(&FirstReads {
                    webhooks_version: true,
                    ..FirstReads::of(account_id)
                })
                .await
                .unwrap()
                .webhooks_version
        }
    };
    let subscription = WebhookSubscription {
        id: new_id_v7(),
        account_id: acc.id,
        url: "https://hooks.example/a".into(),
        events: vec![EventType::AssignmentCreated],
        description: None,
        enabled: true,
        disabled_reason: None,
        secrets: Vec::new(),
        failing_since: None,
        created_at: base(),
        updated_at: base(),
        version: 1,
    };
    let mut seen = vec![version(acc.id).await];
    store.create_webhook(&subscription, 20, None).await.unwrap();
    seen.push(version(acc.id).await);
    let changed = WebhookSubscription {
        events: vec![EventType::DispatchUnassigned],
        version: 2,
        ..subscription.clone()
    };
    store
        .update_webhook(&changed, 1, false, &Default::default(), None)
        .await
        .unwrap();
    seen.push(version(acc.id).await);
    // A delivery, then attempts: one marks the subscription failing (no move), one disables it.
    let delivery = WebhookDelivery {
        id: WebhookDelivery::new_id(),
        subscription_id: subscription.id,
        account_id: acc.id,
        event_type: EventType::DispatchUnassigned,
        payload: "{}".into(),
        status: DeliveryStatus::Pending,
        attempts: 0,
        last_status_code: None,
        last_error: None,
        created_at: base(),
        delivered_at: None,
        expires_at: base() + Duration::days(30),
    };
    let entry = DispatchEntry::unassigned(
        acc.id,
        new_id(),
        ObjectType::Contacts,
        "x".into(),
        "Trigger did not match".into(),
        DispatchSource::Api,
        base(),
    );
    let due = shared::model::due::DueChanges {
        deliveries: vec![delivery.clone()],
        ..Default::default()
    };
    store
        .record_dispatch(&entry, None, None, None, &due)
        .await
        .unwrap();
    let attempt = |attempts: u32, change: HealthChange| {
        let store = store.clone();
        let delivery = WebhookDelivery {
            attempts,
            status: DeliveryStatus::Retrying,
            ..delivery.clone()
        };
        async move {
            let health = SubscriptionHealth {
                account_id: acc.id,
                subscription_id: subscription.id,
                change,
            };
            store
                .record_delivery(&delivery, attempts - 1, Some(&health), &Default::default())
                .await
                .unwrap();
        }
    };
    let before_failing = version(acc.id).await;
    attempt(1, HealthChange::Failing { at: at(10) }).await;
    assert_eq!(
        version(acc.id).await,
        before_failing,
        "failing alone: no move"
    );
    attempt(2, HealthChange::DisableGone { at: at(20) }).await;
    seen.push(version(acc.id).await);
    assert!(store
        .delete_webhook(acc.id, subscription.id, 3, None)
        .await
        .unwrap());
    seen.push(version(acc.id).await);
    assert!(
        seen.windows(2).all(|w| w[1] > w[0]),
        "create, update, disable, delete each move it: {seen:?}"
    );
    assert_eq!(version(other.id).await, 0, "another account's stays");
}
