//! The one validator of router configurations (BEHAVIOR 15; `docs/design.md`, "Router
//! configuration: live, draft, revisions"): the API's create, draft and restore and the
//! provisioning loader (`docs/seed-format.md`) all turn a configuration body into the parsed
//! [`RouterConfig`] here, so a rule exists once.
//!
//! [`ConfigBody`] is the configuration's JSON shape (`{name, has_integration, settings, users,
//! teams}`, read by serde with unknown keys refused); [`parse`] checks it against the account
//! ([`Account`]: its members, teams and the router type's field catalogue) and answers the
//! first problem with its JSON path relative to the configuration, e.g.
//! `settings.trigger.groups[0].conditions[0].operator` ([`ConfigError`]). The seed loader
//! prefixes the router's own path (`accounts[0].routers[1].`); the API answers 400 with the
//! path in `field`.

use crate::fields::catalogue::Catalogue;
use crate::fields::definition::FieldType;
use crate::idempotency::{
    Fingerprint, IdempotencyClaim, IdempotencyCompletion, IdempotencyKey, StoredResponse,
};
use crate::model::account::Team;
use crate::model::member::{Member, MemberRef, Membership};
use crate::model::object_type::ObjectType;
use crate::model::router::{
    DistributionModel, RosterMember, RotationType, RouterConfig, RouterSettings, RouterUser,
};
use crate::model::router::{Router, RouterDraft, RouterRevision};
use crate::routers::view::{DraftView, RouterView};
use crate::sla::parse_setting;
use crate::store::size;
use crate::trigger::grammar::Trigger;
use crate::types::email::Email;
use crate::types::etag::ETag;
use crate::types::ids::HolidayCalendarId;
use crate::types::ids::{AccountId, MemberId, RouterId};
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

/// Longest router `name`, in characters (BEHAVIOR 15).
pub const MAX_NAME_CHARS: usize = 256;
/// Most `users` of a router (BEHAVIOR 15).
pub const MAX_USERS: usize = 500;
/// Most `teams` of a router (BEHAVIOR 15).
pub const MAX_TEAMS: usize = 50;

/// A router configuration as sent or provisioned, before it is checked against the account.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigBody {
    /// Display name.
    pub name: String,
    /// Whether assignments are pushed to the account's CRM (default false).
    #[serde(default)]
    pub has_integration: bool,
    /// `null` (or absent) = no settings.
    #[serde(default)]
    pub settings: Option<SettingsBody>,
    /// Rotation users `[{email, percentage?}]`.
    #[serde(default)]
    pub users: Vec<UserBody>,
    /// Rotation teams `[{name}]`.
    #[serde(default)]
    pub teams: Vec<TeamBody>,
}

/// The `settings` object as sent: every key may be left out (its default: off, none, `users`
/// rotation; BEHAVIOR 5), and `null` reads as the default for the optional ones.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SettingsBody {
    /// Whether an existing owner may be replaced.
    pub overwrite: bool,
    /// Internal name of a `user` field of the router's type.
    pub owner_field: Option<String>,
    /// `round robin` or `percentage`.
    pub distribution_model: Option<DistributionModel>,
    /// E-mail of a member of the account.
    pub default_user: Option<String>,
    /// Whether the backup user is disabled.
    pub disable_default_assignment: bool,
    /// Whether working hours are ignored.
    pub ignore_working_hours: bool,
    /// Whether contacts go to the owner of their e-mail domain's company.
    pub account_matching: bool,
    /// `users` (default) or `teams`.
    pub rotation_type: RotationType,
    /// The trigger (grammar checked by serde, fields by [`Trigger::validate`]).
    pub trigger: Option<Trigger>,
    /// The SLA (BEHAVIOR 14).
    pub sla: Option<SlaBody>,
    /// The id of a holiday calendar of the account (BEHAVIOR 17), or `null`.
    pub holiday_calendar_id: Option<String>,
}

/// The `sla` key of the settings (BEHAVIOR 14), before its values are read against the
/// router's fields ([`parse_setting`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlaBody {
    /// 1 to 10,080.
    pub minutes: i64,
    /// Internal name of a field of the router's type.
    pub worked_field: String,
    /// `null` or a non-empty array of that field's values.
    #[serde(default)]
    pub worked_values: Option<Vec<Value>>,
}

/// A rotation user as sent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserBody {
    /// A member's e-mail.
    pub email: String,
    /// Weight 0 to 100, on percentage routers only.
    #[serde(default)]
    pub percentage: Option<f64>,
}

