//! Members' time zones, working hours, out-of-office ranges and availability.
//!
//! Two uses:
//!
//! - **Parsing on write** (member PATCH, BEHAVIOR 4, and the provisioning loader alike):
//!   [`IanaTimeZone::parse`], [`WorkingHours::parse`] and [`OutOfOffice::parse`], built on
//!   [`parse_time_zone`], [`parse_days`], [`parse_hhmm`], [`validate_working_hours`] and
//!   [`validate_out_of_office`]. Entries keep their text exactly as written next to what it
//!   means, so they read back unchanged and dispatch never parses them again. Their error messages carry no JSON path: the composite
//!   validators start with the entry key (`days ...`, `start_date ...`, `end_date ...`), so the
//!   caller prefixes the entry's path, e.g. `working_hours[0].` + `start_date must be ...`.
//! - **Availability at dispatch** (BEHAVIOR 6 step 11): [`availability`](mod@availability) and [`is_available`].
//! - **Holidays** (BEHAVIOR 17): [`Holidays::parse`] once per calendar write, then
//!   [`Holidays::contains`] (availability) and [`Holidays::working_end`] (SLA checks).
//!
//! All wall-clock rules are evaluated on the member's local time in its IANA zone (chrono-tz), so
//! daylight-saving transitions need no special cases: a window is a set of local wall-clock
//! times, and an instant is inside it when its local reading is. On a spring-forward day the
//! skipped local hour simply never occurs; on a fall-back day the repeated hour is inside a
//! window both times it occurs.

pub mod availability;
pub mod days;
pub mod holidays;
pub mod out_of_office;
pub mod window;
pub mod working_hours;
pub mod zone;

pub use availability::{
    availability, availability_on_holidays, is_available, Availability, HolidayCalendars,
    UnavailableReason,
};
pub use days::{parse_days, DaySet};
pub use holidays::{Holiday, HolidayText, Holidays, HolidaysError};
pub use out_of_office::{
    parse_range_edge, validate_out_of_office, validate_out_of_office_parts, OutOfOffice,
    OutOfOfficeText, RangeEdge,
};
pub use window::{parse_hhmm, Window};
pub use working_hours::{validate_working_hours, WorkingHours, WorkingHoursText};
pub use zone::{parse_time_zone, IanaTimeZone};

#[cfg(test)]
mod proptests;
#[cfg(test)]
pub(crate) mod tests;
