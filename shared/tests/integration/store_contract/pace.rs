//! The CRM pace's contract ([`shared::store::PaceStore`]): turns an interval apart from one
//! stored state, whatever the hint; a turn beyond the horizon or during a usage hold reserves
//! nothing; a hold moves the state forward only; concurrent requests on one key each get a turn
//! of their own.

use super::*;
use shared::model::account::CrmProvider;
use shared::model::pace::{PaceKey, PaceRule, Turn, TurnAsk, UsageHold};

shared::on_both_stores!(
    threads = 4; store:
    turns_are_one_interval_apart_whatever_the_hint,
    a_turn_beyond_the_horizon_or_in_a_usage_hold_reserves_nothing,
    a_hold_only_moves_the_pace_forward,
    concurrent_requests_of_one_account_each_reserve_a_turn_of_their_own,
);

const SECOND: i64 = 1_000_000;

fn key() -> PaceKey {
    PaceKey {
        account: new_id(),
        provider: CrmProvider::HubSpot,
    }
}

fn ask(now_us: i64, hint_us: Option<i64>) -> TurnAsk {
    TurnAsk {
        now_us,
        rule: PaceRule::per_second(10, 1),
        horizon_us: 3 * SECOND,
        hint_us,
    }
}

fn granted(turn: Turn) -> i64 {
    match turn {
        Turn::Granted { at_us, .. } => at_us,
        other => panic!("not granted: {other:?}"),
    }
}

async fn turns_are_one_interval_apart_whatever_the_hint(store: Arc<dyn Store>) {
    let (a, b) = (key(), key());
    let now = 1_800_000_000 * SECOND;
    // The same answers with the right hint, a wrong one, and none.
    let mut at = Vec::new();
    for hint in [None, Some(now - SECOND), Some(now + 5 * SECOND), None] {
        at.push(granted(store.take_turn(&a, &ask(now, hint)).await.unwrap()));
    }
    assert_eq!(
        at,
        [now, now + 100_000, now + 200_000, now + 300_000],
        "one interval apart"
    );
    // Another account (and another CRM of the same account) is not held up.
    assert_eq!(
        granted(store.take_turn(&b, &ask(now, None)).await.unwrap()),
        now
    );
    let salesforce = PaceKey {
        provider: CrmProvider::Salesforce,
        ..a
    };
    assert_eq!(
        granted(store.take_turn(&salesforce, &ask(now, None)).await.unwrap()),
        now
    );
    // An idle key restarts from now; a burst of 3 goes at once.
    let later = now + 60 * SECOND;
    assert_eq!(
        granted(store.take_turn(&a, &ask(later, Some(now))).await.unwrap()),
        later
    );
    let c = key();
    let burst = TurnAsk {
        rule: PaceRule::per_second(10, 3),
        ..ask(now, None)
    };
    let at: Vec<i64> = {
        let mut at = Vec::new();
        for _ in 0..4 {
            at.push(granted(store.take_turn(&c, &burst).await.unwrap()));
        }
        at
    };
    assert_eq!(at, [now, now, now, now + 100_000]);
}

async fn a_turn_beyond_the_horizon_or_in_a_usage_hold_reserves_nothing(store: Arc<dyn Store>) {
    let a = key();
    let now = 1_800_000_000 * SECOND;
    let short = TurnAsk {
        horizon_us: 250_000,
        ..ask(now, None)
    };
    for expected in [now, now + 100_000, now + 200_000] {
        assert_eq!(
            granted(store.take_turn(&a, &short).await.unwrap()),
            expected
        );
    }
    for _ in 0..2 {
        assert_eq!(
            store.take_turn(&a, &short).await.unwrap(),
            Turn::TooFar {
                at_us: now + 300_000,
                tat_us: now + 300_000
            },
            "nothing reserved by a refusal"
        );
    }
    let hold = UsageHold {
        used: 950,
        limit: 1000,
        until_us: now + SECOND,
    };
    store.set_usage_hold(&a, Some(&hold)).await.unwrap();
    assert_eq!(
        store.take_turn(&a, &ask(now, None)).await.unwrap(),
        Turn::UsageHeld(hold)
    );
    // Once its time has passed it holds nothing; ended, it holds nothing either.
    assert!(matches!(
        store
            .take_turn(&a, &ask(now + 2 * SECOND, None))
            .await
            .unwrap(),
        Turn::Granted { .. }
    ));
    store.set_usage_hold(&a, Some(&hold)).await.unwrap();
    store.set_usage_hold(&a, None).await.unwrap();
    assert!(matches!(
        store.take_turn(&a, &ask(now, Some(now))).await.unwrap(),
        Turn::Granted { .. } | Turn::TooFar { .. }
    ));
    // A usage hold on a key never paced before.
    let b = key();
    store.set_usage_hold(&b, Some(&hold)).await.unwrap();
    assert_eq!(
        store.take_turn(&b, &ask(now, None)).await.unwrap(),
        Turn::UsageHeld(hold)
    );
    store.set_usage_hold(&key(), None).await.unwrap();
}

async fn a_hold_only_moves_the_pace_forward(store: Arc<dyn Store>) {
    let a = key();
    let now = 1_800_000_000 * SECOND;
    store.hold_pace(&a, now + 2 * SECOND).await.unwrap();
    store.hold_pace(&a, now + SECOND).await.unwrap();
    assert_eq!(
        granted(store.take_turn(&a, &ask(now, None)).await.unwrap()),
        now + 2 * SECOND
    );
    store.hold_pace(&a, now + 10 * SECOND).await.unwrap();
    assert_eq!(
        store.take_turn(&a, &ask(now, None)).await.unwrap(),
        Turn::TooFar {
            at_us: now + 10 * SECOND,
            tat_us: now + 10 * SECOND
        }
    );
}

async fn concurrent_requests_of_one_account_each_reserve_a_turn_of_their_own(
    store: Arc<dyn Store>,
) {
    let a = key();
    let now = 1_800_000_000 * SECOND;
    let mut set = tokio::task::JoinSet::new();
    for n in 0..40 {
        let store = store.clone();
        // Half of them with a stale hint, half with none.
        let hint = (n % 2 == 0).then_some(now - SECOND);
        set.spawn(async move { store.take_turn(&a, &ask(now, hint)).await.unwrap() });
    }
    let mut at = Vec::new();
    let mut refused = 0;
    while let Some(turn) = set.join_next().await {
        match turn.unwrap() {
            Turn::Granted { at_us, .. } => at.push(at_us),
            Turn::TooFar { .. } => refused += 1,
            Turn::UsageHeld(hold) => panic!("{hold:?}"),
        }
    }
    at.sort_unstable();
    let expected: Vec<i64> = (0..31).map(|k| now + k * 100_000).collect();
    assert_eq!(at, expected, "31 turns within 3 s, each its own");
    assert_eq!(refused, 9);
}
