//! Turning a cancelled `TransactWriteItems` into a domain error.
//!
//! DynamoDB answers a cancelled transaction with one reason per item, in request order
//! (`None` for an item that was fine). The adapter remembers what each item was ([`Part`]) and
//! maps the reasons with the same precedence as the embedded store checks its conditions.

use crate::store::StoreError;

/// What an item of a transaction is, for reading its cancellation reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// A uniqueness guard claimed for `field`.
    Guard(String),
    /// A guard released (deleted) by the write.
    Release,
    /// The record (version or existence condition).
    Record,
    /// A router's rotation state (version condition).
    Rotation,
    /// A member's counters (version condition).
    Member,
    /// The account's monthly count (quota condition).
    Quota,
    /// The message de-duplication marker (must not exist).
    Marker,
    /// A claim completed or settled by the write, an `Idempotency-Key` claim or a due item
    /// (its lease must still be held).
    Lease,
    /// A holiday calendar gaining a reference (it must exist: BEHAVIOR 17).
    Calendar,
    /// A holiday calendar losing a reference: when it is gone (its condition, that it exists,
    /// failed), there is nothing to release, and the write goes on without this item.
    CalendarRelease,
    /// Any other item (e.g. the assignment log, a provisioned item).
    Other,
}

/// Which failed condition wins when several failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precedence {
    /// Creating: a taken key is reported before anything else (`Duplicate`).
    GuardsFirst,
    /// Updating: a changed or archived record is reported first (`Conflict`), then taken keys.
    RecordFirst,
}

/// What to do about a cancelled transaction.
#[derive(Debug)]
pub enum Outcome {
    /// A condition failed: this error, nothing was written.
    Fail(StoreError),
    /// Only transient reasons (`TransactionConflict`, throttling): nothing was written, try again.
    Retry,
    /// Only these items (by index) failed, each a [`Part::CalendarRelease`] of a calendar that
    /// is gone: nothing was written; send the transaction again without them.
    Without(Vec<usize>),
}

const CONDITION_FAILED: &str = "ConditionalCheckFailed";
const TRANSIENT: [&str; 3] = [
    "TransactionConflict",
    "ProvisionedThroughputExceeded",
    "ThrottlingError",
];

