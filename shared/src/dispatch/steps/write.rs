//! Building the write: the one atomic write of an assignment (BEHAVIOR 6, "Assignment
//! writes": the record's owner, the rotation, the member's capacity, the monthly count, the
//! history entry, the SLA check it starts) with the answer it gives once committed ([`Planned`]),
//! and the history entry of a run that stopped after the router was found ([`stop_entry`]).
//! Pure: the engine commits what these build.

use super::reads::Checked;
use super::run::{Context, Run};
use crate::crm::{CrmSync, OwnerUpdate};
use crate::dispatch::capacity::count_assignment;
use crate::dispatch::outcome::{Assigned, Skip, OWNER_ASSIGNED};
use crate::fields::catalogue::FieldDef;
use crate::model::account::Account;
use crate::model::dispatch::{AssignmentReason, AssignmentWrite, DispatchEntry, RotationWrite};
use crate::model::due::DueChanges;
use crate::model::member::Member;
use crate::model::record::Record;
use crate::model::router::Router;
use crate::model::sla::{SlaSetting, SlaState};
use crate::schedule::availability::HolidayCalendars;
use crate::sla::{starts_check, CheckSubject};
use crate::timefmt::rfc3339_millis;
use crate::webhooks::Notify;
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// An assignment ready to commit: the write and the answer it gives once committed.
pub struct Planned {
    /// Everything the assignment writes, atomically (the history entry included).
    pub write: AssignmentWrite,
    /// What the caller is told.
    pub assigned: Assigned,
    /// For a router with `has_integration`: the CRM request to send after the commit, or the
    /// `crm_error` that makes a request pointless (BEHAVIOR 7's first three rows).
    pub crm: Option<Result<OwnerUpdate, String>>,
    /// Whom the `assignment.created` event says to notify (BEHAVIOR 13).
    pub notify: Notify,
    /// The SLA check the assignment starts (BEHAVIOR 14; the entry's `sla` says `pending`):
    /// its due time and what its due item names. The engine stores the item in the write.
    pub sla_check: Option<(DateTime<Utc>, CheckSubject)>,
}

/// The assignment of `member` (steps 15 on): the writes and the answer.
pub(super) fn assign(
    cx: &Context<'_>, run: &Run<'_>, checked: &Checked, member: Member, reason: AssignmentReason,
    rotation: Option<RotationWrite>, now: DateTime<Utc>,
) -> Planned {
    let member_write = match reason {
        AssignmentReason::Backup => None,
        _ => count_assignment(&member, checked.router.object_type, now),
    };
    // The member the record is taken from by an SLA reassignment (BEHAVIOR 13's `notify`).
    let previous = run.sla.and_then(|sla| checked.roster.by_email(&sla.owner));
    let check = checked
        .settings
        .sla
        .as_ref()
        .zip(starts_check(reason, run.sla.map(|sla| sla.reassignments)));
    let reason = match run.sla {
        Some(_) => AssignmentReason::SlaReassignment,
        None => reason,
    };
    let crm = checked.router.has_integration.then(|| {
        let connection = checked.directory.opened_crm();
        CrmSync::prepare(
            connection,
            checked.router.object_type,
            &checked.record,
            &member,
        )
    });
    assignment(AssignmentParts {
        cx,
        run,
        account: &checked.directory.account,
        router: &checked.router,
        record: checked.record.clone(),
        owner_field: &checked.owner_field,
        member: &member,
        reason,
        rotation,
        member_write,
        now,
        month: checked.month.clone(),
        crm,
        previous,
        check,
        holidays: &checked.holidays,
    })
}

/// The history entry of a run that stopped at `skip` after the router was found (BEHAVIOR 8:
/// from `The router is unpublished` on), at `now`.
pub fn stop_entry(
    cx: &Context<'_>, run: &Run<'_>, router: &Router, skip: Skip, now: DateTime<Utc>,
) -> DispatchEntry {
    DispatchEntry {
        expires_at: now + cx.history_retention,
        router_revision: router.revision,
        ..DispatchEntry::unassigned(
            router.account_id,
            router.id,
            router.object_type,
            run.request.object_id.clone(),
            skip.message().to_string(),
            run.source,
            now,
        )
    }
}

