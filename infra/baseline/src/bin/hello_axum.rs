//! `hello-axum [ADDR]`: a bare axum server (default `127.0.0.1:3001`) answering `hello` to a GET
//! of any path, on the same tokio runtime and axum features as the local server. The yardstick
//! of `infra/scripts/bench-http.sh`.

use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .as_deref()
        .unwrap_or("127.0.0.1:3001")
        .parse()?;
    let app = Router::new().fallback(get(|| async { "hello" }));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("hello listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
