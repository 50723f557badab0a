//! Configuration of the token function, read once at cold start from the environment.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `JWT_SIGNING_KEY_PEM` | the P-256 private key, PKCS#8 or SEC1 PEM text (literal `\n` sequences are accepted for newlines) | required |
//! | `JWT_SIGNING_KEY_SECRET_ARN` | the key in AWS Secrets Manager | not supported yet |
//! | `JWT_ISSUER` | `iss` of issued tokens | `account-routing-api` |
//! | `JWT_AUDIENCE` | `aud` of issued tokens | `account-routing-api` |
//! | `TOKEN_TTL_SECONDS` | token lifetime, 1..=86400 seconds | `3600` |

use shared::auth::{KeyError, SigningKey, DEFAULT_AUDIENCE, DEFAULT_ISSUER};

/// Default token lifetime in seconds (BEHAVIOR 1).
pub const DEFAULT_TTL_SECONDS: u64 = 3600;

/// Longest accepted token lifetime in seconds: one day. Tokens cannot be revoked, so their
/// lifetime bounds how long a leaked token stays usable.
pub const MAX_TTL_SECONDS: u64 = 86_400;

/// What the token function needs to run, besides the store.
#[derive(Debug, Clone)]
pub struct TokenConfig {
    /// The private signing key.
    pub signing_key: SigningKey,
    /// `iss` of issued tokens.
    pub issuer: String,
    /// `aud` of issued tokens.
    pub audience: String,
    /// Token lifetime in seconds.
    pub ttl_seconds: u64,
}

