//! The audit trail (BEHAVIOR 18): who changed the routing configuration, and what.
//!
//! - [`diff`]: the one diff of a resource's shape before and after a write, which every write
//!   that records an event uses for its `changes`;
//! - [`Actor`]: who asks (the token's account and client), and the event of what they did;
//! - [`AuditService`]: `GET /audit-events` and `GET /audit-events/{id}`.
//!
//! The events themselves are stored by the writes they record, in the same atomic write
//! ([`crate::store::AuditStore`]); decision snapshots (the other half of BEHAVIOR 18) are made
//! by the dispatch engine ([`crate::dispatch`]) and read with the history
//! ([`crate::history`]).

pub mod diff;
pub mod service;

pub use diff::Shape;
pub use service::{AuditEventView, AuditQuery, AuditService, AUDIT_EVENT_NOT_FOUND};

use crate::model::audit::{AuditAction, AuditActor, AuditChange, AuditEvent, AuditTarget};
use crate::types::ids::AccountId;
use chrono::{DateTime, Utc};

/// Who asks: the token's account and its `sub` (the API client id; written as
/// `published_by`, `updated_by`, `archived_by`, and as an event's actor).
#[derive(Debug, Clone, Copy)]
pub struct Actor<'a> {
    /// The token's account.
    pub account_id: AccountId,
    /// The token's `sub` (the API client id).
    pub sub: &'a str,
}

impl Actor<'_> {
    /// The event of `action` on `target` with `changes`, at `now` (BEHAVIOR 18).
    pub fn event(
        &self, action: AuditAction, target: AuditTarget, changes: Vec<AuditChange>,
        now: DateTime<Utc>,
    ) -> AuditEvent {
        AuditEvent::new(
            self.account_id,
            AuditActor {
                client_id: self.sub.to_string(),
                sub: self.sub.to_string(),
            },
            action,
            target,
            changes,
            now,
        )
    }
}
