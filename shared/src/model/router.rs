//! Routers: assignment configurations (spec "Router object"; BEHAVIOR 5).

use super::object_type::ObjectType;
use crate::model::account::Team;
use crate::trigger::Trigger;
use crate::types::email::Email;
use crate::types::ids::{AccountId, MemberId, RouterId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A router: an assignment configuration (spec "Router object"). Read-only through the API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Router {
    /// Router id (UUID), unique across the store.
    pub id: RouterId,
    /// Owning account.
    pub account_id: AccountId,
    /// Display name.
    pub name: String,
    /// The record type it assigns.
    pub object_type: ObjectType,
    /// Whether an assignment is pushed to the account's CRM.
    pub has_integration: bool,
    /// Unpublished routers do not dispatch.
    pub is_published: bool,
    /// `None` = the router has no settings (BEHAVIOR 5).
    pub settings: Option<RouterSettings>,
    /// Rotation users in order, with percentage weights for percentage routers.
    pub users: Vec<RouterUser>,
    /// Rotation team names in order.
    pub teams: Vec<String>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last write time.
    pub updated_at: DateTime<Utc>,
    /// Archive time.
    pub archived_at: Option<DateTime<Utc>>,
    /// Who archived it.
    pub archived_by: Option<String>,
    /// The member id of each e-mail the router names (its users, its teams' members, its
    /// backup user), resolved when it was provisioned, so that dispatch and stats read the
    /// pool by key ([`Self::roster`]). Internal, never in responses. Empty for a router stored
    /// before it existed: its e-mails are then looked up by address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub member_ids: Vec<RosterMember>,
}

/// An e-mail a router names and the member id it was resolved to when provisioned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RosterMember {
    /// The member's e-mail.
    pub email: Email,
    /// The member's id.
    pub id: MemberId,
}

impl Router {
    /// The pool's e-mails, the one pool rule of dispatch (BEHAVIOR 6 step 11), explain and
    /// stats: the router's users in order, then the members of its teams in router-team order
    /// (a name without a team adds nobody), each once. Whether a member is active is not
    /// decided here: callers keep the active ones.
    pub fn pool_emails<'a>(&'a self, teams: &'a [Team]) -> Vec<&'a str> {
        let team_members = self.teams.iter().flat_map(|name| {
            teams
                .iter()
                .filter(move |t| &t.name == name)
                .flat_map(|t| t.members.iter().map(Email::as_str))
        });
        let mut pool: Vec<&str> = Vec::new();
        for email in self
            .users
            .iter()
            .map(|u| u.email.as_str())
            .chain(team_members)
        {
            if !pool.contains(&email) {
                pool.push(email);
            }
        }
        pool
    }

    /// Every e-mail a run of this router may assign to: [`Self::pool_emails`], then the backup
    /// user when not already in the pool.
    pub fn roster_emails<'a>(&'a self, teams: &'a [Team]) -> Vec<&'a str> {
        let mut roster = self.pool_emails(teams);
        let backup = self
            .settings
            .as_ref()
            .and_then(|s| s.default_user.as_ref())
            .map(Email::as_str);
        if let Some(backup) = backup.filter(|b| !roster.contains(b)) {
            roster.push(backup);
        }
        roster
    }

    /// Each of `emails` with the member id the router resolved it to when provisioned, or the
    /// e-mail alone when it holds none.
    pub fn roster<'a>(&self, emails: &[&'a str]) -> Vec<(&'a str, Option<MemberId>)> {
        emails
            .iter()
            .map(|email| {
                let id = self
                    .member_ids
                    .iter()
                    .find(|m| m.email.as_str() == *email)
                    .map(|m| m.id);
                (*email, id)
            })
            .collect()
    }
}

/// A rotation user of a router.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouterUser {
    /// Member e-mail.
    pub email: Email,
    /// Percentage weight (0..=100) for `percentage` routers; internal, never in responses.
    pub percentage: Option<f64>,
}

/// Router settings (spec "settings keys", defaults per BEHAVIOR 5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouterSettings {
    /// Whether an existing owner may be replaced.
    pub overwrite: bool,
    /// Internal name of the owner field; required to assign.
    pub owner_field: Option<String>,
    /// Required to assign.
    pub distribution_model: Option<DistributionModel>,
    /// Backup user e-mail.
    pub default_user: Option<Email>,
    /// Whether the backup user is disabled.
    pub disable_default_assignment: bool,
    /// Whether working hours are ignored for availability.
    pub ignore_working_hours: bool,
    /// Whether contacts go to the owner of their e-mail domain's company.
    pub account_matching: bool,
    /// `users` (default) or `teams`.
    pub rotation_type: RotationType,
    /// The trigger; `None` matches every record.
    pub trigger: Option<Trigger>,
    /// The SLA (BEHAVIOR 14); `None`: assignments start no check.
    #[serde(default)]
    pub sla: Option<super::sla::SlaSetting>,
}

/// `round robin` or `percentage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub enum DistributionModel {
    /// Rotate in pool order.
    #[serde(rename = "round robin")]
    RoundRobin,
    /// Weighted by the router users' percentages.
    #[serde(rename = "percentage")]
    Percentage,
}

/// How the rotation walks the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RotationType {
    /// Across the flat pool of users and team members.
    #[default]
    Users,
    /// Team by team, round robin inside each.
    Teams,
}
