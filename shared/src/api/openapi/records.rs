//! Schemas of the four record types, generated from the standard field catalogue
//! (`docs/seed-format.md`, "Standard fields", [`Catalogue::standard`]): the response object (the type's
//! default fields plus any requested property), the list, the write bodies and the `properties`
//! parameter.
//!
//! The document describes every account, so a request schema takes what any account may have and
//! never less than the server takes (`docs/decisions.md`, "API description"): a write's
//! `fields` allows additional properties (the account's custom fields), an enumeration is a string
//! with its standard options as `examples` (an account may add options, any letter case is read),
//! a datetime any text the server parses, `properties` any names. Each field carries its
//! catalogue type as `x-field-type`. `infra/local-server/tests/api/request_schemas.rs` holds the
//! schemas to the server.

use super::WHITESPACE;
use crate::fields::catalogue::Catalogue;
use crate::fields::catalogue::FieldDef;
use crate::fields::definition::FieldType;
use crate::fields::validate::{MAX_TIMESTAMP_MILLIS, MIN_TIMESTAMP_MILLIS};
use crate::model::object_type::ObjectType;
use crate::records::write::{required_all_of, required_any_of};
use crate::types::limits::MAX_FIELD_VALUE_CHARS;
use crate::types::number::{MAGNITUDE_BOUND, MIN_MAGNITUDE};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn, ParameterStyle};
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

fn blank() -> String {
    format!("^[{WHITESPACE}]*$")
}

/// A string with something else than whitespace in it.
fn non_blank() -> String {
    format!("[^{WHITESPACE}]")
}
/// A decimal string every double holds: up to 15 digits before and after the point.
fn decimal() -> String {
    format!(
        "^[{WHITESPACE}]*[+-]?([0-9]{{1,15}}(\\.[0-9]{{0,15}})?|\\.[0-9]{{1,15}})[{WHITESPACE}]*$"
    )
}

/// The numbers both stores hold (BEHAVIOR 12): zero, or a magnitude from 1e-130 to below 1e126.
pub(super) fn storable_number() -> Vec<Value> {
    vec![
        // Zero as a range rather than `enum: [0]`, which client generators turn into a type
        // of its own.
        json!({"type": "number", "minimum": 0, "maximum": 0}),
        json!({"type": "number", "minimum": MIN_MAGNITUDE, "exclusiveMaximum": MAGNITUDE_BOUND}),
        json!({"type": "number", "exclusiveMinimum": -MAGNITUDE_BOUND, "maximum": -MIN_MAGNITUDE}),
    ]
}
/// A host as `website_url` takes it: an optional scheme, dot-separated labels (the last one
/// starting with a letter), an optional port, path, query or fragment.
fn website() -> String {
    format!(
        "^[{WHITESPACE}]*([A-Za-z][A-Za-z0-9+.-]*://)?([A-Za-z0-9-]+\\.)*[A-Za-z][A-Za-z0-9-]*(:[0-9]{{1,4}})?([/?#][^{WHITESPACE}]*)?[{WHITESPACE}]*$"
    )
}

/// Forms of a datetime value the server reads ([`crate::fields::validate::parse_datetime_text`]).
const DATETIME_EXAMPLES: [&str; 4] = [
    "2026-11-22T09:30:00Z",
    "2026-11-22T10:30:00.250+01:00",
    "2026-11-22",
    "Sun, 22 Nov 2026 09:30:00 +0000",
];

