//! Holidays of a holiday calendar (BEHAVIOR 17): whole days and parts of days, one-off or
//! yearly, on the calendar's local wall clock.
//!
//! [`Holidays::parse`] reads a calendar's `holidays` once (each entry kept as written, to read
//! back unchanged, next to what it means) and indexes them by date and by month and day, so an
//! evaluation at an instant looks up three dates whatever the number of holidays.
//!
//! An occurrence of a holiday is the span of real time from the first instant whose local
//! reading (in the calendar's zone) reaches its start to the first instant whose local reading
//! reaches its end ([`first_instant_at_or_after`]): a whole day runs from its first local
//! instant to the next day's. Across daylight-saving changes this needs no special case and is
//! what a wall clock shows: on a spring-forward day a holiday from 02:00 to 03:00 in New York
//! never occurs (those local times are skipped) and one from 02:30 to 04:00 starts at 03:00
//! EDT; on a fall-back day a holiday from 00:00 to 03:00 lasts four hours of real time, and
//! the whole day twenty-five. Availability ([`Holidays::contains`]) and the SLA clock
//! ([`Holidays::working_end`]) read the same occurrences, so they always agree.

use super::window::parse_hhmm;
use super::zone::IanaTimeZone;
use crate::types::raw_form;
use chrono::{DateTime, Datelike, Days, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use chrono::{Duration, TimeZone};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// The most holidays of one calendar (BEHAVIOR 17; a 400 beyond).
pub const MAX_HOLIDAYS: usize = 500;

/// The longest holiday `name`, in characters (a calendar of [`MAX_HOLIDAYS`] holidays then stays
/// far below DynamoDB's 400 KB item limit).
pub const MAX_HOLIDAY_NAME_CHARS: usize = 200;

/// A holiday as written (BEHAVIOR 17): the shape of a request body, the seed file, the store
/// and the response (`start`, `end` `null` and `yearly` `false` when not given).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"name": "Christmas Day", "date": "2026-12-25", "start": null, "end": null, "yearly": true}))]
pub struct HolidayText {
    /// What the holiday is called: 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// The day, `YYYY-MM-DD`, in the calendar's time zone.
    #[schema(example = "2026-12-25")]
    pub date: String,
    /// First local time of a partial holiday, `HH:mm` (00:00 to 23:59); given with `end` or not
    /// at all (then the whole day).
    #[serde(default)]
    #[schema(example = "13:00")]
    pub start: Option<String>,
    /// First local time after a partial holiday, `HH:mm`, later than `start`.
    #[serde(default)]
    #[schema(example = "17:00")]
    pub end: Option<String>,
    /// Whether the holiday repeats on the same month and day every year, before and after the
    /// date's own year (29 February only in leap years). Default false.
    #[serde(default)]
    pub yearly: bool,
}

/// The part of its day a holiday takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DaySpan {
    /// The whole local day.
    WholeDay,
    /// Local times `start..end` (start included, end excluded, `start < end`).
    Part(NaiveTime, NaiveTime),
}

/// A parsed holiday: the entry as written and what it means. Built by [`Holiday::parse`];
/// serializes as [`HolidayText`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "HolidayText", into = "HolidayText")]
pub struct Holiday {
    text: HolidayText,
    date: NaiveDate,
    span: DaySpan,
}

/// A holiday that does not follow BEHAVIOR 17: the key at fault (`name`, `date`, `start`,
/// `end`) and a message; the caller prefixes the entry's JSON path (`holidays[3].`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolidayError {
    /// The key of the entry at fault.
    pub key: &'static str,
    /// What is wrong.
    pub message: String,
}

