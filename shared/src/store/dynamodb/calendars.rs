//! The DynamoDB adapter's holiday calendars ([`CalendarStore`], BEHAVIOR 17), their reference
//! counts and the account's calendar count.

use super::cancel::{Part, Precedence};
use super::items;
use super::items::{from_item, n, Expr};
use super::query::{Query, SortCondition};
use super::request::parse_items;
use super::DynamoStore;
use crate::model::audit::AuditEvent;
use crate::model::holiday_calendar::{CalendarDeletion, CalendarRefs, HolidayCalendar};
use crate::store::dynamodb::keys;
use crate::store::dynamodb::keys::Key;
use crate::store::{
    holiday_calendar_page, CalendarStore, Page, PageRequest, StoreError, StoreResult,
};
use crate::types::ids::{AccountId, HolidayCalendarId};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};

impl DynamoStore {
    /// Appends to a transaction the `ADD` of each change of `refs` to its holiday calendar's
    /// references, each conditional on the calendar existing: a gain as [`Part::Calendar`]
    /// (BEHAVIOR 17: a write cannot name a deleted calendar), a loss as
    /// [`Part::CalendarRelease`] (a calendar that is gone has nothing to release: the write
    /// goes on without it, as the embedded store does). Every write that moves a reference (a
    /// member, a router, a draft, provisioning) adds them through here.
    pub(super) fn calendar_ref_writes(
        &self, account_id: AccountId, refs: &CalendarRefs, tx: &mut Vec<TransactWriteItem>,
        parts: &mut Vec<Part>,
    ) -> StoreResult<()> {
        for (id, delta) in refs.changes() {
            let e = Expr::new("ADD #references :delta")
                .name("#references", items::REFERENCES)
                .name("#pk", keys::PK)
                .value(":delta", AttributeValue::N(delta.to_string()));
            tx.push(self.update_item(
                &keys::holiday_calendar(account_id, id),
                &e,
                Some("attribute_exists(#pk)".into()),
            )?);
            parts.push(if delta > 0 {
                Part::Calendar
            } else {
                Part::CalendarRelease
            });
        }
        Ok(())
    }
}

/// The reference count a calendar item holds (0 when absent).
fn references(item: &items::Item) -> i64 {
    match item.get(items::REFERENCES) {
        Some(AttributeValue::N(v)) => v.parse().unwrap_or(0),
        _ => 0,
    }
}

#[async_trait]
impl CalendarStore for DynamoStore {
    async fn create_holiday_calendar(
        &self, calendar: &HolidayCalendar, max: u64, audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let (_, item) = items::holiday_calendar(calendar)?;
        let count = keys::holiday_calendar_count(calendar.account_id);
        let mut tx = vec![
            self.count_update(&count, 1, Some(max))?,
            self.put(item, Some(items::absent()))?,
        ];
        let mut parts = vec![Part::Quota, Part::Other];
        self.audit_write(audit, &mut tx, &mut parts)?;
        self.transact_under_limit(tx, &parts, &count, max, "holiday calendars")
            .await
    }

    async fn list_holiday_calendars(
        &self, account_id: AccountId, page: &PageRequest,
    ) -> StoreResult<Page<HolidayCalendar>> {
        // All of them (at most 20, one page), ordered and paged in memory by creation time.
        let mut q = Query::table(keys::account(account_id).pk);
        q.sk = SortCondition::Prefix(keys::HOLIDAY_CALENDAR_PREFIX.to_string());
        let all = parse_items::<HolidayCalendar>(self.query_all(&q).await?)?;
        Ok(holiday_calendar_page(all, page))
    }

    async fn get_holiday_calendar(
        &self, account_id: AccountId, id: HolidayCalendarId,
    ) -> StoreResult<Option<HolidayCalendar>> {
        self.get_as(&keys::holiday_calendar(account_id, id)).await
    }

    async fn get_holiday_calendars(
        &self, account_id: AccountId, ids: &[HolidayCalendarId],
    ) -> StoreResult<Vec<HolidayCalendar>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<Key> = ids
            .iter()
            .map(|id| keys::holiday_calendar(account_id, *id))
            .collect();
        // Keyed by account: a calendar of another account has another key and is not found.
        let found = self.batch_get_projected(&keys, false).await?;
        found.into_values().map(from_item).collect()
    }

    async fn update_holiday_calendar(
        &self, calendar: &HolidayCalendar, expected_version: u64, audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let key = keys::holiday_calendar(calendar.account_id, calendar.id);
        let update = items::holiday_calendar_update(calendar)?;
        let mut tx = vec![self.update_at_version(&key, update, expected_version)?];
        let mut parts = vec![Part::Record];
        self.audit_write(audit, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn delete_holiday_calendar(
        &self, account_id: AccountId, id: HolidayCalendarId, expected_version: u64,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<CalendarDeletion> {
        let unused = Expr::new(
            "attribute_exists(#pk) AND #version = :version AND (attribute_not_exists(#references) OR #references <= :zero)",
        )
        .name("#pk", keys::PK)
        .name("#version", "version")
        .name("#references", items::REFERENCES)
        .value(":version", n(expected_version))
        .value(":zero", n(0));
        let mut tx = vec![
            self.delete(&keys::holiday_calendar(account_id, id), unused)?,
            self.count_update(&keys::holiday_calendar_count(account_id), -1, None)?,
        ];
        let mut parts = vec![Part::Record, Part::Other];
        self.audit_write(audit, &mut tx, &mut parts)?;
        match self.transact(tx, &parts, Precedence::RecordFirst).await {
            Ok(()) => Ok(CalendarDeletion::Deleted),
            // Which condition failed: the calendar is gone, something names it, or it changed;
            // or none (it kept meeting other transactions until the deadline: nothing written).
            Err(StoreError::Conflict) => {
                match self.get(&keys::holiday_calendar(account_id, id)).await? {
                    None => Ok(CalendarDeletion::NotFound),
                    Some(item) if references(&item) > 0 => Ok(CalendarDeletion::InUse),
                    Some(_) => Err(StoreError::Conflict),
                }
            }
            Err(e) => Err(e),
        }
    }
}
