//! The holiday calendars' port (BEHAVIOR 17).

use crate::model::audit::AuditEvent;
use crate::model::holiday_calendar::{CalendarDeletion, HolidayCalendar};
#[cfg(doc)]
use crate::store::StoreError;
use crate::store::{Page, PageRequest, StoreResult};
use crate::types::ids::{AccountId, HolidayCalendarId};
use async_trait::async_trait;

/// Holiday calendars (at most a number per account, counted in the same write), each with the
/// number of members, routers and drafts that name it.
#[async_trait]
pub trait CalendarStore: Send + Sync + 'static {
    /// Creates a holiday calendar (BEHAVIOR 17) when its account has fewer than `max`: the
    /// account's count goes up, and `audit` (the audit event, BEHAVIOR 18) is stored, in the same
    /// atomic write. The calendar starts with no references.
    ///
    /// Errors: [`StoreError::Rejected`] when the account has `max` already;
    /// [`StoreError::Conflict`] when the id exists. Nothing is written then.
    async fn create_holiday_calendar(
        &self, calendar: &HolidayCalendar, max: u64, audit: Option<&AuditEvent>,
    ) -> StoreResult<()>;

    /// A page of the account's holiday calendars, oldest first (position: the id, UUID v7).
    /// Strongly consistent: dispatch reads them with the pool, so a calendar written a moment
    /// ago counts at the next dispatch.
    async fn list_holiday_calendars(
        &self, account_id: AccountId, page: &PageRequest,
    ) -> StoreResult<Page<HolidayCalendar>>;

    /// A holiday calendar of the account by id.
    async fn get_holiday_calendar(
        &self, account_id: AccountId, id: HolidayCalendarId,
    ) -> StoreResult<Option<HolidayCalendar>>;

    /// The account's holiday calendars among `ids`, each once, in no particular order; an id
    /// that names no calendar of the account is left out. Strongly consistent, like
    /// [`Self::list_holiday_calendars`]: dispatch, explain and the what-if replay read the
    /// calendars their router and members name through this, so a calendar written a moment
    /// ago counts at the next dispatch (BEHAVIOR 17). No ids: no request. DynamoDB: consistent
    /// `BatchGetItem`s of up to 100 keys (an account has at most 20 calendars: one request).
    async fn get_holiday_calendars(
        &self, account_id: AccountId, ids: &[HolidayCalendarId],
    ) -> StoreResult<Vec<HolidayCalendar>>;

    /// Replaces a holiday calendar stored at `expected_version` (its references are kept), with
    /// `audit` (BEHAVIOR 18) in the same atomic write.
    ///
    /// Errors: [`StoreError::Conflict`] when it changed or is gone (nothing written).
    async fn update_holiday_calendar(
        &self, calendar: &HolidayCalendar, expected_version: u64, audit: Option<&AuditEvent>,
    ) -> StoreResult<()>;

    /// Deletes a holiday calendar stored at `expected_version` that nothing names (its reference
    /// count is 0: BEHAVIOR 17's 409 otherwise) and lowers the account's count, with `audit`
    /// (BEHAVIOR 18), in one atomic write.
    ///
    /// Errors: [`StoreError::Conflict`] when it exists at another version, or the write kept
    /// meeting concurrent writes until the store's deadline (nothing written).
    async fn delete_holiday_calendar(
        &self, account_id: AccountId, id: HolidayCalendarId, expected_version: u64,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<CalendarDeletion>;
}
