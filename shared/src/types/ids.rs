//! Typed ids: one newtype per kind of item, so an account id can never be passed where a member
//! id is expected. Each is a UUID (spec "Resources and their fields"), serialized as its
//! hyphenated text, and parsed from a path segment by one `parse` per kind.

use crate::error::DomainError;
use serde::{Deserialize, Serialize};
use std::fmt;
use utoipa::ToSchema;
use uuid::Uuid;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
        )]
        #[serde(transparent)]
        #[schema(value_type = String, format = Uuid)]
        pub struct $name(Uuid);

        impl $name {
            /// The id holding `uuid`.
            pub const fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            /// A new time-ordered id (UUID version 7: ids sort by creation time, BEHAVIOR 3).
            pub fn new_v7() -> Self {
                Self(Uuid::now_v7())
            }

            /// A new random id (UUID version 4).
            pub fn new_v4() -> Self {
                Self(Uuid::new_v4())
            }

            /// The UUID.
            pub const fn as_uuid(&self) -> Uuid {
                self.0
            }

            /// Reads a UUID in any of its text forms (hyphenated, simple, braced, URN); `None`
            /// for anything else.
            pub fn try_parse(raw: &str) -> Option<Self> {
                raw.parse().ok()
            }
        }

        impl std::str::FromStr for $name {
            type Err = uuid::Error;

            /// Same as [`Self::try_parse`], with the UUID parser's error.
            fn from_str(raw: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(raw).map(Self)
            }
        }

        impl From<Uuid> for $name {
            fn from(uuid: Uuid) -> Self {
                Self(uuid)
            }
        }

        impl From<$name> for Uuid {
            fn from(id: $name) -> Uuid {
                id.0
            }
        }

        impl fmt::Display for $name {
            /// The hyphenated lowercase form, e.g. `5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45`.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }
    };
}

id_type!(
    /// An account (tenant) id: the token's `account_id` claim (spec "Authentication" 3).
    AccountId
);
id_type!(
    /// An account member (user) id: the `userId` of `/users/{userId}`.
    MemberId
);
id_type!(
    /// A router id, unique across the store: the `routerId` of `/routers/{routerId}`.
    RouterId
);
id_type!(
    /// A record id (contact, company, deal or ticket), unique across the store.
    RecordId
);
id_type!(
    /// A member role id (`role_id`).
    RoleId
);
id_type!(
    /// A team id.
    TeamId
);
id_type!(
    /// A webhook subscription id (BEHAVIOR 13): the `webhookId` of `/webhooks/{webhookId}`.
    WebhookId
);
id_type!(
    /// A holiday calendar id (BEHAVIOR 17): the `id` of `/holiday-calendars/{id}`, and the
    /// `holiday_calendar_id` of members and router settings.
    HolidayCalendarId
);

impl MemberId {
    /// Parses a `userId` path segment (spec "Users": a UUID).
    ///
    /// Errors: 400 `Invalid userId: must be a UUID` with `field: userId`.
    pub fn parse(raw: &str) -> Result<Self, DomainError> {
        Self::try_parse(raw)
            .ok_or_else(|| DomainError::bad_field("userId", "Invalid userId: must be a UUID"))
    }
}

impl RouterId {
    /// Parses a `routerId` path segment (spec "Routers": a UUID).
    ///
    /// Errors: 400 `Invalid routerId: must be a UUID` with `field: routerId`.
    pub fn parse(raw: &str) -> Result<Self, DomainError> {
        Self::try_parse(raw)
            .ok_or_else(|| DomainError::bad_field("routerId", "Invalid routerId: must be a UUID"))
    }
}

impl RecordId {
    /// Parses a record path id. A path id that is not a UUID names no record (BEHAVIOR 3), so
    /// there is no error: `None` is answered 404 by the record service.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::try_parse(raw)
    }
}

