//! A validated provisioning plan (`docs/seed-format.md`): what the seed loader produces and
//! [`crate::store::ProvisionStore::provision`] writes, insert-if-absent by id, all-or-nothing.

use super::account::{Account, ApiClient, CrmCredentials, CrmOptions, CrmProvider, Role, Team};
use super::member::Member;
use super::record::{Record, UniqueKey};
use super::router::Router;
use crate::fields::definition::FieldDefinition;

/// A validated provisioning plan.
#[derive(Debug, Clone, Default)]
pub struct ProvisionPlan {
    /// One entry per account of the file, in file order.
    pub accounts: Vec<AccountPlan>,
}

/// Everything provisioned for one account, validated, with secrets hashed.
#[derive(Debug, Clone)]
pub struct AccountPlan {
    /// The account (its `crm` set only once [`Self::crm`] is sealed: `crate::seed::seal`).
    pub account: Account,
    /// The account's CRM connection as provisioned, its token in the clear until it is sealed
    /// into `account.crm`.
    pub crm: Option<PlannedCrm>,
    /// API clients (secrets as argon2id hashes).
    pub clients: Vec<ApiClient>,
    /// The secrets of [`Self::clients`] as the seed gives them, in the same order, in memory
    /// only: provisioning compares them with a stored client's hash to tell a changed secret
    /// (BEHAVIOR 1). Never stored.
    pub client_secrets: Vec<PresentedSecret>,
    /// Roles.
    pub roles: Vec<Role>,
    /// Holiday calendars (BEHAVIOR 17), stored before the members and routers that name them.
    pub holiday_calendars: Vec<super::holiday_calendar::HolidayCalendar>,
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

/// A CRM connection to provision, before its secrets are sealed.
#[derive(Debug, Clone)]
pub struct PlannedCrm {
    /// The CRM.
    pub provider: CrmProvider,
    /// The base URL (already checked by the outbound guard).
    pub base_url: String,
    /// The credentials as provisioned (a private app's token or an OAuth app's secrets).
    pub credentials: CrmCredentials,
    /// What the connection says beyond its URL and credentials.
    pub options: CrmOptions,
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

impl PlannedRecord {
    /// The message of provisioning this record when its unique `key` is held by another active
    /// record: the record's JSON path in the seed, then what holds it.
    pub fn key_taken_message(&self, key: &UniqueKey) -> String {
        format!(
            "{}.fields.{}: an active {} already holds {} \"{}\"",
            self.path,
            key.field,
            self.record.object_type.singular(),
            key.field,
            key.value
        )
    }
}

/// What a provisioning run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProvisionReport {
    /// Items written.
    pub inserted: usize,
    /// Items left as stored because their id (or `client_id`) existed, e.g. `router 5b1c...`.
    pub skipped: Vec<String>,
    /// Stored API clients the file changed (a new secret, `disabled`, scopes), e.g.
    /// `client northwind-integration`: still listed in `skipped` (not inserted), updated in place.
    pub updated: Vec<String>,
}

/// A client secret as the seed gives it, in memory only; its `Debug` is redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct PresentedSecret(String);

impl PresentedSecret {
    /// The secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret itself, to compare with a stored hash.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for PresentedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PresentedSecret([REDACTED])")
    }
}
