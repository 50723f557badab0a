//! CRM sync (BEHAVIOR 7): after an assignment commits, a router with `has_integration` tells
//! the account's connected CRM the record's new owner.
//!
//! - [`port::CrmClient`] is the port: one owner update, answered `Ok` (the CRM took it) or a
//!   [`port::CrmFailure`] whose text is exactly a `crm_error` of BEHAVIOR 7's table and which says
//!   whether it can pass by itself (timeouts, connection errors, 429, 5xx).
//! - [`hubspot::HubSpotClient`] is the adapter (HubSpot CRM v3 `PATCH
//!   /crm/v3/objects/{type}/{id}`, the owners API to find an owner by e-mail, the OAuth
//!   refresh-token grant), over reqwest with rustls, built once per instance; it keeps OAuth
//!   access tokens and owners found by e-mail ([`memo`]) and paces each account's requests
//!   ([`pace`], the `governor` crate).
//! - [`sync::CrmSync`] runs the first attempt right after the commit (the dispatch answer waits
//!   for it, bounded by the 3 s timeout), stores each assignment's sync state on its history
//!   entry (BEHAVIOR 8 `crm_sync`), and runs the retries. Every attempt is due work
//!   ([`crate::due`]): the `crm_sync` item stored with the assignment, moved to each retry's due
//!   time ([`retry::RetryDelays`]) and removed when the state is final.
//!
//! The connection's secrets (an access token, an OAuth app's client secret and refresh token,
//! every access token the grant gives) never appear in a response, a log line or a
//! `crm_error`: they are [`crate::model::account::CrmSecret`]s (their `Debug` is redacted), they
//! travel only in the `Authorization` header (marked sensitive) or the token request's form, and
//! every text that comes back from the CRM is redacted before it is kept ([`port::redact_all`]).

pub mod hubspot;
pub mod memo;
pub mod pace;
pub mod port;
pub mod retry;
pub mod sync;

pub use hubspot::{HubSpotClient, HubSpotSettings, LazyHubSpotClient};
pub use port::{CrmClient, CrmFailure, Next, Owner, OwnerUpdate};
pub use retry::RetryDelays;
pub use sync::{CrmSync, SyncResult};
