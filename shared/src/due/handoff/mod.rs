//! The fast path of due work: how a stored item's next attempt reaches a worker on time. One
//! port ([`Handoff`], `port.rs`) and its two carriers side by side: delayed SQS messages in Lambda
//! ([`SqsHandoff`], `sqs.rs`), timers of the process in the local server without a queue
//! ([`InProcessHandoff`], `in_process.rs`).

mod in_process;
mod port;
mod sqs;

pub use in_process::InProcessHandoff;
pub use port::Handoff;
pub use sqs::{SqsHandoff, MAX_SQS_DELAY, SQS_BATCH};
