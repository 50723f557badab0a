//! Schemas of the four record types, generated from the standard field catalogue
//! (`contracts/standard-fields.md`, [`Catalogue::standard`]): the response object (the type's
//! default fields plus any requested property), the list, the write bodies and the `properties`
//! parameter. An account's custom fields are not in the document: they are accepted the same
//! way, as described on each schema.

use crate::fields::catalogue::Catalogue;
use crate::fields::definition::FieldType;
use crate::model::object_type::ObjectType;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::{RefOr, Required, Schema};
use utoipa::{IntoParams, PartialSchema, ToSchema};

/// Parses a JSON Schema written as JSON into utoipa's model.
pub(crate) fn schema(value: Value) -> RefOr<Schema> {
    match serde_json::from_value::<Schema>(value) {
        Ok(schema) => RefOr::T(schema),
        Err(error) => {
            // The inputs are literals of this module; a mistake is a programming error that the
            // committed-document test shows at once.
            tracing::error!(%error, "invalid schema literal");
            RefOr::T(Schema::default())
        }
    }
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// The schema name stem of a type: `Contact`, `Company`, `Deal`, `Ticket`.
pub fn type_name(object_type: ObjectType) -> &'static str {
    match object_type {
        ObjectType::Contacts => "Contact",
        ObjectType::Companies => "Company",
        ObjectType::Deals => "Deal",
        ObjectType::Tickets => "Ticket",
    }
}

const BLANK: &str = "^\\s*$";
const DECIMAL: &str = "^\\s*[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?\\s*$";

/// What a write accepts for one field (BEHAVIOR 3, "Write validation").
fn input_schema(name: &str, field_type: FieldType, options: &[(String, String)]) -> Value {
    let blank = json!({"type": "string", "pattern": BLANK});
    match (field_type, name) {
        (FieldType::String, "email") => json!({
            "description": "A valid e-mail address, stored lowercased; blank or null clears it.",
            "anyOf": [{"type": "string", "format": "email"}, blank, {"type": "null"}],
        }),
        (FieldType::String, "website_url") => json!({
            "description": "A URL or host, stored as its canonical host (lowercase, no scheme, \
                `www.`, port, path or trailing dot); blank or null clears it.",
            "anyOf": [
                {"type": "string", "pattern": "^\\s*([A-Za-z][A-Za-z0-9+.-]*://)?[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]*)?([/?#][^\\s]*)?\\s*$"},
                blank,
                {"type": "null"},
            ],
        }),
        (FieldType::String, _) => json!({
            "description": "Text; numbers and booleans are stored as their text; blank or null \
                clears it.",
            "type": ["string", "number", "boolean", "null"],
        }),
        (FieldType::Number, _) => json!({
            "description": "A finite number, or a string holding one; stored as its shortest \
                decimal text. null clears it.",
            "anyOf": [{"type": "number"}, {"type": "string", "pattern": DECIMAL}, {"type": "null"}],
        }),
        (FieldType::Bool, _) => json!({
            "description": "true or false, or the strings \"true\" / \"false\" (any case); null \
                clears it.",
            "anyOf": [
                {"type": "boolean"},
                {"type": "string", "pattern": "^\\s*([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])\\s*$"},
                {"type": "null"},
            ],
        }),
        (FieldType::Datetime, _) => json!({
            "description": "ISO 8601 / RFC 3339 (a date alone is midnight UTC), RFC 2822, or a \
                numeric timestamp (below 10^11 seconds, else milliseconds); stored as RFC 3339 \
                UTC with milliseconds. Blank or null clears it.",
            "anyOf": [
                {"type": "string", "format": "date-time"},
                {"type": "string", "format": "date"},
                {"type": "number", "minimum": -8.64e15, "maximum": 8.64e15},
                blank,
                {"type": "null"},
            ],
        }),
        (FieldType::Enumeration, _) => {
            let mut names: Vec<Value> = Vec::new();
            for (internal, display) in options {
                names.push(json!(internal));
                if !display.eq_ignore_ascii_case(internal) {
                    names.push(json!(display));
                }
            }
            json!({
                "description": "An option's internal name or display name (any case); stored as \
                    the internal name. Options the account added are accepted too. Blank or null \
                    clears it.",
                "anyOf": [{"type": "string", "enum": names}, blank, {"type": "null"}],
            })
        }
        (FieldType::User, _) => json!({
            "description": "The id (UUID) or e-mail of an active member of the account \
                (`GET /users`); stored as the member's e-mail. Blank or null clears it. Setting \
                an owner field, even to null, stamps its `<field>_assigned_date`.",
            "anyOf": [{"type": "string", "format": "uuid"}, {"type": "string", "format": "email"}, blank, {"type": "null"}],
        }),
    }
}