/// The alternatives of what a write accepts for one field of `field_type` (`name` for the
/// standard fields read in a stricter way) when it must hold a value (a required field on
/// create): the field's values less the ones that clear it (BEHAVIOR 3, "Write validation").
fn value_alternatives(name: &str, field_type: FieldType) -> Vec<Value> {
    match (field_type, name) {
        (FieldType::String, "email") => vec![json!({"type": "string", "format": "email"})],
        (FieldType::String, "website_url") => {
            vec![json!({"type": "string", "pattern": website()})]
        }
        (FieldType::String, _) => vec![
            json!({"type": "string", "pattern": non_blank()}),
            json!({"type": "number"}),
            json!({"type": "boolean"}),
        ],
        (FieldType::Number, _) => {
            let mut alternatives = storable_number();
            alternatives.push(json!({"type": "string", "pattern": decimal()}));
            alternatives
        }
        (FieldType::Bool, _) => vec![
            json!({"type": "boolean"}),
            json!({"type": "string", "pattern": format!("^[{WHITESPACE}]*([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])[{WHITESPACE}]*$")}),
        ],
        // The server reads many text forms (RFC 3339, ISO 8601 without an offset or with a
        // space, a date alone, RFC 2822, a numeric string): `format: date-time` would refuse
        // most of them, so the text is a non-blank string with the forms as `examples`.
        (FieldType::Datetime, _) => vec![
            json!({"type": "string", "pattern": non_blank(), "examples": DATETIME_EXAMPLES}),
            json!({"type": "number", "minimum": MIN_TIMESTAMP_MILLIS, "maximum": MAX_TIMESTAMP_MILLIS}),
        ],
        // The options are the account's: the standard ones (listed in the description and
        // `examples`) and any the account added, so the schema is a string, not an `enum`.
        (FieldType::Enumeration, _) => vec![json!({"type": "string", "pattern": non_blank()})],
        (FieldType::User, _) => vec![
            json!({"type": "string", "format": "uuid"}),
            json!({"type": "string", "format": "email"}),
        ],
    }
}

/// The alternatives of what a write accepts for one field: a value, or one that clears it
/// (blank or null; numbers and booleans have no blank form).
fn input_alternatives(name: &str, field_type: FieldType) -> Vec<Value> {
    let mut alternatives = match (field_type, name) {
        // Any string: a blank one clears the field.
        (FieldType::String, "email" | "website_url") => {
            let mut alternatives = value_alternatives(name, field_type);
            alternatives.push(json!({"type": "string", "pattern": blank()}));
            alternatives
        }
        (FieldType::String, _) => vec![
            json!({"type": "string"}),
            json!({"type": "number"}),
            json!({"type": "boolean"}),
        ],
        (FieldType::Enumeration, _) => vec![json!({"type": "string"})],
        (FieldType::Number | FieldType::Bool, _) => value_alternatives(name, field_type),
        // Any text: a blank one clears the field.
        (FieldType::Datetime, _) => vec![
            json!({"type": "string", "examples": DATETIME_EXAMPLES}),
            json!({"type": "number", "minimum": MIN_TIMESTAMP_MILLIS, "maximum": MAX_TIMESTAMP_MILLIS}),
        ],
        (FieldType::User, _) => {
            let mut alternatives = value_alternatives(name, field_type);
            alternatives.push(json!({"type": "string", "pattern": blank()}));
            alternatives
        }
    };
    alternatives.push(json!({"type": "null"}));
    alternatives
}

/// What the description of a field of `field_type` says it accepts.
fn type_description(name: &str, field_type: FieldType) -> &'static str {
    match (field_type, name) {
        (FieldType::String, "email") => "A valid e-mail address, stored lowercased.",
        (FieldType::String, "website_url") => {
            "A URL or host (a string), stored as its canonical host (lowercase, no scheme, \
             `www.`, port, path or trailing dot)."
        }
        (FieldType::String, _) => "Text; numbers and booleans are stored as their text.",
        (FieldType::Number, _) => {
            "A number, or a string holding one: zero or a magnitude from 1e-130 to below 1e126 \
             (what both stores hold); stored as its shortest decimal text."
        }
        (FieldType::Bool, _) => "true or false, or the strings \"true\" / \"false\" (any case).",
        (FieldType::Datetime, _) => {
            "ISO 8601 / RFC 3339 (without an offset: UTC; a date alone is midnight UTC), RFC 2822, \
             or a numeric timestamp, as a number or a string (below 10^11 seconds, else \
             milliseconds); stored as RFC 3339 UTC with milliseconds. Other text is 400."
        }
        (FieldType::Enumeration, _) => {
            "An option's internal name or display name (any case); stored as the internal name. \
             The options are the account's: the standard ones below, and any the account added."
        }
        (FieldType::User, _) => {
            "The id (UUID) or e-mail of an active member of the account (`GET /users`); stored \
             as the member's e-mail. Setting an owner field, even to null, stamps its \
             `<field>_assigned_date`."
        }
    }
}

