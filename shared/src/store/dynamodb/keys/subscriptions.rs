//! The keys of an account's webhook subscriptions (with their count and deliveries) and holiday
//! calendars (with their count): items in the account's partition, listed by one strongly
//! consistent `Query`.

use super::directory::account;
use super::key::Key;
use crate::types::ids::{AccountId, HolidayCalendarId, WebhookId};

/// Sort-key prefix of an account's webhook subscriptions (in the account's partition: one
/// strongly consistent `Query` lists them, so a subscription created a moment ago is seen by
/// the next dispatch).
pub const WEBHOOK_PREFIX: &str = "WEBHOOK#";

/// Sort-key prefix of an account's holiday calendars (BEHAVIOR 17; in the account's partition:
/// one strongly consistent `Query` lists them, and dispatch reads them with the pool).
pub const HOLIDAY_CALENDAR_PREFIX: &str = "HOLIDAY_CALENDAR#";

/// A holiday calendar (BEHAVIOR 17).
pub fn holiday_calendar(account_id: AccountId, id: HolidayCalendarId) -> Key {
    Key {
        pk: account(account_id).pk,
        sk: format!("{HOLIDAY_CALENDAR_PREFIX}{id}"),
    }
}

/// The count of an account's holiday calendars (at most 20, kept by the writes that create and
/// delete them). Its sort key does not start with [`HOLIDAY_CALENDAR_PREFIX`] (`_` sorts after
/// `#`), so the calendars' query never reads it.
pub fn holiday_calendar_count(account_id: AccountId) -> Key {
    Key::new(account(account_id).pk, "HOLIDAY_CALENDAR_COUNT")
}

/// Sort-key prefix of a subscription's deliveries (newest first with `ScanIndexForward = false`:
/// delivery ids sort by creation).
pub const DELIVERY_PREFIX: &str = "DELIVERY#";

/// A webhook subscription (BEHAVIOR 13).
pub fn webhook(account_id: AccountId, id: WebhookId) -> Key {
    Key {
        pk: account(account_id).pk,
        sk: format!("{WEBHOOK_PREFIX}{id}"),
    }
}

/// The count of an account's webhook subscriptions (at most 20, kept by the writes that create
/// and delete them).
pub fn webhook_count(account_id: AccountId) -> Key {
    Key::new(account(account_id).pk, "WEBHOOK_COUNT")
}

/// A delivery of a subscription.
pub fn delivery(subscription_id: WebhookId, delivery_id: &str) -> Key {
    Key::new(
        format!("WEBHOOK#{subscription_id}"),
        &format!("{DELIVERY_PREFIX}{delivery_id}"),
    )
}

#[cfg(test)]
mod tests {
    use crate::types::ids::{AccountId, HolidayCalendarId};

    #[test]
    fn holiday_calendars_live_in_their_accounts_partition_apart_from_their_count() {
        let account = AccountId::from_uuid(uuid::Uuid::nil());
        let id = HolidayCalendarId::from_uuid(uuid::Uuid::max());
        let key = super::holiday_calendar(account, id);
        assert_eq!(key.pk, super::account(account).pk);
        assert_eq!(
            key.sk,
            "HOLIDAY_CALENDAR#ffffffff-ffff-ffff-ffff-ffffffffffff"
        );
        let count = super::holiday_calendar_count(account);
        assert_eq!(count.pk, key.pk);
        assert!(!count.sk.starts_with(super::HOLIDAY_CALENDAR_PREFIX));
    }
}
