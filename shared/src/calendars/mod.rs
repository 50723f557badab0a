//! Holiday calendars (BEHAVIOR 17): `GET|POST /holiday-calendars`,
//! `GET|PUT|DELETE /holiday-calendars/{id}`: parse, check, store, answer.
//!
//! A body `{name, time_zone, holidays}` is read by [`CalendarBody::from_json`] (every problem a
//! 400 naming its JSON path, e.g. `holidays[3].end`) and parsed once by [`CalendarBody::parse`]
//! into the stored [`HolidayCalendar`]: dispatch, explain, SLA checks and the replay evaluate
//! the parsed holidays ([`crate::schedule::holidays`]), never the text.

use crate::audit::diff::HOLIDAY_CALENDAR;
use crate::audit::Actor;
use crate::clock::Clock;
use crate::error::DomainError;
use crate::model::audit::{AuditAction, AuditEvent, AuditTarget, TargetType};
use crate::model::holiday_calendar::{CalendarDeletion, HolidayCalendar, MAX_HOLIDAY_CALENDARS};
use crate::page::cursor::{CursorKey, ListRequest};
use crate::page::{ListView, PageRequest, MAX_LIMIT};
use crate::schedule::availability::HolidayCalendars;
use crate::schedule::holidays::{HolidayText, Holidays, HolidaysError};
use crate::schedule::zone::IanaTimeZone;
use crate::store::retry::Kept;
use crate::store::{
    holiday_calendar_position, size, write_rounds, Backoff, CalendarStore, StoreError, Turns,
};
use crate::timefmt::Timestamp;
use crate::types::ids::{AccountId, HolidayCalendarId};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use utoipa::ToSchema;

/// The 404 of an unknown calendar (BEHAVIOR 17).
pub const CALENDAR_NOT_FOUND: &str = "Holiday calendar not found";

/// The 409 of a calendar that a member or a router names (BEHAVIOR 17).
pub const CALENDAR_IN_USE: &str = "Holiday calendar in use";

/// The 400 of a calendar whose stored item would pass the size rule (BEHAVIOR 12).
pub const CALENDAR_TOO_LARGE: &str = "Holiday calendar too large";

/// BEHAVIOR 12: `calendar`'s stored item within the size rule of every stored item
/// ([`size::check_write`]): 500 holidays named with 200 four-byte characters each are about
/// 430 KB, past DynamoDB's 400 KB. The API's writes and the provisioning loader check it.
///
/// Errors: `Holiday calendar too large` (its reason, for the loader).
pub fn check_stored_size(calendar: &HolidayCalendar) -> Result<(), String> {
    size::check_write(calendar)
        .map(|_| ())
        .map_err(|_| CALENDAR_TOO_LARGE.to_string())
}

/// The longest calendar `name`, in characters.
pub const MAX_CALENDAR_NAME_CHARS: usize = 256;

/// A calendar body (`POST` and `PUT` alike: a `PUT` replaces all three keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarBody {
    /// Display name.
    pub name: String,
    /// IANA zone name, as sent.
    pub time_zone: String,
    /// The holidays as sent.
    pub holidays: Vec<HolidayText>,
}

/// A parsed calendar body, ready to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCalendar {
    /// Display name, 1 to 256 characters.
    pub name: String,
    /// The zone.
    pub time_zone: IanaTimeZone,
    /// The holidays.
    pub holidays: Holidays,
}

impl ParsedCalendar {
    /// The calendar `id` of `account_id`, made at `at` (version 1).
    pub fn into_calendar(
        self, id: HolidayCalendarId, account_id: AccountId, at: DateTime<Utc>,
    ) -> HolidayCalendar {
        HolidayCalendar {
            id,
            account_id,
            name: self.name,
            time_zone: self.time_zone,
            holidays: self.holidays,
            created_at: at,
            updated_at: at,
            version: 1,
        }
    }
}

fn bad(path: impl Into<String>, message: impl Into<String>) -> DomainError {
    DomainError::bad_field(path, message)
}

/// A string at `path`, or a 400 naming it.
fn string_at(path: &str, value: &Value) -> Result<String, DomainError> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| bad(path, format!("Invalid value for {path}: expected a string")))
}

