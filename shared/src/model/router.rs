//! Routers: assignment configurations (spec "Router object"; BEHAVIOR 5), their immutable
//! revisions and their draft (BEHAVIOR 15; `docs/design.md`, "Router configuration: live,
//! draft, revisions").
//!
//! A router item holds the live configuration ([`RouterConfig`], flattened into it where
//! dispatch reads it) and the live revision's number; each publish stores a [`RouterRevision`]
//! beside it, and at most one [`RouterDraft`] is being edited.

use super::object_type::ObjectType;
use crate::model::account::Team;
use crate::model::member::Member;
use crate::trigger::Trigger;
use crate::types::email::Email;
use crate::types::ids::{AccountId, MemberId, RouterId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// A router: an assignment configuration (spec "Router object"), with its live revision
/// (BEHAVIOR 15).
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
    /// The number of the live revision (BEHAVIOR 15): 1 for a created or seeded router, one
    /// more at each publish of a draft. A router stored before revisions existed reads as 1.
    #[serde(default = "first_revision")]
    pub revision: u64,
    /// Optimistic-concurrency version of the router item: every write of it (publish,
    /// unpublish, archive) is conditional on the version read and moves it on, and an
    /// assignment commits only while the router is still at the version its run read (so
    /// while the revision it evaluated is live). 0 for a router stored before it existed.
    #[serde(default)]
    pub version: u64,
}

/// The revision number of a router's first configuration.
pub const FIRST_REVISION: u64 = 1;

fn first_revision() -> u64 {
    FIRST_REVISION
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
    /// Its live configuration's holiday calendar (BEHAVIOR 17), if any.
    pub fn holiday_calendar_id(&self) -> Option<crate::types::ids::HolidayCalendarId> {
        self.settings.as_ref().and_then(|s| s.holiday_calendar_id)
    }

    /// The reference its live configuration adds to a holiday calendar when the router is
    /// stored (none for an archived router: BEHAVIOR 17 counts non-archived routers only).
    pub fn calendar_refs(&self) -> super::holiday_calendar::CalendarRefs {
        self.calendar_refs_with(None)
    }

    /// The references the router and `draft` (its draft, if it has one) hold on holiday
    /// calendars: one for the live configuration's calendar and one for the draft's, none at
    /// all once the router is archived (BEHAVIOR 17: "the live or draft configuration of a
    /// non-archived router"). A write's change is the difference of this before and after
    /// ([`super::holiday_calendar::CalendarRefs::change`]).
    pub fn calendar_refs_with(
        &self, draft: Option<&RouterDraft>,
    ) -> super::holiday_calendar::CalendarRefs {
        let mut refs = super::holiday_calendar::CalendarRefs::none();
        if self.archived_at.is_none() {
            refs.add(self.holiday_calendar_id());
            refs.add(draft.and_then(RouterDraft::holiday_calendar_id));
        }
        refs
    }

    /// A router first created at `at`, running `config` as revision `revision`: unpublished,
    /// not archived, item version 0. What the API's create, provisioning and the size check of a
    /// configuration start from.
    pub fn created(
        id: RouterId, account_id: AccountId, object_type: ObjectType, at: DateTime<Utc>,
        config: &RouterConfig, revision: u64,
    ) -> Router {
        Router {
            id,
            account_id,
            name: String::new(),
            object_type,
            has_integration: false,
            is_published: false,
            settings: None,
            users: Vec::new(),
            teams: Vec::new(),
            created_at: at,
            updated_at: at,
            archived_at: None,
            archived_by: None,
            member_ids: Vec::new(),
            revision,
            version: 0,
        }
        .with_config(config, revision)
    }

    /// The live configuration (BEHAVIOR 15).
    pub fn config(&self) -> RouterConfig {
        RouterConfig {
            name: self.name.clone(),
            has_integration: self.has_integration,
            settings: self.settings.clone(),
            users: self.users.clone(),
            teams: self.teams.clone(),
            member_ids: self.member_ids.clone(),
        }
    }

    /// This router running `config` as its live configuration, numbered `revision`: what a
    /// publish stores, and how a draft or an earlier revision is evaluated by the one dispatch
    /// evaluation (explain of a draft, what-if replay). Identity, publication and archive state
    /// and the item's version are kept.
    pub fn with_config(&self, config: &RouterConfig, revision: u64) -> Router {
        Router {
            name: config.name.clone(),
            has_integration: config.has_integration,
            settings: config.settings.clone(),
            users: config.users.clone(),
            teams: config.teams.clone(),
            member_ids: config.member_ids.clone(),
            revision,
            ..self.clone()
        }
    }

    /// Whether the router is archived.
    pub fn is_archived(&self) -> bool {
        self.archived_at.is_some()
    }

    /// The pool's e-mails, the one pool rule of dispatch (BEHAVIOR 6 step 11), explain and
    /// stats: the router's users in order, then the members of its teams in router-team order
    /// (a name without a team adds nobody), each once. Whether a member is active is not
    /// decided here: callers keep the active ones.
    pub fn pool_emails<'a>(&'a self, teams: &'a [Team]) -> Vec<&'a Email> {
        pool_of(&self.users, &self.teams, teams)
    }

    /// The pool's active members' e-mails in pool order: [`Self::pool_emails`] less every e-mail
    /// of no active member among `members` (unknown or archived). The one active-pool rule of
    /// dispatch's candidates (BEHAVIOR 6 step 11), the stats' pool (BEHAVIOR 8) and the what-if
    /// replay's (BEHAVIOR 16).
    pub fn active_pool<'a>(&'a self, teams: &'a [Team], members: &[Member]) -> Vec<&'a Email> {
        let active: HashSet<&Email> = members
            .iter()
            .filter(|m| m.is_active())
            .map(|m| &m.email)
            .collect();
        self.pool_emails(teams)
            .into_iter()
            .filter(|email| active.contains(email))
            .collect()
    }

    /// Every e-mail a run of this router may assign to: [`Self::pool_emails`], then the backup
    /// user when not already in the pool.
    pub fn roster_emails<'a>(&'a self, teams: &'a [Team]) -> Vec<&'a Email> {
        roster_of(&self.users, &self.teams, self.settings.as_ref(), teams)
    }

    /// Each of `emails` with the member id the router resolved it to when provisioned, or the
    /// e-mail alone when it holds none.
    pub fn roster<'a>(&self, emails: &[&'a Email]) -> Vec<(&'a Email, Option<MemberId>)> {
        emails
            .iter()
            .map(|email| {
                let id = self
                    .member_ids
                    .iter()
                    .find(|m| m.email == **email)
                    .map(|m| m.id);
                (*email, id)
            })
            .collect()
    }
}

