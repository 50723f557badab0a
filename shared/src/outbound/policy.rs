//! Who may be called: the operator setting ([`OutboundPolicy`], `ALLOW_INSECURE_OUTBOUND`).

/// Who may be called: production's strict rules, or those of a local run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutboundPolicy {
    /// Also allows `http` URLs and loopback hosts (local runs and tests only).
    pub allow_insecure_local: bool,
}

impl OutboundPolicy {
    /// The environment variable of the operator setting (`true` or `false`, default `false`).
    pub const VARIABLE: &'static str = "ALLOW_INSECURE_OUTBOUND";

    /// Production: `https` only, no loopback.
    pub const STRICT: Self = Self {
        allow_insecure_local: false,
    };

    /// A local run: `http` and loopback hosts allowed too.
    pub const LOCAL: Self = Self {
        allow_insecure_local: true,
    };

    /// The setting from the environment; `unset` when the variable is unset or blank (strict in
    /// Lambda and for provisioning, [`Self::LOCAL`] for the local server).
    ///
    /// Errors: a value other than `true` or `false`.
    pub fn from_env_or(unset: Self) -> Result<Self, String> {
        match std::env::var(Self::VARIABLE) {
            Ok(value) if !value.trim().is_empty() => Self::parse(&value),
            _ => Ok(unset),
        }
    }

    /// The setting `true` or `false` (blank: strict).
    ///
    /// Errors: any other value.
    pub fn parse(value: &str) -> Result<Self, String> {
        match value.trim() {
            "" | "false" => Ok(Self::STRICT),
            "true" => Ok(Self::LOCAL),
            other => Err(format!("{}={other} must be true or false", Self::VARIABLE)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_reads_true_or_false() {
        assert_eq!(OutboundPolicy::parse("true"), Ok(OutboundPolicy::LOCAL));
        assert_eq!(OutboundPolicy::parse("false"), Ok(OutboundPolicy::STRICT));
        assert_eq!(OutboundPolicy::parse(""), Ok(OutboundPolicy::STRICT));
        assert!(OutboundPolicy::parse("yes").is_err());
    }
}
