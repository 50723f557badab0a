//! `hello-axum [ADDR] [BODY_FILE]`: a bare axum server (default `127.0.0.1:3001`) answering
//! `hello` to a GET of any path, on the same tokio runtime and axum features as the local server.
//! The yardstick of `infra/scripts/bench-http.sh`. With `BODY_FILE` it answers that file's bytes
//! as `application/json` instead (read once at start): a server that does no work but sends the
//! same response as the one measured.

use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = args.next().as_deref().unwrap_or("127.0.0.1:3001").parse()?;
    let app = match args.next() {
        Some(file) => {
            let body = axum::body::Bytes::from(std::fs::read(file)?);
            Router::new().fallback(get(move || {
                let body = body.clone();
                async move { ([(CONTENT_TYPE, "application/json")], body) }
            }))
        }
        None => Router::new().fallback(get(|| async { "hello" })),
    };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("hello listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
