//! The records' contract ([`shared::store::RecordStore`]): reads, lists and cursors, uniqueness
//! guards under creates, updates, archives and races, batch reads.

use super::*;

shared::on_both_stores!(
    threads = 2; store:
    a_created_record_reads_back_exactly,
    a_record_of_another_account_or_type_reads_as_absent,
    records_list_by_creation_time_then_id_and_page_by_offset,
    archived_records_are_listed_only_when_asked,
    a_cursor_walk_returns_every_item_once_in_offset_order,
    a_cursor_walk_neither_skips_nor_repeats_while_items_are_created_and_archived,
    a_second_active_record_with_a_taken_key_is_a_duplicate_naming_the_first_colliding_key,
    the_same_key_in_another_account_or_type_is_not_a_duplicate,
    twenty_concurrent_creates_with_one_key_let_exactly_one_succeed,
    a_record_id_that_exists_cannot_be_created_again,
    archiving_a_record_releases_its_keys_for_reuse,
    an_update_that_changes_a_key_moves_its_guard,
    an_update_claiming_a_key_held_by_another_record_is_a_duplicate_and_writes_nothing,
    an_update_at_a_stale_version_is_a_conflict_and_writes_nothing,
    an_update_of_an_archived_record_is_a_conflict,
    find_by_unique_key_finds_only_the_active_holder_in_its_account_and_type,
    records_are_read_by_id_in_batches_each_once_and_only_in_their_account,
);

async fn a_created_record_reads_back_exactly(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(
        a,
        ObjectType::Contacts,
        0,
        &[("email", "jo@x.co"), ("first_name", "Jo"), ("note", "")],
    );
    store.create_record(&r, &contact_keys(&r)).await.unwrap();
    let back = store
        .get_record(a, ObjectType::Contacts, r.id)
        .await
        .unwrap();
    assert_eq!(back, Some(r.clone()));
    let plain = record(a, ObjectType::Deals, 1, &[("deal_name", "Big")]);
    store.create_record(&plain, &[]).await.unwrap();
    assert_eq!(
        store
            .get_record(a, ObjectType::Deals, plain.id)
            .await
            .unwrap(),
        Some(plain)
    );
}

async fn a_record_of_another_account_or_type_reads_as_absent(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(a, ObjectType::Contacts, 0, &[("email", "jo@x.co")]);
    store.create_record(&r, &contact_keys(&r)).await.unwrap();
    let other = new_id();
    assert_eq!(
        store
            .get_record(other, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .get_record(a, ObjectType::Companies, r.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .get_record(a, ObjectType::Contacts, new_id())
            .await
            .unwrap(),
        None
    );
    // The shared read answers the same.
    let shared = |account, object_type, id| {
        let store = store.clone();
        async move {
            store
                .get_record_shared(account, object_type, id)
                .await
                .unwrap()
                .map(|record| Record::clone(&record))
        }
    };
    assert_eq!(shared(a, ObjectType::Contacts, r.id).await, Some(r.clone()));
    assert_eq!(shared(other, ObjectType::Contacts, r.id).await, None);
    assert_eq!(shared(a, ObjectType::Companies, r.id).await, None);
    assert_eq!(shared(a, ObjectType::Contacts, new_id()).await, None);
    assert!(store
        .list_records(other, ObjectType::Contacts, &page(100, 0))
        .await
        .unwrap()
        .items
        .is_empty());
    assert!(store
        .list_records(a, ObjectType::Companies, &page(100, 0))
        .await
        .unwrap()
        .items
        .is_empty());
}

async fn records_list_by_creation_time_then_id_and_page_by_offset(store: Arc<dyn Store>) {
    let a = new_id();
    // Created out of order; two share a creation time and are ordered by id.
    let mut made = Vec::new();
    for ms in [30, 10, 20, 10, 40] {
        let r = record(a, ObjectType::Companies, ms, &[]);
        store.create_record(&r, &[]).await.unwrap();
        made.push(r);
    }
    made.sort_by_key(|r| (r.created_at, r.id));
    let expected = ids(&made, |r| r.id);
    let listed = store
        .list_records(a, ObjectType::Companies, &page(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&listed, |r| r.id), expected);
    let second = store
        .list_records(a, ObjectType::Companies, &page(2, 2))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&second, |r| r.id), expected[2..4]);
    let last = store
        .list_records(a, ObjectType::Companies, &page(2, 4))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&last, |r| r.id), expected[4..]);
    assert!(store
        .list_records(a, ObjectType::Companies, &page(2, 5))
        .await
        .unwrap()
        .items
        .is_empty());
    assert!(store
        .list_records(a, ObjectType::Companies, &page(10, 1000))
        .await
        .unwrap()
        .items
        .is_empty());
}

