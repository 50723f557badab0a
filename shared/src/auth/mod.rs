//! OAuth 2.0 client-credentials auth (RFC 6749 section 4.4) with JWT bearer tokens (RFC 7519,
//! RFC 6750). STUB: being written.

use serde::{Deserialize, Serialize};

/// A scope name of the API (spec "Authentication" 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scope {
    /// `service-api/read`
    #[serde(rename = "service-api/read")]
    Read,
    /// `service-api/create`
    #[serde(rename = "service-api/create")]
    Create,
    /// `service-api/update`
    #[serde(rename = "service-api/update")]
    Update,
    /// `service-api/delete`
    #[serde(rename = "service-api/delete")]
    Delete,
}

impl Scope {
    /// The scope's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "service-api/read",
            Self::Create => "service-api/create",
            Self::Update => "service-api/update",
            Self::Delete => "service-api/delete",
        }
    }
}
