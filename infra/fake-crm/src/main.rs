//! `fake-crm`: a fake HubSpot on loopback, for the demo (README "CRM sync") and for trying
//! failures by hand. Point an account's `crm.base_url` at it. It holds the demo portal
//! (Initech's HubSpot: the OAuth app, owners and contacts the demo seed expects) unless
//! `--portal FILE` gives another (`--portal none`: an empty portal).

use clap::Parser;
use std::net::SocketAddr;

/// Command line of the fake CRM.
#[derive(Debug, Parser)]
#[command(
    name = "fake-crm",
    about = "A fake HubSpot: answers as HubSpot documents, validates and records requests, answers scripted failures"
)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:4010")]
    addr: SocketAddr,
    /// The portal to hold (a JSON file, `fake_crm::portal::PortalSpec`); default the demo
    /// portal, `none` for an empty one.
    #[arg(long)]
    portal: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let portal = match args.portal.as_deref() {
        None => fake_crm::portal::PortalSpec::demo(),
        Some("none") => fake_crm::portal::PortalSpec::default(),
        Some(path) => serde_json::from_str(&std::fs::read_to_string(path)?)?,
    };
    let fake = fake_crm::FakeCrm::with_portal(portal);
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let base = format!("http://{}", listener.local_addr()?);
    println!("fake HubSpot listening on {base}");
    println!("  owners set:        PATCH {base}/crm/v3/objects/<type>/<id>   (HubSpot's rules: tokens, scopes, owners)");
    println!("  an object:         curl -s {base}/_fake/objects/contacts/5101");
    println!("  the portal:        curl -s {base}/_fake/portal");
    println!("  requests received: curl -s {base}/_fake/requests");
    println!(
        "  script failures:   curl -s -X POST {base}/_fake/script -H 'Content-Type: application/json' \\\n                       -d '{{\"status\": 503, \"body\": {{\"message\": \"Service Unavailable\"}}, \"times\": 2, \"method\": \"PATCH\", \"path\": \"/crm/v3/objects/\"}}'"
    );
    println!("  forget everything: curl -s -X DELETE {base}/_fake/requests");
    axum::serve(listener, fake.router())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