/// The schema of one writable field in a write body: what it accepts (`holds_value`: only
/// values, for a field a create requires), described, with an enumeration's standard options
/// listed in the description and as `examples` (internal names). Every string alternative is
/// at most 65,536 characters (BEHAVIOR 12).
fn field_schema(field: &FieldDef, holds_value: bool) -> Value {
    let name = field.internal_name.as_str();
    let mut alternatives = if holds_value {
        value_alternatives(name, field.field_type)
    } else {
        input_alternatives(name, field.field_type)
    };
    for alternative in &mut alternatives {
        if alternative["type"] == "string" {
            alternative["maxLength"] = json!(MAX_FIELD_VALUE_CHARS);
        }
    }
    let mut description = format!(
        "{} ({}). {}",
        field.name,
        field.field_type.as_str(),
        type_description(name, field.field_type)
    );
    let mut schema = Map::new();
    if field.field_type == FieldType::Enumeration {
        let options: Vec<String> = field
            .options
            .iter()
            .map(|o| format!("`{}` ({})", o.internal_name, o.name))
            .collect();
        description.push_str(&format!(" Standard options: {}.", options.join(", ")));
        schema.insert(
            "examples".into(),
            field
                .options
                .iter()
                .map(|o| json!(o.internal_name))
                .collect(),
        );
    }
    description.push_str(match (holds_value, field.field_type) {
        (true, _) => " Required on create: it must hold a value.",
        (false, FieldType::Number | FieldType::Bool) => " null clears it.",
        (false, _) => " Blank or null clears it.",
    });
    schema.insert("description".into(), json!(description));
    // The catalogue type, for tools that need more than the JSON types (which values of an
    // enumeration or a user field an account has, which text a datetime is).
    schema.insert("x-field-type".into(), json!(field.field_type.as_str()));
    match <[Value; 1]>::try_from(alternatives) {
        // One alternative is the schema itself (an `anyOf` of one says nothing more).
        Ok([Value::Object(only)]) => schema.extend(only),
        Ok([only]) => {
            schema.insert("anyOf".into(), json!([only]));
        }
        Err(alternatives) => {
            schema.insert("anyOf".into(), Value::Array(alternatives));
        }
    }
    Value::Object(schema)
}

/// The schema of a custom field's value (`additionalProperties` of a write's `fields`): the
/// account's own fields are not in the document, which describes every account, so any name is
/// allowed here with what a field of any type the catalogue allows takes (text, number, bool,
/// datetime, enumeration, user); the server refuses a name the account does not have.
fn custom_field_schema() -> Value {
    json!({
        "description": "A custom field of the account (`docs/seed-format.md`, custom fields), \
            by internal name: its value as a standard field of the same type takes it (text, \
            number, bool, datetime, enumeration or user); null clears it. A name that is neither \
            a standard field nor one of the account's is 400 `Unknown field`.",
        "anyOf": [
            {"type": "string", "maxLength": MAX_FIELD_VALUE_CHARS},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
        ],
    })
}

