//! The shape of a seed file (`docs/seed-format.md`), read by serde: unknown keys in the
//! structural part are refused (a typo would otherwise silently drop a setting); free-form places
//! (record `fields`, `capacity` entries, `calendars`) stay free.

use crate::auth::scope::Scope;
use crate::fields::definition::{EnumOption, FieldType};
use crate::model::object_type::ObjectType;
use crate::routers::config::{SettingsBody, TeamBody, UserBody};
use crate::schedule::holidays::HolidayText;
use crate::schedule::out_of_office::OutOfOfficeText;
use crate::schedule::working_hours::WorkingHoursText;
use crate::types::ids::{
    AccountId, HolidayCalendarId, MemberId, RecordId, RoleId, RouterId, TeamId,
};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedFile {
    pub(super) accounts: Vec<SeedAccount>,
}

pub(super) fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedAccount {
    pub(super) id: AccountId,
    pub(super) name: String,
    #[serde(default = "yes")]
    pub(super) active: bool,
    #[serde(default)]
    pub(super) assignment_quota: Option<u64>,
    #[serde(default)]
    pub(super) clients: Vec<SeedClient>,
    #[serde(default)]
    pub(super) roles: Vec<SeedRole>,
    #[serde(default)]
    pub(super) users: Vec<SeedUser>,
    #[serde(default)]
    pub(super) teams: Vec<SeedTeam>,
    #[serde(default)]
    pub(super) fields: BTreeMap<String, Vec<SeedField>>,
    #[serde(default)]
    pub(super) crm: Option<SeedCrm>,
    #[serde(default)]
    pub(super) holiday_calendars: Vec<SeedHolidayCalendar>,
    #[serde(default)]
    pub(super) routers: Vec<SeedRouter>,
    #[serde(default)]
    pub(super) records: BTreeMap<String, Vec<SeedRecord>>,
}

/// A holiday calendar of the seed (BEHAVIOR 17).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedHolidayCalendar {
    pub(super) id: HolidayCalendarId,
    pub(super) name: String,
    pub(super) time_zone: String,
    #[serde(default)]
    pub(super) holidays: Vec<HolidayText>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedClient {
    pub(super) client_id: String,
    pub(super) client_secret: String,
    pub(super) scopes: Vec<Scope>,
    /// BEHAVIOR 1: a disabled client authenticates no more and its tokens are refused.
    #[serde(default)]
    pub(super) disabled: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedRole {
    pub(super) id: RoleId,
    pub(super) name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedUser {
    pub(super) id: MemberId,
    pub(super) email: String,
    #[serde(default)]
    pub(super) first_name: Option<String>,
    #[serde(default)]
    pub(super) last_name: Option<String>,
    #[serde(default)]
    pub(super) full_name: Option<String>,
    #[serde(default)]
    pub(super) role_id: Option<RoleId>,
    #[serde(default)]
    pub(super) external_id: Option<String>,
    #[serde(default)]
    pub(super) phone: Option<String>,
    #[serde(default = "yes")]
    pub(super) office_status: bool,
    #[serde(default)]
    pub(super) time_zone: Option<String>,
    #[serde(default)]
    pub(super) working_hours: Vec<WorkingHoursText>,
    #[serde(default)]
    pub(super) out_office_dates: Vec<OutOfOfficeText>,
    #[serde(default)]
    pub(super) calendars: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) holiday_calendar_id: Option<HolidayCalendarId>,
    #[serde(default)]
    pub(super) capacity: Vec<Map<String, Value>>,
    #[serde(default)]
    pub(super) can_receive_notifications: bool,
    #[serde(default)]
    pub(super) notification_preferences: Vec<Value>,
    #[serde(default)]
    pub(super) archived: Archived,
    #[serde(default)]
    pub(super) archived_by: Option<String>,
}

/// `false` or an RFC 3339 timestamp.
#[derive(Default)]
pub(super) struct Archived(pub(super) Option<DateTime<Utc>>);

impl<'de> Deserialize<'de> for Archived {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Bool(false) | Value::Null => Ok(Archived(None)),
            Value::String(s) => DateTime::parse_from_rfc3339(&s)
                .map(|t| Archived(Some(t.with_timezone(&Utc))))
                .map_err(|_| {
                    serde::de::Error::custom(format!(
                        "expected false or an RFC 3339 timestamp, got \"{s}\""
                    ))
                }),
            other => Err(serde::de::Error::custom(format!(
                "expected false or an RFC 3339 timestamp, got {other}"
            ))),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedTeam {
    pub(super) id: TeamId,
    pub(super) name: String,
    #[serde(default)]
    pub(super) members: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedField {
    pub(super) internal_name: String,
    pub(super) name: String,
    pub(super) field_type_id: FieldType,
    #[serde(default)]
    pub(super) options: Vec<EnumOption>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedCrm {
    pub(super) provider: String,
    pub(super) base_url: String,
    /// A private app's token; exactly one of this and `oauth` (HubSpot).
    #[serde(default)]
    pub(super) access_token: Option<String>,
    /// An OAuth app's credentials (BEHAVIOR 7 "OAuth apps"; Salesforce's External Client App).
    #[serde(default)]
    pub(super) oauth: Option<SeedOAuth>,
    /// HubSpot: the id property per object type (BEHAVIOR 7 "Object ids").
    #[serde(default)]
    pub(super) id_properties: Option<BTreeMap<String, String>>,
    /// HubSpot: requests per second per account, 1 to 10.
    #[serde(default)]
    pub(super) max_requests_per_second: Option<Value>,
    /// Salesforce: the REST API version, `NN.N`.
    #[serde(default)]
    pub(super) api_version: Option<Value>,
    /// Salesforce: the sObject per record type (`contacts`: `Contact` or `Lead`).
    #[serde(default)]
    pub(super) objects: Option<BTreeMap<String, Value>>,
    /// Salesforce: the share of the org's daily API requests at or above which syncs wait.
    #[serde(default)]
    pub(super) max_api_share: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedOAuth {
    pub(super) client_id: String,
    pub(super) client_secret: String,
    #[serde(default)]
    pub(super) refresh_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedRouter {
    pub(super) id: RouterId,
    pub(super) name: String,
    pub(super) object_type: ObjectType,
    #[serde(default)]
    pub(super) is_published: bool,
    #[serde(default)]
    pub(super) has_integration: bool,
    #[serde(default)]
    pub(super) archived: Archived,
    #[serde(default)]
    pub(super) archived_by: Option<String>,
    #[serde(default)]
    pub(super) settings: Option<SettingsBody>,
    #[serde(default)]
    pub(super) users: Vec<UserBody>,
    #[serde(default)]
    pub(super) teams: Vec<TeamBody>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedRecord {
    pub(super) id: RecordId,
    pub(super) fields: Map<String, Value>,
}
