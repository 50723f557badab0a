//! Records: contacts, companies, deals and tickets (spec "Record collection endpoints", "Record
//! item endpoints"; BEHAVIOR 3).
//!
//! - [`service`]: the operations, in the contract's order of checks;
//! - [`write`](mod@write): the write body and what it changes (required fields, owner dates, unique keys);
//! - [`view`]: the flat response object.

pub mod service;
pub mod view;
pub mod write;

pub use service::{Caller, RecordService};
pub use view::{ExtraProperties, RecordView};
pub use write::{unique_keys, RecordWrite};
