//! The router object of the spec (spec "Router object"; BEHAVIOR 5).

use crate::model::object_type::ObjectType;
use crate::model::router::{
    DistributionModel, RotationType, Router, RouterConfig, RouterDraft, RouterRevision,
    RouterSettings,
};
use crate::model::sla::SlaSettingView;
use crate::timefmt::{Archived, Timestamp};
use crate::trigger::grammar::Trigger;
use crate::types::ids::RouterId;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// A router as the API shows it: flat `settings` (every key present, `null` when unset;
/// `trigger` and `sla` the only object values; `settings: null` for a router without settings),
/// `users: [{email}]`, `teams: [{name}]`. Weights and rotation state are internal and never shown.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = Router)]
pub struct RouterView {
    /// Router id.
    pub id: RouterId,
    /// Display name.
    pub name: String,
    /// The record type it assigns.
    pub object_type: ObjectType,
    /// Whether assignments are pushed to the account's CRM (BEHAVIOR 7).
    pub has_integration: bool,
    /// Unpublished routers do not dispatch.
    pub is_published: bool,
    /// The number of the live revision, the one dispatch runs (BEHAVIOR 15).
    pub revision: u64,
    /// `false` while active, the archive time once archived.
    #[schema(value_type = crate::timefmt::Archived)]
    pub archived: Archived,
    /// Who archived it; only on archived routers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived_by: Option<String>,
    /// Creation time.
    #[schema(value_type = crate::timefmt::Timestamp)]
    pub created_at: Timestamp,
    /// Last write time.
    #[schema(value_type = crate::timefmt::Timestamp)]
    pub updated_at: Timestamp,
    /// The flattened configuration; `null` for a router without settings.
    pub settings: Option<RouterSettingsView>,
    /// Rotation users, e-mail only.
    pub users: Vec<RouterUserView>,
    /// Rotation teams, name only.
    pub teams: Vec<RouterTeamView>,
}

/// The `settings` object of a router (spec "settings keys").
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = RouterSettings)]
pub struct RouterSettingsView {
    /// Whether an existing owner may be replaced.
    pub overwrite: bool,
    /// Internal name of the owner field.
    pub owner_field: Option<String>,
    /// `round robin` or `percentage`.
    pub distribution_model: Option<DistributionModel>,
    /// Backup user e-mail.
    pub default_user: Option<String>,
    /// Whether the backup user is disabled.
    pub disable_default_assignment: bool,
    /// Whether working hours are ignored for availability.
    pub ignore_working_hours: bool,
    /// Whether contacts go to the owner of their e-mail domain's company.
    pub account_matching: bool,
    /// `users` or `teams`.
    pub rotation_type: RotationType,
    /// The trigger (BEHAVIOR 5); `null` matches every record.
    pub trigger: Option<Trigger>,
    /// The SLA (BEHAVIOR 14): a record its owner does not work within `minutes` goes to the
    /// next eligible member; `null` when unset.
    pub sla: Option<SlaSettingView>,
    /// The router's holiday calendar (BEHAVIOR 17); `null` when unset.
    #[schema(value_type = Option<String>, format = Uuid)]
    pub holiday_calendar_id: Option<crate::types::ids::HolidayCalendarId>,
}

/// A rotation user of a router: e-mail only.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = RouterUser)]
pub struct RouterUserView {
    /// Member e-mail.
    #[schema(format = Email)]
    pub email: String,
}

/// A rotation team of a router: name only.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = RouterTeam)]
pub struct RouterTeamView {
    /// Team name.
    pub name: String,
}

impl RouterSettingsView {
    /// The view of `s`.
    pub fn new(s: &RouterSettings) -> Self {
        Self {
            overwrite: s.overwrite,
            owner_field: s.owner_field.clone(),
            distribution_model: s.distribution_model,
            default_user: s.default_user.as_ref().map(|e| e.as_str().to_string()),
            disable_default_assignment: s.disable_default_assignment,
            ignore_working_hours: s.ignore_working_hours,
            account_matching: s.account_matching,
            rotation_type: s.rotation_type,
            trigger: s.trigger.clone(),
            sla: s.sla.as_ref().map(SlaSettingView::new),
            holiday_calendar_id: s.holiday_calendar_id,
        }
    }
}

impl RouterView {
    /// The view of `router`.
    pub fn new(router: &Router) -> Self {
        Self {
            id: router.id,
            name: router.name.clone(),
            object_type: router.object_type,
            has_integration: router.has_integration,
            is_published: router.is_published,
            revision: router.revision,
            archived: Archived(router.archived_at),
            archived_by: router.archived_at.and(router.archived_by.clone()),
            created_at: Timestamp(router.created_at),
            updated_at: Timestamp(router.updated_at),
            settings: router.settings.as_ref().map(RouterSettingsView::new),
            users: router
                .users
                .iter()
                .map(|u| RouterUserView {
                    email: u.email.as_str().to_string(),
                })
                .collect(),
            teams: router
                .teams
                .iter()
                .map(|t| RouterTeamView { name: t.clone() })
                .collect(),
        }
    }
}

