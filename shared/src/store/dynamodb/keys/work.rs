//! The keys of work in flight: `Idempotency-Key` requests, queued messages' de-duplication
//! markers, due items (and the sharded index the sweeper reads), and the CRM pace items.

use super::key::{sha256, sort_key_fits, IndexKey, Key};
use crate::model::dispatch::MessageDeduplicationId;
use crate::model::due::DueId;
use crate::store::time_then_id;
use crate::types::ids::AccountId;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

/// The `Idempotency-Key` of an HTTP request (BEHAVIOR 10): per account and route. The
/// partition key ends with the key after the fixed-length account id and the sort key holds the
/// route, so no `#` in a key or route can make two scopes meet (and one key's items spread over
/// partitions).
///
/// A route whose sort key would pass 1,024 bytes (a path segment of a thousand digits) is
/// replaced by `sha256:<hex>`: the request is still claimed, answered and replayed.
pub fn idempotent_request(account_id: AccountId, route: &str, key: &str) -> Key {
    let verbatim = format!("REQUEST#{route}");
    let sk = if sort_key_fits(&verbatim) {
        verbatim
    } else {
        format!("REQUEST#{}", sha256(route))
    };
    Key {
        pk: format!("REQUEST#{account_id}#{key}"),
        sk,
    }
}

/// The de-duplication marker of a queued message (by its id; the stored key keeps its first
/// name, `IDEMPOTENCY`).
pub fn message_deduplication(id: &MessageDeduplicationId) -> Key {
    Key::new(format!("IDEMPOTENCY#{}", id.as_str()), "IDEMPOTENCY")
}

/// Index partitions (GSI1) of the due-work index: items spread over this many partitions by a
/// hash of their id, so the index takes writes at any dispatch rate; the sweeper queries each.
pub const DUE_SHARDS: u8 = 8;

/// The CRM pace of an account's requests to one CRM ([`crate::model::pace`]): one small item
/// that every instance moves with one conditional update per request.
pub fn crm_pace(key: &crate::model::pace::PaceKey) -> Key {
    Key::new(
        format!("PACE#{}#{}", key.account, key.provider.as_str()),
        "PACE",
    )
}

/// A due item ([`crate::model::due`]).
pub fn due_item(id: &DueId) -> Key {
    Key::new(format!("DUE#{id}"), "DUE")
}

/// The due-work index key (GSI1) of item `id`: its shard's partition, sorted by the time the
/// sweeper resumes it, then id.
pub fn due_index(id: &DueId, resume_at: DateTime<Utc>) -> IndexKey {
    let digest = Sha256::digest(id.to_string().as_bytes());
    IndexKey {
        pk: due_index_partition(digest[0] % DUE_SHARDS),
        sk: time_then_id(resume_at, id),
    }
}

/// The index key (GSI1) of a parked due item: the parked partition (which the sweeper never
/// reads), sorted by when it was parked, then id.
pub fn parked_due_index(id: &DueId, parked_at: DateTime<Utc>) -> IndexKey {
    IndexKey {
        pk: PARKED_DUE_PARTITION.to_string(),
        sk: time_then_id(parked_at, id),
    }
}

/// Index partition (GSI1) of parked due items.
pub const PARKED_DUE_PARTITION: &str = "DUE#PARKED";

/// Index partition (GSI1) of one shard of the due-work index.
pub fn due_index_partition(shard: u8) -> String {
    format!("DUE#{shard}")
}

#[cfg(test)]
mod tests {
    use super::super::key::{key_fits, test_id as id};
    use super::*;
    use crate::store::sortable_time;
    use chrono::{TimeZone, Utc};

    #[test]
    fn due_items_spread_over_the_index_shards_sorted_by_resume_time() {
        use crate::model::due::{DueId, DueKind};
        let at = Utc.with_ymd_and_hms(2026, 11, 24, 9, 30, 0).unwrap();
        let first = DueId::new(DueKind::CrmSync, "e1");
        assert_eq!(due_item(&first).pk, "DUE#crm_sync#e1");
        assert_eq!(due_item(&first).sk, "DUE");
        let index = due_index(&first, at);
        assert_eq!(index, due_index(&first, at), "the shard is stable");
        assert_eq!(index.sk, format!("{}#crm_sync#e1", sortable_time(at)));
        let shards: std::collections::HashSet<String> = (0..200)
            .map(|n| due_index(&DueId::new(DueKind::SlaCheck, n.to_string()), at).pk)
            .collect();
        let all: std::collections::HashSet<String> =
            (0..DUE_SHARDS).map(due_index_partition).collect();
        assert_eq!(
            shards, all,
            "200 ids reach every shard and no other partition"
        );
        let later = due_index(&first, at + chrono::Duration::milliseconds(1));
        assert!(later.sk > index.sk);
    }

    #[test]
    fn an_idempotent_route_too_long_for_a_sort_key_is_hashed_and_stays_distinct() {
        let short = "POST /routers/x/revisions/12/restore";
        assert_eq!(
            idempotent_request(id(1), short, "k").sk,
            format!("REQUEST#{short}")
        );
        let long = format!("POST /routers/x/revisions/{}/restore", "9".repeat(1100));
        let longer = format!("POST /routers/x/revisions/{}/restore", "9".repeat(1101));
        let a = idempotent_request(id(1), &long, "k");
        assert!(key_fits(&a), "{}", a.sk.len());
        assert!(a.sk.starts_with("REQUEST#sha256:"));
        assert_ne!(a, idempotent_request(id(1), &longer, "k"));
        assert_ne!(a, idempotent_request(id(2), &long, "k"));
    }
}
