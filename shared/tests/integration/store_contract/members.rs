//! The members' contract ([`shared::store::MemberStore`]): lists by e-mail, lookups, conditional
//! updates; cursor walks of members and routers.

use super::*;

shared::on_both_stores!(
    threads = 2; store:
    members_and_routers_walk_with_cursors,
    members_list_by_email_and_skip_archived_unless_asked,
    a_member_is_found_by_id_or_case_insensitive_email_only_in_its_account,
    a_member_lookup_by_email_matches_the_whole_address_never_a_prefix,
    a_member_update_is_conditional_on_version_and_activity,
    members_are_identified_by_email_in_their_account_each_once,
);

async fn members_list_by_email_and_skip_archived_unless_asked(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let c = member(acc.id, "carol@x.co", 1);
    let a = member(acc.id, "a@x.com", 2);
    let a_short = member(acc.id, "a@x.co", 3);
    let mut b = member(acc.id, "bob@x.co", 4);
    b.archived_at = Some(at(10));
    b.archived_by = Some("provisioning".into());
    plan.members = vec![c.clone(), a.clone(), a_short.clone(), b.clone()];
    let other = account(None);
    let mut other_plan = plan_of(&other);
    other_plan.members = vec![member(other.id, "aaa@x.co", 1)];
    provision(&store, vec![plan, other_plan]).await;

    let active = store
        .list_members(acc.id, &page(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&active, |m| m.id), [a_short.id, a.id, c.id]);
    assert_eq!(active[0], a_short);
    let everyone = store
        .list_members(acc.id, &all(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&everyone, |m| m.id), [a_short.id, a.id, b.id, c.id]);
    let paged = store.list_members(acc.id, &all(2, 1)).await.unwrap().items;
    assert_eq!(ids(&paged, |m| m.id), [a.id, b.id]);
}

async fn a_member_is_found_by_id_or_case_insensitive_email_only_in_its_account(
    store: Arc<dyn Store>,
) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let m = member(acc.id, "jo@x.co", 1);
    let mut gone = member(acc.id, "gone@x.co", 2);
    gone.archived_at = Some(at(5));
    gone.archived_by = Some("provisioning".into());
    plan.members = vec![m.clone(), gone.clone(), member(acc.id, "jo@x.com", 3)];
    provision(&store, vec![plan]).await;

    assert_eq!(
        store.get_member(acc.id, m.id).await.unwrap(),
        Some(m.clone())
    );
    assert_eq!(store.get_member(new_id(), m.id).await.unwrap(), None);
    assert_eq!(
        store.find_member_by_email(acc.id, "Jo@X.co").await.unwrap(),
        Some(m.clone())
    );
    assert_eq!(
        store
            .find_member_by_email(acc.id, "gone@x.co")
            .await
            .unwrap(),
        Some(gone)
    );
    assert_eq!(
        store.find_member_by_email(acc.id, "jo@x.c").await.unwrap(),
        None
    );
    assert_eq!(
        store
            .find_member_by_email(new_id(), "jo@x.co")
            .await
            .unwrap(),
        None
    );
}

/// `a#b@x.co` begins with `a#`, the sort-key prefix of a lookup of `a`;
/// only the whole address finds a member.
async fn a_member_lookup_by_email_matches_the_whole_address_never_a_prefix(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let hashed = member(acc.id, "a#b@x.co", 1);
    let plain = member(acc.id, "a@x.co", 2);
    plan.members = vec![hashed.clone(), plain.clone()];
    provision(&store, vec![plan]).await;
    for (lookup, expected) in [
        ("a", None),
        ("a#b", None),
        ("a#b@x", None),
        ("a#b@x.c", None),
        ("a@x.c", None),
        ("a#b@x.co", Some(&hashed)),
        ("A#B@X.CO", Some(&hashed)),
        ("a@x.co", Some(&plain)),
    ] {
        assert_eq!(
            store
                .find_member_by_email(acc.id, lookup)
                .await
                .unwrap()
                .as_ref(),
            expected,
            "{lookup}"
        );
    }
}

