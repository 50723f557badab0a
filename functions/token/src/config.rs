//! Configuration of the token function, read once at cold start from the environment.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `JWT_SIGNING_KEY_SECRET_ARN` | ARN of the AWS Secrets Manager secret whose `SecretString` is the P-256 private key (PEM); read once at cold start (production) | one of the two is required |
//! | `JWT_SIGNING_KEY_PEM` | the P-256 private key itself, PKCS#8 or SEC1 PEM text (literal `\n` sequences are accepted for newlines); for local runs | one of the two is required |
//! | `JWT_ISSUER` | `iss` of issued tokens | `account-routing-api` |
//! | `JWT_AUDIENCE` | `aud` of issued tokens | `account-routing-api` |
//! | `TOKEN_TTL_SECONDS` | token lifetime, 1..=86400 seconds | `3600` |
//! | `ALLOW_DEVELOPMENT_SIGNING_KEY` | `true` lets the function sign with the committed development key (local runs only) | refused |
//!
//! Exactly one of the two key variables must be set (a blank `JWT_SIGNING_KEY_SECRET_ARN` counts
//! as unset). In AWS the key lives in Secrets Manager,
//! never in the function's environment (a Lambda environment variable cannot resolve a secure
//! parameter, and a resolved secret would sit in plain text in the function configuration);
//! only the token function is allowed to read it (BEHAVIOR 1). [`TokenConfig::from_lookup`]
//! decides where the key comes from without any I/O; [`crate::secret`] does the one AWS call.

use shared::auth::{
    development_key_allowed, KeyError, SigningKey, ALLOW_DEVELOPMENT_SIGNING_KEY, DEFAULT_AUDIENCE,
    DEFAULT_ISSUER,
};

/// Default token lifetime in seconds (BEHAVIOR 1).
pub const DEFAULT_TTL_SECONDS: u64 = 3600;

/// Longest accepted token lifetime in seconds: one day. Tokens cannot be revoked, so their
/// lifetime bounds how long a leaked token stays usable.
pub const MAX_TTL_SECONDS: u64 = 86_400;

/// The variable naming the Secrets Manager secret that holds the signing key.
pub const SECRET_ARN_VAR: &str = "JWT_SIGNING_KEY_SECRET_ARN";

/// The variable holding the signing key itself (local runs).
pub const PEM_VAR: &str = "JWT_SIGNING_KEY_PEM";

/// Where the private signing key comes from.
#[derive(Debug, Clone)]
pub enum SigningKeySource {
    /// `JWT_SIGNING_KEY_PEM`, already parsed (local runs).
    Pem(SigningKey),
    /// `JWT_SIGNING_KEY_SECRET_ARN`: the secret to read at cold start (AWS).
    SecretArn(String),
}

/// What the token function needs to run, besides the store.
#[derive(Debug, Clone)]
pub struct TokenConfig {
    /// Where the private signing key comes from.
    pub key_source: SigningKeySource,
    /// `iss` of issued tokens.
    pub issuer: String,
    /// `aud` of issued tokens.
    pub audience: String,
    /// Token lifetime in seconds.
    pub ttl_seconds: u64,
    /// `ALLOW_DEVELOPMENT_SIGNING_KEY=true`: the committed development key may sign.
    pub allow_development_key: bool,
}

