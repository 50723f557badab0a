//! Cold-start wiring shared by the Lambda binaries: logging and configuration, read once from the
//! environment, failing fast with a clear message.
//!
//! | variable | meaning |
//! |---|---|
//! | `JWT_PUBLIC_JWKS` | JWKS (JSON) of the public keys that verify bearer tokens (selected by `kid`) |
//! | `JWT_ISSUER`, `JWT_AUDIENCE` | expected `iss` / `aud`; default `account-routing-api` |
//! | `STORE_BACKEND` | `dynamodb` (default) or `memory` (embedded store loaded from `SEED_PATH`; for local invocation) |
//! | `TABLE_NAME` | the DynamoDB table (required for `dynamodb`) |
//! | `AWS_ENDPOINT_URL` | optional: a local emulator instead of AWS |
//! | `SEED_PATH` | seed file for the `memory` backend |
//!
//! Region and credentials come from the standard AWS environment (the Lambda role in AWS).

use crate::auth::{TokenVerifier, DEFAULT_AUDIENCE, DEFAULT_ISSUER};
use crate::clock::{Clock, SystemClock};
use crate::store::dynamodb::{self, DynamoStore};
use crate::store::memory::MemoryStore;
use crate::store::Store;
use std::sync::Arc;

/// A configuration problem found at cold start.
#[derive(Debug, thiserror::Error)]
#[error("configuration error: {0}")]
pub struct ConfigError(pub String);

/// JSON logs (one object per line, CloudWatch-friendly), filtered by `RUST_LOG` (default `info`).
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_current_span(true)
        .without_time()
        .try_init();
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The token verifier from `JWT_PUBLIC_JWKS`, `JWT_ISSUER`, `JWT_AUDIENCE`.
///
/// Errors: the JWKS is missing or not a valid set of P-256 keys.
pub fn verifier_from_env() -> Result<TokenVerifier, ConfigError> {
    let jwks =
        var("JWT_PUBLIC_JWKS").ok_or_else(|| ConfigError("JWT_PUBLIC_JWKS is not set".into()))?;
    let issuer = var("JWT_ISSUER").unwrap_or_else(|| DEFAULT_ISSUER.into());
    let audience = var("JWT_AUDIENCE").unwrap_or_else(|| DEFAULT_AUDIENCE.into());
    TokenVerifier::from_jwks_str(&jwks, &issuer, &audience)
        .map_err(|e| ConfigError(format!("JWT_PUBLIC_JWKS is invalid: {e}")))
}

/// The store named by `STORE_BACKEND` (default `dynamodb`).
///
/// For DynamoDB the SDK client is built once here (`BehaviorVersion::latest()`, standard retry
/// mode, `AWS_ENDPOINT_URL` when set); no request is made at cold start.
///
/// Errors: an unknown backend, `TABLE_NAME` missing, or an unreadable / invalid seed.
pub async fn store_from_env() -> Result<Arc<dyn Store>, ConfigError> {
    match var("STORE_BACKEND").as_deref() {
        None | Some("dynamodb") => {
            let table = var("TABLE_NAME").ok_or_else(|| {
                ConfigError("TABLE_NAME is not set (STORE_BACKEND=dynamodb, the default)".into())
            })?;
            let sdk = dynamodb::env::sdk_config().await;
            Ok(Arc::new(DynamoStore::new(
                dynamodb::env::client(&sdk, None),
                table,
            )))
        }
        Some("memory") => {
            let path = var("SEED_PATH").ok_or_else(|| {
                ConfigError("SEED_PATH is not set for STORE_BACKEND=memory".into())
            })?;
            let text = std::fs::read_to_string(&path)
                .map_err(|e| ConfigError(format!("cannot read SEED_PATH {path}: {e}")))?;
            let plan = crate::seed::load(&text, SystemClock.now())
                .map_err(|e| ConfigError(format!("invalid seed: {e}")))?;
            let store = MemoryStore::new();
            store
                .provision(&plan)
                .await
                .map_err(|e| ConfigError(format!("seed not loaded: {e}")))?;
            Ok(Arc::new(store))
        }
        Some(other) => Err(ConfigError(format!(
            "STORE_BACKEND={other} is unknown; expected dynamodb or memory"
        ))),
    }
}

/// The system clock, shared.
pub fn clock() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}
