//! The items of due work (`docs/design.md`, "Work that happens later"): a due item's attributes,
//! the updates that settle and park it and the condition of its lease.

use super::{backend, key_attributes, millis, n, s, Expr, Item};
use crate::model::due::{DueId, DueItem, Lease, NextAttempt, Parking};
use crate::store::dynamodb::keys::{self, Key};
use crate::store::sortable_time;
use crate::store::StoreResult;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

/// Attribute of a due item: the lease id of the worker holding it.
pub const DUE_LEASE_ID: &str = "lease_id";
/// Attribute of a due item: end of its lease, epoch milliseconds.
pub const DUE_LEASE_UNTIL: &str = "lease_until";
/// Attribute of a due item: attempts made.
pub const DUE_ATTEMPT: &str = "attempt";
/// Attribute of a due item: when the sweeper resumes it ([`sortable_time`] text).
pub const DUE_RESUME_AT: &str = "resume_at";
/// Attribute of a due item: when its next attempt is due ([`sortable_time`] text).
pub const DUE_AT: &str = "due_at";
/// Attribute of a due item: claims since it last made progress (absent for 0).
pub const DUE_RUNS: &str = "runs";
/// Attribute of a due item: why its last run made no progress.
pub const DUE_LAST_ERROR: &str = "last_error";
/// Attribute of a due item: when it was parked ([`sortable_time`] text).
pub const DUE_PARKED_AT: &str = "parked_at";
/// Attribute of a due item: the job's subject (JSON text).
pub const DUE_SUBJECT: &str = "subject";

/// A due item ([`DueItem`]): its id, the job's subject (JSON text), the due and resume times
/// as [`sortable_time`] text (compared as strings in conditions), the attempt count, the
/// lease (id, end in epoch milliseconds) while held, and the due-work index key (GSI1).
pub fn due_item(due: &DueItem) -> StoreResult<(Key, Item)> {
    let key = keys::due_item(&due.id);
    let index = match due.parked_at {
        Some(at) => keys::parked_due_index(&due.id, at),
        None => keys::due_index(&due.id, due.resume_at),
    };
    let mut item = key_attributes(&key);
    item.insert(keys::ITEM_TYPE.into(), s("due"));
    item.insert(keys::GSI1PK.into(), s(index.pk));
    item.insert(keys::GSI1SK.into(), s(index.sk));
    item.insert("id".into(), s(due.id.to_string()));
    item.insert(
        DUE_SUBJECT.into(),
        s(serde_json::to_string(&due.subject).map_err(backend)?),
    );
    item.insert(DUE_AT.into(), s(sortable_time(due.due_at)));
    item.insert(DUE_ATTEMPT.into(), n(u64::from(due.attempt)));
    item.insert(DUE_RESUME_AT.into(), s(sortable_time(due.resume_at)));
    if let Some(lease) = &due.lease {
        item.insert(DUE_LEASE_ID.into(), s(&lease.id));
        item.insert(DUE_LEASE_UNTIL.into(), millis(lease.until));
    }
    if due.runs > 0 {
        item.insert(DUE_RUNS.into(), n(u64::from(due.runs)));
    }
    if let Some(error) = &due.last_error {
        item.insert(DUE_LAST_ERROR.into(), s(error));
    }
    if let Some(at) = due.parked_at {
        item.insert(DUE_PARKED_AT.into(), s(sortable_time(at)));
    }
    Ok((key, item))
}

/// Reads a due item written by [`due_item`].
///
/// Errors: a missing or malformed attribute (a backend error).
pub fn read_due_item(item: &Item) -> StoreResult<DueItem> {
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v.as_str()),
        _ => Err(backend(format!("due item without string attribute {name}"))),
    };
    let number = |name: &str| match item.get(name) {
        Some(AttributeValue::N(v)) => v
            .parse::<i64>()
            .map_err(|e| backend(format!("due item attribute {name}: {e}"))),
        _ => Err(backend(format!("due item without number attribute {name}"))),
    };
    let time = |name: &str| -> StoreResult<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(text(name)?)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| backend(format!("due item attribute {name}: {e}")))
    };
    let lease = match item.get(DUE_LEASE_ID) {
        Some(AttributeValue::S(id)) => Some(Lease {
            id: id.clone(),
            until: DateTime::from_timestamp_millis(number(DUE_LEASE_UNTIL)?)
                .ok_or_else(|| backend("due item lease end out of range"))?,
        }),
        _ => None,
    };
    Ok(DueItem {
        id: DueId::parse(text("id")?).map_err(backend)?,
        subject: serde_json::from_str(text(DUE_SUBJECT)?).map_err(backend)?,
        due_at: time(DUE_AT)?,
        attempt: u32::try_from(number(DUE_ATTEMPT)?).map_err(backend)?,
        lease,
        resume_at: time(DUE_RESUME_AT)?,
        runs: match item.get(DUE_RUNS) {
            Some(_) => u32::try_from(number(DUE_RUNS)?).map_err(backend)?,
            None => 0,
        },
        last_error: item
            .get(DUE_LAST_ERROR)
            .and_then(|v| v.as_s().ok())
            .cloned(),
        parked_at: match item.get(DUE_PARKED_AT) {
            Some(_) => Some(time(DUE_PARKED_AT)?),
            None => None,
        },
    })
}

