//! The body of `PATCH /users/{userId}` (spec "Users"; BEHAVIOR 4), parsed into changes.

use crate::error::DomainError;
use crate::model::member::Member;
use crate::schedule::out_of_office::{OutOfOffice, OutOfOfficeText};
use crate::schedule::working_hours::{WorkingHours, WorkingHoursText};
use crate::schedule::zone::IanaTimeZone;
use crate::types::capacity::CapacityEntry;
use crate::types::ids::{invalid_holiday_calendar_id, HolidayCalendarId, RoleId};
use crate::types::limits::{
    check_entries, fits, json_size, member_text, MAX_CAPACITY_ENTRIES, MAX_MEMBER_JSON_BYTES,
    MAX_OUT_OF_OFFICE, MAX_WORKING_HOURS,
};
use crate::types::notification_preferences::NotificationPreferences;
use serde_json::{Map, Value};

/// Keys a PATCH may not send: read-only in the spec's user object.
const READ_ONLY: [&str; 6] = [
    "id",
    "email",
    "calendars",
    "archived",
    "archived_by",
    "role",
];

/// The message of a member past [`MAX_MEMBER_JSON_BYTES`] (BEHAVIOR 12, `docs/decisions.md`).
pub const USER_TOO_LARGE: &str = "User too large";

/// One parsed change of a PATCH body.
#[derive(Debug, Clone, PartialEq)]
pub enum MemberChange {
    /// `full_name` (string or null).
    FullName(Option<String>),
    /// `first_name`.
    FirstName(Option<String>),
    /// `last_name`.
    LastName(Option<String>),
    /// `phone`.
    Phone(Option<String>),
    /// `external_id`.
    ExternalId(Option<String>),
    /// `office_status`.
    OfficeStatus(bool),
    /// `time_zone`.
    TimeZone(IanaTimeZone),
    /// `working_hours`, replacing the list.
    WorkingHours(Vec<WorkingHours>),
    /// `out_office_dates`, replacing the list; read in the member's (possibly new) zone when
    /// applied.
    OutOfOffice(Vec<OutOfOfficeText>),
    /// `capacity`, replacing the list, counters included.
    Capacity(Vec<CapacityEntry>),
    /// `can_receive_notifications`.
    CanReceiveNotifications(bool),
    /// `notification_preferences`.
    NotificationPreferences(NotificationPreferences),
    /// `role_id` (null removes the role); checked against the account's roles by the service.
    Role(Option<RoleId>),
    /// `holiday_calendar_id` (null removes it; BEHAVIOR 17); checked against the account's
    /// calendars by the store, in the write.
    HolidayCalendar(Option<HolidayCalendarId>),
}

/// A parsed PATCH body: at least one change, every key writable and valid.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberPatch {
    /// The changes, in the body's key order.
    pub changes: Vec<MemberChange>,
}

fn invalid(key: &str, why: impl std::fmt::Display) -> DomainError {
    DomainError::bad_field(key, format!("Invalid value for {key}: {why}"))
}

/// A name, phone or external id: a string of at most 256 characters, or null (BEHAVIOR 12).
fn text(key: &str, v: &Value) -> Result<Option<String>, DomainError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => member_text(Some(s.clone())).map_err(|why| invalid(key, why)),
        _ => Err(invalid(key, "expected a string or null")),
    }
}

fn boolean(key: &str, v: &Value) -> Result<bool, DomainError> {
    v.as_bool()
        .ok_or_else(|| invalid(key, "expected true or false"))
}

/// An array of at most `max` objects (BEHAVIOR 12).
fn objects<'a>(
    key: &str, v: &'a Value, max: usize,
) -> Result<Vec<&'a Map<String, Value>>, DomainError> {
    let Value::Array(items) = v else {
        return Err(invalid(key, "expected an array of objects"));
    };
    check_entries(items.len(), max).map_err(|why| invalid(key, why))?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::Object(m) => Ok(m),
            _ => Err(invalid(key, format!("[{i}] must be an object"))),
        })
        .collect()
}

