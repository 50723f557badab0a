//! Lambda entry point of the token function. Thin: logging, configuration, the signing key
//! (from Secrets Manager in AWS, from `JWT_SIGNING_KEY_PEM` locally) and the store are set up once
//! at cold start, failing fast with a message naming what to fix; then every event is served by
//! [`token_function::routes`].

use shared::auth::TokenIssuer;
use shared::clock::SystemClock;
use std::sync::Arc;
use token_function::config::SigningKeySource;
use token_function::{routes, TokenConfig, TokenState};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::runtime::init_tracing();

    // The error is returned as its message, so the process's own exit output is readable too.
    let config = TokenConfig::from_env().map_err(|error| {
        tracing::error!(%error, "invalid configuration");
        lambda_http::Error::from(error.to_string())
    })?;
    let (signing_key, key_source) = match config.key_source {
        SigningKeySource::Pem(key) => (key, "JWT_SIGNING_KEY_PEM"),
        SigningKeySource::SecretArn(arn) => {
            let key = token_function::secret::signing_key_from_secret(&arn)
                .await
                .map_err(|error| {
                    tracing::error!(%error, "no signing key");
                    lambda_http::Error::from(error.to_string())
                })?;
            (key, "secrets-manager")
        }
    };
    let store = shared::runtime::store_from_env()
        .await
        .inspect_err(|error| {
            tracing::error!(%error, "no store");
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

    let state = TokenState {
        store,
        issuer: Arc::new(issuer),
        clock: Arc::new(SystemClock),
    };
    lambda_http::run(shared::api::finish(routes(state))).await
}