/// The condition that the lease `lease_id` holds the due item.
pub fn due_lease_held(lease_id: &str) -> Expr {
    Expr::new(DUE_LEASE_CONDITION)
        .name("#lease_id", DUE_LEASE_ID)
        .value(":lease_id", s(lease_id))
}

/// The update moving a due item to `next` with its lease released (the settlement of an
/// attempt that leaves another): the update expression, with the names and values of
/// [`due_lease_held`] too, so [`DUE_LEASE_CONDITION`] can be its condition.
///
/// An attempt recorded (`next.error` is `None`) removes the runs and the last error; an item
/// left due without one keeps its runs and stores the error. A new subject replaces the old.
pub fn due_next_attempt(id: &DueId, next: &NextAttempt, lease_id: &str) -> StoreResult<Expr> {
    let index = keys::due_index(id, next.resume_at);
    let held = due_lease_held(lease_id);
    let mut set = vec![
        "#due_at = :due_at",
        "#attempt = :attempt",
        "#resume_at = :resume_at",
        "#gsi1sk = :gsi1sk",
    ];
    let mut remove = vec!["#lease_id", "#lease_until"];
    match next.error {
        Some(_) => set.push("#last_error = :last_error"),
        None => remove.extend(["#runs", "#last_error"]),
    }
    if next.subject.is_some() {
        set.push("#subject = :subject");
    }
    let mut e = Expr {
        text: format!("SET {} REMOVE {}", set.join(", "), remove.join(", ")),
        ..held
    }
    .name("#due_at", DUE_AT)
    .name("#attempt", DUE_ATTEMPT)
    .name("#resume_at", DUE_RESUME_AT)
    .name("#gsi1sk", keys::GSI1SK)
    .name("#lease_until", DUE_LEASE_UNTIL)
    .name("#last_error", DUE_LAST_ERROR)
    .value(":due_at", s(sortable_time(next.due_at)))
    .value(":attempt", n(u64::from(next.attempt)))
    .value(":resume_at", s(sortable_time(next.resume_at)))
    .value(":gsi1sk", s(index.sk));
    if let Some(error) = &next.error {
        e = e.value(":last_error", s(error));
    } else {
        e = e.name("#runs", DUE_RUNS);
    }
    if let Some(subject) = &next.subject {
        e = e.name("#subject", DUE_SUBJECT).value(
            ":subject",
            s(serde_json::to_string(subject).map_err(backend)?),
        );
    }
    Ok(e)
}

/// The update parking a due item (its lease released, out of the sweeper's index partitions,
/// in the parked partition instead), with the names and values of [`due_lease_held`], so
/// [`DUE_LEASE_CONDITION`] can be its condition.
pub fn due_parked(parking: &Parking) -> Expr {
    let index = keys::parked_due_index(&parking.id, parking.at);
    Expr {
        text: "SET #parked_at = :parked_at, #last_error = :last_error, #gsi1pk = :gsi1pk, #gsi1sk = :gsi1sk REMOVE #lease_id, #lease_until".into(),
        ..due_lease_held(&parking.lease_id)
    }
    .name("#parked_at", DUE_PARKED_AT)
    .name("#last_error", DUE_LAST_ERROR)
    .name("#gsi1pk", keys::GSI1PK)
    .name("#gsi1sk", keys::GSI1SK)
    .name("#lease_until", DUE_LEASE_UNTIL)
    .value(":parked_at", s(sortable_time(parking.at)))
    .value(":last_error", s(&parking.error))
    .value(":gsi1pk", s(index.pk))
    .value(":gsi1sk", s(index.sk))
}

/// The condition text of [`due_lease_held`] (its placeholders are bound by it, or by
/// [`due_next_attempt`]).
pub const DUE_LEASE_CONDITION: &str = "#lease_id = :lease_id";
