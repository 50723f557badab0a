//! The response shape of a record (spec "Common record rules").

use crate::fields::catalogue::{Catalogue, DEFAULT_SYSTEM_FIELDS};
use crate::fields::properties::PropertyList;
use crate::model::record::Record;
use crate::timefmt::{rfc3339_millis, Archived, Timestamp};
use crate::types::ids::RecordId;
use serde::Serialize;
use serde_json::{Map, Value};

/// A record as the API shows it: a flat object (no nested `fields`) with `id`, the type's
/// default fields, `external_id`, the requested extra properties (stored value or `null`),
/// `archived` (`false` or the timestamp), `archived_by` on archived records, `created_at` and
/// `updated_at` (spec "Common record rules"; key order per `docs/decisions.md`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordView {
    /// Record id.
    pub id: RecordId,
    /// Default fields, `external_id` and extra properties, in that order.
    #[serde(flatten)]
    pub properties: Map<String, Value>,
    /// `false` while active, the archive time once archived.
    pub archived: Archived,
    /// Who archived it; only on archived records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived_by: Option<String>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last write time.
    pub updated_at: Timestamp,
}

impl RecordView {
    /// The view of `record` with the type's defaults and `extra`.
    pub fn new(record: &Record, catalogue: &Catalogue, extra: &PropertyList) -> Self {
        let mut properties = Map::new();
        for name in catalogue.default_fields().iter().chain(&["external_id"]) {
            properties.insert(name.to_string(), property_value(record, name));
        }
        for name in extra.names() {
            if !properties.contains_key(name) && !DEFAULT_SYSTEM_FIELDS.contains(&name.as_str()) {
                properties.insert(name.clone(), property_value(record, name));
            }
        }
        Self {
            id: record.id,
            properties,
            archived: Archived(record.archived_at),
            archived_by: record.archived_at.and(record.archived_by.clone()),
            created_at: Timestamp(record.created_at),
            updated_at: Timestamp(record.updated_at),
        }
    }
}

/// The value of one readable property: derived system fields, else the stored value or `null`.
pub fn property_value(record: &Record, name: &str) -> Value {
    match name {
        "record_id" => Value::String(record.id.to_string()),
        "create_date" => Value::String(rfc3339_millis(record.created_at)),
        "last_modified_date" => Value::String(rfc3339_millis(record.updated_at)),
        _ => record
            .value(name)
            .map_or(Value::Null, |v| Value::String(v.to_string())),
    }
}
