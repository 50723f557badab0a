use super::*;
use crate::model::member::Member;
use crate::types::email::Email;
use crate::types::notification_preferences::NotificationPreferences;
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc, Weekday};
use chrono_tz::Tz;
use std::collections::BTreeMap;
use uuid::Uuid;

pub(crate) fn utc(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .expect("test timestamp")
        .with_timezone(&Utc)
}

fn local(text: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").expect("test local time")
}

fn hm(h: u32, m: u32) -> NaiveTime {
    NaiveTime::from_hms_opt(h, m, 0).expect("test time")
}

fn hours(days: &str, start: &str, end: &str) -> WorkingHoursText {
    WorkingHoursText {
        days: days.into(),
        start_date: start.into(),
        end_date: end.into(),
    }
}

fn ooo(start: &str, end: &str) -> OutOfOfficeText {
    OutOfOfficeText {
        start_date: start.into(),
        end_date: end.into(),
        created_by: None,
    }
}

/// A member in `time_zone` with the entries that parse (an entry that does not parse can never
/// be stored, so it is left out).
pub(crate) fn member(
    time_zone: &str, working_hours: Vec<WorkingHoursText>, out_office_dates: Vec<OutOfOfficeText>,
) -> Member {
    let at = utc("2026-01-01T00:00:00Z");
    let zone = IanaTimeZone::parse(time_zone).expect("test zone");
    Member {
        id: Uuid::nil().into(),
        account_id: Uuid::nil().into(),
        email: Email::parse("ada@example.com").expect("test e-mail"),
        full_name: None,
        first_name: None,
        last_name: None,
        role_id: None,
        external_id: None,
        phone: None,
        office_status: true,
        time_zone: zone,
        working_hours: working_hours
            .into_iter()
            .filter_map(|w| WorkingHours::parse(w).ok())
            .collect(),
        out_office_dates: out_office_dates
            .into_iter()
            .filter_map(|o| OutOfOffice::parse(o, zone).ok())
            .collect(),
        calendars: BTreeMap::new(),
        holiday_calendar_id: None,
        capacity: Vec::new(),
        can_receive_notifications: false,
        notification_preferences: NotificationPreferences::default(),
        created_at: at,
        updated_at: at,
        archived_at: None,
        archived_by: None,
        version: 1,
    }
}

fn tz(name: &str) -> Tz {
    parse_time_zone(name).expect("test zone")
}

// ---- time zones ----

#[test]
fn known_iana_names_parse_as_time_zones() {
    for name in [
        "Europe/Berlin",
        "America/New_York",
        "Asia/Tokyo",
        "UTC",
        "Australia/Lord_Howe",
    ] {
        assert_eq!(parse_time_zone(name).map(|z| z.name()), Ok(name), "{name}");
    }
}

#[test]
fn unknown_or_miscased_time_zone_names_are_rejected_with_their_name() {
    for name in [
        "Mars/Olympus",
        "",
        "europe/berlin",
        " Europe/Berlin",
        "GMT+25",
    ] {
        assert_eq!(
            parse_time_zone(name),
            Err(format!("Unknown time zone: {name}")),
            "{name:?}"
        );
    }
}

// ---- days ----

#[test]
fn every_documented_days_form_parses_to_its_days() {
    let single = |d| DaySet::single(d);
    let table: &[(&str, DaySet)] = &[
        ("monday", single(Weekday::Mon)),
        ("tuesday", single(Weekday::Tue)),
        ("wednesday", single(Weekday::Wed)),
        ("thursday", single(Weekday::Thu)),
        ("friday", single(Weekday::Fri)),
        ("saturday", single(Weekday::Sat)),
        ("sunday", single(Weekday::Sun)),
        ("Monday", single(Weekday::Mon)),
        ("  SUNDAY  ", single(Weekday::Sun)),
        ("Mon - Fri", DaySet::WEEKDAYS),
        ("mon-fri", DaySet::WEEKDAYS),
        ("MON-FRI", DaySet::WEEKDAYS),
        ("mon -fri", DaySet::WEEKDAYS),
        (" Mon  -  Fri ", DaySet::WEEKDAYS),
        ("Sat - Sun", DaySet::WEEKEND),
        ("sat-sun", DaySet::WEEKEND),
        ("SAT\t-\tSUN", DaySet::WEEKEND),
    ];
    for (text, expected) in table {
        assert_eq!(parse_days(text), Ok(*expected), "{text:?}");
        assert_eq!(text.parse::<DaySet>(), Ok(*expected), "{text:?}");
    }
}

