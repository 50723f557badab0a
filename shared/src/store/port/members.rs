//! The members' port: the people of an account that routers assign records to.

use crate::model::audit::AuditEvent;
use crate::model::holiday_calendar::CalendarRefs;
use crate::model::member::{Member, MemberIdentity};
#[cfg(doc)]
use crate::store::StoreError;
use crate::store::{Page, PageRequest, StoreResult};
use crate::types::email::Email;
use crate::types::ids::{AccountId, MemberId};
use async_trait::async_trait;

/// The members of an account, listed by e-mail, read by id in a wave, updated with the references
/// to holiday calendars they move.
#[async_trait]
pub trait MemberStore: Send + Sync + 'static {
    /// A page of the members of the account, by e-mail then id (position:
    /// [`crate::store::email_then_id`]).
    async fn list_members(
        &self, account_id: AccountId, page: &PageRequest,
    ) -> StoreResult<Page<Member>>;

    /// A member by id, archived or not.
    async fn get_member(
        &self, account_id: AccountId, member_id: MemberId,
    ) -> StoreResult<Option<Member>>;

    /// The members of `ids` that exist in the account, archived or not, in the order of
    /// `ids` (each once), read consistently in one wave (DynamoDB: `BatchGetItem`s of up to 100
    /// keys): how dispatch and stats read a router's pool, at a cost that follows the pool, not
    /// the account (`docs/decisions.md`, "Cost that follows the router, not the account").
    async fn get_members(
        &self, account_id: AccountId, ids: &[MemberId],
    ) -> StoreResult<Vec<Member>>;

    /// A member by e-mail (case-insensitive), archived or not.
    async fn find_member_by_email(
        &self, account_id: AccountId, email: &str,
    ) -> StoreResult<Option<Member>>;

    /// Who the account's members with one of `emails` are (id, e-mail, active or not; archived
    /// members included), each once, in no particular order: what a router configuration's
    /// check needs of the members it names, read by key whatever the size of
    /// the account. DynamoDB: one item per member keyed by (account, e-mail), written with the
    /// member by provisioning, read in `BatchGetItem`s of 100 keys (501 e-mails: 6 requests),
    /// strongly consistent; a table written before those items existed (no
    /// [`crate::store::dynamodb::keys::member_emails_complete`] marker, until provisioning runs on it) has
    /// the e-mails not found that way looked up on the e-mail index, one `Query` each.
    async fn identify_members(
        &self, account_id: AccountId, emails: &[Email],
    ) -> StoreResult<Vec<MemberIdentity>>;

    /// Replaces the stored member when it is active and at `expected_version`, and applies
    /// `calendars` (the move of its `holiday_calendar_id`, BEHAVIOR 17) and `audit` (the change's
    /// audit event, BEHAVIOR 18) in the same atomic write.
    ///
    /// Errors: [`StoreError::Conflict`] when the member changed (or an event has the audit
    /// event's id);
    /// [`StoreError::UnknownHolidayCalendar`] when a calendar that gains a reference is not in
    /// the account. Nothing is written then.
    async fn update_member(
        &self, member: &Member, expected_version: u64, calendars: &CalendarRefs,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<()>;
}
