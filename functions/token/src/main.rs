//! Lambda entry point of the token function. Thin: logging, configuration and the store are set
//! up once at cold start (failing fast with a message naming what to fix), then every event is
//! served by [`token_function::routes`].

use shared::auth::TokenIssuer;
use shared::clock::SystemClock;
use shared::store::Store;
use std::sync::Arc;
use token_function::{routes, TokenConfig, TokenState};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_current_span(true)
        .with_target(false)
        // CloudWatch stamps every line itself.
        .without_time()
        .init();

    // The error is returned as its message, so the process's own exit output is readable too.
    let config = TokenConfig::from_env().map_err(|error| {
        tracing::error!(%error, "invalid configuration");
        lambda_http::Error::from(error.to_string())
    })?;
    let store = build_store().inspect_err(|error| {
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
    lambda_http::run(routes(state)).await
}

/// The production store.
///
/// NOT AVAILABLE YET: the DynamoDB adapter (reading `TABLE_NAME`, optional `AWS_ENDPOINT_URL`)
/// lands with issue 4; until then the function refuses to start rather than run on a fake store.
fn build_store() -> Result<Arc<dyn Store>, lambda_http::Error> {
    Err("TABLE_NAME store not available yet: DynamoDB adapter lands with issue 4".into())
}