#[test]
fn range_forms_hold_exactly_their_days() {
    let weekdays: Vec<Weekday> = DaySet::WEEKDAYS.iter().collect();
    assert_eq!(
        weekdays,
        [
            Weekday::Mon,
            Weekday::Tue,
            Weekday::Wed,
            Weekday::Thu,
            Weekday::Fri
        ]
    );
    let weekend: Vec<Weekday> = DaySet::WEEKEND.iter().collect();
    assert_eq!(weekend, [Weekday::Sat, Weekday::Sun]);
    assert_eq!(DaySet::WEEKDAYS.to_string(), "Mon - Fri");
    assert_eq!(DaySet::single(Weekday::Wed).to_string(), "wednesday");
}

#[test]
fn other_days_forms_are_rejected_naming_the_accepted_forms() {
    let bad = [
        "",
        "   ",
        "mon",
        "fri",
        "Mon-Sun",
        "fri-mon",
        "sun-sat",
        "monday-friday",
        "mon--fri",
        "mon-fri-sat",
        "mon \u{2013} fri",
        "weekdays",
        "weekend",
        "mon,fri",
        "mondays",
        "-",
    ];
    for text in bad {
        let err = parse_days(text).expect_err(text);
        assert!(err.contains(&format!("{text:?}")), "{err}");
        assert!(err.contains("monday to sunday"), "{err}");
        assert!(err.contains("\"Mon - Fri\""), "{err}");
        assert!(err.contains("\"sat-sun\""), "{err}");
    }
}

// ---- times ----

#[test]
fn well_formed_times_from_midnight_to_23_59_parse() {
    let table = [
        ("00:00", hm(0, 0)),
        ("09:30", hm(9, 30)),
        ("12:05", hm(12, 5)),
        ("23:59", hm(23, 59)),
    ];
    for (text, expected) in table {
        assert_eq!(parse_hhmm(text), Ok(expected), "{text}");
    }
}

#[test]
fn times_not_strictly_hh_mm_in_range_are_rejected() {
    let bad = [
        "24:00",
        "23:60",
        "9:00",
        "09:0",
        "0900",
        "09:00:00",
        " 09:00",
        "09:00 ",
        "ab:cd",
        "",
        "+9:00",
        "09-00",
        "-1:00",
        "09:5\u{0663}",
        "99:99",
    ];
    for text in bad {
        let err = parse_hhmm(text).expect_err(text);
        assert!(err.contains("HH:mm"), "{err}");
    }
}

// ---- working-hours entries ----

#[test]
fn valid_working_hours_entries_become_windows() {
    let window = validate_working_hours(&hours("Mon - Fri", "09:00", "17:30")).unwrap();
    assert_eq!(
        window,
        Window {
            days: DaySet::WEEKDAYS,
            start: hm(9, 0),
            end: hm(17, 30)
        }
    );
    assert!(!window.is_overnight());
    let overnight = validate_working_hours(&hours("friday", "22:00", "02:00")).unwrap();
    assert!(overnight.is_overnight());
}

#[test]
fn invalid_working_hours_entries_report_the_first_bad_key() {
    let table = [
        (hours("mon", "09:00", "17:00"), "days must be"),
        (hours("mon", "9", "x"), "days must be"),
        (
            hours("monday", "9:00", "17:00"),
            "start_date must be a time HH:mm",
        ),
        (
            hours("monday", "09:00", "24:00"),
            "end_date must be a time HH:mm",
        ),
        (
            hours("monday", "09:00", "09:00"),
            "end_date must differ from start_date",
        ),
        (
            hours("sat-sun", "00:00", "00:00"),
            "end_date must differ from start_date",
        ),
    ];
    for (entry, prefix) in table {
        let err = validate_working_hours(&entry).expect_err(prefix);
        assert!(err.starts_with(prefix), "{entry:?}: {err}");
    }
}

