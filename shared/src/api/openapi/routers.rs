//! The schemas of router management bodies and headers (BEHAVIOR 15). The handlers read the
//! bodies with [`crate::routers::RouterAdmin`] (the one configuration validator,
//! [`crate::routers::config`]); these types only describe them.

use crate::model::object_type::ObjectType;
use crate::routers::view::{RouterSettingsView, RouterTeamView, WeightedUserView};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// `POST /routers` body: a configuration and the record type (fixed from then on).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct RouterCreate {
    /// Display name, 1 to 256 characters.
    #[schema(min_length = 1, max_length = 256)]
    name: String,
    /// The record type it assigns.
    object_type: ObjectType,
    /// Whether assignments are pushed to the account's CRM (default false).
    has_integration: Option<bool>,
    /// The settings (section 5's keys, each optional); `null`: no settings.
    settings: Option<RouterSettingsView>,
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
#[allow(dead_code)]
pub struct RouterDraftBody {
    /// Display name, 1 to 256 characters.
    #[schema(min_length = 1, max_length = 256)]
    name: String,
    /// The router's record type, when sent.
    object_type: Option<ObjectType>,
    /// Whether assignments are pushed to the account's CRM (default false).
    has_integration: Option<bool>,
    /// The settings; `null`: no settings.
    settings: Option<RouterSettingsView>,
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
    #[param(
        pattern = r#"^(\*|(W/)?"[!#-~]*"(, ?(W/)?"[!#-~]*")*)$"#,
        example = "\"3f2a6c0e9b8d4e51a7c2d9f0b1e4a6c8\""
    )]
    pub if_match: Option<String>,
}