/// The `fields` object of a write: every writable standard field with what it accepts, and the
/// account's custom fields as additional properties ([`custom_field_schema`]). On create, the
/// type's required fields (spec "POST" table) must hold a value: `required` with value-only
/// schemas for deals and tickets; for contacts and companies, "at least one of" is said in the
/// description (and `minProperties`), as one object schema cannot say it without combining
/// schemas that client generators merge badly (`docs/decisions.md`, "API description").
fn fields_schema(object_type: ObjectType, create: bool) -> Value {
    let catalogue = Catalogue::standard(object_type);
    let required: &[&str] = if create {
        required_all_of(object_type)
    } else {
        &[]
    };
    let mut properties = Map::new();
    for field in catalogue.fields().iter().filter(|f| !f.is_system()) {
        let holds_value = required.contains(&field.internal_name.as_str());
        properties.insert(
            field.internal_name.clone(),
            field_schema(field, holds_value),
        );
    }
    let mut description = "Field values by internal name (`docs/seed-format.md`, section Standard \
        fields), and the account's custom fields by theirs. Unknown names and system-managed \
        fields are refused. Validation is all-or-nothing."
        .to_string();
    let one_of = required_any_of(object_type);
    if create && !one_of.is_empty() {
        description.push_str(&format!(
            " At least one of {} must hold a value (else 400 `At least one of ... is required`).",
            one_of
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut fields = json!({
        "type": "object",
        "description": description,
        "properties": properties,
        "additionalProperties": custom_field_schema(),
    });
    if create && !required.is_empty() {
        fields["required"] = json!(required);
    }
    if create && !one_of.is_empty() {
        fields["minProperties"] = json!(1);
    }
    fields
}

/// An example write body of a record type.
fn example_fields(object_type: ObjectType) -> Value {
    match object_type {
        ObjectType::Contacts => {
            json!({"email": "jo.doe@example.com", "first_name": "Jo", "lifecycle_stage": "lead"})
        }
        ObjectType::Companies => {
            json!({"company_name": "Tailspin Toys", "website_url": "https://www.tailspintoys.example", "industry": "Software"})
        }
        ObjectType::Deals => {
            json!({"deal_name": "Contoso renewal", "pipeline": "default", "deal_stage": "qualified_to_buy", "amount": 12500})
        }
        ObjectType::Tickets => {
            json!({"ticket_name": "Cannot log in", "pipeline": "support", "ticket_stage": "new", "priority": "high"})
        }
    }
}

/// An example response object of a record type.
fn example_view(object_type: ObjectType) -> Value {
    let catalogue = Catalogue::standard(object_type);
    let sample = example_fields(object_type);
    let mut view = Map::new();
    view.insert("id".into(), json!("01936b2a-7c00-7a00-8000-000000000002"));
    for name in catalogue.default_fields().iter().chain(&["external_id"]) {
        view.insert(
            name.to_string(),
            sample
                .get(*name)
                .map(|v| json!(v.to_string().trim_matches('"')))
                .unwrap_or(Value::Null),
        );
    }
    view.insert("archived".into(), json!(false));
    view.insert("created_at".into(), json!("2026-11-22T09:30:00.000Z"));
    view.insert("updated_at".into(), json!("2026-11-22T09:30:00.000Z"));
    Value::Object(view)
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
        // A requested property is stored text or null; `boolean` is there for `archived`, which
        // is declared above: a typed client that holds every key of the object in one map (a
        // TypeScript index signature) needs the map's type to hold each declared key's too.
        "additionalProperties": {
            "type": ["string", "boolean", "null"],
            "description": "A property named in `properties`: its stored text, or null when unset.",
        },
        "example": example_view(object_type),
    })
}

/// The standard names `properties` accepts for a type (BEHAVIOR 3): its standard fields, the
/// system fields, and the always-present keys. The account's custom fields are accepted too.
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

/// The `properties` query parameter: a comma-separated list of names (`style: form`,
/// `explode: false`). The names are the account's (its custom fields are accepted like the
/// standard ones), so each item is a string; the standard names are listed in the description
/// and as the items' `examples`.
fn properties_parameter(object_type: ObjectType) -> Parameter {
    let names = property_names(object_type);
    let listed: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    ParameterBuilder::new()
        .name("properties")
        .parameter_in(ParameterIn::Query)
        .required(Required::False)
        .style(Some(ParameterStyle::Form))
        .explode(Some(false))
        .description(Some(format!(
            "Comma-separated property names added to the type's default fields (never replacing \
             them); names are trimmed and duplicates ignored. The standard names: {}; the \
             account's custom fields are accepted too. An empty value, an empty name or an \
             unknown name is 400 `Invalid property name: <name>`.",
            listed.join(", ")
        )))
        .schema(Some(schema(json!({
            "type": "array",
            "minItems": 1,
            "items": {"type": "string", "pattern": non_blank(), "examples": names},
        }))))
        .example(Some(json!(["job_title", "create_date"])))
        .build()
}

/// The body of `POST /{type}` (`creates`: every required field) or `PATCH /{type}/{id}`.
fn body_schema(object_type: ObjectType, creates: bool) -> Value {
    let example = if creates {
        json!({"fields": example_fields(object_type)})
    } else {
        json!({"fields": {"external_id": "crm-1042"}})
    };
    json!({
        "type": "object",
        "properties": {"fields": fields_schema(object_type, creates)},
        "required": ["fields"],
        "example": example,
    })
}

/// A page of the records of schema `view`: `{data, pagination}`.
fn list_schema(view: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            "data": {"type": "array", "items": reference(view)},
            "pagination": reference("Pagination"),
        },
        "required": ["data", "pagination"],
    })
}

