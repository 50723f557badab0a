//! Reading the signing key from AWS Secrets Manager, once, at cold start.
//!
//! The only AWS call of the token function besides the store. The function's role may call
//! `secretsmanager:GetSecretValue` on this one secret and nothing else (`template.yaml`).
//! Region and credentials come from the standard chain (the Lambda role in AWS);
//! `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT_URL_SECRETS_MANAGER`) points it at a local emulator.

use crate::config::{key_from_secret_text, ConfigError};
use aws_config::SdkConfig;
use shared::auth::SigningKey;

/// Reads the secret `arn` with the function's AWS configuration `sdk` and parses its `SecretString` as the P-256 private key PEM.
///
/// Errors: [`ConfigError::SecretUnreadable`] (no permission, no such secret, network),
/// [`ConfigError::SecretNotText`] (a binary secret or no value yet),
/// [`ConfigError::SecretNotAKey`] (the text is not a key).
pub async fn signing_key_from_secret(
    sdk: &SdkConfig, arn: &str,
) -> Result<SigningKey, ConfigError> {
    let client = aws_sdk_secretsmanager::Client::new(sdk);
    let out = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|e| ConfigError::SecretUnreadable {
            arn: arn.to_owned(),
            cause: shared::secrets::describe(&e),
        })?;
    let text = out
        .secret_string()
        .ok_or_else(|| ConfigError::SecretNotText(arn.to_owned()))?;
    key_from_secret_text(arn, text)
}
