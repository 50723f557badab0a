//! What every key shares: the table's key attributes and indexes, the key types, DynamoDB's key
//! sizes and whether a key fits them (BEHAVIOR 12), and the SHA-256 that stands in a key for a
//! value too long for it.

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
    pub(super) fn new(pk: String, sk: &str) -> Self {
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
pub(super) fn sha256(value: &str) -> String {
    let digest = Sha256::digest(value.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

pub(super) fn listing(pk: String, sk: String, active: bool) -> (Option<IndexKey>, IndexKey) {
    let all = IndexKey { pk, sk };
    (active.then(|| all.clone()), all)
}

/// An id of any kind made of the number `n`, for the tests.
#[cfg(test)]
pub(super) fn test_id<T: From<uuid::Uuid>>(n: u128) -> T {
    uuid::Uuid::from_u128(n).into()
}
