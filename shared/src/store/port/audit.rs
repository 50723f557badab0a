//! The audit port (BEHAVIOR 18): the change log's reads, and the one write of an event that
//! goes with no change. Every other event is written by the write it records (the routers',
//! members', calendars' and webhooks' ports take it as their `audit` argument), in the same
//! atomic write, so an event never exists without its change nor a change without its event.

use crate::idempotency::IdempotencyCompletion;
use crate::model::audit::{AuditEvent, AuditFilter};
#[cfg(doc)]
use crate::store::StoreError;
use crate::store::{Page, PageRequest, StoreResult};
use crate::types::ids::AccountId;
use async_trait::async_trait;
use uuid::Uuid;

/// The account's audit events: listed newest first, by account or by target, in a window.
#[async_trait]
pub trait AuditStore: Send + Sync + 'static {
    /// A page of the account's events within `filter`, newest first (`at`, then id; position:
    /// [`crate::store::audit_position`]; a page after a position holds the events older than
    /// it). Expired events may still be listed (DynamoDB's TTL deletes them late): the service
    /// leaves them out. DynamoDB: one `Query` of the account's partition, or of the target's on
    /// GSI1, with the window as a key condition (no filter expression).
    async fn list_audit_events(
        &self, account_id: AccountId, filter: &AuditFilter, page: &PageRequest,
    ) -> StoreResult<Page<AuditEvent>>;

    /// The account's event `id` (DynamoDB: one `GetItem`, the key computed from the time the
    /// id carries).
    async fn get_audit_event(
        &self, account_id: AccountId, id: Uuid,
    ) -> StoreResult<Option<AuditEvent>>;

    /// Appends `event` alone (a router action that succeeded without changing anything, e.g. a
    /// publish of a published router without a draft: BEHAVIOR 18 still records it), with
    /// `completion` (the `Idempotency-Key` answer) in the same atomic write.
    ///
    /// Errors: [`StoreError::Conflict`] when an event with its id exists;
    /// [`StoreError::LeaseLost`] when the completion's lease is gone. Nothing is written then.
    async fn append_audit_event(
        &self, event: &AuditEvent, completion: Option<&IdempotencyCompletion>,
    ) -> StoreResult<()>;
}
