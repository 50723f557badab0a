//! The list positions of the store's ordered lists (the cursor a page continues after), one
//! function per list: both adapters order by them, so a cursor means the same on either.
//!
//! The orders are text whose byte order is the list's order ([`time_then_id`],
//! [`email_then_id`], [`revision_order`]): the embedded store compares them, and the DynamoDB
//! adapter makes them its sort keys, so a position is a sort key there and a page continues
//! after it with no translation.

use crate::model::audit::AuditEvent;
use crate::model::dispatch::DispatchEntry;
use crate::model::holiday_calendar::HolidayCalendar;
use crate::model::member::Member;
use crate::model::record::Record;
use crate::model::router::{Router, RouterRevision};
use crate::model::webhook::{WebhookDelivery, WebhookSubscription};
use crate::page::{Page, PageRequest, PageStart, Position};
use crate::types::ids::MemberId;
use chrono::{DateTime, Utc};
use std::fmt::Display;

/// A fixed-width UTC time (`2026-11-22T09:30:00.000000000Z`): its text order is time order.
pub fn sortable_time(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.9fZ").to_string()
}

/// The order "by time, then id" as text (`<sortable time>#<id>`): records, routers and holiday
/// calendars by creation, history entries by dispatch time, audit events by time.
pub fn time_then_id(at: DateTime<Utc>, id: impl Display) -> String {
    format!("{}#{id}", sortable_time(at))
}

/// The order "by e-mail, then id" as text (`<email>#<id>`): members. An address that is a
/// prefix of another sorts first (`#` sorts before every character an address may hold after
/// it).
pub fn email_then_id(email: &str, id: MemberId) -> String {
    format!("{email}#{id}")
}

/// A revision number as text that sorts as the number: 20 digits, zero-padded (`u64::MAX` has
/// 20), so a router's revisions list newest first in reverse text order.
pub fn revision_order(revision: u64) -> String {
    format!("{revision:020}")
}

/// The list position of a record: creation time, then id (both adapters order by it).
pub fn record_position(record: &Record) -> Position {
    Position::new(time_then_id(record.created_at, record.id))
}

/// The list position of a member: e-mail, then id.
pub fn member_position(member: &Member) -> Position {
    Position::new(email_then_id(member.email.as_str(), member.id))
}

/// The list position of a history entry: dispatch time, then id (lists walk it newest first).
pub fn dispatch_position(entry: &DispatchEntry) -> Position {
    Position::new(time_then_id(entry.dispatched_at, entry.id))
}

/// The list position of a webhook subscription: its id (UUID v7, creation order).
pub fn webhook_position(subscription: &WebhookSubscription) -> Position {
    Position::new(subscription.id.to_string())
}

/// The list position of a delivery: its id (`msg_<uuid v7>`, creation order; lists walk it
/// newest first).
pub fn delivery_position(delivery: &WebhookDelivery) -> Position {
    Position::new(delivery.id.clone())
}

/// The list position of a holiday calendar: its id (UUID v7, creation order).
pub fn holiday_calendar_position(calendar: &HolidayCalendar) -> Position {
    Position::new(time_then_id(calendar.created_at, calendar.id))
}

/// One page of an account's holiday calendars out of `all` of them (at most 20, BEHAVIOR 17:
/// both adapters read them all in one request), oldest first: by creation time, then id, so a
/// provisioned calendar whose id is not a UUID v7 still takes its place by `created_at`.
pub fn holiday_calendar_page(
    mut all: Vec<HolidayCalendar>, page: &PageRequest,
) -> Page<HolidayCalendar> {
    all.sort_by_key(|c| (c.created_at, c.id));
    let wanted = page.limit.saturating_add(1);
    let items: Vec<HolidayCalendar> = match &page.start {
        PageStart::Offset(offset) => all.into_iter().skip(*offset).take(wanted).collect(),
        PageStart::After(after) => all
            .into_iter()
            .filter(|c| holiday_calendar_position(c).as_str() > after.as_str())
            .take(wanted)
            .collect(),
    };
    Page::from_lookahead(items, page.limit, holiday_calendar_position)
}

/// The list position of a router: creation time, then id.
pub fn router_position(router: &Router) -> Position {
    Position::new(time_then_id(router.created_at, router.id))
}

/// The list position of a router revision: its number, zero-padded to 20 digits (lists walk it
/// newest first).
pub fn revision_position(revision: &RouterRevision) -> Position {
    Position::new(revision_order(revision.revision))
}

/// The list position of an audit event (BEHAVIOR 18): its time, then id (lists walk it newest
/// first); its sort key in the account's and the target's event partitions.
pub fn audit_position(event: &AuditEvent) -> Position {
    Position::new(time_then_id(event.at, event.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use uuid::Uuid;

    fn id<T: From<Uuid>>(n: u128) -> T {
        Uuid::from_u128(n).into()
    }

    #[test]
    fn time_orders_sort_by_time_then_id() {
        let t1 = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let t2 = t1 + chrono::Duration::milliseconds(1);
        let t3 = t1 + chrono::Duration::seconds(10);
        let mut keys = [
            time_then_id(t3, id::<Uuid>(1)),
            time_then_id(t2, id::<Uuid>(1)),
            time_then_id(t1, id::<Uuid>(9)),
            time_then_id(t1, id::<Uuid>(2)),
        ];
        keys.sort();
        assert_eq!(
            keys,
            [
                time_then_id(t1, id::<Uuid>(2)),
                time_then_id(t1, id::<Uuid>(9)),
                time_then_id(t2, id::<Uuid>(1)),
                time_then_id(t3, id::<Uuid>(1)),
            ]
        );
        assert_eq!(sortable_time(t1), "2026-01-02T03:04:05.000000000Z");
    }

    #[test]
    fn member_orders_sort_by_email_even_when_one_is_a_prefix_of_another() {
        let mut keys = [
            email_then_id("a@x.com", id(1)),
            email_then_id("a@x.co", id(2)),
            email_then_id("ab@x.co", id(3)),
        ];
        keys.sort();
        assert_eq!(
            keys,
            [
                email_then_id("a@x.co", id(2)),
                email_then_id("a@x.com", id(1)),
                email_then_id("ab@x.co", id(3)),
            ]
        );
    }

    #[test]
    fn revision_orders_sort_as_their_numbers() {
        assert_eq!(revision_order(12), "00000000000000000012");
        assert!(revision_order(9) < revision_order(10));
        assert_eq!(revision_order(u64::MAX).len(), 20);
    }
}
