//! The response shape of a record (spec "Common record rules").

use crate::fields::catalogue::{Catalogue, DEFAULT_SYSTEM_FIELDS};
use crate::fields::properties::PropertyList;
use crate::model::record::Record;
use crate::timefmt::{rfc3339_millis, Archived, Timestamp};
use crate::types::ids::RecordId;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use std::borrow::Cow;

/// A record as the API shows it: a flat object (no nested `fields`) with `id`, the type's
/// default fields, `external_id`, the requested extra properties (stored value or `null`),
/// `archived` (`false` or the timestamp), `archived_by` on archived records, `created_at` and
/// `updated_at` (spec "Common record rules"; key order per `docs/decisions.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordView {
    /// Record id.
    pub id: RecordId,
    /// Default fields, `external_id` and extra properties, in that order, each once; written as
    /// members of the record object itself.
    pub properties: Vec<(Cow<'static, str>, Value)>,
    /// `false` while active, the archive time once archived.
    pub archived: Archived,
    /// Who archived it; only on archived records.
    pub archived_by: Option<String>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last write time.
    pub updated_at: Timestamp,
}

/// One flat JSON object: `id`, the properties, `archived`, `archived_by` (archived records only),
/// `created_at`, `updated_at`. Written by hand rather than with `#[serde(flatten)]`, which buffers
/// through serde's generic flattening on every response.
impl Serialize for RecordView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let members = self.properties.len() + 4 + usize::from(self.archived_by.is_some());
        let mut object = serializer.serialize_map(Some(members))?;
        object.serialize_entry("id", &self.id)?;
        for (name, value) in &self.properties {
            object.serialize_entry(name.as_ref(), value)?;
        }
        object.serialize_entry("archived", &self.archived)?;
        if let Some(by) = &self.archived_by {
            object.serialize_entry("archived_by", by)?;
        }
        object.serialize_entry("created_at", &self.created_at)?;
        object.serialize_entry("updated_at", &self.updated_at)?;
        object.end()
    }
}

impl RecordView {
    /// The view of `record` with the type's defaults and `extra`.
    pub fn new(record: &Record, catalogue: &Catalogue, extra: &PropertyList) -> Self {
        let defaults = catalogue.default_fields();
        let mut properties = Vec::with_capacity(defaults.len() + 1 + extra.names().len());
        for name in defaults.iter().copied().chain(["external_id"]) {
            properties.push((Cow::Borrowed(name), property_value(record, name)));
        }
        // `extra` holds each name once (`PropertyList::parse`); only a default can repeat one.
        for name in extra.names() {
            let shown = name == "external_id" || defaults.contains(&name.as_str());
            if !shown && !DEFAULT_SYSTEM_FIELDS.contains(&name.as_str()) {
                properties.push((Cow::Owned(name.clone()), property_value(record, name)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::object_type::ObjectType;
    use crate::types::ids::AccountId;
    use chrono::{TimeZone, Utc};
    use std::collections::BTreeMap;

    fn contact() -> Record {
        let at = Utc.with_ymd_and_hms(2026, 11, 27, 8, 0, 0).unwrap();
        Record {
            id: RecordId::parse("01936b2a-7c00-7a00-8000-000000000002").unwrap(),
            account_id: AccountId::from(uuid::Uuid::from_u128(1)),
            object_type: ObjectType::Contacts,
            values: BTreeMap::from([
                ("email".to_owned(), "dana@contoso.example".to_owned()),
                ("city".to_owned(), "Oslo".to_owned()),
            ]),
            created_at: at,
            updated_at: at + chrono::Duration::minutes(5),
            archived_at: None,
            archived_by: None,
            version: 1,
        }
    }

    #[test]
    fn a_view_is_one_flat_object_in_the_documented_order_each_member_once() {
        let catalogue = Catalogue::standard(ObjectType::Contacts);
        let extra = PropertyList::parse(
            Some("city,email,external_id,job_title,id,created_at"),
            &catalogue,
        )
        .unwrap();
        let text = serde_json::to_string(&RecordView::new(&contact(), &catalogue, &extra)).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"id":"01936b2a-7c00-7a00-8000-000000000002","first_name":null,"#,
                r#""last_name":null,"email":"dana@contoso.example","contact_owner":null,"#,
                r#""external_id":null,"city":"Oslo","job_title":null,"archived":false,"#,
                r#""created_at":"2026-11-27T08:00:00.000Z","updated_at":"2026-11-27T08:05:00.000Z"}"#
            )
        );
    }

    #[test]
    fn an_archived_view_names_who_archived_it() {
        let mut record = contact();
        record.archived_at = Some(record.updated_at);
        record.archived_by = Some("client-1".to_owned());
        let catalogue = Catalogue::standard(ObjectType::Contacts);
        let view = RecordView::new(&record, &catalogue, &PropertyList::none());
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["archived"], "2026-11-27T08:05:00.000Z");
        assert_eq!(json["archived_by"], "client-1");
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(
            keys[keys.len() - 4..],
            ["archived", "archived_by", "created_at", "updated_at"]
        );
    }
}
