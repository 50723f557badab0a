//! The stored model: accounts and their API clients, roles, members, teams, routers, records,
//! what dispatch stores, and the provisioning plan.
//!
//! These are plain data holding parsed values ([`crate::types`], [`crate::schedule`]); rules
//! live in the modules that use them (`records`, `fields`, `schedule`, `trigger`, `seed`). Every
//! item carries its `account_id`: all data is scoped to the account in the token's context (spec
//! "Authentication" 6).

pub mod account;
pub mod audit;
pub mod auth_attempt;
pub mod dispatch;
pub mod due;
pub mod holiday_calendar;
pub mod member;
pub mod object_type;
pub mod pace;
pub mod provision;
pub mod record;
pub mod router;
pub mod router_write;
pub mod sla;
pub mod webhook;

pub use account::{Account, ApiClient, CrmConnection, Role, Team};
pub use audit::{
    AuditAction, AuditActor, AuditChange, AuditEvent, AuditFilter, AuditTarget, TargetType,
};
pub use dispatch::{
    AssignmentReason, AssignmentTally, AssignmentWrite, CrmSyncState, CrmSyncStatus,
    DecisionSnapshot, DispatchEntry, DispatchEntryKey, DispatchSource, ExplainedEntry,
    MessageDeduplicationId, RotationState, RotationWrite,
};
pub use holiday_calendar::{
    CalendarDeletion, CalendarRefs, HolidayCalendar, MAX_HOLIDAY_CALENDARS,
};
pub use member::{Member, MemberIdentity};
pub use object_type::ObjectType;
pub use provision::{AccountPlan, PlannedRecord, ProvisionPlan, ProvisionReport};
pub use record::{Record, UniqueKey};
pub use router::{
    DistributionModel, RotationType, Router, RouterConfig, RouterDraft, RouterRevision,
    RouterSettings, RouterUser,
};
pub use router_write::{DraftChange, RouterWrite};
pub use sla::{SlaMinutes, SlaSetting, SlaSettingView, SlaState, SlaStatus, WorkedValues};
