//! One atomic write of a router item (publish, unpublish, archive; BEHAVIOR 15) and what goes
//! with it: [`RouterWrite`], stored by [`crate::store::RouterStore::write_router`].

use super::dispatch::RotationState;
use super::router::{Router, RouterRevision};

/// What happens to a router's draft in a [`RouterWrite`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DraftChange {
    /// The draft is left as it is (unpublish, a publish without a draft).
    Keep,
    /// The draft becomes the new revision: it is removed, only while its tag is still this one
    /// (the tag the client sent in `If-Match`).
    Publish(crate::types::etag::ETag),
    /// The draft is dropped (archive), only while it is still the one read: `Some(tag)` its
    /// tag, `None` when there was none (then only while there is none). The write's calendar
    /// references were computed from it (BEHAVIOR 17).
    Drop(Option<crate::types::etag::ETag>),
}

/// One atomic write of a router item (publish, unpublish, archive; BEHAVIOR 15): the router as
/// it is to be stored, conditional on the version read, with what goes with it.
#[derive(Debug, Clone, PartialEq)]
pub struct RouterWrite {
    /// The router to store (its `version` one more than `expected_version`).
    pub router: Router,
    /// The router's version when read: the write happens only while it is still this one.
    pub expected_version: u64,
    /// The revision a publish of a draft makes (stored only if absent: revisions are immutable).
    pub revision: Option<RouterRevision>,
    /// What happens to the draft.
    pub draft: DraftChange,
    /// The rotation state to store and the version read (only when the publish changes it:
    /// BEHAVIOR 15's rotation rules).
    pub rotation: Option<(RotationState, u64)>,
    /// Whether the write archives the router (it then no longer counts against the account's
    /// router limit).
    pub archives: bool,
    /// The `Idempotency-Key` answer stored with the write (BEHAVIOR 10).
    pub completion: Option<crate::idempotency::IdempotencyCompletion>,
    /// How the write changes the references to holiday calendars (BEHAVIOR 17: the live and
    /// draft configurations of a non-archived router), applied in the same atomic write.
    pub calendars: super::holiday_calendar::CalendarRefs,
    /// The audit event of the write (BEHAVIOR 18), stored in the same atomic write.
    pub audit: Option<super::audit::AuditEvent>,
}
