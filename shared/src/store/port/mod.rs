//! The store port: what the domain needs from persistence, one async trait per aggregate (a file
//! each), and [`Store`], which bundles them.
//!
//! A function names the one trait it needs when it needs one (`&dyn RecordStore`), and
//! [`Store`] when it needs several; the functions build one `Arc<dyn Store>` at start-up. Every
//! adapter implements each trait in a file of its own (`store/<adapter>/<aggregate>.rs`), and
//! gets [`Store`] from the blanket implementation below. Adding an aggregate (as the audit
//! log was) is one trait here (`port/audit.rs`, a `mod` line, a supertrait of [`Store`] and of its
//! blanket implementation), one file per adapter, and the fault-injecting decorator's
//! (`store::faulty`) delegation.
//!
//! All reads and writes are scoped to an account; an item of another account is reported as
//! absent (the exceptions say so: [`RouterStore::find_router`], [`AccountStore::get_client`]).

mod accounts;
mod audit;
mod auth_attempts;
mod calendars;
mod dispatch;
mod due;
mod idempotency;
mod members;
mod pace;
mod provisioning;
mod records;
mod routers;
mod webhooks;

pub use accounts::AccountStore;
pub use audit::AuditStore;
pub use auth_attempts::AuthAttemptStore;
pub use calendars::CalendarStore;
pub use dispatch::{DispatchStore, FirstFound, FirstReads};
pub use due::DueStore;
pub use idempotency::IdempotencyStore;
pub use members::MemberStore;
pub use pace::PaceStore;
pub use provisioning::ProvisionStore;
pub use records::{RecordStore, RECORD_BATCH_WAVE};
pub use routers::RouterStore;
pub use webhooks::WebhookStore;

/// Persistence of the routing domain: every aggregate's trait. The bound a function names when
/// it needs more than one of them, and the type the functions share (`Arc<dyn Store>`).
///
/// Implemented for every type that implements all of them; nothing implements it by hand.
pub trait Store:
    AccountStore
    + RecordStore
    + MemberStore
    + RouterStore
    + DispatchStore
    + DueStore
    + IdempotencyStore
    + WebhookStore
    + CalendarStore
    + ProvisionStore
    + AuditStore
    + PaceStore
    + AuthAttemptStore
{
}

impl<T> Store for T where
    T: AccountStore
        + RecordStore
        + MemberStore
        + RouterStore
        + DispatchStore
        + DueStore
        + IdempotencyStore
        + WebhookStore
        + CalendarStore
        + ProvisionStore
        + AuditStore
        + PaceStore
        + AuthAttemptStore
{
}