fn entry_text(
    key: &str, i: usize, entry: &Map<String, Value>, name: &str,
) -> Result<String, DomainError> {
    match entry.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) => Err(invalid(key, format!("[{i}].{name} is required"))),
        Some(_) => Err(invalid(key, format!("[{i}].{name} must be a string"))),
    }
}

impl MemberPatch {
    /// Parses a PATCH body (a JSON object), every key by the parser of its concept.
    ///
    /// Errors: 400 `At least one writable field is required` for `{}`; 400 naming the key in
    /// `field` for a read-only key (`Field is read-only: <key>`), an unknown key (`Unknown
    /// field: <key>`), or an invalid value (`Invalid value for <key>: ...`; `Invalid role_id`).
    pub fn parse(body: &Map<String, Value>) -> Result<Self, DomainError> {
        if body.is_empty() {
            return Err(DomainError::bad_request(
                "At least one writable field is required",
            ));
        }
        let mut changes = Vec::with_capacity(body.len());
        for (key, v) in body {
            let k = key.as_str();
            let change = match k {
                _ if READ_ONLY.contains(&k) => {
                    return Err(DomainError::bad_field(
                        k,
                        format!("Field is read-only: {k}"),
                    ))
                }
                "full_name" => MemberChange::FullName(text(k, v)?),
                "first_name" => MemberChange::FirstName(text(k, v)?),
                "last_name" => MemberChange::LastName(text(k, v)?),
                "phone" => MemberChange::Phone(text(k, v)?),
                "external_id" => MemberChange::ExternalId(text(k, v)?),
                "office_status" => MemberChange::OfficeStatus(boolean(k, v)?),
                "can_receive_notifications" => {
                    MemberChange::CanReceiveNotifications(boolean(k, v)?)
                }
                "time_zone" => {
                    let name = v
                        .as_str()
                        .ok_or_else(|| invalid(k, "expected an IANA time zone name"))?;
                    MemberChange::TimeZone(IanaTimeZone::parse(name).map_err(|e| invalid(k, e))?)
                }
                "working_hours" => {
                    let mut windows = Vec::new();
                    for (i, entry) in objects(k, v, MAX_WORKING_HOURS)?.into_iter().enumerate() {
                        let text = WorkingHoursText {
                            days: entry_text(k, i, entry, "days")?,
                            start_date: entry_text(k, i, entry, "start_date")?,
                            end_date: entry_text(k, i, entry, "end_date")?,
                        };
                        windows.push(
                            WorkingHours::parse(text)
                                .map_err(|e| invalid(k, format!("[{i}]: {e}")))?,
                        );
                    }
                    MemberChange::WorkingHours(windows)
                }
                "out_office_dates" => {
                    let mut ranges = Vec::new();
                    for (i, entry) in objects(k, v, MAX_OUT_OF_OFFICE)?.into_iter().enumerate() {
                        ranges.push(OutOfOfficeText {
                            start_date: entry_text(k, i, entry, "start_date")?,
                            end_date: entry_text(k, i, entry, "end_date")?,
                            created_by: None,
                        });
                    }
                    MemberChange::OutOfOffice(ranges)
                }
                "capacity" => {
                    let mut entries = Vec::new();
                    for (i, entry) in objects(k, v, MAX_CAPACITY_ENTRIES)?.into_iter().enumerate() {
                        entries.push(CapacityEntry::parse(entry.clone()).map_err(
                            |(at, why)| match at.as_str() {
                                "" => invalid(k, format!("[{i}] {why}")),
                                _ => invalid(k, format!("[{i}].{at} {why}")),
                            },
                        )?);
                    }
                    MemberChange::Capacity(entries)
                }
                "notification_preferences" => {
                    let Value::Array(items) = v else {
                        return Err(invalid(k, "expected an array of strings"));
                    };
                    MemberChange::NotificationPreferences(
                        NotificationPreferences::parse(items).map_err(|(i, why)| match i {
                            Some(i) => invalid(k, format!("[{i}] {why}")),
                            None => invalid(k, why),
                        })?,
                    )
                }
                "role_id" => match v {
                    Value::Null => MemberChange::Role(None),
                    Value::String(s) => MemberChange::Role(Some(RoleId::parse(s)?)),
                    _ => return Err(DomainError::bad_field(k, "Invalid role_id")),
                },
                "holiday_calendar_id" => match v {
                    Value::Null => MemberChange::HolidayCalendar(None),
                    Value::String(s) => {
                        MemberChange::HolidayCalendar(Some(HolidayCalendarId::parse(s)?))
                    }
                    _ => return Err(invalid_holiday_calendar_id()),
                },
                _ => return Err(DomainError::bad_field(k, format!("Unknown field: {k}"))),
            };
            changes.push(change);
        }
        Ok(Self { changes })
    }

