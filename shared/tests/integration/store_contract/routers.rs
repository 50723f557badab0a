//! The routers' contract ([`shared::store::RouterStore`]): lists and lookups (drafts, revisions
//! and the limit: `tests/router_store.rs`).

use super::*;

shared::on_both_stores!(
    threads = 2; store:
    routers_list_by_creation_and_skip_archived_unless_asked,
    a_router_is_found_in_its_account_and_by_id_alone,
);

async fn routers_list_by_creation_and_skip_archived_unless_asked(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let r2 = router(acc.id, "second", 20);
    let r1 = router(acc.id, "first", 10);
    let mut r3 = router(acc.id, "archived", 30);
    r3.archived_at = Some(at(40));
    r3.archived_by = Some("provisioning".into());
    plan.routers = vec![r2.clone(), r1.clone(), r3.clone()];
    provision(&store, vec![plan]).await;

    let active = store
        .list_routers(acc.id, &page(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(active, vec![r1.clone(), r2.clone()]);
    let every = store
        .list_routers(acc.id, &all(100, 0))
        .await
        .unwrap()
        .items;
    assert_eq!(ids(&every, |r| r.id), [r1.id, r2.id, r3.id]);
    let paged = store.list_routers(acc.id, &all(1, 2)).await.unwrap().items;
    assert_eq!(ids(&paged, |r| r.id), [r3.id]);
    assert!(store
        .list_routers(new_id(), &all(100, 0))
        .await
        .unwrap()
        .items
        .is_empty());
}

async fn a_router_is_found_in_its_account_and_by_id_alone(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let mut r = router(acc.id, "with settings", 1);
    r.settings = Some(shared::model::RouterSettings {
        overwrite: false,
        owner_field: Some("contact_owner".into()),
        distribution_model: Some(shared::model::DistributionModel::Percentage),
        default_user: None,
        disable_default_assignment: false,
        ignore_working_hours: true,
        account_matching: false,
        rotation_type: shared::model::RotationType::Users,
        trigger: Some(
            serde_json::from_value(serde_json::json!({"groups": [{"conditions": [
                {"field": "country", "operator": "equals", "value": "US"},
                {"field": "annual_revenue", "operator": "greater_than", "value": 1000000},
                {"field": "lifecycle_stage", "operator": "in", "value": ["lead", "customer"]},
                {"field": "email", "operator": "is_empty"}
            ]}]}))
            .expect("trigger"),
        ),
        // BEHAVIOR 14: the SLA setting reads back as stored, given and stored values both.
        sla: Some(shared::model::SlaSetting {
            minutes: shared::model::SlaMinutes::parse(90).unwrap(),
            worked_field: "lead_status".into(),
            worked_values: Some(shared::model::WorkedValues {
                given: vec![serde_json::json!("In Progress"), serde_json::json!(3)],
                canonical: vec!["in_progress".into(), "3".into()],
            }),
        }),
        holiday_calendar_id: None,
    });
    r.users = vec![
        shared::model::RouterUser {
            email: Email::parse("a@x.co").unwrap(),
            percentage: Some(62.5),
        },
        shared::model::RouterUser {
            email: Email::parse("b@x.co").unwrap(),
            percentage: Some(37.5),
        },
    ];
    plan.routers = vec![r.clone()];
    provision(&store, vec![plan]).await;

    assert_eq!(
        store.get_router(acc.id, r.id).await.unwrap(),
        Some(r.clone())
    );
    assert_eq!(store.get_router(new_id(), r.id).await.unwrap(), None);
    assert_eq!(store.find_router(r.id).await.unwrap(), Some(r));
    assert_eq!(store.find_router(new_id()).await.unwrap(), None);
}
