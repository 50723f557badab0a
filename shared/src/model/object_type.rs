use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The four standard record types; the first path segment of a record route (spec "Common
/// record rules"), also a router's `object_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectType {
    /// `/contacts`
    Contacts,
    /// `/companies`
    Companies,
    /// `/deals`
    Deals,
    /// `/tickets`
    Tickets,
}

impl ObjectType {
    /// All four, in the spec's order.
    pub const ALL: [ObjectType; 4] = [Self::Contacts, Self::Companies, Self::Deals, Self::Tickets];

    /// Plural path name, e.g. `contacts`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Contacts => "contacts",
            Self::Companies => "companies",
            Self::Deals => "deals",
            Self::Tickets => "tickets",
        }
    }

    /// Singular noun for messages, e.g. `contact`.
    pub fn singular(self) -> &'static str {
        match self {
            Self::Contacts => "contact",
            Self::Companies => "company",
            Self::Deals => "deal",
            Self::Tickets => "ticket",
        }
    }

    /// Name of the path id parameter in the spec: `contactId`, `companyId`, `dealId`, `ticketId`.
    pub fn path_id_name(self) -> &'static str {
        match self {
            Self::Contacts => "contactId",
            Self::Companies => "companyId",
            Self::Deals => "dealId",
            Self::Tickets => "ticketId",
        }
    }
}

impl fmt::Display for ObjectType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ObjectType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| format!("unknown object type \"{s}\""))
    }
}