impl RoleId {
    /// Parses a `role_id` value of a member PATCH (BEHAVIOR 4).
    ///
    /// Errors: 400 `Invalid role_id` with `field: role_id`.
    pub fn parse(raw: &str) -> Result<Self, DomainError> {
        Self::try_parse(raw).ok_or_else(|| DomainError::bad_field("role_id", "Invalid role_id"))
    }
}

impl HolidayCalendarId {
    /// Parses a `holiday_calendar_id` value of a member PATCH, a router setting or a seed file
    /// (BEHAVIOR 17): a UUID. Whether it names a calendar of the account is the caller's check.
    ///
    /// Errors: 400 `Invalid holiday_calendar_id` with `field: holiday_calendar_id`.
    pub fn parse(raw: &str) -> Result<Self, DomainError> {
        Self::try_parse(raw).ok_or_else(invalid_holiday_calendar_id)
    }
}

/// 400 `Invalid holiday_calendar_id` with `field: holiday_calendar_id` (BEHAVIOR 17): not a
/// UUID, or no calendar of the account.
pub fn invalid_holiday_calendar_id() -> DomainError {
    DomainError::bad_field("holiday_calendar_id", "Invalid holiday_calendar_id")
}

/// The id of a webhook delivery (BEHAVIOR 13): `msg_` and a UUID version 7 in simple form (32
/// lowercase hex digits), the `webhook-id` header of every attempt. Parsed from the
/// `{deliveryId}` path segment before anything reads the store: text of any other form (an
/// overlong segment included, which would break DynamoDB's key limits) names no delivery.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeliveryId(String);

impl DeliveryId {
    /// The prefix of every delivery id.
    pub const PREFIX: &'static str = "msg_";

    /// A new delivery id (time-ordered: ids sort by creation).
    pub fn new_v7() -> Self {
        Self(format!("{}{}", Self::PREFIX, Uuid::now_v7().simple()))
    }

    /// Reads `msg_<32 lowercase hex digits>`; `None` for anything else.
    pub fn parse(raw: &str) -> Option<Self> {
        let hex = raw.strip_prefix(Self::PREFIX)?;
        let valid = hex.len() == 32
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        valid.then(|| Self(raw.to_string()))
    }

    /// The id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DeliveryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_ids_parse_every_uuid_form_and_name_their_parameter_otherwise() {
        let id = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
        assert_eq!(RouterId::parse(id).unwrap().to_string(), id);
        assert_eq!(
            MemberId::parse("5B1C2D34E5F64A718C839E0F1A2B3C45")
                .unwrap()
                .to_string(),
            id
        );
        let err = MemberId::parse("not-a-uuid").unwrap_err();
        assert_eq!(err.field(), Some("userId"));
        assert_eq!(err.to_string(), "Invalid userId: must be a UUID");
        assert_eq!(RouterId::parse("").unwrap_err().field(), Some("routerId"));
        assert_eq!(RecordId::parse("42"), None);
    }

    #[test]
    fn ids_serialize_as_their_hyphenated_text() {
        let id = AccountId::from_uuid(Uuid::nil());
        assert_eq!(
            serde_json::to_string(&id).unwrap(),
            "\"00000000-0000-0000-0000-000000000000\""
        );
        let back: AccountId =
            serde_json::from_str("\"00000000-0000-0000-0000-000000000000\"").unwrap();
        assert_eq!(back, id);
    }

    #[test]
    fn a_delivery_id_is_msg_and_a_simple_uuid_and_nothing_else() {
        let id = DeliveryId::new_v7();
        assert_eq!(DeliveryId::parse(id.as_str()), Some(id.clone()));
        assert_eq!(id.as_str().len(), 36);
        for bad in [
            "",
            "msg_",
            "msg_0193ABCDEF0123456789abcdef012345",
            "msg_0193abcdef0123456789abcdef01234",
            "evt_0193abcdef0123456789abcdef012345",
            &format!("msg_{}", "a".repeat(3000)),
        ] {
            assert_eq!(DeliveryId::parse(bad), None, "{bad}");
        }
    }
}
