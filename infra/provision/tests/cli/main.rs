//! The provisioning tool's integration tests, one test binary: the seed loaded through the CLI
//! (`provision_cli`) and the dead-letter redrive (`redrive`).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod provision_cli;
mod redrive;
