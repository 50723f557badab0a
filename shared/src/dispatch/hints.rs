//! What a warm instance remembers of each router's last run, so that the next run reads
//! everything it needs in one wave (`docs/performance.md`, "Dispatch: store round trips").
//!
//! A run's pool is known only once its router is read, and the router is read in the run's first
//! round: so the first round would have to be followed by a second for the pool. An instance
//! therefore keeps, per router, the keys its last run read after the router (the pool's members
//! by id, the holiday calendars the router and those members named) and the router's account and
//! version, and the next run reads those keys in its first round with the router itself, the
//! record and the rotation state ([`crate::store::FirstReads`]).
//!
//! A hint only chooses keys; it is never evaluated. The run evaluates the router as its first
//! round read it (the live revision at that read, BEHAVIOR 15), checks that every key that router
//! needs was read ([`crate::routers::roster::RosterKeys`], [`super::holidays::unasked`]), and
//! reads the ones that were not in one more round: a router changed since (a publish, a team
//! that gained a member through provisioning) costs its next run on each instance that round,
//! once; a stale hint can never make a decision, an unassigned outcome or a history entry of an
//! old revision. The assignment transaction still conditions on the router's version read, as
//! before.
//!
//! The hints are bounded ([`MAX_HINTED_ROUTERS`], [`MAX_HINTED_MEMBER_IDS`]): past either, hints
//! of other routers are dropped (a dropped hint costs that router's next run one round).

use crate::types::ids::{AccountId, HolidayCalendarId, MemberId, RouterId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Routers an instance keeps a hint for, at most.
pub const MAX_HINTED_ROUTERS: usize = 1_024;

/// Member ids an instance keeps in all its hints, at most (16 bytes each: 1 MiB). A router at
/// the size limit (500 users, 50 teams) names at most 500 users, the members of its teams and a
/// backup user.
pub const MAX_HINTED_MEMBER_IDS: usize = 65_536;

/// What a router's last run on this instance read after the router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterHint {
    /// The router's account (it never changes: the queue path, which learns the account from
    /// the router, reads the router with the rest).
    pub account_id: AccountId,
    /// The router's version that run evaluated (the live revision then).
    pub version: u64,
    /// The members of its roster, by id (pool and backup user, as resolved then).
    pub members: Vec<MemberId>,
    /// The holiday calendars the router and those members named then.
    pub calendars: Vec<HolidayCalendarId>,
}

/// Per instance: by router, the hint of its last run here.
#[derive(Debug, Default)]
pub struct RouterHints {
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_router: HashMap<RouterId, Arc<RouterHint>>,
    /// The member ids of every hint kept.
    member_ids: usize,
}

impl RouterHints {
    /// The hint of `router_id`, when its last run here left one.
    pub fn get(&self, router_id: RouterId) -> Option<Arc<RouterHint>> {
        self.lock().by_router.get(&router_id).cloned()
    }

    /// Keeps `hint` as the hint of `router_id`, dropping hints of other routers (any) while
    /// more than [`MAX_HINTED_ROUTERS`] routers or [`MAX_HINTED_MEMBER_IDS`] member ids are
    /// kept. A hint that alone names more member ids than that is not kept.
    pub fn remember(&self, router_id: RouterId, hint: RouterHint) {
        let mut kept = self.lock();
        if kept.by_router.get(&router_id).map(AsRef::as_ref) == Some(&hint) {
            return;
        }
        if let Some(old) = kept.by_router.remove(&router_id) {
            kept.member_ids -= old.members.len();
        }
        if hint.members.len() > MAX_HINTED_MEMBER_IDS {
            return;
        }
        while kept.by_router.len() >= MAX_HINTED_ROUTERS
            || kept.member_ids + hint.members.len() > MAX_HINTED_MEMBER_IDS
        {
            let Some(other) = kept.by_router.keys().next().copied() else {
                break;
            };
            if let Some(old) = kept.by_router.remove(&other) {
                kept.member_ids -= old.members.len();
            }
        }
        kept.member_ids += hint.members.len();
        kept.by_router.insert(router_id, Arc::new(hint));
    }

    /// How many routers and member ids are kept (for the bounds' tests).
    pub fn size(&self) -> (usize, usize) {
        let kept = self.lock();
        (kept.by_router.len(), kept.member_ids)
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn hint(members: usize) -> RouterHint {
        RouterHint {
            account_id: Uuid::new_v4().into(),
            version: 1,
            members: (0..members).map(|_| Uuid::new_v4().into()).collect(),
            calendars: Vec::new(),
        }
    }

    #[test]
    fn the_hints_stay_within_their_bounds_of_routers_and_member_ids() {
        let hints = RouterHints::default();
        for _ in 0..MAX_HINTED_ROUTERS + 10 {
            hints.remember(Uuid::new_v4().into(), hint(2));
        }
        assert_eq!(hints.size(), (MAX_HINTED_ROUTERS, 2 * MAX_HINTED_ROUTERS));
        let big = MAX_HINTED_MEMBER_IDS / 4;
        let routers: Vec<RouterId> = (0..5).map(|_| Uuid::new_v4().into()).collect();
        for router in &routers {
            hints.remember(*router, hint(big));
            let (_, ids) = hints.size();
            assert!(ids <= MAX_HINTED_MEMBER_IDS, "{ids}");
            assert!(hints.get(*router).is_some(), "the new hint is kept");
        }
        // One router replacing its own hint does not count it twice.
        let (_, before) = hints.size();
        hints.remember(routers[4], hint(big));
        assert_eq!(hints.size().1, before);
        // A hint larger than the whole bound is not kept.
        let huge: RouterId = Uuid::new_v4().into();
        hints.remember(huge, hint(MAX_HINTED_MEMBER_IDS + 1));
        assert!(hints.get(huge).is_none());
    }
}
