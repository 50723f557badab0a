//! SLA reassignment (BEHAVIOR 14): a record its owner does not work within the router's time
//! limit goes to the next eligible member, visibly and exactly once.
//!
//! - [`setting`]: the router setting `sla`, parsed at provisioning ([`parse_setting`]);
//! - [`check`]: when an assignment starts a check ([`starts_check`]), what its due item names
//!   ([`CheckSubject`]), how long a minute is ([`SlaMinute`]) and the verdict ([`verdict`]);
//! - [`job`]: the job of `sla_check` due items ([`SlaChecks`]), which ends a check `met` or
//!   `cancelled`, or asks the dispatch engine for the reassignment ([`SlaRun`]) and ends it
//!   `reassigned` (in the reassignment's transaction) or `expired`.
//!
//! A check is due work ([`crate::due`]): its item is stored in the transaction of the assignment
//! that starts it, handed on to a timer or a delayed queue message, swept when overdue, claimed
//! with a lease. Every ending is one write conditional on the lease and on the entry's check
//! still being `pending`, so racing workers end a check once.

pub mod check;
pub mod job;
pub mod setting;

pub use check::{starts_check, verdict, worked, CheckSubject, SlaMinute, SlaRun, Verdict};
pub use job::SlaChecks;
pub use setting::{parse_setting, SlaSettingError};
