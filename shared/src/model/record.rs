//! Records: contacts, companies, deals and tickets.

use super::object_type::ObjectType;
use crate::timefmt::rfc3339_millis;
use crate::types::ids::{AccountId, RecordId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// A stored contact, company, deal or ticket.
///
/// `values` holds every field that has a value, in stored (canonical) text form (spec "Field
/// types"): standard and custom fields, `external_id`, and the `*_owner_assigned_date` system
/// fields. A field absent from the map is `null`. `record_id`, `create_date` and
/// `last_modified_date` are derived from `id`, `created_at` and `updated_at`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Record id (UUID v7 for API-created records).
    pub id: RecordId,
    /// Owning account.
    pub account_id: AccountId,
    /// Contact, company, deal or ticket.
    pub object_type: ObjectType,
    /// Field values by internal name, stored form.
    pub values: BTreeMap<String, String>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last write time.
    pub updated_at: DateTime<Utc>,
    /// Archive time; `None` while active.
    pub archived_at: Option<DateTime<Utc>>,
    /// Who archived it (token `sub` or member id); set with `archived_at`.
    pub archived_by: Option<String>,
    /// Optimistic-concurrency version, incremented by every write.
    pub version: u64,
}

impl Record {
    /// Whether the record is active (not archived).
    pub fn is_active(&self) -> bool {
        self.archived_at.is_none()
    }

    /// The stored value of a field, `None` when unset.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The value of any readable field as triggers and SLA checks read it (BEHAVIOR 5, 14):
    /// `record_id`, `create_date` and `last_modified_date` from the record's metadata (RFC 3339
    /// UTC with milliseconds), every other field from [`Self::values`]; `None` when it has no
    /// value (absent, or blank text).
    pub fn field(&self, name: &str) -> Option<Cow<'_, str>> {
        let value = match name {
            "record_id" => Cow::Owned(self.id.to_string()),
            "create_date" => Cow::Owned(rfc3339_millis(self.created_at)),
            "last_modified_date" => Cow::Owned(rfc3339_millis(self.updated_at)),
            other => Cow::Borrowed(self.values.get(other)?.as_str()),
        };
        (!value.trim().is_empty()).then_some(value)
    }
}

/// A unique key of a record (BEHAVIOR 3): the field's internal name and its canonical value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UniqueKey {
    /// `email`, `website_url` or `external_id`.
    pub field: String,
    /// The canonical stored value.
    pub value: String,
}
