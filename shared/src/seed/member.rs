//! A member of the seed (`users[]`), read with the parsers the member PATCH uses.

use super::file::SeedUser;
use super::{err, Loader, SeedError};
use crate::model::account::Role;
use crate::model::holiday_calendar::HolidayCalendar;
use crate::model::member::Member;
use crate::schedule::out_of_office::OutOfOffice;
use crate::schedule::working_hours::WorkingHours;
use crate::schedule::zone::IanaTimeZone;
use crate::types::capacity::CapacityEntry;
use crate::types::email::Email;
use crate::types::ids::AccountId;
use crate::types::limits::{
    check_entries, json_size, member_text, MAX_CAPACITY_ENTRIES, MAX_MEMBER_JSON_BYTES,
    MAX_OUT_OF_OFFICE, MAX_WORKING_HOURS,
};
use crate::types::notification_preferences::NotificationPreferences;

impl Loader {
    /// Loads one member at `p`. E-mails are unique per account (`others` are the members
    /// before it); `role_id` must name one of `roles`, `holiday_calendar_id` one of `calendars`
    /// (the account's, BEHAVIOR 17). Defaults of omitted keys:
    /// `office_status` true, `time_zone` UTC, `working_hours` [] (24/7).
    pub(super) fn member(
        &mut self, p: &str, account_id: AccountId, u: SeedUser, roles: &[Role], others: &[Member],
        calendars: &[HolidayCalendar],
    ) -> Result<Member, SeedError> {
        self.claim_id(u.id, p.to_string())?;
        let email = Email::parse(&u.email).map_err(|m| SeedError::at(format!("{p}.email"), m))?;
        if others.iter().any(|m| m.email == email) {
            return err(
                format!("{p}.email"),
                format!("e-mail \"{email}\" is used twice in this account"),
            );
        }
        if let Some(role_id) = u.role_id {
            if !roles.iter().any(|r| r.id == role_id) {
                return err(
                    format!("{p}.role_id"),
                    format!("no role {role_id} in this account"),
                );
            }
        }
        if let Some(id) = u.holiday_calendar_id {
            if !calendars.iter().any(|c| c.id == id) {
                return err(
                    format!("{p}.holiday_calendar_id"),
                    format!("no holiday calendar {id} in this account"),
                );
            }
        }
        let text = |key: &str, value: Option<String>| {
            member_text(value).map_err(|m| SeedError::at(format!("{p}.{key}"), m))
        };
        let full_name = text("full_name", u.full_name)?;
        let first_name = text("first_name", u.first_name)?;
        let last_name = text("last_name", u.last_name)?;
        let external_id = text("external_id", u.external_id)?;
        let phone = text("phone", u.phone)?;
        for (key, len, max) in [
            ("working_hours", u.working_hours.len(), MAX_WORKING_HOURS),
            (
                "out_office_dates",
                u.out_office_dates.len(),
                MAX_OUT_OF_OFFICE,
            ),
            ("capacity", u.capacity.len(), MAX_CAPACITY_ENTRIES),
        ] {
            check_entries(len, max).map_err(|m| SeedError::at(format!("{p}.{key}"), m))?;
        }
        let time_zone = match &u.time_zone {
            Some(name) => {
                IanaTimeZone::parse(name).map_err(|m| SeedError::at(format!("{p}.time_zone"), m))?
            }
            None => IanaTimeZone::UTC,
        };
        let at = |key: &str, j: usize| format!("{p}.{key}[{j}]");
        let working_hours = parse_each(u.working_hours, WorkingHours::parse, |j, m| {
            SeedError::at(at("working_hours", j), m)
        })?;
        let out_office_dates = parse_each(
            u.out_office_dates,
            |o| OutOfOffice::parse(o, time_zone),
            |j, m| SeedError::at(at("out_office_dates", j), m),
        )?;
        let capacity = parse_each(u.capacity, CapacityEntry::parse, |j, (key, m)| {
            match key.as_str() {
                "" => SeedError::at(at("capacity", j), m),
                _ => SeedError::at(format!("{}.{key}", at("capacity", j)), m),
            }
        })?;
        let notification_preferences = NotificationPreferences::parse(&u.notification_preferences)
            .map_err(|(j, m)| match j {
                Some(j) => SeedError::at(format!("{p}.notification_preferences[{j}]"), m),
                None => SeedError::at(format!("{p}.notification_preferences"), m),
            })?;
        let created_at = self.next_time();
        let archived_by = u
            .archived
            .0
            .map(|_| u.archived_by.unwrap_or_else(|| "provisioning".into()));
        let member = Member {
            id: u.id,
            account_id,
            email,
            full_name,
            first_name,
            last_name,
            role_id: u.role_id,
            external_id,
            phone,
            office_status: u.office_status,
            time_zone,
            working_hours,
            out_office_dates,
            calendars: u.calendars,
            holiday_calendar_id: u.holiday_calendar_id,
            capacity,
            can_receive_notifications: u.can_receive_notifications,
            notification_preferences,
            created_at,
            updated_at: created_at,
            archived_at: u.archived.0,
            archived_by,
            version: 1,
        };
        // BEHAVIOR 12, as a PATCH: capacity and calendars could otherwise outgrow an item.
        if json_size(&member) > MAX_MEMBER_JSON_BYTES {
            return err(
                p,
                format!("user too large: at most {MAX_MEMBER_JSON_BYTES} bytes of JSON"),
            );
        }
        Ok(member)
    }
}