/// A rotation team as sent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamBody {
    /// The name of a team of the account.
    pub name: String,
}

/// The first problem of a configuration: its JSON path relative to the configuration (empty
/// for the whole configuration) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct ConfigError {
    /// JSON path, e.g. `users[2].email`; empty for the configuration as a whole.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

fn refused<T>(path: impl Into<String>, message: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError {
        path: path.into(),
        message: message.into(),
    })
}

/// What a configuration is checked against: the account's members (those it names at least;
/// archived ones included, whole [`Member`]s or their
/// [`crate::model::member::MemberIdentity`]), its teams, and the
/// field catalogue of the router's type.
#[derive(Debug)]
pub struct Account<'a, M = Member> {
    /// Members of the account.
    pub members: &'a [M],
    /// Teams of the account.
    pub teams: &'a [Team],
    /// The field catalogue of the router's object type.
    pub catalogue: &'a Catalogue,
    /// The ids of the account's holiday calendars (BEHAVIOR 17).
    pub holiday_calendars: &'a [HolidayCalendarId],
}

// By hand: a derive would ask `M: Copy` of the members a slice of which is copied.
impl<M> Clone for Account<'_, M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for Account<'_, M> {}

/// The e-mail of the account's member that `given` names (in any form [`Email::parse`] reads
/// as the same address: case, U-label or A-label domain), archived or not.
///
/// Errors: `no user with e-mail "<given>" in this account`.
pub fn member_email<M: Membership>(given: &str, members: &[M]) -> Result<Email, String> {
    let wanted = Email::parse(given).ok();
    members
        .iter()
        .find(|m| wanted.as_ref() == Some(m.member_email()))
        .map(|m| m.member_email().clone())
        .ok_or_else(|| format!("no user with e-mail \"{given}\" in this account"))
}

/// The checks of a body that need nothing from the store (BEHAVIOR 15): `name` 1 to 256
/// characters, at most 500 users and 50 teams (the shape of `settings`, the trigger grammar and
/// the shape of `sla` are checked when the body is read). The API runs them before reading
/// anything, so a body's reads are bounded by these limits ([`named_members`]); [`parse`] runs
/// them first too.
///
/// Errors: the first problem, with its path.
pub fn check_counts(body: &ConfigBody) -> Result<(), ConfigError> {
    let name_chars = body.name.chars().take(MAX_NAME_CHARS + 1).count();
    if name_chars == 0 || name_chars > MAX_NAME_CHARS {
        return refused("name", format!("must be 1 to {MAX_NAME_CHARS} characters"));
    }
    if body.users.len() > MAX_USERS {
        return refused("users", format!("at most {MAX_USERS} users"));
    }
    if body.teams.len() > MAX_TEAMS {
        return refused("teams", format!("at most {MAX_TEAMS} teams"));
    }
    Ok(())
}

/// Checks `body` against `account` (BEHAVIOR 15's rules: members and teams exist, `owner_field`
/// is a `user` field of the type, `default_user` a member, the trigger grammar and fields, the
/// SLA, percentages, `rotation_type`, sizes) and returns the parsed configuration, with the
/// member id of every e-mail it names resolved (active members only, as provisioning does).
///
/// Errors: the first problem, with its path relative to the configuration.
pub fn parse<M: Membership>(
    body: ConfigBody, account: Account<'_, M>,
) -> Result<RouterConfig, ConfigError> {
    check_counts(&body)?;
    let mut users = Vec::with_capacity(body.users.len());
    for (j, u) in body.users.iter().enumerate() {
        let email = member_email(&u.email, account.members)
            .or_else(|message| refused(format!("users[{j}].email"), message))?;
        users.push(RouterUser {
            email,
            percentage: u.percentage,
        });
    }
    let mut teams = Vec::with_capacity(body.teams.len());
    for (j, t) in body.teams.iter().enumerate() {
        if !account.teams.iter().any(|x| x.name == t.name) {
            return refused(
                format!("teams[{j}].name"),
                format!("no team \"{}\" in this account", t.name),
            );
        }
        teams.push(t.name.clone());
    }
    let settings = match body.settings {
        None => None,
        Some(s) => Some(settings(s, account)?),
    };
    percentages(settings.as_ref(), &users, &teams)?;
    if let Some(s) = &settings {
        if s.rotation_type == RotationType::Teams && (teams.is_empty() || !users.is_empty()) {
            return refused(
                "settings.rotation_type",
                "a teams rotation lists teams and no users",
            );
        }
    }
    let mut config = RouterConfig {
        name: body.name,
        has_integration: body.has_integration,
        settings,
        users,
        teams,
        member_ids: Vec::new(),
    };
    config.member_ids = resolve(&config, account);
    check_stored_size(&config, account.catalogue.object_type())?;
    Ok(config)
}

