//! The store port: what the domain needs from persistence, one async trait per aggregate (a file
//! each), and [`Store`], which bundles them.
//!
//! A function or service names the ports it uses: the one trait when it needs one (`&dyn
//! RecordStore`), generic bounds for a function that needs a few (`&(impl AccountStore +
//! AuthAttemptStore + ?Sized)`), or a bundle of them (`port/uses.rs`; `MemberPorts`:
//! `AccountStore + MemberStore`) for a service that holds them. [`Store`], every trait and every
//! bundle, is for what needs everything: the wiring builds one store at start-up and hands each
//! service its part (an upcast to a supertrait, Rust 1.86), and provisioning writes it all. Every
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
mod uses;
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
pub use uses::{
    DeliveryPorts, DispatchPorts, HistoryPorts, MemberPorts, RecordPorts, ReplayPorts,
    RouterAdminPorts, SlaPorts, SyncPorts, TokenPorts,
};
pub use webhooks::WebhookStore;

/// Persistence of the routing domain: every aggregate's trait, and every service's bundle of
/// the ports it uses (so that the one store the wiring builds converts to each: a bundle must
/// be a supertrait for the upcast). Named by what needs everything: the wiring (the functions'
/// [`crate::deps::Deps`], the local server), provisioning, the test harness.
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
    + TokenPorts
    + SyncPorts
    + DispatchPorts
    + ReplayPorts
    + HistoryPorts
    + MemberPorts
    + RecordPorts
    + RouterAdminPorts
    + SlaPorts
    + DeliveryPorts
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
