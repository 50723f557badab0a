//! The user object of the spec (spec "User (account member) object").

use crate::model::account::Role;
use crate::model::member::Member;
use crate::schedule::out_of_office::OutOfOfficeText;
use crate::schedule::working_hours::WorkingHoursText;
use crate::timefmt::Archived;
use crate::types::ids::MemberId;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// An account member as the API shows it (spec "User (account member) object"; BEHAVIOR 4).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = User)]
pub struct MemberView {
    /// Member id (read-only).
    pub id: MemberId,
    /// E-mail, lowercase (read-only).
    #[schema(format = Email)]
    pub email: String,
    /// Full name; never derived from the other names.
    pub full_name: Option<String>,
    /// First name.
    pub first_name: Option<String>,
    /// Last name.
    pub last_name: Option<String>,
    /// The role's display name, `null` without a role (changed by `role_id` on PATCH).
    pub role: Option<String>,
    /// External id (the CRM owner id).
    pub external_id: Option<String>,
    /// Phone.
    pub phone: Option<String>,
    /// Whether the member is in office.
    pub office_status: bool,
    /// Working-hours windows as written; empty means available 24/7.
    pub working_hours: Vec<WorkingHoursText>,
    /// Out-of-office ranges as written.
    pub out_office_dates: Vec<OutOfOfficeText>,
    /// IANA time zone name.
    #[schema(example = "Europe/Berlin")]
    pub time_zone: String,
    /// Active calendar configurations: provider name -> e-mail (read-only).
    pub calendars: BTreeMap<String, String>,
    /// The member's holiday calendar (BEHAVIOR 17); `null` without one.
    #[schema(value_type = Option<String>, format = Uuid)]
    pub holiday_calendar_id: Option<crate::types::ids::HolidayCalendarId>,
    /// Capacity entries, objects with free-form keys.
    #[schema(value_type = Vec<Object>)]
    pub capacity: Vec<Map<String, Value>>,
    /// Whether the member receives notifications.
    pub can_receive_notifications: bool,
    /// Notification categories.
    pub notification_preferences: Vec<String>,
    /// `false` while active, the archive time once archived.
    #[schema(value_type = crate::timefmt::Archived)]
    pub archived: Archived,
    /// Who archived it; only on archived members.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived_by: Option<String>,
}

impl MemberView {
    /// The view of `member`; `role` is the display name of its role among `roles`.
    pub fn new(member: &Member, roles: &[Role]) -> Self {
        let role = member
            .role_id
            .and_then(|id| roles.iter().find(|r| r.id == id))
            .map(|r| r.name.clone());
        Self {
            id: member.id,
            email: member.email.as_str().to_string(),
            full_name: member.full_name.clone(),
            first_name: member.first_name.clone(),
            last_name: member.last_name.clone(),
            role,
            external_id: member.external_id.clone(),
            phone: member.phone.clone(),
            office_status: member.office_status,
            working_hours: member
                .working_hours
                .iter()
                .map(|w| w.text().clone())
                .collect(),
            out_office_dates: member
                .out_office_dates
                .iter()
                .map(|o| o.text().clone())
                .collect(),
            time_zone: member.time_zone.name().to_string(),
            calendars: member.calendars.clone(),
            holiday_calendar_id: member.holiday_calendar_id,
            capacity: member.capacity.iter().map(|c| c.as_map().clone()).collect(),
            can_receive_notifications: member.can_receive_notifications,
            notification_preferences: member.notification_preferences.as_slice().to_vec(),
            archived: Archived(member.archived_at),
            archived_by: member.archived_at.and(member.archived_by.clone()),
        }
    }
}