/// Maps the cancellation `codes` (one per item, `None` or `"None"` when the item was fine) of a
/// transaction whose items are `parts`.
pub fn classify(parts: &[Part], codes: &[Option<String>], precedence: Precedence) -> Outcome {
    let failed = |wanted: &dyn Fn(&Part) -> bool| {
        parts
            .iter()
            .zip(codes)
            .any(|(p, c)| wanted(p) && c.as_deref() == Some(CONDITION_FAILED))
    };
    if failed(&|p| *p == Part::Lease) {
        return Outcome::Fail(StoreError::LeaseLost);
    }
    if failed(&|p| *p == Part::Marker) {
        return Outcome::Fail(StoreError::AlreadyApplied);
    }
    if precedence == Precedence::RecordFirst && failed(&|p| *p == Part::Record) {
        return Outcome::Fail(StoreError::Conflict);
    }
    if failed(&|p| *p == Part::Calendar) {
        return Outcome::Fail(StoreError::UnknownHolidayCalendar);
    }
    let failed_at = |i: usize| codes.get(i).and_then(Option::as_deref) == Some(CONDITION_FAILED);
    let released: Vec<usize> = (0..parts.len())
        .filter(|&i| parts[i] == Part::CalendarRelease && failed_at(i))
        .collect();
    if !released.is_empty()
        && (0..parts.len()).all(|i| parts[i] == Part::CalendarRelease || !failed_at(i))
    {
        return Outcome::Without(released);
    }
    let first_taken = parts.iter().zip(codes).find_map(|(p, c)| match p {
        Part::Guard(field) if c.as_deref() == Some(CONDITION_FAILED) => Some(field.clone()),
        _ => None,
    });
    if let Some(field) = first_taken {
        return Outcome::Fail(StoreError::Duplicate { field });
    }
    if failed(&|_| true) {
        return Outcome::Fail(StoreError::Conflict);
    }
    let other: Vec<&str> = codes
        .iter()
        .filter_map(|c| c.as_deref())
        .filter(|c| *c != "None" && !TRANSIENT.contains(c))
        .collect();
    let transient = codes
        .iter()
        .any(|c| c.as_deref().is_some_and(|c| TRANSIENT.contains(&c)));
    if other.is_empty() && transient {
        Outcome::Retry
    } else if other.is_empty() {
        // No reason at all (an empty list, or `None` for every item): nothing says a retry
        // could pass, so it is the backend's failure, not a conflict to wait out.
        Outcome::Fail(StoreError::Backend(
            "transaction cancelled without a cancellation reason".into(),
        ))
    } else {
        Outcome::Fail(StoreError::Backend(
            format!("transaction cancelled: {}", other.join(", ")).into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(c: &[&str]) -> Vec<Option<String>> {
        c.iter().map(|c| Some(c.to_string())).collect()
    }

    fn guard(f: &str) -> Part {
        Part::Guard(f.into())
    }

    #[test]
    fn a_release_of_a_gone_calendar_is_left_out_unless_something_else_failed() {
        let parts = [
            Part::Record,
            Part::CalendarRelease,
            Part::Calendar,
            Part::CalendarRelease,
        ];
        let out = classify(
            &parts,
            &codes(&["None", CONDITION_FAILED, "None", CONDITION_FAILED]),
            Precedence::RecordFirst,
        );
        assert!(
            matches!(out, Outcome::Without(ref i) if *i == vec![1, 3]),
            "{out:?}"
        );
        let out = classify(
            &parts,
            &codes(&[CONDITION_FAILED, CONDITION_FAILED, "None", "None"]),
            Precedence::RecordFirst,
        );
        assert!(
            matches!(out, Outcome::Fail(StoreError::Conflict)),
            "{out:?}"
        );
        let out = classify(
            &parts,
            &codes(&["None", CONDITION_FAILED, CONDITION_FAILED, "None"]),
            Precedence::RecordFirst,
        );
        assert!(
            matches!(out, Outcome::Fail(StoreError::UnknownHolidayCalendar)),
            "{out:?}"
        );
    }

    #[test]
    fn a_cancellation_without_a_transient_reason_is_not_retried() {
        for reasons in [codes(&[]), codes(&["None", "None"]), vec![None, None]] {
            let out = classify(
                &[Part::Record, Part::Other],
                &reasons,
                Precedence::RecordFirst,
            );
            assert!(
                matches!(out, Outcome::Fail(StoreError::Backend(_))),
                "{reasons:?}: {out:?}"
            );
        }
        let out = classify(
            &[Part::Record, Part::Other],
            &codes(&["None", "TransactionConflict"]),
            Precedence::RecordFirst,
        );
        assert!(matches!(out, Outcome::Retry));
    }

    #[test]
    fn the_first_failing_guard_in_the_given_order_names_the_duplicate() {
        let parts = [guard("email"), guard("external_id"), Part::Record];
        let out = classify(
            &parts,
            &codes(&["None", CONDITION_FAILED, "None"]),
            Precedence::GuardsFirst,
        );
        assert!(
            matches!(out, Outcome::Fail(StoreError::Duplicate { field }) if field == "external_id")
        );
        let out = classify(
            &parts,
            &codes(&[CONDITION_FAILED, CONDITION_FAILED, CONDITION_FAILED]),
            Precedence::GuardsFirst,
        );
        assert!(matches!(out, Outcome::Fail(StoreError::Duplicate { field }) if field == "email"));
    }

    #[test]
    fn a_changed_record_wins_over_a_taken_key_when_updating() {
        let parts = [Part::Record, guard("email")];
        let out = classify(
            &parts,
            &codes(&[CONDITION_FAILED, CONDITION_FAILED]),
            Precedence::RecordFirst,
        );
        assert!(matches!(out, Outcome::Fail(StoreError::Conflict)));
        let out = classify(
            &parts,
            &codes(&["None", CONDITION_FAILED]),
            Precedence::RecordFirst,
        );
        assert!(matches!(out, Outcome::Fail(StoreError::Duplicate { .. })));
    }

    #[test]
    fn a_used_deduplication_marker_means_already_applied_whatever_else_failed() {
        let parts = [Part::Record, Part::Rotation, Part::Quota, Part::Marker];
        let out = classify(
            &parts,
            &codes(&[CONDITION_FAILED, "None", CONDITION_FAILED, CONDITION_FAILED]),
            Precedence::RecordFirst,
        );
        assert!(matches!(out, Outcome::Fail(StoreError::AlreadyApplied)));
    }

    #[test]
    fn a_failed_rotation_member_or_quota_condition_is_a_conflict() {
        for failing in 0..3 {
            let parts = [Part::Rotation, Part::Member, Part::Quota, Part::Other];
            let mut c = codes(&["None", "None", "None", "None"]);
            c[failing] = Some(CONDITION_FAILED.into());
            let out = classify(&parts, &c, Precedence::RecordFirst);
            assert!(
                matches!(out, Outcome::Fail(StoreError::Conflict)),
                "{failing}"
            );
        }
    }

    #[test]
    fn transaction_conflicts_alone_are_retried() {
        let parts = [guard("email"), Part::Record];
        let out = classify(
            &parts,
            &codes(&["TransactionConflict", "None"]),
            Precedence::GuardsFirst,
        );
        assert!(matches!(out, Outcome::Retry));
    }

    #[test]
    fn a_validation_error_is_a_backend_failure_not_a_retry() {
        let parts = [Part::Record];
        let out = classify(
            &parts,
            &codes(&["ValidationError"]),
            Precedence::GuardsFirst,
        );
        assert!(matches!(out, Outcome::Fail(StoreError::Backend(_))));
    }
}
