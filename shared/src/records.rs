//! The record service: list, create, read, update and archive contacts, companies, deals and
//! tickets (spec "Record collection endpoints", "Record item endpoints", BEHAVIOR 3).
//!
//! Handlers authenticate, check the scope and parse the query; everything after that is here,
//! in the contract's order of checks (BEHAVIOR 2): path -> 404 -> 409 (archived) -> body and
//! fields (400) -> duplicate (409).

use crate::clock::Clock;
use crate::error::ApiError;
use crate::fields::validate::{validate_fields, FieldInput};
use crate::fields::{Catalogue, CatalogueCache, DEFAULT_SYSTEM_FIELDS};
use crate::model::{ObjectType, Record};
use crate::store::{Page, Store, StoreError, UniqueKey};
use crate::timefmt::rfc3339_millis;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

/// How many times a write that lost a race (version conflict) is re-read and re-applied.
const CONFLICT_RETRIES: usize = 8;

/// The record operations of one warm instance: the store, the clock and the catalogue cache.
pub struct RecordService {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    catalogues: Arc<CatalogueCache>,
}

/// Who is writing: the account of the token and the actor recorded as `archived_by`.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// The token's `account_id`.
    pub account_id: Uuid,
    /// The token's `sub` (the API client id).
    pub actor: &'a str,
}

