//! Record service. STUB: being written.
