//! The embedded store's holiday calendars and their reference counts ([`CalendarStore`],
//! BEHAVIOR 17).

use super::{MemoryStore, State};
use crate::model::audit::AuditEvent;
use crate::model::holiday_calendar::{CalendarDeletion, CalendarRefs, HolidayCalendar};
use crate::store::{CalendarStore, Page, PageRequest, StoreError, StoreResult};
use crate::types::ids::{AccountId, HolidayCalendarId};
use async_trait::async_trait;

impl State {
    /// The account's holiday calendars, oldest first.
    pub(super) fn account_calendars(
        &self, account: AccountId,
    ) -> impl Iterator<Item = &HolidayCalendar> {
        self.calendars
            .range((account, HolidayCalendarId::from_uuid(uuid::Uuid::nil()))..)
            .take_while(move |((a, _), _)| *a == account)
            .map(|(_, (c, _))| c)
    }

    /// Checks that every calendar gaining a reference in `refs` is in `account`.
    pub(super) fn check_calendar_refs(
        &self, account: AccountId, refs: &CalendarRefs,
    ) -> StoreResult<()> {
        if refs
            .gaining()
            .all(|id| self.calendars.contains_key(&(account, id)))
        {
            Ok(())
        } else {
            Err(StoreError::UnknownHolidayCalendar)
        }
    }

    /// Applies `refs` ([`Self::check_calendar_refs`] checked).
    pub(super) fn apply_calendar_refs(&mut self, account: AccountId, refs: &CalendarRefs) {
        for (id, delta) in refs.changes() {
            if let Some((_, count)) = self.calendars.get_mut(&(account, id)) {
                *count += delta;
            }
        }
    }
}

#[async_trait]
impl CalendarStore for MemoryStore {
    async fn create_holiday_calendar(
        &self, calendar: &HolidayCalendar, max: u64, audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        let account = calendar.account_id;
        if state.account_calendars(account).count() as u64 >= max {
            return Err(StoreError::Rejected(format!(
                "the account has {max} holiday calendars already"
            )));
        }
        if state.calendars.contains_key(&(account, calendar.id)) {
            return Err(StoreError::Conflict);
        }
        state.check_audit(audit)?;
        state
            .calendars
            .insert((account, calendar.id), (calendar.clone(), 0));
        state.put_audit(audit);
        Ok(())
    }

    async fn list_holiday_calendars(
        &self, account_id: AccountId, page: &PageRequest,
    ) -> StoreResult<Page<HolidayCalendar>> {
        let all = self.lock().account_calendars(account_id).cloned().collect();
        Ok(crate::store::holiday_calendar_page(all, page))
    }

    async fn get_holiday_calendar(
        &self, account_id: AccountId, id: HolidayCalendarId,
    ) -> StoreResult<Option<HolidayCalendar>> {
        Ok(self
            .lock()
            .calendars
            .get(&(account_id, id))
            .map(|(c, _)| c.clone()))
    }

    async fn get_holiday_calendars(
        &self, account_id: AccountId, ids: &[HolidayCalendarId],
    ) -> StoreResult<Vec<HolidayCalendar>> {
        let state = self.lock();
        let mut seen = std::collections::HashSet::new();
        Ok(ids
            .iter()
            .filter(|id| seen.insert(**id))
            .filter_map(|id| state.calendars.get(&(account_id, *id)))
            .map(|(c, _)| c.clone())
            .collect())
    }

    async fn update_holiday_calendar(
        &self, calendar: &HolidayCalendar, expected_version: u64, audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        state.check_audit(audit)?;
        match state.calendars.get_mut(&(calendar.account_id, calendar.id)) {
            Some((stored, _)) if stored.version == expected_version => {
                *stored = calendar.clone();
            }
            _ => return Err(StoreError::Conflict),
        }
        state.put_audit(audit);
        Ok(())
    }

    async fn delete_holiday_calendar(
        &self, account_id: AccountId, id: HolidayCalendarId, expected_version: u64,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<CalendarDeletion> {
        let mut state = self.lock();
        Ok(match state.calendars.get(&(account_id, id)) {
            None => CalendarDeletion::NotFound,
            Some((_, references)) if *references > 0 => CalendarDeletion::InUse,
            Some((stored, _)) if stored.version != expected_version => {
                return Err(StoreError::Conflict)
            }
            Some(_) => {
                state.check_audit(audit)?;
                state.calendars.remove(&(account_id, id));
                state.put_audit(audit);
                CalendarDeletion::Deleted
            }
        })
    }
}