impl RecordService {
    /// A service over `store`.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        catalogues: Arc<CatalogueCache>,
    ) -> Self {
        Self {
            store,
            clock,
            catalogues,
        }
    }

    async fn catalogue(
        &self,
        account_id: Uuid,
        object_type: ObjectType,
    ) -> Result<Catalogue, ApiError> {
        let all = self.catalogues.get(self.store.as_ref(), account_id).await?;
        Ok(all.get(object_type).clone())
    }

    /// `GET /{type}`: `{data, pagination: {limit, offset, count}}`.
    ///
    /// Errors: 400 `Invalid property name: <name>`.
    pub async fn list(
        &self,
        account_id: Uuid,
        object_type: ObjectType,
        properties: Option<&str>,
        page: Page,
    ) -> Result<Value, ApiError> {
        let catalogue = self.catalogue(account_id, object_type).await?;
        let extra = parse_properties(properties, &catalogue)?;
        let records = self
            .store
            .list_records(account_id, object_type, page)
            .await?;
        let data: Vec<Value> = records
            .iter()
            .map(|r| record_json(r, &catalogue, &extra))
            .collect();
        Ok(json!({
            "data": data,
            "pagination": {"limit": page.limit, "offset": page.offset, "count": data.len()},
        }))
    }

    /// `GET /{type}/{id}`: the record (archived ones too), defaults plus `properties`.
    ///
    /// Errors: 400 invalid `properties`; 404 when the id is not a record of this account and type.
    pub async fn get(
        &self,
        account_id: Uuid,
        object_type: ObjectType,
        id: &str,
        properties: Option<&str>,
    ) -> Result<Value, ApiError> {
        let catalogue = self.catalogue(account_id, object_type).await?;
        let extra = parse_properties(properties, &catalogue)?;
        let record = self.find(account_id, object_type, id).await?;
        Ok(record_json(&record, &catalogue, &extra))
    }

    /// `POST /{type}` with body `{fields: {...}}`: validates everything, then creates the record
    /// and claims its unique keys in one atomic store write. Returns the 201 body: the default
    /// fields plus every field the request set, in stored form.
    ///
    /// Errors: 400 invalid JSON, `fields` missing, unknown / system-managed field, validation,
    /// required-on-create; 409 duplicate active unique key (`field` set).
    pub async fn create(
        &self,
        caller: Caller<'_>,
        object_type: ObjectType,
        body: &[u8],
    ) -> Result<Value, ApiError> {
        let catalogue = self.catalogue(caller.account_id, object_type).await?;
        let fields = fields_of(body)?;
        let inputs = self
            .resolve(caller.account_id, validate_fields(&catalogue, &fields)?)
            .await?;
        let now = self.clock.now();
        let mut values = BTreeMap::new();
        apply(&mut values, &catalogue, &inputs, now);
        check_required(object_type, &values)?;
        let record = Record {
            id: Uuid::now_v7(),
            account_id: caller.account_id,
            object_type,
            values,
            created_at: now,
            updated_at: now,
            archived_at: None,
            archived_by: None,
            version: 1,
        };
        let keys = unique_keys(&catalogue, &record);
        match self.store.create_record(&record, &keys).await {
            Ok(()) => {}
            Err(StoreError::Duplicate { field }) => return Err(duplicate(object_type, field)),
            Err(e) => return Err(e.into()),
        }
        let set: Vec<String> = fields.keys().cloned().collect();
        Ok(record_json(&record, &catalogue, &set))
    }

    /// `PATCH /{type}/{id}` with body `{fields: {...}}`: changes only the keys sent, refreshes
    /// `updated_at` / `last_modified_date`, moves changed unique keys atomically.
    ///
    /// Errors, in this order: 400 invalid `properties`; 404; 409 `Cannot update an archived
    /// object`; 400 body and field validation; 409 duplicate (`field` set).
    pub async fn update(
        &self,
        caller: Caller<'_>,
        object_type: ObjectType,
        id: &str,
        properties: Option<&str>,
        body: &[u8],
    ) -> Result<Value, ApiError> {
        let catalogue = self.catalogue(caller.account_id, object_type).await?;
        let extra = parse_properties(properties, &catalogue)?;
        let mut current = self.find(caller.account_id, object_type, id).await?;
        if !current.is_active() {
            return Err(archived_conflict());
        }
        let fields = fields_of(body)?;
        let inputs = self
            .resolve(caller.account_id, validate_fields(&catalogue, &fields)?)
            .await?;
        for _ in 0..CONFLICT_RETRIES {
            let now = self.clock.now().max(current.updated_at);
            let mut next = current.clone();
            apply(&mut next.values, &catalogue, &inputs, now);
            next.updated_at = now;
            next.version = current.version + 1;
            let (claimed, released) = key_changes(&catalogue, &current, &next);
            match self
                .store
                .update_record(&next, current.version, &claimed, &released)
                .await
            {
                Ok(()) => return Ok(record_json(&next, &catalogue, &extra)),
                Err(StoreError::Duplicate { field }) => return Err(duplicate(object_type, field)),
                Err(StoreError::Conflict) => {
                    current = self.find(caller.account_id, object_type, id).await?;
                    if !current.is_active() {
                        return Err(archived_conflict());
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::internal(
            "record update kept conflicting with concurrent writes",
        ))
    }

    /// `DELETE /{type}/{id}`: archives the record (retained), releasing its unique keys. Returns
    /// the record with default properties, `archived` set and `archived_by` = the caller's actor.
    ///
    /// Errors: 404 when not found or already archived.
    pub async fn archive(
        &self,
        caller: Caller<'_>,
        object_type: ObjectType,
        id: &str,
    ) -> Result<Value, ApiError> {
        let catalogue = self.catalogue(caller.account_id, object_type).await?;
        for _ in 0..CONFLICT_RETRIES {
            let current = self.find(caller.account_id, object_type, id).await?;
            if !current.is_active() {
                return Err(not_found(object_type));
            }
            let now = self.clock.now().max(current.updated_at);
            let mut next = current.clone();
            next.archived_at = Some(now);
            next.archived_by = Some(caller.actor.to_string());
            next.updated_at = now;
            next.version = current.version + 1;
            let released = unique_keys(&catalogue, &current);
            match self
                .store
                .update_record(&next, current.version, &[], &released)
                .await
            {
                Ok(()) => return Ok(record_json(&next, &catalogue, &[])),
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::internal(
            "record archive kept conflicting with concurrent writes",
        ))
    }

    async fn find(
        &self,
        account_id: Uuid,
        object_type: ObjectType,
        id: &str,
    ) -> Result<Record, ApiError> {
        // A path id that is not a UUID names no record (BEHAVIOR 3).
        let Ok(id) = Uuid::parse_str(id) else {
            return Err(not_found(object_type));
        };
        self.store
            .get_record(account_id, object_type, id)
            .await?
            .ok_or_else(|| not_found(object_type))
    }

    /// Turns validated inputs into the values to write (`None` clears), resolving `user` inputs
    /// to the e-mail of an active member of the account (by id or e-mail).
    ///
    /// Errors: 400 naming the field when no active member matches.
    async fn resolve(
        &self,
        account_id: Uuid,
        inputs: Vec<(String, FieldInput)>,
    ) -> Result<Vec<(String, Option<String>)>, ApiError> {
        let mut resolved = Vec::with_capacity(inputs.len());
        for (name, input) in inputs {
            let value = match input {
                FieldInput::Set(v) => Some(v),
                FieldInput::Clear => None,
                FieldInput::Member(given) => {
                    let member = match Uuid::parse_str(&given) {
                        Ok(id) => self.store.get_member(account_id, id).await?,
                        Err(_) => self.store.find_member_by_email(account_id, &given).await?,
                    };
                    match member.filter(|m| m.is_active()) {
                        Some(m) => Some(m.email),
                        None => {
                            return Err(ApiError::bad_field(
                                &name,
                                format!("Invalid value for {name}: no active member with id or e-mail \"{given}\""),
                            ))
                        }
                    }
                }
            };
            resolved.push((name, value));
        }
        Ok(resolved)
    }
}

/// Parses the body `{fields: {...}}`.
///
/// Errors: 400 `Invalid JSON: ...` for a body that does not parse or is not an object; 400 with
/// `field: "fields"` when `fields` is missing or not an object.
pub fn fields_of(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let mut object = crate::api::json_object(body)?;
    match object.remove("fields") {
        Some(Value::Object(fields)) => Ok(fields),
        Some(_) => Err(ApiError::bad_field(
            "fields",
            "Invalid fields: must be an object",
        )),
        None => Err(ApiError::bad_field(
            "fields",
            "Missing required property: fields",
        )),
    }
}

/// Writes resolved values into `values` (`None` removes) and stamps owner-assigned dates.
fn apply(
    values: &mut BTreeMap<String, String>,
    catalogue: &Catalogue,
    inputs: &[(String, Option<String>)],
    now: chrono::DateTime<chrono::Utc>,
) {
    for (name, value) in inputs {
        match value {
            Some(v) => values.insert(name.clone(), v.clone()),
            None => values.remove(name),
        };
        // Including an owner field, even as null, stamps its companion date (BEHAVIOR 3).
        if catalogue.get(name).is_some_and(|f| f.is_owner_field()) {
            values.insert(format!("{name}_assigned_date"), rfc3339_millis(now));
        }
    }
}

/// Required-on-create per type (spec "POST" table).
///
/// Errors: 400 `At least one of ... is required` (contacts, companies) or `Missing required
/// field: <name>` with `field` (deals, tickets).
pub fn check_required(
    object_type: ObjectType,
    values: &BTreeMap<String, String>,
) -> Result<(), ApiError> {
    let any_of = |names: &[&str]| -> Result<(), ApiError> {
        if names.iter().any(|n| values.contains_key(*n)) {
            Ok(())
        } else {
            Err(ApiError::bad_request(format!(
                "At least one of {} is required",
                names.join(", ")
            )))
        }
    };
    let all_of = |names: &[&str]| -> Result<(), ApiError> {
        match names.iter().find(|n| !values.contains_key(**n)) {
            Some(missing) => Err(ApiError::bad_field(
                *missing,
                format!("Missing required field: {missing}"),
            )),
            None => Ok(()),
        }
    };
    match object_type {
        ObjectType::Contacts => any_of(&["email", "first_name", "last_name"]),
        ObjectType::Companies => any_of(&["company_name", "website_url"]),
        ObjectType::Deals => all_of(&["deal_name", "deal_stage", "pipeline"]),
        ObjectType::Tickets => all_of(&["ticket_name", "ticket_stage", "pipeline"]),
    }
}

/// The unique keys a record holds, in the spec's order (BEHAVIOR 3).
pub fn unique_keys(catalogue: &Catalogue, record: &Record) -> Vec<UniqueKey> {
    catalogue
        .unique_keys()
        .iter()
        .filter_map(|field| {
            record.value(field).map(|value| UniqueKey {
                field: field.to_string(),
                value: value.to_string(),
            })
        })
        .collect()
}

fn key_changes(
    catalogue: &Catalogue,
    before: &Record,
    after: &Record,
) -> (Vec<UniqueKey>, Vec<UniqueKey>) {
    let old = unique_keys(catalogue, before);
    let new = unique_keys(catalogue, after);
    let claimed = new.iter().filter(|k| !old.contains(k)).cloned().collect();
    let released = old.iter().filter(|k| !new.contains(k)).cloned().collect();
    (claimed, released)
}

fn not_found(object_type: ObjectType) -> ApiError {
    let noun = object_type.singular();
    let mut capital = noun.to_string();
    capital[..1].make_ascii_uppercase();
    ApiError::not_found(format!("{capital} not found"))
}

fn archived_conflict() -> ApiError {
    ApiError::Conflict {
        message: "Cannot update an archived object".into(),
        field: None,
    }
}

fn duplicate(object_type: ObjectType, field: String) -> ApiError {
    ApiError::Conflict {
        message: format!(
            "A {} with this {field} already exists",
            object_type.singular()
        ),
        field: Some(field),
    }
}

/// Parses `properties` (BEHAVIOR 3): comma-separated names, trimmed, duplicates ignored; `id`,
/// `created_at`, `updated_at`, `archived` accepted as no-ops.
///
/// Errors: 400 `Invalid property name: <name>` for an empty value, an empty name, `archived_by`,
/// or a name that is not a field of the type (system fields are readable).
pub fn parse_properties(raw: Option<&str>, catalogue: &Catalogue) -> Result<Vec<String>, ApiError> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    let mut names: Vec<String> = Vec::new();
    for name in raw.split(',').map(str::trim) {
        let known = DEFAULT_SYSTEM_FIELDS.contains(&name) || catalogue.get(name).is_some();
        if name.is_empty() || !known {
            let shown = if name.is_empty() { "(empty)" } else { name };
            return Err(ApiError::bad_field(
                "properties",
                format!("Invalid property name: {shown}"),
            ));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    Ok(names)
}

/// The flat response object of a record (spec "Common record rules"): `id`, the type's default
/// fields, `external_id`, then each of `extra` (stored value or `null`), `archived` (`false` or
/// the timestamp), `archived_by` on archived records, `created_at`, `updated_at`.
pub fn record_json(record: &Record, catalogue: &Catalogue, extra: &[String]) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), json!(record.id));
    for name in catalogue.default_fields().iter().chain(&["external_id"]) {
        out.insert(name.to_string(), property_value(record, name));
    }
    for name in extra {
        if !out.contains_key(name) && !DEFAULT_SYSTEM_FIELDS.contains(&name.as_str()) {
            out.insert(name.clone(), property_value(record, name));
        }
    }
    match (record.archived_at, &record.archived_by) {
        (Some(at), by) => {
            out.insert("archived".into(), json!(rfc3339_millis(at)));
            out.insert("archived_by".into(), json!(by));
        }
        (None, _) => {
            out.insert("archived".into(), json!(false));
        }
    }
    out.insert(
        "created_at".into(),
        json!(rfc3339_millis(record.created_at)),
    );
    out.insert(
        "updated_at".into(),
        json!(rfc3339_millis(record.updated_at)),
    );
    Value::Object(out)
}

/// The value of one readable property: derived system fields, else the stored value or `null`.
pub fn property_value(record: &Record, name: &str) -> Value {
    match name {
        "record_id" => json!(record.id.to_string()),
        "create_date" => json!(rfc3339_millis(record.created_at)),
        "last_modified_date" => json!(rfc3339_millis(record.updated_at)),
        _ => record.value(name).map_or(Value::Null, |v| json!(v)),
    }
}
