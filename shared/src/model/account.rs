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

/// The CRM a connection speaks to (BEHAVIOR 7): stored as `hubspot` or `salesforce`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CrmProvider {
    /// HubSpot CRM v3 ("HubSpot as it is").
    HubSpot,
    /// Salesforce's REST API ("Salesforce as it is").
    Salesforce,
}

impl CrmProvider {
    /// The name as the seed and the store spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HubSpot => "hubspot",
            Self::Salesforce => "salesforce",
        }
    }

    /// The provider named `name` (`hubspot`, `salesforce`), if any.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "hubspot" => Some(Self::HubSpot),
            "salesforce" => Some(Self::Salesforce),
            _ => None,
        }
    }
}

impl std::fmt::Display for CrmProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A CRM connection (BEHAVIOR 7), as stored: every secret sealed ([`crate::secrets::Sealer`]),
/// never as sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrmConnection {
    /// The CRM.
    pub provider: CrmProvider,
    /// Base URL of the CRM's API (HubSpot), or the org's My Domain URL (Salesforce); checked by
    /// the outbound guard when provisioned and before every request.
    pub base_url: String,
    /// How requests are authorized: a private app's access token, or an OAuth app's
    /// credentials. Stored as the seed gives them (`access_token`, or `oauth`), sealed.
    #[serde(flatten)]
    pub credentials: SealedCrmCredentials,
    /// What the connection says beyond its URL and credentials.
    #[serde(flatten)]
    pub options: CrmOptions,
}

/// What a connection says beyond its URL and credentials (the seed format's optional `crm`
/// keys); each key belongs to one provider and is refused on the other's connection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CrmOptions {
    /// HubSpot: the id property per object type (`id_properties`, BEHAVIOR 7 "Object ids"): the
    /// record's `external_id` is that property's value, sent as `?idProperty=<name>`. Empty:
    /// object ids.
    #[serde(default, skip_serializing_if = "IdProperties::is_empty")]
    pub id_properties: IdProperties,
    /// HubSpot: requests per second per account, 1 to 10 (`max_requests_per_second`; default
    /// 10, BEHAVIOR 7 "Rate limits").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests_per_second: Option<u32>,
    /// Salesforce: the REST API version, `NN.N` (`api_version`; default [`SALESFORCE_API_VERSION`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Salesforce: the sObject of contacts, `Contact` (default) or `Lead` (`objects.contacts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contacts_object: Option<String>,
    /// Salesforce: the share of the org's daily API requests (`Sforce-Limit-Info`) at or above
    /// which syncs wait, 0 to 1 (`max_api_share`; default [`MAX_API_SHARE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_api_share: Option<f64>,
}

/// The Salesforce REST API version used when the connection names none (BEHAVIOR 7).
pub const SALESFORCE_API_VERSION: &str = "66.0";

/// The share of the org's daily API requests at or above which syncs wait, when the connection
/// names none (BEHAVIOR 7).
pub const MAX_API_SHARE: f64 = 0.9;

/// The credentials of a stored connection, sealed (BEHAVIOR 7 "OAuth apps").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SealedCrmCredentials {
    /// A private app: its access token, sealed under [`crate::secrets::crm_token_context`].
    PrivateApp {
        /// The sealed access token.
        access_token: SealedSecret,
    },
    /// An OAuth app (`oauth` in the seed): access tokens come from a grant (HubSpot's
    /// refresh-token grant; Salesforce's client-credentials or refresh-token grant).
    OAuth {
        /// The app's credentials, secrets sealed.
        oauth: SealedOAuthApp,
    },
}

/// An OAuth app's credentials as stored: the client secret and the refresh token sealed under
/// [`crate::secrets::crm_oauth_context`] of their purpose and the account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SealedOAuthApp {
    /// The app's client id (HubSpot: shown in the app's install URL; Salesforce: the External
    /// Client App's consumer key). Not a secret.
    pub client_id: String,
    /// The sealed client secret.
    pub client_secret: SealedSecret,
    /// The sealed refresh token of the app's install (always for HubSpot; for Salesforce only
    /// when the connection uses the refresh-token grant instead of client credentials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<SealedSecret>,
}

/// A connection's credentials in the clear, in memory only: as the seed gives them before
/// they are sealed, and as a sync presents them once opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrmCredentials {
    /// A private app's access token.
    PrivateApp(CrmSecret),
    /// An OAuth app's credentials.
    OAuth(OAuthApp),
}

impl CrmCredentials {
    /// Every secret of the credentials (for redaction).
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            Self::PrivateApp(token) => vec![token.expose()],
            Self::OAuth(app) => {
                let mut secrets = vec![app.client_secret.expose()];
                secrets.extend(app.refresh_token.as_ref().map(CrmSecret::expose));
                secrets
            }
        }
    }
}

/// An OAuth app's credentials in the clear (BEHAVIOR 7; RFC 6749 sections 4.4 and 6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthApp {
    /// The app's client id.
    pub client_id: String,
    /// The app's client secret.
    pub client_secret: CrmSecret,
    /// The refresh token of the app's install: HubSpot's always; Salesforce's when the
    /// connection uses the refresh-token grant (else the client-credentials grant).
    pub refresh_token: Option<CrmSecret>,
}

/// The id property per object type of a connection (`id_properties`): a HubSpot property whose
/// values are unique for that object type (e.g. `email` for contacts). Keys are object types
/// (`contacts`, `companies`, `deals`, `tickets`), checked when provisioned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IdProperties(std::collections::BTreeMap<String, String>);

impl IdProperties {
    /// The id properties given per object type.
    pub fn new(
        properties: impl IntoIterator<Item = (crate::model::object_type::ObjectType, String)>,
    ) -> Self {
        Self(
            properties
                .into_iter()
                .map(|(t, name)| (t.as_str().to_string(), name))
                .collect(),
        )
    }

    /// Whether no object type has an id property.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The id property of `object_type`, if the connection names one.
    pub fn get(&self, object_type: crate::model::object_type::ObjectType) -> Option<&str> {
        self.0.get(object_type.as_str()).map(String::as_str)
    }
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

/// A CRM secret in the clear (an access token, an OAuth client secret or refresh token), only
/// in memory while it is presented: its `Debug` is redacted so it never reaches a log line
/// through a struct that holds it (BEHAVIOR 7).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CrmSecret(String);

/// A CRM access token in the clear (see [`CrmSecret`]).
pub type CrmAccessToken = CrmSecret;

impl CrmSecret {
    /// A secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret itself, for the request that presents it and for redaction.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for CrmSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CrmSecret([REDACTED])")
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
    /// Whether the client is shut out (the seed's `clients[].disabled`, BEHAVIOR 1): it
    /// authenticates no more, as an unknown client, and its tokens are refused.
    #[serde(default)]
    pub disabled: bool,
    /// The client's key generation: 0 when provisioned, one more at every change provisioning
    /// makes to it (secret, `disabled`, scopes). Tokens carry the generation they were issued
    /// under (claim `gen`); one of an older generation is refused (BEHAVIOR 1).
    #[serde(default)]
    pub generation: u64,
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
