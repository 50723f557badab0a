//! The `Idempotency-Key` port (BEHAVIOR 10): claims of a key, and the answers stored for them.

use crate::idempotency::{ClaimOutcome, IdempotencyClaim, IdempotencyCompletion};
#[cfg(doc)]
use crate::store::StoreError;
use crate::store::StoreResult;
use async_trait::async_trait;

/// `Idempotency-Key` claims: one atomic conditional write claims a key, the answer is stored on
/// its lease (alone here, or in the same write as the effect it answers for, through the other
/// aggregates' `completion` arguments).
#[async_trait]
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Claims an `Idempotency-Key` (BEHAVIOR 10): when no live claim holds the key of
    /// (account, route, key) (none, expired after [`crate::idempotency::RETENTION`], or an
    /// in-flight claim whose lease lapsed), stores `claim` in flight and answers
    /// [`ClaimOutcome::Claimed`]; otherwise answers what holds it. One atomic conditional write:
    /// of concurrent claims exactly one is `Claimed`.
    ///
    /// Errors: [`crate::store::StoreError::Conflict`] when the key kept changing hands (claimed,
    /// then freed again) until the store's retry deadline.
    async fn claim_idempotency_key(&self, claim: &IdempotencyClaim) -> StoreResult<ClaimOutcome>;

    /// Stores the response of a claim that had no effect to write (a 4xx, a dispatch that
    /// assigned nothing), conditional on the claim's lease.
    ///
    /// Errors: [`StoreError::LeaseLost`] when another request holds the key now.
    async fn complete_idempotency_key(&self, completion: &IdempotencyCompletion)
        -> StoreResult<()>;

    /// Replaces the stored response of a completed claim that this request holds (the same lease
    /// id): an assignment's answer gains what became known after its transaction (the CRM
    /// sync's outcome, BEHAVIOR 7), so a replay answers what the first request answered.
    ///
    /// Errors: [`StoreError::LeaseLost`] when the key is no longer this request's.
    async fn amend_idempotency_response(
        &self, completion: &IdempotencyCompletion,
    ) -> StoreResult<()>;

    /// Frees a claimed key (its request failed with a 5xx, which is not stored), when the
    /// claim's lease is still held; otherwise does nothing.
    async fn release_idempotency_key(&self, claim: &IdempotencyClaim) -> StoreResult<()>;
}
