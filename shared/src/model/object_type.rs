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

/// The OpenAPI operation ids of one record type's routes ([`ObjectType::operation_ids`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordOperationIds {
    /// `POST /{type}`, e.g. `createContact`.
    pub create: String,
    /// `GET /{type}/{id}`, e.g. `getContact`.
    pub get: String,
    /// `PATCH /{type}/{id}`, e.g. `updateContact`.
    pub update: String,
    /// `GET /{type}`, e.g. `listContacts`.
    pub list: String,
}

/// `word` with its first (ASCII) letter in upper case.
fn capitalized(word: &str) -> String {
    let mut capital = word.to_string();
    capital[..1].make_ascii_uppercase();
    capital
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
        format!("{} not found", capitalized(self.singular()))
    }

    /// The OpenAPI operation ids of the type's record routes (`createContact`, `getContact`,
    /// `updateContact`, `listContacts`), as the records function names them.
    pub fn operation_ids(self) -> RecordOperationIds {
        let one = capitalized(self.singular());
        RecordOperationIds {
            create: format!("create{one}"),
            get: format!("get{one}"),
            update: format!("update{one}"),
            list: format!("list{}", capitalized(self.as_str())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_name_the_singular_and_the_plural() {
        let ids = ObjectType::Companies.operation_ids();
        assert_eq!(
            [ids.create, ids.get, ids.update, ids.list],
            [
                "createCompany",
                "getCompany",
                "updateCompany",
                "listCompanies"
            ]
        );
        assert_eq!(ObjectType::Deals.operation_ids().list, "listDeals");
    }

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