#[test]
fn a_window_includes_its_start_and_excludes_its_end() {
    let w = validate_working_hours(&hours("monday", "09:00", "17:00")).unwrap();
    // 2026-03-02 is a Monday.
    let table = [
        ("2026-03-02 08:59", false),
        ("2026-03-02 09:00", true),
        ("2026-03-02 16:59", true),
        ("2026-03-02 17:00", false),
        ("2026-03-03 09:00", false),
        ("2026-03-01 12:00", false),
    ];
    for (at, inside) in table {
        assert_eq!(w.contains_local(local(at)), inside, "{at}");
    }
    let last_second = local("2026-03-02 16:59") + chrono::Duration::seconds(59);
    assert!(w.contains_local(last_second));
}

#[test]
fn an_overnight_window_belongs_to_the_day_it_starts() {
    // 2026-03-06 is a Friday.
    let w = validate_working_hours(&hours("friday", "22:00", "02:00")).unwrap();
    let table = [
        ("2026-03-06 01:00", false), // Friday early morning: Thursday's night, not in the set
        ("2026-03-06 21:59", false),
        ("2026-03-06 22:00", true),
        ("2026-03-06 23:59", true),
        ("2026-03-07 00:00", true), // Saturday, still Friday's window
        ("2026-03-07 01:00", true),
        ("2026-03-07 01:59", true),
        ("2026-03-07 02:00", false),
        ("2026-03-07 22:00", false), // Saturday evening is not a start day
    ];
    for (at, inside) in table {
        assert_eq!(w.contains_local(local(at)), inside, "{at}");
    }
}

#[test]
fn an_overnight_weekday_window_spills_into_saturday_but_not_into_monday_morning() {
    // 2026-03-02 Monday ... 2026-03-07 Saturday.
    let w = validate_working_hours(&hours("Mon - Fri", "22:00", "06:00")).unwrap();
    let table = [
        ("2026-03-02 05:00", false), // Monday 05:00 would be Sunday's night
        ("2026-03-02 23:00", true),
        ("2026-03-03 05:59", true),
        ("2026-03-07 05:00", true), // Friday's night
        ("2026-03-07 23:00", false),
        ("2026-03-08 03:00", false),
    ];
    for (at, inside) in table {
        assert_eq!(w.contains_local(local(at)), inside, "{at}");
    }
}

#[test]
fn a_weekend_window_covers_saturday_and_sunday_only() {
    let w = validate_working_hours(&hours("Sat - Sun", "10:00", "14:00")).unwrap();
    for (at, inside) in [
        ("2026-03-06 11:00", false),
        ("2026-03-07 11:00", true),
        ("2026-03-08 11:00", true),
        ("2026-03-09 11:00", false),
    ] {
        assert_eq!(w.contains_local(local(at)), inside, "{at}");
    }
}

// ---- out of office ----

#[test]
fn a_date_only_end_covers_that_whole_day_in_the_members_zone() {
    let entry = ooo("2026-12-24", "2026-12-24");
    let (start, end) = validate_out_of_office(&entry, tz("Asia/Tokyo")).unwrap();
    assert_eq!(start, utc("2026-12-24T00:00:00+09:00"));
    assert_eq!(end, utc("2026-12-25T00:00:00+09:00"));
    let (start, end) = validate_out_of_office(&entry, tz("UTC")).unwrap();
    assert_eq!(start, utc("2026-12-24T00:00:00Z"));
    assert_eq!(end, utc("2026-12-25T00:00:00Z"));
}

#[test]
fn the_same_date_only_range_blocks_different_instants_in_tokyo_and_in_utc() {
    let tokyo = member("Asia/Tokyo", vec![], vec![ooo("2026-12-24", "2026-12-24")]);
    let london = member("UTC", vec![], vec![ooo("2026-12-24", "2026-12-24")]);
    // 16:00Z on the 24th is 01:00 on the 25th in Tokyo.
    let at = utc("2026-12-24T16:00:00Z");
    assert!(is_available(&tokyo, at, false));
    assert!(!is_available(&london, at, false));
    // 15:30Z on the 23rd is 00:30 on the 24th in Tokyo.
    let at = utc("2026-12-23T15:30:00Z");
    assert!(!is_available(&tokyo, at, false));
    assert!(is_available(&london, at, false));
}

#[test]
fn a_timestamp_without_offset_is_read_in_the_members_zone() {
    let entry = ooo("2026-12-24T09:00:00", "2026-12-24T18:00");
    let (start, end) = validate_out_of_office(&entry, tz("Asia/Tokyo")).unwrap();
    assert_eq!(start, utc("2026-12-24T00:00:00Z"));
    assert_eq!(end, utc("2026-12-24T09:00:00Z"));
    let (start, _) = validate_out_of_office(&entry, tz("America/New_York")).unwrap();
    assert_eq!(start, utc("2026-12-24T14:00:00Z"));
}

