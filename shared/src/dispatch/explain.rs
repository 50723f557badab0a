//! What a run found on its way (BEHAVIOR 9, `explanation`): the trigger read on the record, the
//! pool with each member's reasons, and the account match. The engine fills it on every run,
//! dispatch and explain alike (one code path); only explain shows it.

use crate::model::dispatch::{AssignmentReason, DecisionSnapshot};
use crate::model::sla::SlaSettingView;
use crate::routers::RevisionChoice;
use crate::schedule::availability::UnavailableReason;
use crate::trigger::TriggerExplanation;
use crate::types::email::Email;
use crate::types::ids::RecordId;
use serde::Serialize;
use utoipa::ToSchema;

/// Why a member of the pool cannot take the record now (BEHAVIOR 9), in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CandidateReason {
    /// `office_status` is false.
    OfficeStatusOff,
    /// Today is inside one of the member's out-of-office ranges.
    OutOfOffice,
    /// Now is inside a holiday of the member's calendar or of the router's (BEHAVIOR 17).
    Holiday,
    /// Now is outside the member's working hours (and the router does not ignore them).
    OutsideWorkingHours,
    /// An applying capacity entry is full (`current_capacity >= max_capacity`).
    AtCapacity,
    /// A percentage router gives the member weight 0.
    ZeroWeight,
}

impl From<UnavailableReason> for CandidateReason {
    fn from(reason: UnavailableReason) -> Self {
        match reason {
            UnavailableReason::OfficeStatusOff => Self::OfficeStatusOff,
            UnavailableReason::OutOfOffice => Self::OutOfOffice,
            UnavailableReason::Holiday => Self::Holiday,
            UnavailableReason::OutsideWorkingHours => Self::OutsideWorkingHours,
        }
    }
}

/// One member of the pool (BEHAVIOR 6.11) as the run saw them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[schema(example = json!({"user": "ben.okafor@northwind.example", "eligible": false, "reasons": ["outside_working_hours"]}))]
pub struct Candidate {
    /// The member's e-mail.
    #[schema(value_type = String)]
    pub user: Email,
    /// Whether the distribution model may pick them (no reason applies).
    pub eligible: bool,
    /// Why not, in the order of [`CandidateReason`]; empty for an eligible member.
    pub reasons: Vec<CandidateReason>,
    /// Whether an SLA reassignment leaves this member out: the record's current owner
    /// (BEHAVIOR 14), never eligible nor available. Internal: explain never excludes anyone.
    #[serde(skip)]
    pub excluded: bool,
}

impl Candidate {
    /// Whether the member is available (no availability reason: capacity and weight aside),
    /// and not left out by an SLA reassignment.
    pub fn available(&self) -> bool {
        !self.excluded
            && !self.reasons.iter().any(|r| {
                matches!(
                    r,
                    CandidateReason::OfficeStatusOff
                        | CandidateReason::OutOfOffice
                        | CandidateReason::Holiday
                        | CandidateReason::OutsideWorkingHours
                )
            })
    }

    /// Whether the member is available and under capacity (weight aside): BEHAVIOR 6 step 12.
    pub fn under_capacity(&self) -> bool {
        self.available() && !self.reasons.contains(&CandidateReason::AtCapacity)
    }
}

/// The company account matching found for a contact (BEHAVIOR 6 step 10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct AccountMatch {
    /// The matched company (the oldest active one whose `website_url` is the e-mail's domain).
    pub company_id: RecordId,
    /// Its `company_owner`; `null` when it has none.
    pub owner: Option<String>,
    /// Whether that owner is an active member who is available and under capacity.
    pub eligible: bool,
}

/// What the run found (BEHAVIOR 9): `null` parts were not reached.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct Explanation {
    /// The trigger read on the record; `null` without a trigger or when the run stopped before.
    pub trigger: Option<TriggerExplanation>,
    /// The pool in pool order with each member's reasons; `null` when the run stopped before
    /// the pool (or account matching assigned before it).
    pub candidates: Option<Vec<Candidate>>,
    /// The account match; `null` unless account matching found a company.
    pub account_match: Option<AccountMatch>,
    /// The router's SLA setting as provisioned (BEHAVIOR 14); `null` when it has none or the
    /// run stopped before the router was found. Explain starts no check.
    pub sla: Option<SlaSettingView>,
}

impl Explanation {
    /// The decision snapshot of the run that found this (BEHAVIOR 18): this explanation as
    /// explain shows it, each `actual` cut to its first 256 characters, within the snapshot's
    /// size ([`DecisionSnapshot::new`]). The one builder of dispatch's, the queue's and an SLA
    /// reassignment's snapshots: the engine fills the explanation on every run.
    pub fn snapshot(&self) -> DecisionSnapshot {
        DecisionSnapshot::new(serde_json::to_value(self).unwrap_or(serde_json::Value::Null))
    }
}

/// What dispatch would do now (BEHAVIOR 9).
#[derive(Debug, Clone, PartialEq)]
pub enum Preview {
    /// It would assign `user`.
    Assign {
        /// The member's e-mail.
        user: Email,
        /// Display name of the owner field.
        field_name: String,
        /// Why that member.
        reason: AssignmentReason,
    },
    /// It would stop with this message.
    Stop(&'static str),
}

/// The 200 body of `POST /dispatch/router/explain`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(example = json!({"message": "Owner assigned", "success": true, "user": "ana.lopez@northwind.example", "field_name": "Contact owner", "reason": "rotation", "dry_run": true, "explanation": {"trigger": null, "candidates": [{"user": "ana.lopez@northwind.example", "eligible": true, "reasons": []}, {"user": "ben.okafor@northwind.example", "eligible": false, "reasons": ["outside_working_hours"]}], "account_match": null}}))]
pub struct ExplainAnswer {
    /// What dispatch would answer now (`Owner assigned`, or the outcome's message).
    pub message: String,
    /// `true` for an assignment; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// The member it would assign; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = Email)]
    pub user: Option<String>,
    /// Display name of the owner field; absent unless an assignment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_name: Option<String>,
    /// `rotation`, `account_matching` or `backup` (never `sla_reassignment`: only an SLA check
    /// makes one); absent unless an assignment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<AssignmentReason>,
    /// Always `true`: nothing was written.
    pub dry_run: bool,
    /// What the run found.
    pub explanation: Explanation,
    /// The configuration explained when the request named one (`"draft"` or its revision
    /// number); absent otherwise (the live revision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<RevisionChoice>,
}

impl ExplainAnswer {
    /// The body for `preview` and `explanation`.
    pub fn new(preview: Preview, explanation: Explanation) -> Self {
        match preview {
            Preview::Assign {
                user,
                field_name,
                reason,
            } => Self {
                message: super::outcome::OWNER_ASSIGNED.to_string(),
                success: Some(true),
                user: Some(user.into_string()),
                field_name: Some(field_name),
                reason: Some(reason),
                dry_run: true,
                explanation,
                revision: None,
            },
            Preview::Stop(message) => Self {
                message: message.to_string(),
                success: None,
                user: None,
                field_name: None,
                reason: None,
                dry_run: true,
                explanation,
                revision: None,
            },
        }
    }

    /// The same answer naming the configuration it explained (BEHAVIOR 9).
    pub fn with_revision(mut self, revision: Option<RevisionChoice>) -> Self {
        self.revision = revision;
        self
    }
}
