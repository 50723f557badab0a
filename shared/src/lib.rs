//! Domain of the account routing API.
//!
//! Everything the Lambda functions share lives here: the record model and the field catalogue
//! (spec "Resources and their fields"), write validation and canonical stored forms, account
//! members and their availability, routers and trigger evaluation, OAuth 2.0 client-credentials
//! auth (RFC 6749 section 4.4, JWT bearer tokens per RFC 7519 / RFC 6750), the store port with its
//! adapters, the provisioning (seed) loader, and the thin HTTP glue the handlers use.
//!
//! Layers, each using only those above it: [`error`], [`clock`], [`timefmt`] -> parsed values
//! ([`types`], [`schedule`]) -> the stored [`model`] -> [`fields`], [`trigger`] -> the [`store`]
//! port -> the services ([`records`], [`members`], [`routers`], [`dispatch`], [`auth`], [`seed`])
//! -> the HTTP glue ([`api`]) and the cold-start wiring ([`deps`]). Services take parsed inputs
//! and return typed views; only [`api`] knows HTTP.
//!
//! The product rules are in `docs/behavior.md` (the API itself in `openapi.json`); section
//! numbers quoted in doc comments ("BEHAVIOR 3") refer to that page.

pub mod api;
pub mod audit;
pub mod auth;
pub mod calendars;
pub mod clock;
pub mod crm;
pub mod deps;
pub mod dispatch;
pub mod due;
pub mod error;
pub mod fields;
pub mod history;
pub mod idempotency;
pub mod logging;
pub mod members;
pub mod model;
pub mod outbound;
pub mod page;
pub mod records;
pub mod routers;
pub mod schedule;
pub mod secrets;
pub mod seed;
pub mod sla;
pub mod store;
pub mod telemetry;
pub mod timefmt;
pub mod trigger;
pub mod types;
pub mod webhooks;

pub use error::DomainError;
