//! The store ports each service uses, as one bound per service that holds several: a test fake
//! of a service implements those and nothing else. Each bundle is a supertrait of `Store` (so
//! the one store the wiring builds converts to it: trait upcasting) and is implemented for every
//! type that has its ports. Here, not beside the services, so that the port names no service.
//!
//! [`port_bundle!`] writes each bundle's port list once: as the trait's supertraits and as the
//! bounds of its blanket implementation, which therefore cannot drift apart.

use super::{
    AccountStore, AuditStore, AuthAttemptStore, CalendarStore, DispatchStore, DueStore,
    IdempotencyStore, MemberStore, RecordStore, RouterStore, WebhookStore,
};

/// `port_bundle!(/// docs, Name: [PortA, PortB])` declares the trait `Name` with the ports as its
/// supertraits and the given docs (followed by the list of its ports and how the wiring's store
/// converts to it), and implements it for every type that implements all those ports.
macro_rules! port_bundle {
    ($(#[doc = $doc:literal])* $name:ident: [$first:ident $(, $rest:ident)* $(,)?]) => {
        $(#[doc = $doc])*
        ///
        #[doc = concat!(
            "Its ports: `", stringify!($first), "`", $(", `", stringify!($rest), "`",)*
            ". Every store implements it, and `Store` names it among its supertraits, so the one \
             store the wiring builds converts to it."
        )]
        pub trait $name: $first $(+ $rest)* {}

        impl<T: $first $(+ $rest)*> $name for T {}
    };
}

port_bundle!(
    /// The store ports the token endpoint uses: the client look-up ([`AccountStore::get_client`])
    /// and the count of failed authentications.
    TokenPorts: [AccountStore, AuthAttemptStore]
);

port_bundle!(
    /// The store ports `CrmSync` uses.
    SyncPorts: [AccountStore, DispatchStore, MemberStore, RecordStore, WebhookStore]
);

port_bundle!(
    /// The store ports the engine (`DispatchEngine` and its steps) uses, the SLA checks'
    /// (`SlaPorts`) among them.
    DispatchPorts: [
        AccountStore,
        CalendarStore,
        DispatchStore,
        DueStore,
        IdempotencyStore,
        MemberStore,
        RecordStore,
        RouterStore,
        WebhookStore,
        SlaPorts,
    ]
);

port_bundle!(
    /// The store ports `Replayer` uses.
    ReplayPorts: [AccountStore, CalendarStore, DispatchStore, MemberStore, RecordStore, RouterStore]
);

port_bundle!(
    /// The store ports `HistoryService` uses.
    HistoryPorts: [AccountStore, DispatchStore, MemberStore, RecordStore, RouterStore]
);

port_bundle!(
    /// The store ports `MemberService` uses.
    MemberPorts: [AccountStore, MemberStore]
);

port_bundle!(
    /// The store ports `RecordService` uses.
    RecordPorts: [AccountStore, MemberStore, RecordStore]
);

port_bundle!(
    /// The store ports `RouterAdmin` uses.
    RouterAdminPorts: [AccountStore, AuditStore, CalendarStore, DispatchStore, MemberStore, RouterStore]
);

port_bundle!(
    /// The store ports `SlaChecks` uses.
    SlaPorts: [DispatchStore, RecordStore, RouterStore]
);

port_bundle!(
    /// The store ports the deliveries (`WebhookSender`, `DeliveryCloser`) use.
    DeliveryPorts: [DueStore, WebhookStore]
);
