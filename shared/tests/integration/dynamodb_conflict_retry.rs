//! The DynamoDB adapter's retry of writes refused for a transaction in flight
//! (`shared::store::retry`; BEHAVIOR 12's last bullet), against a scripted DynamoDB
//! (`shared::store::dynamodb::scripted`: a loopback HTTP server that answers each request as a
//! test says, no emulator needed), so the refusals are exactly those DynamoDB documents and their
//! number is known.
//!
//! - a `TransactWriteItems` cancelled only by `TransactionConflict` is sent again, unchanged,
//!   until it is written; one cancelled that way until the deadline gives up as
//!   `StoreError::Conflict`, after the deadline and not long after it;
//! - a failed condition (`ConditionalCheckFailed`) is never sent again by the adapter;
//! - a single-item write refused with `TransactionConflictException` (a `PutItem`, and the
//!   `UpdateItem` a one-item transaction is sent as) is sent again the same way;
//! - a `BatchGetItem` whose keys keep coming back unprocessed (a throttled table) is sent again
//!   with backoff until the deadline, then answers `StoreError::Unavailable` (the request's
//!   503), never looping on.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use chrono::{TimeZone, Utc};
use shared::model::holiday_calendar::CalendarRefs;
use shared::model::{HolidayCalendar, Member};
use shared::schedule::holidays::Holidays;
use shared::schedule::IanaTimeZone;
use shared::store::dynamodb::scripted::{error_body, ScriptedDynamoDb};
use shared::store::dynamodb::DynamoStore;
use shared::store::prelude::*;
use shared::store::StoreError;
use shared::types::{Email, NotificationPreferences};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use uuid::Uuid;

const PREFIX: &str = "com.amazonaws.dynamodb.v20120810#";
const ONGOING: &str = "Transaction is ongoing for the item";
/// The deadline the adapter is given here.
const DEADLINE: Duration = Duration::from_millis(400);

/// The adapter over `server`, retrying transaction conflicts for [`DEADLINE`] (the SDK's own
/// retries off, so every request is the adapter's).
fn adapter_over(server: &ScriptedDynamoDb) -> DynamoStore {
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .endpoint_url(server.endpoint())
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test", "test", None, None, "test",
        ))
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .build();
    DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(conf), "table")
        .with_conflict_deadline(DEADLINE)
}

/// `TransactionCanceledException` with `codes`, one per item.
fn cancelled(codes: &[&str]) -> (u16, String) {
    let reasons: Vec<serde_json::Value> = codes
        .iter()
        .map(|c| match *c {
            "None" => serde_json::json!({"Code": "None"}),
            c => serde_json::json!({"Code": c, "Message": ONGOING}),
        })
        .collect();
    let body = serde_json::json!({
        "__type": format!("{PREFIX}TransactionCanceledException"),
        "Message": format!("Transaction cancelled, please refer cancellation reasons for specific reasons [{}]", codes.join(", ")),
        "CancellationReasons": reasons,
    });
    (400, body.to_string())
}

/// `TransactionConflictException`, DynamoDB's answer to a single-item write of an item that a
/// transaction in flight holds.
fn in_transaction() -> (u16, String) {
    (400, error_body("TransactionConflictException", ONGOING))
}

fn written() -> (u16, String) {
    (200, "{}".into())
}

fn member() -> Member {
    let at = Utc.with_ymd_and_hms(2026, 3, 10, 9, 0, 0).unwrap();
    Member {
        id: Uuid::new_v4().into(),
        account_id: Uuid::new_v4().into(),
        email: Email::parse("ana@x.example").unwrap(),
        full_name: None,
        first_name: None,
        last_name: None,
        role_id: None,
        external_id: None,
        phone: None,
        office_status: true,
        time_zone: IanaTimeZone::UTC,
        working_hours: vec![],
        out_office_dates: vec![],
        calendars: BTreeMap::new(),
        holiday_calendar_id: None,
        capacity: vec![],
        can_receive_notifications: false,
        notification_preferences: NotificationPreferences::default(),
        created_at: at,
        updated_at: at,
        archived_at: None,
        archived_by: None,
        version: 2,
    }
}

/// A member PATCH that names a calendar: one `TransactWriteItems` of two items (the member,
/// the calendar's reference count).
async fn patch_naming_a_calendar(store: &DynamoStore) -> Result<(), StoreError> {
    let mut m = member();
    let calendar = Uuid::new_v4().into();
    m.holiday_calendar_id = Some(calendar);
    store
        .update_member(&m, 1, &CalendarRefs::moving(None, Some(calendar)), None)
        .await
}

#[tokio::test]
async fn a_transaction_cancelled_by_a_transaction_conflict_is_sent_again_until_written() {
    let server = ScriptedDynamoDb::start(Box::new(|_, n| match n {
        0..=2 => cancelled(&["None", "TransactionConflict"]),
        _ => written(),
    }))
    .await
    .unwrap();
    let started = Instant::now();
    patch_naming_a_calendar(&adapter_over(&server))
        .await
        .unwrap();
    assert!(started.elapsed() < DEADLINE, "{:?}", started.elapsed());
    assert_eq!(server.seen(), vec!["TransactWriteItems"; 4]);
}

