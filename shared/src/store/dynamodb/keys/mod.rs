//! Every key of the single DynamoDB table, built here and nowhere else.
//!
//! The table has a generic primary key (`PK`, `SK`) and two overloaded global secondary indexes
//! (`GSI1PK`/`GSI1SK`, `GSI2PK`/`GSI2SK`); the item types and access patterns are tabled in
//! `docs/dynamodb.md`. Summary:
//!
//! | item | `PK` | `SK` | GSI1 (active only) | GSI2 (all) |
//! |---|---|---|---|---|
//! | account | `ACCOUNT#<id>` | `ACCOUNT` | | |
//! | API client | `CLIENT#<client_id>` | `CLIENT` | | |
//! | role | `ROLE#<id>` | `ROLE` | | `ACCOUNT#<a>#ROLES` / `<id>` |
//! | member | `MEMBER#<id>` | `MEMBER` | `ACCOUNT#<a>#MEMBERS` / `<email>#<id>` | same |
//! | member by e-mail | `MEMBER_EMAIL#<a>#<email>` | `MEMBER_EMAIL` | | |
//! | member e-mails complete (marker) | `ACCOUNT#<a>` | `MEMBER_EMAILS` | | |
//! | team | `TEAM#<id>` | `TEAM` | | `ACCOUNT#<a>#TEAMS` / `<created>#<id>` |
//! | field definition | `ACCOUNT#<a>` | `FIELD#<type>#<internal_name>` | | |
//! | router | `ROUTER#<id>` | `ROUTER` | `ACCOUNT#<a>#ROUTERS` / `<created>#<id>` | same |
//! | rotation state | `ROUTER#<id>` | `ROTATION` | | |
//! | router revision | `ROUTER#<id>` | `REVISION#<n, 20 digits>` | | |
//! | router draft | `ROUTER#<id>` | `DRAFT` | | |
//! | router count | `ACCOUNT#<a>` | `ROUTER_COUNT` | | |
//! | record | `RECORD#<id>` | `RECORD` | `ACCOUNT#<a>#RECORDS#<type>` / `<created>#<id>` | same |
//! | history entry | `ROUTER#<router id>` | `DISPATCH#<at>#<entry id>` | | `ACCOUNT#<a>#<type>#<record id>#DISPATCHES` / `<at>#<entry id>` (when the object id is a UUID) |
//! | stats counter | `ROUTER#<router id>` | `TALLY#D#<YYYY-MM-DD>#<email>`, `TALLY#H#<YYYY-MM-DDTHH>#<email>`, `TALLY#M#<YYYY-MM-DDTHH:MM>#<email>` | | |
//! | uniqueness guard | `UNIQUE#<a>#<type>#<field>#<canonical value>` | `UNIQUE` | | |
//! | monthly count | `ACCOUNT#<a>` | `MONTH#<YYYY-MM>` | | |
//! | message de-duplication marker | `IDEMPOTENCY#<message id>` | `IDEMPOTENCY` | | |
//! | `Idempotency-Key` request | `REQUEST#<a>#<key>` | `REQUEST#<route>` (`REQUEST#sha256:<hex>` past 1,024 bytes) | | |
//! | CRM pace | `PACE#<a>#<provider>` | `PACE` | | |
//! | due item | `DUE#<kind>#<subject id>` | `DUE` | `DUE#<shard>` / `<resume at>#<id>`; parked: `DUE#PARKED` / `<parked at>#<id>` | |
//! | webhook subscription | `ACCOUNT#<a>` | `WEBHOOK#<id>` | | |
//! | webhook subscriptions count | `ACCOUNT#<a>` | `WEBHOOK_COUNT` | | |
//! | holiday calendar | `ACCOUNT#<a>` | `HOLIDAY_CALENDAR#<id>` | | |
//! | holiday calendars count | `ACCOUNT#<a>` | `HOLIDAY_CALENDAR_COUNT` | | |
//! | webhook delivery | `WEBHOOK#<subscription id>` | `DELIVERY#<msg id>` | | |
//! | decision snapshot | `DISPATCH#<entry id>` | `EXPLANATION` | | |
//! | audit event | `AUDIT#<a>` | `<at>#<event id>` | `AUDIT#<a>#<target type>#<target id>` / `<at>#<event id>` | |
//!
//! Entities are keyed by their own id (ids are unique across the store), so a get by id is one
//! strongly consistent `GetItem`, and a router id resolves to its account without a scan.
//!
//! A client's value that lands in a key is sized by the one key rule ([`key_fits`]): a guard's
//! value or an `Idempotency-Key` route that would not fit is replaced by its SHA-256
//! ([`guard`], [`idempotent_request`]); any other key that cannot fit names no item, and the
//! DynamoDB adapter answers a read of it as absent without sending it.
//!
//! The sort keys of listed items are the domain's list orders ([`crate::store::time_then_id`],
//! [`crate::store::email_then_id`], [`crate::store::revision_order`]), so a list position is a
//! sort key. The keys are grouped by what they key: `directory.rs` (accounts, clients, roles,
//! members, teams, field definitions), `routers.rs`, `records.rs`, `history.rs` (history entries,
//! snapshots, monthly counts, audit events), `subscriptions.rs` (webhooks, holiday calendars) and
//! `work.rs` (`Idempotency-Key` requests, message de-duplication, due items, CRM pace); this file
//! holds the attribute names, the key types and what they share.

