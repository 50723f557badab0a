//! The DynamoDB adapter's `Idempotency-Key` claims and answers ([`IdempotencyStore`],
//! BEHAVIOR 10).

use super::cancel::Part;
use super::items;
use super::items::{s, Expr};
use super::{store_rounds, DynamoStore};
use crate::idempotency::{ClaimOutcome, IdempotencyClaim, IdempotencyCompletion};
use crate::store::{Backoff, IdempotencyStore, StoreError, StoreResult};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::TransactWriteItem;

impl DynamoStore {
    /// Appends to a transaction the answer of an `Idempotency-Key` request (BEHAVIOR 10),
    /// stored on the claim's lease ([`Part::Lease`]), when the write has one: how a create, a
    /// dispatch, a publish or a restore stores its answer in the same write as its effect.
    pub(super) fn completion_write(
        &self, completion: Option<&IdempotencyCompletion>, tx: &mut Vec<TransactWriteItem>,
        parts: &mut Vec<Part>,
    ) -> StoreResult<()> {
        if let Some(c) = completion {
            let (_, stored) = items::idempotency::request_completed(c);
            tx.push(self.put(stored, Some(items::idempotency::lease_held(&c.claim)))?);
            parts.push(Part::Lease);
        }
        Ok(())
    }
}

#[async_trait]
impl IdempotencyStore for DynamoStore {
    async fn claim_idempotency_key(&self, claim: &IdempotencyClaim) -> StoreResult<ClaimOutcome> {
        let now = claim.claimed_at;
        let (key, item) = items::idempotency::request_claim(claim);
        // A claim lost to a key that then expires or is released between the two requests is
        // tried again until the retry deadline; anything else answers on the first round.
        let (key, item) = (&key, &item);
        store_rounds(Backoff::until(self.conflict_deadline), |_| {
            Box::pin(async move {
                match self
                    .put_conditional(item.clone(), items::idempotency::claimable(now))
                    .await
                {
                    Ok(()) => return Ok(ClaimOutcome::Claimed),
                    Err(StoreError::Conflict) => {}
                    Err(e) => return Err(e.into()),
                }
                if let Some(held) = self.get(key).await? {
                    if let Some(outcome) = items::idempotency::read_request(&held, now)? {
                        return Ok(outcome);
                    }
                }
                Err(StoreError::Conflict.into())
            })
        })
        .await
    }

    async fn complete_idempotency_key(
        &self, completion: &IdempotencyCompletion,
    ) -> StoreResult<()> {
        let (_, item) = items::idempotency::request_completed(completion);
        match self
            .put_conditional(item, items::idempotency::lease_held(&completion.claim))
            .await
        {
            Err(StoreError::Conflict) => Err(StoreError::LeaseLost),
            other => other,
        }
    }

    async fn amend_idempotency_response(
        &self, completion: &IdempotencyCompletion,
    ) -> StoreResult<()> {
        let (_, item) = items::idempotency::request_completed(completion);
        let condition = Expr::new("#lease = :lease AND #state = :completed")
            .name("#lease", items::idempotency::REQUEST_LEASE_ID)
            .name("#state", items::idempotency::REQUEST_STATE)
            .value(":lease", s(&completion.claim.lease_id))
            .value(":completed", s("completed"));
        match self.put_conditional(item, condition).await {
            Err(StoreError::Conflict) => Err(StoreError::LeaseLost),
            other => other,
        }
    }

    async fn release_idempotency_key(&self, claim: &IdempotencyClaim) -> StoreResult<()> {
        let (key, _) = items::idempotency::request_claim(claim);
        match self
            .delete_conditional(&key, items::idempotency::lease_held(claim))
            .await
        {
            // Another request holds the key now (or a write raced this one): nothing of ours to
            // free now; a claim still ours frees itself when its lease ends.
            Err(StoreError::Conflict) => Ok(()),
            other => other,
        }
    }
}