/// 400 of a configuration too large to store (BEHAVIOR 12).
pub const ROUTER_TOO_LARGE: &str = "Router too large";

/// BEHAVIOR 12 and 15: a configuration lands in a router's item, its revisions' and its
/// draft's, and (as JSON text) in the stored answer of an `Idempotency-Key` create, publish,
/// unpublish or restore; each of those items must pass the size rule
/// ([`size::check_write`]), whichever is largest. They are sized here as the adapter writes
/// them, with the smallest metadata (no archive, version 0, a client id `""`; the answers under
/// the longest `Idempotency-Key` and route): what a later write of them adds (an archive's time
/// and client id, numbers of up to 20 digits, a 256-character client id of 4-byte characters)
/// stays within the rule's reserve ([`size::RESERVE_BYTES`]), so a configuration accepted once
/// is accepted by every later write of it.
///
/// Errors: 400 `Router too large` (no one key to blame, so the path is empty).
pub fn check_stored_size(
    config: &RouterConfig, object_type: ObjectType,
) -> Result<(), ConfigError> {
    let at = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    let (id, account_id) = (RouterId::from(Uuid::nil()), AccountId::from(Uuid::nil()));
    let router = Router::created(id, account_id, object_type, at, config, 0);
    let revision = RouterRevision {
        router_id: id,
        account_id,
        revision: 0,
        config: config.clone(),
        published_at: at,
        published_by: String::new(),
    };
    let draft = RouterDraft {
        router_id: id,
        account_id,
        based_on_revision: 0,
        config: config.clone(),
        updated_at: at,
        updated_by: String::new(),
        etag: ETag::new_random(),
    };
    // The longest key and route an answer of these routes is stored under.
    let key = "k".repeat(crate::idempotency::MAX_KEY_CHARS);
    let route = format!("POST /routers/{id}/revisions/{}/restore", u64::MAX);
    let answer = |body: Result<StoredResponse, crate::error::DomainError>| {
        let claim = IdempotencyClaim::new(
            account_id,
            route.clone(),
            IdempotencyKey::parse(key.as_bytes()).ok()?,
            Fingerprint::of_body(b""),
            at,
        );
        Some(IdempotencyCompletion {
            claim,
            response: body.ok()?,
        })
    };
    let router_answer = answer(StoredResponse::json(200, &RouterView::new(&router)));
    let draft_answer = answer(StoredResponse::json(
        200,
        &DraftView::new(&draft, object_type),
    ));
    let fits = size::check_write(&router).is_ok()
        && size::check_write(&revision).is_ok()
        && size::check_write(&draft).is_ok()
        && router_answer.is_some_and(|a| size::check_write(&a).is_ok())
        && draft_answer.is_some_and(|a| size::check_write(&a).is_ok());
    if fits {
        Ok(())
    } else {
        refused("", ROUTER_TOO_LARGE)
    }
}

