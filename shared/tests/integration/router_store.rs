//! The store contract of router management (BEHAVIOR 15): creates with the account's router
//! limit, drafts written over the tag read, publishes, archives and the revision list, run on
//! both adapters (`memory::<name>`, `dynamodb::<name>` on the emulator of
//! `bash infra/scripts/test.sh`).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use chrono::{DateTime, Duration, TimeZone, Utc};
use common::Backend;
use shared::model::{
    Account, AccountPlan, DraftChange, ObjectType, ProvisionPlan, RotationState, Router,
    RouterDraft, RouterRevision, RouterWrite,
};
use shared::store::{PageRequest, Store, StoreError};
use shared::types::etag::ETag;
use shared::types::{AccountId, RouterId};
use std::sync::Arc;
use uuid::Uuid;

shared::on_both_stores!(
    provisioned_routers_have_revision_one_and_count_against_the_limit,
    a_created_router_reads_back_with_its_first_revision_and_once_only,
    a_draft_is_written_only_over_the_tag_read_and_while_the_router_is_unchanged,
    a_publish_writes_revision_router_and_draft_removal_together_or_nothing,
    revisions_list_newest_first_and_a_page_after_a_position_holds_the_older_ones,
    an_archive_drops_the_draft_and_frees_a_place_under_the_limit,
    drafts_and_revisions_are_seen_only_by_their_account,
);

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 10, 9, 0, 0).unwrap()
}

fn account() -> Account {
    Account {
        id: Uuid::new_v4().into(),
        name: "Acme".into(),
        active: true,
        assignment_quota: None,
        crm: None,
        created_at: base(),
    }
}

fn router(account_id: AccountId, ms: i64) -> Router {
    Router {
        id: Uuid::new_v4().into(),
        account_id,
        name: format!("R{ms}"),
        object_type: ObjectType::Contacts,
        has_integration: false,
        is_published: true,
        settings: None,
        users: vec![],
        teams: vec![],
        created_at: base() + Duration::milliseconds(ms),
        updated_at: base() + Duration::milliseconds(ms),
        archived_at: None,
        archived_by: None,
        member_ids: vec![],
        revision: 1,
        version: 0,
    }
}

fn plan(account: &Account, routers: Vec<Router>) -> AccountPlan {
    AccountPlan {
        crm: None,
        account: account.clone(),
        clients: vec![],
        client_secrets: vec![],
        roles: vec![],
        members: vec![],
        holiday_calendars: vec![],
        teams: vec![],
        field_definitions: vec![],
        routers,
        records: vec![],
    }
}

/// Provisions an account (the routers' account, when any) with `routers`.
async fn provisioned(store: &Arc<dyn Store>, routers: Vec<Router>) -> Account {
    let mut a = account();
    if let Some(r) = routers.first() {
        a.id = r.account_id;
    }
    let plan = plan(&a, routers);
    store
        .provision(&ProvisionPlan {
            accounts: vec![plan],
        })
        .await
        .unwrap();
    a
}

fn revision(r: &Router, n: u64, name: &str) -> RouterRevision {
    let mut config = r.config();
    config.name = name.into();
    RouterRevision {
        router_id: r.id,
        account_id: r.account_id,
        revision: n,
        config,
        published_at: base() + Duration::seconds(n as i64),
        published_by: "client".into(),
    }
}

fn draft(r: &Router, name: &str) -> RouterDraft {
    let mut config = r.config();
    config.name = name.into();
    RouterDraft {
        router_id: r.id,
        account_id: r.account_id,
        based_on_revision: r.revision,
        config,
        updated_at: base(),
        updated_by: "client".into(),
        etag: ETag::new_random(),
    }
}

/// The write of a publish of `draft` over `stored`.
fn publish(stored: &Router, draft: &RouterDraft) -> RouterWrite {
    let next = stored.revision + 1;
    let mut router = stored.with_config(&draft.config, next);
    router.version = stored.version + 1;
    router.is_published = true;
    RouterWrite {
        router,
        expected_version: stored.version,
        revision: Some(RouterRevision {
            router_id: stored.id,
            account_id: stored.account_id,
            revision: next,
            config: draft.config.clone(),
            published_at: base(),
            published_by: "client".into(),
        }),
        draft: DraftChange::Publish(draft.etag.clone()),
        rotation: None,
        archives: false,
        completion: None,
        calendars: Default::default(),
        audit: None,
    }
}

