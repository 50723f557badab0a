//! Field definitions: a field's type, enumeration options, and the definitions an account stores.

use crate::model::object_type::ObjectType;
use serde::{Deserialize, Serialize};

/// A field's type (`field_type_id`, spec "Field types").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum FieldType {
    /// Text; `email` lowercased, `website_url` canonical host.
    String,
    /// Finite number, stored as decimal text.
    Number,
    /// `true` / `false`, stored as text.
    Bool,
    /// Instant, stored as RFC 3339 UTC with milliseconds.
    Datetime,
    /// One of the options, stored as its `internal_name`.
    Enumeration,
    /// A member, given by id or e-mail, stored as e-mail.
    User,
}

impl FieldType {
    /// The `field_type_id` text, e.g. `enumeration`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// An enumeration option: stored as `internal_name`, accepted also by display `name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnumOption {
    /// Stored value.
    pub internal_name: String,
    /// Display name.
    pub name: String,
}

/// A field definition stored for an account: a custom field, or extra options for a standard
/// enumeration (same `internal_name`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldDefinition {
    /// The record type it belongs to.
    pub object_type: ObjectType,
    /// Internal name, the key in `fields` and in responses.
    pub internal_name: String,
    /// Display name.
    pub name: String,
    /// Type.
    pub field_type: FieldType,
    /// Options, for enumerations.
    #[serde(default)]
    pub options: Vec<EnumOption>,
}
