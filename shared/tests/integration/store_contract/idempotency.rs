//! The `Idempotency-Key` contract ([`shared::store::IdempotencyStore`], BEHAVIOR 10): claims,
//! leases, releases, and answers stored in the same write as their effect.

use super::dispatch::assignment;
use super::dispatch::scene;
use super::*;

shared::on_both_stores!(
    threads = 2; store:
    an_idempotency_key_is_claimed_once_then_in_flight_then_completed,
    an_idempotency_key_is_scoped_to_account_and_route,
    a_lapsed_lease_lets_another_request_take_the_key_and_the_first_loses_it,
    a_released_or_expired_key_can_be_claimed_again,
    twenty_concurrent_claims_of_one_key_let_exactly_one_run,
    a_created_record_stores_its_response_in_the_same_write,
    an_assignment_stores_its_response_in_the_same_write,
);

async fn an_idempotency_key_is_claimed_once_then_in_flight_then_completed(store: Arc<dyn Store>) {
    let a: AccountId = new_id();
    let first = claim_at(a, "POST /contacts", "k-1", r#"{"fields":{}}"#, base());
    assert_eq!(
        store.claim_idempotency_key(&first).await.unwrap(),
        ClaimOutcome::Claimed
    );
    let again = claim_at(a, "POST /contacts", "k-1", r#"{"fields":{}}"#, at(10));
    assert_eq!(
        store.claim_idempotency_key(&again).await.unwrap(),
        ClaimOutcome::InFlight {
            fingerprint: first.fingerprint.clone()
        }
    );
    // Only the holder completes or releases.
    assert!(matches!(
        store
            .complete_idempotency_key(&completion(&again, 201, "{}"))
            .await,
        Err(StoreError::LeaseLost)
    ));
    store.release_idempotency_key(&again).await.unwrap();
    store
        .complete_idempotency_key(&completion(&first, 400, r#"{"message":"x","error":true}"#))
        .await
        .unwrap();
    let later = claim_at(a, "POST /contacts", "k-1", "other", at(20));
    assert_eq!(
        store.claim_idempotency_key(&later).await.unwrap(),
        ClaimOutcome::Completed {
            fingerprint: first.fingerprint.clone(),
            response: StoredResponse {
                status: 400,
                body: r#"{"message":"x","error":true}"#.into()
            }
        }
    );
    // A completed key is not completed again, nor released.
    assert!(matches!(
        store
            .complete_idempotency_key(&completion(&first, 201, "{}"))
            .await,
        Err(StoreError::LeaseLost)
    ));
    store.release_idempotency_key(&first).await.unwrap();
    assert!(matches!(
        store.claim_idempotency_key(&later).await.unwrap(),
        ClaimOutcome::Completed { .. }
    ));
}

async fn an_idempotency_key_is_scoped_to_account_and_route(store: Arc<dyn Store>) {
    let a: AccountId = new_id();
    let b: AccountId = new_id();
    let c = claim_at(a, "POST /contacts", "same#key", "{}", base());
    assert_eq!(
        store.claim_idempotency_key(&c).await.unwrap(),
        ClaimOutcome::Claimed
    );
    for other in [
        claim_at(b, "POST /contacts", "same#key", "{}", base()),
        claim_at(a, "POST /companies", "same#key", "{}", base()),
        claim_at(a, "POST /dispatch/router", "same#key", "{}", base()),
        claim_at(a, "POST /contacts", "same#key2", "{}", base()),
        claim_at(a, "POST /contacts#same", "key", "{}", base()),
    ] {
        assert_eq!(
            store.claim_idempotency_key(&other).await.unwrap(),
            ClaimOutcome::Claimed,
            "{} {} {}",
            other.account_id,
            other.route,
            other.key.as_str()
        );
    }
}

async fn a_lapsed_lease_lets_another_request_take_the_key_and_the_first_loses_it(
    store: Arc<dyn Store>,
) {
    let a = account(None);
    provision(&store, vec![plan_of(&a)]).await;
    let crashed = claim_at(a.id, "POST /contacts", "k", "{}", base());
    assert_eq!(
        store.claim_idempotency_key(&crashed).await.unwrap(),
        ClaimOutcome::Claimed
    );
    let within = claim_at(
        a.id,
        "POST /contacts",
        "k",
        "{}",
        base() + Duration::seconds(59),
    );
    assert!(matches!(
        store.claim_idempotency_key(&within).await.unwrap(),
        ClaimOutcome::InFlight { .. }
    ));
    let after = claim_at(
        a.id,
        "POST /contacts",
        "k",
        "{}",
        base() + Duration::seconds(61),
    );
    assert_eq!(
        store.claim_idempotency_key(&after).await.unwrap(),
        ClaimOutcome::Claimed
    );
    // The first request's write now fails and writes nothing.
    let r = record(a.id, ObjectType::Contacts, 5, &[("email", "late@x.co")]);
    let err = store
        .create_record_completing(
            &r,
            &contact_keys(&r),
            Some(&completion(&crashed, 201, "{}")),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost), "{err:?}");
    assert_eq!(
        store
            .get_record(a.id, ObjectType::Contacts, r.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .find_by_unique_key(a.id, ObjectType::Contacts, &key("email", "late@x.co"))
            .await
            .unwrap(),
        None,
        "no guard claimed"
    );
    // The second one's does.
    store
        .create_record_completing(
            &r,
            &contact_keys(&r),
            Some(&completion(&after, 201, "{\"id\":1}")),
        )
        .await
        .unwrap();
    let replay = claim_at(
        a.id,
        "POST /contacts",
        "k",
        "{}",
        base() + Duration::seconds(70),
    );
    assert!(matches!(
        store.claim_idempotency_key(&replay).await.unwrap(),
        ClaimOutcome::Completed { response, .. } if response.body == "{\"id\":1}"
    ));
}

async fn a_released_or_expired_key_can_be_claimed_again(store: Arc<dyn Store>) {
    let a: AccountId = new_id();
    let first = claim_at(a, "POST /dispatch/router", "k", "{}", base());
    assert_eq!(
        store.claim_idempotency_key(&first).await.unwrap(),
        ClaimOutcome::Claimed
    );
    store.release_idempotency_key(&first).await.unwrap();
    let second = claim_at(a, "POST /dispatch/router", "k", "{\"x\":1}", at(5));
    assert_eq!(
        store.claim_idempotency_key(&second).await.unwrap(),
        ClaimOutcome::Claimed
    );
    store
        .complete_idempotency_key(&completion(&second, 200, "{}"))
        .await
        .unwrap();
    let day = claim_at(
        a,
        "POST /dispatch/router",
        "k",
        "{}",
        at(5) + Duration::hours(23),
    );
    assert!(matches!(
        store.claim_idempotency_key(&day).await.unwrap(),
        ClaimOutcome::Completed { .. }
    ));
    let expired = claim_at(
        a,
        "POST /dispatch/router",
        "k",
        "{}",
        at(5) + Duration::hours(24) + Duration::seconds(1),
    );
    assert_eq!(
        store.claim_idempotency_key(&expired).await.unwrap(),
        ClaimOutcome::Claimed
    );
}

async fn twenty_concurrent_claims_of_one_key_let_exactly_one_run(store: Arc<dyn Store>) {
    let a: AccountId = new_id();
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let c = claim_at(a, "POST /contacts", "race", "{}", base());
            store.claim_idempotency_key(&c).await.unwrap()
        }));
    }
    let mut claimed = 0;
    for t in tasks {
        match t.await.unwrap() {
            ClaimOutcome::Claimed => claimed += 1,
            ClaimOutcome::InFlight { .. } => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(claimed, 1);
}

async fn a_created_record_stores_its_response_in_the_same_write(store: Arc<dyn Store>) {
    let a = account(None);
    provision(&store, vec![plan_of(&a)]).await;
    let held = record(a.id, ObjectType::Contacts, 1, &[("email", "taken@x.co")]);
    store
        .create_record(&held, &contact_keys(&held))
        .await
        .unwrap();
    // A duplicate writes neither the record nor the response: the key stays in flight.
    let c = claim_at(a.id, "POST /contacts", "k", "{}", base());
    store.claim_idempotency_key(&c).await.unwrap();
    let dup = record(a.id, ObjectType::Contacts, 2, &[("email", "taken@x.co")]);
    let err = store
        .create_record_completing(&dup, &contact_keys(&dup), Some(&completion(&c, 201, "{}")))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Duplicate { .. }), "{err:?}");
    assert!(matches!(
        store.claim_idempotency_key(&c).await.unwrap(),
        ClaimOutcome::InFlight { .. }
    ));
    // Without unique keys too, the record and its response are one write.
    let fresh = record(a.id, ObjectType::Contacts, 3, &[]);
    store
        .create_record_completing(&fresh, &[], Some(&completion(&c, 201, "{\"made\":true}")))
        .await
        .unwrap();
    assert!(store
        .get_record(a.id, ObjectType::Contacts, fresh.id)
        .await
        .unwrap()
        .is_some());
    assert!(matches!(
        store.claim_idempotency_key(&c).await.unwrap(),
        ClaimOutcome::Completed { response, .. } if response.status == 201 && response.body == "{\"made\":true}"
    ));
}

