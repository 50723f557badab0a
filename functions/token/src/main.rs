//! Lambda entry point of the token function. Thin: logging, [`shared::deps::Deps::from_env`],
//! the signing key (from Secrets Manager in AWS, through the same AWS configuration, or from
//! `JWT_SIGNING_KEY_PEM` locally) read once at cold start, failing fast with a message naming
//! what to fix; then every event is served by [`token_function::app`].

fn main() -> Result<(), lambda_http::Error> {
    return_freed_memory();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())
}

/// Makes glibc's malloc give freed memory back: a fixed trim threshold of 128 KiB (which also
/// stops glibc from raising its mmap threshold after the first large free). When each argon2id
/// verification allocated and freed its 19 MiB block, glibc's dynamic thresholds kept the freed
/// blocks resident and the warm RSS grew by about 15 MiB per request (165 MiB after 11 token
/// requests); this setting kept it at about 14 MiB. argon2's blocks now come from a pool (one
/// per concurrent verification, resident by design); the setting still returns any other large
/// freed memory. Measured in `docs/performance.md` (token function's warm RSS).
fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator; called before any other thread
    // exists.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 * 1024);
    }
}

async fn run() -> Result<(), lambda_http::Error> {
    shared::deps::init_tracing();
    shared::telemetry::install("token");
    let deps = token_function::deps_from_env()
        .await
        .map_err(lambda_http::Error::from)?;
    lambda_http::run(token_function::app(&deps)?).await
}
