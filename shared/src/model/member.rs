use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use uuid::Uuid;

/// An account member (spec "User (account member) object").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    /// Member id (UUID).
    pub id: Uuid,
    /// Owning account.
    pub account_id: Uuid,
    /// E-mail, unique per account, lowercase.
    pub email: String,
    /// Writable name fields; never derived from each other.
    pub full_name: Option<String>,
    /// First name.
    pub first_name: Option<String>,
    /// Last name.
    pub last_name: Option<String>,
    /// Role id; the response shows the role's display name.
    pub role_id: Option<Uuid>,
    /// External id.
    pub external_id: Option<String>,
    /// Phone.
    pub phone: Option<String>,
    /// Whether the member is in office.
    pub office_status: bool,
    /// IANA time zone name (validated against chrono-tz).
    pub time_zone: String,
    /// Working-hours windows as written; empty = available 24/7.
    pub working_hours: Vec<WorkingHours>,
    /// Out-of-office ranges as written.
    pub out_office_dates: Vec<OutOfOffice>,
    /// Active calendar configurations: provider name -> e-mail.
    pub calendars: BTreeMap<String, String>,
    /// Capacity entries: objects with free-form keys (`current_capacity`, `max_capacity`,
    /// `assignment_type`, ...).
    pub capacity: Vec<serde_json::Map<String, serde_json::Value>>,
    /// Whether the member receives notifications.
    pub can_receive_notifications: bool,
    /// Notification categories.
    pub notification_preferences: Vec<String>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last write time.
    pub updated_at: DateTime<Utc>,
    /// Archive (soft-delete) time of the membership.
    pub archived_at: Option<DateTime<Utc>>,
    /// Who archived it.
    pub archived_by: Option<String>,
    /// Optimistic-concurrency version.
    pub version: u64,
}

impl Member {
    /// Whether the membership is active.
    pub fn is_active(&self) -> bool {
        self.archived_at.is_none()
    }
}

/// One working-hours window, stored as written (spec "working_hours entry"): `days` is a day
/// name or range form, `start_date` / `end_date` are `HH:mm` in the member's time zone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkingHours {
    /// e.g. `Mon - Fri`, `saturday`.
    pub days: String,
    /// `HH:mm`, inclusive.
    pub start_date: String,
    /// `HH:mm`, exclusive; earlier than `start_date` means the window runs past midnight.
    pub end_date: String,
}

/// One out-of-office range, stored as written: ISO dates or timestamps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutOfOffice {
    /// ISO date or timestamp.
    pub start_date: String,
    /// ISO date (covers the whole day) or timestamp.
    pub end_date: String,
    /// Who recorded it, when known (from provisioning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
}
