//! Evaluating a trigger on a record (BEHAVIOR 5, used by dispatch step 7).

use super::grammar::{Condition, ConditionGroup, Operator, Trigger};
use crate::fields::catalogue::Catalogue;
use crate::fields::definition::{EnumOption, FieldType};
use crate::model::record::Record;
use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::cmp::Ordering;
use uuid::Uuid;

/// A finite number from decimal text (surrounding whitespace ignored).
pub(super) fn parse_number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|n| n.is_finite())
}

/// An instant from an RFC 3339 timestamp, or from a date `YYYY-MM-DD` (midnight UTC, as a
/// datetime field stores a date alone, BEHAVIOR 3).
pub(super) fn parse_instant(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    let bytes = text.as_bytes();
    if bytes.len() == 10 && bytes[4] == b'-' && bytes[7] == b'-' {
        let date = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
        return Some(date.and_time(chrono::NaiveTime::MIN).and_utc());
    }
    None
}

fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The text of a scalar condition value; `None` for null, arrays and objects.
fn scalar_text(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        Value::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        _ => None,
    }
}

/// Turns a member id (UUID text) into that member's e-mail, for conditions on user fields given
/// by id; `None` for an unknown id (the id is then compared as text and matches no e-mail).
pub type EmailOf<'a> = &'a dyn Fn(&str) -> Option<String>;

/// How the values of one field compare (BEHAVIOR 5 "Comparison follows the field type").
struct Comparer<'a> {
    field_type: FieldType,
    options: &'a [EnumOption],
    email_of: EmailOf<'a>,
}

impl Comparer<'_> {
    /// The enumeration option `text` names, by internal name first, then by display name,
    /// case-insensitively.
    fn option(&self, text: &str) -> Option<&EnumOption> {
        let text = text.trim().to_lowercase();
        self.options
            .iter()
            .find(|o| o.internal_name.to_lowercase() == text)
            .or_else(|| self.options.iter().find(|o| o.name.to_lowercase() == text))
    }

    /// A comparable identity of an enumeration value: its option's internal name, or its own
    /// text for a value that names no option; lowercased.
    fn enum_key(&self, text: &str) -> String {
        self.option(text)
            .map_or(text.trim(), |o| o.internal_name.as_str())
            .to_lowercase()
    }

    /// A user value as an e-mail: a member id is resolved; lowercased.
    fn user_key(&self, text: &str) -> String {
        let text = text.trim();
        Uuid::parse_str(text)
            .ok()
            .and_then(|id| (self.email_of)(&id.to_string()))
            .unwrap_or_else(|| text.to_string())
            .to_lowercase()
    }

    /// `equals` for a field with a value.
    fn equals(&self, stored: &str, value: &Value) -> bool {
        match self.field_type {
            FieldType::Number | FieldType::Datetime => {
                self.order(stored, value) == Some(Ordering::Equal)
            }
            FieldType::Bool => {
                let v = match value {
                    Value::Bool(b) => Some(*b),
                    Value::String(s) => parse_bool(s),
                    _ => None,
                };
                matches!((parse_bool(stored), v), (Some(a), Some(b)) if a == b)
            }
            FieldType::Enumeration => {
                scalar_text(value).is_some_and(|v| self.enum_key(stored) == self.enum_key(&v))
            }
            FieldType::User => {
                scalar_text(value).is_some_and(|v| self.user_key(stored) == self.user_key(&v))
            }
            FieldType::String => scalar_text(value)
                .is_some_and(|v| stored.trim().to_lowercase() == v.trim().to_lowercase()),
        }
    }

    /// `contains`, `starts_with` or `ends_with` for a field with a value, on lowercased text.
    /// An enumeration's text is its internal name and its option's display name (either may
    /// match); a user's is its e-mail (a member-id value is resolved first).
    fn text_match(&self, op: Operator, stored: &str, value: &Value) -> bool {
        let Some(needle) = scalar_text(value) else {
            return false;
        };
        let needle = match self.field_type {
            FieldType::User => self.user_key(&needle),
            _ => needle.to_lowercase(),
        };
        let mut haystacks = vec![stored.to_lowercase()];
        if self.field_type == FieldType::Enumeration {
            if let Some(option) = self.option(stored) {
                haystacks.push(option.name.to_lowercase());
            }
        }
        haystacks.iter().any(|h| match op {
            Operator::StartsWith => h.starts_with(&needle),
            Operator::EndsWith => h.ends_with(&needle),
            _ => h.contains(&needle),
        })
    }

    /// The order of the stored value relative to the condition value, for number and datetime
    /// fields; `None` for other types or unreadable values.
    fn order(&self, stored: &str, value: &Value) -> Option<Ordering> {
        match (self.field_type, value) {
            (FieldType::Number, Value::Number(n)) => {
                parse_number(stored)?.partial_cmp(&n.as_f64()?)
            }
            (FieldType::Number, Value::String(s)) => {
                parse_number(stored)?.partial_cmp(&parse_number(s)?)
            }
            (FieldType::Datetime, Value::String(s)) => {
                Some(parse_instant(stored)?.cmp(&parse_instant(s)?))
            }
            _ => None,
        }
    }

    /// Whether the positive operator `op` (not a `not_*`, not `is_*`) holds for a field with a
    /// value.
    fn holds(&self, op: Operator, stored: &str, value: Option<&Value>) -> bool {
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return false;
        };
        match op {
            Operator::Equals => self.equals(stored, value),
            Operator::Contains | Operator::StartsWith | Operator::EndsWith => {
                self.text_match(op, stored, value)
            }
            Operator::In => match value {
                Value::Array(items) => items.iter().any(|item| self.equals(stored, item)),
                scalar => self.equals(stored, scalar),
            },
            Operator::GreaterThan => self.order(stored, value) == Some(Ordering::Greater),
            Operator::LessThan => self.order(stored, value) == Some(Ordering::Less),
            Operator::GreaterOrEqual => {
                matches!(
                    self.order(stored, value),
                    Some(Ordering::Greater | Ordering::Equal)
                )
            }
            Operator::LessOrEqual => {
                matches!(
                    self.order(stored, value),
                    Some(Ordering::Less | Ordering::Equal)
                )
            }
            _ => false,
        }
    }
}