impl HolidayError {
    fn new(key: &'static str, message: impl Into<String>) -> Self {
        Self {
            key,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for HolidayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl Holiday {
    /// Parses one holiday (BEHAVIOR 17): `name` 1 to [`MAX_HOLIDAY_NAME_CHARS`] characters (not
    /// blank); `date` `YYYY-MM-DD`; `start` and `end` `HH:mm` from 00:00 to 23:59, both or
    /// neither, `start < end`.
    ///
    /// Errors: the first problem, naming its key: `name`, `date`, `start` or `end` (`end` when
    /// `end <= start`; the missing one when only one is given).
    pub fn parse(text: HolidayText) -> Result<Self, HolidayError> {
        let name_chars = text.name.chars().count();
        if text.name.trim().is_empty() || name_chars > MAX_HOLIDAY_NAME_CHARS {
            return Err(HolidayError::new(
                "name",
                format!("name must be 1 to {MAX_HOLIDAY_NAME_CHARS} characters"),
            ));
        }
        let date = parse_date(&text.date).ok_or_else(|| {
            HolidayError::new(
                "date",
                format!("date must be a date YYYY-MM-DD, got {:?}", text.date),
            )
        })?;
        let time = |key: &'static str, value: &str| {
            parse_hhmm(value).map_err(|_| {
                HolidayError::new(
                    key,
                    format!("{key} must be a time HH:mm from 00:00 to 23:59, got {value:?}"),
                )
            })
        };
        let span = match (text.start.as_deref(), text.end.as_deref()) {
            (None, None) => DaySpan::WholeDay,
            (Some(_), None) => {
                return Err(HolidayError::new(
                    "end",
                    "end is required with start (give both or neither)",
                ))
            }
            (None, Some(_)) => {
                return Err(HolidayError::new(
                    "start",
                    "start is required with end (give both or neither)",
                ))
            }
            (Some(start), Some(end)) => {
                let (start, end) = (time("start", start)?, time("end", end)?);
                if end <= start {
                    return Err(HolidayError::new("end", "end must be later than start"));
                }
                DaySpan::Part(start, end)
            }
        };
        Ok(Self { text, date, span })
    }

    /// The entry as written.
    pub fn text(&self) -> &HolidayText {
        &self.text
    }

    /// Its date (for a yearly holiday, the one written).
    pub fn date(&self) -> NaiveDate {
        self.date
    }

    /// The part of the day it takes.
    pub fn span(&self) -> DaySpan {
        self.span
    }

    /// Whether it repeats every year.
    pub fn is_yearly(&self) -> bool {
        self.text.yearly
    }
}

raw_form! {
    Holiday, HolidayText, |t: HolidayText| Holiday::parse(t).map_err(|e| e.to_string()),
    |h: Holiday| h.text
}

/// `YYYY-MM-DD` exactly (four-digit year, no surrounding text).
fn parse_date(text: &str) -> Option<NaiveDate> {
    let bytes = text.as_bytes();
    let shaped = bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit());
    shaped
        .then(|| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok())
        .flatten()
}

/// A calendar's holidays, parsed once and indexed for evaluation (BEHAVIOR 17). Serializes as
/// the list of [`HolidayText`] as written, in the order written.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "Vec<HolidayText>", into = "Vec<HolidayText>")]
pub struct Holidays {
    list: Vec<Holiday>,
    /// One-off holidays by date.
    by_date: BTreeMap<NaiveDate, Vec<DaySpan>>,
    /// Yearly holidays by (month, day).
    by_month_day: BTreeMap<(u32, u32), Vec<DaySpan>>,
}

/// A holiday list that does not follow BEHAVIOR 17: the JSON path of the first problem below
/// the list (`holidays`, or `holidays[3].end`) and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolidaysError {
    /// `holidays` (too many) or `holidays[i].<key>`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl Holidays {
    /// Parses a calendar's holidays (BEHAVIOR 17): at most [`MAX_HOLIDAYS`], each per
    /// [`Holiday::parse`].
    ///
    /// Errors: the first problem with its path: `holidays` when there are more than 500,
    /// `holidays[i].<key>` for an entry.
    pub fn parse(texts: Vec<HolidayText>) -> Result<Self, HolidaysError> {
        if texts.len() > MAX_HOLIDAYS {
            return Err(HolidaysError {
                path: "holidays".into(),
                message: format!("A holiday calendar holds at most {MAX_HOLIDAYS} holidays"),
            });
        }
        let list = texts
            .into_iter()
            .enumerate()
            .map(|(i, text)| {
                Holiday::parse(text).map_err(|e| HolidaysError {
                    path: format!("holidays[{i}].{}", e.key),
                    message: e.message,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::index(list))
    }

    fn index(list: Vec<Holiday>) -> Self {
        let mut by_date: BTreeMap<NaiveDate, Vec<DaySpan>> = BTreeMap::new();
        let mut by_month_day: BTreeMap<(u32, u32), Vec<DaySpan>> = BTreeMap::new();
        for holiday in &list {
            if holiday.is_yearly() {
                let key = (holiday.date.month(), holiday.date.day());
                by_month_day.entry(key).or_default().push(holiday.span);
            } else {
                by_date.entry(holiday.date).or_default().push(holiday.span);
            }
        }
        Self {
            list,
            by_date,
            by_month_day,
        }
    }

    /// The holidays, in the order written.
    pub fn list(&self) -> &[Holiday] {
        &self.list
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The spans of the holidays that fall on the local day `date`: its one-off holidays and
    /// the yearly ones of its month and day (a yearly 29 February falls only on leap years'
    /// 29 February, the only dates with that month and day).
    pub fn on(&self, date: NaiveDate) -> impl Iterator<Item = DaySpan> + '_ {
        let one_off = self.by_date.get(&date).into_iter().flatten();
        let yearly = self
            .by_month_day
            .get(&(date.month(), date.day()))
            .into_iter()
            .flatten();
        one_off.chain(yearly).copied()
    }

    /// The occurrences on the local day `date` in `zone`, as real-time spans `(start, end)`
    /// (start included, end excluded; see the module docs), empty ones left out, by start.
    pub fn occurrences_on(
        &self, date: NaiveDate, zone: IanaTimeZone,
    ) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        let tz = zone.tz();
        let mut spans: Vec<_> = self
            .on(date)
            .filter_map(|span| occurrence(tz, date, span))
            .filter(|(start, end)| start < end)
            .collect();
        spans.sort();
        spans
    }

    /// Whether the instant `at` is inside a holiday of the calendar whose zone is `zone`.
    ///
    /// The local days before and after `at`'s own are looked at too: around a change of
    /// offset at midnight an occurrence can reach past its local day.
    pub fn contains(&self, at: DateTime<Utc>, zone: IanaTimeZone) -> bool {
        if self.is_empty() {
            return false;
        }
        let local = at.with_timezone(&zone.tz()).date_naive();
        [local.pred_opt(), Some(local), local.succ_opt()]
            .into_iter()
            .flatten()
            .any(|date| {
                self.occurrences_on(date, zone)
                    .iter()
                    .any(|(start, end)| *start <= at && at < *end)
            })
    }

    /// When `duration` of time outside the holidays has passed since `start` (BEHAVIOR 17: an
    /// SLA check's minutes do not run during the router's holidays; a check started inside a
    /// holiday counts from its end). Holidays are real time: an occurrence that overlaps the
    /// interval moves the end later by the overlap.
    ///
    /// A calendar that leaves no time outside its holidays for [`MAX_SEARCH_DAYS`] local days
    /// (a yearly holiday on every day of the year) is not searched further: the rest of
    /// `duration` is counted from there.
    pub fn working_end(
        &self, start: DateTime<Utc>, duration: Duration, zone: IanaTimeZone,
    ) -> DateTime<Utc> {
        if self.is_empty() {
            return start + duration;
        }
        let tz = zone.tz();
        let mut at = start;
        let mut remaining = duration;
        let Some(mut date) = start.with_timezone(&tz).date_naive().pred_opt() else {
            return start + duration;
        };
        for _ in 0..MAX_SEARCH_DAYS {
            for (hol_start, hol_end) in self.occurrences_on(date, zone) {
                if hol_end <= at {
                    continue;
                }
                if hol_start > at {
                    let open = hol_start - at;
                    if remaining <= open {
                        return at + remaining;
                    }
                    remaining -= open;
                }
                at = hol_end;
            }
            let Some(next) = date.succ_opt() else {
                break;
            };
            // Occurrences of later days start at or after the next day's first instant.
            let next_day = first_instant_at_or_after(tz, next.and_time(NaiveTime::MIN));
            if next_day.is_none_or(|first| first >= at + remaining) {
                return at + remaining;
            }
            date = next;
        }
        at + remaining
    }
}

/// How many local days [`Holidays::working_end`] looks through at most (a little over two
/// years: an SLA runs at most 10,080 minutes).
pub const MAX_SEARCH_DAYS: usize = 800;

impl TryFrom<Vec<HolidayText>> for Holidays {
    type Error = String;
    fn try_from(texts: Vec<HolidayText>) -> Result<Self, String> {
        Self::parse(texts).map_err(|e| format!("{}: {}", e.path, e.message))
    }
}

impl From<Holidays> for Vec<HolidayText> {
    fn from(holidays: Holidays) -> Self {
        holidays.list.into_iter().map(|h| h.text).collect()
    }
}

/// The real-time span of a holiday taking `span` of the local day `date` in `tz`; `None` when
/// an edge lies outside the representable dates.
fn occurrence(tz: Tz, date: NaiveDate, span: DaySpan) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let (from, to) = match span {
        DaySpan::WholeDay => (
            date.and_time(NaiveTime::MIN),
            date.checked_add_days(Days::new(1))?
                .and_time(NaiveTime::MIN),
        ),
        DaySpan::Part(start, end) => (date.and_time(start), date.and_time(end)),
    };
    Some((
        first_instant_at_or_after(tz, from)?,
        first_instant_at_or_after(tz, to)?,
    ))
}

/// The first instant whose local reading in `tz` is `local` or later (BEHAVIOR 17's holiday
/// edges): the earlier of two occurrences of a local time repeated by a fall-back change, and
/// for a local time skipped by a spring-forward gap the instant of the change (the gap's first
/// local time after it). chrono-tz gives every offset; the change inside a gap is found by
/// bisection on the instants between the readings of `local` with the offsets after and before
/// it. `None` outside the representable dates.
pub fn first_instant_at_or_after(tz: Tz, local: NaiveDateTime) -> Option<DateTime<Utc>> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(at) | LocalResult::Ambiguous(at, _) => Some(at.with_timezone(&Utc)),
        LocalResult::None => {
            // In a gap: `local` read with the offset after the change is before it, with the
            // offset before the change after it. Between the two, local readings grow.
            let reads_at_or_after = |t: DateTime<Utc>| t.with_timezone(&tz).naive_local() >= local;
            let offsets = [-1i64, 1].map(|days| {
                let probe = local.checked_add_signed(Duration::days(days))?;
                let at = tz.from_local_datetime(&probe).earliest()?;
                Some(chrono::Offset::fix(at.offset()).local_minus_utc())
            });
            let (Some(before), Some(after)) = (offsets[0], offsets[1]) else {
                return None;
            };
            let utc = |offset: i32| {
                local
                    .checked_sub_signed(Duration::seconds(i64::from(offset)))
                    .map(|naive| Utc.from_utc_datetime(&naive))
            };
            let (mut low, mut high) = (utc(after.max(before))?, utc(after.min(before))?);
            if !reads_at_or_after(high) {
                return None;
            }
            // Invariant: `high` reads `local` or later; `low` does not (or is the start).
            while high - low > Duration::seconds(1) {
                let mid = low + (high - low) / 2;
                if reads_at_or_after(mid) {
                    high = mid;
                } else {
                    low = mid;
                }
            }
            Some(if reads_at_or_after(low) { low } else { high })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(date: &str, span: Option<(&str, &str)>, yearly: bool) -> HolidayText {
        HolidayText {
            name: "Holiday".into(),
            date: date.into(),
            start: span.map(|s| s.0.to_string()),
            end: span.map(|s| s.1.to_string()),
            yearly,
        }
    }

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    fn zone(name: &str) -> IanaTimeZone {
        IanaTimeZone::parse(name).unwrap()
    }

    fn holidays(entries: Vec<HolidayText>) -> Holidays {
        Holidays::parse(entries).unwrap()
    }

    #[test]
    fn each_invalid_holiday_names_its_json_path() {
        let mut blank = text("2026-12-25", None, false);
        blank.name = " ".into();
        let mut long = text("2026-12-25", None, false);
        long.name = "x".repeat(201);
        let cases = [
            (blank, "holidays[1].name"),
            (long, "holidays[1].name"),
            (text("2026-13-01", None, false), "holidays[1].date"),
            (text("2026-2-01", None, false), "holidays[1].date"),
            (text("2026-02-30", None, false), "holidays[1].date"),
            (text(" 2026-02-01", None, false), "holidays[1].date"),
            (
                text("2026-12-25", Some(("09:00", "09:00")), false),
                "holidays[1].end",
            ),
            (
                text("2026-12-25", Some(("10:00", "09:00")), false),
                "holidays[1].end",
            ),
            (
                text("2026-12-25", Some(("9:00", "10:00")), false),
                "holidays[1].start",
            ),
            (
                text("2026-12-25", Some(("09:00", "24:00")), false),
                "holidays[1].end",
            ),
        ];
        for (bad, path) in cases {
            let error =
                Holidays::parse(vec![text("2026-01-01", None, false), bad.clone()]).unwrap_err();
            assert_eq!(error.path, path, "{bad:?}: {}", error.message);
        }
        let mut only_start = text("2026-12-25", Some(("09:00", "10:00")), false);
        only_start.end = None;
        assert_eq!(
            Holidays::parse(vec![only_start]).unwrap_err().path,
            "holidays[0].end"
        );
        let mut only_end = text("2026-12-25", Some(("09:00", "10:00")), false);
        only_end.start = None;
        assert_eq!(
            Holidays::parse(vec![only_end]).unwrap_err().path,
            "holidays[0].start"
        );
        let too_many = vec![text("2026-01-01", None, false); MAX_HOLIDAYS + 1];
        assert_eq!(Holidays::parse(too_many).unwrap_err().path, "holidays");
        assert_eq!(
            Holidays::parse(vec![text("2026-01-01", None, false); MAX_HOLIDAYS])
                .unwrap()
                .len(),
            MAX_HOLIDAYS
        );
    }

    #[test]
    fn holidays_read_back_as_written() {
        let written = vec![
            text("2026-12-25", None, true),
            text("2026-12-24", Some(("13:00", "23:59")), false),
        ];
        let parsed = holidays(written.clone());
        let json = serde_json::to_value(&parsed).unwrap();
        assert_eq!(
            json[0],
            serde_json::json!({"name": "Holiday", "date": "2026-12-25", "start": null, "end": null, "yearly": true})
        );
        let back: Holidays = serde_json::from_value(json).unwrap();
        assert_eq!(back, parsed);
        assert_eq!(Vec::<HolidayText>::from(back), written);
    }

    #[test]
    fn a_whole_day_holiday_covers_the_local_day_in_the_calendars_zone() {
        let h = holidays(vec![text("2026-07-03", None, false)]);
        let ny = zone("America/New_York"); // EDT, UTC-4
        assert!(!h.contains(utc("2026-07-03T03:59:59Z"), ny));
        assert!(h.contains(utc("2026-07-03T04:00:00Z"), ny));
        assert!(h.contains(utc("2026-07-04T03:59:59Z"), ny));
        assert!(!h.contains(utc("2026-07-04T04:00:00Z"), ny));
    }

    #[test]
    fn a_partial_holiday_runs_from_start_included_to_end_excluded() {
        let h = holidays(vec![text("2026-12-24", Some(("13:00", "17:30")), false)]);
        let berlin = zone("Europe/Berlin"); // CET, UTC+1
        assert!(!h.contains(utc("2026-12-24T11:59:59Z"), berlin));
        assert!(h.contains(utc("2026-12-24T12:00:00Z"), berlin));
        assert!(h.contains(utc("2026-12-24T16:29:59Z"), berlin));
        assert!(!h.contains(utc("2026-12-24T16:30:00Z"), berlin));
        assert!(
            !h.contains(utc("2025-12-24T12:00:00Z"), berlin),
            "not yearly"
        );
    }

    #[test]
    fn a_yearly_holiday_repeats_before_and_after_its_year_and_29_february_only_in_leap_years() {
        let h = holidays(vec![
            text("2026-12-25", None, true),
            text("2024-02-29", None, true),
        ]);
        let utc_zone = IanaTimeZone::UTC;
        for year in [1999, 2025, 2026, 2090] {
            assert!(
                h.contains(utc(&format!("{year}-12-25T12:00:00Z")), utc_zone),
                "{year}"
            );
            assert!(
                !h.contains(utc(&format!("{year}-12-26T12:00:00Z")), utc_zone),
                "{year}"
            );
        }
        assert!(h.contains(utc("2028-02-29T12:00:00Z"), utc_zone));
        assert!(h.contains(utc("2000-02-29T12:00:00Z"), utc_zone));
        for non_leap in ["2027-02-28", "2027-03-01", "2100-03-01", "2100-02-28"] {
            assert!(
                !h.contains(utc(&format!("{non_leap}T12:00:00Z")), utc_zone),
                "{non_leap}"
            );
        }
    }

    #[test]
    fn on_new_yorks_spring_forward_day_skipped_local_times_never_occur() {
        // 2026-03-08: 02:00 EST becomes 03:00 EDT (07:00 UTC).
        let ny = zone("America/New_York");
        let skipped = holidays(vec![text("2026-03-08", Some(("02:00", "03:00")), false)]);
        assert!(skipped
            .occurrences_on("2026-03-08".parse().unwrap(), ny)
            .is_empty());
        assert!(!skipped.contains(utc("2026-03-08T06:59:59Z"), ny));
        assert!(!skipped.contains(utc("2026-03-08T07:00:00Z"), ny));
        let across = holidays(vec![text("2026-03-08", Some(("02:30", "04:00")), false)]);
        assert_eq!(
            across.occurrences_on("2026-03-08".parse().unwrap(), ny),
            vec![(utc("2026-03-08T07:00:00Z"), utc("2026-03-08T08:00:00Z"))]
        );
        let day = holidays(vec![text("2026-03-08", None, false)]);
        let (start, end) = day.occurrences_on("2026-03-08".parse().unwrap(), ny)[0];
        assert_eq!(
            (start, end),
            (utc("2026-03-08T05:00:00Z"), utc("2026-03-09T04:00:00Z"))
        );
        assert_eq!(end - start, Duration::hours(23));
    }

    #[test]
    fn on_new_yorks_fall_back_day_the_repeated_hour_is_inside_both_times() {
        // 2026-11-01: 02:00 EDT becomes 01:00 EST (06:00 UTC).
        let ny = zone("America/New_York");
        let h = holidays(vec![text("2026-11-01", Some(("00:00", "03:00")), false)]);
        assert!(h.contains(utc("2026-11-01T05:30:00Z"), ny), "01:30 EDT");
        assert!(h.contains(utc("2026-11-01T06:30:00Z"), ny), "01:30 EST");
        assert!(h.contains(utc("2026-11-01T07:59:59Z"), ny));
        assert!(!h.contains(utc("2026-11-01T08:00:00Z"), ny), "03:00 EST");
        let day = holidays(vec![text("2026-11-01", None, false)]);
        let (start, end) = day.occurrences_on("2026-11-01".parse().unwrap(), ny)[0];
        assert_eq!(end - start, Duration::hours(25));
    }

    #[test]
    fn berlins_transition_days_keep_the_local_wall_clock() {
        let berlin = zone("Europe/Berlin");
        // 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC).
        let spring = holidays(vec![text("2026-03-29", Some(("01:00", "04:00")), false)]);
        assert_eq!(
            spring.occurrences_on("2026-03-29".parse().unwrap(), berlin),
            vec![(utc("2026-03-29T00:00:00Z"), utc("2026-03-29T02:00:00Z"))]
        );
        assert!(spring.contains(utc("2026-03-29T01:30:00Z"), berlin));
        // 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00 UTC).
        let autumn = holidays(vec![text("2026-10-25", Some(("02:00", "03:00")), false)]);
        assert_eq!(
            autumn.occurrences_on("2026-10-25".parse().unwrap(), berlin),
            vec![(utc("2026-10-25T00:00:00Z"), utc("2026-10-25T02:00:00Z"))]
        );
        assert!(
            autumn.contains(utc("2026-10-25T01:30:00Z"), berlin),
            "02:30 CET"
        );
        assert!(
            !autumn.contains(utc("2026-10-25T02:00:00Z"), berlin),
            "03:00 CET"
        );
    }

    #[test]
    fn a_kiritimati_holiday_is_the_day_before_in_pago_pago() {
        // UTC+14 and UTC-11: 25 hours apart. Christmas in Kiritimati runs from 24 Dec 10:00
        // UTC to 25 Dec 10:00 UTC: 23:00 on the 23rd to 23:00 on the 24th in Pago Pago.
        let h = holidays(vec![text("2026-12-25", None, false)]);
        let kiritimati = zone("Pacific/Kiritimati");
        assert!(!h.contains(utc("2026-12-24T09:59:59Z"), kiritimati));
        assert!(h.contains(utc("2026-12-24T10:00:00Z"), kiritimati));
        assert!(h.contains(utc("2026-12-25T09:59:59Z"), kiritimati));
        assert!(!h.contains(utc("2026-12-25T10:00:00Z"), kiritimati));
        // Kiritimati skipped 31 December 1994 (UTC-10 to UTC+14): that day never occurs.
        let skipped = holidays(vec![text("1994-12-31", None, false)]);
        assert!(skipped
            .occurrences_on("1994-12-31".parse().unwrap(), kiritimati)
            .is_empty());
    }

    #[test]
    fn working_time_skips_the_holidays_it_overlaps() {
        let h = holidays(vec![
            text("2026-12-24", Some(("12:00", "14:00")), false),
            text("2026-12-25", None, false),
        ]);
        let z = IanaTimeZone::UTC;
        let minutes = Duration::minutes;
        // Before: untouched.
        assert_eq!(
            h.working_end(utc("2026-12-24T10:00:00Z"), minutes(60), z),
            utc("2026-12-24T11:00:00Z")
        );
        // Ends exactly at a holiday's start: untouched.
        assert_eq!(
            h.working_end(utc("2026-12-24T11:00:00Z"), minutes(60), z),
            utc("2026-12-24T12:00:00Z")
        );
        // Across: moved by the overlap.
        assert_eq!(
            h.working_end(utc("2026-12-24T11:30:00Z"), minutes(60), z),
            utc("2026-12-24T14:30:00Z")
        );
        // Started inside: counted from the end.
        assert_eq!(
            h.working_end(utc("2026-12-24T13:00:00Z"), minutes(10), z),
            utc("2026-12-24T14:10:00Z")
        );
        // Across the evening and the whole next day.
        assert_eq!(
            h.working_end(utc("2026-12-24T23:30:00Z"), minutes(60), z),
            utc("2026-12-26T00:30:00Z")
        );
        assert_eq!(
            Holidays::default().working_end(utc("2026-12-25T00:00:00Z"), minutes(5), z),
            utc("2026-12-25T00:05:00Z")
        );
    }

    #[test]
    fn a_calendar_without_working_time_is_searched_a_bounded_number_of_days() {
        let every_day: Vec<_> = (0..366)
            .map(|d| {
                let date = NaiveDate::from_ymd_opt(2024, 1, 1).unwrap() + Duration::days(d);
                text(&date.format("%Y-%m-%d").to_string(), None, true)
            })
            .collect();
        let h = holidays(every_day);
        let start = utc("2026-06-01T00:00:00Z");
        let end = h.working_end(start, Duration::minutes(1), IanaTimeZone::UTC);
        assert!(end > start + Duration::days(700), "{end}");
    }
}
