//! A field definition of the seed (`fields.<type>[]`).

use super::file::SeedField;
use super::{err, SeedError};
use crate::fields::catalogue::Catalogue;
use crate::fields::definition::{FieldDefinition, FieldType};
use crate::model::object_type::ObjectType;
use crate::types::limits::{check_chars, json_size, MAX_ITEM_JSON_BYTES, MAX_KEY_TEXT_CHARS};

/// One field definition at `p`: a custom field, or extra options of a standard enumeration.
/// `earlier` are the account's definitions before it.
///
/// Errors: a system-managed or malformed name, a standard field redefined with another type, a
/// name defined twice, options on a non-enumeration, empty or repeated option names.
pub(super) fn field_definition(
    p: &str, object_type: ObjectType, d: SeedField, earlier: &[FieldDefinition],
) -> Result<FieldDefinition, SeedError> {
    let name = d.internal_name.trim();
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid_name {
        return err(
            format!("{p}.internal_name"),
            "expected lowercase letters, digits and underscores",
        );
    }
    // BEHAVIOR 12: the name is part of a DynamoDB sort key (at most 1,024 bytes).
    check_chars(name, MAX_KEY_TEXT_CHARS).or_else(|why| err(format!("{p}.internal_name"), why))?;
    let standard = Catalogue::standard(object_type);
    let reserved = [
        "id",
        "created_at",
        "updated_at",
        "archived",
        "archived_by",
        "properties",
    ];
    if reserved.contains(&name)
        || standard.get(name).is_some_and(|f| f.is_system())
        || name.ends_with("_assigned_date")
    {
        return err(
            format!("{p}.internal_name"),
            format!("\"{name}\" is a system-managed name"),
        );
    }
    if let Some(existing) = standard.get(name) {
        if existing.field_type != d.field_type_id {
            return err(
                format!("{p}.field_type_id"),
                format!(
                    "\"{name}\" is a standard {} field and cannot be redefined as {}",
                    existing.field_type.as_str(),
                    d.field_type_id.as_str()
                ),
            );
        }
    }
    if earlier
        .iter()
        .any(|e| e.object_type == object_type && e.internal_name == name)
    {
        return err(
            format!("{p}.internal_name"),
            format!("\"{name}\" is defined twice"),
        );
    }
    if d.field_type_id != FieldType::Enumeration && !d.options.is_empty() {
        return err(
            format!("{p}.options"),
            "only enumeration fields have options",
        );
    }
    for (i, o) in d.options.iter().enumerate() {
        if o.internal_name.trim().is_empty() {
            return err(
                format!("{p}.options[{i}].internal_name"),
                "must not be empty",
            );
        }
        if d.options[..i]
            .iter()
            .any(|x| x.internal_name == o.internal_name)
        {
            return err(
                format!("{p}.options[{i}].internal_name"),
                format!("option \"{}\" is listed twice", o.internal_name),
            );
        }
    }
    let definition = FieldDefinition {
        object_type,
        internal_name: name.to_string(),
        name: d.name,
        field_type: d.field_type_id,
        options: d.options,
    };
    if json_size(&definition) > MAX_ITEM_JSON_BYTES {
        return err(
            p,
            format!("field definition too large: at most {MAX_ITEM_JSON_BYTES} bytes of JSON"),
        );
    }
    Ok(definition)
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_refused;
    use serde_json::json;

    #[test]
    fn field_definition_problems_name_the_definitions_key() {
        assert_refused(&[
            (
                |s| {
                    s["accounts"][0]["fields"]["contacts"][0]["internal_name"] =
                        json!("a".repeat(257))
                },
                "accounts[0].fields.contacts[0].internal_name: at most 256 characters",
            ),
            (
                |s| s["accounts"][0]["fields"]["contacts"][0]["name"] = json!("n".repeat(400_000)),
                "accounts[0].fields.contacts[0]: field definition too large",
            ),
            (
                |s| s["accounts"][0]["fields"]["contacts"][0]["field_type_id"] = json!("colour"),
                "accounts[0].fields.contacts[0].field_type_id",
            ),
            (
                |s| {
                    s["accounts"][0]["fields"]["contacts"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"internal_name": "email", "name": "E", "field_type_id": "number"}))
                },
                "accounts[0].fields.contacts[2].field_type_id",
            ),
            (
                |s| {
                    s["accounts"][0]["fields"]["contacts"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"internal_name": "record_id", "name": "R", "field_type_id": "string"}))
                },
                "accounts[0].fields.contacts[2].internal_name",
            ),
        ]);
    }
}
