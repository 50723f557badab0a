//! The keys of records: the record, the uniqueness guards of its unique keys (a value too long
//! for a key hashed), and the index partition that lists an account's records of one type.

use super::key::{listing, partition_key_fits, sha256, IndexKey, Key};
use crate::model::object_type::ObjectType;
use crate::store::time_then_id;
use crate::types::ids::{AccountId, RecordId};
use chrono::{DateTime, Utc};

/// A record item (any type).
pub fn record(id: RecordId) -> Key {
    Key::new(format!("RECORD#{id}"), "RECORD")
}

/// Canonical values longer than this (in bytes) are replaced by their SHA-256 in a guard key, so
/// the key stays far below DynamoDB's 2048-byte partition key limit.
pub const MAX_VERBATIM_VALUE: usize = 1024;

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

/// Index partition of the account's records of one type.
pub fn records_partition(account_id: AccountId, object_type: ObjectType) -> String {
    format!("ACCOUNT#{account_id}#RECORDS#{object_type}")
}

/// Index keys of a record: GSI1 only while active, GSI2 always.
pub fn record_index(
    account_id: AccountId, object_type: ObjectType, created_at: DateTime<Utc>, id: RecordId,
    active: bool,
) -> (Option<IndexKey>, IndexKey) {
    listing(
        records_partition(account_id, object_type),
        time_then_id(created_at, id),
        active,
    )
}

#[cfg(test)]
mod tests {
    use super::super::key::{sha256, test_id as id};
    use super::*;

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
}