async fn router_of(store: &Arc<dyn Store>, r: &Router) -> Router {
    store.get_router(r.account_id, r.id).await.unwrap().unwrap()
}

async fn provisioned_routers_have_revision_one_and_count_against_the_limit(backend: Backend) {
    let store = backend.store().await;
    let a_id: AccountId = Uuid::new_v4().into();
    let active = router(a_id, 1);
    let mut archived = router(a_id, 2);
    archived.archived_at = Some(base());
    let mut a = account();
    a.id = a_id;
    store
        .provision(&ProvisionPlan {
            accounts: vec![plan(&a, vec![active.clone(), archived.clone()])],
        })
        .await
        .unwrap();
    let first = store
        .get_router_revision(a.id, active.id, 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.published_by, "provisioning");
    assert_eq!(first.published_at, active.created_at);
    assert_eq!(first.config, active.config());
    assert!(store
        .get_router_revision(a.id, archived.id, 1)
        .await
        .unwrap()
        .is_some());
    // One non-archived router: a limit of 2 takes one more, and no other.
    let second = router(a.id, 3);
    store
        .create_router(&second, &revision(&second, 1, "R3"), 2, None, None)
        .await
        .unwrap();
    let third = router(a.id, 4);
    assert!(matches!(
        store
            .create_router(&third, &revision(&third, 1, "R4"), 2, None, None)
            .await,
        Err(StoreError::Rejected(_))
    ));
    assert!(store.get_router(a.id, third.id).await.unwrap().is_none());
    // Provisioning again skips the routers and counts nothing twice.
    store
        .provision(&ProvisionPlan {
            accounts: vec![plan(&a, vec![active.clone()])],
        })
        .await
        .unwrap();
    assert!(matches!(
        store
            .create_router(&third, &revision(&third, 1, "R4"), 2, None, None)
            .await,
        Err(StoreError::Rejected(_))
    ));
    store
        .create_router(&third, &revision(&third, 1, "R4"), 3, None, None)
        .await
        .unwrap();
}

async fn a_created_router_reads_back_with_its_first_revision_and_once_only(backend: Backend) {
    let store = backend.store().await;
    let a = provisioned(&store, vec![]).await;
    let r = router(a.id, 1);
    let first = revision(&r, 1, "R1");
    store
        .create_router(&r, &first, 1000, None, None)
        .await
        .unwrap();
    assert_eq!(router_of(&store, &r).await, r);
    assert_eq!(
        store.get_router_revision(a.id, r.id, 1).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store.get_router_revision(a.id, r.id, 2).await.unwrap(),
        None
    );
    assert!(matches!(
        store.create_router(&r, &first, 1000, None, None).await,
        Err(StoreError::Conflict)
    ));
    let listed = store
        .list_routers(a.id, &PageRequest::first(10, false))
        .await
        .unwrap();
    assert_eq!(listed.items, vec![r]);
}