struct AssignmentParts<'a> {
    cx: &'a Context<'a>,
    run: &'a Run<'a>,
    account: &'a Account,
    router: &'a Router,
    record: Record,
    owner_field: &'a FieldDef,
    member: &'a Member,
    reason: AssignmentReason,
    rotation: Option<RotationWrite>,
    member_write: Option<(Member, u64)>,
    now: DateTime<Utc>,
    month: String,
    crm: Option<Result<OwnerUpdate, String>>,
    /// For an SLA reassignment: the member the record is taken from.
    previous: Option<&'a Member>,
    /// The SLA check the assignment starts, with its count of SLA reassignments in a row.
    check: Option<(&'a SlaSetting, u8)>,
    /// The calendars of the run: the router's holidays move the check's `due_at` (BEHAVIOR 17).
    holidays: &'a HolidayCalendars,
}

/// The one atomic write of an assignment (BEHAVIOR 6, "Assignment writes"), its history entry
/// (BEHAVIOR 8) included.
fn assignment(p: AssignmentParts<'_>) -> Planned {
    let email = p.member.email.clone();
    let owner = &p.owner_field.internal_name;
    let previous_owner = p.record.value(owner).map(str::to_string);
    let mut next_record = p.record.clone();
    next_record
        .values
        .insert(owner.clone(), email.as_str().to_string());
    next_record
        .values
        .insert(format!("{owner}_assigned_date"), rfc3339_millis(p.now));
    next_record.updated_at = p.now.max(p.record.updated_at);
    next_record.version = p.record.version + 1;
    let assigned = Assigned {
        user: email.clone(),
        member_id: p.member.id,
        previous_member_id: p.previous.map(|m| m.id),
        field_name: p.owner_field.name.clone(),
        owner_assigned_at: p.now,
        reason: p.reason,
        record_id: p.record.id,
        previous_owner: previous_owner.clone(),
        crm: None,
    };
    let mut entry = DispatchEntry {
        id: Uuid::now_v7(),
        account_id: p.account.id,
        router_id: p.router.id,
        router_revision: p.router.revision,
        object_type: p.router.object_type,
        object_id: p.record.id.to_string(),
        message: OWNER_ASSIGNED.to_string(),
        success: true,
        user: Some(email),
        reason: Some(p.reason),
        previous_owner,
        field_name: Some(p.owner_field.name.clone()),
        owner_field: Some(owner.clone()),
        source: p.run.source,
        dispatched_at: p.now,
        crm_sync: p.crm.as_ref().map(CrmSync::initial_state),
        sla: None,
        expires_at: p.now + p.cx.history_retention,
    };
    let sla_check = p.check.map(|(setting, reassignments)| {
        let due_at =
            p.cx.sla_minute
                .due_outside_holidays(p.now, setting, p.holidays.router_calendar());
        entry.sla = Some(SlaState::pending(due_at));
        let subject = CheckSubject {
            entry: entry.key(),
            started: next_record
                .field(&setting.worked_field)
                .map(|v| v.into_owned()),
            reassignments,
        };
        (due_at, subject)
    });
    let write = AssignmentWrite {
        record: next_record,
        record_version: p.record.version,
        router_version: p.router.version,
        rotation: p.rotation,
        chosen: (p.member.id, p.member.version),
        member: p.member_write,
        month: p.month,
        quota: p.account.assignment_quota,
        entry,
        // The engine adds the run's explanation once the run is over (BEHAVIOR 18).
        snapshot: None,
        deduplication_id: p.run.deduplication_id.cloned(),
        completion: None,
        due: DueChanges {
            settle: p.run.sla.map(|sla| sla.settle.clone()),
            ..DueChanges::default()
        },
        ends_check: p.run.sla.map(|sla| sla.check.clone()),
    };
    Planned {
        write,
        assigned,
        crm: p.crm,
        notify: Notify::of(p.member, p.previous),
        sla_check,
    }
}