#[test]
fn a_timestamp_with_an_offset_ignores_the_members_zone() {
    let table = [
        "2026-12-24T09:00:00+02:00",
        "2026-12-24T07:00:00Z",
        "2026-12-24T07:00:00.000Z",
        "2026-12-24 07:00:00Z",
        "2026-12-24T07:00Z",
        "2026-12-24T09:00+02:00",
    ];
    for text in table {
        for zone in ["Asia/Tokyo", "America/New_York"] {
            let at = parse_range_edge(text, tz(zone), RangeEdge::Start);
            assert_eq!(at, Ok(utc("2026-12-24T07:00:00Z")), "{text} in {zone}");
        }
    }
}

#[test]
fn an_out_of_office_range_includes_its_start_and_excludes_its_end() {
    let m = member(
        "UTC",
        vec![],
        vec![ooo("2026-12-24T09:00:00Z", "2026-12-24T17:00:00Z")],
    );
    assert!(is_available(&m, utc("2026-12-24T08:59:59Z"), false));
    assert!(!is_available(&m, utc("2026-12-24T09:00:00Z"), false));
    assert!(!is_available(&m, utc("2026-12-24T16:59:59Z"), false));
    assert!(is_available(&m, utc("2026-12-24T17:00:00Z"), false));
}

#[test]
fn a_range_whose_start_is_after_its_end_is_rejected() {
    let table = [
        ("2026-12-25", "2026-12-24"),
        ("2026-12-24T10:00:00Z", "2026-12-24T09:59:59Z"),
        ("2026-12-25T00:00:00", "2026-12-24"),
        ("2026-12-25", "2026-12-24T23:59"),
    ];
    for (start, end) in table {
        assert_eq!(
            validate_out_of_office(&ooo(start, end), tz("UTC")),
            Err("start_date must not be later than end_date".to_string()),
            "{start} .. {end}"
        );
    }
}

#[test]
fn ranges_in_order_or_touching_are_accepted() {
    let table = [
        ("2026-12-24", "2026-12-24"),
        ("2026-12-24", "2026-12-31"),
        ("2026-12-24T23:59:59", "2026-12-24"),
        ("2026-12-24T10:00:00Z", "2026-12-24T10:00:00Z"),
        ("2026-12-24", "2026-12-24T00:00"),
    ];
    for (start, end) in table {
        assert!(
            validate_out_of_office(&ooo(start, end), tz("UTC")).is_ok(),
            "{start} .. {end}"
        );
    }
}

#[test]
fn missing_or_malformed_out_of_office_dates_name_their_key() {
    let utc_zone = tz("UTC");
    let table: &[(Option<&str>, Option<&str>, &str)] = &[
        (None, Some("2026-12-24"), "start_date is required"),
        (Some("2026-12-24"), None, "end_date is required"),
        (None, None, "start_date is required"),
        (
            Some("24/12/2026"),
            Some("2026-12-24"),
            "start_date must be an ISO date",
        ),
        (
            Some("2026-12-24"),
            Some("tomorrow"),
            "end_date must be an ISO date",
        ),
        (
            Some(""),
            Some("2026-12-24"),
            "start_date must be an ISO date",
        ),
        (
            Some("2026-02-30"),
            Some("2026-12-24"),
            "start_date must be an ISO date",
        ),
        (
            Some("2026-12-24"),
            Some("2026-12-24T25:00:00"),
            "end_date must be an ISO date",
        ),
        (
            Some("2026-1-5"),
            Some("2026-12-24"),
            "start_date must be an ISO date",
        ),
    ];
    for (start, end, prefix) in table {
        let err = validate_out_of_office_parts(*start, *end, utc_zone).expect_err(prefix);
        assert!(err.starts_with(prefix), "{start:?} {end:?}: {err}");
    }
}

#[test]
fn a_local_timestamp_in_a_spring_forward_gap_lands_past_the_gap() {
    // 02:30 does not exist in New York on 2026-03-08; read with EST it is 07:30Z = 03:30 EDT.
    let at = parse_range_edge("2026-03-08T02:30", tz("America/New_York"), RangeEdge::Start);
    assert_eq!(at, Ok(utc("2026-03-08T07:30:00Z")));
    // 02:30 does not exist in Berlin on 2026-03-29; read with CET it is 01:30Z = 03:30 CEST.
    let at = parse_range_edge("2026-03-29T02:30:00", tz("Europe/Berlin"), RangeEdge::Start);
    assert_eq!(at, Ok(utc("2026-03-29T01:30:00Z")));
}