impl CalendarBody {
    /// Reads a request body's keys (BEHAVIOR 17): `name`, `time_zone` and `holidays` required;
    /// each holiday an object of `name`, `date` (strings), `start`, `end` (strings or null) and
    /// `yearly` (boolean or null).
    ///
    /// Errors: 400 naming the key or JSON path: missing, unknown, or of the wrong type.
    pub fn from_json(body: &Map<String, Value>) -> Result<Self, DomainError> {
        if let Some(unknown) = body
            .keys()
            .find(|k| !["name", "time_zone", "holidays"].contains(&k.as_str()))
        {
            return Err(bad(unknown.clone(), format!("Unknown field: {unknown}")));
        }
        let required = |key: &str| {
            body.get(key)
                .ok_or_else(|| bad(key, format!("Missing required field: {key}")))
        };
        let name = string_at("name", required("name")?)?;
        let time_zone = string_at("time_zone", required("time_zone")?)?;
        let items = required("holidays")?
            .as_array()
            .ok_or_else(|| bad("holidays", "Invalid value for holidays: expected an array"))?;
        let mut holidays = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("holidays[{i}]");
            let entry = item.as_object().ok_or_else(|| {
                bad(
                    &path,
                    format!("Invalid value for {path}: expected an object"),
                )
            })?;
            if let Some(unknown) = entry
                .keys()
                .find(|k| !["name", "date", "start", "end", "yearly"].contains(&k.as_str()))
            {
                let at = format!("{path}.{unknown}");
                return Err(bad(&at, format!("Unknown field: {at}")));
            }
            let need = |key: &str| {
                let at = format!("{path}.{key}");
                match entry.get(key) {
                    Some(value) => string_at(&at, value),
                    None => Err(bad(&at, format!("Missing required field: {at}"))),
                }
            };
            let optional = |key: &str| {
                let at = format!("{path}.{key}");
                match entry.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(value) => string_at(&at, value).map(Some),
                }
            };
            let yearly = match entry.get("yearly") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => {
                    let at = format!("{path}.yearly");
                    return Err(bad(
                        &at,
                        format!("Invalid value for {at}: expected a boolean"),
                    ));
                }
            };
            holidays.push(HolidayText {
                name: need("name")?,
                date: need("date")?,
                start: optional("start")?,
                end: optional("end")?,
                yearly,
            });
        }
        Ok(Self {
            name,
            time_zone,
            holidays,
        })
    }

    /// Checks the body (BEHAVIOR 17): `name` 1 to 256 characters (not blank), `time_zone` an
    /// IANA name, `holidays` per [`Holidays::parse`] (at most 500).
    ///
    /// Errors: the first problem with its JSON path relative to the body (`name`,
    /// `time_zone`, `holidays`, `holidays[i].<key>`).
    pub fn parse(self) -> Result<ParsedCalendar, HolidaysError> {
        let chars = self.name.chars().count();
        if self.name.trim().is_empty() || chars > MAX_CALENDAR_NAME_CHARS {
            return Err(HolidaysError {
                path: "name".into(),
                message: format!("name must be 1 to {MAX_CALENDAR_NAME_CHARS} characters"),
            });
        }
        let time_zone = IanaTimeZone::parse(&self.time_zone).map_err(|message| HolidaysError {
            path: "time_zone".into(),
            message,
        })?;
        Ok(ParsedCalendar {
            name: self.name,
            time_zone,
            holidays: Holidays::parse(self.holidays)?,
        })
    }
}

/// A body read and checked: 400 naming the path of its first problem.
fn parse_body(body: &Map<String, Value>) -> Result<ParsedCalendar, DomainError> {
    CalendarBody::from_json(body)?
        .parse()
        .map_err(|e| bad(e.path.clone(), format!("{}: {}", e.path, e.message)))
}

/// A holiday calendar as answered (BEHAVIOR 17): `{id, name, time_zone, holidays, created_at,
/// updated_at}`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = HolidayCalendar)]
pub struct HolidayCalendarView {
    /// Calendar id.
    #[schema(value_type = String, format = Uuid)]
    pub id: HolidayCalendarId,
    /// Display name.
    pub name: String,
    /// IANA zone its dates and times are read in.
    #[schema(example = "Europe/Berlin")]
    pub time_zone: String,
    /// The holidays as written (`start`, `end` `null` for a whole day; `yearly` false unless
    /// set).
    pub holidays: Vec<HolidayText>,
    /// Creation time.
    #[schema(value_type = crate::timefmt::Timestamp)]
    pub created_at: Timestamp,
    /// Last write time.
    #[schema(value_type = crate::timefmt::Timestamp)]
    pub updated_at: Timestamp,
}