/// A schema type written by hand: `$name` (documented `$doc`) whose schema is the JSON value
/// `$schema`, and which adds the schemas it refers to with `$schemas` (`|schemas| ...`).
macro_rules! json_schema_type {
    ($doc:expr, $name:ident, $schema:expr, |$schemas:ident| $refers:block) => {
        #[doc = $doc]
        pub struct $name;
        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                schema($schema)
            }
        }
        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
            fn schemas($schemas: &mut Vec<(String, RefOr<Schema>)>) $refers
        }
    };
}

macro_rules! record_schemas {
    ($($t:ident: $view:ident, $list:ident, $create:ident, $update:ident, $props:ident;)*) => {$(
        json_schema_type!(
            concat!("Schema of a ", stringify!($view), " in responses."),
            $view,
            view_schema(ObjectType::$t),
            |schemas| {
                schemas.push(("Archived".into(), crate::timefmt::Archived::schema()));
                schemas.push(("Timestamp".into(), crate::timefmt::Timestamp::schema()));
            }
        );
        json_schema_type!(
            concat!("Schema of a page of ", stringify!($view), " records."),
            $list,
            list_schema(stringify!($view)),
            |schemas| {
                schemas.push((stringify!($view).into(), $view::schema()));
                $view::schemas(schemas);
                schemas.push(("Pagination".into(), crate::page::Pagination::schema()));
            }
        );
        json_schema_type!(
            concat!("Schema of the body that creates a ", stringify!($view), "."),
            $create,
            body_schema(ObjectType::$t, true),
            |_schemas| {}
        );
        json_schema_type!(
            concat!("Schema of the body that updates a ", stringify!($view), "."),
            $update,
            body_schema(ObjectType::$t, false),
            |_schemas| {}
        );

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
pub(crate) mod tests {
    use super::*;

    /// utoipa's schema model holds a subset of JSON Schema and drops what it does not model
    /// (`not`, `anyOf` beside `properties`, ...): every literal must survive the trip unchanged.
    pub(crate) fn assert_round_trip(value: Value) {
        let parsed: Schema = serde_json::from_value(value.clone()).unwrap();
        let back = serde_json::to_value(parsed).unwrap();
        assert_eq!(back, value, "the schema lost keywords in utoipa's model");
    }

    #[test]
    fn every_schema_literal_survives_utoipas_model_unchanged() {
        for t in ObjectType::ALL {
            for value in [
                view_schema(t),
                fields_schema(t, true),
                fields_schema(t, false),
            ] {
                assert_round_trip(value);
            }
        }
    }

    #[test]
    fn the_whitespace_class_is_exactly_what_the_server_trims() {
        let class = regex::Regex::new(&format!("^[{WHITESPACE}]$")).unwrap();
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            assert_eq!(
                class.is_match(&c.to_string()),
                c.is_whitespace(),
                "U+{:04X}",
                c as u32
            );
        }
    }

    #[test]
    fn what_the_patterns_describe_the_server_accepts() {
        use crate::fields::validate::canonical_number;
        use crate::types::canonical_domain::CanonicalDomain;
        let matches =
            |pattern: String, text: &str| regex::Regex::new(&pattern).unwrap().is_match(text);
        for text in [
            "1",
            "-2.5",
            " +.5 ",
            "123456789012345.123456789012345",
            "0",
            "7.",
        ] {
            assert!(matches(decimal(), text), "{text}");
            assert!(canonical_number(&json!(text)).is_ok(), "{text}");
        }
        for text in ["1e3", "abc", "", "1.2.3", "--1"] {
            assert!(!matches(decimal(), text), "{text}");
        }
        for text in [
            "example.com",
            " https://www.Example.com/about?x=1 ",
            "http://a-b.c:8080",
            "shop.example.co.uk/",
            "foo+bar://host.example#x",
        ] {
            assert!(matches(website(), text), "{text}");
            assert!(CanonicalDomain::parse(text).is_ok(), "{text}");
        }
        for text in ["", "a b.com", "http://", "0.5", "1.2"] {
            assert!(!matches(website(), text), "{text}");
        }
        for text in ["", " \t\n", "\u{3000}"] {
            assert!(matches(blank(), text) && text.trim().is_empty(), "{text:?}");
        }
        assert!(!matches(blank(), "\u{feff}"));
        assert!(matches(non_blank(), "\u{feff}") && !"\u{feff}".trim().is_empty());
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