#[test]
fn a_repeated_local_timestamp_means_its_first_occurrence() {
    // 01:30 occurs twice in New York on 2026-11-01: first in EDT (05:30Z), then in EST.
    let at = parse_range_edge("2026-11-01T01:30", tz("America/New_York"), RangeEdge::Start);
    assert_eq!(at, Ok(utc("2026-11-01T05:30:00Z")));
}

#[test]
fn a_date_only_end_on_a_dst_day_covers_the_whole_local_day() {
    // 2026-03-08 in New York is 23 hours long, 2026-11-01 is 25 hours long.
    let ny = tz("America/New_York");
    let (start, end) = validate_out_of_office(&ooo("2026-03-08", "2026-03-08"), ny).unwrap();
    assert_eq!((end - start).num_hours(), 23);
    let (start, end) = validate_out_of_office(&ooo("2026-11-01", "2026-11-01"), ny).unwrap();
    assert_eq!((end - start).num_hours(), 25);
}

// ---- availability ----

#[test]
fn a_member_in_office_with_no_working_hours_and_no_absence_is_available() {
    let m = member("Europe/Berlin", vec![], vec![]);
    assert_eq!(
        availability(&m, utc("2026-07-04T03:00:00Z"), false),
        Availability::Available
    );
}

#[test]
fn every_applying_reason_is_reported_in_order() {
    let mut m = member(
        "UTC",
        vec![hours("monday", "09:00", "17:00")],
        vec![ooo("2026-12-24", "2026-12-26")],
    );
    m.office_status = false;
    let at = utc("2026-12-25T12:00:00Z"); // a Friday
    assert_eq!(
        availability(&m, at, false),
        Availability::Unavailable(vec![
            UnavailableReason::OfficeStatusOff,
            UnavailableReason::OutOfOffice,
            UnavailableReason::OutsideWorkingHours,
        ])
    );
    assert_eq!(
        availability(&m, at, true).reasons(),
        [
            UnavailableReason::OfficeStatusOff,
            UnavailableReason::OutOfOffice
        ]
    );
    m.office_status = true;
    assert_eq!(
        availability(&m, utc("2026-12-28T12:00:00Z"), false),
        Availability::Available
    );
}

#[test]
fn ignoring_working_hours_makes_an_in_office_member_available_outside_them() {
    let m = member("UTC", vec![hours("monday", "09:00", "17:00")], vec![]);
    let sunday_night = utc("2026-03-08T23:00:00Z");
    assert_eq!(
        availability(&m, sunday_night, false).reasons(),
        [UnavailableReason::OutsideWorkingHours]
    );
    assert!(is_available(&m, sunday_night, true));
}

#[test]
fn working_hours_are_read_in_the_members_zone() {
    let tokyo = member(
        "Asia/Tokyo",
        vec![hours("Mon - Fri", "09:00", "17:00")],
        vec![],
    );
    // Monday 2026-03-02 00:00Z is 09:00 in Tokyo; 08:00Z is 17:00 there.
    assert!(is_available(&tokyo, utc("2026-03-02T00:00:00Z"), false));
    assert!(is_available(&tokyo, utc("2026-03-02T07:59:00Z"), false));
    assert!(!is_available(&tokyo, utc("2026-03-02T08:00:00Z"), false));
    // Sunday 23:59Z is Monday 08:59 in Tokyo.
    assert!(!is_available(&tokyo, utc("2026-03-01T23:59:00Z"), false));
}

#[test]
fn any_of_several_windows_admits_the_member() {
    let m = member(
        "UTC",
        vec![
            hours("Mon - Fri", "09:00", "12:00"),
            hours("Mon - Fri", "13:00", "17:00"),
            hours("saturday", "10:00", "11:00"),
        ],
        vec![],
    );
    assert!(is_available(&m, utc("2026-03-02T10:00:00Z"), false));
    assert!(!is_available(&m, utc("2026-03-02T12:30:00Z"), false));
    assert!(is_available(&m, utc("2026-03-02T13:00:00Z"), false));
    assert!(is_available(&m, utc("2026-03-07T10:30:00Z"), false));
    assert!(!is_available(&m, utc("2026-03-08T10:30:00Z"), false));
}

