//! Members' time zones, working hours, out-of-office ranges and availability. STUB: being written.
