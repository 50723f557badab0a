//! The API's scopes (spec "Authentication" 4) and which route needs which (BEHAVIOR 1).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A scope name of the API (spec "Authentication" 4). The names are exact and case-sensitive.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    ToSchema,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::Display,
    strum::EnumIter,
)]
pub enum Scope {
    /// `service-api/read`: every GET, and the dispatch explain (dry run).
    #[serde(rename = "service-api/read")]
    #[strum(serialize = "service-api/read")]
    Read,
    /// `service-api/create`: POST on a record collection.
    #[serde(rename = "service-api/create")]
    #[strum(serialize = "service-api/create")]
    Create,
    /// `service-api/update`: PATCH on a record or a user, and dispatch.
    #[serde(rename = "service-api/update")]
    #[strum(serialize = "service-api/update")]
    Update,
    /// `service-api/delete`: DELETE on a record.
    #[serde(rename = "service-api/delete")]
    #[strum(serialize = "service-api/delete")]
    Delete,
}

impl Scope {
    /// Every scope of the API, in the order of the spec's table.
    pub const ALL: [Scope; 4] = [Self::Read, Self::Create, Self::Update, Self::Delete];

    /// The scope's name, e.g. `service-api/read`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A scope name that is not one of [`Scope::ALL`]; holds the name as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope: {0}")]
pub struct UnknownScope(pub String);

impl Scope {
    /// Parses the exact, case-sensitive scope name (`service-api/read`, ...); nothing else.
    ///
    /// Errors: [`UnknownScope`] holding the text.
    pub fn parse(name: &str) -> Result<Self, UnknownScope> {
        name.parse().map_err(|_| UnknownScope(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scope_parses_back_from_its_name() {
        for scope in Scope::ALL {
            assert_eq!(Scope::parse(scope.as_str()), Ok(scope));
            assert_eq!(scope.to_string(), scope.as_str());
        }
    }

    #[test]
    fn scope_names_are_exact_and_case_sensitive() {
        for name in [
            "Service-API/read",
            "service-api/read ",
            "read",
            "service-api/",
            "",
        ] {
            assert_eq!(
                Scope::parse(name),
                Err(UnknownScope(name.to_owned())),
                "{name:?}"
            );
        }
    }

    #[test]
    fn serde_names_match_the_scope_names() {
        for scope in Scope::ALL {
            let json = serde_json::to_value(scope).expect("a scope serializes");
            assert_eq!(json, serde_json::json!(scope.as_str()));
        }
    }
}
