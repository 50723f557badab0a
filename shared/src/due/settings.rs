//! The settings of due work: how long a claim holds an item ([`DueSettings`]), read from the
//! environment.

use std::time::Duration;

/// Default lease of a claim: longer than any attempt takes (a CRM request 3 s, a webhook
/// delivery 15 s, an SLA reassignment a few seconds of dispatch), so only a dead worker lets
/// one lapse.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// What the worker is configured with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DueSettings {
    /// How long a claim holds an item (`DUE_WORK_LEASE_SECONDS`, default 60 s).
    pub lease: Duration,
}

impl Default for DueSettings {
    fn default() -> Self {
        Self {
            lease: DEFAULT_LEASE,
        }
    }
}

impl DueSettings {
    /// The name of the lease's environment variable.
    pub const LEASE_VARIABLE: &'static str = "DUE_WORK_LEASE_SECONDS";

    /// The settings from the environment, the defaults when unset.
    ///
    /// Errors: as [`Self::parse_lease`].
    pub fn from_env() -> Result<Self, String> {
        let mut settings = Self::default();
        if let Some(text) = std::env::var(Self::LEASE_VARIABLE)
            .ok()
            .filter(|v| !v.trim().is_empty())
        {
            settings.lease = Self::parse_lease(&text)?;
        }
        Ok(settings)
    }

    /// Parses a lease: whole seconds from 1 to 900.
    ///
    /// Errors: a message naming the variable and the value.
    pub fn parse_lease(text: &str) -> Result<Duration, String> {
        text.trim()
            .parse::<u64>()
            .ok()
            .filter(|s| (1..=900).contains(s))
            .map(Duration::from_secs)
            .ok_or_else(|| {
                format!(
                    "{}={text} is not a number of seconds from 1 to 900",
                    Self::LEASE_VARIABLE
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_setting_reads_whole_seconds_in_range() {
        assert_eq!(DueSettings::parse_lease(" 5 "), Ok(Duration::from_secs(5)));
        assert_eq!(
            DueSettings::parse_lease("900"),
            Ok(Duration::from_secs(900))
        );
        for bad in ["0", "901", "1.5", "x", ""] {
            assert!(DueSettings::parse_lease(bad).is_err(), "{bad}");
        }
    }
}
