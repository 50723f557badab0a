//! The keys of what dispatch and the API leave on record: history entries (in their router's
//! partition and indexed by record), decision snapshots, the monthly assignment counts, and the
//! audit events (by account and indexed by target).

use super::directory::account;
use super::key::{IndexKey, Key};
use super::routers::router;
use crate::model::object_type::ObjectType;
use crate::store::time_then_id;
use crate::types::ids::{AccountId, RecordId, RouterId};
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Sort-key prefix of a router's history entries (BEHAVIOR 8).
pub const DISPATCH_PREFIX: &str = "DISPATCH#";

/// The account's assignment count of calendar month `month` (`YYYY-MM`).
pub fn monthly_count(account_id: AccountId, month: &str) -> Key {
    Key {
        pk: account(account_id).pk,
        sk: format!("MONTH#{month}"),
    }
}

/// A history entry (BEHAVIOR 8), in its router's partition: the router's entries are one
/// `Query` on the `DISPATCH#` prefix, newest first with `ScanIndexForward = false`, and a time
/// window is a `BETWEEN` on the sort key ([`dispatch_sort_key`]).
pub fn dispatch_entry(router_id: RouterId, at: DateTime<Utc>, entry_id: Uuid) -> Key {
    Key {
        pk: router(router_id).pk,
        sk: format!("{DISPATCH_PREFIX}{}", dispatch_sort_key(at, entry_id)),
    }
}

/// The list position of a history entry (`<at>#<entry id>`): its sort key in the router's
/// partition after the `DISPATCH#` prefix, and its GSI2 sort key in the record's history.
pub fn dispatch_sort_key(at: DateTime<Utc>, entry_id: Uuid) -> String {
    time_then_id(at, entry_id)
}

/// Index partition (GSI2) of one record's history entries, from every router of its type.
pub fn record_dispatches_partition(
    account_id: AccountId, object_type: ObjectType, record_id: RecordId,
) -> String {
    format!("ACCOUNT#{account_id}#{object_type}#{record_id}#DISPATCHES")
}

/// GSI2 key of a history entry whose object id is a record id.
pub fn record_dispatch_index(
    account_id: AccountId, object_type: ObjectType, record_id: RecordId, at: DateTime<Utc>,
    entry_id: Uuid,
) -> IndexKey {
    IndexKey {
        pk: record_dispatches_partition(account_id, object_type, record_id),
        sk: dispatch_sort_key(at, entry_id),
    }
}

/// The decision snapshot of history entry `entry_id` (BEHAVIOR 18): an item of its own, keyed
/// by the entry's id alone (written in the entry's own write; it names the entry's router and
/// time, so `GET /routers/{r}/dispatches/{id}` reads it, then the entry, by key). Lists of
/// entries never read it, and its partition is the entry's own, so a busy router's snapshots
/// spread over partitions.
pub fn dispatch_explanation(entry_id: Uuid) -> Key {
    Key::new(format!("{DISPATCH_PREFIX}{entry_id}"), "EXPLANATION")
}

/// The partition of an account's audit events (BEHAVIOR 18), sorted by [`audit_sort_key`]: the
/// account's change log newest first is one `Query` with `ScanIndexForward = false`, a window
/// a `BETWEEN`.
pub fn audit_partition(account_id: AccountId) -> String {
    format!("AUDIT#{account_id}")
}

/// The sort key of an audit event (`<at>#<event id>`, [`sortable_time`]): in the account's
/// partition and in its target's index partition.
pub fn audit_sort_key(at: DateTime<Utc>, event_id: Uuid) -> String {
    time_then_id(at, event_id)
}

/// An audit event of `account_id` (BEHAVIOR 18). Its id is a UUIDv7 of `at`, so the key of an
/// event is known from its id alone (`GET /audit-events/{id}` is one `GetItem`).
pub fn audit_event(account_id: AccountId, at: DateTime<Utc>, event_id: Uuid) -> Key {
    Key {
        pk: audit_partition(account_id),
        sk: audit_sort_key(at, event_id),
    }
}

