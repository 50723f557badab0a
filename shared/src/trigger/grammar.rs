//! The trigger grammar (BEHAVIOR 5): its types and their JSON form.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;
use strum::{EnumString, IntoStaticStr};

/// A router trigger (BEHAVIOR 5): a record matches when ANY group matches. No groups matches
/// every record (as does a router without a trigger).
///
/// JSON: `{"groups": [ConditionGroup, ...]}`; other keys are rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"groups": [{"conditions": [{"field": "country", "operator": "equals", "value": "US"}]}]}))]
pub struct Trigger {
    /// The groups, OR-ed.
    pub groups: Vec<ConditionGroup>,
}

/// One group of a trigger: matches when ALL its conditions hold; no conditions matches.
///
/// JSON: `{"conditions": [Condition, ...]}`; other keys are rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConditionGroup {
    /// The conditions, AND-ed.
    pub conditions: Vec<Condition>,
}

/// One condition: `field` compared by `operator` with `value`.
///
/// JSON: `{"field": "country", "operator": "equals", "value": "US"}`; `value` is left out when
/// `None`, and a JSON `null` reads as `None`. Other keys are rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// Internal name of a field of the router's object type, system-managed fields included
    /// (`record_id`, `create_date`, `last_modified_date`, `<owner>_assigned_date`).
    pub field: String,
    /// The comparison.
    pub operator: Operator,
    /// The operand: a scalar (string, number, bool) for most operators, a non-empty array of
    /// scalars for `in` / `not_in`, none for `is_empty` / `is_not_empty`
    /// (see [`Trigger::validate`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Value>)]
    pub value: Option<serde_json::Value>,
}

/// A condition's operator (BEHAVIOR 5). JSON: the snake_case name, e.g. `"greater_or_equal"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, utoipa::ToSchema, IntoStaticStr, EnumString)]
#[strum(serialize_all = "snake_case")]
#[schema(rename_all = "snake_case")]
pub enum Operator {
    /// `equals`: the field's value equals the value (typed comparison).
    Equals,
    /// `not_equals`: negation of `equals`; true for an empty field.
    NotEquals,
    /// `contains`: the value is a case-insensitive substring of the field's text.
    Contains,
    /// `not_contains`: negation of `contains`; true for an empty field.
    NotContains,
    /// `starts_with`: case-insensitive prefix.
    StartsWith,
    /// `ends_with`: case-insensitive suffix.
    EndsWith,
    /// `in`: equals one of the values of an array.
    In,
    /// `not_in`: negation of `in`; true for an empty field.
    NotIn,
    /// `greater_than` (numbers and datetimes).
    GreaterThan,
    /// `less_than` (numbers and datetimes).
    LessThan,
    /// `greater_or_equal` (numbers and datetimes).
    GreaterOrEqual,
    /// `less_or_equal` (numbers and datetimes).
    LessOrEqual,
    /// `is_empty`: the field has no value; takes no value.
    IsEmpty,
    /// `is_not_empty`: the field has a value; takes no value.
    IsNotEmpty,
}

impl Operator {
    /// Every operator, in the order of BEHAVIOR 5.
    pub const ALL: [Operator; 14] = [
        Self::Equals,
        Self::NotEquals,
        Self::Contains,
        Self::NotContains,
        Self::StartsWith,
        Self::EndsWith,
        Self::In,
        Self::NotIn,
        Self::GreaterThan,
        Self::LessThan,
        Self::GreaterOrEqual,
        Self::LessOrEqual,
        Self::IsEmpty,
        Self::IsNotEmpty,
    ];

    /// The JSON name, e.g. `not_equals`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// For `not_equals`, `not_contains` and `not_in`, the operator they negate.
    pub fn negated(self) -> Option<Operator> {
        match self {
            Self::NotEquals => Some(Self::Equals),
            Self::NotContains => Some(Self::Contains),
            Self::NotIn => Some(Self::In),
            _ => None,
        }
    }

    /// Whether this is one of the four ordering operators.
    pub fn is_ordering(self) -> bool {
        matches!(
            self,
            Self::GreaterThan | Self::LessThan | Self::GreaterOrEqual | Self::LessOrEqual
        )
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An operator name that is not one of [`Operator::ALL`]; displays as `unknown operator "eq"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown operator {0:?}")]
pub struct UnknownOperator(pub String);

impl Operator {
    /// Parses the exact (case-sensitive) JSON name.
    ///
    /// Errors: [`UnknownOperator`] holding the text.
    pub fn parse(name: &str) -> Result<Self, UnknownOperator> {
        name.parse().map_err(|_| UnknownOperator(name.to_string()))
    }
}

impl Serialize for Operator {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Operator {
    /// From the JSON name; anything else fails with `unknown operator "<name>"` (a string) or
    /// serde's type error naming "an operator name" (not a string).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OperatorVisitor;

        impl Visitor<'_> for OperatorVisitor {
            type Value = Operator;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an operator name")
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Operator, E> {
                Operator::parse(name).map_err(E::custom)
            }
        }

        deserializer.deserialize_str(OperatorVisitor)
    }
}