/// A configuration the function cannot start with; the message names the variable to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Neither way of providing the signing key is set.
    #[error("JWT_SIGNING_KEY_PEM is not set: give the P-256 private key (PKCS#8 or SEC1 PEM)")]
    MissingSigningKey,
    /// Only the Secrets Manager ARN is set, which this build cannot read yet.
    #[error("JWT_SIGNING_KEY_SECRET_ARN is not supported yet; set JWT_SIGNING_KEY_PEM instead")]
    SecretArnNotSupported,
    /// `JWT_SIGNING_KEY_PEM` is not a usable key.
    #[error("JWT_SIGNING_KEY_PEM: {0}")]
    InvalidSigningKey(#[from] KeyError),
    /// A variable is set but empty.
    #[error("{0} is set but empty")]
    Empty(&'static str),
    /// `TOKEN_TTL_SECONDS` is not an integer in 1..=86400.
    #[error("TOKEN_TTL_SECONDS must be an integer from 1 to {MAX_TTL_SECONDS}, got {0:?}")]
    InvalidTtl(String),
}

impl TokenConfig {
    /// Reads the configuration from the process environment.
    ///
    /// Errors: as [`TokenConfig::from_lookup`].
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (variable name -> value), so tests need not
    /// touch the process environment.
    ///
    /// Errors: [`ConfigError`] naming the variable at fault.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let signing_key = match lookup("JWT_SIGNING_KEY_PEM") {
            Some(pem) if pem.trim().is_empty() => {
                return Err(ConfigError::Empty("JWT_SIGNING_KEY_PEM"))
            }
            // Consoles and .env files often cannot hold newlines; accept `\n` escapes.
            Some(pem) if !pem.contains('\n') => SigningKey::from_pem(&pem.replace("\\n", "\n"))?,
            Some(pem) => SigningKey::from_pem(&pem)?,
            // Reading the key from Secrets Manager at cold start (BEHAVIOR 1) is a later issue;
            // until then the ARN alone is refused rather than silently ignored.
            None if lookup("JWT_SIGNING_KEY_SECRET_ARN").is_some() => {
                return Err(ConfigError::SecretArnNotSupported)
            }
            None => return Err(ConfigError::MissingSigningKey),
        };
        let text = |name: &'static str, default: &str| match lookup(name) {
            Some(value) if value.trim().is_empty() => Err(ConfigError::Empty(name)),
            Some(value) => Ok(value),
            None => Ok(default.to_owned()),
        };
        let issuer = text("JWT_ISSUER", DEFAULT_ISSUER)?;
        let audience = text("JWT_AUDIENCE", DEFAULT_AUDIENCE)?;
        let ttl_seconds = match lookup("TOKEN_TTL_SECONDS") {
            None => DEFAULT_TTL_SECONDS,
            Some(value) => value
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|ttl| (1..=MAX_TTL_SECONDS).contains(ttl))
                .ok_or(ConfigError::InvalidTtl(value))?,
        };
        Ok(Self {
            signing_key,
            issuer,
            audience,
            ttl_seconds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::auth::DEV_SIGNING_KEY_PEM;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<TokenConfig, ConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        TokenConfig::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn only_the_signing_key_is_required_and_the_rest_defaults() {
        let config = config(&[("JWT_SIGNING_KEY_PEM", DEV_SIGNING_KEY_PEM)]).expect("valid");
        assert_eq!(config.issuer, "account-routing-api");
        assert_eq!(config.audience, "account-routing-api");
        assert_eq!(config.ttl_seconds, 3600);
    }

    #[test]
    fn every_setting_can_be_overridden() {
        let escaped = DEV_SIGNING_KEY_PEM.trim_end().replace('\n', "\\n");
        let config = config(&[
            ("JWT_SIGNING_KEY_PEM", &escaped),
            ("JWT_ISSUER", "https://auth.example.com"),
            ("JWT_AUDIENCE", "routing"),
            ("TOKEN_TTL_SECONDS", "900"),
        ])
        .expect("valid");
        let dev = SigningKey::from_pem(DEV_SIGNING_KEY_PEM).expect("parses");
        assert_eq!(config.signing_key.kid(), dev.kid());
        assert_eq!(config.issuer, "https://auth.example.com");
        assert_eq!(config.audience, "routing");
        assert_eq!(config.ttl_seconds, 900);
    }

    /// (case, variables, start of the error message)
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);

    #[test]
    fn a_bad_configuration_fails_naming_the_variable() {
        let key = ("JWT_SIGNING_KEY_PEM", DEV_SIGNING_KEY_PEM);
        let cases: Vec<Case> = vec![
            ("nothing set", vec![], "JWT_SIGNING_KEY_PEM is not set"),
            (
                "only the ARN",
                vec![("JWT_SIGNING_KEY_SECRET_ARN", "arn:aws:secretsmanager:x")],
                "JWT_SIGNING_KEY_SECRET_ARN is not supported yet",
            ),
            (
                "empty key",
                vec![("JWT_SIGNING_KEY_PEM", " ")],
                "JWT_SIGNING_KEY_PEM is set but empty",
            ),
            (
                "not a key",
                vec![("JWT_SIGNING_KEY_PEM", "hello")],
                "JWT_SIGNING_KEY_PEM: expected a PEM block",
            ),
            (
                "empty issuer",
                vec![key, ("JWT_ISSUER", "")],
                "JWT_ISSUER is set but empty",
            ),
            (
                "empty audience",
                vec![key, ("JWT_AUDIENCE", "")],
                "JWT_AUDIENCE is set but empty",
            ),
            (
                "ttl zero",
                vec![key, ("TOKEN_TTL_SECONDS", "0")],
                "TOKEN_TTL_SECONDS must be",
            ),
            (
                "ttl too long",
                vec![key, ("TOKEN_TTL_SECONDS", "86401")],
                "TOKEN_TTL_SECONDS must be",
            ),
            (
                "ttl not a number",
                vec![key, ("TOKEN_TTL_SECONDS", "1h")],
                "TOKEN_TTL_SECONDS must be",
            ),
        ];
        for (case, vars, message) in cases {
            let error = config(&vars).expect_err(case).to_string();
            assert!(error.starts_with(message), "{case}: {error}");
        }
    }
}
