//! One HTTP request under `Idempotency-Key` (BEHAVIOR 10), around the handler's work:
//! [`IdempotentRequests::begin`] after authentication and scope,
//! [`IdempotentRequests::finish`] with the handler's answer.
//!
//! 1. No header: the request runs as always.
//! 2. The header is parsed ([`IdempotencyKey::parse`]: 400 naming `Idempotency-Key`), the body
//!    fingerprinted, and the key claimed in the store for (account, route).
//! 3. Claimed: the request runs, holding the claim. An answer with an effect stores itself with
//!    the effect (the service passes the claim to the store write); `finish` stores any other
//!    non-5xx answer alone, and releases the key on a 5xx (not stored: a retry may succeed).
//! 4. Completed with the same fingerprint: the stored status and body again, with
//!    `Idempotent-Replayed: true`; nothing runs.
//! 5. Another fingerprint (completed or in flight): 422 `Idempotency-Key was used with a
//!    different request`. The same one in flight: 409 `A request with this Idempotency-Key is
//!    being processed`. Neither is stored.

use super::error::ApiError;
use crate::clock::Clock;
use crate::error::DomainError;
use crate::idempotency::{
    ClaimOutcome, Fingerprint, IdempotencyClaim, IdempotencyCompletion, IdempotencyKey,
    StoredResponse, HEADER, KEY_IN_FLIGHT, KEY_REUSED, REPLAYED_HEADER,
};
use crate::store::{IdempotencyStore, StoreError};
use crate::types::ids::AccountId;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::sync::Arc;

/// What [`IdempotentRequests::begin`] decided.
#[derive(Debug)]
pub enum Begin {
    /// Run the request, holding this claim (`None`: no `Idempotency-Key` was sent).
    Run(Option<IdempotencyClaim>),
    /// Answer this replay without running anything.
    Replay(Response),
}

/// The `Idempotency-Key` handling of the routes that accept it: the store that keeps the keys
/// and the clock that dates the claims (`IdempotentRequests::new(store, clock)`). Built once per
/// cold start, shared by the handlers.
#[derive(derive_more::Constructor)]
pub struct IdempotentRequests {
    store: Arc<dyn IdempotencyStore>,
    clock: Arc<dyn Clock>,
}

impl IdempotentRequests {
    /// Starts a request of `route` (e.g. `POST /contacts`) for `account_id`, after its
    /// authentication and scope checks.
    ///
    /// Errors: 400 `Invalid Idempotency-Key` (also for the header sent twice); 422 key reused
    /// with another body; 409 key in flight; 500 store failure (nothing claimed).
    pub async fn begin(
        &self, account_id: AccountId, route: &str, headers: &HeaderMap, body: &[u8],
    ) -> Result<Begin, ApiError> {
        let mut values = headers.get_all(HEADER).iter();
        let Some(raw) = values.next() else {
            return Ok(Begin::Run(None));
        };
        if values.next().is_some() {
            return Err(DomainError::bad_field(HEADER, crate::idempotency::INVALID_KEY).into());
        }
        let key = IdempotencyKey::parse(raw.as_bytes())?;
        let fingerprint = Fingerprint::of_body(body);
        let claim = IdempotencyClaim::new(account_id, route, key, fingerprint, self.clock.now());
        match self
            .store
            .claim_idempotency_key(&claim)
            .await
            .map_err(|e| match e {
                // The key kept changing hands until the retry deadline: others hold it.
                StoreError::Conflict => DomainError::conflict(KEY_IN_FLIGHT),
                e => DomainError::from(e),
            })? {
            ClaimOutcome::Claimed => Ok(Begin::Run(Some(claim))),
            ClaimOutcome::Completed {
                fingerprint,
                response,
            } if fingerprint == claim.fingerprint => {
                crate::telemetry::idempotent_replay();
                Ok(Begin::Replay(replay(&response)))
            }
            ClaimOutcome::Completed { .. } => Err(reused()),
            ClaimOutcome::InFlight { fingerprint } if fingerprint != claim.fingerprint => {
                Err(reused())
            }
            ClaimOutcome::InFlight { .. } => Err(DomainError::conflict(KEY_IN_FLIGHT).into()),
        }
    }