/// The settings checked against the account (paths under `settings.`).
fn settings<M: Membership>(
    s: SettingsBody, account: Account<'_, M>,
) -> Result<RouterSettings, ConfigError> {
    let catalogue = account.catalogue;
    if let Some(owner) = &s.owner_field {
        match catalogue.get(owner) {
            Some(f) if f.field_type == FieldType::User && !f.is_system() => {}
            _ => {
                return refused(
                    "settings.owner_field",
                    format!(
                        "\"{owner}\" is not a user field of {}",
                        catalogue.object_type()
                    ),
                )
            }
        }
    }
    let default_user = match &s.default_user {
        Some(e) => Some(
            member_email(e, account.members)
                .or_else(|message| refused("settings.default_user", message))?,
        ),
        None => None,
    };
    if let Some(trigger) = &s.trigger {
        trigger.validate(catalogue).map_err(|e| ConfigError {
            path: format!("settings.trigger.{}", e.path),
            message: e.message,
        })?;
    }
    let sla = match &s.sla {
        None => None,
        Some(sla) => Some(
            parse_setting(
                sla.minutes,
                &sla.worked_field,
                sla.worked_values.as_deref(),
                catalogue,
                account.members,
            )
            .map_err(|e| ConfigError {
                path: format!("settings.sla.{}", e.key),
                message: e.message,
            })?,
        ),
    };
    let holiday_calendar_id = match s.holiday_calendar_id.as_deref() {
        None => None,
        Some(given) => Some(
            HolidayCalendarId::try_parse(given)
                .filter(|id| account.holiday_calendars.contains(id))
                .map_or_else(
                    || {
                        refused(
                            "settings.holiday_calendar_id",
                            "Invalid holiday_calendar_id",
                        )
                    },
                    Ok,
                )?,
        ),
    };
    Ok(RouterSettings {
        overwrite: s.overwrite,
        owner_field: s.owner_field,
        distribution_model: s.distribution_model,
        default_user,
        disable_default_assignment: s.disable_default_assignment,
        ignore_working_hours: s.ignore_working_hours,
        account_matching: s.account_matching,
        rotation_type: s.rotation_type,
        trigger: s.trigger,
        sla,
        holiday_calendar_id,
    })
}

/// Percentages only on percentage routers; there every user has one, from 0 to 100, summing
/// to 100, and no team is listed (BEHAVIOR 15: a 400 naming `users`, or `teams`).
fn percentages(
    settings: Option<&RouterSettings>, users: &[RouterUser], teams: &[String],
) -> Result<(), ConfigError> {
    let percentage =
        settings.is_some_and(|s| s.distribution_model == Some(DistributionModel::Percentage));
    if !percentage {
        if let Some(j) = users.iter().position(|u| u.percentage.is_some()) {
            return refused(
                "users",
                format!("users[{j}].percentage: percentages are only for percentage routers"),
            );
        }
        return Ok(());
    }
    if !teams.is_empty() {
        return refused("teams", "a percentage router lists no teams");
    }
    for (j, u) in users.iter().enumerate() {
        match u.percentage {
            None => {
                return refused(
                    "users",
                    format!(
                    "users[{j}].percentage: every user of a percentage router needs a percentage"
                ),
                )
            }
            Some(p) if !(0.0..=100.0).contains(&p) => {
                return refused(
                    "users",
                    format!("users[{j}].percentage: must be from 0 to 100"),
                )
            }
            Some(_) => {}
        }
    }
    let total: f64 = users.iter().filter_map(|u| u.percentage).sum();
    if (total - 100.0).abs() > 1e-6 {
        return refused("users", format!("percentages sum to {total}, not 100"));
    }
    Ok(())
}

/// The member id of each e-mail the configuration's roster names (its users, its teams'
/// members, its backup user), among the account's active members: what dispatch reads the
/// pool by ([`crate::model::router::Router::member_ids`]).
fn resolve<M: Membership>(config: &RouterConfig, account: Account<'_, M>) -> Vec<RosterMember> {
    config
        .roster_emails(account.teams)
        .iter()
        .filter_map(|email| {
            account
                .members
                .iter()
                .find(|m| m.member_email() == *email && m.is_active_member())
                .map(|m| RosterMember {
                    email: m.member_email().clone(),
                    id: m.member_id(),
                })
        })
        .collect()
}

/// Most distinct members a body may name by e-mail or id: its 500 users and
/// its backup user. The worked values of an SLA on a `user` field count too, so a body naming
/// more members than a roster can hold is refused before anything is read.
pub const MAX_NAMED_MEMBERS: usize = MAX_USERS + 1;