async fn a_member_update_is_conditional_on_version_and_activity(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let m = member(acc.id, "jo@x.co", 1);
    let mut gone = member(acc.id, "gone@x.co", 2);
    gone.archived_at = Some(at(5));
    gone.archived_by = Some("provisioning".into());
    plan.members = vec![m.clone(), gone.clone()];
    provision(&store, vec![plan]).await;

    let mut next = m.clone();
    next.office_status = false;
    next.phone = Some("+1 555".into());
    next.version = 2;
    store
        .update_member(&next, 1, &shared::model::CalendarRefs::none(), None)
        .await
        .unwrap();
    assert_eq!(
        store.get_member(acc.id, m.id).await.unwrap(),
        Some(next.clone())
    );

    let mut stale = m.clone();
    stale.first_name = Some("Stale".into());
    stale.version = 2;
    assert!(matches!(
        store
            .update_member(&stale, 1, &shared::model::CalendarRefs::none(), None)
            .await,
        Err(StoreError::Conflict)
    ));
    let mut archived = gone.clone();
    archived.version = 2;
    assert!(matches!(
        store
            .update_member(&archived, 1, &shared::model::CalendarRefs::none(), None)
            .await,
        Err(StoreError::Conflict)
    ));
    let mut foreign = next.clone();
    foreign.account_id = new_id();
    foreign.version = 3;
    assert!(matches!(
        store
            .update_member(&foreign, 2, &shared::model::CalendarRefs::none(), None)
            .await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(store.get_member(acc.id, m.id).await.unwrap(), Some(next));
    assert_eq!(store.get_member(acc.id, gone.id).await.unwrap(), Some(gone));
}

async fn members_and_routers_walk_with_cursors(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    for i in 0..9 {
        plan.members
            .push(member(acc.id, &format!("m{i:02}@example.com"), i));
        plan.routers.push(router(acc.id, &format!("R{i}"), i));
    }
    provision(&store, vec![plan]).await;
    let mut emails = Vec::new();
    let mut p = Page::first(4, true);
    loop {
        let listed = store.list_members(acc.id, &p).await.unwrap();
        emails.extend(listed.items.iter().map(|m| m.email.as_str().to_string()));
        match listed.next {
            Some(pos) => p = Page::after(4, pos, true),
            None => break,
        }
    }
    let expected: Vec<String> = (0..9).map(|i| format!("m{i:02}@example.com")).collect();
    assert_eq!(emails, expected);
    let mut names = Vec::new();
    let mut p = Page::first(2, false);
    loop {
        let listed = store.list_routers(acc.id, &p).await.unwrap();
        names.extend(listed.items.iter().map(|r| r.name.clone()));
        match listed.next {
            Some(pos) => p = Page::after(2, pos, false),
            None => break,
        }
    }
    let expected: Vec<String> = (0..9).map(|i| format!("R{i}")).collect();
    assert_eq!(names, expected);
}

/// [`MemberStore::identify_members`] answers who the account's members with
/// the given e-mails are (archived ones included, with their state), each once, never another
/// account's, whatever else the list holds.
async fn members_are_identified_by_email_in_their_account_each_once(store: Arc<dyn Store>) {
    use shared::model::MemberIdentity;
    use shared::types::Email;
    let acc = account(None);
    let other = account(None);
    let mut plan = plan_of(&acc);
    let m = member(acc.id, "jo@x.co", 1);
    let mut gone = member(acc.id, "gone@x.co", 2);
    gone.archived_at = Some(at(5));
    gone.archived_by = Some("provisioning".into());
    let many: Vec<Member> = (0..120)
        .map(|i| member(acc.id, &format!("m{i}@x.co"), 10 + i))
        .collect();
    plan.members = [vec![m.clone(), gone.clone()], many.clone()].concat();
    let mut other_plan = plan_of(&other);
    other_plan.members = vec![member(other.id, "elsewhere@x.co", 3)];
    provision(&store, vec![plan, other_plan]).await;

    let email = |e: &str| Email::parse(e).unwrap();
    let asked: Vec<Email> = [
        "JO@x.co",
        "gone@x.co",
        "jo@x.co",
        "nobody@x.co",
        "elsewhere@x.co",
    ]
    .iter()
    .map(|e| email(e))
    .chain(many.iter().map(|m| m.email.clone()))
    .collect();
    let mut found = store.identify_members(acc.id, &asked).await.unwrap();
    found.sort_by(|a, b| a.email.cmp(&b.email));
    let mut expected: Vec<MemberIdentity> = [&m, &gone]
        .into_iter()
        .chain(many.iter())
        .map(MemberIdentity::from)
        .collect();
    expected.sort_by(|a, b| a.email.cmp(&b.email));
    assert_eq!(found, expected);
    assert!(!found.iter().find(|f| f.id == gone.id).unwrap().active);
    assert!(store
        .identify_members(acc.id, &[])
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .identify_members(other.id, &[email("jo@x.co")])
        .await
        .unwrap()
        .is_empty());
}
