//! Account members (spec "User (account member) object").

use crate::schedule::out_of_office::OutOfOffice;
use crate::schedule::working_hours::WorkingHours;
use crate::schedule::zone::IanaTimeZone;
use crate::types::capacity::CapacityEntry;
use crate::types::email::Email;
use crate::types::ids::{AccountId, HolidayCalendarId, MemberId, RoleId};
use crate::types::notification_preferences::NotificationPreferences;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An account member (spec "User (account member) object"). Every field holds a parsed value:
/// a member read from the store is as valid as one just written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    /// Member id (UUID).
    pub id: MemberId,
    /// Owning account.
    pub account_id: AccountId,
    /// E-mail, unique per account, lowercase.
    pub email: Email,
    /// Writable name fields; never derived from each other.
    pub full_name: Option<String>,
    /// First name.
    pub first_name: Option<String>,
    /// Last name.
    pub last_name: Option<String>,
    /// Role id; the response shows the role's display name.
    pub role_id: Option<RoleId>,
    /// External id (the CRM owner id, BEHAVIOR 7).
    pub external_id: Option<String>,
    /// Phone.
    pub phone: Option<String>,
    /// Whether the member is in office.
    pub office_status: bool,
    /// IANA time zone.
    pub time_zone: IanaTimeZone,
    /// Working-hours windows, read back as written; empty = available 24/7.
    pub working_hours: Vec<WorkingHours>,
    /// Out-of-office ranges, read back as written.
    pub out_office_dates: Vec<OutOfOffice>,
    /// Active calendar configurations: provider name -> e-mail.
    pub calendars: BTreeMap<String, String>,
    /// The member's holiday calendar (BEHAVIOR 17): during its holidays the member is
    /// unavailable. `None` (the default, and for members stored before calendars existed).
    #[serde(default)]
    pub holiday_calendar_id: Option<HolidayCalendarId>,
    /// Capacity entries: objects with free-form keys (`current_capacity`, `max_capacity`,
    /// `assignment_type`, ...).
    pub capacity: Vec<CapacityEntry>,
    /// Whether the member receives notifications.
    pub can_receive_notifications: bool,
    /// Notification categories.
    pub notification_preferences: NotificationPreferences,
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

/// Who a member is, as a router configuration names members: the id, the
/// e-mail and whether the membership is active. None of the three changes once the member is
/// provisioned (e-mails are read-only; only provisioning creates and archives members), so the
/// item that finds a member by e-mail holds them and a configuration is checked in one batched
/// read by key ([`crate::store::MemberStore::identify_members`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberIdentity {
    /// Member id.
    pub id: MemberId,
    /// Owning account.
    pub account_id: AccountId,
    /// E-mail (canonical form).
    pub email: Email,
    /// Whether the membership is active.
    pub active: bool,
}

impl From<&Member> for MemberIdentity {
    fn from(m: &Member) -> Self {
        Self {
            id: m.id,
            account_id: m.account_id,
            email: m.email.clone(),
            active: m.is_active(),
        }
    }
}

/// What a name of a member ([`MemberRef`]) and a configuration's check match against: a whole
/// [`Member`] or its [`MemberIdentity`].
pub trait Membership {
    /// The member's id.
    fn member_id(&self) -> MemberId;
    /// The member's e-mail.
    fn member_email(&self) -> &Email;
    /// Whether the membership is active.
    fn is_active_member(&self) -> bool;
}

impl Membership for Member {
    fn member_id(&self) -> MemberId {
        self.id
    }
    fn member_email(&self) -> &Email {
        &self.email
    }
    fn is_active_member(&self) -> bool {
        self.is_active()
    }
}

impl Membership for MemberIdentity {
    fn member_id(&self) -> MemberId {
        self.id
    }
    fn member_email(&self) -> &Email {
        &self.email
    }
    fn is_active_member(&self) -> bool {
        self.active
    }
}

/// How an input names a member (a `user` field's value, an SLA's worked value): by id (a UUID in
/// any of its text forms) or by e-mail (parsed to its canonical form, A-label domain, as members
/// are stored). Anything else names nobody.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberRef {
    /// A member id.
    Id(MemberId),
    /// A member e-mail.
    Email(Email),
    /// Neither an id nor an e-mail.
    Nobody,
}

impl MemberRef {
    /// Reads `given` as a member id, else as an e-mail; [`MemberRef::Nobody`] otherwise.
    pub fn parse(given: &str) -> Self {
        if let Some(id) = MemberId::try_parse(given) {
            return Self::Id(id);
        }
        Email::parse(given).map_or(Self::Nobody, Self::Email)
    }

    /// Whether `member` is the member named.
    pub fn names<M: Membership>(&self, member: &M) -> bool {
        match self {
            Self::Id(id) => member.member_id() == *id,
            Self::Email(email) => member.member_email() == email,
            Self::Nobody => false,
        }
    }

    /// The active member of `members` named, if any.
    pub fn find_active<'m, M: Membership>(&self, members: &'m [M]) -> Option<&'m M> {
        members
            .iter()
            .find(|m| m.is_active_member() && self.names(*m))
    }
}
