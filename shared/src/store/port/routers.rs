//! The routers' port (BEHAVIOR 15): the live router item, its draft and its published revisions.

use crate::idempotency::IdempotencyCompletion;
use crate::model::audit::AuditEvent;
use crate::model::holiday_calendar::CalendarRefs;
use crate::model::router::{Router, RouterDraft, RouterRevision};
use crate::model::router_write::RouterWrite;
#[cfg(doc)]
use crate::store::{revision_position, StoreError};
use crate::store::{Page, PageRequest, StoreResult};
use crate::types::etag::ETag;
use crate::types::ids::{AccountId, RouterId};
use async_trait::async_trait;

/// Routers: the live item (its published revision's configuration), the draft and the numbered
/// revisions, created, published, unpublished and archived each in one atomic write.
#[async_trait]
pub trait RouterStore: Send + Sync + 'static {
    /// A page of the routers of the account, by creation time then id (position:
    /// [`crate::store::time_then_id`]).
    async fn list_routers(
        &self, account_id: AccountId, page: &PageRequest,
    ) -> StoreResult<Page<Router>>;

    /// A router by id, archived or not.
    async fn get_router(
        &self, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<Router>>;

    /// A router by id in any account (router ids are unique across the store); the queue path
    /// resolves a message's account through it.
    async fn find_router(&self, router_id: RouterId) -> StoreResult<Option<Router>>;

    /// Creates `router` (BEHAVIOR 15: `POST /routers`) with its first revision `revision`, when
    /// the account has fewer than `max` non-archived routers, and stores `completion` (the
    /// `Idempotency-Key` answer) and `audit` (BEHAVIOR 18: the change's audit event) in the same
    /// atomic write. The account's count of non-archived routers (provisioned ones included) goes
    /// up in it.
    ///
    /// Errors: [`StoreError::Rejected`] when the account has `max` already;
    /// [`StoreError::Conflict`] when the id exists; [`StoreError::LeaseLost`] when the
    /// completion's lease is gone. Nothing is written then.
    async fn create_router(
        &self, router: &Router, revision: &RouterRevision, max: u64,
        completion: Option<&IdempotencyCompletion>, audit: Option<&AuditEvent>,
    ) -> StoreResult<()>;

    /// A router's draft, if it has one (only the router's account sees it).
    async fn get_router_draft(
        &self, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<RouterDraft>>;

    /// Stores `draft` as its router's draft, replacing the draft tagged `replaces` (`None`: only
    /// when the router has no draft), only while the router item is at `router_version` (not
    /// published, unpublished or archived since it was read); `completion` in the same atomic
    /// write (a restore's `Idempotency-Key` answer), and `calendars`, the change of the
    /// references to holiday calendars (BEHAVIOR 17: the replaced draft's calendar gives its
    /// reference back, the new draft's takes one), and `audit` (BEHAVIOR 18).
    ///
    /// Errors: [`StoreError::Conflict`] when the draft or the router changed;
    /// [`StoreError::UnknownHolidayCalendar`] when a calendar gaining a reference is gone;
    /// [`StoreError::LeaseLost`] when the completion's lease is gone. Nothing is written then.
    async fn put_router_draft(
        &self, draft: &RouterDraft, replaces: Option<&ETag>, router_version: u64,
        calendars: &CalendarRefs, completion: Option<&IdempotencyCompletion>,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<()>;

    /// Deletes a router's draft while its tag is `etag`, with `calendars` (the draft's
    /// calendar reference given back; BEHAVIOR 17) and `audit` (BEHAVIOR 18) in the same atomic
    /// write.
    ///
    /// Errors: [`StoreError::Conflict`] when there is no draft or it has another tag (or an
    /// event has the audit event's id).
    async fn delete_router_draft(
        &self, account_id: AccountId, router_id: RouterId, etag: &ETag, calendars: &CalendarRefs,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<()>;

    /// Revision `revision` of a router (only the router's account sees it).
    async fn get_router_revision(
        &self, account_id: AccountId, router_id: RouterId, revision: u64,
    ) -> StoreResult<Option<RouterRevision>>;

    /// Stores `revision`, a router's first revision, when the router has none: the mending of
    /// a router stored before revisions existed (it reads as revision 1 but has no revision
    /// item; docs/dynamodb.md, "Data written by earlier releases"). One write conditional on
    /// the revision's absence. Returns whether it wrote it (`false`: it was there already).
    async fn put_first_revision(&self, revision: &RouterRevision) -> StoreResult<bool>;

    /// A page of a router's revisions, newest first (position: [`revision_position`]; a page
    /// after a position holds the revisions older than it). A page reads at most `limit` + 1
    /// items after a position (an offset's skipped items are read too: the service turns an
    /// offset into a position, revisions being numbered without gaps).
    async fn list_router_revisions(
        &self, account_id: AccountId, router_id: RouterId, page: &PageRequest,
    ) -> StoreResult<Page<RouterRevision>>;

    /// Writes a router item (publish, unpublish, archive: [`RouterWrite`]) in one atomic
    /// write: the router conditional on its version, the new revision (if absent, and, past
    /// revision 1, only while the revision before it is stored: a router stored before revisions
    /// existed has no revision-1 item, and its first publish fails until it is mended), the draft's
    /// removal (a publish's conditional on its tag), the rotation state (conditional on its
    /// version), the account's router count (archive), the holiday calendars' references
    /// (BEHAVIOR 17), the `Idempotency-Key` answer and the audit event (BEHAVIOR 18).
    ///
    /// Errors: [`StoreError::Conflict`] when the router, the draft or the rotation state changed
    /// (or the revision exists, or the one before it does not); [`StoreError::UnknownHolidayCalendar`] when a calendar gaining
    /// a reference is gone; [`StoreError::LeaseLost`] when the completion's lease is gone.
    /// Nothing is written then.
    async fn write_router(&self, write: &RouterWrite) -> StoreResult<()>;
}
