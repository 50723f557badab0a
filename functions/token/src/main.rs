//! Lambda entry point of the token function. Thin: logging, [`shared::deps::Deps::from_env`],
//! the signing key (from Secrets Manager in AWS, through the same AWS configuration, or from
//! `JWT_SIGNING_KEY_PEM` locally) read once at cold start, failing fast with a message naming
//! what to fix; then every event is served by [`token_function::app`].

use shared::auth::TokenIssuer;
use token_function::config::SigningKeySource;
use token_function::TokenConfig;

fn main() -> Result<(), lambda_http::Error> {
    one_malloc_arena();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())
}

/// One glibc malloc arena for the whole process, set before any thread starts. Each argon2id
/// verification allocates a 19 MiB block; glibc gives every thread that allocates its own
/// arena (up to 8 per core), and each arena keeps a freed block of that size for the next one,
/// so the warm RSS grew with every blocking-pool thread that ever hashed (127 MB measured). With
/// one arena the block is reused by whichever thread hashes next. The function serves one
/// request at a time, so the arena's lock is not contended (`docs/performance.md`).
fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator; called before any other thread
    // exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

async fn run() -> Result<(), lambda_http::Error> {
    shared::deps::init_tracing();

    // The error is returned as its message, so the process's own exit output is readable too.
    let config = TokenConfig::from_env().map_err(|error| {
        tracing::error!(%error, "invalid configuration");
        lambda_http::Error::from(error.to_string())
    })?;
    let mut deps = shared::deps::Deps::from_env()
        .await
        .inspect_err(|error| tracing::error!(%error, "invalid configuration"))?;
    let (signing_key, key_source) = match config.key_source {
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
