//! `fake-crm`: a fake HubSpot CRM v3 on loopback, for the demo (README "CRM sync") and for
//! trying failures by hand. Point an account's `crm.base_url` at it.

use clap::Parser;
use std::net::SocketAddr;

/// Command line of the fake CRM.
#[derive(Debug, Parser)]
#[command(
    name = "fake-crm",
    about = "A fake HubSpot CRM v3: records owner updates, answers scripted failures"
)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:4010")]
    addr: SocketAddr,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let fake = fake_crm::FakeCrm::new();
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let base = format!("http://{}", listener.local_addr()?);
    println!("fake HubSpot CRM listening on {base}");
    println!("  owners set:        PATCH {base}/crm/v3/objects/<type>/<id>   (read back with GET)");
    println!("  requests received: curl -s {base}/_fake/requests");
    println!(
        "  script failures:   curl -s -X POST {base}/_fake/script -H 'Content-Type: application/json' \\\n                       -d '{{\"status\": 503, \"body\": {{\"message\": \"Service Unavailable\"}}, \"times\": 2}}'"
    );
    println!("  forget everything: curl -s -X DELETE {base}/_fake/requests");
    axum::serve(listener, fake.router())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
