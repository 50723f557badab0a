//! The keys of a router and the items in its partition: its rotation state, revisions, draft
//! and stats counters; the account's router count and the index partition that lists routers.

use super::directory::account;
use super::key::{listing, IndexKey, Key};
use crate::store::tally::{Buckets, Span};
use crate::store::{revision_order, time_then_id};
use crate::types::ids::{AccountId, RouterId};
use chrono::{DateTime, Utc};

/// A router item.
pub fn router(id: RouterId) -> Key {
    Key::new(format!("ROUTER#{id}"), "ROUTER")
}

/// A router's rotation state, beside the router in its partition.
pub fn rotation(router_id: RouterId) -> Key {
    Key::new(router(router_id).pk, "ROTATION")
}

/// Sort-key prefix of a router's revisions (BEHAVIOR 15).
pub const REVISION_PREFIX: &str = "REVISION#";

/// A router revision (BEHAVIOR 15), in its router's partition: `REVISION#<n>`.
pub fn router_revision(router_id: RouterId, revision: u64) -> Key {
    Key {
        pk: router(router_id).pk,
        sk: format!("{REVISION_PREFIX}{}", revision_order(revision)),
    }
}

/// A router's draft (BEHAVIOR 15), in its router's partition.
pub fn router_draft(router_id: RouterId) -> Key {
    Key::new(router(router_id).pk, "DRAFT")
}

/// The count of an account's non-archived routers (at most 1,000: BEHAVIOR 15), kept by the
/// writes that create, provision and archive routers.
pub fn router_count(account_id: AccountId) -> Key {
    Key::new(account(account_id).pk, "ROUTER_COUNT")
}

/// Index partition of the account's routers.
pub fn routers_partition(account_id: AccountId) -> String {
    format!("ACCOUNT#{account_id}#ROUTERS")
}

/// Index keys of a router: GSI1 only while active, GSI2 always.
pub fn router_index(
    account_id: AccountId, created_at: DateTime<Utc>, id: RouterId, active: bool,
) -> (Option<IndexKey>, IndexKey) {
    listing(
        routers_partition(account_id),
        time_then_id(created_at, id),
        active,
    )
}

/// Sort-key prefix of the stats counters.
pub const TALLY_PREFIX: &str = "TALLY#";

/// The stats counter of `user`'s assignments by `router_id` in the bucket of `span` starting
/// at `start` ([`super::tally`]), in its router's partition: `TALLY#D#2026-11-25#<email>`,
/// `TALLY#H#2026-11-25T09#<email>`, `TALLY#M#2026-11-25T09:30#<email>`. A run of buckets is
/// one `Query`, `BETWEEN` [`tally_bounds`].
pub fn tally_counter(router_id: RouterId, span: Span, start: DateTime<Utc>, user: &str) -> Key {
    Key {
        pk: router(router_id).pk,
        sk: format!("{TALLY_PREFIX}{}#{user}", span.bucket(start)),
    }
}

/// The sort-key bounds of every counter of the run `buckets`: `TALLY#<first bucket>#` and
/// `TALLY#<last bucket>$` (`$` sorts right after `#`).
pub fn tally_bounds(buckets: &Buckets) -> (String, String) {
    (
        format!("{TALLY_PREFIX}{}#", buckets.span.bucket(buckets.first)),
        format!("{TALLY_PREFIX}{}$", buckets.span.bucket(buckets.last)),
    )
}

#[cfg(test)]
mod tests {
    use super::super::key::test_id as id;
    use super::super::subscriptions::webhook_count;
    use super::*;

    #[test]
    fn rotation_state_lives_in_its_routers_partition() {
        let r: RouterId = id(7);
        assert_eq!(rotation(r).pk, router(r).pk);
        assert_ne!(rotation(r).sk, router(r).sk);
    }

    #[test]
    fn revisions_and_the_draft_live_in_their_routers_partition_newest_revision_last_in_key_order() {
        let r: RouterId = id(7);
        assert_eq!(router_revision(r, 1).pk, router(r).pk);
        assert_eq!(router_draft(r).pk, router(r).pk);
        assert_eq!(router_revision(r, 12).sk, "REVISION#00000000000000000012");
        assert!(router_revision(r, 9).sk < router_revision(r, 10).sk);
        assert!(router_revision(r, u64::MAX).sk.starts_with(REVISION_PREFIX));
        let other = [rotation(r).sk, router_draft(r).sk, router(r).sk];
        assert!(other.iter().all(|sk| !sk.starts_with(REVISION_PREFIX)));
        assert_eq!(router_count(id(1)).pk, account(id(1)).pk);
        assert_ne!(router_count(id(1)).sk, webhook_count(id(1)).sk);
    }
}
