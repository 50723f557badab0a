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
//! | idempotency marker | `IDEMPOTENCY#<key>` | `IDEMPOTENCY` | | |
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

use super::tally::{Buckets, Span};
use crate::model::due::DueId;
use crate::model::object_type::ObjectType;
use crate::types::email::Email;
use crate::types::ids::{
    AccountId, HolidayCalendarId, MemberId, RecordId, RoleId, RouterId, TeamId, WebhookId,
};
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use std::fmt::Display;
use uuid::Uuid;

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

/// Sort-key prefix of an account's field definitions.
pub const FIELD_PREFIX: &str = "FIELD#";
/// Sort-key prefix of a router's history entries (BEHAVIOR 8).
pub const DISPATCH_PREFIX: &str = "DISPATCH#";

/// Canonical values longer than this (in bytes) are replaced by their SHA-256 in a guard key, so
/// the key stays far below DynamoDB's 2048-byte partition key limit.
pub const MAX_VERBATIM_VALUE: usize = 1024;

/// Largest partition key value, bytes (table and index keys).
pub const MAX_PARTITION_KEY_BYTES: usize = 2048;
/// Largest sort key value, bytes (table and index keys).
pub const MAX_SORT_KEY_BYTES: usize = 1024;

/// Whether `value` can be a partition key value (table or index): 1 to 2,048 bytes.
pub fn partition_key_fits(value: &str) -> bool {
    (1..=MAX_PARTITION_KEY_BYTES).contains(&value.len())
}

/// Whether `value` can be a sort key value (table or index), or a sort-key prefix that an item
/// can begin with: 1 to 1,024 bytes.
pub fn sort_key_fits(value: &str) -> bool {
    (1..=MAX_SORT_KEY_BYTES).contains(&value.len())
}

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

/// An account item.
pub fn account(id: AccountId) -> Key {
    Key::new(format!("ACCOUNT#{id}"), "ACCOUNT")
}

/// An API client item, by `client_id` (unique across the store).
pub fn client(client_id: &str) -> Key {
    Key::new(format!("CLIENT#{client_id}"), "CLIENT")
}

/// The failed authentications of `client_id` from `source` (BEHAVIOR 1). The source comes
/// first: it never holds `#` ([`crate::auth::attempts::SourceAddress`]), so no two pairs share a
/// key whatever their client ids hold.
pub fn auth_failures(client_id: &str, source: &str) -> Key {
    Key::new(format!("AUTHFAIL#{source}#{client_id}"), "AUTHFAIL")
}

/// A role item.
pub fn role(id: RoleId) -> Key {
    Key::new(format!("ROLE#{id}"), "ROLE")
}

/// A member item.
pub fn member(id: MemberId) -> Key {
    Key::new(format!("MEMBER#{id}"), "MEMBER")
}

/// A team item.
pub fn team(id: TeamId) -> Key {
    Key::new(format!("TEAM#{id}"), "TEAM")
}

/// A router item.
pub fn router(id: RouterId) -> Key {
    Key::new(format!("ROUTER#{id}"), "ROUTER")
}

/// A record item (any type).
pub fn record(id: RecordId) -> Key {
    Key::new(format!("RECORD#{id}"), "RECORD")
}

/// A field definition of the account: one item per (type, internal name), in the account's
/// partition so one `Query` reads them all.
pub fn field_definition(
    account_id: AccountId, object_type: ObjectType, internal_name: &str,
) -> Key {
    Key {
        pk: account(account_id).pk,
        sk: format!("{FIELD_PREFIX}{object_type}#{internal_name}"),
    }
}

/// The uniqueness guard of `field` = `value` among active records of the account and type
/// (`UNIQUE#<account>#<type>#<field>#<canonical value>`). A value longer than
/// [`MAX_VERBATIM_VALUE`] bytes, or one that would make the key longer than a partition key
/// fits ([`partition_key_fits`]), is replaced by `sha256:<hex>`.
pub fn guard(account_id: AccountId, object_type: ObjectType, field: &str, value: &str) -> Key {
    let prefix = format!("UNIQUE#{account_id}#{object_type}#{field}#");
    let verbatim = format!("{prefix}{value}");
    let pk = if value.len() > MAX_VERBATIM_VALUE || !partition_key_fits(&verbatim) {
        format!("{prefix}{}", sha256(value))
    } else {
        verbatim
    };
    Key::new(pk, "UNIQUE")
}