/// A router's configuration as the API shows it (BEHAVIOR 15: `{name, has_integration,
/// settings, users: [{email, percentage}], teams: [{name}]}`), the shape an audit event compares
/// (BEHAVIOR 18).
pub fn config_json(config: &RouterConfig) -> Value {
    serde_json::json!({
        "name": config.name,
        "has_integration": config.has_integration,
        "settings": config.settings.as_ref().map(RouterSettingsView::new),
        "users": WeightedUserView::all(config),
        "teams": team_views(config),
    })
}

/// A router's live configuration ([`config_json`]) with `is_published` and `archived` (`false`
/// or the archive time): the shape an audit event of a publish, an unpublish or an archive
/// compares (BEHAVIOR 18).
pub fn router_json(router: &Router) -> Value {
    let mut value = config_json(&router.config());
    if let Some(object) = value.as_object_mut() {
        object.insert("is_published".into(), Value::Bool(router.is_published));
        object.insert(
            "archived".into(),
            serde_json::to_value(Archived(router.archived_at)).unwrap_or(Value::Null),
        );
    }
    value
}

/// A rotation user of a draft or a revision: e-mail and weight (BEHAVIOR 15).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = RouterConfigUser)]
pub struct WeightedUserView {
    /// Member e-mail.
    #[schema(format = Email)]
    pub email: String,
    /// Percentage weight (0 to 100) on a percentage router; `null` on other routers.
    pub percentage: Option<f64>,
}

impl WeightedUserView {
    /// The views of `config`'s users.
    pub fn all(config: &RouterConfig) -> Vec<Self> {
        config
            .users
            .iter()
            .map(|u| Self {
                email: u.email.as_str().to_string(),
                percentage: u.percentage,
            })
            .collect()
    }
}

fn team_views(config: &RouterConfig) -> Vec<RouterTeamView> {
    config
        .teams
        .iter()
        .map(|t| RouterTeamView { name: t.clone() })
        .collect()
}

/// A router's draft as the API shows it (BEHAVIOR 15); its entity tag travels in the `ETag`
/// header.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = RouterDraft)]
pub struct DraftView {
    /// The router.
    pub router_id: RouterId,
    /// The revision the draft started from.
    pub based_on_revision: u64,
    /// Display name.
    pub name: String,
    /// The router's record type (fixed at creation).
    pub object_type: ObjectType,
    /// Whether assignments are pushed to the account's CRM.
    pub has_integration: bool,
    /// The flattened configuration; `null` for no settings.
    pub settings: Option<RouterSettingsView>,
    /// Rotation users with their weights.
    pub users: Vec<WeightedUserView>,
    /// Rotation teams.
    pub teams: Vec<RouterTeamView>,
    /// When the draft was last written.
    #[schema(value_type = crate::timefmt::Timestamp)]
    pub updated_at: Timestamp,
    /// Who wrote it last (the token's `sub`).
    pub updated_by: String,
}

impl DraftView {
    /// The view of `draft` of a router of `object_type`.
    pub fn new(draft: &RouterDraft, object_type: ObjectType) -> Self {
        Self {
            router_id: draft.router_id,
            based_on_revision: draft.based_on_revision,
            name: draft.config.name.clone(),
            object_type,
            has_integration: draft.config.has_integration,
            settings: draft.config.settings.as_ref().map(RouterSettingsView::new),
            users: WeightedUserView::all(&draft.config),
            teams: team_views(&draft.config),
            updated_at: Timestamp(draft.updated_at),
            updated_by: draft.updated_by.clone(),
        }
    }
}

/// One revision of a router as the API shows it (BEHAVIOR 15).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = RouterRevision)]
pub struct RevisionView {
    /// The revision's number (1, 2, ...).
    pub revision: u64,
    /// Display name.
    pub name: String,
    /// Whether assignments are pushed to the account's CRM.
    pub has_integration: bool,
    /// The flattened configuration; `null` for no settings.
    pub settings: Option<RouterSettingsView>,
    /// Rotation users with their weights.
    pub users: Vec<WeightedUserView>,
    /// Rotation teams.
    pub teams: Vec<RouterTeamView>,
    /// When the revision was made (the create or the publish).
    #[schema(value_type = crate::timefmt::Timestamp)]
    pub published_at: Timestamp,
    /// Who made it: the token's `sub`, `provisioning` for a seeded router.
    pub published_by: String,
}

impl RevisionView {
    /// The view of `revision`.
    pub fn new(revision: &RouterRevision) -> Self {
        Self {
            revision: revision.revision,
            name: revision.config.name.clone(),
            has_integration: revision.config.has_integration,
            settings: revision
                .config
                .settings
                .as_ref()
                .map(RouterSettingsView::new),
            users: WeightedUserView::all(&revision.config),
            teams: team_views(&revision.config),
            published_at: Timestamp(revision.published_at),
            published_by: revision.published_by.clone(),
        }
    }
}