/// A configuration the function cannot start with; the message names the variable to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Neither way of providing the signing key is set.
    #[error(
        "no signing key: set JWT_SIGNING_KEY_SECRET_ARN (AWS: the Secrets Manager secret holding \
         the P-256 private key PEM) or JWT_SIGNING_KEY_PEM (local runs: the PEM itself)"
    )]
    MissingSigningKey,
    /// Both ways are set, so which key signs would be a guess.
    #[error(
        "both JWT_SIGNING_KEY_SECRET_ARN and JWT_SIGNING_KEY_PEM are set: set only one \
         (the secret in AWS, the PEM for local runs)"
    )]
    BothSigningKeys,
    /// `JWT_SIGNING_KEY_SECRET_ARN` is not a Secrets Manager ARN.
    #[error("JWT_SIGNING_KEY_SECRET_ARN must be a Secrets Manager secret ARN (arn:<partition>:secretsmanager:<region>:<account>:secret:<name>), got {0:?}")]
    InvalidSecretArn(String),
    /// `JWT_SIGNING_KEY_PEM` is not a usable key.
    #[error("JWT_SIGNING_KEY_PEM: {0}")]
    InvalidSigningKey(#[from] KeyError),
    /// The secret could not be read (permissions, network, no such secret).
    #[error("cannot read the signing key secret {arn} (JWT_SIGNING_KEY_SECRET_ARN): {cause}")]
    SecretUnreadable {
        /// The secret's ARN.
        arn: String,
        /// The SDK's error with its context.
        cause: String,
    },
    /// The secret has no text value (a binary secret, or no value put yet).
    #[error("the signing key secret {0} (JWT_SIGNING_KEY_SECRET_ARN) has no SecretString: put the PEM text in it (docs/deploy.md)")]
    SecretNotText(String),
    /// The secret's text is not a usable key.
    #[error(
        "the signing key secret {arn} (JWT_SIGNING_KEY_SECRET_ARN) does not hold a P-256 private key PEM: {source}"
    )]
    SecretNotAKey {
        /// The secret's ARN.
        arn: String,
        /// Why the text is not a key.
        source: KeyError,
    },
    /// A variable is set but empty.
    #[error("{0} is set but empty")]
    Empty(&'static str),
    /// The signing key is the committed development key, which anyone can sign tokens with, and
    /// `ALLOW_DEVELOPMENT_SIGNING_KEY` is not `true` (`docs/decisions.md`, "Token endpoint").
    #[error(
        "the signing key from {0} is the committed development key \
         (shared/dev-keys/dev-signing-key.pem), with which anyone can sign tokens: use your own \
         key (docs/deploy.md), or set ALLOW_DEVELOPMENT_SIGNING_KEY=true for a local run"
    )]
    DevelopmentSigningKey(&'static str),
    /// `TOKEN_TTL_SECONDS` is not an integer in 1..=86400.
    #[error("TOKEN_TTL_SECONDS must be an integer from 1 to {MAX_TTL_SECONDS}, got {0:?}")]
    InvalidTtl(String),
}

/// Parses PEM text as given in a variable or a secret: consoles, `.env` files and JSON-escaped
/// secret values often cannot hold newlines, so literal `\n` sequences are accepted for them.
pub fn parse_pem(text: &str) -> Result<SigningKey, KeyError> {
    let text = text.trim();
    if text.contains('\n') {
        SigningKey::from_pem(text)
    } else {
        SigningKey::from_pem(&text.replace("\\n", "\n"))
    }
}

/// The signing key in the text of the secret `arn`.
///
/// Errors: [`ConfigError::SecretNotAKey`] naming the secret.
pub fn key_from_secret_text(arn: &str, text: &str) -> Result<SigningKey, ConfigError> {
    parse_pem(text).map_err(|source| ConfigError::SecretNotAKey {
        arn: arn.to_owned(),
        source,
    })
}

fn is_secret_arn(value: &str) -> bool {
    // arn:<partition>:secretsmanager:<region>:<account>:secret:<name>
    let parts: Vec<&str> = value.splitn(7, ':').collect();
    parts.len() == 7
        && parts[0] == "arn"
        && !parts[1].is_empty()
        && parts[2] == "secretsmanager"
        && !parts[3].is_empty()
        && !parts[4].is_empty()
        && parts[5] == "secret"
        && !parts[6].is_empty()
}

