//! Lambda entry point of the token function. Thin: logging, [`shared::deps::Deps::from_env`],
//! the signing key (from Secrets Manager in AWS, through the same AWS configuration, or from
//! `JWT_SIGNING_KEY_PEM` locally) read once at cold start, failing fast with a message naming
//! what to fix; then every event is served by [`token_function::app`].

use shared::auth::TokenIssuer;
use token_function::config::SigningKeySource;
use token_function::TokenConfig;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::deps::init_tracing();

    // The error is returned as its message, so the process's own exit output is readable too.
    let config = TokenConfig::from_env().map_err(|error| {
        tracing::error!(%error, "invalid configuration");
        lambda_http::Error::from(error.to_string())
    })?;
    let mut deps = shared::deps::Deps::from_env()
        .await
        .inspect_err(|error| tracing::error!(%error, "invalid configuration"))?;
    let (signing_key, key_source) = match config.key_source.clone() {
        SigningKeySource::Pem(key) => (key, "JWT_SIGNING_KEY_PEM"),
        SigningKeySource::SecretArn(arn) => {
            let sdk = deps.aws().await;
            let key = token_function::secret::signing_key_from_secret(&sdk, &arn)
                .await
                .map_err(|error| {
                    tracing::error!(%error, "no signing key");
                    lambda_http::Error::from(error.to_string())
                })?;
            (key, "secrets-manager")
        }
    };
    // The committed development key only with ALLOW_DEVELOPMENT_SIGNING_KEY=true (the PEM source
    // was checked with the configuration).
    config
        .accept_key(&signing_key, key_source)
        .map_err(|error| {
            tracing::error!(%error, "invalid configuration");
            lambda_http::Error::from(error.to_string())
        })?;
    let issuer = TokenIssuer::new(
        signing_key,
        config.issuer,
        config.audience,
        config.ttl_seconds,
    );
    tracing::info!(
        kid = issuer.key().kid(),
        key_source,
        ttl_seconds = issuer.ttl_seconds(),
        "token function ready"
    );
    let deps = deps.with_issuer(issuer);
    lambda_http::run(token_function::app(&deps)?).await
}
