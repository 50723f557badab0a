//! The `days` of a working-hours entry.

use chrono::Weekday;
use std::fmt;
use std::str::FromStr;

/// A set of weekdays, the meaning of a working-hours entry's `days`
/// (spec "working_hours entry", BEHAVIOR 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DaySet(u8);

const DAY_NAMES: [(&str, Weekday); 7] = [
    ("monday", Weekday::Mon),
    ("tuesday", Weekday::Tue),
    ("wednesday", Weekday::Wed),
    ("thursday", Weekday::Thu),
    ("friday", Weekday::Fri),
    ("saturday", Weekday::Sat),
    ("sunday", Weekday::Sun),
];

impl DaySet {
    /// Monday to Friday (`Mon - Fri`, `mon-fri`).
    pub const WEEKDAYS: DaySet = DaySet(0b001_1111);
    /// Saturday and Sunday (`Sat - Sun`, `sat-sun`).
    pub const WEEKEND: DaySet = DaySet(0b110_0000);
    /// No day at all (never produced by [`parse_days`]).
    pub const EMPTY: DaySet = DaySet(0);

    /// The set holding `day` alone.
    pub fn single(day: Weekday) -> Self {
        DaySet(1 << day.num_days_from_monday())
    }

    /// Whether `day` is in the set.
    pub fn contains(self, day: Weekday) -> bool {
        self.0 & (1 << day.num_days_from_monday()) != 0
    }

    /// The days of the set, Monday first.
    pub fn iter(self) -> impl Iterator<Item = Weekday> {
        DAY_NAMES
            .iter()
            .map(|(_, day)| *day)
            .filter(move |day| self.contains(*day))
    }
}

/// Parses a working-hours `days` value (spec "working_hours entry", BEHAVIOR 4).
///
/// Accepted, case-insensitive, surrounding whitespace trimmed:
/// - one day name: `monday`, `tuesday`, `wednesday`, `thursday`, `friday`, `saturday`, `sunday`;
/// - a range form: `Mon - Fri` / `mon-fri` (Monday to Friday) or `Sat - Sun` / `sat-sun`
///   (Saturday and Sunday), with any whitespace (or none) around the `-`.
///
/// # Errors
///
/// Any other text, e.g. `Mon-Sun`, `weekdays`, `mon`, gives a message quoting it and naming the
/// accepted forms.
pub fn parse_days(text: &str) -> Result<DaySet, String> {
    let lower = text.trim().to_lowercase();
    if let Some((from, to)) = lower.split_once('-') {
        match (from.trim(), to.trim()) {
            ("mon", "fri") => return Ok(DaySet::WEEKDAYS),
            ("sat", "sun") => return Ok(DaySet::WEEKEND),
            _ => {}
        }
    } else if let Some((_, day)) = DAY_NAMES.iter().find(|(name, _)| *name == lower) {
        return Ok(DaySet::single(*day));
    }
    Err(format!(
        "Invalid days {text:?}: expected a day name (monday to sunday) or one of \
         \"Mon - Fri\", \"mon-fri\", \"Sat - Sun\", \"sat-sun\""
    ))
}

impl FromStr for DaySet {
    type Err = String;

    /// Same as [`parse_days`].
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_days(text)
    }
}

impl fmt::Display for DaySet {
    /// The canonical form: `Mon - Fri`, `Sat - Sun`, a lowercase day name, or the day names
    /// joined by `, ` for other sets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DaySet::WEEKDAYS => f.write_str("Mon - Fri"),
            DaySet::WEEKEND => f.write_str("Sat - Sun"),
            set => {
                let names: Vec<&str> = DAY_NAMES
                    .iter()
                    .filter(|(_, day)| set.contains(*day))
                    .map(|(name, _)| *name)
                    .collect();
                f.write_str(&names.join(", "))
            }
        }
    }
}