/// The `fields` object of a write: every writable standard field with what it accepts.
fn fields_schema(object_type: ObjectType, create: bool) -> Value {
    let catalogue = Catalogue::standard(object_type);
    let mut properties = Map::new();
    for field in catalogue.fields().iter().filter(|f| !f.is_system()) {
        let options: Vec<(String, String)> = field
            .options
            .iter()
            .map(|o| (o.internal_name.clone(), o.name.clone()))
            .collect();
        properties.insert(
            field.internal_name.clone(),
            input_schema(&field.internal_name, field.field_type, &options),
        );
    }
    let present = |name: &str| -> Value {
        // A required field must be present with a value that is not blank.
        json!({"required": [name], "properties": {name: {"not": {"anyOf": [{"type": "null"}, {"type": "string", "pattern": BLANK}]}}}})
    };
    let mut schema = json!({
        "type": "object",
        "description": format!(
            "Field values by internal name (`contracts/standard-fields.md`). Unknown names and \
             system-managed fields are refused; the account's custom fields are accepted like \
             standard ones. Validation is all-or-nothing."
        ),
        "properties": properties,
        "additionalProperties": false,
    });
    if create {
        let rule = match object_type {
            ObjectType::Contacts => {
                json!({"anyOf": [present("email"), present("first_name"), present("last_name")]})
            }
            ObjectType::Companies => {
                json!({"anyOf": [present("company_name"), present("website_url")]})
            }
            ObjectType::Deals => {
                json!({"allOf": [present("deal_name"), present("deal_stage"), present("pipeline")]})
            }
            ObjectType::Tickets => {
                json!({"allOf": [present("ticket_name"), present("ticket_stage"), present("pipeline")]})
            }
        };
        if let (Some(target), Value::Object(rule)) = (schema.as_object_mut(), rule) {
            target.extend(rule);
        }
    }
    schema
}

/// The response object of a record type.
fn view_schema(object_type: ObjectType) -> Value {
    let catalogue = Catalogue::standard(object_type);
    let mut properties = Map::new();
    properties.insert("id".into(), json!({"type": "string", "format": "uuid"}));
    let mut required = vec![json!("id")];
    for name in catalogue.default_fields().iter().chain(&["external_id"]) {
        let description = catalogue
            .get(name)
            .map(|f| f.name.clone())
            .unwrap_or_default();
        properties.insert(
            name.to_string(),
            json!({"type": ["string", "null"], "description": description}),
        );
        required.push(json!(name));
    }
    properties.insert("archived".into(), reference("Archived"));
    properties.insert(
        "archived_by".into(),
        json!({"type": "string", "description": "Who archived it; only on archived records."}),
    );
    properties.insert("created_at".into(), reference("Timestamp"));
    properties.insert("updated_at".into(), reference("Timestamp"));
    for name in ["archived", "created_at", "updated_at"] {
        required.push(json!(name));
    }
    json!({
        "type": "object",
        "description": format!(
            "A {} as the API shows it: a flat object with the type's default fields and \
             `external_id` (null when unset), plus every property named in `properties` (stored \
             text or null).",
            object_type.singular()
        ),
        "properties": properties,
        "required": required,
        "additionalProperties": {"type": ["string", "null"]},
    })
}

/// The names `properties` accepts for a type (BEHAVIOR 3): its fields, the system fields, and
/// the always-present keys.
pub fn property_names(object_type: ObjectType) -> Vec<String> {
    let catalogue = Catalogue::standard(object_type);
    let mut names: Vec<String> = catalogue
        .fields()
        .iter()
        .map(|f| f.internal_name.clone())
        .collect();
    names.extend(
        crate::fields::catalogue::DEFAULT_SYSTEM_FIELDS
            .iter()
            .map(|s| s.to_string()),
    );
    names
}

