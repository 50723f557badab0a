//! CRM sync (BEHAVIOR 7): after an assignment commits, a router with `has_integration` tells
//! the account's connected CRM the record's new owner.
//!
//! - [`port::CrmClient`] is the sync's port: one owner update, answered `Ok` (the CRM took it)
//!   or a [`port::CrmFailure`] whose text is exactly a `crm_error` of BEHAVIOR 7's table and
//!   which says what follows (final, a retry, a wait that spends no retry).
//! - [`client::HttpCrm`] implements it over HTTP for every CRM: one per instance, built at the
//!   first sync ([`client::LazyHttpCrm`]), holding the guarded HTTP client, the account's pace
//!   ([`pace`]), the tokens and found owners the instance keeps ([`memo`]), and one adapter per
//!   CRM ([`adapter::CrmAdapter`]: [`hubspot`], [`salesforce`]). [`attempt`] is the one attempt
//!   every CRM goes through (token, owner, update, one new token and one resend, one new
//!   look-up and one resend); [`exchange`] sends each request (the pace, the guard, the
//!   deadline, redaction).
//! - [`sync::CrmSync`] runs the first attempt right after the commit (the dispatch answer waits
//!   for it), stores each assignment's sync state on its history entry (BEHAVIOR 8 `crm_sync`),
//!   and runs the retries. Every attempt is due work ([`crate::due`]): the `crm_sync` item
//!   stored with the assignment, moved to each retry's due time ([`retry::RetryDelays`]) and
//!   removed when the state is final.
//!
//! The connection's secrets (an access token, an OAuth app's client secret and refresh token,
//! every access token the grant gives) never appear in a response, a log line or a
//! `crm_error`: they are [`crate::model::account::CrmSecret`]s (their `Debug` is redacted), they
//! travel only in the `Authorization` header (marked sensitive) or the token request's form, and
//! every text that comes back from the CRM is redacted before it is kept ([`port::redact_all`]).

pub mod adapter;
pub mod attempt;
pub mod client;
pub mod exchange;
pub mod hubspot;
pub mod memo;
pub mod pace;
pub mod port;
pub mod reading;
pub mod retry;
pub mod salesforce;
pub mod sync;

pub use client::{CrmSettings, HttpCrm, LazyHttpCrm};
pub use port::{CrmClient, CrmFailure, Next, Owner, OwnerUpdate, Synced};
pub use retry::RetryDelays;
pub use sync::{CrmSync, SyncResult};
