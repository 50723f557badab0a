//! The embedded store's `Idempotency-Key` claims and answers ([`IdempotencyStore`], BEHAVIOR 10).

use super::{IdempotentRequest, MemoryStore, RequestKey, State};
use crate::idempotency::{ClaimOutcome, IdempotencyClaim, IdempotencyCompletion};
use crate::store::{IdempotencyStore, StoreError, StoreResult};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// The identity of `claim`'s key: its account, route and key.
fn request_key(claim: &IdempotencyClaim) -> RequestKey {
    (
        claim.account_id,
        claim.route.clone(),
        claim.key.as_str().to_string(),
    )
}

impl State {
    /// Forgets the `Idempotency-Key` claims expired at `now` (amortized O(1) per claim).
    pub(super) fn purge_requests(&mut self, now: DateTime<Utc>) {
        while let Some((at, key)) = self.request_expiry.front() {
            if *at > now {
                break;
            }
            if self.requests.get(key).is_some_and(|r| r.expires_at <= now) {
                self.requests.remove(key);
            }
            self.request_expiry.pop_front();
        }
    }

    /// Whether `claim` still holds its key (its lease id is the stored one, not yet completed).
    pub(super) fn holds_lease(&self, claim: &IdempotencyClaim) -> bool {
        self.requests
            .get(&request_key(claim))
            .is_some_and(|r| r.lease_id == claim.lease_id && r.response.is_none())
    }

    /// Stores the response of a claim this request holds ([`Self::holds_lease`] checked).
    pub(super) fn complete_request(&mut self, completion: &IdempotencyCompletion) {
        if let Some(r) = self.requests.get_mut(&request_key(&completion.claim)) {
            r.response = Some(completion.response.clone());
        }
    }
}

#[async_trait]
impl IdempotencyStore for MemoryStore {
    async fn claim_idempotency_key(&self, claim: &IdempotencyClaim) -> StoreResult<ClaimOutcome> {
        let now = claim.claimed_at;
        let mut state = self.lock();
        state.purge_requests(now);
        let key = request_key(claim);
        if let Some(held) = state.requests.get(&key).filter(|r| r.expires_at > now) {
            match &held.response {
                Some(response) => {
                    return Ok(ClaimOutcome::Completed {
                        fingerprint: held.fingerprint.clone(),
                        response: response.clone(),
                    })
                }
                None if held.lease_until > now => {
                    return Ok(ClaimOutcome::InFlight {
                        fingerprint: held.fingerprint.clone(),
                    })
                }
                None => {} // the lease lapsed: the request that held it crashed
            }
        }
        let expires_at = claim.expires_at();
        state.requests.insert(
            key.clone(),
            IdempotentRequest {
                fingerprint: claim.fingerprint.clone(),
                lease_id: claim.lease_id.clone(),
                lease_until: claim.lease_until(),
                expires_at,
                response: None,
            },
        );
        state.request_expiry.push_back((expires_at, key));
        Ok(ClaimOutcome::Claimed)
    }

    async fn complete_idempotency_key(
        &self, completion: &IdempotencyCompletion,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if !state.holds_lease(&completion.claim) {
            return Err(StoreError::LeaseLost);
        }
        state.complete_request(completion);
        Ok(())
    }

    async fn amend_idempotency_response(
        &self, completion: &IdempotencyCompletion,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        match state.requests.get_mut(&request_key(&completion.claim)) {
            Some(r) if r.lease_id == completion.claim.lease_id && r.response.is_some() => {
                r.response = Some(completion.response.clone());
                Ok(())
            }
            _ => Err(StoreError::LeaseLost),
        }
    }

    async fn release_idempotency_key(&self, claim: &IdempotencyClaim) -> StoreResult<()> {
        let mut state = self.lock();
        if state.holds_lease(claim) {
            state.requests.remove(&request_key(claim));
        }
        Ok(())
    }
}
