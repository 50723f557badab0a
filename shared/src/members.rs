//! Account members (spec "User (account member) object", "Users"; BEHAVIOR 4): the response
//! shape, PATCH validation and the member service.

use crate::clock::Clock;
use crate::error::ApiError;
use crate::model::{Member, OutOfOffice, Role, WorkingHours};
use crate::schedule::{parse_time_zone, validate_out_of_office, validate_working_hours};
use crate::store::{Page, Store, StoreError};
use crate::timefmt::rfc3339_millis;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use uuid::Uuid;

/// Keys a PATCH may not send: read-only in the spec's user object.
const READ_ONLY: [&str; 6] = [
    "id",
    "email",
    "calendars",
    "archived",
    "archived_by",
    "role",
];

/// How many times a PATCH that lost a race is re-read and re-applied.
const CONFLICT_RETRIES: usize = 8;

/// Validates `capacity` entries (BEHAVIOR 4): `current_capacity` and `max_capacity`, when
/// present, must be non-negative integers; other keys are kept as sent.
///
/// Errors: `(path suffix, message)`, e.g. `("[0].max_capacity", "must be a non-negative integer")`.
pub fn validate_capacity(entries: &[Map<String, Value>]) -> Result<(), (String, String)> {
    for (i, entry) in entries.iter().enumerate() {
        for key in ["current_capacity", "max_capacity"] {
            if let Some(v) = entry.get(key) {
                if v.as_u64().is_none() {
                    return Err((
                        format!("[{i}].{key}"),
                        "must be a non-negative integer".into(),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The user object of the spec; `role` is the role's display name (or `null`).
pub fn member_json(member: &Member, roles: &[Role]) -> Value {
    let role = member
        .role_id
        .and_then(|id| roles.iter().find(|r| r.id == id))
        .map(|r| r.name.clone());
    let mut out = json!({
        "id": member.id,
        "email": member.email,
        "full_name": member.full_name,
        "first_name": member.first_name,
        "last_name": member.last_name,
        "role": role,
        "external_id": member.external_id,
        "phone": member.phone,
        "office_status": member.office_status,
        "working_hours": member.working_hours,
        "out_office_dates": member.out_office_dates,
        "time_zone": member.time_zone,
        "calendars": member.calendars,
        "capacity": member.capacity,
        "can_receive_notifications": member.can_receive_notifications,
        "notification_preferences": member.notification_preferences,
        "archived": member.archived_at.map_or(json!(false), |at| json!(rfc3339_millis(at))),
    });
    if member.archived_at.is_some() {
        out["archived_by"] = json!(member.archived_by);
    }
    out
}

/// One validated change of a PATCH body.
#[derive(Debug, Clone, PartialEq)]
enum Change {
    FullName(Option<String>),
    FirstName(Option<String>),
    LastName(Option<String>),
    Phone(Option<String>),
    ExternalId(Option<String>),
    OfficeStatus(bool),
    TimeZone(String),
    WorkingHours(Vec<WorkingHours>),
    OutOfOffice(Vec<OutOfOffice>),
    Capacity(Vec<Map<String, Value>>),
    CanReceiveNotifications(bool),
    NotificationPreferences(Vec<String>),
    Role(Option<Uuid>),
}

fn invalid(key: &str, why: impl std::fmt::Display) -> ApiError {
    ApiError::bad_field(key, format!("Invalid value for {key}: {why}"))
}

fn text(key: &str, v: &Value) -> Result<Option<String>, ApiError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(invalid(key, "expected a string or null")),
    }
}

fn boolean(key: &str, v: &Value) -> Result<bool, ApiError> {
    v.as_bool()
        .ok_or_else(|| invalid(key, "expected true or false"))
}

fn objects(key: &str, v: &Value) -> Result<Vec<Map<String, Value>>, ApiError> {
    let Value::Array(items) = v else {
        return Err(invalid(key, "expected an array of objects"));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::Object(m) => Ok(m.clone()),
            _ => Err(invalid(key, format!("[{i}] must be an object"))),
        })
        .collect()
}

fn entry_text(
    key: &str,
    i: usize,
    entry: &Map<String, Value>,
    name: &str,
) -> Result<String, ApiError> {
    match entry.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) => Err(invalid(key, format!("[{i}].{name} is required"))),
        Some(_) => Err(invalid(key, format!("[{i}].{name} must be a string"))),
    }
}

/// Parses a PATCH body into changes (syntax and per-value rules; `out_office_dates` dates are
/// checked against the time zone later, `role_id` against the account's roles).
fn parse_patch(body: &Map<String, Value>) -> Result<Vec<Change>, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad_request(
            "At least one writable field is required",
        ));
    }
    let mut changes = Vec::new();
    for (key, v) in body {
        let k = key.as_str();
        let change = match k {
            _ if READ_ONLY.contains(&k) => {
                return Err(ApiError::bad_field(k, format!("Field is read-only: {k}")))
            }
            "full_name" => Change::FullName(text(k, v)?),
            "first_name" => Change::FirstName(text(k, v)?),
            "last_name" => Change::LastName(text(k, v)?),
            "phone" => Change::Phone(text(k, v)?),
            "external_id" => Change::ExternalId(text(k, v)?),
            "office_status" => Change::OfficeStatus(boolean(k, v)?),
            "can_receive_notifications" => Change::CanReceiveNotifications(boolean(k, v)?),
            "time_zone" => {
                let name = v
                    .as_str()
                    .ok_or_else(|| invalid(k, "expected an IANA time zone name"))?;
                parse_time_zone(name).map_err(|e| invalid(k, e))?;
                Change::TimeZone(name.to_string())
            }
            "working_hours" => {
                let mut windows = Vec::new();
                for (i, entry) in objects(k, v)?.iter().enumerate() {
                    let w = WorkingHours {
                        days: entry_text(k, i, entry, "days")?,
                        start_date: entry_text(k, i, entry, "start_date")?,
                        end_date: entry_text(k, i, entry, "end_date")?,
                    };
                    validate_working_hours(&w).map_err(|e| invalid(k, format!("[{i}]: {e}")))?;
                    windows.push(w);
                }
                Change::WorkingHours(windows)
            }
            "out_office_dates" => {
                let mut ranges = Vec::new();
                for (i, entry) in objects(k, v)?.iter().enumerate() {
                    ranges.push(OutOfOffice {
                        start_date: entry_text(k, i, entry, "start_date")?,
                        end_date: entry_text(k, i, entry, "end_date")?,
                        created_by: None,
                    });
                }
                Change::OutOfOffice(ranges)
            }
            "capacity" => {
                let entries = objects(k, v)?;
                validate_capacity(&entries)
                    .map_err(|(at, why)| invalid(k, format!("{at} {why}")))?;
                Change::Capacity(entries)
            }
            "notification_preferences" => {
                let Value::Array(items) = v else {
                    return Err(invalid(k, "expected an array of strings"));
                };
                let mut prefs: Vec<String> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some(s) if !s.trim().is_empty() => {
                            if !prefs.iter().any(|p| p == s) {
                                prefs.push(s.to_string());
                            }
                        }
                        _ => return Err(invalid(k, format!("[{i}] must be a non-empty string"))),
                    }
                }
                Change::NotificationPreferences(prefs)
            }
            "role_id" => match v {
                Value::Null => Change::Role(None),
                Value::String(s) => Change::Role(Some(
                    Uuid::parse_str(s).map_err(|_| ApiError::bad_field(k, "Invalid role_id"))?,
                )),
                _ => return Err(ApiError::bad_field(k, "Invalid role_id")),
            },
            _ => return Err(ApiError::bad_field(k, format!("Unknown field: {k}"))),
        };
        changes.push(change);
    }
    Ok(changes)
}