/// The members a body names that the account must be asked about: the
/// e-mails of its users and of its backup user, and, when `sla.worked_field` is a `user` field
/// of `catalogue`, the members its `worked_values` name (by e-mail or id); other worked values
/// are field values, not members. Texts that are not e-mail addresses name nobody and are left
/// out (the check answers them 400). Each member once, at most [`MAX_NAMED_MEMBERS`].
///
/// Errors: `settings.sla.worked_values: at most 501 distinct members ...` past
/// [`MAX_NAMED_MEMBERS`] (the users alone cannot pass it after [`check_counts`]).
pub fn named_members(
    body: &ConfigBody, catalogue: &Catalogue,
) -> Result<NamedMembers, ConfigError> {
    let mut named = NamedMembers::default();
    let mut emails = std::collections::HashSet::new();
    let mut ids = std::collections::HashSet::new();
    let mut add = |named: &mut NamedMembers, given: &str| match MemberRef::parse(given) {
        MemberRef::Email(email) if emails.insert(email.clone()) => named.emails.push(email),
        MemberRef::Id(id) if ids.insert(id) => named.ids.push(id),
        _ => {}
    };
    for u in &body.users {
        if let Ok(email) = Email::parse(&u.email) {
            add(&mut named, email.as_str());
        }
    }
    let Some(s) = &body.settings else {
        return Ok(named);
    };
    if let Some(email) = s.default_user.as_deref().and_then(|e| Email::parse(e).ok()) {
        add(&mut named, email.as_str());
    }
    if let Some(sla) = &s.sla {
        let user_field = catalogue
            .get(&sla.worked_field)
            .is_some_and(|f| f.field_type == FieldType::User);
        if user_field {
            for value in sla.worked_values.iter().flatten() {
                if let Some(given) = value.as_str() {
                    add(&mut named, given);
                }
                if named.emails.len() + named.ids.len() > MAX_NAMED_MEMBERS {
                    return refused(
                        "settings.sla.worked_values",
                        format!(
                            "with the users and the default user, at most {MAX_NAMED_MEMBERS} \
                             distinct members"
                        ),
                    );
                }
            }
        }
    }
    Ok(named)
}

/// The fewest bytes one member of a router's roster takes in the router's item as DynamoDB
/// counts it ([`RosterMember`] in `member_ids`: a list element of 1 byte, a map of 3, the names
/// `email` and `id` with their bytes of 1 each, an e-mail of at least 6 characters such as
/// `a@b.co`, and a 36-character id).
///
/// [`RosterMember`]: crate::model::router::RosterMember
const MIN_ROSTER_ENTRY_BYTES: usize = 1 + 3 + (1 + 5 + 6) + (1 + 2 + 36);

/// Most distinct e-mails a configuration's roster may name: its users, its backup user and the
/// members of the teams it names, archived members included. Past it the router's item could
/// not hold the ids the roster resolves to, each at least [`MIN_ROSTER_ENTRY_BYTES`], within
/// [`size::MAX_WRITE_BYTES`], and the size rule would refuse the router after reading every
/// member; counted right after the one read of the account's teams instead, so a body naming
/// large teams costs that read and no member read (7,410).
pub const MAX_ROSTER_EMAILS: usize = size::MAX_WRITE_BYTES / MIN_ROSTER_ENTRY_BYTES;

/// `named` ([`named_members`]) with the members of the account's `teams` that `body` names, in
/// team order, each e-mail once.
///
/// Errors: 400 `Router too large` naming `teams` when the roster names more than
/// [`MAX_ROSTER_EMAILS`] distinct e-mails (counted before any member is read).
pub fn with_team_members(
    mut named: NamedMembers, body: &ConfigBody, teams: &[Team],
) -> Result<NamedMembers, ConfigError> {
    let mut seen: std::collections::HashSet<Email> = named.emails.iter().cloned().collect();
    for team in teams
        .iter()
        .filter(|t| body.teams.iter().any(|b| b.name == t.name))
    {
        for email in &team.members {
            if seen.insert(email.clone()) {
                named.emails.push(email.clone());
                if named.emails.len() > MAX_ROSTER_EMAILS {
                    return refused(
                        "teams",
                        format!(
                            "{ROUTER_TOO_LARGE}: its users and teams name more than \
                             {MAX_ROSTER_EMAILS} members"
                        ),
                    );
                }
            }
        }
    }
    Ok(named)
}

