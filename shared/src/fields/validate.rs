//! Write validation. STUB: being written.