async fn an_assignment_stores_its_response_in_the_same_write(store: Arc<dyn Store>) {
    let s = scene(&store, None).await;
    let c = claim_at(s.account.id, "POST /dispatch/router", "k", "{}", base());
    store.claim_idempotency_key(&c).await.unwrap();
    // A stale write stores nothing.
    let mut stale = assignment(&s, "2026-03", None);
    stale.record_version += 7;
    stale.completion = Some(completion(&c, 200, "{\"message\":\"Owner assigned\"}"));
    assert!(matches!(
        store.commit_assignment(&stale).await,
        Err(StoreError::Conflict)
    ));
    assert!(matches!(
        store.claim_idempotency_key(&c).await.unwrap(),
        ClaimOutcome::InFlight { .. }
    ));
    let mut write = assignment(&s, "2026-03", None);
    write.completion = Some(completion(&c, 200, "{\"message\":\"Owner assigned\"}"));
    store.commit_assignment(&write).await.unwrap();
    assert!(matches!(
        store.claim_idempotency_key(&c).await.unwrap(),
        ClaimOutcome::Completed { response, .. } if response.status == 200
    ));
    // The same completion cannot commit a second assignment.
    let again = assignment(&s, "2026-03", None);
    let mut again = AssignmentWrite {
        record_version: s.record.version + 1,
        ..again
    };
    again.record.version = s.record.version + 2;
    again.completion = Some(completion(&c, 200, "{}"));
    assert!(matches!(
        store.commit_assignment(&again).await,
        Err(StoreError::LeaseLost)
    ));
}
