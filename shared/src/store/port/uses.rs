//! The store ports each service uses, as one bound per service that holds several: a test fake
//! of a service implements those and nothing else. Each bundle is a supertrait of `Store` (so
//! the one store the wiring builds converts to it: trait upcasting) and is implemented for every
//! type that has its ports. Here, not beside the services, so that the port names no service.

use super::{
    AccountStore, AuditStore, AuthAttemptStore, CalendarStore, DispatchStore, DueStore,
    IdempotencyStore, MemberStore, RecordStore, RouterStore, WebhookStore,
};

/// The store ports the token endpoint uses: the client look-up ([`AccountStore::get_client`])
/// and the count of failed authentications (`AuthAttemptStore`). Every store implements it,
/// and `Store` names it among its supertraits, so the one store the wiring
/// builds converts to it.
pub trait TokenPorts: AccountStore + AuthAttemptStore {}

impl<T: AccountStore + AuthAttemptStore> TokenPorts for T {}

/// The store ports `CrmSync` uses (`AccountStore`, `DispatchStore`, `MemberStore`, `RecordStore`, `WebhookStore`): every store implements it, and `Store` names it
/// among its supertraits, so the one store the wiring builds converts to it.
pub trait SyncPorts:
    AccountStore + DispatchStore + MemberStore + RecordStore + WebhookStore
{
}

impl<T: AccountStore + DispatchStore + MemberStore + RecordStore + WebhookStore> SyncPorts for T {}

/// The store ports the engine (`DispatchEngine` and its steps) uses (`AccountStore`, `CalendarStore`, `DispatchStore`, `DueStore`, `IdempotencyStore`, `MemberStore`, `RecordStore`, `RouterStore`, `WebhookStore`, `SlaPorts`), the SLA checks' among them: every store implements it, and `Store` names it
/// among its supertraits, so the one store the wiring builds converts to it.
pub trait DispatchPorts:
    AccountStore
    + CalendarStore
    + DispatchStore
    + DueStore
    + IdempotencyStore
    + MemberStore
    + RecordStore
    + RouterStore
    + WebhookStore
    + SlaPorts
{
}

impl<
        T: AccountStore
            + CalendarStore
            + DispatchStore
            + DueStore
            + IdempotencyStore
            + MemberStore
            + RecordStore
            + RouterStore
            + WebhookStore
            + SlaPorts,
    > DispatchPorts for T
{
}

/// The store ports `Replayer` uses (`AccountStore`, `CalendarStore`, `DispatchStore`, `MemberStore`, `RecordStore`, `RouterStore`): every store implements it, and `Store` names it
/// among its supertraits, so the one store the wiring builds converts to it.
pub trait ReplayPorts:
    AccountStore + CalendarStore + DispatchStore + MemberStore + RecordStore + RouterStore
{
}

impl<T: AccountStore + CalendarStore + DispatchStore + MemberStore + RecordStore + RouterStore>
    ReplayPorts for T
{
}

/// The store ports `HistoryService` uses (`AccountStore`, `DispatchStore`, `MemberStore`, `RecordStore`, `RouterStore`): every store implements it, and `Store` names it
/// among its supertraits, so the one store the wiring builds converts to it.
pub trait HistoryPorts:
    AccountStore + DispatchStore + MemberStore + RecordStore + RouterStore
{
}

impl<T: AccountStore + DispatchStore + MemberStore + RecordStore + RouterStore> HistoryPorts for T {}

/// The store ports `MemberService` uses (`AccountStore`, `MemberStore`): every store implements it, and `Store` names it
/// among its supertraits, so the one store the wiring builds converts to it.
pub trait MemberPorts: AccountStore + MemberStore {}

impl<T: AccountStore + MemberStore> MemberPorts for T {}

/// The store ports `RecordService` uses (`AccountStore`, `MemberStore`, `RecordStore`): every store implements it, and `Store` names it
/// among its supertraits, so the one store the wiring builds converts to it.
pub trait RecordPorts: AccountStore + MemberStore + RecordStore {}

impl<T: AccountStore + MemberStore + RecordStore> RecordPorts for T {}

/// The store ports `RouterAdmin` uses (`AccountStore`, `AuditStore`, `CalendarStore`, `DispatchStore`, `MemberStore`, `RouterStore`): every store implements it, and `Store` names it
/// among its supertraits, so the one store the wiring builds converts to it.
pub trait RouterAdminPorts:
    AccountStore + AuditStore + CalendarStore + DispatchStore + MemberStore + RouterStore
{
}

impl<T: AccountStore + AuditStore + CalendarStore + DispatchStore + MemberStore + RouterStore>
    RouterAdminPorts for T
{
}

/// The store ports `SlaChecks` uses (`DispatchStore`, `RecordStore`, `RouterStore`): every store implements it, and `Store` names it
/// among its supertraits, so the one store the wiring builds converts to it.
pub trait SlaPorts: DispatchStore + RecordStore + RouterStore {}

impl<T: DispatchStore + RecordStore + RouterStore> SlaPorts for T {}

/// The store ports the deliveries (`WebhookSender`, `DeliveryCloser`) uses (`DueStore`, `WebhookStore`): every store implements it, and `Store` names it
/// among its supertraits, so the one store the wiring builds converts to it.
pub trait DeliveryPorts: DueStore + WebhookStore {}

impl<T: DueStore + WebhookStore> DeliveryPorts for T {}