/// The pool rule of [`Router::pool_emails`] over `users` and the team names `team_names`.
fn pool_of<'a>(
    users: &'a [RouterUser], team_names: &'a [String], teams: &'a [Team],
) -> Vec<&'a Email> {
    let team_members = team_names.iter().flat_map(|name| {
        teams
            .iter()
            .filter(move |t| &t.name == name)
            .flat_map(|t| t.members.iter())
    });
    let mut pool: Vec<&Email> = Vec::new();
    for email in users.iter().map(|u| &u.email).chain(team_members) {
        if !pool.contains(&email) {
            pool.push(email);
        }
    }
    pool
}

/// The roster rule of [`Router::roster_emails`]: the pool, then the backup user.
fn roster_of<'a>(
    users: &'a [RouterUser], team_names: &'a [String], settings: Option<&'a RouterSettings>,
    teams: &'a [Team],
) -> Vec<&'a Email> {
    let mut roster = pool_of(users, team_names, teams);
    let backup = settings.and_then(|s| s.default_user.as_ref());
    if let Some(backup) = backup.filter(|b| !roster.contains(b)) {
        roster.push(backup);
    }
    roster
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
    /// The router's holiday calendar (BEHAVIOR 17): during its holidays the whole pool and an
    /// account-matched owner are unavailable for this router, and SLA minutes do not run.
    #[serde(default)]
    pub holiday_calendar_id: Option<crate::types::ids::HolidayCalendarId>,
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

/// A router's configuration (BEHAVIOR 15): `{name, has_integration, settings, users, teams}`
/// as one validator ([`crate::routers::config`]) parsed it, with the member ids its e-mails
/// resolved to. `object_type` is fixed when the router is created and is not part of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouterConfig {
    /// Display name, 1 to 256 characters.
    pub name: String,
    /// Whether an assignment is pushed to the account's CRM (BEHAVIOR 7).
    pub has_integration: bool,
    /// `None` = the router has no settings (dispatch answers `The router has no settings`).
    pub settings: Option<RouterSettings>,
    /// Rotation users in order (percentages only on percentage routers).
    pub users: Vec<RouterUser>,
    /// Rotation team names in order.
    pub teams: Vec<String>,
    /// The member id of each e-mail the configuration names (users, their teams' members, the
    /// backup user), resolved when it was validated ([`Router::member_ids`]). Internal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub member_ids: Vec<RosterMember>,
}

impl RouterConfig {
    /// Every e-mail a run of this configuration may assign to, as [`Router::roster_emails`].
    pub fn roster_emails<'a>(&'a self, teams: &'a [Team]) -> Vec<&'a Email> {
        roster_of(&self.users, &self.teams, self.settings.as_ref(), teams)
    }

