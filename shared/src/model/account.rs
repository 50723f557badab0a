//! Accounts, their API clients, roles and teams.

use crate::auth::scope::Scope;
use crate::types::email::Email;
use crate::types::ids::{AccountId, RoleId, TeamId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A customer account: the tenant every other item belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Account {
    /// Account id (UUID).
    pub id: AccountId,
    /// Display name.
    pub name: String,
    /// Inactive accounts keep their data and tokens; only dispatch refuses them (BEHAVIOR 1).
    pub active: bool,
    /// Monthly assignment quota of the plan; `None` is unlimited (BEHAVIOR 6, step 9).
    pub assignment_quota: Option<u64>,
    /// The connected CRM, if any.
    pub crm: Option<CrmConnection>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
}

/// A HubSpot-compatible CRM connection (BEHAVIOR 7), as stored: the access token sealed
/// ([`crate::secrets::Sealer`]), never as sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrmConnection {
    /// Always `hubspot` for now.
    pub provider: String,
    /// Base URL of the CRM's API (checked by the outbound guard when provisioned and before
    /// every request).
    pub base_url: String,
    /// The bearer token for the CRM (a HubSpot private app token), sealed under
    /// [`crate::secrets::crm_token_context`] of the account.
    pub access_token: SealedSecret,
}

/// A secret as stored: sealed by a [`crate::secrets::Sealer`] (`kms:<base64>` or
/// `local:<base64>`), opened only when it is presented.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SealedSecret(String);

impl SealedSecret {
    /// A sealed value as a sealer produced it.
    pub fn new(sealed: impl Into<String>) -> Self {
        Self(sealed.into())
    }

    /// The sealed text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A CRM access token in the clear, only in memory while it is presented: its `Debug` is
/// redacted so it never reaches a log line through a struct that holds it (BEHAVIOR 7).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CrmAccessToken(String);

impl CrmAccessToken {
    /// A token.
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The token itself, for the `Authorization` header and for redaction.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for CrmAccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CrmAccessToken([REDACTED])")
    }
}

/// An OAuth 2.0 confidential client (RFC 6749 section 2.1) linked to one account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiClient {
    /// `client_id`, unique across the store.
    pub client_id: String,
    /// The account the client's tokens carry as `account_id`.
    pub account_id: AccountId,
    /// PHC string of the argon2id hash of the secret; the secret itself is never stored.
    pub secret_hash: String,
    /// The scopes this client may request.
    pub scopes: Vec<Scope>,
}

/// A member role; members show its display name as `role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Role {
    /// Role id (UUID).
    pub id: RoleId,
    /// Owning account.
    pub account_id: AccountId,
    /// Display name, e.g. `Sales Rep`.
    pub name: String,
}

/// A named group of members; routers refer to teams by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Team {
    /// Team id (UUID).
    pub id: TeamId,
    /// Owning account.
    pub account_id: AccountId,
    /// Name, unique per account.
    pub name: String,
    /// Member e-mails, in order.
    pub members: Vec<Email>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
}
