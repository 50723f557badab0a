//! Checking a trigger against a record type's field catalogue (BEHAVIOR 5).

use super::eval::{parse_instant, parse_number};
use super::grammar::{Condition, Operator, Trigger};
use crate::fields::catalogue::Catalogue;
use crate::fields::definition::FieldType;
use crate::types::number::is_storable;
use serde_json::Value;

/// Why a trigger does not follow the grammar (BEHAVIOR 5).
///
/// `path` is relative to the trigger object, e.g. `groups[0].conditions[1].value` or
/// `groups[1].conditions[0].value[2]`; the provisioning loader prefixes the router's own path
/// (`accounts[0].routers[1].settings.trigger.`). Displays as `<path>: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct TriggerError {
    /// Where, relative to the trigger.
    pub path: String,
    /// What is wrong, e.g. `unknown field "region" for contacts`.
    pub message: String,
}

impl TriggerError {
    fn at(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// A string, a boolean, or a number both stores hold (BEHAVIOR 12: finite, within DynamoDB's
/// range).
fn is_scalar(value: &Value) -> bool {
    match value {
        Value::String(_) | Value::Bool(_) => true,
        Value::Number(n) => n.as_f64().is_some_and(is_storable),
        _ => false,
    }
}

impl Trigger {
    /// Checks every condition against `catalogue`, the fields of the router's object type for
    /// its account (BEHAVIOR 5); the first problem is returned, groups and conditions in order.
    ///
    /// Rules per condition:
    /// - `field` names a field of the catalogue, system-managed fields included;
    /// - `is_empty` / `is_not_empty`: no value (absent or `null`);
    /// - `in` / `not_in`: a non-empty array of scalars (strings, numbers, booleans);
    /// - `greater_than`, `less_than`, `greater_or_equal`, `less_or_equal`: the field is a number
    ///   or datetime field; for a number field the value is a number or a string holding one,
    ///   for a datetime field a string holding an RFC 3339 timestamp or a date `YYYY-MM-DD`;
    /// - every other operator: a scalar value.
    ///
    /// A trigger with no groups, or groups with no conditions, is valid.
    ///
    /// # Errors
    ///
    /// [`TriggerError`] with the relative path of the offending key: `...field` (unknown field),
    /// `...operator` (ordering operator on a field that is not a number or datetime),
    /// `...value` or `...value[i]` (missing, superfluous or ill-typed value).
    pub fn validate(&self, catalogue: &Catalogue) -> Result<(), TriggerError> {
        for (g, group) in self.groups.iter().enumerate() {
            for (c, condition) in group.conditions.iter().enumerate() {
                condition.validate(catalogue).map_err(|e| {
                    TriggerError::at(format!("groups[{g}].conditions[{c}].{}", e.path), e.message)
                })?;
            }
        }
        Ok(())
    }
}

impl Condition {
    /// Checks this condition against `catalogue`, per [`Trigger::validate`].
    ///
    /// # Errors
    ///
    /// [`TriggerError`] whose path is relative to the condition: `field`, `operator`, `value` or
    /// `value[i]`.
    pub fn validate(&self, catalogue: &Catalogue) -> Result<(), TriggerError> {
        let Some(def) = catalogue.get(&self.field) else {
            return Err(TriggerError::at(
                "field",
                format!(
                    "unknown field {:?} for {}",
                    self.field,
                    catalogue.object_type().as_str()
                ),
            ));
        };
        let op = self.operator;
        let value = self.value.as_ref().filter(|v| !v.is_null());
        match op {
            Operator::IsEmpty | Operator::IsNotEmpty => match value {
                None => Ok(()),
                Some(_) => Err(TriggerError::at("value", format!("{op} takes no value"))),
            },
            Operator::In | Operator::NotIn => {
                let items = match value {
                    Some(Value::Array(items)) if !items.is_empty() => items,
                    _ => {
                        return Err(TriggerError::at(
                            "value",
                            format!("{op} needs a non-empty array of strings, numbers or booleans"),
                        ))
                    }
                };
                match items.iter().position(|item| !is_scalar(item)) {
                    Some(i) => Err(TriggerError::at(
                        format!("value[{i}]"),
                        "expected a string, number or boolean",
                    )),
                    None => Ok(()),
                }
            }
            _ if op.is_ordering() => {
                let field = &def.internal_name;
                match def.field_type {
                    FieldType::Number => {
                        let ok = match value {
                            Some(v @ Value::Number(_)) => is_scalar(v),
                            Some(Value::String(s)) => parse_number(s).is_some(),
                            _ => false,
                        };
                        if ok {
                            Ok(())
                        } else {
                            Err(TriggerError::at(
                                "value",
                                format!("{op} needs a number for number field {field:?}"),
                            ))
                        }
                    }
                    FieldType::Datetime => match value {
                        Some(Value::String(s)) if parse_instant(s).is_some() => Ok(()),
                        _ => Err(TriggerError::at(
                            "value",
                            format!(
                                "{op} needs an RFC 3339 timestamp or a date (YYYY-MM-DD) for \
                                 datetime field {field:?}"
                            ),
                        )),
                    },
                    other => {
                        let article = if other == FieldType::Enumeration {
                            "an"
                        } else {
                            "a"
                        };
                        Err(TriggerError::at(
                            "operator",
                            format!(
                                "{op} applies to number and datetime fields; {field:?} is \
                                 {article} {} field",
                                other.as_str()
                            ),
                        ))
                    }
                }
            }
            _ => match value {
                Some(v) if is_scalar(v) => Ok(()),
                _ => Err(TriggerError::at(
                    "value",
                    format!("{op} needs a string, number or boolean value"),
                )),
            },
        }
    }
}
