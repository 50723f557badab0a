//! The four standard record types.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The four standard record types; the first path segment of a record route (spec "Common
/// record rules"), also a router's `object_type`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "lowercase")]
#[derive(strum::EnumString, strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "lowercase")]
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
        self.into()
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

    /// `Contact not found`, `Company not found`, ...: the 404 message of a record route.
    pub fn not_found_message(self) -> String {
        let noun = self.singular();
        let mut capital = noun.to_string();
        capital[..1].make_ascii_uppercase();
        format!("{capital} not found")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_names_do_not() {
        for t in ObjectType::ALL {
            assert_eq!(t.as_str().parse::<ObjectType>(), Ok(t));
            assert_eq!(t.to_string(), t.as_str());
        }
        assert!("Contacts".parse::<ObjectType>().is_err());
        assert_eq!(
            ObjectType::Companies.not_found_message(),
            "Company not found"
        );
    }
}
