//! Parsed values (parse, don't validate): one newtype with one `parse` per concept, used by the
//! API's write paths and the provisioning loader alike, so no rule exists twice.
//!
//! Time zones, working hours and out-of-office ranges are in [`crate::schedule`], with the
//! availability rules that read them.

pub mod canonical_domain;
pub mod capacity;
pub mod delays;
pub mod email;
pub mod ids;
pub mod limits;
pub mod notification_preferences;
pub mod number;

pub use canonical_domain::CanonicalDomain;
pub use capacity::CapacityEntry;
pub use email::Email;
pub use ids::{AccountId, MemberId, RecordId, RoleId, RouterId, TeamId, WebhookId};
pub use notification_preferences::NotificationPreferences;