impl TokenConfig {
    /// Reads the configuration from the process environment.
    ///
    /// Errors: as [`TokenConfig::from_lookup`].
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (variable name -> value), so tests need not
    /// touch the process environment. Does no I/O: a secret ARN is only checked for shape.
    ///
    /// Errors: [`ConfigError`] naming the variable at fault.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        // A blank ARN counts as unset: a template's variable cannot be removed, only blanked
        // (`sam local invoke --env-vars` switching the token function to a PEM).
        let arn = lookup(SECRET_ARN_VAR).filter(|arn| !arn.trim().is_empty());
        let key_source = match (arn, lookup(PEM_VAR)) {
            (Some(_), Some(_)) => return Err(ConfigError::BothSigningKeys),
            (None, None) => return Err(ConfigError::MissingSigningKey),
            (Some(arn), None) if !is_secret_arn(arn.trim()) => {
                return Err(ConfigError::InvalidSecretArn(arn))
            }
            (Some(arn), None) => SigningKeySource::SecretArn(arn.trim().to_owned()),
            (None, Some(pem)) if pem.trim().is_empty() => return Err(ConfigError::Empty(PEM_VAR)),
            (None, Some(pem)) => SigningKeySource::Pem(parse_pem(&pem)?),
        };
        let allow_development_key =
            development_key_allowed(lookup(ALLOW_DEVELOPMENT_SIGNING_KEY).as_deref());
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
        let config = Self {
            key_source,
            issuer,
            audience,
            ttl_seconds,
            allow_development_key,
        };
        if let SigningKeySource::Pem(key) = &config.key_source {
            config.accept_key(key, PEM_VAR)?;
        }
        Ok(config)
    }

    /// Checks a signing key before it signs anything: the committed development key only with
    /// `ALLOW_DEVELOPMENT_SIGNING_KEY=true`. `from` names where the key came from. The PEM source
    /// is checked by [`TokenConfig::from_lookup`]; a key read from the secret is checked with this.
    ///
    /// Errors: [`ConfigError::DevelopmentSigningKey`].
    pub fn accept_key(&self, key: &SigningKey, from: &'static str) -> Result<(), ConfigError> {
        if key.is_development_key() && !self.allow_development_key {
            return Err(ConfigError::DevelopmentSigningKey(from));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::auth::DEV_SIGNING_KEY_PEM;
    use std::collections::HashMap;

    const ARN: &str =
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:account-routing/prod/jwt-AbCdEf";

    fn config(vars: &[(&str, &str)]) -> Result<TokenConfig, ConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        TokenConfig::from_lookup(|name| vars.get(name).cloned())
    }

    fn dev_kid() -> String {
        SigningKey::from_pem(DEV_SIGNING_KEY_PEM)
            .expect("parses")
            .kid()
            .to_owned()
    }

    /// The development key with the opt-in that local runs set.
    const DEV_OPT_IN: (&str, &str) = ("ALLOW_DEVELOPMENT_SIGNING_KEY", "true");

    #[test]
    fn only_the_signing_key_is_required_and_the_rest_defaults() {
        let config =
            config(&[("JWT_SIGNING_KEY_PEM", DEV_SIGNING_KEY_PEM), DEV_OPT_IN]).expect("valid");
        assert!(matches!(config.key_source, SigningKeySource::Pem(_)));
        assert_eq!(config.issuer, "account-routing-api");
        assert_eq!(config.audience, "account-routing-api");
        assert_eq!(config.ttl_seconds, 3600);
    }

    #[test]
    fn every_setting_can_be_overridden() {
        let escaped = DEV_SIGNING_KEY_PEM.trim_end().replace('\n', "\\n");
        let config = config(&[
            ("JWT_SIGNING_KEY_PEM", &escaped),
            DEV_OPT_IN,
            ("JWT_ISSUER", "https://auth.example.com"),
            ("JWT_AUDIENCE", "routing"),
            ("TOKEN_TTL_SECONDS", "900"),
        ])
        .expect("valid");
        let SigningKeySource::Pem(key) = config.key_source else {
            panic!("expected the PEM source");
        };
        assert_eq!(key.kid(), dev_kid());
        assert_eq!(config.issuer, "https://auth.example.com");
        assert_eq!(config.audience, "routing");
        assert_eq!(config.ttl_seconds, 900);
    }

    #[test]
    fn the_secret_arn_alone_selects_secrets_manager_without_reading_it() {
        let config = config(&[("JWT_SIGNING_KEY_SECRET_ARN", &format!(" {ARN}\n"))])
            .expect("valid without any I/O");
        match config.key_source {
            SigningKeySource::SecretArn(arn) => assert_eq!(arn, ARN),
            other => panic!("expected the secret source, got {other:?}"),
        }
        assert_eq!(config.ttl_seconds, 3600);
    }

    #[test]
    fn a_blank_secret_arn_gives_way_to_the_pem() {
        let config = config(&[
            ("JWT_SIGNING_KEY_SECRET_ARN", ""),
            ("JWT_SIGNING_KEY_PEM", DEV_SIGNING_KEY_PEM),
            DEV_OPT_IN,
        ])
        .expect("valid");
        assert!(matches!(config.key_source, SigningKeySource::Pem(k) if k.kid() == dev_kid()));
    }

    #[test]
    fn a_secret_in_another_partition_is_accepted() {
        let arn = "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:jwt-AbCdEf";
        let config = config(&[("JWT_SIGNING_KEY_SECRET_ARN", arn)]).expect("valid");
        assert!(matches!(config.key_source, SigningKeySource::SecretArn(a) if a == arn));
    }

    #[test]
    fn the_secret_text_is_read_as_pem_with_or_without_real_newlines() {
        let kid = dev_kid();
        let plain = key_from_secret_text(ARN, DEV_SIGNING_KEY_PEM).expect("plain PEM");
        assert_eq!(plain.kid(), kid);
        let escaped = DEV_SIGNING_KEY_PEM.trim_end().replace('\n', "\\n");
        let escaped = key_from_secret_text(ARN, &escaped).expect("escaped PEM");
        assert_eq!(escaped.kid(), kid);
    }

    #[test]
    fn a_secret_that_is_not_a_key_fails_naming_the_secret() {
        let error = key_from_secret_text(ARN, "{\"pem\": \"nope\"}")
            .expect_err("not a key")
            .to_string();
        assert!(
            error.starts_with(&format!("the signing key secret {ARN}")),
            "{error}"
        );
    }

    /// (case, variables, start of the error message)
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);

    #[test]
    fn a_bad_configuration_fails_naming_the_variable() {
        let key = ("JWT_SIGNING_KEY_PEM", DEV_SIGNING_KEY_PEM);
        let cases: Vec<Case> = vec![
            (
                "the development key without the opt-in",
                vec![key],
                "the signing key from JWT_SIGNING_KEY_PEM is the committed development key",
            ),
            (
                "the development key with an opt-in other than true",
                vec![key, ("ALLOW_DEVELOPMENT_SIGNING_KEY", "yes")],
                "the signing key from JWT_SIGNING_KEY_PEM is the committed development key",
            ),
            (
                "nothing set",
                vec![],
                "no signing key: set JWT_SIGNING_KEY_SECRET_ARN",
            ),
            (
                "both sources",
                vec![key, ("JWT_SIGNING_KEY_SECRET_ARN", ARN)],
                "both JWT_SIGNING_KEY_SECRET_ARN and JWT_SIGNING_KEY_PEM are set",
            ),
            (
                "a blank ARN alone",
                vec![("JWT_SIGNING_KEY_SECRET_ARN", "  ")],
                "no signing key: set JWT_SIGNING_KEY_SECRET_ARN",
            ),
            (
                "a secret name, not an ARN",
                vec![("JWT_SIGNING_KEY_SECRET_ARN", "account-routing/jwt")],
                "JWT_SIGNING_KEY_SECRET_ARN must be a Secrets Manager secret ARN",
            ),
            (
                "an ARN of another service",
                vec![(
                    "JWT_SIGNING_KEY_SECRET_ARN",
                    "arn:aws:ssm:eu-west-1:123456789012:parameter/jwt",
                )],
                "JWT_SIGNING_KEY_SECRET_ARN must be a Secrets Manager secret ARN",
            ),
            (
                "an ARN without a secret name",
                vec![(
                    "JWT_SIGNING_KEY_SECRET_ARN",
                    "arn:aws:secretsmanager:eu-west-1:123456789012:secret:",
                )],
                "JWT_SIGNING_KEY_SECRET_ARN must be a Secrets Manager secret ARN",
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
                vec![key, DEV_OPT_IN, ("JWT_ISSUER", "")],
                "JWT_ISSUER is set but empty",
            ),
            (
                "empty audience",
                vec![key, DEV_OPT_IN, ("JWT_AUDIENCE", "")],
                "JWT_AUDIENCE is set but empty",
            ),
            (
                "ttl zero",
                vec![key, DEV_OPT_IN, ("TOKEN_TTL_SECONDS", "0")],
                "TOKEN_TTL_SECONDS must be",
            ),
            (
                "ttl too long",
                vec![key, DEV_OPT_IN, ("TOKEN_TTL_SECONDS", "86401")],
                "TOKEN_TTL_SECONDS must be",
            ),
            (
                "ttl not a number",
                vec![key, DEV_OPT_IN, ("TOKEN_TTL_SECONDS", "1h")],
                "TOKEN_TTL_SECONDS must be",
            ),
            (
                "ttl with the ARN source is still checked",
                vec![
                    ("JWT_SIGNING_KEY_SECRET_ARN", ARN),
                    ("TOKEN_TTL_SECONDS", "-5"),
                ],
                "TOKEN_TTL_SECONDS must be",
            ),
        ];
        for (case, vars, message) in cases {
            let error = config(&vars).expect_err(case).to_string();
            assert!(error.starts_with(message), "{case}: {error}");
        }
    }

    #[test]
    fn a_key_read_from_the_secret_is_refused_when_it_is_the_development_key() {
        let refusing = config(&[("JWT_SIGNING_KEY_SECRET_ARN", ARN)]).expect("valid");
        let dev = key_from_secret_text(ARN, DEV_SIGNING_KEY_PEM).expect("a key");
        let error = refusing
            .accept_key(&dev, "secrets-manager")
            .expect_err("refused")
            .to_string();
        assert!(
            error.starts_with(
                "the signing key from secrets-manager is the committed development key"
            ),
            "{error}"
        );
        let allowed = config(&[("JWT_SIGNING_KEY_SECRET_ARN", ARN), DEV_OPT_IN]).expect("valid");
        assert!(allowed.accept_key(&dev, "secrets-manager").is_ok());
    }

    #[test]
    fn any_other_key_needs_no_opt_in() {
        let own = p256::SecretKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        let pem = p256::pkcs8::EncodePrivateKey::to_pkcs8_pem(&own, p256::pkcs8::LineEnding::LF)
            .expect("encodes");
        let own = config(&[("JWT_SIGNING_KEY_PEM", &pem)]).expect("valid without opt-in");
        let SigningKeySource::Pem(key) = &own.key_source else {
            panic!("expected the PEM source");
        };
        assert!(own.accept_key(key, PEM_VAR).is_ok());
    }
}
