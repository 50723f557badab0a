//! Routers: assignment configurations (spec "Router object"; BEHAVIOR 5).

use super::object_type::ObjectType;
use crate::trigger::Trigger;
use crate::types::email::Email;
use crate::types::ids::{AccountId, RouterId};
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
