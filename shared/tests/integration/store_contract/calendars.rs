//! The holiday calendars' contract ([`shared::store::CalendarStore`], BEHAVIOR 17): the limit,
//! lists, replacements, deletion only when unused, provisioned calendars.

use super::*;

shared::on_both_stores!(
    threads = 2; store:
    holiday_calendars_are_limited_listed_replaced_and_deleted_only_when_unused,
    provisioned_holiday_calendars_count_against_the_limit_and_list_by_creation,
    calendars_are_read_by_key_each_once_fresh_and_only_the_accounts,
);

fn calendar(account_id: AccountId, name: &str) -> shared::model::HolidayCalendar {
    let holidays = serde_json::from_value(serde_json::json!([
        {"name": "New Year", "date": "2026-01-01", "yearly": true},
        {"name": "Half day", "date": "2026-12-24", "start": "13:00", "end": "17:00"}
    ]))
    .unwrap();
    shared::model::HolidayCalendar {
        id: shared::types::HolidayCalendarId::new_v7(),
        account_id,
        name: name.into(),
        time_zone: IanaTimeZone::parse("Europe/Berlin").unwrap(),
        holidays,
        created_at: base(),
        updated_at: base(),
        version: 1,
    }
}

/// BEHAVIOR 17 on both stores: at most `max` calendars per account (the count moves with each
/// create and delete), oldest first and read back as written, replaced at a version, and
/// deleted only while nothing names it: a member naming it (moved in the member's write) keeps
/// it, a reference to a calendar that is not the account's writes nothing.
async fn holiday_calendars_are_limited_listed_replaced_and_deleted_only_when_unused(
    store: Arc<dyn Store>,
) {
    use shared::model::{CalendarDeletion, CalendarRefs};
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let m = member(acc.id, "cal@acme.example", 1);
    plan.members = vec![m.clone()];
    store
        .provision(&ProvisionPlan {
            accounts: vec![plan],
        })
        .await
        .unwrap();
    let first = calendar(acc.id, "Berlin");
    let second = calendar(acc.id, "Munich");
    store
        .create_holiday_calendar(&first, 2, None)
        .await
        .unwrap();
    store
        .create_holiday_calendar(&second, 2, None)
        .await
        .unwrap();
    assert!(matches!(
        store
            .create_holiday_calendar(&calendar(acc.id, "third"), 2, None)
            .await,
        Err(StoreError::Rejected(_))
    ));
    let listed = store
        .list_holiday_calendars(acc.id, &PageRequest::first(10, false))
        .await
        .unwrap()
        .items;
    assert_eq!(listed, vec![first.clone(), second.clone()]);
    let other = account(None);
    assert!(store
        .get_holiday_calendar(other.id, first.id)
        .await
        .unwrap()
        .is_none());

    let mut renamed = first.clone();
    renamed.name = "Berlin office".into();
    renamed.version = 2;
    store
        .update_holiday_calendar(&renamed, 1, None)
        .await
        .unwrap();
    assert!(matches!(
        store.update_holiday_calendar(&renamed, 1, None).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store.get_holiday_calendar(acc.id, first.id).await.unwrap(),
        Some(renamed.clone())
    );

    // A member names the first calendar: it is in use until the member moves off it.
    let mut named = m.clone();
    named.holiday_calendar_id = Some(first.id);
    named.version = 2;
    store
        .update_member(&named, 1, &CalendarRefs::moving(None, Some(first.id)), None)
        .await
        .unwrap();
    assert_eq!(
        store
            .delete_holiday_calendar(acc.id, first.id, renamed.version, None)
            .await
            .unwrap(),
        CalendarDeletion::InUse
    );
    // A calendar of no account: nothing is written.
    let mut unknown = named.clone();
    let missing = shared::types::HolidayCalendarId::new_v7();
    unknown.holiday_calendar_id = Some(missing);
    unknown.version = 3;
    assert!(matches!(
        store
            .update_member(
                &unknown,
                2,
                &CalendarRefs::moving(Some(first.id), Some(missing)),
                None
            )
            .await,
        Err(StoreError::UnknownHolidayCalendar)
    ));
    assert_eq!(
        store
            .get_member(acc.id, m.id)
            .await
            .unwrap()
            .unwrap()
            .version,
        2
    );
    let mut moved = named.clone();
    moved.holiday_calendar_id = Some(second.id);
    moved.version = 3;
    store
        .update_member(
            &moved,
            2,
            &CalendarRefs::moving(Some(first.id), Some(second.id)),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .delete_holiday_calendar(acc.id, first.id, renamed.version, None)
            .await
            .unwrap(),
        CalendarDeletion::Deleted
    );
    assert_eq!(
        store
            .delete_holiday_calendar(acc.id, first.id, renamed.version, None)
            .await
            .unwrap(),
        CalendarDeletion::NotFound
    );
    assert_eq!(
        store
            .delete_holiday_calendar(acc.id, second.id, second.version, None)
            .await
            .unwrap(),
        CalendarDeletion::InUse
    );
    // The delete gave its place back: a new calendar fits under the limit of 2.
    store
        .create_holiday_calendar(&calendar(acc.id, "third"), 2, None)
        .await
        .unwrap();
}

/// BEHAVIOR 17 on both stores: provisioned calendars count against the account's limit (a
/// second run of the same file changes nothing), a member provisioned naming one keeps it in
/// use, and the list is by creation time whatever the ids.
async fn provisioned_holiday_calendars_count_against_the_limit_and_list_by_creation(
    store: Arc<dyn Store>,
) {
    use shared::model::CalendarDeletion;
    let acc = account(None);
    let mut later = calendar(acc.id, "later, smaller id");
    later.id = "00000000-0000-4000-8000-000000000001".parse().unwrap();
    later.created_at = base() + chrono::Duration::seconds(1);
    let mut earlier = calendar(acc.id, "earlier, larger id");
    earlier.id = "ffffffff-ffff-4fff-bfff-ffffffffffff".parse().unwrap();
    let mut m = member(acc.id, "named@acme.example", 1);
    m.holiday_calendar_id = Some(later.id);
    let mut plan = plan_of(&acc);
    plan.members = vec![m];
    plan.holiday_calendars = vec![later.clone(), earlier.clone()];
    let plan = ProvisionPlan {
        accounts: vec![plan],
    };
    store.provision(&plan).await.unwrap();
    store.provision(&plan).await.unwrap();
    assert!(matches!(
        store
            .create_holiday_calendar(&calendar(acc.id, "third"), 2, None)
            .await,
        Err(StoreError::Rejected(_))
    ));
    let listed: Vec<_> = store
        .list_holiday_calendars(acc.id, &PageRequest::first(10, false))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(listed, vec!["earlier, larger id", "later, smaller id"]);
    assert_eq!(
        store
            .delete_holiday_calendar(acc.id, later.id, later.version, None)
            .await
            .unwrap(),
        CalendarDeletion::InUse
    );
    assert_eq!(
        store
            .delete_holiday_calendar(acc.id, earlier.id, earlier.version, None)
            .await
            .unwrap(),
        CalendarDeletion::Deleted
    );
    store
        .create_holiday_calendar(&calendar(acc.id, "third"), 2, None)
        .await
        .unwrap();
}

/// The calendars dispatch reads by key (BEHAVIOR 17): only those asked, each once however often
/// asked, none of another account, an unknown id left out, no ids no calendar; a replacement is
/// read at once (the read is strongly consistent: a calendar written a moment ago counts at the
/// next dispatch).
async fn calendars_are_read_by_key_each_once_fresh_and_only_the_accounts(store: Arc<dyn Store>) {
    let acc = account(None);
    let other = account(None);
    store
        .provision(&ProvisionPlan {
            accounts: vec![plan_of(&acc), plan_of(&other)],
        })
        .await
        .unwrap();
    let berlin = calendar(acc.id, "Berlin");
    let munich = calendar(acc.id, "Munich");
    let paris = calendar(acc.id, "Paris");
    let elsewhere = calendar(other.id, "Elsewhere");
    for c in [&berlin, &munich, &paris] {
        store.create_holiday_calendar(c, 20, None).await.unwrap();
    }
    store
        .create_holiday_calendar(&elsewhere, 20, None)
        .await
        .unwrap();
    let by_name = |mut found: Vec<shared::model::HolidayCalendar>| {
        found.sort_by(|a, b| a.name.cmp(&b.name));
        found
    };
    let unknown = shared::types::HolidayCalendarId::new_v7();
    let found = store
        .get_holiday_calendars(
            acc.id,
            &[munich.id, berlin.id, munich.id, elsewhere.id, unknown],
        )
        .await
        .unwrap();
    assert_eq!(by_name(found), vec![berlin.clone(), munich.clone()]);
    assert!(store
        .get_holiday_calendars(acc.id, &[])
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .get_holiday_calendars(other.id, &[berlin.id, paris.id])
        .await
        .unwrap()
        .is_empty());
    let mut replaced = paris.clone();
    replaced.name = "Paris office".into();
    replaced.holidays = serde_json::from_value(serde_json::json!([
        {"name": "Bastille Day", "date": "2026-07-14", "yearly": true}
    ]))
    .unwrap();
    replaced.version = 2;
    store
        .update_holiday_calendar(&replaced, 1, None)
        .await
        .unwrap();
    assert_eq!(
        store
            .get_holiday_calendars(acc.id, &[paris.id])
            .await
            .unwrap(),
        vec![replaced]
    );
}

/// Provisioning reruns, on a backend of their own for the DynamoDB table.
mod reruns {
    use super::*;
    use shared::model::holiday_calendar::CalendarRefs;
    use shared::model::CalendarDeletion;
    use shared::store::harness::Backend;

    shared::on_both_stores!(
        threads = 2;
        a_provisioning_rerun_sets_calendar_references_from_what_names_them,
        a_write_that_releases_a_calendar_that_is_gone_goes_on_without_it,
        a_rerun_counts_what_names_a_calendar_as_it_is_now_whatever_the_index_says,
    );

    /// A member moved off a calendar just before a provisioning rerun, while the account's
    /// member index still lists it on the calendar (DynamoDB's indexes are eventually
    /// consistent; on the emulator the index is made to lag with
    /// `recording::lagging_index`): the rerun counts from the member as stored, so the calendar
    /// is free and can be deleted. Before the change the rerun counted from the index: the
    /// member was counted back, 409 "in use" for ever.
    async fn a_rerun_counts_what_names_a_calendar_as_it_is_now_whatever_the_index_says(
        backend: Backend,
    ) {
        let (store, table) = backend.fresh().await;
        let acc = account(None);
        let office = calendar(acc.id, "office");
        let mut m = member(acc.id, "leaving@acme.example", 1);
        m.holiday_calendar_id = Some(office.id);
        let mut plan = plan_of(&acc);
        plan.members = vec![m.clone()];
        plan.holiday_calendars = vec![office.clone()];
        let plan = ProvisionPlan {
            accounts: vec![plan],
        };
        store.provision(&plan).await.unwrap();
        // From here the index answers as it did at the next rerun's reads.
        if let Some(table) = &table {
            shared::store::dynamodb::recording::lagging_index(table.store.table_name());
        }
        store.provision(&plan).await.unwrap();
        let stored = store.get_member(acc.id, m.id).await.unwrap().unwrap();
        let mut moved = stored.clone();
        moved.holiday_calendar_id = None;
        moved.version = stored.version + 1;
        store
            .update_member(
                &moved,
                stored.version,
                &CalendarRefs::moving(Some(office.id), None),
                None,
            )
            .await
            .unwrap();
        store.provision(&plan).await.unwrap();
        if let Some(table) = &table {
            shared::store::dynamodb::recording::current_index(table.store.table_name());
        }
        assert_eq!(
            store
                .delete_holiday_calendar(acc.id, office.id, office.version, None)
                .await
                .unwrap(),
            CalendarDeletion::Deleted
        );
        if let Some(table) = table {
            table.delete().await;
        }
    }

    /// BEHAVIOR 17: a calendar that is gone (deleted while a miscount said nothing named it)
    /// has no reference to release. A member moved off it, and a router archived while it named
    /// one, are written, their other reference changes applied; only gaining a reference needs
    /// the calendar. Before the change, DynamoDB cancelled such a write on the calendar's
    /// existence condition: `UnknownHolidayCalendar`, a 500 on the archive of the router and the
    /// member's PATCH.
    async fn a_write_that_releases_a_calendar_that_is_gone_goes_on_without_it(backend: Backend) {
        let (store, table) = backend.fresh().await;
        let acc = account(None);
        let office = calendar(acc.id, "office");
        let gone = shared::types::HolidayCalendarId::new_v7();
        let mut m = member(acc.id, "moving@acme.example", 1);
        m.holiday_calendar_id = Some(gone);
        let r = router(acc.id, "archived", 2);
        let mut plan = plan_of(&acc);
        plan.members = vec![m.clone()];
        plan.holiday_calendars = vec![office.clone()];
        store
            .provision(&ProvisionPlan {
                accounts: vec![plan],
            })
            .await
            .unwrap();
        // Moved from the gone calendar onto the office's: the gain is counted.
        let mut moved = store.get_member(acc.id, m.id).await.unwrap().unwrap();
        let version = moved.version;
        moved.holiday_calendar_id = Some(office.id);
        moved.version = version + 1;
        store
            .update_member(
                &moved,
                version,
                &CalendarRefs::moving(Some(gone), Some(office.id)),
                None,
            )
            .await
            .unwrap();
        assert_eq!(
            store
                .get_member(acc.id, m.id)
                .await
                .unwrap()
                .unwrap()
                .holiday_calendar_id,
            Some(office.id)
        );
        assert_eq!(
            store
                .delete_holiday_calendar(acc.id, office.id, office.version, None)
                .await
                .unwrap(),
            CalendarDeletion::InUse
        );
        // A router archived while its configuration named a gone calendar.
        store
            .provision(&ProvisionPlan {
                accounts: vec![{
                    let mut p = plan_of(&acc);
                    p.routers = vec![r.clone()];
                    p
                }],
            })
            .await
            .unwrap();
        let stored = store.get_router(acc.id, r.id).await.unwrap().unwrap();
        let mut archived = stored.clone();
        archived.archived_at = Some(base());
        archived.archived_by = Some("admin".into());
        archived.version = stored.version + 1;
        let mut released = CalendarRefs::none();
        released.remove(Some(gone));
        store
            .write_router(&shared::model::RouterWrite {
                router: archived,
                expected_version: stored.version,
                revision: None,
                draft: shared::model::DraftChange::Keep,
                rotation: None,
                archives: true,
                completion: None,
                calendars: released,
                audit: None,
            })
            .await
            .unwrap();
        assert!(store
            .get_router(acc.id, r.id)
            .await
            .unwrap()
            .unwrap()
            .is_archived());
        if let Some(table) = table {
            table.delete().await;
        }
    }

    /// A rerun sets a calendar's reference count from what names it, never adds to it: after a
    /// first run that stopped between the calendar (written with the count of the members that
    /// name it) and the chunk of those members, the next run writes the members and the count
    /// stays theirs; a reference made since by the API (a member moved onto the calendar) stays
    /// counted. The calendar is in use until the last of them lets go, then deleted. On
    /// DynamoDB the stop is made by removing the members' items after the first run
    /// (provisioning writes in transactions of at most 100 items, so a large file can stop
    /// between two); the embedded store provisions at once, so there the rerun follows a whole
    /// run. Before the change the DynamoDB rerun counted the three members again: 409 "in use"
    /// for ever.
    async fn a_provisioning_rerun_sets_calendar_references_from_what_names_them(backend: Backend) {
        let (store, table) = backend.fresh().await;
        let acc = account(None);
        let office = calendar(acc.id, "office");
        let mut namers: Vec<Member> = (0..3)
            .map(|i| {
                let mut m = member(acc.id, &format!("named{i}@acme.example"), i);
                m.holiday_calendar_id = Some(office.id);
                m
            })
            .collect();
        let other = member(acc.id, "other@acme.example", 9);
        let mut plan = plan_of(&acc);
        plan.members = namers.iter().cloned().chain([other.clone()]).collect();
        plan.holiday_calendars = vec![office.clone()];
        let plan = ProvisionPlan {
            accounts: vec![plan],
        };
        store.provision(&plan).await.unwrap();

        // The API moves another member onto the calendar: one more reference.
        let mut moved = other.clone();
        moved.holiday_calendar_id = Some(office.id);
        moved.version = 2;
        store
            .update_member(
                &moved,
                1,
                &CalendarRefs::moving(None, Some(office.id)),
                None,
            )
            .await
            .unwrap();

        // A stop before the members' chunk: their items are gone, the count still holds them.
        if let Some(table) = &table {
            // A member and its e-mail lookup item are written in one transaction: a stop
            // leaves neither.
            let keys = namers.iter().flat_map(|m| {
                [
                    shared::store::dynamodb::keys::member(m.id),
                    shared::store::dynamodb::keys::member_email(acc.id, &m.email),
                ]
            });
            for key in keys {
                table
                    .store
                    .client()
                    .delete_item()
                    .table_name(table.store.table_name())
                    .key("PK", aws_sdk_dynamodb::types::AttributeValue::S(key.pk))
                    .key("SK", aws_sdk_dynamodb::types::AttributeValue::S(key.sk))
                    .send()
                    .await
                    .unwrap();
            }
            assert_eq!(store.get_member(acc.id, namers[0].id).await.unwrap(), None);
        }
        store.provision(&plan).await.unwrap();
        store.provision(&plan).await.unwrap();

        // Four references: three provisioned members and the moved one.
        namers.push(moved);
        for m in &namers {
            assert_eq!(
                store
                    .delete_holiday_calendar(acc.id, office.id, office.version, None)
                    .await
                    .unwrap(),
                CalendarDeletion::InUse,
                "{} still names it",
                m.email
            );
            let stored = store.get_member(acc.id, m.id).await.unwrap().unwrap();
            let mut released = stored.clone();
            released.holiday_calendar_id = None;
            released.version = stored.version + 1;
            store
                .update_member(
                    &released,
                    stored.version,
                    &CalendarRefs::moving(Some(office.id), None),
                    None,
                )
                .await
                .unwrap();
        }
        assert_eq!(
            store
                .delete_holiday_calendar(acc.id, office.id, office.version, None)
                .await
                .unwrap(),
            CalendarDeletion::Deleted
        );
        if let Some(table) = table {
            table.delete().await;
        }
    }
}
