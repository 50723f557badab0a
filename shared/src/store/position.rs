//! The list positions of the store's ordered lists (the cursor a page continues after), one
//! function per list: both adapters order by them, so a cursor means the same on either.

use crate::model::audit::AuditEvent;
use crate::model::dispatch::DispatchEntry;
use crate::model::holiday_calendar::HolidayCalendar;
use crate::model::member::Member;
use crate::model::record::Record;
use crate::model::router::{Router, RouterRevision};
use crate::model::webhook::{WebhookDelivery, WebhookSubscription};
use crate::page::{Page, PageRequest, PageStart, Position};
use crate::store::keys;

/// The list position of a record: creation time, then id (both adapters order by it).
pub fn record_position(record: &Record) -> Position {
    Position::new(keys::by_creation(record.created_at, record.id))
}

/// The list position of a member: e-mail, then id.
pub fn member_position(member: &Member) -> Position {
    Position::new(keys::by_email(member.email.as_str(), member.id))
}

/// The list position of a history entry: dispatch time, then id (lists walk it newest first).
pub fn dispatch_position(entry: &DispatchEntry) -> Position {
    Position::new(keys::dispatch_sort_key(entry.dispatched_at, entry.id))
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
    Position::new(keys::by_creation(calendar.created_at, calendar.id))
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
    Position::new(keys::by_creation(router.created_at, router.id))
}

/// The list position of a router revision: its number, zero-padded to 20 digits (lists walk it
/// newest first).
pub fn revision_position(revision: &RouterRevision) -> Position {
    Position::new(keys::revision_number(revision.revision))
}

/// The list position of an audit event (BEHAVIOR 18): its time, then id (lists walk it newest
/// first); its sort key in the account's and the target's event partitions.
pub fn audit_position(event: &AuditEvent) -> Position {
    Position::new(keys::audit_sort_key(event.at, event.id))
}
