//! SLA reassignment (BEHAVIOR 14): a router's time limit for its owner to work a record, and the
//! state of one check as its history entry carries it.
//!
//! The rules that read these (the setting's parse at provisioning, the check, the reassignment)
//! live in [`crate::sla`].

use crate::types::raw_form;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// SLA reassignments of one record in a row after which no further check starts (BEHAVIOR 14):
/// the fifth starts none; a dispatch (API or queue) starts the count again.
pub const MAX_SLA_REASSIGNMENTS_IN_A_ROW: u8 = 5;

/// The time limit of a router's SLA in minutes (BEHAVIOR 14): 1 to 10,080 (one week).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "i64", into = "i64")]
pub struct SlaMinutes(u32);

impl SlaMinutes {
    /// The fewest minutes.
    pub const MIN: u32 = 1;
    /// The most minutes (7 days).
    pub const MAX: u32 = 10_080;

    /// Parses a whole number of minutes.
    ///
    /// Errors: `must be a whole number of minutes from 1 to 10080`.
    pub fn parse(minutes: i64) -> Result<Self, String> {
        u32::try_from(minutes)
            .ok()
            .filter(|m| (Self::MIN..=Self::MAX).contains(m))
            .map(Self)
            .ok_or_else(|| {
                format!(
                    "must be a whole number of minutes from {} to {}, got {minutes}",
                    Self::MIN,
                    Self::MAX
                )
            })
    }

    /// The number of minutes.
    pub fn get(self) -> u32 {
        self.0
    }
}

raw_form! { SlaMinutes, i64, SlaMinutes::parse, |m: SlaMinutes| i64::from(m.0) }

/// A router's SLA setting (BEHAVIOR 14): the owner must work a record within `minutes`, "worked"
/// meaning that `worked_field` holds one of `worked_values`, or (without values) that it got a
/// value other than the one it had when the check started. Parsed at provisioning
/// ([`crate::sla::parse_setting`]); stored with the router.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlaSetting {
    /// The time limit.
    pub minutes: SlaMinutes,
    /// Internal name of a field of the router's object type (system fields included).
    pub worked_field: String,
    /// The values that mean "worked"; `None`: any change to a non-null value.
    pub worked_values: Option<WorkedValues>,
}

/// The values of [`SlaSetting::worked_values`]: as provisioned (what the router's `settings` and
/// explain show) and in the field's canonical stored form (what a record's value is compared
/// with). Never empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkedValues {
    /// As provisioned, in order.
    pub given: Vec<serde_json::Value>,
    /// The same values in stored form (an enumeration's internal name, a member's e-mail, a
    /// canonical number ...), in order.
    pub canonical: Vec<String>,
}

impl WorkedValues {
    /// Whether the stored value `stored` is one of the values (case-insensitively: strings
    /// compare so, and the other types' stored forms have one case).
    pub fn contains(&self, stored: &str) -> bool {
        let stored = stored.trim().to_lowercase();
        self.canonical.iter().any(|v| v.to_lowercase() == stored)
    }
}

/// The `sla` object of a router's `settings` and of explain's `explanation` (BEHAVIOR 14), as
/// provisioned.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(example = json!({"minutes": 30, "worked_field": "lead_status", "worked_values": ["in_progress", "connected"]}))]
pub struct SlaSettingView {
    /// The time limit in minutes (1 to 10,080).
    #[schema(minimum = 1, maximum = 10080)]
    pub minutes: u32,
    /// Internal name of the field that says the record was worked.
    pub worked_field: String,
    /// The values of `worked_field` that mean "worked"; `null`: any non-null value other than
    /// the one the field held when the check started.
    #[schema(schema_with = worked_values_schema)]
    pub worked_values: Option<Vec<serde_json::Value>>,
}

/// The schema of [`SlaSettingView::worked_values`]: null, or an array of scalars (what a field
/// value of the worked field's type can be, [`crate::fields::validate::validate_value`]).
fn worked_values_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{AnyOfBuilder, ArrayBuilder, ObjectBuilder, Type};
    let scalar = AnyOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::String))
        .item(ObjectBuilder::new().schema_type(Type::Number))
        .item(ObjectBuilder::new().schema_type(Type::Boolean));
    let values = ArrayBuilder::new().items(scalar).min_items(Some(1));
    AnyOfBuilder::new()
        .item(values)
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .description(Some(
            "The values of `worked_field` that mean \"worked\"; `null`: any non-null value other \
             than the one the field held when the check started.",
        ))
        .into()
}

impl SlaSettingView {
    /// The view of `setting`.
    pub fn new(setting: &SlaSetting) -> Self {
        Self {
            minutes: setting.minutes.get(),
            worked_field: setting.worked_field.clone(),
            worked_values: setting.worked_values.as_ref().map(|v| v.given.clone()),
        }
    }
}

/// Where one SLA check stands (BEHAVIOR 14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlaStatus {
    /// Not due yet, or due and not run yet.
    Pending,
    /// The record was worked in time. Final.
    Met,
    /// Nothing to check any more: the record or router was archived, the router unpublished, or
    /// the record's owner changed (by a write or another dispatch). Final.
    Cancelled,
    /// The record went to another member (an SLA reassignment). Final.
    Reassigned,
    /// The reassignment run assigned nobody; the owner stays. Final.
    Expired,
}

/// The SLA check an assignment started (BEHAVIOR 14): its history entry's `sla`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlaState {
    /// When the check is due: the assignment's `dispatched_at` plus the router's minutes.
    pub due_at: DateTime<Utc>,
    /// Where it stands.
    pub status: SlaStatus,
}

impl SlaState {
    /// A check due at `due_at`, not run yet.
    pub fn pending(due_at: DateTime<Utc>) -> Self {
        Self {
            due_at,
            status: SlaStatus::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_are_whole_numbers_from_1_to_10080() {
        assert_eq!(SlaMinutes::parse(1).unwrap().get(), 1);
        assert_eq!(SlaMinutes::parse(10_080).unwrap().get(), 10_080);
        for bad in [0, -1, 10_081, i64::MAX] {
            assert!(SlaMinutes::parse(bad).is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<SlaMinutes>("0").is_err());
        assert_eq!(serde_json::to_string(&SlaMinutes(30)).unwrap(), "30");
    }

    #[test]
    fn worked_values_compare_with_the_stored_value_case_insensitively() {
        let values = WorkedValues {
            given: vec![serde_json::json!("Called")],
            canonical: vec!["Called".into(), "in_progress".into()],
        };
        assert!(values.contains("called"));
        assert!(values.contains(" IN_PROGRESS "));
        assert!(!values.contains("new"));
    }
}
