//! Failed client authentications at the token endpoint, counted per `client_id` and source
//! address (BEHAVIOR 1), as the store keeps them: a count in a fixed window that opens with the
//! first failure.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Who failed to authenticate: the `client_id` presented and the source it came from
/// ([`crate::auth::attempts::SourceAddress`]'s text).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttemptKey {
    /// The `client_id` presented (known or not), at most 256 bytes.
    pub client_id: String,
    /// The source address as counted: an IPv4 address, an IPv6 /64 prefix, or `unknown`;
    /// never holds `#`.
    pub source: String,
}

/// The failures of one [`AttemptKey`] in its open window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureWindow {
    /// Failures counted since the window opened.
    pub count: u32,
    /// When the window ends (the first failure's time plus the window's length): from then on
    /// the key starts afresh.
    pub ends_at: DateTime<Utc>,
}

impl FailureWindow {
    /// Whether the window is still open at `now`.
    pub fn open_at(&self, now: DateTime<Utc>) -> bool {
        self.ends_at > now
    }
}
