//! Embedded store. STUB: being written.
