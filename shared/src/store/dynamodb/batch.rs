//! Consistent `BatchGetItem`s of any number of keys: chunks of 100 (DynamoDB's limit), sent in
//! waves, unprocessed keys sent again after a backoff.

use super::items;
use super::items::{backend, key_attributes, Item};
use super::request::string_attr;
use super::DynamoStore;
use crate::store::dynamodb::keys::{self, Key};
use crate::store::{Backoff, StoreError, StoreResult};
use aws_sdk_dynamodb::types::KeysAndAttributes;
use std::collections::{HashMap, HashSet};

/// DynamoDB's limit of keys in one `BatchGetItem`.
const MAX_BATCH_GET_KEYS: usize = 100;

impl DynamoStore {
    /// The items of `keys` that exist (consistent `BatchGetItem`s of up to 100 keys), keys
    /// and guard holder attribute only.
    pub(super) async fn batch_get(&self, keys: &[Key]) -> StoreResult<HashMap<Key, Item>> {
        self.batch_get_projected(keys, true).await
    }

    /// The items of `keys` that exist, read whole or (`guards_only`) as their keys and guard
    /// holder: consistent `BatchGetItem`s of up to 100 keys each, one after the other, the
    /// unprocessed keys of each sent again after a backoff.
    pub(super) async fn batch_get_projected(
        &self, keys: &[Key], guards_only: bool,
    ) -> StoreResult<HashMap<Key, Item>> {
        self.batch_get_waves(keys, guards_only, 1).await
    }

    /// [`Self::batch_get_projected`] in parallel waves: up to `in_flight` `BatchGetItem`s sent
    /// at once (each of at most [`MAX_BATCH_GET_KEYS`] keys, DynamoDB's limit).
    pub(super) async fn batch_get_waves(
        &self, keys: &[Key], guards_only: bool, in_flight: usize,
    ) -> StoreResult<HashMap<Key, Item>> {
        // A key that cannot fit DynamoDB's key sizes names no item: not sent.
        let unique: Vec<Key> = {
            let mut seen = HashSet::new();
            keys.iter()
                .filter(|k| keys::key_fits(k) && seen.insert(*k))
                .cloned()
                .collect()
        };
        let chunks: Vec<&[Key]> = unique.chunks(MAX_BATCH_GET_KEYS).collect();
        let mut found = HashMap::with_capacity(unique.len());
        // Waves of `in_flight` requests: each wave's requests at once, the waves one after the
        // other (a request whose unprocessed keys back off holds its wave up).
        for wave in chunks.chunks(in_flight.max(1)) {
            let batches = futures_util::future::try_join_all(
                wave.iter()
                    .map(|chunk| self.batch_get_chunk(chunk, guards_only)),
            )
            .await?;
            found.extend(batches.into_iter().flatten());
        }
        Ok(found)
    }

    /// One `BatchGetItem` of at most [`MAX_BATCH_GET_KEYS`] keys, its unprocessed keys sent
    /// again until none is left: at once after an answer that read some of them (the 16 MB
    /// limit of one answer: progress), after a jittered backoff ([`Backoff`]) after one that
    /// read none (throttling), within the adapter's deadline and the request's.
    ///
    /// Errors: [`StoreError::Unavailable`] when answers kept reading nothing until the deadline;
    /// the SDK's.
    async fn batch_get_chunk(
        &self, chunk: &[Key], guards_only: bool,
    ) -> StoreResult<Vec<(Key, Item)>> {
        let mut request = KeysAndAttributes::builder()
            .set_keys(Some(chunk.iter().map(key_attributes).collect()))
            .consistent_read(true);
        if guards_only {
            request = request
                .projection_expression("#pk, #sk, #holder")
                .expression_attribute_names("#pk", keys::PK)
                .expression_attribute_names("#sk", keys::SK)
                .expression_attribute_names("#holder", items::GUARD_RECORD_ID);
        }
        let mut found = Vec::with_capacity(chunk.len());
        let mut pending: Option<KeysAndAttributes> = Some(request.build().map_err(backend)?);
        let mut backoff = Backoff::until(self.conflict_deadline);
        while let Some(request) = pending.take() {
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, request)
                .send()
                .await
                .map_err(backend)?;
            let items = out
                .responses
                .and_then(|mut r| r.remove(&self.table))
                .unwrap_or_default();
            let progressed = !items.is_empty();
            for item in items {
                let key = Key {
                    pk: string_attr(&item, keys::PK)?,
                    sk: string_attr(&item, keys::SK)?,
                };
                found.push((key, item));
            }
            pending = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.table))
                .filter(|k| !k.keys.is_empty());
            if let Some(left) = pending.as_ref().filter(|_| !progressed) {
                if !backoff.again().await {
                    return Err(StoreError::Unavailable(format!(
                        "BatchGetItem left {} keys unprocessed until the deadline",
                        left.keys.len()
                    )));
                }
            }
        }
        Ok(found)
    }
}
