//! The items of `Idempotency-Key` requests (BEHAVIOR 10: a claim in flight, then its stored
//! answer, with their conditions) and the markers of the queue messages a dispatch handled.

use super::{key_attributes, n, s, Expr, Item, EXPIRES_AT};
use crate::idempotency::{
    ClaimOutcome, Fingerprint, IdempotencyClaim, IdempotencyCompletion, StoredResponse,
};
use crate::model::dispatch::MessageDeduplicationId;
use crate::store::dynamodb::keys::{self, Key};
use crate::store::{StoreError, StoreResult};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

/// Attribute of an `Idempotency-Key` claim: the body's fingerprint.
pub const REQUEST_FINGERPRINT: &str = "fingerprint";
/// Attribute of an `Idempotency-Key` claim: the lease id of the request holding it.
pub const REQUEST_LEASE_ID: &str = "lease_id";
/// Attribute of an `Idempotency-Key` claim: end of the lease, epoch milliseconds.
pub const REQUEST_LEASE_UNTIL: &str = "lease_until";
/// Attribute of an `Idempotency-Key` claim: `in_flight` or `completed`.
pub const REQUEST_STATE: &str = "state";
/// Attribute of a completed `Idempotency-Key` claim: the stored status.
pub const REQUEST_STATUS: &str = "status";
/// Attribute of a completed `Idempotency-Key` claim: the stored body.
pub const REQUEST_BODY: &str = "body";
const IN_FLIGHT: &str = "in_flight";
const COMPLETED: &str = "completed";

/// The de-duplication marker of a queued message, expiring at `expires_at` (epoch seconds).
pub fn deduplication_marker(id: &MessageDeduplicationId, expires_at: i64) -> (Key, Item) {
    let key = keys::message_deduplication(id);
    let mut item = key_attributes(&key);
    item.insert(keys::ITEM_TYPE.into(), s("idempotency"));
    item.insert(EXPIRES_AT.into(), AttributeValue::N(expires_at.to_string()));
    (key, item)
}

/// An `Idempotency-Key` claim in flight (BEHAVIOR 10): the fingerprint, the lease (id and end,
/// epoch milliseconds) and the expiry (epoch seconds, DynamoDB's TTL attribute).
pub fn request_claim(claim: &IdempotencyClaim) -> (Key, Item) {
    let key = keys::idempotent_request(claim.account_id, &claim.route, claim.key.as_str());
    let mut item = key_attributes(&key);
    item.insert(keys::ITEM_TYPE.into(), s("idempotent_request"));
    item.insert("account_id".into(), s(claim.account_id.to_string()));
    item.insert("route".into(), s(&claim.route));
    item.insert(REQUEST_FINGERPRINT.into(), s(claim.fingerprint.as_str()));
    item.insert(REQUEST_LEASE_ID.into(), s(&claim.lease_id));
    item.insert(
        REQUEST_LEASE_UNTIL.into(),
        AttributeValue::N(claim.lease_until().timestamp_millis().to_string()),
    );
    item.insert(
        EXPIRES_AT.into(),
        AttributeValue::N(claim.expires_at().timestamp().to_string()),
    );
    item.insert(REQUEST_STATE.into(), s(IN_FLIGHT));
    (key, item)
}

/// The claim of `completion` with its response stored (the key stays until its expiry).
pub fn request_completed(completion: &IdempotencyCompletion) -> (Key, Item) {
    let (key, mut item) = request_claim(&completion.claim);
    item.insert(REQUEST_STATE.into(), s(COMPLETED));
    item.insert(
        REQUEST_STATUS.into(),
        n(u64::from(completion.response.status)),
    );
    item.insert(REQUEST_BODY.into(), s(&completion.response.body));
    (key, item)
}

impl crate::store::size::StoredItem for IdempotencyCompletion {
    /// The stored answer of an `Idempotency-Key` request (BEHAVIOR 10 and 12).
    fn stored_item(&self) -> StoreResult<Item> {
        Ok(request_completed(self).1)
    }
}

/// The condition of claiming a key at `now`: no claim, an expired one (TTL deletes lazily), or
/// an in-flight one whose lease lapsed.
pub fn claimable(now: DateTime<Utc>) -> Expr {
    Expr::new("attribute_not_exists(#pk) OR #expires <= :now_s OR (#state = :in_flight AND #lease_until <= :now_ms)")
        .name("#pk", keys::PK)
        .name("#expires", EXPIRES_AT)
        .name("#state", REQUEST_STATE)
        .name("#lease_until", REQUEST_LEASE_UNTIL)
        .value(":now_s", AttributeValue::N(now.timestamp().to_string()))
        .value(":in_flight", s(IN_FLIGHT))
        .value(":now_ms", AttributeValue::N(now.timestamp_millis().to_string()))
}

/// The condition that `claim` still holds its key: its lease id, still in flight.
pub fn lease_held(claim: &IdempotencyClaim) -> Expr {
    Expr::new("#lease = :lease AND #state = :in_flight")
        .name("#lease", REQUEST_LEASE_ID)
        .name("#state", REQUEST_STATE)
        .value(":lease", s(&claim.lease_id))
        .value(":in_flight", s(IN_FLIGHT))
}

/// What a stored claim says at `now`: `None` when it no longer counts (expired, or in flight
/// with a lapsed lease).
///
/// Errors: [`StoreError::Backend`] for a malformed item.
pub fn read_request(item: &Item, now: DateTime<Utc>) -> StoreResult<Option<ClaimOutcome>> {
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v.clone()),
        _ => Err(StoreError::Backend(
            format!("idempotent request item without {name}").into(),
        )),
    };
    let number = |name: &str| match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse::<i64>().map_err(|e| StoreError::Backend(e.into())),
        _ => Err(StoreError::Backend(
            format!("idempotent request item without {name}").into(),
        )),
    };
    if number(EXPIRES_AT)? <= now.timestamp() {
        return Ok(None);
    }
    let fingerprint = Fingerprint::from_stored(text(REQUEST_FINGERPRINT)?);
    if text(REQUEST_STATE)? == COMPLETED {
        let status =
            u16::try_from(number(REQUEST_STATUS)?).map_err(|e| StoreError::Backend(e.into()))?;
        return Ok(Some(ClaimOutcome::Completed {
            fingerprint,
            response: StoredResponse {
                status,
                body: text(REQUEST_BODY)?,
            },
        }));
    }
    if number(REQUEST_LEASE_UNTIL)? <= now.timestamp_millis() {
        return Ok(None);
    }
    Ok(Some(ClaimOutcome::InFlight { fingerprint }))
}
