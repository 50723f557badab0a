//! `openapi`: prints the API description generated from the code, as committed in
//! `openapi.json` at the repository root. Regenerate the committed file with
//!
//! ```sh
//! cargo run -q -p local-server --bin openapi > openapi.json
//! ```
//!
//! (`cargo test -p local-server --test api openapi::` fails while the committed file differs.)

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    print!("{}", local_server::generated_openapi_json().await?);
    Ok(())
}