#[test]
fn an_overnight_friday_window_admits_saturday_01_00_but_not_friday_01_00() {
    let m = member(
        "America/New_York",
        vec![hours("friday", "22:00", "02:00")],
        vec![],
    );
    // Saturday 2026-03-07 01:00 EST = 06:00Z; Friday 2026-03-06 01:00 EST = 06:00Z.
    assert!(is_available(&m, utc("2026-03-07T06:00:00Z"), false));
    assert!(!is_available(&m, utc("2026-03-06T06:00:00Z"), false));
}

#[test]
fn entries_that_do_not_parse_never_reach_a_member() {
    assert!(WorkingHours::parse(hours("someday", "09:00", "17:00")).is_err());
    assert!(WorkingHours::parse(hours("monday", "25:00", "26:00")).is_err());
    assert!(OutOfOffice::parse(ooo("garbage", "2026-03-02"), IanaTimeZone::UTC).is_err());
    assert!(OutOfOffice::parse(ooo("2026-03-03", "2026-03-01"), IanaTimeZone::UTC).is_err());
    assert!(IanaTimeZone::parse("Not/AZone").is_err());
    let stored = serde_json::json!({"start_date": "garbage", "end_date": "2026-03-02"});
    assert!(serde_json::from_value::<OutOfOffice>(stored).is_err());
}

// ---- daylight saving time ----

/// (zone, days, start, end, [(instant, available)])
type DstCase = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, bool)],
);

const DST_CASES: &[DstCase] = &[
    // New York springs forward on Sunday 2026-03-08 at 02:00 EST (07:00Z) to 03:00 EDT.
    (
        "America/New_York",
        "sunday",
        "09:00",
        "17:00",
        &[
            ("2026-03-08T12:59:00Z", false), // 08:59 EDT
            ("2026-03-08T13:00:00Z", true),  // 09:00 EDT (would be 08:00 in EST)
            ("2026-03-08T20:59:00Z", true),  // 16:59 EDT
            ("2026-03-08T21:00:00Z", false), // 17:00 EDT
        ],
    ),
    (
        "America/New_York",
        "sunday",
        "01:30",
        "02:30",
        &[
            ("2026-03-08T06:29:00Z", false), // 01:29 EST
            ("2026-03-08T06:30:00Z", true),  // 01:30 EST
            ("2026-03-08T06:59:59Z", true),  // 01:59:59 EST
            ("2026-03-08T07:00:00Z", false), // 03:00 EDT: 02:00-02:59 never happens
            ("2026-03-08T07:30:00Z", false), // 03:30 EDT
        ],
    ),
    // New York falls back on Sunday 2026-11-01 at 02:00 EDT (06:00Z) to 01:00 EST.
    (
        "America/New_York",
        "sunday",
        "09:00",
        "17:00",
        &[
            ("2026-11-01T13:00:00Z", false), // 08:00 EST (would be 09:00 in EDT)
            ("2026-11-01T13:59:00Z", false), // 08:59 EST
            ("2026-11-01T14:00:00Z", true),  // 09:00 EST
            ("2026-11-01T21:59:00Z", true),  // 16:59 EST
            ("2026-11-01T22:00:00Z", false), // 17:00 EST
        ],
    ),
    (
        "America/New_York",
        "sunday",
        "01:30",
        "02:30",
        &[
            ("2026-11-01T05:29:00Z", false), // 01:29 EDT
            ("2026-11-01T05:30:00Z", true),  // 01:30 EDT, first pass
            ("2026-11-01T06:00:00Z", false), // 01:00 EST, the hour repeats
            ("2026-11-01T06:29:00Z", false), // 01:29 EST
            ("2026-11-01T06:30:00Z", true),  // 01:30 EST, second pass
            ("2026-11-01T07:29:00Z", true),  // 02:29 EST
            ("2026-11-01T07:30:00Z", false), // 02:30 EST
        ],
    ),
    // Berlin springs forward on Sunday 2026-03-29 at 02:00 CET (01:00Z) to 03:00 CEST.
    (
        "Europe/Berlin",
        "sunday",
        "09:00",
        "17:00",
        &[
            ("2026-03-29T06:59:00Z", false), // 08:59 CEST
            ("2026-03-29T07:00:00Z", true),  // 09:00 CEST
            ("2026-03-29T14:59:00Z", true),  // 16:59 CEST
            ("2026-03-29T15:00:00Z", false), // 17:00 CEST
            ("2026-03-28T08:00:00Z", false), // Saturday 09:00 CET
        ],
    ),
    (
        "Europe/Berlin",
        "sunday",
        "01:30",
        "02:30",
        &[
            ("2026-03-29T00:30:00Z", true),  // 01:30 CET
            ("2026-03-29T00:59:00Z", true),  // 01:59 CET
            ("2026-03-29T01:00:00Z", false), // 03:00 CEST
        ],
    ),
    // Berlin falls back on Sunday 2026-10-25 at 03:00 CEST (01:00Z) to 02:00 CET.
    (
        "Europe/Berlin",
        "sunday",
        "09:00",
        "17:00",
        &[
            ("2026-10-25T07:00:00Z", false), // 08:00 CET (would be 09:00 in CEST)
            ("2026-10-25T07:59:00Z", false), // 08:59 CET
            ("2026-10-25T08:00:00Z", true),  // 09:00 CET
            ("2026-10-25T15:59:00Z", true),  // 16:59 CET
            ("2026-10-25T16:00:00Z", false), // 17:00 CET
        ],
    ),
    (
        "Europe/Berlin",
        "sunday",
        "02:00",
        "02:30",
        &[
            ("2026-10-25T00:00:00Z", true),  // 02:00 CEST, first pass
            ("2026-10-25T00:30:00Z", false), // 02:30 CEST
            ("2026-10-25T01:00:00Z", true),  // 02:00 CET, second pass
            ("2026-10-25T01:29:00Z", true),  // 02:29 CET
            ("2026-10-25T01:30:00Z", false), // 02:30 CET
        ],
    ),
    // An overnight Saturday window across the New York spring-forward night.
    (
        "America/New_York",
        "saturday",
        "22:00",
        "06:00",
        &[
            ("2026-03-08T02:59:00Z", false), // Saturday 21:59 EST
            ("2026-03-08T03:00:00Z", true),  // Saturday 22:00 EST
            ("2026-03-08T06:59:00Z", true),  // Sunday 01:59 EST
            ("2026-03-08T07:00:00Z", true),  // Sunday 03:00 EDT
            ("2026-03-08T09:59:00Z", true),  // Sunday 05:59 EDT
            ("2026-03-08T10:00:00Z", false), // Sunday 06:00 EDT
        ],
    ),
];

