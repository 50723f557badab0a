//! The signing secrets of a subscription, sealed at rest ([`crate::secrets::Sealer`]).

use super::signing::WebhookSecret;
use crate::model::webhook::WebhookSubscription;
use crate::secrets::{SealContext, Sealer};
use chrono::{DateTime, Utc};

/// The context a subscription's signing secret is sealed under.
pub fn secret_context(subscription: &WebhookSubscription) -> SealContext {
    SealContext::from([
        ("purpose", "webhook_signing_secret".to_string()),
        ("account_id", subscription.account_id.to_string()),
        ("webhook_id", subscription.id.to_string()),
    ])
}

/// The most secrets that sign one delivery: the current one and one previous (BEHAVIOR 13).
pub const MAX_SIGNING_SECRETS: usize = 2;

/// The secrets that sign at `now`: the current one, and a rotated one until it retires; at
/// most [`MAX_SIGNING_SECRETS`], the first ones listed (newest first), also for a subscription
/// stored when rotations kept every secret younger than the overlap.
///
/// Errors: a secret that does not open (logged by the caller as the attempt's error).
pub async fn open_secrets(
    sealer: &dyn Sealer, subscription: &WebhookSubscription, now: DateTime<Utc>,
) -> Result<Vec<WebhookSecret>, String> {
    let context = secret_context(subscription);
    let mut secrets = Vec::new();
    let signing = subscription
        .secrets
        .iter()
        .filter(|secret| secret.retires_at.is_none_or(|at| at > now))
        .take(MAX_SIGNING_SECRETS);
    for secret in signing {
        let text = sealer
            .open(&secret.sealed, &context)
            .await
            .map_err(|e| format!("Signing secret unavailable: {e}"))?;
        secrets.push(WebhookSecret::parse(&text)?);
    }
    Ok(secrets)
}
