//! The schemas of router management bodies and headers (BEHAVIOR 15). The handlers read the
//! bodies with [`crate::routers::RouterAdmin`] (the one configuration validator,
//! [`crate::routers::config`]); these types only describe them.

use crate::model::object_type::ObjectType;
use crate::model::router::{DistributionModel, RotationType};
use crate::routers::view::{RouterTeamView, WeightedUserView};
use crate::trigger::grammar::Trigger;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// `POST /routers` body: a configuration and the record type (fixed from then on).
#[derive(ToSchema)]
#[schema(example = json!({
    "name": "Web leads",
    "object_type": "contacts",
    "has_integration": false,
    "settings": {"owner_field": "contact_owner", "distribution_model": "round robin", "ignore_working_hours": true},
    "users": [{"email": "ben.okafor@northwind.example"}, {"email": "chen.wei@northwind.example"}],
    "teams": []
}))]
#[allow(dead_code)]
pub struct RouterCreate {
    /// Display name, 1 to 256 characters.
    #[schema(min_length = 1, max_length = 256)]
    name: String,
    /// The record type it assigns.
    object_type: ObjectType,
    /// Whether assignments are pushed to the account's CRM (default false).
    has_integration: Option<bool>,
    /// The settings (section 5's keys, each optional); `null`: no settings. Required.
    #[schema(required = true)]
    settings: Option<RouterSettingsWrite>,
    /// Rotation users (members' e-mails), at most 500; `percentage` 0 to 100 on percentage
    /// routers only, on every user, summing to 100.
    #[schema(max_items = 500)]
    users: Vec<WeightedUserView>,
    /// Rotation teams (names of the account's teams), at most 50.
    #[schema(max_items = 50)]
    teams: Vec<RouterTeamView>,
}

/// `PUT /routers/{routerId}/draft` body: a whole configuration. `object_type` may be sent and
/// must be the router's.
#[derive(ToSchema)]
#[schema(example = json!({
    "name": "Inbound leads (EMEA first)",
    "settings": {
        "overwrite": false,
        "owner_field": "contact_owner",
        "distribution_model": "round robin",
        "default_user": "chen.wei@northwind.example",
        "ignore_working_hours": true,
        "trigger": {"groups": [{"conditions": [{"field": "region", "operator": "equals", "value": "EMEA"}]}]}
    },
    "users": [{"email": "ana.lopez@northwind.example"}, {"email": "ben.okafor@northwind.example"}],
    "teams": [{"name": "Inbound"}]
}))]
#[allow(dead_code)]
pub struct RouterDraftBody {
    /// Display name, 1 to 256 characters.
    #[schema(min_length = 1, max_length = 256)]
    name: String,
    /// The router's record type, when sent.
    object_type: Option<ObjectType>,
    /// Whether assignments are pushed to the account's CRM (default false).
    has_integration: Option<bool>,
    /// The settings; `null`: no settings. Required.
    #[schema(required = true)]
    settings: Option<RouterSettingsWrite>,
    /// Rotation users, as on create.
    #[schema(max_items = 500)]
    users: Vec<WeightedUserView>,
    /// Rotation teams, as on create.
    #[schema(max_items = 50)]
    teams: Vec<RouterTeamView>,
}

/// The `If-Match` request header of the draft's writes (BEHAVIOR 15; RFC 9110 13.1.1).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Header)]
pub struct IfMatchParams {
    /// The draft's `ETag` as last read (or `*`). Optional on `PUT`, `DELETE` and restore (when
    /// sent and not the draft's current tag, or without a draft: 412); required by a publish of
    /// a draft (428 without it).
    #[serde(rename = "If-Match")]
    #[param(nullable = false, example = "\"3f2a6c0e9b8d4e51a7c2d9f0b1e4a6c8\"")]
    pub if_match: Option<String>,
}

/// The `settings` of a create or a draft: every key may be left out (its default: off, none,
/// `users` rotation; BEHAVIOR 5). `owner_field` and `distribution_model` are needed for the
/// router to assign.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct RouterSettingsWrite {
    /// Whether an existing owner may be replaced (default false).
    overwrite: Option<bool>,
    /// Internal name of a `user` field of the router's type, e.g. `contact_owner`.
    owner_field: Option<String>,
    /// `round robin` or `percentage`.
    distribution_model: Option<DistributionModel>,
    /// E-mail of a member of the account: the backup user.
    #[schema(format = Email)]
    default_user: Option<String>,
    /// Whether the backup user is disabled (default false).
    disable_default_assignment: Option<bool>,
    /// Whether working hours are ignored (default false).
    ignore_working_hours: Option<bool>,
    /// Whether contacts go to the owner of their e-mail domain's company (default false).
    account_matching: Option<bool>,
    /// `users` (default) or `teams`.
    rotation_type: Option<RotationType>,
    /// The trigger (BEHAVIOR 5); `null` matches every record.
    trigger: Option<Trigger>,
    /// The SLA (BEHAVIOR 14): `{minutes, worked_field, worked_values}`; `null`: none.
    #[schema(value_type = Option<Object>)]
    sla: Option<serde_json::Value>,
    /// The id of a holiday calendar of the account (BEHAVIOR 17); `null`: none. During its
    /// holidays the router's pool is unavailable and its SLA minutes do not run.
    #[schema(format = Uuid, nullable)]
    holiday_calendar_id: Option<String>,
}
