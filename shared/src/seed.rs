//! The provisioning (seed) loader for `contracts/seed-format.md`.
//!
//! [`load`] parses and validates a whole file before anything is written and returns a
//! [`ProvisionPlan`]; [`crate::store::Store::provision`] then writes it insert-if-absent by id,
//! all-or-nothing. The first problem is reported with its JSON path, e.g.
//! `accounts[0].routers[1].settings.trigger.groups[0].conditions[0].operator: unknown operator "eq"`.
//! Records are validated exactly as a POST body is ([`crate::fields::validate`]); client secrets
//! are hashed with argon2id and never kept as sent.

use crate::auth::{hash_secret, Scope};
use crate::fields::validate::{canonical_email, validate_fields, FieldInput};
use crate::fields::{Catalogue, EnumOption, FieldDefinition, FieldType};
use crate::members::validate_capacity;
use crate::model::{
    Account, ApiClient, CrmConnection, DistributionModel, Member, ObjectType, OutOfOffice, Record,
    Role, RotationType, Router, RouterSettings, RouterUser, Team, WorkingHours,
};
use crate::records::unique_keys;
use crate::schedule::{parse_time_zone, validate_out_of_office, validate_working_hours};
use crate::store::UniqueKey;
use crate::trigger::Trigger;
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use uuid::Uuid;

/// A validated provisioning plan: what [`crate::store::Store::provision`] writes.
#[derive(Debug, Clone, Default)]
pub struct ProvisionPlan {
    /// One entry per account of the file, in file order.
    pub accounts: Vec<AccountPlan>,
}

/// Everything provisioned for one account, validated, with secrets hashed.
#[derive(Debug, Clone)]
pub struct AccountPlan {
    /// The account.
    pub account: Account,
    /// API clients (secrets as argon2id hashes).
    pub clients: Vec<ApiClient>,
    /// Roles.
    pub roles: Vec<Role>,
    /// Members.
    pub members: Vec<Member>,
    /// Teams.
    pub teams: Vec<Team>,
    /// Stored field definitions.
    pub field_definitions: Vec<FieldDefinition>,
    /// Routers.
    pub routers: Vec<Router>,
    /// Starting records with their unique keys.
    pub records: Vec<PlannedRecord>,
}

/// A record to provision, with the unique keys it claims.
#[derive(Debug, Clone)]
pub struct PlannedRecord {
    /// The record, system fields set.
    pub record: Record,
    /// Its unique keys, in the spec's order.
    pub unique_keys: Vec<UniqueKey>,
    /// JSON path of the record in the file, for messages.
    pub path: String,
}

/// The first problem of a seed file: where (JSON path) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SeedError {
    /// JSON path, e.g. `accounts[0].users[2].time_zone`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

fn err<T>(path: impl Into<String>, message: impl Into<String>) -> Result<T, SeedError> {
    Err(SeedError {
        path: path.into(),
        message: message.into(),
    })
}