/// Each of `items` read by `parse`; the first refused answers `refused(index, error)`.
fn parse_each<T, U, E>(
    items: Vec<T>, parse: impl Fn(T) -> Result<U, E>, refused: impl Fn(usize, E) -> SeedError,
) -> Result<Vec<U>, SeedError> {
    let parsed = items.into_iter().map(parse).enumerate();
    parsed
        .map(|(j, item)| item.map_err(|e| refused(j, e)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_refused;
    use serde_json::json;

    #[test]
    fn member_problems_name_the_members_key() {
        assert_refused(&[
            (
                |s| s["accounts"][0]["users"][1]["time_zone"] = json!("Mars/Base"),
                "accounts[0].users[1].time_zone",
            ),
            (
                |s| s["accounts"][0]["users"][0]["working_hours"][0]["days"] = json!("weekdays"),
                "accounts[0].users[0].working_hours[0]",
            ),
            (
                |s| s["accounts"][0]["users"][1]["email"] = json!("ANA.LOPEZ@northwind.example"),
                "accounts[0].users[1].email",
            ),
            (
                |s| s["accounts"][0]["users"][0]["email"] = json!("not an address"),
                "accounts[0].users[0].email",
            ),
            (
                |s| s["accounts"][0]["users"][0]["role_id"] = json!(uuid::Uuid::nil()),
                "accounts[0].users[0].role_id",
            ),
            (
                |s| s["accounts"][0]["users"][0]["capacity"][0]["max_capacity"] = json!(-3),
                "accounts[0].users[0].capacity[0].max_capacity",
            ),
            (
                |s| {
                    s["accounts"][0]["users"][0]["out_office_dates"] =
                        json!([{"start_date": "2026-12-02", "end_date": "2026-12-01"}])
                },
                "accounts[0].users[0].out_office_dates[0]",
            ),
            (
                |s| s["accounts"][0]["users"][0]["notification_preferences"] = json!(["a", " "]),
                "accounts[0].users[0].notification_preferences[1]",
            ),
        ]);
    }

    /// BEHAVIOR 12: the loader refuses what a PATCH refuses, so a seed never writes a member
    /// DynamoDB cannot hold.
    #[test]
    fn member_limits_are_those_of_a_patch() {
        assert_refused(&[
            (
                |s| s["accounts"][0]["users"][0]["first_name"] = json!("x".repeat(257)),
                "accounts[0].users[0].first_name: at most 256 characters",
            ),
            (
                |s| s["accounts"][0]["users"][1]["external_id"] = json!("x".repeat(257)),
                "accounts[0].users[1].external_id: at most 256 characters",
            ),
            (
                |s| {
                    s["accounts"][0]["users"][0]["working_hours"] = json!(vec![
                        json!({"days": "monday", "start_date": "09:00", "end_date": "17:00"});
                        51
                    ])
                },
                "accounts[0].users[0].working_hours: at most 50 entries",
            ),
            (
                |s| {
                    s["accounts"][0]["users"][0]["out_office_dates"] = json!(vec![
                        json!({"start_date": "2026-12-01", "end_date": "2026-12-02"});
                        201
                    ])
                },
                "accounts[0].users[0].out_office_dates: at most 200 entries",
            ),
            (
                |s| s["accounts"][0]["users"][0]["notification_preferences"] = json!(vec!["a"; 51]),
                "accounts[0].users[0].notification_preferences: at most 50 entries",
            ),
            (
                |s| s["accounts"][0]["users"][0]["capacity"] = json!(vec![json!({}); 51]),
                "accounts[0].users[0].capacity: at most 50 entries",
            ),
            (
                |s| s["accounts"][0]["users"][0]["capacity"][0]["x"] = json!({"deep": 1}),
                "accounts[0].users[0].capacity[0].x: must be a string",
            ),
            (
                |s| s["accounts"][0]["users"][0]["capacity"][0]["x"] = json!(1e200),
                "accounts[0].users[0].capacity[0].x: is out of range",
            ),
            (
                |s| {
                    let calendars: serde_json::Map<String, serde_json::Value> = (0..400)
                        .map(|i| (format!("c{i}"), json!("x".repeat(1_000))))
                        .collect();
                    s["accounts"][0]["users"][0]["calendars"] = calendars.into();
                },
                "accounts[0].users[0]: user too large",
            ),
        ]);
    }
}
