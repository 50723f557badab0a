//! Router triggers (BEHAVIOR 5, "Trigger grammar"): which records a router assigns.
//!
//! A trigger is an OR of groups, each group an AND of conditions:
//!
//! ```json
//! {"groups": [
//!   {"conditions": [
//!     {"field": "country", "operator": "equals", "value": "US"},
//!     {"field": "annual_revenue", "operator": "greater_than", "value": 1000000}
//!   ]},
//!   {"conditions": [{"field": "lifecycle_stage", "operator": "in", "value": ["lead", "customer"]}]}
//! ]}
//! ```
//!
//! Three steps, each its own function:
//! - **shape**: serde (`Trigger: Deserialize`); unknown keys, a missing `groups` / `conditions` /
//!   `field` / `operator`, and unknown operators (`unknown operator "eq"`) are rejected;
//! - **meaning** against a record type's field catalogue: [`Trigger::validate`], at provisioning
//!   (a trigger that does not follow the grammar is rejected then, never at dispatch);
//! - **evaluation** on a record: [`Trigger::matches`], at dispatch (BEHAVIOR 6 step 7).

pub mod eval;
pub mod grammar;
pub mod validate;

pub use eval::{ConditionExplanation, GroupExplanation, TriggerExplanation};
pub use grammar::{Condition, ConditionGroup, Operator, Trigger, UnknownOperator};
pub use validate::TriggerError;

#[cfg(test)]
mod tests;
