//! The store: the port (what the domain needs from persistence, as async traits, one per
//! aggregate: [`port`]) and its adapters.
//!
//! The port is shaped after what DynamoDB does well, so that adapter is a straight
//! implementation: single-item reads by key, ordered queries with a page, and atomic multi-item
//! writes with conditions (`TransactWriteItems`). Rules that must hold under concurrency are
//! enforced by the store inside one write, never by "query, then write":
//!
//! - uniqueness of record keys: guard items claimed in the same transaction as the record
//!   ([`RecordStore::create_record`], [`RecordStore::update_record`]);
//! - lost updates: every mutable item carries a `version`; writes are conditional on the version
//!   read ([`StoreError::Conflict`] otherwise), and the services read again and apply again
//!   until one deadline ([`retry`]).
//!
//! Adapters: [`memory::MemoryStore`] (embedded, in process; the local server's default and the
//! fast tests') and [`dynamodb::DynamoStore`] (production: one DynamoDB table whose keys come
//! from [`dynamodb::keys`]), each with one file per aggregate (`memory/records.rs`,
//! `dynamodb/records.rs`, ...). Both pass the same contract suite
//! (`shared/tests/integration/store_contract/` and the suites beside it; `docs/architecture.md`,
//! "The store's ports", says which covers which port). `docs/architecture.md` also tables which
//! function uses which port.

pub mod account_cache;
pub mod dynamodb;
mod error;
#[cfg(any(test, feature = "test-util"))]
pub mod faulty;
#[cfg(any(test, feature = "test-util"))]
pub mod harness;
pub mod memory;
pub mod port;
mod position;
pub mod retry;
pub mod size;
pub mod tally;

pub use crate::model::provision::ProvisionReport;
pub use crate::model::record::UniqueKey;
pub use crate::page::{Page, PageRequest, PageStart, Position};
pub use error::{StoreError, StoreResult};
pub use port::{
    AccountStore, AuditStore, AuthAttemptStore, CalendarStore, DispatchStore, DueStore, FirstFound,
    FirstReads, IdempotencyStore, MemberStore, PaceStore, ProvisionStore, RecordStore, RouterStore,
    Store, WebhookStore, RECORD_BATCH_WAVE,
};
pub use port::{
    DeliveryPorts, DispatchPorts, HistoryPorts, MemberPorts, RecordPorts, ReplayPorts,
    RouterAdminPorts, SlaPorts, SyncPorts, TokenPorts,
};
pub use position::{
    audit_position, delivery_position, dispatch_position, email_then_id, holiday_calendar_page,
    holiday_calendar_position, member_position, record_position, revision_order, revision_position,
    router_position, sortable_time, time_then_id, webhook_position,
};
pub use retry::{
    request_deadline, within_request_deadline, write_rounds, Backoff, RoundError, Turns,
    CONFLICT_DEADLINE, REQUEST_DEADLINE,
};

/// Every trait of the port, for code that calls store methods on a concrete adapter
/// (`MemoryStore`, `DynamoStore`) rather than through `dyn Store`: `use
/// shared::store::prelude::*;`.
pub mod prelude {
    pub use super::{
        AccountStore, AuditStore, AuthAttemptStore, CalendarStore, DispatchStore, DueStore,
        IdempotencyStore, MemberStore, ProvisionStore, RecordStore, RouterStore, Store,
        WebhookStore,
    };
}
