//! HTTP glue shared by the function handlers. STUB: being written.