/// Index partition (GSI1) of the audit events about one resource (`target_type` one of
/// `router`, `member`, `holiday_calendar`, `webhook`).
pub fn audit_target_partition(account_id: AccountId, target_type: &str, target_id: Uuid) -> String {
    format!("AUDIT#{account_id}#{target_type}#{target_id}")
}

/// GSI1 key of an audit event: its target's partition, sorted as in the account's.
pub fn audit_target_index(
    account_id: AccountId, target_type: &str, target_id: Uuid, at: DateTime<Utc>, event_id: Uuid,
) -> IndexKey {
    IndexKey {
        pk: audit_target_partition(account_id, target_type, target_id),
        sk: audit_sort_key(at, event_id),
    }
}

#[cfg(test)]
mod tests {
    use super::super::key::test_id as id;
    use super::super::work::message_deduplication;
    use super::*;
    use crate::model::dispatch::MessageDeduplicationId;
    use chrono::{TimeZone, Utc};
    use uuid::Uuid;

    #[test]
    fn audit_events_are_keyed_by_account_and_time_and_indexed_by_target() {
        let t = Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap();
        let key = audit_event(id(1), t, id(9));
        assert_eq!(key.pk, "AUDIT#00000000-0000-0000-0000-000000000001");
        assert_eq!(key.sk, time_then_id(t, id::<Uuid>(9)));
        assert!(
            audit_event(id(1), t, id(9)).sk
                < audit_event(id(1), t + chrono::Duration::milliseconds(1), id(1)).sk
        );
        assert_ne!(audit_event(id(2), t, id(9)).pk, key.pk, "accounts apart");
        let index = audit_target_index(id(1), "member", id(5), t, id(9));
        assert_eq!(
            index.pk,
            "AUDIT#00000000-0000-0000-0000-000000000001#member#00000000-0000-0000-0000-000000000005"
        );
        assert_eq!(index.sk, key.sk);
        assert_ne!(
            audit_target_partition(id(1), "member", id(5)),
            audit_target_partition(id(1), "router", id(5))
        );
        let snapshot = dispatch_explanation(id(6));
        assert_eq!(snapshot.pk, "DISPATCH#00000000-0000-0000-0000-000000000006");
        assert_eq!(snapshot.sk, "EXPLANATION");
    }

    #[test]
    fn dispatch_items_have_their_own_keys() {
        let t = Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap();
        assert_eq!(monthly_count(id(1), "2026-03").sk, "MONTH#2026-03");
        assert_eq!(monthly_count(id(1), "2026-03").pk, account(id(1)).pk);
        let entry = dispatch_entry(id(5), t, id(6));
        assert_eq!(entry.pk, router(id(5)).pk);
        assert!(entry.sk.starts_with(DISPATCH_PREFIX));
        assert!(
            dispatch_entry(id(5), t, id(6)).sk
                < dispatch_entry(id(5), t + chrono::Duration::milliseconds(1), id(1)).sk
        );
        let by_record = record_dispatch_index(id(1), ObjectType::Contacts, id(5), t, id(6));
        assert_eq!(
            by_record.pk,
            "ACCOUNT#00000000-0000-0000-0000-000000000001#contacts#00000000-0000-0000-0000-000000000005#DISPATCHES"
        );
        assert_eq!(format!("{DISPATCH_PREFIX}{}", by_record.sk), entry.sk);
        assert_ne!(
            record_dispatches_partition(id(1), ObjectType::Contacts, id(5)),
            record_dispatches_partition(id(1), ObjectType::Deals, id(5))
        );
        assert_eq!(
            message_deduplication(&MessageDeduplicationId::new("msg-1")).pk,
            "IDEMPOTENCY#msg-1"
        );
    }
}