async fn archived_records_are_listed_only_when_asked(store: Arc<dyn Store>) {
    let a = new_id();
    let r1 = record(a, ObjectType::Contacts, 1, &[("email", "one@x.co")]);
    let r2 = record(a, ObjectType::Contacts, 2, &[("email", "two@x.co")]);
    let r3 = record(a, ObjectType::Contacts, 3, &[]);
    for r in [&r1, &r2, &r3] {
        store.create_record(r, &contact_keys(r)).await.unwrap();
    }
    let archived = archive(&store, &r2, &contact_keys(&r2)).await;
    let active = store
        .list_records(a, ObjectType::Contacts, &page(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&active, |r| r.id), [r1.id, r3.id]);
    let everything = store
        .list_records(a, ObjectType::Contacts, &all(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&everything, |r| r.id), [r1.id, r2.id, r3.id]);
    assert_eq!(everything[1], archived);
    let offset = store
        .list_records(a, ObjectType::Contacts, &page(1, 1))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&offset, |r| r.id), [r3.id]);
}

/// Walks a record list with `after`, `limit` items a page; the ids in walk order.
async fn walk_records(
    store: &Arc<dyn Store>, a: AccountId, t: ObjectType, limit: usize, include_archived: bool,
) -> Vec<RecordId> {
    let mut seen = Vec::new();
    let mut page = PageRequest::first(limit, include_archived);
    loop {
        let listed = store.list_records(a, t, &page).await.unwrap();
        assert!(listed.items.len() <= limit);
        seen.extend(listed.items.iter().map(|r| r.id));
        match listed.next {
            Some(p) => page = PageRequest::after(limit, p, include_archived),
            None => return seen,
        }
    }
}

async fn a_cursor_walk_returns_every_item_once_in_offset_order(store: Arc<dyn Store>) {
    let a = new_id();
    // Out of creation order, with shared creation times ordered by id.
    for i in 0..23i64 {
        let r = record(a, ObjectType::Deals, (i * 7) % 5, &[]);
        store.create_record(&r, &[]).await.unwrap();
    }
    let by_offset = ids(
        &store
            .list_records(a, ObjectType::Deals, &page(100, 0))
            .await
            .unwrap()
            .items,
        |r| r.id,
    );
    assert_eq!(by_offset.len(), 23);
    for limit in [1, 4, 5, 23, 100] {
        assert_eq!(
            walk_records(&store, a, ObjectType::Deals, limit, false).await,
            by_offset,
            "limit {limit}"
        );
    }
    // A full last page says no more; a page with more says so.
    let exact = store
        .list_records(a, ObjectType::Deals, &page(23, 0))
        .await
        .unwrap();
    assert_eq!(exact.next, None);
    let short = store
        .list_records(a, ObjectType::Deals, &page(22, 0))
        .await
        .unwrap();
    assert!(short.next.is_some());
    // Offset pages report `next` too, and a walk may continue from one with `after`.
    let from_offset = store
        .list_records(a, ObjectType::Deals, &page(5, 10))
        .await
        .unwrap();
    let rest = store
        .list_records(
            a,
            ObjectType::Deals,
            &PageRequest::after(100, from_offset.next.unwrap(), false),
        )
        .await
        .unwrap();
    assert_eq!(ids(&rest.items, |r| r.id), by_offset[15..]);
    // The limit may change between pages.
    let first = store
        .list_records(a, ObjectType::Deals, &page(3, 0))
        .await
        .unwrap();
    let next = store
        .list_records(
            a,
            ObjectType::Deals,
            &PageRequest::after(7, first.next.unwrap(), false),
        )
        .await
        .unwrap();
    assert_eq!(ids(&next.items, |r| r.id), by_offset[3..10]);
}

