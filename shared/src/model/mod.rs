//! The stored model: accounts and their API clients, roles, members, teams, routers and records.
//!
//! These are plain data; rules live in the modules that use them (`records`, `fields`,
//! `schedule`, `trigger`, `seed`). Every item carries its `account_id`: all data is scoped to the
//! account in the token's context (spec "Authentication" 6).

mod account;
mod dispatch;
mod member;
mod object_type;
mod record;
mod router;

pub use account::{Account, ApiClient, CrmConnection, Role, Team};
pub use dispatch::{AssignmentLog, AssignmentReason, AssignmentWrite, RotationState};
pub use member::{Member, OutOfOffice, WorkingHours};
pub use object_type::ObjectType;
pub use record::Record;
pub use router::{DistributionModel, RotationType, Router, RouterSettings, RouterUser};