impl HolidayCalendarView {
    /// The view of `calendar`.
    pub fn new(calendar: &HolidayCalendar) -> Self {
        Self {
            id: calendar.id,
            name: calendar.name.clone(),
            time_zone: calendar.time_zone.name().to_string(),
            holidays: calendar
                .holidays
                .list()
                .iter()
                .map(|h| h.text().clone())
                .collect(),
            created_at: Timestamp(calendar.created_at),
            updated_at: Timestamp(calendar.updated_at),
        }
    }
}

/// The account's holiday calendars (BEHAVIOR 17; at most [`MAX_HOLIDAY_CALENDARS`], one read),
/// with `router_calendar` the calendar a router's configuration names. Dispatch, explain and the
/// what-if replay read them in their second round, with the pool: the members' calendar ids are
/// known only once the pool is read, and a calendar written through the API must count at the
/// next dispatch, so they are neither read by id after the pool (a fourth round) nor cached with
/// the account's directory (stale for its TTL). A configuration's check reads them for the ids
/// it may name.
///
/// Errors: the store's.
pub async fn read_holiday_calendars(
    store: &dyn CalendarStore, account_id: AccountId, router_calendar: Option<HolidayCalendarId>,
) -> Result<HolidayCalendars, DomainError> {
    let page = PageRequest::first(MAX_LIMIT, false);
    let calendars = store.list_holiday_calendars(account_id, &page).await?.items;
    Ok(HolidayCalendars::new(calendars, router_calendar))
}

/// The holiday calendar operations of one warm instance.
pub struct HolidayCalendarService {
    store: Arc<dyn CalendarStore>,
    clock: Arc<dyn Clock>,
    /// Writes of one calendar, and the creates and deletes of one account (its calendar
    /// count), take turns in this instance ([`Turns`]).
    turns: Turns,
}

