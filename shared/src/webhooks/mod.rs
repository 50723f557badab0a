//! Signed webhooks (BEHAVIOR 13): subscriptions, the events dispatch makes, and their delivery.
//!
//! - [`service::WebhookService`]: the subscription routes (create, list, read, change, delete,
//!   rotate the secret, the delivery log and a manual retry).
//! - [`events`]: the deliveries of an event, made in the same store transaction as the history
//!   entry that causes it (an outbox), each with its due item ([`crate::due`]).
//! - [`sender::WebhookSender`]: the job of those due items: one signed attempt through the
//!   outbound guard, its outcome stored with the item's settlement, retries on the schedule.
//! - [`signing`]: Standard Webhooks v1 signatures.
//! - [`cache::SubscriptionCache`]: an instance's subscriptions, kept at the version they were
//!   read at, for dispatch.

pub mod cache;
pub mod events;
pub mod lifecycle;
pub mod retry;
pub mod secrets;
pub mod sender;
pub mod service;
pub mod signing;
pub mod view;

pub use cache::SubscriptionCache;
pub use events::{add_deliveries, DeliverySubject, Notify};
pub use lifecycle::DeliveryCloser;
pub use retry::RetrySchedule;
pub use sender::WebhookSender;
pub use service::WebhookService;