    /// Whether a percentage router's counts start again when this configuration replaces
    /// `previous` (BEHAVIOR 15: the published users or their percentages changed).
    pub fn restarts_percentage_counts(&self, previous: &RouterConfig) -> bool {
        let weights = |c: &RouterConfig| -> Vec<(String, Option<u64>)> {
            c.users
                .iter()
                .map(|u| (u.email.as_str().to_string(), u.percentage.map(f64::to_bits)))
                .collect()
        };
        let percentage = self
            .settings
            .as_ref()
            .is_some_and(|s| s.distribution_model == Some(DistributionModel::Percentage));
        percentage && weights(self) != weights(previous)
    }
}

/// One immutable revision of a router (BEHAVIOR 15): the configuration a create or a publish
/// made, numbered 1, 2, ... per router. Never changed once stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouterRevision {
    /// The router.
    pub router_id: RouterId,
    /// The router's account.
    pub account_id: AccountId,
    /// The revision's number, from [`FIRST_REVISION`].
    pub revision: u64,
    /// The configuration.
    pub config: RouterConfig,
    /// When the revision was made (the create or the publish).
    pub published_at: DateTime<Utc>,
    /// Who made it: the token's `sub`, or `provisioning` for a seeded router.
    pub published_by: String,
}

/// The `published_by` of a seeded router's first revision.
pub const PROVISIONING: &str = "provisioning";

impl RouterRevision {
    /// The first revision of a seeded router (BEHAVIOR 15): its configuration as provisioned,
    /// made at its creation time by `provisioning`.
    pub fn provisioned(router: &Router) -> Self {
        Self {
            router_id: router.id,
            account_id: router.account_id,
            revision: FIRST_REVISION,
            config: router.config(),
            published_at: router.created_at,
            published_by: PROVISIONING.to_string(),
        }
    }
}

/// A router's draft (BEHAVIOR 15): a configuration being edited, which no dispatch uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouterDraft {
    /// The router.
    pub router_id: RouterId,
    /// The router's account.
    pub account_id: AccountId,
    /// The revision the draft started from: the live one when a `PUT` created it, `n` when a
    /// restore of revision `n` made it; a `PUT` that replaces a draft keeps it.
    pub based_on_revision: u64,
    /// The configuration.
    pub config: RouterConfig,
    /// When it was last written.
    pub updated_at: DateTime<Utc>,
    /// Who wrote it last (the token's `sub`).
    pub updated_by: String,
    /// Its entity tag, a new one at every write (RFC 9110 8.8.3, strong).
    pub etag: crate::types::etag::ETag,
}

impl RouterDraft {
    /// The holiday calendar its configuration names (BEHAVIOR 17), if any.
    pub fn holiday_calendar_id(&self) -> Option<crate::types::ids::HolidayCalendarId> {
        self.config
            .settings
            .as_ref()
            .and_then(|s| s.holiday_calendar_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::tests::{member, utc};
    use crate::types::ids::TeamId;

    fn email(text: &str) -> Email {
        Email::parse(text).expect("test e-mail")
    }

    #[test]
    fn the_active_pool_keeps_pool_order_and_leaves_out_unknown_and_archived_members() {
        let at = utc("2026-01-01T00:00:00Z");
        let router = Router {
            id: uuid::Uuid::nil().into(),
            account_id: uuid::Uuid::nil().into(),
            name: "R".into(),
            object_type: ObjectType::Contacts,
            has_integration: false,
            is_published: true,
            settings: None,
            users: ["c@x.example", "a@x.example", "gone@x.example"]
                .into_iter()
                .map(|e| RouterUser {
                    email: email(e),
                    percentage: None,
                })
                .collect(),
            teams: vec!["Sales".into()],
            created_at: at,
            updated_at: at,
            archived_at: None,
            archived_by: None,
            member_ids: Vec::new(),
            revision: FIRST_REVISION,
            version: 0,
        };
        let teams = [Team {
            id: TeamId::from(uuid::Uuid::nil()),
            account_id: uuid::Uuid::nil().into(),
            name: "Sales".into(),
            members: vec![
                email("b@x.example"),
                email("a@x.example"),
                email("d@x.example"),
            ],
            created_at: at,
        }];
        let with = |address: &str, archived: bool| Member {
            email: email(address),
            archived_at: archived.then_some(at),
            ..member("UTC", Vec::new(), Vec::new())
        };
        let members = [
            with("a@x.example", false),
            with("b@x.example", false),
            with("c@x.example", false),
            // Archived, and provisioned again under the same address: the active one counts.
            with("d@x.example", true),
            with("d@x.example", false),
            with("archived@x.example", true),
        ];
        assert_eq!(
            router.active_pool(&teams, &members),
            ["c@x.example", "a@x.example", "b@x.example", "d@x.example"]
        );
        // Archived in the last copy read: out.
        assert_eq!(
            router.active_pool(&teams, &members[..4]),
            ["c@x.example", "a@x.example", "b@x.example"]
        );
    }
}