impl HolidayCalendarService {
    /// The operations over `store`, dating changes with `clock`.
    pub fn new(store: Arc<dyn CalendarStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            turns: Turns::default(),
        }
    }

    /// `GET /holiday-calendars`: the account's calendars, oldest first (BEHAVIOR 11 list
    /// rules; no `archived` filter).
    ///
    /// Errors: 400 naming `after` for a cursor this list did not issue.
    pub async fn list(
        &self, account_id: AccountId, request: &ListRequest, cursors: &CursorKey,
    ) -> Result<ListView<HolidayCalendarView>, DomainError> {
        let (list, page) = request.open_unfiltered(cursors, account_id, "holiday-calendars")?;
        let listed = self.store.list_holiday_calendars(account_id, &page).await?;
        Ok(cursors.answer(
            &list,
            &page,
            listed,
            HolidayCalendarView::new,
            holiday_calendar_position,
        ))
    }

    /// `GET /holiday-calendars/{id}` (`None`: the path id is not a UUID).
    ///
    /// Errors: 404 `Holiday calendar not found`.
    pub async fn get(
        &self, account_id: AccountId, id: Option<HolidayCalendarId>,
    ) -> Result<HolidayCalendarView, DomainError> {
        Ok(HolidayCalendarView::new(&self.find(account_id, id).await?))
    }

    /// `POST /holiday-calendars` by `actor`: a new calendar, recorded as
    /// `holiday_calendar.created` in the same write (BEHAVIOR 18).
    ///
    /// Errors: 400 naming the path of the body's first problem; 400 `Holiday calendar too large`;
    /// 400 when the account has 20 calendars already.
    pub async fn create(
        &self, actor: Actor<'_>, body: &Map<String, Value>,
    ) -> Result<HolidayCalendarView, DomainError> {
        let parsed = parse_body(body)?;
        let now = self.clock.now();
        let account_id = actor.account_id;
        let calendar = parsed.into_calendar(HolidayCalendarId::new_v7(), account_id, now);
        check_stored_size(&calendar).map_err(DomainError::bad_request)?;
        let event = calendar_event(
            actor,
            AuditAction::HolidayCalendarCreated,
            None,
            Some(&calendar),
            now,
        );
        let _turn = self.turns.take(format!("count:{account_id}")).await;
        let (calendar, event) = (&calendar, &event);
        write_rounds(&mut Backoff::new(), (), |_, _| {
            Box::pin(async move {
                // A round lost to a concurrent create or delete: the account's count moved.
                match self
                    .store
                    .create_holiday_calendar(calendar, MAX_HOLIDAY_CALENDARS, event.as_ref())
                    .await
                {
                    Ok(()) => Ok(HolidayCalendarView::new(calendar)),
                    Err(StoreError::Rejected(_)) => Err(DomainError::bad_request(format!(
                        "An account has at most {MAX_HOLIDAY_CALENDARS} holiday calendars"
                    ))
                    .into()),
                    Err(e) => Err(e.into()),
                }
            })
        })
        .await
        .map_err(|e| e.answer_with(CALENDAR_KEPT_CHANGING))
    }

    /// `PUT /holiday-calendars/{id}` by `actor`: replaces name, time zone and holidays, recorded
    /// as `holiday_calendar.updated` when a value changed (BEHAVIOR 18). `body` is the request
    /// body as the handler read it, looked at only once the calendar is found.
    ///
    /// Errors: 404 `Holiday calendar not found` (before the body's 400, BEHAVIOR 2); then
    /// `body`'s own error (not a JSON object), or 400 naming the path of its first problem.
    pub async fn update(
        &self, actor: Actor<'_>, id: Option<HolidayCalendarId>,
        body: Result<Map<String, Value>, DomainError>,
    ) -> Result<HolidayCalendarView, DomainError> {
        let account_id = actor.account_id;
        let _turn = self
            .turns
            .take(id.map(|id| id.to_string()).unwrap_or_default())
            .await;
        let current = self.find(account_id, id).await?;
        let parsed = parse_body(&body?)?;
        let parsed = &parsed;
        write_rounds(&mut Backoff::new(), current, |Kept(current, _), n| {
            Box::pin(async move {
                if n > 0 {
                    *current = self.find(account_id, id).await?;
                }
                let now = self.clock.now();
                let next = HolidayCalendar {
                    name: parsed.name.clone(),
                    time_zone: parsed.time_zone,
                    holidays: parsed.holidays.clone(),
                    updated_at: now.max(current.updated_at),
                    version: current.version + 1,
                    ..current.clone()
                };
                check_stored_size(&next).map_err(DomainError::bad_request)?;
                let event = calendar_event(
                    actor,
                    AuditAction::HolidayCalendarUpdated,
                    Some(current),
                    Some(&next),
                    now,
                );
                self.store
                    .update_holiday_calendar(&next, current.version, event.as_ref())
                    .await?;
                Ok(HolidayCalendarView::new(&next))
            })
        })
        .await
        .map_err(|e| e.answer_with(CALENDAR_KEPT_CHANGING))
    }

    /// `DELETE /holiday-calendars/{id}` by `actor`, recorded as `holiday_calendar.deleted` in
    /// the same write (BEHAVIOR 18): the calendar is read first, and deleted only while it is
    /// still as read.
    ///
    /// Errors: 404 `Holiday calendar not found`; 409 `Holiday calendar in use` while an active
    /// member or the live or draft configuration of a non-archived router names it.
    pub async fn delete(
        &self, actor: Actor<'_>, id: Option<HolidayCalendarId>,
    ) -> Result<(), DomainError> {
        let account_id = actor.account_id;
        let _turn = self.turns.take(format!("count:{account_id}")).await;
        write_rounds(&mut Backoff::new(), (), |_, _| {
            Box::pin(async move {
                let current = self.find(account_id, id).await?;
                let event = calendar_event(
                    actor,
                    AuditAction::HolidayCalendarDeleted,
                    Some(&current),
                    None,
                    self.clock.now(),
                );
                match self
                    .store
                    .delete_holiday_calendar(
                        account_id,
                        current.id,
                        current.version,
                        event.as_ref(),
                    )
                    .await?
                {
                    CalendarDeletion::Deleted => Ok(()),
                    CalendarDeletion::NotFound => Err(not_found().into()),
                    CalendarDeletion::InUse => Err(DomainError::conflict(CALENDAR_IN_USE).into()),
                }
            })
        })
        .await
        .map_err(|e| e.answer_with(CALENDAR_KEPT_CHANGING))
    }

    async fn find(
        &self, account_id: AccountId, id: Option<HolidayCalendarId>,
    ) -> Result<HolidayCalendar, DomainError> {
        let Some(id) = id else {
            return Err(not_found());
        };
        self.store
            .get_holiday_calendar(account_id, id)
            .await?
            .ok_or_else(not_found)
    }
}