#[tokio::test]
async fn a_transaction_that_keeps_meeting_others_gives_up_as_a_conflict_after_the_deadline() {
    let server =
        ScriptedDynamoDb::start(Box::new(|_, _| cancelled(&["TransactionConflict", "None"])))
            .await
            .unwrap();
    let started = Instant::now();
    let out = patch_naming_a_calendar(&adapter_over(&server)).await;
    let took = started.elapsed();
    assert!(matches!(out, Err(StoreError::Conflict)), "{out:?}");
    assert!(took >= DEADLINE, "gave up before the deadline: {took:?}");
    assert!(
        took < DEADLINE + Duration::from_millis(300),
        "gave up long after the deadline: {took:?}"
    );
    let sent = server.seen().len();
    assert!(sent >= 4, "sent {sent} times");
}

#[tokio::test]
async fn a_failed_condition_is_answered_at_once_and_never_sent_again() {
    let server = ScriptedDynamoDb::start(Box::new(|_, _| {
        cancelled(&["ConditionalCheckFailed", "None"])
    }))
    .await
    .unwrap();
    let out = patch_naming_a_calendar(&adapter_over(&server)).await;
    assert!(matches!(out, Err(StoreError::Conflict)), "{out:?}");
    assert_eq!(server.seen(), vec!["TransactWriteItems"]);
}

#[tokio::test]
async fn a_single_item_write_refused_for_a_transaction_in_flight_is_sent_again() {
    // A member PATCH without a calendar: one conditional `PutItem`.
    let server = ScriptedDynamoDb::start(Box::new(|_, n| match n {
        0 | 1 => in_transaction(),
        _ => written(),
    }))
    .await
    .unwrap();
    let store = adapter_over(&server);
    store
        .update_member(&member(), 1, &CalendarRefs::none(), None)
        .await
        .unwrap();
    assert_eq!(server.seen(), vec!["PutItem"; 3]);

    // Refused until the deadline: a conflict.
    let server = ScriptedDynamoDb::start(Box::new(|_, _| in_transaction()))
        .await
        .unwrap();
    let started = Instant::now();
    let out = adapter_over(&server)
        .update_member(&member(), 1, &CalendarRefs::none(), None)
        .await;
    assert!(matches!(out, Err(StoreError::Conflict)), "{out:?}");
    assert!(started.elapsed() >= DEADLINE);
    assert!(server.seen().len() >= 3);
}

#[tokio::test]
async fn a_one_item_transaction_is_sent_as_its_single_write_and_retried_the_same_way() {
    // A calendar's PUT: one conditional update, sent as `UpdateItem`.
    let server = ScriptedDynamoDb::start(Box::new(|_, n| match n {
        0 => in_transaction(),
        _ => written(),
    }))
    .await
    .unwrap();
    let at = Utc.with_ymd_and_hms(2026, 3, 10, 9, 0, 0).unwrap();
    let calendar = HolidayCalendar {
        id: Uuid::new_v4().into(),
        account_id: Uuid::new_v4().into(),
        name: "Berlin".into(),
        time_zone: IanaTimeZone::UTC,
        holidays: Holidays::default(),
        created_at: at,
        updated_at: at,
        version: 2,
    };
    adapter_over(&server)
        .update_holiday_calendar(&calendar, 1, None)
        .await
        .unwrap();
    assert_eq!(server.seen(), vec!["UpdateItem"; 2]);
}

#[tokio::test]
async fn a_batch_read_left_unprocessed_is_sent_again_until_the_deadline_then_is_unavailable() {
    let server = ScriptedDynamoDb::start(Box::new(|target, _| match target {
        "BatchGetItem" => {
            let key = serde_json::json!({"PK": {"S": "MEMBER#x"}, "SK": {"S": "MEMBER"}});
            let body = serde_json::json!({
                "Responses": {"table": []},
                "UnprocessedKeys": {"table": {"Keys": [key], "ConsistentRead": true}},
            });
            (200, body.to_string())
        }
        _ => written(),
    }))
    .await
    .unwrap();
    let store = adapter_over(&server);
    let started = Instant::now();
    let read = tokio::time::timeout(
        Duration::from_secs(20),
        store.get_members(Uuid::new_v4().into(), &[Uuid::new_v4().into()]),
    )
    .await
    .expect("the read gives up at its deadline");
    assert!(matches!(read, Err(StoreError::Unavailable(_))), "{read:?}");
    assert!(started.elapsed() >= DEADLINE);
    let sent = server.seen().len();
    assert!(sent >= 3, "sent {sent} times");
}

/// An answer past the 16 MB limit of one `BatchGetItem` reads part of the keys and leaves the
/// rest unprocessed: that is progress, not throttling, so the rest is asked for again at once,
/// as many times as it takes, without spending the deadline's backoff.
#[tokio::test]
async fn a_batch_read_cut_by_the_answer_limit_goes_on_until_every_key_is_read() {
    let server = ScriptedDynamoDb::start(Box::new(|target, n| match target {
        "BatchGetItem" => {
            let item = |i: usize| {
                serde_json::json!({"PK": {"S": format!("MEMBER#{i}")}, "SK": {"S": "MEMBER"}})
            };
            let unprocessed = if n < 30 {
                serde_json::json!({"table": {"Keys": [item(n + 1)], "ConsistentRead": true}})
            } else {
                serde_json::json!({})
            };
            let body = serde_json::json!({
                "Responses": {"table": [item(n)]},
                "UnprocessedKeys": unprocessed,
            });
            (200, body.to_string())
        }
        _ => written(),
    }))
    .await.unwrap();
    let store = adapter_over(&server);
    // Items that are not members of the account are left out; what matters is that the read
    // ends without an error after 31 answers.
    let read = store
        .get_members(Uuid::new_v4().into(), &[Uuid::new_v4().into()])
        .await;
    assert!(read.is_ok(), "{read:?}");
    assert_eq!(server.seen().len(), 31);
}