async fn a_cursor_walk_neither_skips_nor_repeats_while_items_are_created_and_archived(
    store: Arc<dyn Store>,
) {
    let a = new_id();
    let mut made = Vec::new();
    for i in 0..12i64 {
        let r = record(a, ObjectType::Tickets, i, &[]);
        store.create_record(&r, &[]).await.unwrap();
        made.push(r);
    }
    // First page of the active list, then: archive an item already seen and one not yet seen,
    // and create new ones (later creation times).
    let first = store
        .list_records(a, ObjectType::Tickets, &page(4, 0))
        .await
        .unwrap();
    assert_eq!(ids(&first.items, |r| r.id), ids(&made[..4], |r| r.id));
    archive(&store, &made[1], &[]).await;
    archive(&store, &made[6], &[]).await;
    let mut created = Vec::new();
    for i in 0..3i64 {
        let r = record(a, ObjectType::Tickets, 100 + i, &[]);
        store.create_record(&r, &[]).await.unwrap();
        created.push(r.id);
    }
    let mut seen = ids(&first.items, |r| r.id);
    let mut next = first.next;
    while let Some(p) = next {
        let listed = store
            .list_records(a, ObjectType::Tickets, &PageRequest::after(4, p, false))
            .await
            .unwrap();
        seen.extend(listed.items.iter().map(|r| r.id));
        next = listed.next;
    }
    let mut expected: Vec<RecordId> = ids(&made, |r| r.id)
        .into_iter()
        .filter(|id| *id != made[6].id)
        .collect();
    expected.extend(created);
    assert_eq!(
        seen, expected,
        "no skip, no repeat; the item archived ahead is gone"
    );
    // The archived=true list still walks everything.
    assert_eq!(
        walk_records(&store, a, ObjectType::Tickets, 5, true)
            .await
            .len(),
        15
    );
}

async fn a_second_active_record_with_a_taken_key_is_a_duplicate_naming_the_first_colliding_key(
    store: Arc<dyn Store>,
) {
    let a = new_id();
    let first = record(
        a,
        ObjectType::Contacts,
        1,
        &[("email", "jo@x.co"), ("external_id", "E1")],
    );
    store
        .create_record(&first, &contact_keys(&first))
        .await
        .unwrap();

    let both = record(
        a,
        ObjectType::Contacts,
        2,
        &[("email", "jo@x.co"), ("external_id", "E1")],
    );
    match store.create_record(&both, &contact_keys(&both)).await {
        Err(StoreError::Duplicate { field }) => assert_eq!(field, "email"),
        other => panic!("expected a duplicate email, got {other:?}"),
    }
    let second_key = record(
        a,
        ObjectType::Contacts,
        3,
        &[("email", "new@x.co"), ("external_id", "E1")],
    );
    match store
        .create_record(&second_key, &contact_keys(&second_key))
        .await
    {
        Err(StoreError::Duplicate { field }) => assert_eq!(field, "external_id"),
        other => panic!("expected a duplicate external_id, got {other:?}"),
    }
    // Nothing of the refused records was written: neither the records nor their free keys.
    assert_eq!(
        store
            .get_record(a, ObjectType::Contacts, second_key.id)
            .await
            .unwrap(),
        None
    );
    let listed = store
        .list_records(a, ObjectType::Contacts, &all(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&listed, |r| r.id), [first.id]);
    let free = record(a, ObjectType::Contacts, 4, &[("email", "new@x.co")]);
    store
        .create_record(&free, &contact_keys(&free))
        .await
        .unwrap();
}