/// How one condition read on a record (BEHAVIOR 9 `explanation.trigger`).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ConditionExplanation {
    /// The condition's field.
    pub field: String,
    /// The condition's operator.
    #[schema(value_type = String, example = "equals")]
    pub operator: Operator,
    /// The condition's value (`null` for `is_empty` / `is_not_empty`): a scalar, or an array for
    /// `in` / `not_in`.
    #[schema(value_type = Option<Value>)]
    pub value: Option<Value>,
    /// The record's stored value of the field; `null` when unset.
    pub actual: Option<String>,
    /// Whether the condition holds.
    pub matched: bool,
}

/// How one group read on a record.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct GroupExplanation {
    /// Whether every condition holds.
    pub matched: bool,
    /// Every condition, in the trigger's order (no short-circuit).
    pub conditions: Vec<ConditionExplanation>,
}

/// How a trigger read on a record: every group and every condition, with the record's values.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct TriggerExplanation {
    /// Whether the record matches (ANY group; no groups matches).
    pub matched: bool,
    /// Every group, in the trigger's order.
    pub groups: Vec<GroupExplanation>,
}

impl Trigger {
    /// Evaluates every condition of every group on `record` (no short-circuit), with the
    /// record's stored value of each field: the one evaluation dispatch (step 7) and explain
    /// (BEHAVIOR 9) both use. `matched` equals [`Trigger::matches`]. Arguments as for
    /// [`Trigger::matches`].
    pub fn explain(
        &self, record: &Record, catalogue: &Catalogue, email_of: EmailOf<'_>,
    ) -> TriggerExplanation {
        let groups: Vec<GroupExplanation> = self
            .groups
            .iter()
            .map(|group| {
                let conditions: Vec<ConditionExplanation> = group
                    .conditions
                    .iter()
                    .map(|c| ConditionExplanation {
                        field: c.field.clone(),
                        operator: c.operator,
                        value: c.value.clone(),
                        actual: record.field(&c.field).map(Cow::into_owned),
                        matched: c.holds(record, catalogue, email_of),
                    })
                    .collect();
                GroupExplanation {
                    matched: conditions.iter().all(|c| c.matched),
                    conditions,
                }
            })
            .collect();
        TriggerExplanation {
            matched: groups.is_empty() || groups.iter().any(|g| g.matched),
            groups,
        }
    }
}

