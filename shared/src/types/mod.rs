//! Parsed values (parse, don't validate): one newtype with one `parse` per concept, used by the
//! API's write paths and the provisioning loader alike, so no rule exists twice.
//!
//! Time zones, working hours and out-of-office ranges are in [`crate::schedule`], with the
//! availability rules that read them.

pub mod canonical_domain;
pub mod capacity;
pub mod delays;
pub mod email;
pub mod etag;
pub mod ids;
pub mod limits;
pub mod notification_preferences;
pub mod number;
pub mod omitted;

pub use canonical_domain::CanonicalDomain;
pub use capacity::CapacityEntry;
pub use email::Email;
pub use ids::{
    AccountId, DeliveryId, HolidayCalendarId, MemberId, RecordId, RoleId, RouterId, TeamId,
    WebhookId,
};
pub use notification_preferences::NotificationPreferences;

/// Implements the two conversions that `#[serde(try_from = "Raw", into = "Raw")]` needs for a
/// parsed newtype: reading a raw value (sent, stored or seeded) goes through the type's one
/// `parse`, writing gives the raw form back, so serde never builds an unparsed value.
///
/// `raw_form! { Type, Raw, parse, raw_of }`: `parse` is a `fn(Raw) -> Result<Type, String>` (the
/// error is serde's message), `raw_of` a `fn(Type) -> Raw`.
macro_rules! raw_form {
    ($parsed:ty, $raw:ty, $parse:expr, $raw_of:expr) => {
        impl TryFrom<$raw> for $parsed {
            type Error = String;
            fn try_from(raw: $raw) -> Result<Self, String> {
                ($parse)(raw)
            }
        }

        impl From<$parsed> for $raw {
            fn from(parsed: $parsed) -> $raw {
                ($raw_of)(parsed)
            }
        }
    };
}
pub(crate) use raw_form;
