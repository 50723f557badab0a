//! `fake-crm`: a fake HubSpot and a fake Salesforce on loopback, for the demo (README "CRM
//! sync") and for trying failures by hand. Point an account's `crm.base_url` at one. The
//! HubSpot holds the demo portal (Initech's HubSpot: the OAuth app, owners and contacts the demo
//! seed expects) unless `--portal FILE` gives another (`--portal none`: an empty portal); the
//! Salesforce (`--salesforce-addr`, default `127.0.0.1:4011`; its My Domain is
//! `http://localhost:<port>`) holds the demo org (Umbrella's) unless `--salesforce-org FILE`
//! gives another.

use clap::Parser;
use std::net::SocketAddr;

/// Command line of the fake CRM.
#[derive(Debug, Parser)]
#[command(
    name = "fake-crm",
    about = "A fake HubSpot and a fake Salesforce: answer as their documentation says, validate and record requests, answer scripted failures"
)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:4010")]
    addr: SocketAddr,
    /// The portal to hold (a JSON file, `fake_crm::portal::PortalSpec`); default the demo
    /// portal, `none` for an empty one.
    #[arg(long)]
    portal: Option<String>,
    /// Address of the fake Salesforce (its My Domain is `http://localhost:<port>`, its instance
    /// `http://127.0.0.1:<port>`).
    #[arg(long, default_value = "127.0.0.1:4011")]
    salesforce_addr: SocketAddr,
    /// The org to hold (a JSON file, `fake_crm::salesforce::org::OrgSpec`); default the demo
    /// org, `none` for an empty one.
    #[arg(long)]
    salesforce_org: Option<String>,
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
    let org = match args.salesforce_org.as_deref() {
        None => fake_crm::salesforce::org::OrgSpec::demo(),
        Some("none") => fake_crm::salesforce::org::OrgSpec::default(),
        Some(path) => serde_json::from_str(&std::fs::read_to_string(path)?)?,
    };
    let salesforce_listener = tokio::net::TcpListener::bind(args.salesforce_addr).await?;
    let (salesforce, my_domain) =
        fake_crm::salesforce::FakeSalesforce::on(org, &salesforce_listener)?;
    let salesforce_app = salesforce.router();
    tokio::spawn(async move {
        let _ = axum::serve(salesforce_listener, salesforce_app).await;
    });
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
    println!("fake Salesforce listening on {my_domain} (My Domain; REST on its instance_url)");
    println!("  owners set:        PATCH <instance_url>/services/data/v66.0/sobjects/<object>/<id>   (Salesforce's rules: sessions, users, queues, assignment rules)");
    println!("  a record:          curl -s {my_domain}/_fake/records/Lead/00Q5g0000000001");
    println!("  requests received: curl -s {my_domain}/_fake/requests");
    axum::serve(listener, fake.router())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