    /// The role ids the patch sets, for the service to check against the account's roles.
    pub fn role_ids(&self) -> impl Iterator<Item = RoleId> + '_ {
        self.changes.iter().filter_map(|c| match c {
            MemberChange::Role(Some(id)) => Some(*id),
            _ => None,
        })
    }

    /// `member` with the changes applied. Out-of-office ranges, new or kept, are read in the
    /// member's resulting time zone.
    ///
    /// Errors: 400 naming `out_office_dates` (or `time_zone`, when only the zone changed) when a
    /// range runs backwards or does not parse in that zone; 400 `User too large` (naming
    /// `capacity` when the patch sets it) when the member would take more than
    /// [`MAX_MEMBER_JSON_BYTES`] of JSON and more than before (BEHAVIOR 12).
    pub fn apply_to(&self, member: &Member) -> Result<Member, DomainError> {
        let next = self.apply_unchecked(member)?;
        let size = json_size(&next);
        if size > MAX_MEMBER_JSON_BYTES && !fits(size, json_size(member), MAX_MEMBER_JSON_BYTES) {
            let sets_capacity = self
                .changes
                .iter()
                .any(|c| matches!(c, MemberChange::Capacity(_)));
            return Err(if sets_capacity {
                DomainError::bad_field("capacity", USER_TOO_LARGE)
            } else {
                DomainError::bad_request(USER_TOO_LARGE)
            });
        }
        Ok(next)
    }

    fn apply_unchecked(&self, member: &Member) -> Result<Member, DomainError> {
        let mut next = member.clone();
        let mut new_ranges: Option<&[OutOfOfficeText]> = None;
        for change in &self.changes {
            match change {
                MemberChange::FullName(v) => next.full_name = v.clone(),
                MemberChange::FirstName(v) => next.first_name = v.clone(),
                MemberChange::LastName(v) => next.last_name = v.clone(),
                MemberChange::Phone(v) => next.phone = v.clone(),
                MemberChange::ExternalId(v) => next.external_id = v.clone(),
                MemberChange::OfficeStatus(v) => next.office_status = *v,
                MemberChange::TimeZone(v) => next.time_zone = *v,
                MemberChange::WorkingHours(v) => next.working_hours = v.clone(),
                MemberChange::OutOfOffice(texts) => new_ranges = Some(texts),
                MemberChange::Capacity(v) => next.capacity = v.clone(),
                MemberChange::CanReceiveNotifications(v) => next.can_receive_notifications = *v,
                MemberChange::NotificationPreferences(v) => {
                    next.notification_preferences = v.clone()
                }
                MemberChange::Role(v) => next.role_id = *v,
                MemberChange::HolidayCalendar(v) => next.holiday_calendar_id = *v,
            }
        }
        let zone = next.time_zone;
        match new_ranges {
            Some(texts) => {
                next.out_office_dates = texts
                    .iter()
                    .enumerate()
                    .map(|(i, text)| {
                        OutOfOffice::parse(text.clone(), zone)
                            .map_err(|e| invalid("out_office_dates", format!("[{i}]: {e}")))
                    })
                    .collect::<Result<_, _>>()?;
            }
            None => {
                for (i, range) in next.out_office_dates.iter().enumerate() {
                    range
                        .check_in(zone)
                        .map_err(|e| invalid("out_office_dates", format!("[{i}]: {e}")))?;
                }
            }
        }
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: Value) -> Result<MemberPatch, DomainError> {
        MemberPatch::parse(body.as_object().unwrap())
    }

    #[test]
    fn every_patch_validation_rule_is_400_naming_the_key() {
        let cases = [
            (json!({}), None),
            (json!({"email": "x@y.example"}), Some("email")),
            (json!({"id": "x"}), Some("id")),
            (json!({"calendars": {}}), Some("calendars")),
            (json!({"archived": false}), Some("archived")),
            (json!({"archived_by": "x"}), Some("archived_by")),
            (json!({"role": "Admin"}), Some("role")),
            (json!({"nickname": "x"}), Some("nickname")),
            (json!({"first_name": 5}), Some("first_name")),
            (json!({"office_status": "yes"}), Some("office_status")),
            (
                json!({"can_receive_notifications": 1}),
                Some("can_receive_notifications"),
            ),
            (json!({"time_zone": "Mars/Olympus"}), Some("time_zone")),
            (json!({"time_zone": null}), Some("time_zone")),
            (json!({"working_hours": "9-5"}), Some("working_hours")),
            (
                json!({"working_hours": [{"days": "weekdays", "start_date": "09:00", "end_date": "17:00"}]}),
                Some("working_hours"),
            ),
            (
                json!({"working_hours": [{"days": "monday", "start_date": "9:00", "end_date": "17:00"}]}),
                Some("working_hours"),
            ),
            (
                json!({"working_hours": [{"days": "monday", "start_date": "09:00", "end_date": "09:00"}]}),
                Some("working_hours"),
            ),
            (
                json!({"working_hours": [{"days": "monday", "start_date": "09:00"}]}),
                Some("working_hours"),
            ),
            (
                json!({"out_office_dates": [{"start_date": "2026-12-01"}]}),
                Some("out_office_dates"),
            ),
            (
                json!({"out_office_dates": [{"end_date": "2026-12-01"}]}),
                Some("out_office_dates"),
            ),
            (json!({"out_office_dates": {}}), Some("out_office_dates")),
            (
                json!({"capacity": [{"max_capacity": -1}]}),
                Some("capacity"),
            ),
            (json!({"capacity": [1]}), Some("capacity")),
            (
                json!({"notification_preferences": ["ok", ""]}),
                Some("notification_preferences"),
            ),
            (
                json!({"notification_preferences": "all"}),
                Some("notification_preferences"),
            ),
            (json!({"role_id": "not-a-uuid"}), Some("role_id")),
            (json!({"role_id": 7}), Some("role_id")),
            (
                json!({"holiday_calendar_id": "not-a-uuid"}),
                Some("holiday_calendar_id"),
            ),
            (
                json!({"holiday_calendar_id": 7}),
                Some("holiday_calendar_id"),
            ),
        ];
        for (body, field) in cases {
            let err = parse(body.clone()).unwrap_err();
            assert!(
                matches!(err, DomainError::Invalid { .. }),
                "{body}: {err:?}"
            );
            assert_eq!(err.field(), field, "{body}");
        }
    }

    #[test]
    fn valid_patches_parse_into_changes_and_ignore_extra_out_of_office_keys() {
        let body = json!({
            "office_status": false,
            "working_hours": [{"days": "Mon - Fri", "start_date": "22:00", "end_date": "02:00"}],
            "out_office_dates": [{"start_date": "2026-12-24", "end_date": "2026-12-26", "created_by": "someone"}],
            "notification_preferences": ["a", "a", "b"],
            "role_id": null,
            "external_id": null,
        });
        let patch = parse(body).unwrap();
        assert!(patch
            .changes
            .contains(&MemberChange::OutOfOffice(vec![OutOfOfficeText {
                start_date: "2026-12-24".into(),
                end_date: "2026-12-26".into(),
                created_by: None
            }])));
        assert!(patch
            .changes
            .contains(&MemberChange::NotificationPreferences(
                NotificationPreferences::parse(&[json!("a"), json!("b")]).unwrap()
            )));
        assert!(patch.changes.contains(&MemberChange::Role(None)));
    }
}