    /// Runs `work` under the request's `Idempotency-Key` (BEHAVIOR 10), the whole sequence of a
    /// route that accepts one: [`Self::begin`] (a replay answers the stored answer before
    /// anything else runs, any `If-Match` check included), `work` with the claim (`None` without
    /// a key), then [`Self::finish`] with its answer.
    ///
    /// Errors: [`Self::begin`]'s; `work`'s own error is an answer (stored or released by
    /// [`Self::finish`]), not an error of this.
    pub async fn run<T, F, Fut>(
        &self, account_id: AccountId, route: &str, headers: &HeaderMap, body: &[u8], work: F,
    ) -> Result<Response, ApiError>
    where
        T: Serialize,
        F: FnOnce(Option<IdempotencyClaim>) -> Fut,
        Fut: std::future::Future<Output = Result<HandlerAnswer<T>, ApiError>>,
    {
        let claim = match self.begin(account_id, route, headers, body).await? {
            Begin::Replay(answer) => return Ok(answer),
            Begin::Run(claim) => claim,
        };
        let result = work(claim.clone()).await;
        Ok(self.finish(claim, result).await)
    }

    /// Ends a request begun with `claim`: stores an answer that is not yet stored (any status
    /// below 500), releases the key on a 5xx, and answers. Storing is best effort once the work
    /// is done: a failure is logged and the answer still sent (the key then stays in flight
    /// until its lease ends, and a retry after it runs again, as without a key).
    pub async fn finish<T: Serialize>(
        &self, claim: Option<IdempotencyClaim>, result: Result<HandlerAnswer<T>, ApiError>,
    ) -> Response {
        let Some(claim) = claim else {
            return match result {
                Ok(a) => (a.status, super::Json(a.body)).into_response(),
                Err(e) => e.into_response(),
            };
        };
        match result {
            Ok(a) if a.stored_with_effect => (a.status, super::Json(a.body)).into_response(),
            Ok(a) => match StoredResponse::json(a.status.as_u16(), &a.body) {
                Ok(response) => {
                    self.store_alone(claim, response.clone()).await;
                    json_text(a.status, response.body)
                }
                Err(e) => {
                    self.release(&claim).await;
                    ApiError::from(e).into_response()
                }
            },
            Err(e) if e.status().is_server_error() => {
                self.release(&claim).await;
                e.into_response()
            }
            Err(e) => {
                if let Ok(response) = StoredResponse::json(e.status().as_u16(), &e.body()) {
                    self.store_alone(claim, response).await;
                }
                e.into_response()
            }
        }
    }

    /// Stores an answer that has no effect to go with. One that the size rule refuses
    /// (BEHAVIOR 12; none of the routes' answers can be, their bodies being bounded) releases
    /// the key instead, as a 5xx does, on both stores.
    async fn store_alone(&self, claim: IdempotencyClaim, response: StoredResponse) {
        let completion = IdempotencyCompletion { claim, response };
        if let Err(e) = crate::store::size::check_write(&completion) {
            tracing::warn!(error = %e, "Idempotency-Key answer too large to store; key released");
            self.release(&completion.claim).await;
            return;
        }
        match self.store.complete_idempotency_key(&completion).await {
            Ok(()) | Err(StoreError::LeaseLost) => {}
            Err(e) => tracing::warn!(
                error = %crate::error::ErrorChain(&e),
                "Idempotency-Key response not stored"
            ),
        }
    }

    async fn release(&self, claim: &IdempotencyClaim) {
        if let Err(e) = self.store.release_idempotency_key(claim).await {
            tracing::warn!(error = %crate::error::ErrorChain(&e), "Idempotency-Key not released");
        }
    }
}

fn reused() -> ApiError {
    DomainError::Unprocessable {
        message: KEY_REUSED.into(),
        field: None,
    }
    .into()
}

/// The stored answer again, marked `Idempotent-Replayed: true`.
fn replay(stored: &StoredResponse) -> Response {
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    let mut response = (status, stored.body.clone()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    response
}

/// A handler's answer: its status, its body, and whether the body was already stored with the
/// request's effect ([`crate::records::RecordService::create_completing`],
/// [`crate::dispatch::DispatchEngine::dispatch_completing`]).
#[derive(Debug)]
pub struct HandlerAnswer<T> {
    /// The status.
    pub status: StatusCode,
    /// The body.
    pub body: T,
    /// `true` when the effect's write stored the answer.
    pub stored_with_effect: bool,
}

fn json_text(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
