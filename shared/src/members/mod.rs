//! Account members (spec "User (account member) object", "Users"; BEHAVIOR 4).
//!
//! - [`patch`]: the PATCH body, parsed key by key with the parsers of [`crate::types`] and
//!   [`crate::schedule`] (the provisioning loader uses the same ones);
//! - [`view`]: the user object of the responses;
//! - [`service`]: list, read, update.

pub mod patch;
pub mod service;
pub mod view;

pub use patch::{MemberChange, MemberPatch};
pub use service::MemberService;
pub use view::MemberView;