fn apply(member: &mut Member, changes: &[Change]) {
    for change in changes.iter().cloned() {
        match change {
            Change::FullName(v) => member.full_name = v,
            Change::FirstName(v) => member.first_name = v,
            Change::LastName(v) => member.last_name = v,
            Change::Phone(v) => member.phone = v,
            Change::ExternalId(v) => member.external_id = v,
            Change::OfficeStatus(v) => member.office_status = v,
            Change::TimeZone(v) => member.time_zone = v,
            Change::WorkingHours(v) => member.working_hours = v,
            Change::OutOfOffice(v) => member.out_office_dates = v,
            Change::Capacity(v) => member.capacity = v,
            Change::CanReceiveNotifications(v) => member.can_receive_notifications = v,
            Change::NotificationPreferences(v) => member.notification_preferences = v,
            Change::Role(v) => member.role_id = v,
        }
    }
}

/// The member operations of one warm instance.
pub struct MemberService {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

/// Parses a `userId` path segment.
///
/// Errors: 400 `Invalid userId: must be a UUID` (spec "Users": UUID required).
pub fn parse_member_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw)
        .map_err(|_| ApiError::bad_field("userId", "Invalid userId: must be a UUID"))
}

impl MemberService {
    /// A service over `store`.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    /// `GET /users`: `{data, pagination}`, by e-mail; archived members only with `archived=true`.
    pub async fn list(&self, account_id: Uuid, page: Page) -> Result<Value, ApiError> {
        let members = self.store.list_members(account_id, page).await?;
        let roles = self.store.list_roles(account_id).await?;
        let data: Vec<Value> = members.iter().map(|m| member_json(m, &roles)).collect();
        Ok(
            json!({"data": data, "pagination": {"limit": page.limit, "offset": page.offset, "count": data.len()}}),
        )
    }

