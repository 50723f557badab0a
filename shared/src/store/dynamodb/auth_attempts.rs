//! The DynamoDB adapter's failed client authentications ([`AuthAttemptStore`]): one item per
//! `client_id` and source (`keys::auth_failures`) holding the count and the end of its window
//! (epoch milliseconds), removed by the table's TTL (`expires_at`) a while after the window
//! ends. Counting is an `UpdateItem` adding one while the window is open, or one opening a new
//! window when it is absent or ended; concurrent failures of any number of instances are each
//! counted once.

use super::items::{backend, millis, Expr, Item};
use super::DynamoStore;
use crate::model::auth_attempt::{AttemptKey, FailureWindow};
use crate::store::dynamodb::keys;
use crate::store::{AuthAttemptStore, StoreError, StoreResult};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

/// The count attribute.
const COUNT: &str = "count";
/// The end of the window, epoch milliseconds.
const ENDS_AT: &str = "ends_at";
/// The TTL attribute (epoch seconds): a minute after the window ends.
const EXPIRES_AT: &str = super::items::EXPIRES_AT;
/// The item type.
const ITEM_TYPE: &str = "auth_failures";

/// How many times counting starts over when the item changed between its two conditions
/// (another instance opened the window meanwhile); each round is one request.
const ROUNDS: usize = 4;

/// The window an item holds.
///
/// Errors: a backend error for an item without both numbers.
fn window_of(item: &Item) -> StoreResult<FailureWindow> {
    let number = |name: &str| match item.get(name) {
        Some(AttributeValue::N(v)) => v
            .parse::<i64>()
            .map_err(|e| backend(format!("auth failures {name}: {e}"))),
        _ => Err(backend(format!("auth failures item without {name}"))),
    };
    let count = u32::try_from(number(COUNT)?.max(0)).unwrap_or(u32::MAX);
    let ends_at = DateTime::from_timestamp_millis(number(ENDS_AT)?)
        .ok_or_else(|| backend("auth failures ends_at out of range"))?;
    Ok(FailureWindow { count, ends_at })
}

#[async_trait]
impl AuthAttemptStore for DynamoStore {
    async fn failed_authentications(
        &self, key: &AttemptKey, now: DateTime<Utc>,
    ) -> StoreResult<Option<FailureWindow>> {
        let Some(item) = self
            .get(&keys::auth_failures(&key.client_id, &key.source))
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(window_of(&item)?).filter(|w| w.open_at(now)))
    }

    async fn count_failed_authentication(
        &self, key: &AttemptKey, now: DateTime<Utc>, window: chrono::Duration,
    ) -> StoreResult<FailureWindow> {
        let item_key = keys::auth_failures(&key.client_id, &key.source);
        let ends_at = now.checked_add_signed(window).unwrap_or(now);
        let expires_at = ends_at.timestamp().saturating_add(60);
        for _ in 0..ROUNDS {
            // One more in the open window.
            let add = Expr::new("SET #count = #count + :one")
                .name("#count", COUNT)
                .name("#ends", ENDS_AT)
                .value(":one", AttributeValue::N("1".into()))
                .value(":now", millis(now));
            if let Some(item) = self
                .update_conditional(&item_key, &add, "#ends > :now")
                .await?
            {
                return window_of(&item);
            }
            // No open window: open one (unless another instance just did).
            let open =
                Expr::new("SET #count = :one, #ends = :ends, #expires = :expires, #type = :type")
                    .name("#pk", keys::PK)
                    .name("#count", COUNT)
                    .name("#ends", ENDS_AT)
                    .name("#expires", EXPIRES_AT)
                    .name("#type", keys::ITEM_TYPE)
                    .value(":one", AttributeValue::N("1".into()))
                    .value(":ends", millis(ends_at))
                    .value(":now", millis(now))
                    .value(":expires", AttributeValue::N(expires_at.to_string()))
                    .value(":type", AttributeValue::S(ITEM_TYPE.into()));
            if let Some(item) = self
                .update_conditional(
                    &item_key,
                    &open,
                    "attribute_not_exists(#pk) OR #ends <= :now",
                )
                .await?
            {
                return window_of(&item);
            }
        }
        Err(StoreError::Conflict)
    }
}