async fn a_draft_is_written_only_over_the_tag_read_and_while_the_router_is_unchanged(
    backend: Backend,
) {
    let store = backend.store().await;
    let r = router(Uuid::new_v4().into(), 1);
    let a = provisioned(&store, vec![r.clone()]).await;
    assert_eq!(store.get_router_draft(a.id, r.id).await.unwrap(), None);
    let d1 = draft(&r, "one");
    store
        .put_router_draft(&d1, None, r.version, &Default::default(), None, None)
        .await
        .unwrap();
    assert_eq!(
        store.get_router_draft(a.id, r.id).await.unwrap(),
        Some(d1.clone())
    );
    let d2 = draft(&r, "two");
    // Over no draft (there is one), over another tag, or on a router moved on: nothing.
    for (replaces, version) in [
        (None, r.version),
        (Some(ETag::new_random()), r.version),
        (Some(d1.etag.clone()), r.version + 1),
    ] {
        assert!(matches!(
            store
                .put_router_draft(
                    &d2,
                    replaces.as_ref(),
                    version,
                    &Default::default(),
                    None,
                    None
                )
                .await,
            Err(StoreError::Conflict)
        ));
        assert_eq!(
            store.get_router_draft(a.id, r.id).await.unwrap(),
            Some(d1.clone())
        );
    }
    store
        .put_router_draft(
            &d2,
            Some(&d1.etag),
            r.version,
            &Default::default(),
            None,
            None,
        )
        .await
        .unwrap();
    assert!(matches!(
        store
            .delete_router_draft(a.id, r.id, &d1.etag, &Default::default(), None)
            .await,
        Err(StoreError::Conflict)
    ));
    store
        .delete_router_draft(a.id, r.id, &d2.etag, &Default::default(), None)
        .await
        .unwrap();
    assert_eq!(store.get_router_draft(a.id, r.id).await.unwrap(), None);
    assert!(matches!(
        store
            .delete_router_draft(a.id, r.id, &d2.etag, &Default::default(), None)
            .await,
        Err(StoreError::Conflict)
    ));
}

async fn a_publish_writes_revision_router_and_draft_removal_together_or_nothing(backend: Backend) {
    let store = backend.store().await;
    let r = router(Uuid::new_v4().into(), 1);
    let a = provisioned(&store, vec![r.clone()]).await;
    let d = draft(&r, "second");
    store
        .put_router_draft(&d, None, r.version, &Default::default(), None, None)
        .await
        .unwrap();
    let rotation = RotationState {
        version: 1,
        ..RotationState::default()
    };
    // A stale tag, a stale router version, or a rotation state moved on: nothing is written.
    let mut stale_tag = publish(&r, &d);
    stale_tag.draft = DraftChange::Publish(ETag::new_random());
    let mut stale_router = publish(&r, &d);
    stale_router.expected_version = r.version + 1;
    let mut stale_rotation = publish(&r, &d);
    stale_rotation.rotation = Some((rotation.clone(), 4));
    for write in [stale_tag, stale_router, stale_rotation] {
        assert!(matches!(
            store.write_router(&write).await,
            Err(StoreError::Conflict)
        ));
        assert_eq!(router_of(&store, &r).await, r);
        assert_eq!(
            store.get_router_revision(a.id, r.id, 2).await.unwrap(),
            None
        );
        assert_eq!(
            store.get_router_draft(a.id, r.id).await.unwrap(),
            Some(d.clone())
        );
        assert_eq!(
            store.rotation_state(r.id).await.unwrap(),
            RotationState::default()
        );
    }
    let mut write = publish(&r, &d);
    write.rotation = Some((rotation.clone(), 0));
    store.write_router(&write).await.unwrap();
    let live = router_of(&store, &r).await;
    assert_eq!(
        (live.revision, live.version, live.name.as_str()),
        (2, 1, "second")
    );
    assert_eq!(
        store.get_router_revision(a.id, r.id, 2).await.unwrap(),
        write.revision
    );
    assert_eq!(store.get_router_draft(a.id, r.id).await.unwrap(), None);
    assert_eq!(store.rotation_state(r.id).await.unwrap(), rotation);
    // A revision is never written twice.
    let mut again = publish(&live, &draft(&live, "x"));
    again.draft = DraftChange::Keep;
    again.revision = write.revision.clone();
    assert!(matches!(
        store.write_router(&again).await,
        Err(StoreError::Conflict)
    ));
}

