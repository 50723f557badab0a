//! Provisioning a seed file (`docs/seed-format.md`) into the DynamoDB table: the same
//! loader and validation as the local server's ([`shared::seed::load`]), then
//! [`shared::store::ProvisionStore::provision`] (insert-if-absent, checked before the first write).
//! Used by the `provision` binary and by `local-server --store dynamodb`.

pub mod dead_letters;

use anyhow::Context;
use shared::store::dynamodb::{env, DynamoStore};
use shared::store::ProvisionReport;
use std::fmt::Write;

/// The adapter over the table named by `TABLE_NAME`, with the client from the standard AWS
/// environment (`AWS_ENDPOINT_URL` for an emulator).
///
/// Errors: `TABLE_NAME` is not set.
pub async fn store_from_env() -> anyhow::Result<DynamoStore> {
    let table = std::env::var("TABLE_NAME")
        .ok()
        .filter(|t| !t.trim().is_empty())
        .context("TABLE_NAME is not set: name the DynamoDB table to provision")?;
    let sdk = env::sdk_config().await;
    Ok(DynamoStore::new(env::client(&sdk), table))
}

/// How `provision` may seal the CRM secrets when the environment names no key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sealing {
    /// Only with a key the environment names: `SEALING_KMS_KEY_ID` (a deployment) or
    /// `LOCAL_SEALING_KEY`.
    Configured,
    /// With the committed development key when the environment names none
    /// (`--development-sealing`: a local table only; anyone with the repository can open what
    /// it seals).
    DevelopmentAllowed,
}

/// The message of a run that would seal with the committed development key unasked.
pub const NO_SEALING_KEY: &str = "no key to seal the CRM secrets with: set SEALING_KMS_KEY_ID \
     (the deployment's KMS key) or LOCAL_SEALING_KEY, or pass --development-sealing for a local \
     table (the development key is committed: anyone with the repository can open what it seals)";

/// Validates `seed` (the whole file, before anything is written; CRM URLs under the outbound
/// setting of the environment, `ALLOW_INSECURE_OUTBOUND`, strict unless set), checks there is
/// a key to seal the CRM secrets with (`sealing`), creates the table when `create_table` and it
/// is missing, then loads the seed insert-if-absent (clients kept current: a changed secret or
/// `disabled` is written).
///
/// Errors: the seed's first problem with its JSON path; [`NO_SEALING_KEY`] (nothing done); a
/// record key held by an existing record (nothing written); the SDK's.
pub async fn provision(
    store: &DynamoStore, seed: &str, create_table: bool, sealing: Sealing,
) -> anyhow::Result<ProvisionReport> {
    let policy =
        shared::outbound::OutboundPolicy::from_env_or(shared::outbound::OutboundPolicy::STRICT)
            .map_err(anyhow::Error::msg)?;
    let plan = shared::seed::load(seed, chrono::Utc::now(), policy)
        .map_err(|e| anyhow::anyhow!("invalid seed, nothing written: {e}"))?;
    // CRM secrets are stored sealed: with the deployment's KMS key (SEALING_KMS_KEY_ID), a key
    // of the operator's (LOCAL_SEALING_KEY), or, asked for, the committed development key.
    let named = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let configured = named(shared::secrets::KmsSealer::VARIABLE)
        || named(shared::secrets::LocalSealer::VARIABLE);
    if !configured && sealing == Sealing::Configured {
        anyhow::bail!(NO_SEALING_KEY);
    }
    let sealer = shared::deps::sealer_from_env(None)
        .await?
        .ok_or_else(|| anyhow::anyhow!(NO_SEALING_KEY))?;
    if create_table {
        let created = store
            .create_table_if_missing()
            .await
            .with_context(|| format!("cannot create table {}", store.table_name()))?;
        if created {
            eprintln!("created table {}", store.table_name());
        }
    }
    shared::seed::provision(store, sealer.as_ref(), plan)
        .await
        .map_err(|e| anyhow::anyhow!("provisioning into table {} failed: {e}", store.table_name()))
}

/// A human summary of a run: counts, then every skipped item.
pub fn summary(report: &ProvisionReport) -> String {
    let mut out = format!(
        "inserted {} items, skipped {} already present, updated {} clients\n",
        report.inserted,
        report.skipped.len(),
        report.updated.len()
    );
    for updated in &report.updated {
        let _ = writeln!(out, "  updated {updated}");
    }
    for skipped in &report.skipped {
        let _ = writeln!(out, "  skipped {skipped}");
    }
    out
}
