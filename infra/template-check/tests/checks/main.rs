//! The SAM template's checks, one test binary: the template itself (`template`) and the event
//! fixtures (`events`).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod events;
mod template;