/// The audit event of a calendar write (BEHAVIOR 18), from the calendar `before` to the one
/// `after` (`None`: created or deleted); `None` when no value changed.
fn calendar_event(
    actor: Actor<'_>, action: AuditAction, before: Option<&HolidayCalendar>,
    after: Option<&HolidayCalendar>, now: DateTime<Utc>,
) -> Option<AuditEvent> {
    let json = |c: &HolidayCalendar| {
        serde_json::to_value(HolidayCalendarView::new(c)).unwrap_or(Value::Null)
    };
    let (b, a) = (before.map(json), after.map(json));
    let changes = HOLIDAY_CALENDAR.changes(b.as_ref(), a.as_ref());
    let id = before.or(after)?.id;
    (!changes.is_empty()).then(|| {
        let target = AuditTarget::new(TargetType::HolidayCalendar, id);
        actor.event(action, target, changes, now)
    })
}

/// The 409 of a calendar that kept changing until the retry deadline ([`crate::store::retry`]).
const CALENDAR_KEPT_CHANGING: &str =
    "The holiday calendar kept changing while the request applied; retry it";

fn not_found() -> DomainError {
    DomainError::not_found(CALENDAR_NOT_FOUND)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(body: Value) -> Result<ParsedCalendar, DomainError> {
        parse_body(body.as_object().unwrap())
    }

    #[test]
    fn every_calendar_body_rule_is_a_400_naming_its_path() {
        let ok = json!({"name": "US", "time_zone": "America/New_York", "holidays": []});
        assert!(read(ok).is_ok());
        let cases = [
            (json!({"time_zone": "UTC", "holidays": []}), "name"),
            (
                json!({"name": "", "time_zone": "UTC", "holidays": []}),
                "name",
            ),
            (
                json!({"name": "x".repeat(257), "time_zone": "UTC", "holidays": []}),
                "name",
            ),
            (
                json!({"name": 1, "time_zone": "UTC", "holidays": []}),
                "name",
            ),
            (json!({"name": "US", "holidays": []}), "time_zone"),
            (
                json!({"name": "US", "time_zone": "Mars/Olympus", "holidays": []}),
                "time_zone",
            ),
            (json!({"name": "US", "time_zone": "UTC"}), "holidays"),
            (
                json!({"name": "US", "time_zone": "UTC", "holidays": {}}),
                "holidays",
            ),
            (
                json!({"name": "US", "time_zone": "UTC", "holidays": [], "extra": 1}),
                "extra",
            ),
            (
                json!({"name": "US", "time_zone": "UTC", "holidays": [1]}),
                "holidays[0]",
            ),
            (
                json!({"name": "US", "time_zone": "UTC", "holidays": [{"date": "2026-01-01"}]}),
                "holidays[0].name",
            ),
            (
                json!({"name": "US", "time_zone": "UTC", "holidays": [{"name": "x", "date": "2026-01-01", "yearly": "yes"}]}),
                "holidays[0].yearly",
            ),
            (
                json!({"name": "US", "time_zone": "UTC", "holidays": [{"name": "x", "date": "2026-01-01", "color": "red"}]}),
                "holidays[0].color",
            ),
            (
                json!({"name": "US", "time_zone": "UTC", "holidays": [
                    {"name": "a", "date": "2026-01-01"}, {"name": "b", "date": "2026-01-02"},
                    {"name": "c", "date": "2026-01-03"},
                    {"name": "d", "date": "2026-01-04", "start": "10:00", "end": "09:00"}]}),
                "holidays[3].end",
            ),
        ];
        for (body, field) in cases {
            let error = read(body.clone()).unwrap_err();
            assert!(matches!(error, DomainError::Invalid { .. }), "{body}");
            assert_eq!(error.field(), Some(field), "{body}: {error}");
        }
    }
}