mod directory;
mod history;
mod records;
mod routers;
mod subscriptions;
mod work;

pub use directory::*;
pub use history::*;
pub use records::*;
pub use routers::*;
pub use subscriptions::*;
pub use work::*;

use crate::store::size::{partition_key_fits, sort_key_fits};
use sha2::{Digest, Sha256};

/// Partition key attribute of the table.
pub const PK: &str = "PK";
/// Sort key attribute of the table.
pub const SK: &str = "SK";
/// GSI1: active items of a listing (sparse: archived items carry no GSI1 keys).
pub const GSI1: &str = "GSI1";
/// Partition key attribute of GSI1.
pub const GSI1PK: &str = "GSI1PK";
/// Sort key attribute of GSI1.
pub const GSI1SK: &str = "GSI1SK";
/// GSI2: every item of a listing, archived included; roles and teams by account.
pub const GSI2: &str = "GSI2";
/// Partition key attribute of GSI2.
pub const GSI2PK: &str = "GSI2PK";
/// Sort key attribute of GSI2.
pub const GSI2SK: &str = "GSI2SK";
/// Attribute naming the item type (`account`, `record`, ...), for people reading the table.
pub const ITEM_TYPE: &str = "item_type";

/// Whether `key` can name an item: its partition and sort values fit.
pub fn key_fits(key: &Key) -> bool {
    partition_key_fits(&key.pk) && sort_key_fits(&key.sk)
}

/// Whether an index key fits.
pub fn index_key_fits(key: &IndexKey) -> bool {
    partition_key_fits(&key.pk) && sort_key_fits(&key.sk)
}

/// A primary key: `PK` and `SK`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Partition key value.
    pub pk: String,
    /// Sort key value.
    pub sk: String,
}

impl Key {
    fn new(pk: String, sk: &str) -> Self {
        Self {
            pk,
            sk: sk.to_string(),
        }
    }
}

/// An index key: partition and sort value of GSI1 or GSI2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexKey {
    /// Index partition key value.
    pub pk: String,
    /// Index sort key value.
    pub sk: String,
}

/// `sha256:<lowercase hex>` of `value`: what stands in a key for a value too long for it.
fn sha256(value: &str) -> String {
    let digest = Sha256::digest(value.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn listing(pk: String, sk: String, active: bool) -> (Option<IndexKey>, IndexKey) {
    let all = IndexKey { pk, sk };
    (active.then(|| all.clone()), all)
}

/// An id of any kind made of the number `n`, for the tests.
#[cfg(test)]
fn test_id<T: From<uuid::Uuid>>(n: u128) -> T {
    uuid::Uuid::from_u128(n).into()
}

#[cfg(test)]
mod tests {
    use super::test_id as id;
    use super::*;
    use crate::model::object_type::ObjectType;
    use crate::store::time_then_id;
    use chrono::{TimeZone, Utc};
    use uuid::Uuid;

    #[test]
    fn a_key_fits_when_both_its_values_do() {
        let key = Key {
            pk: "p".into(),
            sk: "s".repeat(1025),
        };
        assert!(!key_fits(&key));
        assert!(index_key_fits(&IndexKey {
            pk: "p".repeat(2048),
            sk: "s".into()
        }));
    }

    #[test]
    fn entity_keys_carry_the_type_and_the_id() {
        let a: Uuid = id(1);
        assert_eq!(
            account(a.into()),
            Key {
                pk: "ACCOUNT#00000000-0000-0000-0000-000000000001".into(),
                sk: "ACCOUNT".into()
            }
        );
        assert_eq!(client("northwind").pk, "CLIENT#northwind");
        assert_eq!(role(a.into()).pk, format!("ROLE#{a}"));
        assert_eq!(member(a.into()).sk, "MEMBER");
        assert_eq!(team(a.into()).sk, "TEAM");
        assert_eq!(router(a.into()).sk, "ROUTER");
        assert_eq!(record(a.into()).sk, "RECORD");
    }

    #[test]
    fn archived_items_leave_the_active_index_but_stay_in_the_full_one() {
        let t = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let (active, all) = record_index(id(1), ObjectType::Contacts, t, id(5), true);
        assert_eq!(active.as_ref(), Some(&all));
        assert_eq!(all.pk, records_partition(id(1), ObjectType::Contacts));
        let (active, all) = record_index(id(1), ObjectType::Contacts, t, id(5), false);
        assert!(active.is_none());
        assert_eq!(all.sk, time_then_id(t, id::<Uuid>(5)));
        assert!(member_index(id(1), "a@x.co", id(2), false).0.is_none());
        assert!(router_index(id(1), t, id(3), true).0.is_some());
    }

    #[test]
    fn listing_partitions_are_per_account_and_type() {
        assert_ne!(
            records_partition(id(1), ObjectType::Contacts),
            records_partition(id(1), ObjectType::Companies)
        );
        assert_ne!(members_partition(id(1)), members_partition(id(2)));
        assert_ne!(routers_partition(id(1)), members_partition(id(1)));
        assert_eq!(role_index(id(1), id(4)).pk, roles_partition(id(1)));
        let t = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(team_index(id(1), t, id(4)).pk, teams_partition(id(1)));
    }
}