/// The members a body names ([`named_members`]), each once, in the order named.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamedMembers {
    /// Named by e-mail (canonical form).
    pub emails: Vec<Email>,
    /// Named by id (an SLA worked value of a `user` field).
    pub ids: Vec<MemberId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(value: Value) -> ConfigBody {
        serde_json::from_value(value).expect("a body")
    }

    fn contacts() -> Catalogue {
        Catalogue::standard(ObjectType::Contacts)
    }

    #[test]
    fn worked_values_are_members_only_on_a_user_field() {
        let sla = |field: &str| {
            body(serde_json::json!({
                "name": "r",
                "settings": {"default_user": "Dora@Example.com", "sla": {
                    "minutes": 10, "worked_field": field,
                    "worked_values": ["ana@example.com", "1d7e8f90-a1b2-4c3d-8e4f-5a6b7c8d9e01", "new"]
                }},
                "users": [{"email": "ben@example.com"}, {"email": "BEN@example.com"}, {"email": "not an address"}],
                "teams": []
            }))
        };
        let named = named_members(&sla("lead_status"), &contacts()).unwrap();
        let emails: Vec<&str> = named.emails.iter().map(Email::as_str).collect();
        assert_eq!(emails, ["ben@example.com", "dora@example.com"]);
        assert!(named.ids.is_empty());
        let named = named_members(&sla("contact_owner"), &contacts()).unwrap();
        let emails: Vec<&str> = named.emails.iter().map(Email::as_str).collect();
        assert_eq!(
            emails,
            ["ben@example.com", "dora@example.com", "ana@example.com"]
        );
        assert_eq!(named.ids.len(), 1);
    }

    #[test]
    fn a_roster_naming_more_members_than_a_router_can_hold_is_refused_before_they_are_read() {
        let team = |name: &str, members: usize| Team {
            id: Uuid::new_v4().into(),
            account_id: Uuid::new_v4().into(),
            name: name.into(),
            members: (0..members)
                .map(|i| Email::parse(&format!("{name}{i}@example.com")).unwrap())
                .collect(),
            created_at: chrono::Utc::now(),
        };
        let teams: Vec<Team> = (0..50).map(|t| team(&format!("t{t}"), 10_000)).collect();
        let names: Vec<Value> = teams
            .iter()
            .map(|t| serde_json::json!({"name": t.name}))
            .collect();
        let b = body(serde_json::json!({
            "name": "r", "settings": null,
            "users": [{"email": "t00@example.com"}], "teams": names.clone()
        }));
        let named = named_members(&b, &contacts()).unwrap();
        let e = with_team_members(named, &b, &teams).unwrap_err();
        assert_eq!(e.path, "teams");
        assert!(e.message.starts_with(ROUTER_TOO_LARGE), "{}", e.message);
        // Members shared by users and teams count once; a roster within the limit passes.
        let small: Vec<Team> = vec![team("t", 3), team("u", 2)];
        let b = body(serde_json::json!({
            "name": "r", "settings": null,
            "users": [{"email": "t0@example.com"}], "teams": [{"name": "t"}, {"name": "u"}]
        }));
        let named = with_team_members(named_members(&b, &contacts()).unwrap(), &b, &small).unwrap();
        let emails: Vec<&str> = named.emails.iter().map(Email::as_str).collect();
        assert_eq!(
            emails,
            [
                "t0@example.com",
                "t1@example.com",
                "t2@example.com",
                "u0@example.com",
                "u1@example.com"
            ]
        );
        assert_eq!(MAX_ROSTER_EMAILS, 7_410);
    }

    #[test]
    fn a_body_names_at_most_501_members_before_anything_is_read() {
        let users: Vec<Value> = (0..MAX_USERS)
            .map(|i| serde_json::json!({"email": format!("u{i}@example.com")}))
            .collect();
        let worked = |n: usize| -> Vec<Value> {
            (0..n)
                .map(|i| Value::String(format!("w{i}@example.com")))
                .collect()
        };
        let make = |worked: Vec<Value>| {
            body(serde_json::json!({
                "name": "r",
                "settings": {"default_user": "d@example.com", "sla": {
                    "minutes": 10, "worked_field": "contact_owner", "worked_values": worked
                }},
                "users": users.clone(), "teams": []
            }))
        };
        // The users' e-mails named again as worked values add nobody.
        let again: Vec<Value> = (0..MAX_USERS)
            .map(|i| Value::String(format!("U{i}@example.com")))
            .collect();
        let named = named_members(&make(again), &contacts()).unwrap();
        assert_eq!(named.emails.len(), MAX_NAMED_MEMBERS);
        let e = named_members(&make(worked(1)), &contacts()).unwrap_err();
        assert_eq!(e.path, "settings.sla.worked_values");
        // 50,000 worked values stop at the first one past the limit.
        let e = named_members(&make(worked(50_000)), &contacts()).unwrap_err();
        assert_eq!(e.path, "settings.sla.worked_values");
        // Too many users is refused by the counts, before the members are named.
        let mut many = make(Vec::new());
        many.users.push(UserBody {
            email: "one@example.com".into(),
            percentage: None,
        });
        assert_eq!(check_counts(&many).unwrap_err().path, "users");
    }
}