fn properties_parameter(object_type: ObjectType) -> Parameter {
    let alternatives = property_names(object_type).join("|");
    let name = format!("\\s*({alternatives})\\s*");
    ParameterBuilder::new()
        .name("properties")
        .parameter_in(ParameterIn::Query)
        .required(Required::False)
        .description(Some(
            "Comma-separated property names added to the type's default fields (never replacing \
             them); the account's custom fields are accepted too. An empty value, an empty name \
             or an unknown name is 400 `Invalid property name: <name>`.",
        ))
        .schema(Some(schema(json!({
            "type": "string",
            "pattern": format!("^{name}(,{name})*$"),
            "example": "job_title,lifecycle_stage,create_date",
        }))))
        .build()
}

macro_rules! record_schemas {
    ($($t:ident: $view:ident, $list:ident, $create:ident, $update:ident, $props:ident;)*) => {$(
        #[doc = concat!("Schema of a ", stringify!($view), " in responses.")]
        pub struct $view;
        impl PartialSchema for $view {
            fn schema() -> RefOr<Schema> {
                schema(view_schema(ObjectType::$t))
            }
        }
        impl ToSchema for $view {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($view))
            }
            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                schemas.push(("Archived".into(), crate::timefmt::Archived::schema()));
                schemas.push(("Timestamp".into(), crate::timefmt::Timestamp::schema()));
            }
        }

        #[doc = concat!("Schema of a page of ", stringify!($view), " records.")]
        pub struct $list;
        impl PartialSchema for $list {
            fn schema() -> RefOr<Schema> {
                schema(json!({
                    "type": "object",
                    "properties": {
                        "data": {"type": "array", "items": reference(stringify!($view))},
                        "pagination": reference("Pagination"),
                    },
                    "required": ["data", "pagination"],
                }))
            }
        }
        impl ToSchema for $list {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($list))
            }
            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                schemas.push((stringify!($view).into(), $view::schema()));
                $view::schemas(schemas);
                schemas.push(("Pagination".into(), crate::page::Pagination::schema()));
            }
        }

        #[doc = concat!("Schema of the body that creates a ", stringify!($view), ".")]
        pub struct $create;
        impl PartialSchema for $create {
            fn schema() -> RefOr<Schema> {
                schema(json!({
                    "type": "object",
                    "properties": {"fields": fields_schema(ObjectType::$t, true)},
                    "required": ["fields"],
                }))
            }
        }
        impl ToSchema for $create {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($create))
            }
        }

        #[doc = concat!("Schema of the body that updates a ", stringify!($view), ".")]
        pub struct $update;
        impl PartialSchema for $update {
            fn schema() -> RefOr<Schema> {
                schema(json!({
                    "type": "object",
                    "properties": {"fields": fields_schema(ObjectType::$t, false)},
                    "required": ["fields"],
                }))
            }
        }
        impl ToSchema for $update {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($update))
            }
        }

        #[doc = concat!("The `properties` query parameter of the ", stringify!($t), " routes.")]
        pub struct $props;
        impl IntoParams for $props {
            fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
                vec![properties_parameter(ObjectType::$t)]
            }
        }
    )*};
}

record_schemas! {
    Contacts: Contact, ContactList, ContactCreate, ContactUpdate, ContactProperties;
    Companies: Company, CompanyList, CompanyCreate, CompanyUpdate, CompanyProperties;
    Deals: Deal, DealList, DealCreate, DealUpdate, DealProperties;
    Tickets: Ticket, TicketList, TicketCreate, TicketUpdate, TicketProperties;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_literal_parses() {
        for t in ObjectType::ALL {
            for value in [
                view_schema(t),
                fields_schema(t, true),
                fields_schema(t, false),
            ] {
                let text = value.to_string();
                assert!(
                    serde_json::from_value::<Schema>(value).is_ok(),
                    "{t}: {text}"
                );
            }
        }
    }

    #[test]
    fn the_view_lists_the_default_fields_of_the_spec() {
        let v = view_schema(ObjectType::Tickets);
        let required: Vec<&str> = v["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(
            required,
            [
                "id",
                "ticket_name",
                "pipeline",
                "ticket_owner",
                "external_id",
                "archived",
                "created_at",
                "updated_at"
            ]
        );
    }
}