impl Trigger {
    /// Whether `record` matches (BEHAVIOR 5): ANY group matches; no groups matches every record.
    ///
    /// `catalogue` is the fields of the record's type for its account and gives each field's
    /// type; `email_of` turns a member id (UUID text) into that member's e-mail, for
    /// conditions on user fields given by id (return `None` for an unknown id; the id is then
    /// compared as text and matches no e-mail).
    ///
    /// Never fails: the trigger is expected to have passed [`Trigger::validate`]; a condition
    /// that did not (unknown field, ill-typed value) is still evaluated without panicking: an
    /// unknown field compares as a string field, an unreadable value makes the positive
    /// operators false and their `not_*` forms true.
    pub fn matches(&self, record: &Record, catalogue: &Catalogue, email_of: EmailOf<'_>) -> bool {
        self.groups.is_empty()
            || self
                .groups
                .iter()
                .any(|group| group.matches(record, catalogue, email_of))
    }
}

impl ConditionGroup {
    /// Whether ALL conditions hold on `record`; a group with no conditions matches. Arguments as
    /// for [`Trigger::matches`].
    pub fn matches(&self, record: &Record, catalogue: &Catalogue, email_of: EmailOf<'_>) -> bool {
        self.conditions
            .iter()
            .all(|condition| condition.holds(record, catalogue, email_of))
    }
}

impl Condition {
    /// Whether the condition holds on `record` (BEHAVIOR 5). Arguments as for
    /// [`Trigger::matches`].
    ///
    /// Comparison follows the field's type in `catalogue`:
    /// - string: case-insensitive text (surrounding whitespace ignored for `equals`);
    /// - enumeration: option identity, the value naming an option by internal or display name
    ///   (case-insensitive); `contains` / `starts_with` / `ends_with` match the internal or the
    ///   display name;
    /// - number: numerically (stored decimal text; the value a number or a numeric string);
    /// - datetime: as instants (stored RFC 3339; the value RFC 3339 or a date = midnight UTC);
    /// - bool: `true` / `false`, JSON booleans or strings (case-insensitive);
    /// - user: by e-mail, case-insensitive; a value that is a member id is resolved to its
    ///   e-mail first.
    ///
    /// Text operators (`contains`, `starts_with`, `ends_with`) compare the lowercased stored text
    /// of any type. Ordering operators hold only for number and datetime fields.
    ///
    /// A field with no value (absent, or blank text): `is_empty` holds; `equals`, `contains`,
    /// `starts_with`, `ends_with`, `in`, the ordering operators and `is_not_empty` do not;
    /// `not_equals`, `not_contains` and `not_in` hold. With a value, each `not_*` operator is the
    /// negation of its positive form.
    ///
    /// System fields: `record_id` is the record's id, `create_date` its `created_at`,
    /// `last_modified_date` its `updated_at`; every other field is read from `record.values`.
    pub fn holds(&self, record: &Record, catalogue: &Catalogue, email_of: EmailOf<'_>) -> bool {
        let stored = record.field(&self.field);
        let (field_type, options) = catalogue
            .get(&self.field)
            .map_or((FieldType::String, &[][..]), |def| {
                (def.field_type, def.options.as_slice())
            });
        let comparer = Comparer {
            field_type,
            options,
            email_of,
        };
        match (self.operator, stored) {
            (Operator::IsEmpty, stored) => stored.is_none(),
            (Operator::IsNotEmpty, stored) => stored.is_some(),
            (op, None) => op.negated().is_some(),
            (op, Some(stored)) => match op.negated() {
                Some(positive) => !comparer.holds(positive, &stored, self.value.as_ref()),
                None => comparer.holds(op, &stored, self.value.as_ref()),
            },
        }
    }
}
