//! The failed-authentication contract ([`shared::store::AuthAttemptStore`], BEHAVIOR 1): failures
//! counted per `client_id` and source in a window that opens with the first and ends after its
//! length, pairs apart, concurrent failures each counted once, and an ended window ignored and
//! started afresh.

use super::*;
use shared::model::auth_attempt::{AttemptKey, FailureWindow};

shared::on_both_stores!(
    threads = 2; store:
    failures_are_counted_per_client_and_source_in_a_window_from_the_first,
    an_ended_window_is_ignored_and_the_next_failure_opens_a_new_one,
    concurrent_failures_are_each_counted_once,
);

fn key(client_id: &str, source: &str) -> AttemptKey {
    AttemptKey {
        client_id: client_id.into(),
        source: source.into(),
    }
}

const WINDOW: Duration = Duration::seconds(60);

async fn failures_are_counted_per_client_and_source_in_a_window_from_the_first(
    store: Arc<dyn Store>,
) {
    let k = key("northwind-integration", "203.0.113.7");
    assert_eq!(
        store.failed_authentications(&k, base()).await.unwrap(),
        None
    );
    for n in 1..=3u32 {
        let counted = store
            .count_failed_authentication(&k, at(i64::from(n) * 1_000), WINDOW)
            .await
            .unwrap();
        assert_eq!(
            counted,
            FailureWindow {
                count: n,
                ends_at: at(1_000) + WINDOW,
            },
            "the window runs from the first failure"
        );
    }
    assert_eq!(
        store.failed_authentications(&k, at(5_000)).await.unwrap(),
        Some(FailureWindow {
            count: 3,
            ends_at: at(1_000) + WINDOW
        })
    );
    // Other pairs, including a client id that is a prefix of another or holds `#`.
    for other in [
        key("northwind-integration", "203.0.113.8"),
        key("northwind-readonly", "203.0.113.7"),
        key("northwind", "203.0.113.7"),
        key("northwind-integration#203.0.113.7", "203.0.113.7"),
        key("2001:db8::/64#x", "unknown"),
    ] {
        assert_eq!(
            store
                .failed_authentications(&other, at(5_000))
                .await
                .unwrap(),
            None,
            "{other:?}"
        );
        let counted = store
            .count_failed_authentication(&other, at(6_000), WINDOW)
            .await
            .unwrap();
        assert_eq!(counted.count, 1, "{other:?}");
    }
    assert_eq!(
        store
            .failed_authentications(&k, at(7_000))
            .await
            .unwrap()
            .map(|w| w.count),
        Some(3)
    );
}

async fn an_ended_window_is_ignored_and_the_next_failure_opens_a_new_one(store: Arc<dyn Store>) {
    let k = key("globex-integration", "2001:db8:1:2::/64");
    for _ in 0..25 {
        store
            .count_failed_authentication(&k, base(), WINDOW)
            .await
            .unwrap();
    }
    let ends_at = base() + WINDOW;
    let just_before = ends_at - Duration::milliseconds(1);
    assert_eq!(
        store
            .failed_authentications(&k, just_before)
            .await
            .unwrap()
            .map(|w| w.count),
        Some(25)
    );
    assert_eq!(
        store.failed_authentications(&k, ends_at).await.unwrap(),
        None
    );
    let counted = store
        .count_failed_authentication(&k, ends_at, WINDOW)
        .await
        .unwrap();
    assert_eq!(
        counted,
        FailureWindow {
            count: 1,
            ends_at: ends_at + WINDOW
        }
    );
}

async fn concurrent_failures_are_each_counted_once(store: Arc<dyn Store>) {
    let k = key("initech-integration", "198.51.100.23");
    let counts: Vec<u32> = futures_util::future::join_all((0..20).map(|i| {
        let store = store.clone();
        let k = k.clone();
        async move {
            store
                .count_failed_authentication(&k, at(i), WINDOW)
                .await
                .unwrap()
                .count
        }
    }))
    .await;
    let mut sorted = counts.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (1..=20).collect::<Vec<u32>>(), "{counts:?}");
    assert_eq!(
        store
            .failed_authentications(&k, at(100))
            .await
            .unwrap()
            .map(|w| w.count),
        Some(20)
    );
}
