//! The account's webhook subscriptions as an instance last read them, kept with the version
//! they were read at, so that a dispatch does not list them again while they have not changed
//! (`docs/performance.md`, "Dispatch: store round trips").
//!
//! Every write of a subscription that changes what a dispatch makes of it (create, update,
//! delete, a delivery attempt that disables it) moves the account's subscriptions version in
//! its own transaction ([`crate::store::WebhookStore`]). A dispatch reads that version by key in
//! its first round ([`crate::store::FirstReads::webhooks_version`]); the kept subscriptions serve
//! it only when they were kept at exactly that version. Otherwise the dispatch lists them
//! (strongly consistent), after the version read, and keeps that list at the version it read: the
//! list reflects every write up to that version (it was read after it), so a list kept at a
//! version never misses a subscription of that version; a write between the two reads leaves a
//! newer version, and the next dispatch lists again. A subscription created through the API is
//! therefore notified by the very next dispatch on every instance (BEHAVIOR 13).
//!
//! Only enabled subscriptions are kept (a disabled one receives nothing), and at most
//! [`MAX_KEPT_SUBSCRIPTIONS`] in all (an account without any counts as one): past that, the
//! subscriptions of other accounts are dropped (their next dispatch lists them again).

use crate::model::webhook::WebhookSubscription;
use crate::types::ids::AccountId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Subscriptions an instance keeps in all, at most (an account without any counts as one). A
/// subscription at its limits is about 7 KB (a 2,048-character `url`, a description of 1,000
/// characters of up to 4 bytes, two sealed secrets of a few hundred bytes, three event types): at
/// most about 7 MB in all; a usual one (a short `url`, no description, one secret) under 1 KB.
pub const MAX_KEPT_SUBSCRIPTIONS: usize = 1_024;

/// Per instance: by account, its enabled subscriptions and the version they were read at.
#[derive(Debug, Default)]
pub struct SubscriptionCache {
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_account: HashMap<AccountId, (u64, Arc<Vec<WebhookSubscription>>)>,
    /// What the kept lists count towards [`MAX_KEPT_SUBSCRIPTIONS`].
    weight: usize,
}

/// What a list counts towards [`MAX_KEPT_SUBSCRIPTIONS`].
fn weight(list: &[WebhookSubscription]) -> usize {
    list.len().max(1)
}

impl SubscriptionCache {
    /// The account's enabled subscriptions, when this instance kept them at `version`.
    pub fn at(&self, account_id: AccountId, version: u64) -> Option<Arc<Vec<WebhookSubscription>>> {
        match self.lock().by_account.get(&account_id) {
            Some((kept, list)) if *kept == version => Some(list.clone()),
            _ => None,
        }
    }

    /// Keeps `subscriptions` (the account's, listed after its version was read as `version`)
    /// and returns the enabled ones.
    pub fn keep(
        &self, account_id: AccountId, version: u64, subscriptions: Vec<WebhookSubscription>,
    ) -> Arc<Vec<WebhookSubscription>> {
        let enabled: Vec<WebhookSubscription> =
            subscriptions.into_iter().filter(|s| s.enabled).collect();
        let list = Arc::new(enabled);
        let mut kept = self.lock();
        if let Some((_, old)) = kept.by_account.remove(&account_id) {
            kept.weight -= weight(&old);
        }
        let added = weight(&list);
        if added > MAX_KEPT_SUBSCRIPTIONS {
            return list;
        }
        while kept.weight + added > MAX_KEPT_SUBSCRIPTIONS {
            let Some(other) = kept.by_account.keys().next().copied() else {
                break;
            };
            if let Some((_, old)) = kept.by_account.remove(&other) {
                kept.weight -= weight(&old);
            }
        }
        kept.weight += added;
        kept.by_account.insert(account_id, (version, list.clone()));
        list
    }

    /// How many accounts are kept and what they weigh (for the bound's tests).
    pub fn size(&self) -> (usize, usize) {
        let kept = self.lock();
        (kept.by_account.len(), kept.weight)
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::webhook::EventType;
    use chrono::Utc;
    use uuid::Uuid;

    fn subscription(account_id: AccountId, enabled: bool) -> WebhookSubscription {
        WebhookSubscription {
            id: Uuid::now_v7().into(),
            account_id,
            url: "https://hooks.example/a".into(),
            events: vec![EventType::AssignmentCreated],
            description: None,
            enabled,
            disabled_reason: None,
            secrets: Vec::new(),
            failing_since: None,
            created_at: Utc::now(),
            updated_at: Utc::now(),
            version: 1,
        }
    }

    #[test]
    fn kept_subscriptions_serve_only_their_own_version_and_only_enabled_ones() {
        let cache = SubscriptionCache::default();
        let account: AccountId = Uuid::new_v4().into();
        assert!(cache.at(account, 0).is_none(), "nothing kept yet");
        let on = subscription(account, true);
        let kept = cache.keep(account, 3, vec![on.clone(), subscription(account, false)]);
        assert_eq!(*kept, vec![on.clone()]);
        assert_eq!(cache.at(account, 3).as_deref(), Some(&vec![on]));
        assert!(
            cache.at(account, 4).is_none(),
            "a newer version lists again"
        );
        assert!(cache.at(account, 2).is_none());
    }

    #[test]
    fn the_cache_stays_within_its_bound() {
        let cache = SubscriptionCache::default();
        for _ in 0..MAX_KEPT_SUBSCRIPTIONS + 5 {
            cache.keep(Uuid::new_v4().into(), 1, Vec::new());
        }
        assert_eq!(
            cache.size(),
            (MAX_KEPT_SUBSCRIPTIONS, MAX_KEPT_SUBSCRIPTIONS)
        );
        let account: AccountId = Uuid::new_v4().into();
        let many: Vec<_> = (0..20).map(|_| subscription(account, true)).collect();
        cache.keep(account, 1, many.clone());
        assert_eq!(cache.size().1, MAX_KEPT_SUBSCRIPTIONS);
        assert_eq!(cache.at(account, 1).map(|l| l.len()), Some(20));
        // Keeping the same account again does not count it twice.
        cache.keep(account, 2, many);
        assert_eq!(cache.size().1, MAX_KEPT_SUBSCRIPTIONS);
    }
}
