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
//! `work.rs` (`Idempotency-Key` requests, message de-duplication, due items, CRM pace); `key.rs` holds
//! the attribute names, the key types and what they share.

mod directory;
mod history;
mod key;
mod records;
mod routers;
mod subscriptions;
mod work;

pub use directory::*;
pub use history::*;
pub use key::*;
pub use records::*;
pub use routers::*;
pub use subscriptions::*;
pub use work::*;

#[cfg(test)]
mod tests {
    use super::key::test_id as id;
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
