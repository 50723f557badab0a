//! `provision --seed PATH [--create-table] [--development-sealing]`: loads a seed file into the DynamoDB table named by
//! `TABLE_NAME` (endpoint from `AWS_ENDPOINT_URL` when set; region and credentials from the
//! standard AWS environment). Validates the whole file before the first write; items whose id
//! (or `client_id`) exists are skipped, so running it again changes nothing.

use anyhow::Context;
use clap::Parser;
use std::path::PathBuf;

/// Command line of `provision`.
#[derive(Debug, Parser)]
#[command(
    name = "provision",
    about = "Loads a seed file into the DynamoDB table named by TABLE_NAME (insert-if-absent)"
)]
struct Args {
    /// Seed file (docs/seed-format.md).
    #[arg(long)]
    seed: PathBuf,
    /// Create the table from infra/table.json first when it does not exist.
    #[arg(long)]
    create_table: bool,
    /// Seal the CRM secrets with the committed development key when neither
    /// SEALING_KMS_KEY_ID nor LOCAL_SEALING_KEY is set (local tables only: anyone with the
    /// repository can open what it seals). Without it, such a run is refused.
    #[arg(long)]
    development_sealing: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let text = std::fs::read_to_string(&args.seed)
        .with_context(|| format!("cannot read seed file {}", args.seed.display()))?;
    let store = provision::store_from_env().await?;
    let sealing = if args.development_sealing {
        provision::Sealing::DevelopmentAllowed
    } else {
        provision::Sealing::Configured
    };
    let report = provision::provision(&store, &text, args.create_table, sealing).await?;
    print!("{}", provision::summary(&report));
    Ok(())
}