// ---- file shape -------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedFile {
    accounts: Vec<SeedAccount>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedAccount {
    id: Uuid,
    name: String,
    #[serde(default = "yes")]
    active: bool,
    #[serde(default)]
    assignment_quota: Option<u64>,
    #[serde(default)]
    clients: Vec<SeedClient>,
    #[serde(default)]
    roles: Vec<SeedRole>,
    #[serde(default)]
    users: Vec<SeedUser>,
    #[serde(default)]
    teams: Vec<SeedTeam>,
    #[serde(default)]
    fields: BTreeMap<String, Vec<SeedField>>,
    #[serde(default)]
    crm: Option<SeedCrm>,
    #[serde(default)]
    routers: Vec<SeedRouter>,
    #[serde(default)]
    records: BTreeMap<String, Vec<SeedRecord>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedClient {
    client_id: String,
    client_secret: String,
    scopes: Vec<Scope>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedRole {
    id: Uuid,
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedUser {
    id: Uuid,
    email: String,
    #[serde(default)]
    first_name: Option<String>,
    #[serde(default)]
    last_name: Option<String>,
    #[serde(default)]
    full_name: Option<String>,
    #[serde(default)]
    role_id: Option<Uuid>,
    #[serde(default)]
    external_id: Option<String>,
    #[serde(default)]
    phone: Option<String>,
    #[serde(default = "yes")]
    office_status: bool,
    #[serde(default)]
    time_zone: Option<String>,
    #[serde(default)]
    working_hours: Vec<WorkingHours>,
    #[serde(default)]
    out_office_dates: Vec<OutOfOffice>,
    #[serde(default)]
    calendars: BTreeMap<String, String>,
    #[serde(default)]
    capacity: Vec<Map<String, Value>>,
    #[serde(default)]
    can_receive_notifications: bool,
    #[serde(default)]
    notification_preferences: Vec<String>,
    #[serde(default)]
    archived: Archived,
    #[serde(default)]
    archived_by: Option<String>,
}

/// `false` or an RFC 3339 timestamp.
#[derive(Default)]
struct Archived(Option<DateTime<Utc>>);

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
struct SeedTeam {
    id: Uuid,
    name: String,
    #[serde(default)]
    members: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedField {
    internal_name: String,
    name: String,
    field_type_id: FieldType,
    #[serde(default)]
    options: Vec<EnumOption>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedCrm {
    provider: String,
    base_url: String,
    access_token: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedRouter {
    id: Uuid,
    name: String,
    object_type: ObjectType,
    #[serde(default)]
    is_published: bool,
    #[serde(default)]
    has_integration: bool,
    #[serde(default)]
    archived: Archived,
    #[serde(default)]
    archived_by: Option<String>,
    #[serde(default)]
    settings: Option<SeedSettings>,
    #[serde(default)]
    users: Vec<SeedRouterUser>,
    #[serde(default)]
    teams: Vec<SeedRouterTeam>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedSettings {
    #[serde(default)]
    overwrite: bool,
    #[serde(default)]
    owner_field: Option<String>,
    #[serde(default)]
    distribution_model: Option<DistributionModel>,
    #[serde(default)]
    default_user: Option<String>,
    #[serde(default)]
    disable_default_assignment: bool,
    #[serde(default)]
    ignore_working_hours: bool,
    #[serde(default)]
    account_matching: bool,
    #[serde(default)]
    rotation_type: RotationType,
    #[serde(default)]
    trigger: Option<Trigger>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedRouterUser {
    email: String,
    #[serde(default)]
    percentage: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedRouterTeam {
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedRecord {
    id: Uuid,
    fields: Map<String, Value>,
}

// ---- loading ----------------------------------------------------------------------------

/// Parses and validates a seed file. Items get consecutive creation times (1 ms apart) from
/// `base`, in file order, so lists of seeded items follow the file.
///
/// Errors: the first problem with its JSON path; nothing is returned to write then.
pub fn load(text: &str, base: DateTime<Utc>) -> Result<ProvisionPlan, SeedError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let file: SeedFile = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let mut message = e.into_inner().to_string();
        // serde_json appends the position; the JSON path says more.
        if let Some(at) = message.rfind(" at line ") {
            message.truncate(at);
        }
        SeedError {
            path: if path == "." { "$".into() } else { path },
            message,
        }
    })?;
    let mut loader = Loader {
        base,
        tick: 0,
        ids: HashMap::new(),
        client_ids: HashSet::new(),
    };
    let accounts = file
        .accounts
        .into_iter()
        .enumerate()
        .map(|(i, a)| loader.account(&format!("accounts[{i}]"), a))
        .collect::<Result<_, _>>()?;
    Ok(ProvisionPlan { accounts })
}

struct Loader {
    base: DateTime<Utc>,
    tick: i64,
    /// Every UUID of the file -> its path (ids are unique across the store).
    ids: HashMap<Uuid, String>,
    client_ids: HashSet<String>,
}

impl Loader {
    fn next_time(&mut self) -> DateTime<Utc> {
        self.tick += 1;
        self.base + Duration::milliseconds(self.tick)
    }

    fn claim_id(&mut self, id: Uuid, path: String) -> Result<(), SeedError> {
        if let Some(first) = self.ids.get(&id) {
            return err(
                format!("{path}.id"),
                format!("id {id} is already used at {first}"),
            );
        }
        self.ids.insert(id, path);
        Ok(())
    }

    fn account(&mut self, path: &str, a: SeedAccount) -> Result<AccountPlan, SeedError> {
        self.claim_id(a.id, path.to_string())?;
        let created_at = self.next_time();
        let crm = match a.crm {
            None => None,
            Some(c) => {
                if c.provider != "hubspot" {
                    return err(
                        format!("{path}.crm.provider"),
                        format!("unknown provider \"{}\"; expected \"hubspot\"", c.provider),
                    );
                }
                match url::Url::parse(&c.base_url) {
                    Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                    _ => return err(format!("{path}.crm.base_url"), "expected an http(s) URL"),
                }
                Some(CrmConnection {
                    provider: c.provider,
                    base_url: c.base_url,
                    access_token: c.access_token,
                })
            }
        };
        let account = Account {
            id: a.id,
            name: a.name,
            active: a.active,
            assignment_quota: a.assignment_quota,
            crm,
            created_at,
        };

        let mut clients = Vec::new();
        for (i, c) in a.clients.into_iter().enumerate() {
            let p = format!("{path}.clients[{i}]");
            if c.client_id.trim().is_empty() {
                return err(format!("{p}.client_id"), "must not be empty");
            }
            if !self.client_ids.insert(c.client_id.clone()) {
                return err(
                    format!("{p}.client_id"),
                    format!("client_id \"{}\" is used twice", c.client_id),
                );
            }
            if c.client_secret.is_empty() {
                return err(format!("{p}.client_secret"), "must not be empty");
            }
            let secret_hash = hash_secret(&c.client_secret).map_err(|e| SeedError {
                path: format!("{p}.client_secret"),
                message: e.to_string(),
            })?;
            clients.push(ApiClient {
                client_id: c.client_id,
                account_id: a.id,
                secret_hash,
                scopes: c.scopes,
            });
        }

        let mut roles = Vec::new();
        for (i, r) in a.roles.into_iter().enumerate() {
            self.claim_id(r.id, format!("{path}.roles[{i}]"))?;
            roles.push(Role {
                id: r.id,
                account_id: a.id,
                name: r.name,
            });
        }

        let mut members: Vec<Member> = Vec::new();
        for (i, u) in a.users.into_iter().enumerate() {
            let p = format!("{path}.users[{i}]");
            members.push(self.member(&p, a.id, u, &roles, &members)?);
        }

        let mut teams: Vec<Team> = Vec::new();
        for (i, t) in a.teams.into_iter().enumerate() {
            let p = format!("{path}.teams[{i}]");
            self.claim_id(t.id, p.clone())?;
            if teams.iter().any(|x| x.name == t.name) {
                return err(
                    format!("{p}.name"),
                    format!("team name \"{}\" is used twice in this account", t.name),
                );
            }
            let mut emails = Vec::new();
            for (j, e) in t.members.iter().enumerate() {
                emails.push(member_email(&format!("{p}.members[{j}]"), e, &members)?);
            }
            teams.push(Team {
                id: t.id,
                account_id: a.id,
                name: t.name,
                members: emails,
                created_at: self.next_time(),
            });
        }

        let mut field_definitions = Vec::new();
        for (type_name, defs) in a.fields {
            let object_type = object_type_key(&format!("{path}.fields.{type_name}"), &type_name)?;
            for (i, d) in defs.into_iter().enumerate() {
                let p = format!("{path}.fields.{object_type}[{i}]");
                field_definitions.push(field_definition(&p, object_type, d, &field_definitions)?);
            }
        }
        let catalogues: HashMap<ObjectType, Catalogue> = ObjectType::ALL
            .iter()
            .map(|t| (*t, Catalogue::build(*t, &field_definitions)))
            .collect();

        let mut routers = Vec::new();
        for (i, r) in a.routers.into_iter().enumerate() {
            let p = format!("{path}.routers[{i}]");
            self.claim_id(r.id, p.clone())?;
            routers.push(self.router(&p, a.id, r, &members, &teams, &catalogues)?);
        }

        let mut records = Vec::new();
        let mut keys_seen: HashMap<(ObjectType, UniqueKey), String> = HashMap::new();
        for (type_name, list) in a.records {
            let object_type = object_type_key(&format!("{path}.records.{type_name}"), &type_name)?;
            for (i, r) in list.into_iter().enumerate() {
                let p = format!("{path}.records.{object_type}[{i}]");
                self.claim_id(r.id, p.clone())?;
                let planned = self.record(
                    &p,
                    a.id,
                    object_type,
                    r,
                    &catalogues[&object_type],
                    &members,
                )?;
                for key in &planned.unique_keys {
                    if let Some(first) = keys_seen.insert((object_type, key.clone()), p.clone()) {
                        return err(
                            format!("{p}.fields.{}", key.field),
                            format!("{} \"{}\" is already used by {first}", key.field, key.value),
                        );
                    }
                }
                records.push(planned);
            }
        }
        Ok(AccountPlan {
            account,
            clients,
            roles,
            members,
            teams,
            field_definitions,
            routers,
            records,
        })
    }

    fn member(
        &mut self,
        p: &str,
        account_id: Uuid,
        u: SeedUser,
        roles: &[Role],
        others: &[Member],
    ) -> Result<Member, SeedError> {
        self.claim_id(u.id, p.to_string())?;
        let email = canonical_email(&u.email).map_err(|m| SeedError {
            path: format!("{p}.email"),
            message: m,
        })?;
        if others.iter().any(|m| m.email == email) {
            return err(
                format!("{p}.email"),
                format!("e-mail \"{email}\" is used twice in this account"),
            );
        }
        if let Some(role_id) = u.role_id {
            if !roles.iter().any(|r| r.id == role_id) {
                return err(
                    format!("{p}.role_id"),
                    format!("no role {role_id} in this account"),
                );
            }
        }
        let time_zone = u.time_zone.unwrap_or_else(|| "UTC".to_string());
        let tz = parse_time_zone(&time_zone).map_err(|m| SeedError {
            path: format!("{p}.time_zone"),
            message: m,
        })?;
        for (j, w) in u.working_hours.iter().enumerate() {
            validate_working_hours(w).map_err(|m| SeedError {
                path: format!("{p}.working_hours[{j}]"),
                message: m,
            })?;
        }
        for (j, o) in u.out_office_dates.iter().enumerate() {
            validate_out_of_office(o, tz).map_err(|m| SeedError {
                path: format!("{p}.out_office_dates[{j}]"),
                message: m,
            })?;
        }
        validate_capacity(&u.capacity).map_err(|(sub, m)| SeedError {
            path: format!("{p}.capacity{sub}"),
            message: m,
        })?;
        if let Some(j) = u
            .notification_preferences
            .iter()
            .position(|n| n.trim().is_empty())
        {
            return err(
                format!("{p}.notification_preferences[{j}]"),
                "must not be empty",
            );
        }
        let mut notification_preferences: Vec<String> = Vec::new();
        for n in u.notification_preferences {
            if !notification_preferences.contains(&n) {
                notification_preferences.push(n);
            }
        }
        let created_at = self.next_time();
        let archived_by = u
            .archived
            .0
            .map(|_| u.archived_by.unwrap_or_else(|| "provisioning".into()));
        Ok(Member {
            id: u.id,
            account_id,
            email,
            full_name: u.full_name,
            first_name: u.first_name,
            last_name: u.last_name,
            role_id: u.role_id,
            external_id: u.external_id,
            phone: u.phone,
            office_status: u.office_status,
            time_zone,
            working_hours: u.working_hours,
            out_office_dates: u.out_office_dates,
            calendars: u.calendars,
            capacity: u.capacity,
            can_receive_notifications: u.can_receive_notifications,
            notification_preferences,
            created_at,
            updated_at: created_at,
            archived_at: u.archived.0,
            archived_by,
            version: 1,
        })
    }

    fn router(
        &mut self,
        p: &str,
        account_id: Uuid,
        r: SeedRouter,
        members: &[Member],
        teams: &[Team],
        catalogues: &HashMap<ObjectType, Catalogue>,
    ) -> Result<Router, SeedError> {
        let catalogue = &catalogues[&r.object_type];
        let mut users = Vec::new();
        for (j, u) in r.users.iter().enumerate() {
            let email = member_email(&format!("{p}.users[{j}].email"), &u.email, members)?;
            if let Some(pct) = u.percentage {
                if !(0.0..=100.0).contains(&pct) {
                    return err(
                        format!("{p}.users[{j}].percentage"),
                        "must be from 0 to 100",
                    );
                }
            }
            users.push(RouterUser {
                email,
                percentage: u.percentage,
            });
        }
        let mut team_names = Vec::new();
        for (j, t) in r.teams.iter().enumerate() {
            if !teams.iter().any(|x| x.name == t.name) {
                return err(
                    format!("{p}.teams[{j}].name"),
                    format!("no team \"{}\" in this account", t.name),
                );
            }
            team_names.push(t.name.clone());
        }
        let settings = match r.settings {
            None => None,
            Some(s) => {
                let sp = format!("{p}.settings");
                if let Some(owner) = &s.owner_field {
                    match catalogue.get(owner) {
                        Some(f) if f.field_type == FieldType::User && !f.is_system() => {}
                        _ => {
                            return err(
                                format!("{sp}.owner_field"),
                                format!("\"{owner}\" is not a user field of {}", r.object_type),
                            )
                        }
                    }
                }
                let default_user = match &s.default_user {
                    Some(e) => Some(member_email(&format!("{sp}.default_user"), e, members)?),
                    None => None,
                };
                if let Some(trigger) = &s.trigger {
                    trigger.validate(catalogue).map_err(|e| SeedError {
                        path: format!("{sp}.trigger.{}", e.path),
                        message: e.message,
                    })?;
                }
                if s.distribution_model == Some(DistributionModel::Percentage) {
                    if !team_names.is_empty() {
                        return err(format!("{p}.teams"), "a percentage router lists no teams");
                    }
                    if let Some(j) = users.iter().position(|u| u.percentage.is_none()) {
                        return err(
                            format!("{p}.users[{j}].percentage"),
                            "every user of a percentage router needs a percentage",
                        );
                    }
                    let total: f64 = users.iter().filter_map(|u| u.percentage).sum();
                    if (total - 100.0).abs() > 1e-6 {
                        return err(
                            format!("{p}.users"),
                            format!("percentages sum to {total}, not 100"),
                        );
                    }
                }
                if s.rotation_type == RotationType::Teams
                    && (team_names.is_empty() || !users.is_empty())
                {
                    return err(
                        format!("{sp}.rotation_type"),
                        "a teams rotation lists teams and no users",
                    );
                }
                Some(RouterSettings {
                    overwrite: s.overwrite,
                    owner_field: s.owner_field,
                    distribution_model: s.distribution_model,
                    default_user,
                    disable_default_assignment: s.disable_default_assignment,
                    ignore_working_hours: s.ignore_working_hours,
                    account_matching: s.account_matching,
                    rotation_type: s.rotation_type,
                    trigger: s.trigger,
                })
            }
        };
        let created_at = self.next_time();
        let archived_by = r
            .archived
            .0
            .map(|_| r.archived_by.unwrap_or_else(|| "provisioning".into()));
        Ok(Router {
            id: r.id,
            account_id,
            name: r.name,
            object_type: r.object_type,
            has_integration: r.has_integration,
            is_published: r.is_published,
            settings,
            users,
            teams: team_names,
            created_at,
            updated_at: created_at,
            archived_at: r.archived.0,
            archived_by,
        })
    }

    fn record(
        &mut self,
        p: &str,
        account_id: Uuid,
        object_type: ObjectType,
        r: SeedRecord,
        catalogue: &Catalogue,
        members: &[Member],
    ) -> Result<PlannedRecord, SeedError> {
        let fields_path = format!("{p}.fields");
        let as_seed_error = |e: crate::ApiError| {
            let body = e.body();
            let field = body["field"]
                .as_str()
                .map(|f| format!(".{f}"))
                .unwrap_or_default();
            SeedError {
                path: format!("{fields_path}{field}"),
                message: e.to_string(),
            }
        };
        let inputs = validate_fields(catalogue, &r.fields).map_err(as_seed_error)?;
        let created_at = self.next_time();
        let mut values = BTreeMap::new();
        for (name, input) in inputs {
            match input {
                FieldInput::Set(v) => {
                    values.insert(name.clone(), v);
                }
                FieldInput::Clear => {}
                FieldInput::Member(given) => {
                    let wanted = given.to_lowercase();
                    let found = members.iter().filter(|m| m.is_active()).find(|m| {
                        m.email == wanted || Uuid::parse_str(&given).is_ok_and(|id| id == m.id)
                    });
                    match found {
                        Some(m) => {
                            values.insert(name.clone(), m.email.clone());
                        }
                        None => {
                            return err(
                                format!("{fields_path}.{name}"),
                                format!("Invalid value for {name}: no active member with id or e-mail \"{given}\""),
                            )
                        }
                    }
                }
            }
            if catalogue.get(&name).is_some_and(|f| f.is_owner_field()) {
                values.insert(
                    format!("{name}_assigned_date"),
                    crate::timefmt::rfc3339_millis(created_at),
                );
            }
        }
        crate::records::check_required(object_type, &values).map_err(as_seed_error)?;
        let record = Record {
            id: r.id,
            account_id,
            object_type,
            values,
            created_at,
            updated_at: created_at,
            archived_at: None,
            archived_by: None,
            version: 1,
        };
        let unique_keys = unique_keys(catalogue, &record);
        Ok(PlannedRecord {
            record,
            unique_keys,
            path: p.to_string(),
        })
    }
}

fn object_type_key(path: &str, name: &str) -> Result<ObjectType, SeedError> {
    name.parse().map_err(|_| SeedError {
        path: path.to_string(),
        message: format!(
            "unknown record type \"{name}\"; expected contacts, companies, deals or tickets"
        ),
    })
}

fn member_email(path: &str, given: &str, members: &[Member]) -> Result<String, SeedError> {
    let wanted = given.trim().to_lowercase();
    match members.iter().find(|m| m.email == wanted) {
        Some(m) => Ok(m.email.clone()),
        None => err(
            path,
            format!("no user with e-mail \"{given}\" in this account"),
        ),
    }
}

fn field_definition(
    p: &str,
    object_type: ObjectType,
    d: SeedField,
    earlier: &[FieldDefinition],
) -> Result<FieldDefinition, SeedError> {
    let name = d.internal_name.trim();
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid_name {
        return err(
            format!("{p}.internal_name"),
            "expected lowercase letters, digits and underscores",
        );
    }
    let standard = Catalogue::standard(object_type);
    let reserved = [
        "id",
        "created_at",
        "updated_at",
        "archived",
        "archived_by",
        "properties",
    ];
    if reserved.contains(&name)
        || standard.get(name).is_some_and(|f| f.is_system())
        || name.ends_with("_assigned_date")
    {
        return err(
            format!("{p}.internal_name"),
            format!("\"{name}\" is a system-managed name"),
        );
    }
    if let Some(existing) = standard.get(name) {
        if existing.field_type != d.field_type_id {
            return err(
                format!("{p}.field_type_id"),
                format!(
                    "\"{name}\" is a standard {} field and cannot be redefined as {}",
                    existing.field_type.as_str(),
                    d.field_type_id.as_str()
                ),
            );
        }
    }
    if earlier
        .iter()
        .any(|e| e.object_type == object_type && e.internal_name == name)
    {
        return err(
            format!("{p}.internal_name"),
            format!("\"{name}\" is defined twice"),
        );
    }
    if d.field_type_id != FieldType::Enumeration && !d.options.is_empty() {
        return err(
            format!("{p}.options"),
            "only enumeration fields have options",
        );
    }
    for (i, o) in d.options.iter().enumerate() {
        if o.internal_name.trim().is_empty() {
            return err(
                format!("{p}.options[{i}].internal_name"),
                "must not be empty",
            );
        }
        if d.options[..i]
            .iter()
            .any(|x| x.internal_name == o.internal_name)
        {
            return err(
                format!("{p}.options[{i}].internal_name"),
                format!("option \"{}\" is listed twice", o.internal_name),
            );
        }
    }
    Ok(FieldDefinition {
        object_type,
        internal_name: name.to_string(),
        name: d.name,
        field_type: d.field_type_id,
        options: d.options,
    })
}
