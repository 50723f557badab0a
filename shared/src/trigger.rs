//! Router triggers (BEHAVIOR 5, "Trigger grammar"). STUB: being written.

use serde::{Deserialize, Serialize};

/// A router trigger: OR of groups, each an AND of conditions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trigger {
    /// The groups.
    pub groups: Vec<serde_json::Value>,
}
