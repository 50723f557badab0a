//! The keys of an account and the people and definitions in it: the account, API clients and
//! their failed authentications, roles, members (with the item that finds one by e-mail), teams,
//! field definitions, and the index partitions that list them.

use super::key::{listing, IndexKey, Key};
use crate::model::object_type::ObjectType;
use crate::store::{email_then_id, time_then_id};
use crate::types::email::Email;
use crate::types::ids::{AccountId, MemberId, RoleId, TeamId};
use chrono::{DateTime, Utc};

/// Sort-key prefix of an account's field definitions.
pub const FIELD_PREFIX: &str = "FIELD#";

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

/// Index partition of the account's members.
pub fn members_partition(account_id: AccountId) -> String {
    format!("ACCOUNT#{account_id}#MEMBERS")
}

/// Index partition of the account's roles (GSI2).
pub fn roles_partition(account_id: AccountId) -> String {
    format!("ACCOUNT#{account_id}#ROLES")
}

/// Index partition of the account's teams (GSI2).
pub fn teams_partition(account_id: AccountId) -> String {
    format!("ACCOUNT#{account_id}#TEAMS")
}

/// The sort-key prefix of a member's e-mail, for the lookup by e-mail (`begins_with`).
pub fn email_prefix(email: &str) -> String {
    format!("{email}#")
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
    listing(
        members_partition(account_id),
        email_then_id(email, id),
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
        sk: time_then_id(created_at, id),
    }
}

#[cfg(test)]
mod tests {
    use super::super::key::{test_id as id, MAX_PARTITION_KEY_BYTES};
    use super::*;

    #[test]
    fn field_definitions_share_the_account_partition_under_one_prefix() {
        let k = field_definition(id(1), ObjectType::Contacts, "region");
        assert_eq!(k.pk, account(id(1)).pk);
        assert_eq!(k.sk, "FIELD#contacts#region");
        assert!(k.sk.starts_with(FIELD_PREFIX));
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

    /// The order of member sort keys is `email_then_id`'s (tested in `store::position`); here,
    /// that a member's e-mail prefix matches its own keys and not a longer address's.
    #[test]
    fn an_email_prefix_matches_its_own_member_keys_only() {
        assert!(email_then_id("a@x.co", id(2)).starts_with(&email_prefix("a@x.co")));
        assert!(!email_then_id("a@x.com", id(2)).starts_with(&email_prefix("a@x.co")));
    }
}