async fn the_same_key_in_another_account_or_type_is_not_a_duplicate(store: Arc<dyn Store>) {
    let a = new_id();
    let b = new_id();
    let r = record(a, ObjectType::Deals, 1, &[("external_id", "X")]);
    store
        .create_record(&r, &[key("external_id", "X")])
        .await
        .unwrap();
    let other_account = record(b, ObjectType::Deals, 2, &[("external_id", "X")]);
    store
        .create_record(&other_account, &[key("external_id", "X")])
        .await
        .unwrap();
    let other_type = record(a, ObjectType::Tickets, 3, &[("external_id", "X")]);
    store
        .create_record(&other_type, &[key("external_id", "X")])
        .await
        .unwrap();
}

async fn twenty_concurrent_creates_with_one_key_let_exactly_one_succeed(store: Arc<dyn Store>) {
    let a = new_id();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let r = record(a, ObjectType::Contacts, i, &[("email", "race@x.co")]);
            store.create_record(&r, &contact_keys(&r)).await
        }));
    }
    let mut created = 0;
    let mut duplicates = 0;
    for t in tasks {
        match t.await.expect("task ran") {
            Ok(()) => created += 1,
            Err(StoreError::Duplicate { field }) if field == "email" => duplicates += 1,
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((created, duplicates), (1, 19));
    let listed = store
        .list_records(a, ObjectType::Contacts, &all(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(listed.len(), 1);
}

async fn a_record_id_that_exists_cannot_be_created_again(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(a, ObjectType::Contacts, 1, &[("email", "jo@x.co")]);
    store.create_record(&r, &contact_keys(&r)).await.unwrap();
    let mut again = r.clone();
    again.values.insert("email".into(), "other@x.co".into());
    match store.create_record(&again, &contact_keys(&again)).await {
        Err(StoreError::Conflict) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    match store.create_record(&r, &[]).await {
        Err(StoreError::Conflict) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    // The refused write claimed nothing.
    let free = record(a, ObjectType::Contacts, 2, &[("email", "other@x.co")]);
    store
        .create_record(&free, &contact_keys(&free))
        .await
        .unwrap();
    assert_eq!(
        store
            .get_record(a, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        Some(r)
    );
}

async fn archiving_a_record_releases_its_keys_for_reuse(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(
        a,
        ObjectType::Contacts,
        1,
        &[("email", "jo@x.co"), ("external_id", "E")],
    );
    store.create_record(&r, &contact_keys(&r)).await.unwrap();
    let archived = archive(&store, &r, &contact_keys(&r)).await;
    assert_eq!(
        store
            .get_record(a, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        Some(archived)
    );
    let reuse = record(
        a,
        ObjectType::Contacts,
        2,
        &[("email", "jo@x.co"), ("external_id", "E")],
    );
    store
        .create_record(&reuse, &contact_keys(&reuse))
        .await
        .unwrap();
    let found = store
        .find_by_unique_key(a, ObjectType::Contacts, &key("email", "jo@x.co"))
        .await
        .unwrap();
    assert_eq!(found.map(|r| r.id), Some(reuse.id));
}

async fn an_update_that_changes_a_key_moves_its_guard(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(
        a,
        ObjectType::Contacts,
        1,
        &[("email", "old@x.co"), ("external_id", "E")],
    );
    store.create_record(&r, &contact_keys(&r)).await.unwrap();
    let mut next = r.clone();
    next.values.insert("email".into(), "new@x.co".into());
    next.values.insert("first_name".into(), "Jo".into());
    next.version = 2;
    next.updated_at = at(5);
    store
        .update_record(
            &next,
            1,
            &[key("email", "new@x.co")],
            &[key("email", "old@x.co")],
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .get_record(a, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        Some(next.clone())
    );
    let by_new = store
        .find_by_unique_key(a, ObjectType::Contacts, &key("email", "new@x.co"))
        .await
        .unwrap();
    assert_eq!(by_new.map(|r| r.id), Some(r.id));
    assert_eq!(
        store
            .find_by_unique_key(a, ObjectType::Contacts, &key("email", "old@x.co"))
            .await
            .unwrap(),
        None
    );
    // The old key is free, the new one taken, the unchanged one still held.
    let old = record(a, ObjectType::Contacts, 2, &[("email", "old@x.co")]);
    store
        .create_record(&old, &contact_keys(&old))
        .await
        .unwrap();
    let new = record(a, ObjectType::Contacts, 3, &[("email", "new@x.co")]);
    assert!(matches!(
        store.create_record(&new, &contact_keys(&new)).await,
        Err(StoreError::Duplicate { .. })
    ));
    let ext = record(a, ObjectType::Contacts, 4, &[("external_id", "E")]);
    assert!(matches!(
        store.create_record(&ext, &contact_keys(&ext)).await,
        Err(StoreError::Duplicate { .. })
    ));
}

async fn an_update_claiming_a_key_held_by_another_record_is_a_duplicate_and_writes_nothing(
    store: Arc<dyn Store>,
) {
    let a = new_id();
    let holder = record(a, ObjectType::Companies, 1, &[("website_url", "acme.com")]);
    store
        .create_record(&holder, &[key("website_url", "acme.com")])
        .await
        .unwrap();
    let r = record(a, ObjectType::Companies, 2, &[("website_url", "beta.com")]);
    store
        .create_record(&r, &[key("website_url", "beta.com")])
        .await
        .unwrap();
    let mut next = r.clone();
    next.values.insert("website_url".into(), "acme.com".into());
    next.version = 2;
    match store
        .update_record(
            &next,
            1,
            &[key("website_url", "acme.com")],
            &[key("website_url", "beta.com")],
        )
        .await
    {
        Err(StoreError::Duplicate { field }) => assert_eq!(field, "website_url"),
        other => panic!("expected a duplicate, got {other:?}"),
    }
    assert_eq!(
        store
            .get_record(a, ObjectType::Companies, r.id)
            .await
            .unwrap(),
        Some(r.clone())
    );
    let still = store
        .find_by_unique_key(a, ObjectType::Companies, &key("website_url", "beta.com"))
        .await
        .unwrap();
    assert_eq!(still.map(|x| x.id), Some(r.id));
}

async fn an_update_at_a_stale_version_is_a_conflict_and_writes_nothing(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(a, ObjectType::Contacts, 1, &[("email", "jo@x.co")]);
    store.create_record(&r, &contact_keys(&r)).await.unwrap();
    let mut first = r.clone();
    first.values.insert("first_name".into(), "One".into());
    first.version = 2;
    store.update_record(&first, 1, &[], &[]).await.unwrap();
    let mut stale = r.clone();
    stale.values.insert("email".into(), "two@x.co".into());
    stale.version = 2;
    match store
        .update_record(
            &stale,
            1,
            &[key("email", "two@x.co")],
            &[key("email", "jo@x.co")],
        )
        .await
    {
        Err(StoreError::Conflict) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        store
            .get_record(a, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        Some(first)
    );
    let two = record(a, ObjectType::Contacts, 2, &[("email", "two@x.co")]);
    store
        .create_record(&two, &contact_keys(&two))
        .await
        .unwrap();
    // Updating a record that does not exist is a conflict too.
    let ghost = record(a, ObjectType::Contacts, 3, &[]);
    assert!(matches!(
        store.update_record(&ghost, 1, &[], &[]).await,
        Err(StoreError::Conflict)
    ));
}

async fn an_update_of_an_archived_record_is_a_conflict(store: Arc<dyn Store>) {
    let a = new_id();
    let r = record(a, ObjectType::Tickets, 1, &[("external_id", "T")]);
    store
        .create_record(&r, &[key("external_id", "T")])
        .await
        .unwrap();
    let archived = archive(&store, &r, &[key("external_id", "T")]).await;
    let mut next = archived.clone();
    next.archived_at = None;
    next.version = archived.version + 1;
    assert!(matches!(
        store
            .update_record(&next, archived.version, &[key("external_id", "T")], &[])
            .await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store
            .get_record(a, ObjectType::Tickets, r.id)
            .await
            .unwrap(),
        Some(archived)
    );
}

async fn find_by_unique_key_finds_only_the_active_holder_in_its_account_and_type(
    store: Arc<dyn Store>,
) {
    let a = new_id();
    let c = record(a, ObjectType::Companies, 1, &[("website_url", "acme.com")]);
    store
        .create_record(&c, &[key("website_url", "acme.com")])
        .await
        .unwrap();
    let k = key("website_url", "acme.com");
    assert_eq!(
        store
            .find_by_unique_key(a, ObjectType::Companies, &k)
            .await
            .unwrap(),
        Some(c.clone())
    );
    assert_eq!(
        store
            .find_by_unique_key(new_id(), ObjectType::Companies, &k)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .find_by_unique_key(a, ObjectType::Contacts, &k)
            .await
            .unwrap(),
        None
    );
    archive(&store, &c, std::slice::from_ref(&k)).await;
    assert_eq!(
        store
            .find_by_unique_key(a, ObjectType::Companies, &k)
            .await
            .unwrap(),
        None
    );
}

async fn records_are_read_by_id_in_batches_each_once_and_only_in_their_account(
    store: Arc<dyn Store>,
) {
    // 230 records: three `BatchGetItem`s of at most 100 keys on DynamoDB (the emulator, like
    // the service, refuses a request of more).
    let acc = account(None);
    let other = account(None);
    let mut plan = plan_of(&acc);
    let mut records: Vec<Record> = (0..230)
        .map(|n| {
            record(
                acc.id,
                ObjectType::Contacts,
                n,
                &[("email", &format!("r{n}@x.co"))],
            )
        })
        .collect();
    records.push(record(
        acc.id,
        ObjectType::Deals,
        300,
        &[("deal_name", "D")],
    ));
    plan.records = records
        .iter()
        .enumerate()
        .map(|(i, r)| planned(r.clone(), &format!("records[{i}]")))
        .collect();
    let foreign = record(other.id, ObjectType::Contacts, 1, &[("email", "f@x.co")]);
    let mut other_plan = plan_of(&other);
    other_plan.records = vec![planned(foreign.clone(), "records[0]")];
    provision(&store, vec![plan, other_plan]).await;
    let archived = archive(&store, &records[5], &contact_keys(&records[5])).await;

    // Asked newest first, with repeats, an unknown id and another account's record.
    let mut asked: Vec<RecordId> = records.iter().rev().map(|r| r.id).collect();
    asked.insert(3, records[0].id);
    asked.push(records[230].id);
    asked.push(new_id());
    asked.push(foreign.id);
    let found = store.get_records(acc.id, &asked).await.unwrap();
    let mut first_asked: Vec<RecordId> = Vec::new();
    for id in &asked {
        if !first_asked.contains(id) && records.iter().any(|r| r.id == *id) {
            first_asked.push(*id);
        }
    }
    assert_eq!(
        found.len(),
        231,
        "each record once, of any type, archived included"
    );
    assert_eq!(
        ids(&found, |r| r.id),
        first_asked,
        "in the order first asked"
    );
    for r in &found {
        let stored = if r.id == archived.id {
            &archived
        } else {
            records.iter().find(|x| x.id == r.id).unwrap()
        };
        assert!(r == stored, "{} reads back exactly", r.id);
    }
    assert!(store.get_records(acc.id, &[]).await.unwrap().is_empty());
    assert!(store
        .get_records(other.id, &[records[0].id])
        .await
        .unwrap()
        .is_empty());
}
