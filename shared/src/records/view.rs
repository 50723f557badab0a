//! The response shape of a record (spec "Common record rules").

use crate::fields::catalogue::{Catalogue, DEFAULT_SYSTEM_FIELDS};
use crate::fields::properties::PropertyList;
use crate::model::record::Record;
use crate::timefmt::{serialize_millis, Archived, Timestamp};
use crate::types::ids::RecordId;
use chrono::{DateTime, Utc};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::sync::Arc;

/// A record as the API shows it: a flat object (no nested `fields`) with `id`, the type's
/// default fields, `external_id`, the requested extra properties (stored value or `null`),
/// `archived` (`false` or the timestamp), `archived_by` on archived records, `created_at` and
/// `updated_at` (spec "Common record rules"; key order per `docs/decisions.md`).
///
/// It holds the record itself (shared with the embedded store's copy, see
/// [`crate::store::RecordStore::get_record_shared`]) and writes those members from it when
/// serialised, so a response copies no stored value on its way out.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordView {
    record: Arc<Record>,
    defaults: &'static [&'static str],
    extra: ExtraProperties,
}

/// The requested properties a [`RecordView`] shows after the defaults and `external_id`: each
/// requested name that is none of those and not a default system field (`id`, `created_at`,
/// `updated_at`, `archived`), once, in the requested order. Built once per request and shared by
/// the views of a list page.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExtraProperties(Option<Arc<[String]>>);

impl ExtraProperties {
    /// The names of `requested` that a view of `catalogue`'s type does not already show.
    pub fn new(catalogue: &Catalogue, requested: &PropertyList) -> Self {
        let defaults = catalogue.default_fields();
        // `requested` holds each name once (`PropertyList::parse`); only a default can repeat one.
        let names: Vec<String> = requested
            .names()
            .iter()
            .filter(|name| {
                let name = name.as_str();
                name != "external_id"
                    && !defaults.contains(&name)
                    && !DEFAULT_SYSTEM_FIELDS.contains(&name)
            })
            .cloned()
            .collect();
        Self((!names.is_empty()).then(|| names.into()))
    }

    fn names(&self) -> &[String] {
        self.0.as_deref().unwrap_or_default()
    }
}

/// One flat JSON object: `id`, the properties, `archived`, `archived_by` (archived records only),
/// `created_at`, `updated_at`. Written by hand rather than with `#[serde(flatten)]`, which buffers
/// through serde's generic flattening on every response.
impl Serialize for RecordView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let record = &self.record;
        let archived_by = record.archived_at.and(record.archived_by.as_deref());
        let members = 1
            + self.defaults.len()
            + 1
            + self.extra.names().len()
            + 3
            + usize::from(archived_by.is_some());
        let mut object = serializer.serialize_map(Some(members))?;
        object.serialize_entry("id", &record.id)?;
        let extra = self.extra.names().iter().map(String::as_str);
        for name in self
            .defaults
            .iter()
            .copied()
            .chain(["external_id"])
            .chain(extra)
        {
            object.serialize_entry(name, &PropertyValue::of(record, name))?;
        }
        object.serialize_entry("archived", &Archived(record.archived_at))?;
        if let Some(by) = archived_by {
            object.serialize_entry("archived_by", by)?;
        }
        object.serialize_entry("created_at", &Timestamp(record.created_at))?;
        object.serialize_entry("updated_at", &Timestamp(record.updated_at))?;
        object.end()
    }
}

impl RecordView {
    /// The view of a copy of `record` with the type's defaults and `extra`.
    pub fn new(record: &Record, catalogue: &Catalogue, extra: &PropertyList) -> Self {
        Self::of(
            Arc::new(record.clone()),
            catalogue,
            &ExtraProperties::new(catalogue, extra),
        )
    }

    /// The record's id.
    pub fn id(&self) -> RecordId {
        self.record.id
    }

    /// The view of `record` (kept, not copied) with the type's defaults and `extra`.
    pub fn of(record: Arc<Record>, catalogue: &Catalogue, extra: &ExtraProperties) -> Self {
        Self {
            record,
            defaults: catalogue.default_fields(),
            extra: extra.clone(),
        }
    }
}

/// The value of one readable property as a response writes it: the derived system fields
/// (`record_id`, `create_date`, `last_modified_date`) from the record's metadata, any other from
/// the stored values, `null` when it has none (spec "Common record rules").
enum PropertyValue<'a> {
    Id(&'a RecordId),
    Time(DateTime<Utc>),
    Stored(&'a str),
    Null,
}

impl<'a> PropertyValue<'a> {
    fn of(record: &'a Record, name: &str) -> Self {
        match name {
            "record_id" => Self::Id(&record.id),
            "create_date" => Self::Time(record.created_at),
            "last_modified_date" => Self::Time(record.updated_at),
            _ => record.value(name).map_or(Self::Null, Self::Stored),
        }
    }
}

impl Serialize for PropertyValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Id(id) => serializer.collect_str(id),
            Self::Time(at) => serialize_millis(*at, serializer),
            Self::Stored(value) => serializer.serialize_str(value),
            Self::Null => serializer.serialize_none(),
        }
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
    fn derived_properties_come_from_the_record_itself() {
        let record = contact();
        let catalogue = Catalogue::standard(ObjectType::Contacts);
        let extra = PropertyList::parse(
            Some("record_id,create_date,last_modified_date,first_name"),
            &catalogue,
        )
        .unwrap();
        let view = RecordView::of(
            Arc::new(record.clone()),
            &catalogue,
            &ExtraProperties::new(&catalogue, &extra),
        );
        assert_eq!(view, RecordView::new(&record, &catalogue, &extra));
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["record_id"], "01936b2a-7c00-7a00-8000-000000000002");
        assert_eq!(json["create_date"], "2026-11-27T08:00:00.000Z");
        assert_eq!(json["last_modified_date"], "2026-11-27T08:05:00.000Z");
        assert_eq!(json["first_name"], serde_json::Value::Null);
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(
            keys[5..9],
            [
                "external_id",
                "record_id",
                "create_date",
                "last_modified_date"
            ]
        );
        assert_eq!(keys.len(), 12, "first_name is a default: shown once");
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
