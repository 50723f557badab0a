//! What a dispatch did, and the 200 body that says it (spec "Dispatch"; BEHAVIOR 6).

use crate::model::dispatch::AssignmentReason;
use crate::timefmt::rfc2822;
use crate::types::email::Email;
use crate::types::ids::RecordId;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

/// A run that stopped without assigning: 200 with only `message` (spec "Dispatch").
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
pub enum Skip {
    /// The account of the context does not exist.
    #[strum(serialize = "Account not found")]
    AccountNotFound,
    /// The account is inactive.
    #[strum(serialize = "Account is not active")]
    AccountNotActive,
    /// No such router in the account, or it is archived.
    #[strum(serialize = "Router not found")]
    RouterNotFound,
    /// `is_published` is false.
    #[strum(serialize = "The router is unpublished")]
    RouterUnpublished,
    /// No settings, or no `owner_field` / `distribution_model`.
    #[strum(serialize = "The router has no settings")]
    NoSettings,
    /// No such active record of the router's type.
    #[strum(serialize = "Object not found")]
    ObjectNotFound,
    /// The trigger is false for the record.
    #[strum(serialize = "Trigger did not match")]
    TriggerDidNotMatch,
    /// The record has an owner and the router may not overwrite.
    #[strum(serialize = "The router can not overwrite")]
    CannotOverwrite,
    /// The account's monthly quota is used up, or available members are all at capacity.
    #[strum(serialize = "Assignment limit reached")]
    LimitReached,
    /// Nobody available and no usable backup user.
    #[strum(serialize = "There are no users available and the backup user is disabled")]
    NoUsersAvailable,
}

impl Skip {
    /// The outcome text, exactly as the spec lists it.
    pub fn message(self) -> &'static str {
        self.into()
    }
}

/// The message of an assignment.
pub const OWNER_ASSIGNED: &str = "Owner assigned";

/// A committed assignment.
#[derive(Debug, Clone, PartialEq)]
pub struct Assigned {
    /// The owner's e-mail.
    pub user: Email,
    /// The owner's member id (what logs name: never an e-mail).
    pub member_id: crate::types::ids::MemberId,
    /// The member id of the owner before, when that was a member the run knew (an SLA
    /// reassignment's previous owner).
    pub previous_member_id: Option<crate::types::ids::MemberId>,
    /// Display name of the owner field, e.g. `Contact owner`.
    pub field_name: String,
    /// Assignment time.
    pub owner_assigned_at: DateTime<Utc>,
    /// Why this member.
    pub reason: AssignmentReason,
    /// The record.
    pub record_id: RecordId,
    /// The owner field's value before.
    pub previous_owner: Option<String>,
    /// The `crm_error` when the router `has_integration` and the CRM sync failed (the
    /// assignment stands; retries may follow, BEHAVIOR 7); `None` otherwise.
    pub crm: Option<String>,
}

/// What a dispatch did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The owner was set.
    Assigned(Assigned),
    /// The run stopped at a check.
    Skipped(Skip),
    /// The queue message was processed before (its de-duplication id is used): nothing done.
    AlreadyProcessed,
}

/// The message of a queue message processed before (`docs/decisions.md`).
pub const ALREADY_PROCESSED: &str = "Already processed";

impl Outcome {
    /// The 200 body of this outcome.
    pub fn answer(&self) -> DispatchAnswer {
        match self {
            Self::Assigned(a) => DispatchAnswer::Assigned(AssignedAnswer {
                message: OWNER_ASSIGNED,
                success: true,
                user: a.user.as_str().to_string(),
                field_name: a.field_name.clone(),
                owner_assigned_at: rfc2822(a.owner_assigned_at),
                crm_sync_failed: a.crm.as_ref().map(|_| true),
                crm_error: a.crm.clone(),
            }),
            Self::Skipped(skip) => DispatchAnswer::Message(MessageAnswer {
                message: skip.message(),
            }),
            Self::AlreadyProcessed => DispatchAnswer::Message(MessageAnswer {
                message: ALREADY_PROCESSED,
            }),
        }
    }

    /// The assignment's reason for metrics (`rotation`, `account_matching`, `backup`,
    /// `sla_reassignment`), `none` without an assignment.
    pub fn reason_label(&self) -> &'static str {
        match self {
            Self::Assigned(a) => a.reason.into(),
            _ => "none",
        }
    }

    /// A bounded label of the outcome (logs, metrics): `assigned`, the message of a stop, or
    /// `already_processed`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Assigned(_) => "assigned",
            Self::Skipped(skip) => skip.message(),
            Self::AlreadyProcessed => "already_processed",
        }
    }
}

/// The 200 body of `POST /dispatch/router`: an assignment, or a non-error outcome that holds
/// only `message` (spec "Dispatch").
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(untagged)]
pub enum DispatchAnswer {
    /// The owner was assigned.
    Assigned(AssignedAnswer),
    /// The run stopped without assigning.
    Message(MessageAnswer),
}

/// The body of an assignment.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(example = json!({"message": "Owner assigned", "success": true, "user": "ana.lopez@northwind.example", "field_name": "Contact owner", "owner_assigned_at": "Mon, 23 Nov 2026 09:30:00 +0000"}))]
pub struct AssignedAnswer {
    /// `Owner assigned`.
    #[schema(value_type = String, example = "Owner assigned")]
    pub message: &'static str,
    /// `true`.
    pub success: bool,
    /// E-mail of the assigned owner.
    #[schema(format = Email)]
    pub user: String,
    /// Display name of the owner field that was updated, e.g. `Contact owner`.
    pub field_name: String,
    /// Assignment time, RFC 2822 UTC.
    #[schema(example = "Mon, 23 Nov 2026 09:30:00 +0000")]
    pub owner_assigned_at: String,
    /// `true` when the router `has_integration` and pushing the owner to the account's CRM
    /// failed (the assignment stands; BEHAVIOR 7); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crm_sync_failed: Option<bool>,
    /// What failed, e.g. `CRM answered 503: Service Unavailable` (BEHAVIOR 7's table); absent
    /// unless `crm_sync_failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crm_error: Option<String>,
}

/// The body of a non-error outcome: only `message`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"message": "Trigger did not match"}))]
pub struct MessageAnswer {
    /// The outcome, e.g. `Trigger did not match`, `Router not found`, `Assignment limit reached`.
    #[schema(value_type = String)]
    pub message: &'static str,
}
