//! Retry delays as operators set them: comma-separated seconds (`30,300,1800`; decimals
//! allowed), each from 0 to 86,400. One parse for every schedule of retries (CRM sync,
//! BEHAVIOR 7; webhook deliveries, BEHAVIOR 13).

use std::marker::PhantomData;
use std::time::Duration;

/// Parses `text` read from the environment variable `variable`: at least `at_least` delays.
///
/// Errors: a message naming the variable and the value that is not such a number, or the count
/// when there are too few.
pub fn parse(variable: &str, text: &str, at_least: usize) -> Result<Vec<Duration>, String> {
    let delays = text
        .split(',')
        .map(|part| {
            let part = part.trim();
            part.parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && (0.0..=86_400.0).contains(s))
                .map(Duration::from_secs_f64)
                .ok_or_else(|| {
                    format!("{variable}: {part:?} is not a number of seconds from 0 to 86400")
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if delays.len() < at_least {
        return Err(format!(
            "{variable}: at least {at_least} delays are needed, got {}",
            delays.len()
        ));
    }
    Ok(delays)
}

/// The environment variable `variable` parsed with `parse`, or `None` when unset or blank.
///
/// Errors: `parse`'s.
pub fn from_env<T>(
    variable: &str, parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<Option<T>, String> {
    match std::env::var(variable) {
        Ok(text) if !text.trim().is_empty() => parse(&text).map(Some),
        _ => Ok(None),
    }
}

/// The delay before the retry that follows attempt number `attempts` (1-based), or `None` when
/// that attempt was the last.
pub fn after_attempt(delays: &[Duration], attempts: u32) -> Option<Duration> {
    let index = usize::try_from(attempts).ok()?.checked_sub(1)?;
    delays.get(index).copied()
}

/// What tells one schedule of retries from another (see [`Schedule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    variable: &'static str,
    at_least: usize,
    default_seconds: &'static [u64],
}

impl Setting {
    /// The schedule set by the environment variable `variable`, which must list at least
    /// `at_least` delays, and `default_seconds` when it is unset.
    pub const fn new(
        variable: &'static str, at_least: usize, default_seconds: &'static [u64],
    ) -> Self {
        Self {
            variable,
            at_least,
            default_seconds,
        }
    }
}

/// A kind of retried work: its [`Setting`].
pub trait Schedule {
    /// The environment variable, the fewest delays a setting may list, the default delays.
    const SETTING: Setting;
}

/// The delays between the attempts of one kind of retried work (`S`): one retry per delay,
/// after the first attempt. [`crate::crm::RetryDelays`] (BEHAVIOR 7) and
/// [`crate::webhooks::RetrySchedule`] (BEHAVIOR 13) are the two.
pub struct Delays<S> {
    delays: Vec<Duration>,
    schedule: PhantomData<S>,
}

impl<S> std::fmt::Debug for Delays<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Delays").field(&self.delays).finish()
    }
}

impl<S> Clone for Delays<S> {
    fn clone(&self) -> Self {
        Self {
            delays: self.delays.clone(),
            schedule: PhantomData,
        }
    }
}

impl<S> PartialEq for Delays<S> {
    fn eq(&self, other: &Self) -> bool {
        self.delays == other.delays
    }
}

impl<S: Schedule> Default for Delays<S> {
    fn default() -> Self {
        Self::new(
            S::SETTING
                .default_seconds
                .iter()
                .copied()
                .map(Duration::from_secs),
        )
    }
}

impl<S: Schedule> Delays<S> {
    /// The name of the environment variable.
    pub const VARIABLE: &'static str = S::SETTING.variable;

    fn new(delays: impl IntoIterator<Item = Duration>) -> Self {
        Self {
            delays: delays.into_iter().collect(),
            schedule: PhantomData,
        }
    }

    /// Parses comma-separated seconds (`30,300,1800`; decimals allowed, e.g. `0.5`), at least
    /// the schedule's minimum, each from 0 to 86,400.
    ///
    /// Errors: a message naming the variable and the value that is not such a number, or the
    /// count when there are too few.
    pub fn parse(text: &str) -> Result<Self, String> {
        parse(S::SETTING.variable, text, S::SETTING.at_least).map(Self::new)
    }

    /// The delays from the environment, the default when unset or blank.
    ///
    /// Errors: as [`Self::parse`].
    pub fn from_env() -> Result<Self, String> {
        Ok(from_env(S::SETTING.variable, Self::parse)?.unwrap_or_default())
    }

    /// The delays, in order.
    pub fn as_slice(&self) -> &[Duration] {
        &self.delays
    }

    /// The delay before the retry that follows attempt number `attempts` (1-based), or `None`
    /// when that attempt was the last.
    pub fn after_attempt(&self, attempts: u32) -> Option<Duration> {
        after_attempt(&self.delays, attempts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_parsed_counted_and_bounded() {
        assert_eq!(
            parse("X", " 0.5, 30 ,1800", 3).unwrap(),
            vec![
                Duration::from_millis(500),
                Duration::from_secs(30),
                Duration::from_secs(1800)
            ]
        );
        assert!(parse("X", "1,2", 3).unwrap_err().contains("at least 3"));
        assert!(parse("X", "1,-2,3", 1).unwrap_err().contains("\"-2\""));
        assert!(parse("X", "86401", 1).is_err());
        assert_eq!(
            after_attempt(&[Duration::from_secs(1)], 1),
            Some(Duration::from_secs(1))
        );
        assert_eq!(after_attempt(&[Duration::from_secs(1)], 2), None);
        assert_eq!(after_attempt(&[Duration::from_secs(1)], 0), None);
    }
}