/// `sha256:<lowercase hex>` of `value`: what stands in a key for a value too long for it.
fn sha256(value: &str) -> String {
    let digest = Sha256::digest(value.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// A router's rotation state, beside the router in its partition.
pub fn rotation(router_id: RouterId) -> Key {
    Key::new(router(router_id).pk, "ROTATION")
}

/// Sort-key prefix of a router's revisions (BEHAVIOR 15).
pub const REVISION_PREFIX: &str = "REVISION#";

/// A revision number as text that sorts as the number: 20 digits, zero-padded (`u64::MAX` has
/// 20), so a router's revisions list newest first with `ScanIndexForward = false`.
pub fn revision_number(revision: u64) -> String {
    format!("{revision:020}")
}

/// A router revision (BEHAVIOR 15), in its router's partition: `REVISION#<n>`.
pub fn router_revision(router_id: RouterId, revision: u64) -> Key {
    Key {
        pk: router(router_id).pk,
        sk: format!("{REVISION_PREFIX}{}", revision_number(revision)),
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

/// The account's assignment count of calendar month `month` (`YYYY-MM`).
pub fn monthly_count(account_id: AccountId, month: &str) -> Key {
    Key {
        pk: account(account_id).pk,
        sk: format!("MONTH#{month}"),
    }
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
    by_creation(at, entry_id)
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
    by_creation(at, event_id)
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

/// The idempotency marker of a queue message (its id).
pub fn idempotency(key: &str) -> Key {
    Key::new(format!("IDEMPOTENCY#{key}"), "IDEMPOTENCY")
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
        sk: by_creation(resume_at, id),
    }
}

/// The index key (GSI1) of a parked due item: the parked partition (which the sweeper never
/// reads), sorted by when it was parked, then id.
pub fn parked_due_index(id: &DueId, parked_at: DateTime<Utc>) -> IndexKey {
    IndexKey {
        pk: PARKED_DUE_PARTITION.to_string(),
        sk: by_creation(parked_at, id),
    }
}

/// Index partition (GSI1) of parked due items.
pub const PARKED_DUE_PARTITION: &str = "DUE#PARKED";

/// Index partition (GSI1) of one shard of the due-work index.
pub fn due_index_partition(shard: u8) -> String {
    format!("DUE#{shard}")
}

/// Sort-key prefix of an account's webhook subscriptions (in the account's partition: one
/// strongly consistent `Query` lists them, so a subscription created a moment ago is seen by
/// the next dispatch).
pub const WEBHOOK_PREFIX: &str = "WEBHOOK#";

/// Sort-key prefix of an account's holiday calendars (BEHAVIOR 17; in the account's partition:
/// one strongly consistent `Query` lists them, and dispatch reads them with the pool).
pub const HOLIDAY_CALENDAR_PREFIX: &str = "HOLIDAY_CALENDAR#";

/// A holiday calendar (BEHAVIOR 17).
pub fn holiday_calendar(account_id: AccountId, id: HolidayCalendarId) -> Key {
    Key {
        pk: account(account_id).pk,
        sk: format!("{HOLIDAY_CALENDAR_PREFIX}{id}"),
    }
}

/// The count of an account's holiday calendars (at most 20, kept by the writes that create and
/// delete them). Its sort key does not start with [`HOLIDAY_CALENDAR_PREFIX`] (`_` sorts after
/// `#`), so the calendars' query never reads it.
pub fn holiday_calendar_count(account_id: AccountId) -> Key {
    Key::new(account(account_id).pk, "HOLIDAY_CALENDAR_COUNT")
}

/// Sort-key prefix of a subscription's deliveries (newest first with `ScanIndexForward = false`:
/// delivery ids sort by creation).
pub const DELIVERY_PREFIX: &str = "DELIVERY#";

/// A webhook subscription (BEHAVIOR 13).
pub fn webhook(account_id: AccountId, id: WebhookId) -> Key {
    Key {
        pk: account(account_id).pk,
        sk: format!("{WEBHOOK_PREFIX}{id}"),
    }
}

/// The count of an account's webhook subscriptions (at most 20, kept by the writes that create
/// and delete them).
pub fn webhook_count(account_id: AccountId) -> Key {
    Key::new(account(account_id).pk, "WEBHOOK_COUNT")
}

/// A delivery of a subscription.
pub fn delivery(subscription_id: WebhookId, delivery_id: &str) -> Key {
    Key::new(
        format!("WEBHOOK#{subscription_id}"),
        &format!("{DELIVERY_PREFIX}{delivery_id}"),
    )
}

/// Index partition of the account's records of one type.
pub fn records_partition(account_id: AccountId, object_type: ObjectType) -> String {
    format!("ACCOUNT#{account_id}#RECORDS#{object_type}")
}

/// Index partition of the account's members.
pub fn members_partition(account_id: AccountId) -> String {
    format!("ACCOUNT#{account_id}#MEMBERS")
}

/// Index partition of the account's routers.
pub fn routers_partition(account_id: AccountId) -> String {
    format!("ACCOUNT#{account_id}#ROUTERS")
}

/// Index partition of the account's roles (GSI2).
pub fn roles_partition(account_id: AccountId) -> String {
    format!("ACCOUNT#{account_id}#ROLES")
}

/// Index partition of the account's teams (GSI2).
pub fn teams_partition(account_id: AccountId) -> String {
    format!("ACCOUNT#{account_id}#TEAMS")
}

/// A fixed-width UTC time (`2026-11-22T09:30:00.000000000Z`): its text order is time order.
pub fn sortable_time(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.9fZ").to_string()
}

/// Index sort key "by creation time then id" (records, routers, teams).
pub fn by_creation(created_at: DateTime<Utc>, id: impl Display) -> String {
    format!("{}#{id}", sortable_time(created_at))
}

/// Index sort key "by e-mail then id" (members).
pub fn by_email(email: &str, id: MemberId) -> String {
    format!("{}{id}", email_prefix(email))
}

/// The sort-key prefix of a member's e-mail, for the lookup by e-mail (`begins_with`).
pub fn email_prefix(email: &str) -> String {
    format!("{email}#")
}

/// Index keys of a record: GSI1 only while active, GSI2 always.
pub fn record_index(
    account_id: AccountId, object_type: ObjectType, created_at: DateTime<Utc>, id: RecordId,
    active: bool,
) -> (Option<IndexKey>, IndexKey) {
    listing(
        records_partition(account_id, object_type),
        by_creation(created_at, id),
        active,
    )
}

/// The item that finds a member by e-mail in its account: one item per
/// member, written with it by provisioning, read by key in batches ([`key_fits`]: an
/// address fits, e-mails being at most 64 characters before the `@` and 253 after).
pub fn member_email(account_id: AccountId, email: &Email) -> Key {
    Key::new(format!("MEMBER_EMAIL#{account_id}#{email}"), "MEMBER_EMAIL")
}

/// The marker that every member of the account has its [`member_email`] item (written by
/// provisioning once it has written or backfilled them all; a table written before these items
/// existed has none until provisioning runs on it).
pub fn member_emails_complete(account_id: AccountId) -> Key {
    Key::new(account(account_id).pk, "MEMBER_EMAILS")
}

/// Index keys of a member: GSI1 only while active, GSI2 always.
pub fn member_index(
    account_id: AccountId, email: &str, id: MemberId, active: bool,
) -> (Option<IndexKey>, IndexKey) {
    listing(members_partition(account_id), by_email(email, id), active)
}

/// Index keys of a router: GSI1 only while active, GSI2 always.
pub fn router_index(
    account_id: AccountId, created_at: DateTime<Utc>, id: RouterId, active: bool,
) -> (Option<IndexKey>, IndexKey) {
    listing(
        routers_partition(account_id),
        by_creation(created_at, id),
        active,
    )
}

/// GSI2 key of a role.
pub fn role_index(account_id: AccountId, id: RoleId) -> IndexKey {
    IndexKey {
        pk: roles_partition(account_id),
        sk: id.to_string(),
    }
}

/// GSI2 key of a team.
pub fn team_index(account_id: AccountId, created_at: DateTime<Utc>, id: TeamId) -> IndexKey {
    IndexKey {
        pk: teams_partition(account_id),
        sk: by_creation(created_at, id),
    }
}

fn listing(pk: String, sk: String, active: bool) -> (Option<IndexKey>, IndexKey) {
    let all = IndexKey { pk, sk };
    (active.then(|| all.clone()), all)
}

#[cfg(test)]
mod tests {
    #[test]
    fn holiday_calendars_live_in_their_accounts_partition_apart_from_their_count() {
        let account = AccountId::from_uuid(uuid::Uuid::nil());
        let id = HolidayCalendarId::from_uuid(uuid::Uuid::max());
        let key = super::holiday_calendar(account, id);
        assert_eq!(key.pk, super::account(account).pk);
        assert_eq!(
            key.sk,
            "HOLIDAY_CALENDAR#ffffffff-ffff-ffff-ffff-ffffffffffff"
        );
        let count = super::holiday_calendar_count(account);
        assert_eq!(count.pk, key.pk);
        assert!(!count.sk.starts_with(super::HOLIDAY_CALENDAR_PREFIX));
    }

    use super::*;
    use chrono::TimeZone;

    fn id<T: From<Uuid>>(n: u128) -> T {
        Uuid::from_u128(n).into()
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

    #[test]
    fn field_definitions_share_the_account_partition_under_one_prefix() {
        let k = field_definition(id(1), ObjectType::Contacts, "region");
        assert_eq!(k.pk, account(id(1)).pk);
        assert_eq!(k.sk, "FIELD#contacts#region");
        assert!(k.sk.starts_with(FIELD_PREFIX));
    }

    #[test]
    fn a_guard_key_names_account_type_field_and_canonical_value() {
        let k = guard(id(1), ObjectType::Companies, "website_url", "example.com");
        assert_eq!(
            k.pk,
            "UNIQUE#00000000-0000-0000-0000-000000000001#companies#website_url#example.com"
        );
        assert_eq!(k.sk, "UNIQUE");
    }

    #[test]
    fn guards_of_other_accounts_types_or_fields_differ() {
        let base = guard(id(1), ObjectType::Contacts, "external_id", "x");
        assert_ne!(base, guard(id(2), ObjectType::Contacts, "external_id", "x"));
        assert_ne!(base, guard(id(1), ObjectType::Deals, "external_id", "x"));
        assert_ne!(base, guard(id(1), ObjectType::Contacts, "email", "x"));
    }

    #[test]
    fn a_very_long_guard_value_is_hashed_to_a_bounded_key() {
        let long = "v".repeat(5000);
        let k = guard(id(1), ObjectType::Deals, "external_id", &long);
        assert!(k.pk.len() < 200, "{}", k.pk.len());
        assert!(k.pk.contains("#sha256:"));
        let other = guard(id(1), ObjectType::Deals, "external_id", &"w".repeat(5000));
        assert_ne!(k, other);
        let short = "v".repeat(MAX_VERBATIM_VALUE);
        assert!(guard(id(1), ObjectType::Deals, "external_id", &short)
            .pk
            .ends_with(&short));
    }

    #[test]
    fn a_guard_value_that_would_not_fit_a_partition_key_is_hashed_whatever_its_length() {
        // A field name of 1,000 bytes leaves no room for a verbatim value of 1,024.
        let field = "f".repeat(1000);
        let value = "v".repeat(MAX_VERBATIM_VALUE);
        let k = guard(id(1), ObjectType::Contacts, &field, &value);
        assert!(partition_key_fits(&k.pk), "{}", k.pk.len());
        assert!(k.pk.ends_with(&sha256(&value)));
        // A short key keeps its value verbatim, as guards written by earlier releases do.
        assert!(guard(id(1), ObjectType::Contacts, "email", &value)
            .pk
            .ends_with(&value));
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

    #[test]
    fn member_email_items_are_per_account_and_address() {
        let email = Email::parse("Ana@Example.com").unwrap();
        let k = member_email(id(1), &email);
        assert_eq!(
            k.pk,
            "MEMBER_EMAIL#00000000-0000-0000-0000-000000000001#ana@example.com"
        );
        assert_ne!(k, member_email(id(2), &email));
        assert_eq!(member_emails_complete(id(1)).pk, account(id(1)).pk);
        // An address is at most 64 characters before the `@` (4 bytes each at most) and 253
        // after it (an A-label host name): far inside a partition key.
        let domain = [
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(61),
        ]
        .join(".");
        assert_eq!(domain.len(), 253);
        let longest = Email::parse(&format!("{}@{domain}", "x".repeat(64))).unwrap();
        assert!(member_email(id(1), &longest).pk.len() + 3 * 64 < MAX_PARTITION_KEY_BYTES);
        assert!(Email::parse(&format!("{}@{domain}", "x".repeat(65))).is_err());
    }

    #[test]
    fn creation_sort_keys_order_by_time_then_id() {
        let t1 = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let t2 = t1 + chrono::Duration::milliseconds(1);
        let t3 = t1 + chrono::Duration::seconds(10);
        let mut keys = [
            by_creation(t3, id::<Uuid>(1)),
            by_creation(t2, id::<Uuid>(1)),
            by_creation(t1, id::<Uuid>(9)),
            by_creation(t1, id::<Uuid>(2)),
        ];
        keys.sort();
        assert_eq!(
            keys,
            [
                by_creation(t1, id::<Uuid>(2)),
                by_creation(t1, id::<Uuid>(9)),
                by_creation(t2, id::<Uuid>(1)),
                by_creation(t3, id::<Uuid>(1)),
            ]
        );
        assert_eq!(sortable_time(t1), "2026-01-02T03:04:05.000000000Z");
    }

    #[test]
    fn member_sort_keys_order_by_email_even_when_one_is_a_prefix_of_another() {
        let mut keys = [
            by_email("a@x.com", id(1)),
            by_email("a@x.co", id(2)),
            by_email("ab@x.co", id(3)),
        ];
        keys.sort();
        assert_eq!(
            keys,
            [
                by_email("a@x.co", id(2)),
                by_email("a@x.com", id(1)),
                by_email("ab@x.co", id(3)),
            ]
        );
        assert!(by_email("a@x.co", id(2)).starts_with(&email_prefix("a@x.co")));
        assert!(!by_email("a@x.com", id(2)).starts_with(&email_prefix("a@x.co")));
    }

    #[test]
    fn archived_items_leave_the_active_index_but_stay_in_the_full_one() {
        let t = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let (active, all) = record_index(id(1), ObjectType::Contacts, t, id(5), true);
        assert_eq!(active.as_ref(), Some(&all));
        assert_eq!(all.pk, records_partition(id(1), ObjectType::Contacts));
        let (active, all) = record_index(id(1), ObjectType::Contacts, t, id(5), false);
        assert!(active.is_none());
        assert_eq!(all.sk, by_creation(t, id::<Uuid>(5)));
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

    #[test]
    fn audit_events_are_keyed_by_account_and_time_and_indexed_by_target() {
        let t = Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap();
        let key = audit_event(id(1), t, id(9));
        assert_eq!(key.pk, "AUDIT#00000000-0000-0000-0000-000000000001");
        assert_eq!(key.sk, by_creation(t, id::<Uuid>(9)));
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
        assert_eq!(idempotency("msg-1").pk, "IDEMPOTENCY#msg-1");
    }
}