    /// `GET /users/{userId}`: the member, archived or not.
    ///
    /// Errors: 400 non-UUID id; 404 not a member of this account.
    pub async fn get(&self, account_id: Uuid, raw_id: &str) -> Result<Value, ApiError> {
        let member = self.find(account_id, parse_member_id(raw_id)?).await?;
        let roles = self.store.list_roles(account_id).await?;
        Ok(member_json(&member, &roles))
    }

    /// `PATCH /users/{userId}` with a flat body of writable keys (BEHAVIOR 4).
    ///
    /// Errors, in order: 400 non-UUID id; 404; 409 archived member; 400 invalid JSON, empty
    /// body, unknown or read-only key, invalid value (`field` names the key), `Invalid role_id`.
    pub async fn update(
        &self,
        account_id: Uuid,
        raw_id: &str,
        body: &[u8],
    ) -> Result<Value, ApiError> {
        let id = parse_member_id(raw_id)?;
        let mut current = self.find(account_id, id).await?;
        if !current.is_active() {
            return Err(archived());
        }
        let changes = parse_patch(&crate::api::json_object(body)?)?;
        let roles = self.store.list_roles(account_id).await?;
        for change in &changes {
            if let Change::Role(Some(role_id)) = change {
                if !roles.iter().any(|r| r.id == *role_id) {
                    return Err(ApiError::bad_field("role_id", "Invalid role_id"));
                }
            }
        }
        for _ in 0..CONFLICT_RETRIES {
            let mut next = current.clone();
            apply(&mut next, &changes);
            // Out-of-office dates are read in the member's (possibly new) time zone.
            let tz = parse_time_zone(&next.time_zone).map_err(|e| invalid("time_zone", e))?;
            for (i, range) in next.out_office_dates.iter().enumerate() {
                validate_out_of_office(range, tz)
                    .map_err(|e| invalid("out_office_dates", format!("[{i}]: {e}")))?;
            }
            next.updated_at = self.clock.now().max(current.updated_at);
            next.version = current.version + 1;
            match self.store.update_member(&next, current.version).await {
                Ok(()) => return Ok(member_json(&next, &roles)),
                Err(StoreError::Conflict) => {
                    current = self.find(account_id, id).await?;
                    if !current.is_active() {
                        return Err(archived());
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::internal(
            "member update kept conflicting with concurrent writes",
        ))
    }

    async fn find(&self, account_id: Uuid, id: Uuid) -> Result<Member, ApiError> {
        self.store
            .get_member(account_id, id)
            .await?
            .ok_or_else(|| ApiError::not_found("User not found"))
    }
}

fn archived() -> ApiError {
    ApiError::Conflict {
        message: "Cannot update an archived user".into(),
        field: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(v: Value) -> Vec<Map<String, Value>> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn capacity_counters_must_be_non_negative_integers() {
        assert!(validate_capacity(&entries(
            json!([{"id": "c1", "current_capacity": 0, "max_capacity": 5, "x": "kept"}])
        ))
        .is_ok());
        assert!(validate_capacity(&entries(json!([{"name": "no counters"}]))).is_ok());
        for bad in [json!(-1), json!(1.5), json!("3"), json!(null)] {
            let err = validate_capacity(&entries(json!([{}, {"max_capacity": bad}]))).unwrap_err();
            assert_eq!(err.0, "[1].max_capacity");
        }
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
        ];
        for (body, field) in cases {
            let err = parse_patch(body.as_object().unwrap()).unwrap_err();
            assert_eq!(err.status(), 400, "{body}");
            assert_eq!(
                err.body().get("field").and_then(Value::as_str),
                field,
                "{body}"
            );
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
        let changes = parse_patch(body.as_object().unwrap()).unwrap();
        assert!(changes.contains(&Change::OutOfOffice(vec![OutOfOffice {
            start_date: "2026-12-24".into(),
            end_date: "2026-12-26".into(),
            created_by: None
        }])));
        assert!(changes.contains(&Change::NotificationPreferences(vec![
            "a".into(),
            "b".into()
        ])));
        assert!(changes.contains(&Change::Role(None)));
    }
}
