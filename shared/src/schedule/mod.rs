//! Members' time zones, working hours, out-of-office ranges and availability.
//!
//! Two uses:
//!
//! - **Validation on write** (member PATCH, BEHAVIOR 4, and the provisioning loader):
//!   [`parse_time_zone`], [`parse_days`], [`parse_hhmm`], [`validate_working_hours`] and
//!   [`validate_out_of_office`]. Entries are stored exactly as written; these functions only decide
//!   whether they are acceptable. Their error messages carry no JSON path: the composite
//!   validators start with the entry key (`days ...`, `start_date ...`, `end_date ...`), so the
//!   caller prefixes the entry's path, e.g. `working_hours[0].` + `start_date must be ...`.
//! - **Availability at dispatch** (BEHAVIOR 6 step 11): [`availability`] and [`is_available`].
//!
//! All wall-clock rules are evaluated on the member's local time in its IANA zone (chrono-tz), so
//! daylight-saving transitions need no special cases: a window is a set of local wall-clock
//! times, and an instant is inside it when its local reading is. On a spring-forward day the
//! skipped local hour simply never occurs; on a fall-back day the repeated hour is inside a
//! window both times it occurs.

mod availability;
mod days;
mod out_of_office;
mod window;
mod zone;

pub use availability::{availability, is_available, Availability, UnavailableReason};
pub use days::{parse_days, DaySet};
pub use out_of_office::{
    parse_range_edge, validate_out_of_office, validate_out_of_office_parts, RangeEdge,
};
pub use window::{parse_hhmm, validate_working_hours, Window};
pub use zone::parse_time_zone;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
