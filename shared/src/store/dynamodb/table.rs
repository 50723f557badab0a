//! The production table definition (`infra/table.json`, the shape `CreateTable` takes) and the
//! table's creation from it. The adapter, the emulator setup, `provision --create-table` and the
//! local server all read this one file.

use crate::error::BoxError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TableStatus,
};
use aws_sdk_dynamodb::Client;
use serde::Deserialize;
use std::time::Duration;

/// The text of `infra/table.json`, embedded at build time.
pub const TABLE_DEFINITION: &str = include_str!("../../../../infra/table.json");

/// `infra/table.json`, parsed: the `CreateTable` input without the table name.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct TableDefinition {
    /// Key attributes of the table and its indexes, with their scalar types.
    pub attribute_definitions: Vec<AttributeDef>,
    /// The table's primary key.
    pub key_schema: Vec<KeyElement>,
    /// The global secondary indexes.
    #[serde(default)]
    pub global_secondary_indexes: Vec<IndexDef>,
    /// `PAY_PER_REQUEST` or `PROVISIONED`.
    pub billing_mode: String,
}

/// One `AttributeDefinitions` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct AttributeDef {
    /// Attribute name.
    pub attribute_name: String,
    /// `S`, `N` or `B`.
    pub attribute_type: String,
}

/// One `KeySchema` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct KeyElement {
    /// Attribute name.
    pub attribute_name: String,
    /// `HASH` or `RANGE`.
    pub key_type: String,
}

/// One `GlobalSecondaryIndexes` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct IndexDef {
    /// Index name.
    pub index_name: String,
    /// The index key.
    pub key_schema: Vec<KeyElement>,
    /// What the index projects.
    pub projection: ProjectionDef,
}

/// A GSI's `Projection`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct ProjectionDef {
    /// `ALL`, `KEYS_ONLY` or `INCLUDE`.
    pub projection_type: String,
    /// Projected non-key attributes for `INCLUDE`.
    #[serde(default)]
    pub non_key_attributes: Vec<String>,
}

impl TableDefinition {
    /// The embedded `infra/table.json`.
    ///
    /// Errors: the file does not have the `CreateTable` shape.
    pub fn production() -> Result<Self, serde_json::Error> {
        serde_json::from_str(TABLE_DEFINITION)
    }
}

fn keys(elements: &[KeyElement]) -> Result<Vec<KeySchemaElement>, BoxError> {
    elements
        .iter()
        .map(|k| {
            KeySchemaElement::builder()
                .attribute_name(&k.attribute_name)
                .key_type(KeyType::from(k.key_type.as_str()))
                .build()
                .map_err(BoxError::from)
        })
        .collect()
}

/// Creates table `name` from `infra/table.json` unless it exists, and waits until it is active.
/// Returns whether it was created.
///
/// Errors: the SDK's (permissions, endpoint unreachable, invalid definition).
pub async fn create_table_if_missing(client: &Client, name: &str) -> Result<bool, BoxError> {
    if client
        .describe_table()
        .table_name(name)
        .send()
        .await
        .is_ok()
    {
        return Ok(false);
    }
    let def = TableDefinition::production()?;
    let attributes = def
        .attribute_definitions
        .iter()
        .map(|a| {
            AttributeDefinition::builder()
                .attribute_name(&a.attribute_name)
                .attribute_type(ScalarAttributeType::from(a.attribute_type.as_str()))
                .build()
                .map_err(BoxError::from)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let indexes = def
        .global_secondary_indexes
        .iter()
        .map(|i| {
            let projection = Projection::builder()
                .projection_type(ProjectionType::from(i.projection.projection_type.as_str()))
                .set_non_key_attributes(
                    (!i.projection.non_key_attributes.is_empty())
                        .then(|| i.projection.non_key_attributes.clone()),
                )
                .build();
            GlobalSecondaryIndex::builder()
                .index_name(&i.index_name)
                .set_key_schema(Some(keys(&i.key_schema)?))
                .projection(projection)
                .build()
                .map_err(BoxError::from)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let created = client
        .create_table()
        .table_name(name)
        .set_attribute_definitions(Some(attributes))
        .set_key_schema(Some(keys(&def.key_schema)?))
        .set_global_secondary_indexes((!indexes.is_empty()).then_some(indexes))
        .billing_mode(BillingMode::from(def.billing_mode.as_str()))
        .send()
        .await;
    if let Err(e) = created {
        // Another process may have created it meanwhile.
        if !e
            .as_service_error()
            .is_some_and(|s| s.is_resource_in_use_exception())
        {
            return Err(Box::new(e));
        }
    }
    for _ in 0..600 {
        let status = client
            .describe_table()
            .table_name(name)
            .send()
            .await?
            .table
            .and_then(|t| t.table_status);
        if status == Some(TableStatus::Active) {
            return Ok(true);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("table {name} did not become active within 60 s").into())
}

/// Deletes table `name`.
///
/// Errors: the SDK's.
pub async fn delete_table(client: &Client, name: &str) -> Result<(), BoxError> {
    client.delete_table().table_name(name).send().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::dynamodb::keys;

    #[test]
    fn the_table_file_defines_the_keys_the_key_module_builds() {
        let def = TableDefinition::production().expect("infra/table.json parses");
        let key: Vec<(&str, &str)> = def
            .key_schema
            .iter()
            .map(|k| (k.attribute_name.as_str(), k.key_type.as_str()))
            .collect();
        assert_eq!(key, [(keys::PK, "HASH"), (keys::SK, "RANGE")]);
        type Described<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);
        let indexes: Vec<Described> = def
            .global_secondary_indexes
            .iter()
            .map(|i| {
                (
                    i.index_name.as_str(),
                    i.key_schema
                        .iter()
                        .map(|k| (k.attribute_name.as_str(), k.key_type.as_str()))
                        .collect(),
                    i.projection.projection_type.as_str(),
                )
            })
            .collect();
        assert_eq!(
            indexes,
            [
                (
                    keys::GSI1,
                    vec![(keys::GSI1PK, "HASH"), (keys::GSI1SK, "RANGE")],
                    "ALL"
                ),
                (
                    keys::GSI2,
                    vec![(keys::GSI2PK, "HASH"), (keys::GSI2SK, "RANGE")],
                    "ALL"
                ),
            ]
        );
        assert_eq!(def.billing_mode, "PAY_PER_REQUEST");
    }

    #[test]
    fn every_key_attribute_is_defined_as_a_string_and_nothing_else_is() {
        let def = TableDefinition::production().expect("infra/table.json parses");
        let mut defined: Vec<(&str, &str)> = def
            .attribute_definitions
            .iter()
            .map(|a| (a.attribute_name.as_str(), a.attribute_type.as_str()))
            .collect();
        defined.sort();
        let mut expected = vec![
            (keys::PK, "S"),
            (keys::SK, "S"),
            (keys::GSI1PK, "S"),
            (keys::GSI1SK, "S"),
            (keys::GSI2PK, "S"),
            (keys::GSI2SK, "S"),
        ];
        expected.sort();
        assert_eq!(defined, expected);
    }
}
