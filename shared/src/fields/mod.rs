//! The field catalogue per record type and write validation.
//!
//! Every account starts with the standard catalogue (`docs/seed-format.md`, "Standard fields"); its stored
//! definitions add custom fields and options of standard enumerations (BEHAVIOR 3).

pub mod cache;
pub mod catalogue;
pub mod definition;
pub mod properties;
pub mod validate;

pub use cache::{AccountCatalogues, CatalogueCache};
pub use catalogue::{Catalogue, FieldDef, FieldOrigin, DEFAULT_SYSTEM_FIELDS};
pub use definition::{EnumOption, FieldDefinition, FieldType};
pub use properties::PropertyList;