async fn revisions_list_newest_first_and_a_page_after_a_position_holds_the_older_ones(
    backend: Backend,
) {
    let store = backend.store().await;
    let mut r = router(Uuid::new_v4().into(), 1);
    let a = provisioned(&store, vec![r.clone()]).await;
    for n in 2..=12 {
        let d = draft(&r, &format!("rev {n}"));
        store
            .put_router_draft(&d, None, r.version, &Default::default(), None, None)
            .await
            .unwrap();
        let write = publish(&r, &d);
        store.write_router(&write).await.unwrap();
        r = write.router;
    }
    let numbers = |items: &[RouterRevision]| items.iter().map(|r| r.revision).collect::<Vec<_>>();
    let first = store
        .list_router_revisions(a.id, r.id, &PageRequest::first(5, false))
        .await
        .unwrap();
    assert_eq!(numbers(&first.items), [12, 11, 10, 9, 8]);
    let mut next = first.next.clone();
    let mut walked = numbers(&first.items);
    while let Some(position) = next {
        let page = store
            .list_router_revisions(a.id, r.id, &PageRequest::after(5, position, false))
            .await
            .unwrap();
        walked.extend(numbers(&page.items));
        next = page.next;
    }
    assert_eq!(walked, (1..=12).rev().collect::<Vec<u64>>());
    let offset = store
        .list_router_revisions(a.id, r.id, &PageRequest::at_offset(3, 10, false))
        .await
        .unwrap();
    assert_eq!(numbers(&offset.items), [2, 1]);
    assert_eq!(offset.next, None);
    let other: RouterId = Uuid::new_v4().into();
    assert!(store
        .list_router_revisions(a.id, other, &PageRequest::first(5, false))
        .await
        .unwrap()
        .items
        .is_empty());
}

async fn an_archive_drops_the_draft_and_frees_a_place_under_the_limit(backend: Backend) {
    let store = backend.store().await;
    let r = router(Uuid::new_v4().into(), 1);
    let mut a = account();
    a.id = r.account_id;
    store
        .provision(&ProvisionPlan {
            accounts: vec![plan(&a, vec![r.clone()])],
        })
        .await
        .unwrap();
    let d = draft(&r, "d");
    store
        .put_router_draft(&d, None, r.version, &Default::default(), None, None)
        .await
        .unwrap();
    let other = router(a.id, 2);
    assert!(matches!(
        store
            .create_router(&other, &revision(&other, 1, "o"), 1, None, None)
            .await,
        Err(StoreError::Rejected(_))
    ));
    let mut archived = r.clone();
    archived.archived_at = Some(base() + Duration::seconds(5));
    archived.archived_by = Some("client".into());
    archived.version = r.version + 1;
    store
        .write_router(&RouterWrite {
            router: archived.clone(),
            expected_version: r.version,
            revision: None,
            draft: DraftChange::Drop(Some(d.etag.clone())),
            rotation: None,
            archives: true,
            completion: None,
            calendars: Default::default(),
            audit: None,
        })
        .await
        .unwrap();
    assert_eq!(router_of(&store, &r).await, archived);
    assert_eq!(store.get_router_draft(a.id, r.id).await.unwrap(), None);
    assert!(store
        .get_router_revision(a.id, r.id, 1)
        .await
        .unwrap()
        .is_some());
    store
        .create_router(&other, &revision(&other, 1, "o"), 1, None, None)
        .await
        .unwrap();
}

async fn drafts_and_revisions_are_seen_only_by_their_account(backend: Backend) {
    let store = backend.store().await;
    let r = router(Uuid::new_v4().into(), 1);
    let a = provisioned(&store, vec![r.clone()]).await;
    let d = draft(&r, "d");
    store
        .put_router_draft(&d, None, r.version, &Default::default(), None, None)
        .await
        .unwrap();
    let stranger: AccountId = Uuid::new_v4().into();
    assert_eq!(store.get_router_draft(stranger, r.id).await.unwrap(), None);
    assert_eq!(
        store.get_router_revision(stranger, r.id, 1).await.unwrap(),
        None
    );
    assert!(store
        .list_router_revisions(stranger, r.id, &PageRequest::first(5, false))
        .await
        .unwrap()
        .items
        .is_empty());
    assert!(matches!(
        store
            .delete_router_draft(stranger, r.id, &d.etag, &Default::default(), None)
            .await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(store.get_router_draft(a.id, r.id).await.unwrap(), Some(d));
}
