//! What a store call answers when it fails ([`StoreError`]), and how the domain sees it.

use crate::error::{BoxError, DomainError};

/// Result of a store call.
pub type StoreResult<T> = Result<T, StoreError>;

/// Why a store call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An active record of the same account and type already holds this unique key.
    #[error("duplicate value for unique key {field}")]
    Duplicate {
        /// The first colliding key, in the order the keys were given.
        field: String,
    },
    /// The item changed (or was archived) since it was read: the conditional write failed.
    #[error("the item changed concurrently")]
    Conflict,
    /// The idempotency key of the write was already used: the work was done before.
    #[error("already applied")]
    AlreadyApplied,
    /// The write completes a claim whose lease this request no longer holds: an
    /// `Idempotency-Key` claim that outlived [`crate::idempotency::LEASE`] and another request
    /// took over, or a due item ([`crate::model::due`]) whose lease lapsed and another worker
    /// claimed. Nothing is written.
    #[error("the claim's lease was lost")]
    LeaseLost,
    /// Provisioning found an item that contradicts the store (e.g. a key held by another record).
    #[error("{0}")]
    Rejected(String),
    /// The write names a holiday calendar (BEHAVIOR 17) that is not in the account (any more):
    /// nothing was written.
    #[error("no such holiday calendar")]
    UnknownHolidayCalendar,
    /// The backend kept refusing part of the work (throttled: a `BatchGetItem`'s unprocessed
    /// keys) until the request's deadline ([`crate::store::retry`]); the text says what.
    #[error("{0}")]
    Unavailable(String),
    /// The backend failed (I/O, throttling after retries, malformed item).
    #[error("store backend failure")]
    Backend(#[source] BoxError),
}

impl From<StoreError> for DomainError {
    /// Store failures the caller did not map itself are internal errors; a lost
    /// `Idempotency-Key` lease is the 409 of a key in flight.
    fn from(e: StoreError) -> Self {
        match e {
            // Another request holds the key now (BEHAVIOR 10's 409).
            StoreError::LeaseLost => DomainError::conflict(crate::idempotency::KEY_IN_FLIGHT),
            // Throttled until the request's deadline: 503, try again later.
            StoreError::Unavailable(_) => {
                DomainError::Unavailable("Service unavailable: try again later".into())
            }
            e => DomainError::internal(e),
        }
    }
}
