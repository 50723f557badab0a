//! Lambda entry point of the token function. Thin: logging, configuration and the store are set
//! up once at cold start (failing fast with a message naming what to fix), then every event is
//! served by [`token_function::routes`].

use shared::auth::TokenIssuer;
use shared::clock::SystemClock;
use std::sync::Arc;
use token_function::{routes, TokenConfig, TokenState};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::runtime::init_tracing();

    // The error is returned as its message, so the process's own exit output is readable too.
    let config = TokenConfig::from_env().map_err(|error| {
        tracing::error!(%error, "invalid configuration");
        lambda_http::Error::from(error.to_string())
    })?;
    let store = shared::runtime::store_from_env()
        .await
        .inspect_err(|error| {
            tracing::error!(%error, "no store");
        })?;
    let issuer = TokenIssuer::new(
        config.signing_key,
        config.issuer,
        config.audience,
        config.ttl_seconds,
    );
    tracing::info!(
        kid = issuer.key().kid(),
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