#[test]
fn windows_follow_local_wall_clock_time_across_dst_transitions() {
    for (zone, days, start, end, checks) in DST_CASES {
        let m = member(zone, vec![hours(days, start, end)], vec![]);
        for (at, expected) in *checks {
            assert_eq!(
                is_available(&m, utc(at), false),
                *expected,
                "{zone} {days} {start}-{end} at {at}"
            );
        }
    }
}

#[test]
fn the_dst_dates_used_in_these_tests_are_transition_days() {
    let offset_hours = |zone: &str, at: &str| {
        use chrono::Offset;
        let t = utc(at).with_timezone(&tz(zone));
        t.offset().fix().local_minus_utc() / 3600
    };
    assert_eq!(offset_hours("America/New_York", "2026-03-08T06:59:00Z"), -5);
    assert_eq!(offset_hours("America/New_York", "2026-03-08T07:00:00Z"), -4);
    assert_eq!(offset_hours("America/New_York", "2026-11-01T05:59:00Z"), -4);
    assert_eq!(offset_hours("America/New_York", "2026-11-01T06:00:00Z"), -5);
    assert_eq!(offset_hours("Europe/Berlin", "2026-03-29T00:59:00Z"), 1);
    assert_eq!(offset_hours("Europe/Berlin", "2026-03-29T01:00:00Z"), 2);
    assert_eq!(offset_hours("Europe/Berlin", "2026-10-25T00:59:00Z"), 2);
    assert_eq!(offset_hours("Europe/Berlin", "2026-10-25T01:00:00Z"), 1);
    let sunday = |d| NaiveDate::parse_from_str(d, "%Y-%m-%d").unwrap();
    for d in ["2026-03-08", "2026-11-01", "2026-03-29", "2026-10-25"] {
        use chrono::Datelike;
        assert_eq!(sunday(d).weekday(), Weekday::Sun, "{d}");
    }
}
