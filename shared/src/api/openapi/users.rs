//! The schema of a member PATCH body (spec "Users"; BEHAVIOR 4).

use super::records::{schema, storable_number};
use super::WHITESPACE;
use crate::types::capacity::MAX_COUNTER;
use crate::types::limits::{
    MAX_CAPACITY_ENTRIES, MAX_CAPACITY_KEYS, MAX_CAPACITY_TEXT_CHARS, MAX_MEMBER_TEXT_CHARS,
    MAX_NOTIFICATION_PREFERENCES, MAX_NOTIFICATION_PREFERENCE_CHARS, MAX_OUT_OF_OFFICE,
    MAX_WORKING_HOURS,
};
use serde_json::{json, Value};
use std::borrow::Cow;
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

/// A regular expression matching `word` in any letter case (JSON Schema patterns have no flags).
fn any_case(word: &str) -> String {
    word.chars()
        .map(|c| {
            if c.is_ascii_alphabetic() {
                format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase())
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn days_pattern() -> String {
    let mut forms: Vec<String> = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ]
    .iter()
    .map(|d| any_case(d))
    .collect();
    let ws = format!("[{WHITESPACE}]*");
    forms.push(format!("{}{ws}-{ws}{}", any_case("mon"), any_case("fri")));
    forms.push(format!("{}{ws}-{ws}{}", any_case("sat"), any_case("sun")));
    format!("^{ws}({}){ws}$", forms.join("|"))
}

/// A timestamp without an offset, read in the member's zone: a valid month, day, hour, minute
/// and second (February 29 left out: a pattern cannot tell leap years).
fn local_timestamp() -> String {
    let ws = format!("[{WHITESPACE}]*");
    let date = "[0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))";
    format!("^{ws}{date}[T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{{1,9}})?)?{ws}$")
}

/// The characters of the tz database's names (letters, digits, `_`, `+`, `-`, `/`).
const ZONE_NAME: &str = "^[A-Za-z0-9_+/-]+$";

const HHMM: &str = "^([01][0-9]|2[0-3]):[0-5][0-9]$";

fn nullable_text(description: &str) -> Value {
    json!({"type": ["string", "null"], "maxLength": MAX_MEMBER_TEXT_CHARS, "description": description})
}

fn patch_schema() -> Value {
    // The tz database holds about 600 names, some equal but for case or sign (`GMT0`, `GMT+0`,
    // `GMT-0`): a string with the names' characters and longest length, not an `enum` of them,
    // which client generators turn into identifiers that collide.
    let longest_zone = chrono_tz::TZ_VARIANTS
        .iter()
        .map(|z| z.name().len())
        .max()
        .unwrap_or(64);
    let date_or_timestamp = json!({
        "description": "An ISO date (a date-only end covers that whole day) or a timestamp \
            (with an offset, or without one in the member's time zone).",
        "anyOf": [
            {"type": "string", "format": "date"},
            {"type": "string", "format": "date-time"},
            {"type": "string", "pattern": local_timestamp()},
        ],
    });
    let mut capacity_value = storable_number();
    capacity_value.extend([
        json!({"type": "string", "maxLength": MAX_CAPACITY_TEXT_CHARS}),
        json!({"type": "boolean"}),
        json!({"type": "null"}),
    ]);
    json!({
        "type": "object",
        "description": "The writable keys to change; at least one. `id`, `email`, `calendars`, \
            `archived`, `archived_by`, `role` and unknown keys are refused with 400 naming the key. \
            A member takes at most 300 KB of JSON (only `capacity` can reach it): else 400 \
            `User too large`.",
        "minProperties": 1,
        "additionalProperties": false,
        "properties": {
            "full_name": nullable_text("Full name; never derived from the other names."),
            "first_name": nullable_text("First name."),
            "last_name": nullable_text("Last name."),
            "phone": nullable_text("Phone."),
            "external_id": nullable_text("External id (the CRM owner id)."),
            "office_status": {"type": "boolean", "description": "Whether the member is in office."},
            "can_receive_notifications": {"type": "boolean"},
            "time_zone": {
                "type": "string",
                "minLength": 1,
                "maxLength": longest_zone,
                "pattern": ZONE_NAME,
                "description": "An IANA time zone name (the tz database; exact case, no \
                    whitespace), e.g. `America/New_York`, `Europe/Berlin`, `UTC`. Any other \
                    string is 400 `Unknown time zone`.",
                "examples": ["America/New_York", "Europe/Berlin", "Asia/Tokyo", "UTC"],
            },
            "working_hours": {
                "type": "array",
                "maxItems": MAX_WORKING_HOURS,
                "description": "Replaces the windows; empty means available 24/7. Times are \
                    read in `time_zone`; a window includes its start and excludes its end; an \
                    end before the start runs past midnight; equal times are refused.",
                "items": {
                    "type": "object",
                    "required": ["days", "start_date", "end_date"],
                    "properties": {
                        "days": {"type": "string", "pattern": days_pattern(), "examples": ["Mon - Fri"]},
                        "start_date": {"type": "string", "pattern": HHMM, "examples": ["09:00"]},
                        "end_date": {"type": "string", "pattern": HHMM, "examples": ["17:30"]},
                    },
                },
            },
            "out_office_dates": {
                "type": "array",
                "maxItems": MAX_OUT_OF_OFFICE,
                "description": "Replaces the ranges; `start_date` must not be later than \
                    `end_date`. Other keys of an entry are ignored.",
                "items": {
                    "type": "object",
                    "required": ["start_date", "end_date"],
                    "properties": {"start_date": date_or_timestamp, "end_date": date_or_timestamp},
                },
            },
            "capacity": {
                "type": "array",
                "maxItems": MAX_CAPACITY_ENTRIES,
                "description": "Replaces the entries, counters included. Keys are free-form; \
                    `current_capacity` and `max_capacity` must be integers from 0 to 2^53 - 1. An \
                    entry applies to the records of its `assignment_type` (`all` or absent: \
                    every type). An entry is flat: at most 20 keys of at most 256 characters, \
                    each value a string of at most 256 characters, a number both stores hold, \
                    a boolean or null.",
                "items": {
                    "type": "object",
                    "maxProperties": MAX_CAPACITY_KEYS,
                    "additionalProperties": {"anyOf": capacity_value},
                    "properties": {
                        "current_capacity": {"type": "integer", "minimum": 0, "maximum": MAX_COUNTER},
                        "max_capacity": {"type": "integer", "minimum": 0, "maximum": MAX_COUNTER},
                    },
                },
            },
            "notification_preferences": {
                "type": "array",
                "description": "Categories; duplicates are dropped (at most 50 as sent).",
                "maxItems": MAX_NOTIFICATION_PREFERENCES,
                "items": {
                    "type": "string",
                    "pattern": format!("[^{WHITESPACE}]"),
                    "maxLength": MAX_NOTIFICATION_PREFERENCE_CHARS,
                },
            },
            "role_id": {
                "type": ["string", "null"],
                "format": "uuid",
                "description": "A role of the account (`null` removes the role); another id is 400 `Invalid role_id`.",
            },
            "holiday_calendar_id": {
                "type": ["string", "null"],
                "format": "uuid",
                "description": "A holiday calendar of the account (BEHAVIOR 17; `null` removes it): during its holidays the member is unavailable. Another id is 400 `Invalid holiday_calendar_id`.",
            },
        },
        "example": {
            "time_zone": "America/New_York",
            "working_hours": [{"days": "Mon - Fri", "start_date": "08:00", "end_date": "16:30"}],
        },
    })
}

/// The body of `PATCH /users/{userId}`.
pub struct UserPatch;

impl PartialSchema for UserPatch {
    fn schema() -> RefOr<Schema> {
        schema(patch_schema())
    }
}

impl ToSchema for UserPatch {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("UserPatch")
    }
}

/// The JSON Schema of a holiday calendar body (BEHAVIOR 17), every rule a schema can say: the
/// keys (no others), name lengths and not blank, the zone's characters, `YYYY-MM-DD` dates of
/// real months and days (29 February allowed: a pattern cannot tell leap years), `HH:mm` times.
/// What it cannot say (both `start` and `end` or neither, `start < end`, a real 29 February, a
/// zone of the tz database) the server answers with a 400 naming the path.
fn calendar_schema() -> Value {
    let longest_zone = chrono_tz::TZ_VARIANTS
        .iter()
        .map(|z| z.name().len())
        .max()
        .unwrap_or(64);
    let non_blank = format!("[^{WHITESPACE}]");
    let date = "^[0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|[12][0-9]))$";
    let time = |description: &str, example: &str| json!({"type": ["string", "null"], "pattern": HHMM, "description": description, "examples": [example]});
    json!({
        "type": "object",
        "description": "`POST /holiday-calendars` and `PUT /holiday-calendars/{id}` body \
            (BEHAVIOR 17): the whole calendar (a `PUT` replaces all three keys).",
        "required": ["name", "time_zone", "holidays"],
        "additionalProperties": false,
        "properties": {
            "name": {
                "type": "string", "minLength": 1, "maxLength": crate::calendars::MAX_CALENDAR_NAME_CHARS,
                "pattern": non_blank, "description": "Display name, 1 to 256 characters, not blank."
            },
            "time_zone": {
                "type": "string", "minLength": 1, "maxLength": longest_zone, "pattern": ZONE_NAME,
                "description": "The IANA time zone the dates and times are read in (exact case), \
                    e.g. `Europe/Berlin`. Any other string is 400 naming `time_zone`.",
                "examples": ["America/New_York", "Europe/Berlin", "Asia/Tokyo", "UTC"],
            },
            "holidays": {
                "type": "array",
                "maxItems": crate::schedule::holidays::MAX_HOLIDAYS,
                "description": "At most 500. A problem is a 400 naming its path, e.g. \
                    `holidays[3].end`.",
                "items": {
                    "type": "object",
                    "required": ["name", "date"],
                    "additionalProperties": false,
                    "properties": {
                        "name": {
                            "type": "string", "minLength": 1,
                            "maxLength": crate::schedule::holidays::MAX_HOLIDAY_NAME_CHARS,
                            "pattern": non_blank, "description": "1 to 200 characters, not blank."
                        },
                        "date": {
                            "type": "string", "pattern": date,
                            "description": "The day, `YYYY-MM-DD`, in the calendar's time zone.",
                            "examples": ["2026-12-25"]
                        },
                        "start": time("First local time of a partial holiday, `HH:mm` (00:00 to \
                            23:59); with `end`, or neither (`null` or absent: the whole day).", "13:00"),
                        "end": time("First local time after it, `HH:mm`, later than `start`.", "17:00"),
                        "yearly": {
                            "type": ["boolean", "null"],
                            "description": "Repeats on the same month and day every year, before \
                                and after the date's own year (29 February only in leap years). \
                                `null` or absent: false."
                        }
                    }
                }
            }
        },
        "example": {"name": "US office", "time_zone": "America/New_York", "holidays": [
            {"name": "Independence Day", "date": "2026-07-04", "yearly": true},
            {"name": "Christmas Eve afternoon", "date": "2026-12-24", "start": "13:00", "end": "17:00"}
        ]}
    })
}

/// The body of `POST /holiday-calendars` and `PUT /holiday-calendars/{id}`.
pub struct HolidayCalendarWrite;

impl PartialSchema for HolidayCalendarWrite {
    fn schema() -> RefOr<Schema> {
        schema(calendar_schema())
    }
}

impl ToSchema for HolidayCalendarWrite {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("HolidayCalendarWrite")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::days::parse_days;

    #[test]
    fn the_schema_literal_survives_utoipas_model_unchanged() {
        crate::api::openapi::records::tests::assert_round_trip(patch_schema());
        crate::api::openapi::records::tests::assert_round_trip(calendar_schema());
    }

    /// The holiday `date` pattern accepts a text exactly when the server's parser does, but for
    /// 29 February of a common year (a pattern cannot tell leap years: the server's 400).
    #[test]
    fn the_holiday_date_pattern_agrees_with_the_parser() {
        let schema = calendar_schema();
        let date = &schema["properties"]["holidays"]["items"]["properties"]["date"]["pattern"];
        let pattern = regex::Regex::new(date.as_str().unwrap()).unwrap();
        let parses = |text: &str| {
            crate::schedule::holidays::Holiday::parse(crate::schedule::holidays::HolidayText {
                name: "x".into(),
                date: text.into(),
                start: None,
                end: None,
                yearly: false,
            })
            .is_ok()
        };
        let mut day = chrono::NaiveDate::from_ymd_opt(2023, 1, 1).unwrap();
        while chrono::Datelike::year(&day) < 2025 {
            let text = day.format("%Y-%m-%d").to_string();
            assert!(pattern.is_match(&text) && parses(&text), "{text}");
            day = day.succ_opt().unwrap();
        }
        for text in [
            "2026-02-30",
            "2026-04-31",
            "2026-13-01",
            "2026-00-10",
            "2026-1-01",
            " 2026-01-01",
            "2026-01-01T00:00",
        ] {
            assert!(!pattern.is_match(text) && !parses(text), "{text}");
        }
        assert!(pattern.is_match("2026-02-29") && !parses("2026-02-29"));
        let example = &schema["example"]["holidays"];
        assert_eq!(example.as_array().unwrap().len(), 2);
    }

    #[test]
    fn the_days_pattern_accepts_exactly_what_the_parser_accepts() {
        let pattern = regex::Regex::new(&days_pattern()).unwrap();
        let forms = [
            "monday",
            "SUNDAY",
            " Mon - Fri ",
            "mon-fri",
            "sat -sun",
            "Saturday",
            "weekdays",
            "mon",
            "Mon-Sun",
            "fri-mon",
            "",
            "monday,tuesday",
            "tue",
            "Sat  -  Sun",
        ];
        for form in forms {
            assert_eq!(pattern.is_match(form), parse_days(form).is_ok(), "{form:?}");
        }
    }

    #[test]
    fn a_local_timestamp_the_pattern_describes_is_a_range_edge_the_parser_reads() {
        use crate::schedule::out_of_office::{parse_range_edge, RangeEdge};
        let pattern = regex::Regex::new(&local_timestamp()).unwrap();
        for text in [
            "2026-12-24T09:00",
            " 2026-12-24 09:00:30 ",
            "2026-02-28T23:59:59.123456789",
            "2026-04-30T00:00",
        ] {
            assert!(pattern.is_match(text), "{text}");
            assert!(
                parse_range_edge(text, chrono_tz::Tz::UTC, RangeEdge::Start).is_ok(),
                "{text}"
            );
        }
        for text in [
            "3350-62-31T33:00",
            "2026-04-31T00:00",
            "2026-02-29T00:00",
            "2026-12-24",
        ] {
            assert!(!pattern.is_match(text), "{text}");
        }
    }

    #[test]
    fn every_time_zone_name_fits_the_time_zone_schema() {
        let pattern = regex::Regex::new(ZONE_NAME).unwrap();
        let schema = &patch_schema()["properties"]["time_zone"];
        let longest = schema["maxLength"].as_u64().unwrap() as usize;
        for zone in chrono_tz::TZ_VARIANTS {
            let name = zone.name();
            assert!(pattern.is_match(name) && name.len() <= longest, "{name}");
            assert!(
                crate::schedule::zone::IanaTimeZone::parse(name).is_ok(),
                "{name}"
            );
        }
        for text in [" UTC", "America/New York", "utc\n", "Europe/Berlin,UTC"] {
            assert!(!pattern.is_match(text), "{text:?}");
        }
    }

    #[test]
    fn the_time_pattern_accepts_exactly_what_the_parser_accepts() {
        let pattern = regex::Regex::new(HHMM).unwrap();
        for text in [
            "00:00", "23:59", "24:00", "9:00", "09:60", "09:00:00", " 09:00", "12:30",
        ] {
            assert_eq!(
                pattern.is_match(text),
                crate::schedule::window::parse_hhmm(text).is_ok(),
                "{text:?}"
            );
        }
    }
}
