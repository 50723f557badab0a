//! The `properties` query parameter of the record routes (spec "Record collection endpoints";
//! BEHAVIOR 3).

use super::catalogue::{Catalogue, DEFAULT_SYSTEM_FIELDS};
use crate::error::DomainError;

/// The extra property names a record response shows besides the type's defaults, parsed against
/// the account's catalogue of the record type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PropertyList(Vec<String>);

impl PropertyList {
    /// No extra properties.
    pub fn none() -> Self {
        Self::default()
    }

    /// Parses a raw `properties` value (repeated parameters already joined with commas):
    /// comma-separated names, trimmed, duplicates ignored; `id`, `created_at`, `updated_at` and
    /// `archived` are accepted as no-ops. `None` (the parameter absent) is the empty list.
    ///
    /// Errors: 400 `Invalid property name: <name>` (`field: properties`) for an empty value, an
    /// empty name (`(empty)`), `archived_by`, or a name that is neither a field of the type nor
    /// a system field.
    pub fn parse(raw: Option<&str>, catalogue: &Catalogue) -> Result<Self, DomainError> {
        let Some(raw) = raw else {
            return Ok(Self::none());
        };
        let mut names: Vec<String> = Vec::new();
        for name in raw.split(',').map(str::trim) {
            let known = DEFAULT_SYSTEM_FIELDS.contains(&name) || catalogue.get(name).is_some();
            if name.is_empty() || !known {
                let shown = if name.is_empty() { "(empty)" } else { name };
                return Err(DomainError::bad_field(
                    "properties",
                    format!("Invalid property name: {shown}"),
                ));
            }
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
        Ok(Self(names))
    }

    /// Names given explicitly, e.g. every key a create request set; each kept once, in the order
    /// of its first appearance (as [`PropertyList::parse`] keeps them).
    pub fn from_names(names: impl IntoIterator<Item = String>) -> Self {
        let mut list: Vec<String> = Vec::new();
        for name in names {
            if !list.contains(&name) {
                list.push(name);
            }
        }
        Self(list)
    }

    /// The names, in the order asked.
    pub fn names(&self) -> &[String] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::object_type::ObjectType;

    #[test]
    fn names_are_trimmed_deduplicated_and_checked_against_the_catalogue() {
        let c = Catalogue::standard(ObjectType::Contacts);
        let list = PropertyList::parse(Some(" city ,job_title,city,id"), &c).unwrap();
        assert_eq!(list.names(), ["city", "job_title", "id"]);
        assert_eq!(PropertyList::parse(None, &c).unwrap(), PropertyList::none());
        for (raw, shown) in [
            ("", "(empty)"),
            ("city,,zip", "(empty)"),
            ("archived_by", "archived_by"),
            ("deal_stage", "deal_stage"),
        ] {
            let err = PropertyList::parse(Some(raw), &c).unwrap_err();
            assert_eq!(err.to_string(), format!("Invalid property name: {shown}"));
            assert_eq!(err.field(), Some("properties"));
        }
    }

    #[test]
    fn explicit_names_are_kept_once_in_first_order() {
        let list = PropertyList::from_names(["b", "a", "b", "c", "a"].map(String::from));
        assert_eq!(list.names(), ["b", "a", "c"]);
    }
}
