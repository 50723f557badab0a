//! Secrets at rest and in configuration (BEHAVIOR 7: stored CRM secrets are
//! sealed; `docs/decisions.md`, "Webhooks": signing secrets too).
//!
//! - [`read_secret_string`]: a Secrets Manager secret read once per instance (the signing key of
//!   the token function at cold start, the cursor key of the functions that list on their first
//!   list request: [`crate::page::cursor::CursorKeySource`]), so no secret sits in a
//!   function's environment, where anyone allowed `lambda:GetFunctionConfiguration` reads it.
//! - [`Sealer`]: secrets the service must present later (a CRM connection's access token, a
//!   webhook subscription's signing secret) are stored sealed, never as sent: encrypted with a
//!   KMS key in production ([`KmsSealer`], `SEALING_KMS_KEY_ID`), or with AES-256-GCM under a
//!   local key for local runs ([`LocalSealer`]). Each value is bound to a context (what it is,
//!   whose it is: KMS's encryption context, AES-GCM's associated data), so a sealed value moved to
//!   another account's item does not open there.

use crate::error::{BoxError, ErrorChain};
use crate::model::account::SealedSecret;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use async_trait::async_trait;
use aws_config::SdkConfig;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use std::collections::BTreeMap;

pub mod cache;

/// Reads the `SecretString` of the Secrets Manager secret `arn` with the function's AWS
/// configuration (one `GetSecretValue`).
///
/// Errors: a message naming the secret: no permission, no such secret, network (the service's
/// code and message, or the transport error's causes), or no text value.
pub async fn read_secret_string(sdk: &SdkConfig, arn: &str) -> Result<String, String> {
    let client = aws_sdk_secretsmanager::Client::new(sdk);
    let out = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|e| format!("cannot read the secret {arn}: {}", describe(&e)))?;
    out.secret_string()
        .map(str::to_string)
        .ok_or_else(|| format!("the secret {arn} has no SecretString"))
}

/// One line for an SDK error: the service's code and message (`AccessDeniedException: ...`), or
/// the chain of causes of a transport error (timeout, DNS, credentials).
pub fn describe<E, R>(error: &aws_smithy_runtime_api::client::result::SdkError<E, R>) -> String
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    if let Some(service) = error.as_service_error() {
        return format!(
            "{}: {}",
            service.code().unwrap_or("service error"),
            service.message().unwrap_or("(no message)")
        );
    }
    ErrorChain(error).to_string()
}

/// What a sealed value is and whose: it opens only under the same context.
pub type SealContext = BTreeMap<&'static str, String>;

/// Seals and opens secrets kept at rest.
#[async_trait]
pub trait Sealer: Send + Sync + 'static {
    /// `plaintext` sealed under `context`.
    ///
    /// Errors: the key service failed.
    async fn seal(&self, plaintext: &str, context: &SealContext) -> Result<SealedSecret, BoxError>;

    /// The plaintext of `sealed`, which must have been sealed under `context`.
    ///
    /// Errors: another context, a value sealed by another kind of sealer or key, a corrupt
    /// value, or the key service failed.
    async fn open(&self, sealed: &SealedSecret, context: &SealContext) -> Result<String, BoxError>;
}

/// How a sealer's bytes are kept as text: `<prefix><base64>`, the prefix naming the sealer, so a
/// value sealed by one kind of sealer is refused by the other before any key is tried.
struct Envelope {
    /// `kms:` or `local:`.
    prefix: &'static str,
    /// The sealer, as the refusal names it.
    sealed_with: &'static str,
}

/// Values sealed by [`KmsSealer`].
const KMS: Envelope = Envelope {
    prefix: "kms:",
    sealed_with: "KMS",
};
/// Values sealed by [`LocalSealer`].
const LOCAL: Envelope = Envelope {
    prefix: "local:",
    sealed_with: "a local key",
};

impl Envelope {
    /// `bytes` as a stored value.
    fn encode(&self, bytes: &[u8]) -> SealedSecret {
        SealedSecret::new(format!("{}{}", self.prefix, STANDARD.encode(bytes)))
    }

    /// The bytes of a stored value.
    ///
    /// Errors: another prefix (another sealer), or not base64.
    fn decode(&self, sealed: &SealedSecret) -> Result<Vec<u8>, BoxError> {
        let encoded = sealed
            .as_str()
            .strip_prefix(self.prefix)
            .ok_or_else(|| format!("the value was not sealed with {}", self.sealed_with))?;
        Ok(STANDARD.decode(encoded)?)
    }
}

/// Sealing with a KMS key (`Encrypt` / `Decrypt`, the context as encryption context).
#[derive(Debug, Clone)]
pub struct KmsSealer {
    sdk: SdkConfig,
    /// Built at the first seal or open (a cold start whose first request opens no
    /// secret builds no KMS client), over `sdk`: its HTTP client and connections are the other
    /// clients'.
    client: std::sync::OnceLock<aws_sdk_kms::Client>,
    key_id: String,
}

impl KmsSealer {
    /// The environment variable naming the key (id, ARN or alias).
    pub const VARIABLE: &'static str = "SEALING_KMS_KEY_ID";

    /// A sealer with `key_id` over the AWS configuration `sdk` (no request made, no client built
    /// until the first seal or open).
    pub fn new(sdk: &SdkConfig, key_id: impl Into<String>) -> Self {
        Self {
            sdk: sdk.clone(),
            client: std::sync::OnceLock::new(),
            key_id: key_id.into(),
        }
    }

    /// The KMS client, built now if this is the first use.
    fn client(&self) -> &aws_sdk_kms::Client {
        self.client
            .get_or_init(|| aws_sdk_kms::Client::new(&self.sdk))
    }

    /// Whether the KMS client was built (tests: not before the first seal or open).
    pub fn client_built(&self) -> bool {
        self.client.get().is_some()
    }
}

fn encryption_context(context: &SealContext) -> std::collections::HashMap<String, String> {
    context
        .iter()
        .map(|(k, v)| ((*k).to_string(), v.clone()))
        .collect()
}

#[async_trait]
impl Sealer for KmsSealer {
    async fn seal(&self, plaintext: &str, context: &SealContext) -> Result<SealedSecret, BoxError> {
        let out = self
            .client()
            .encrypt()
            .key_id(&self.key_id)
            .plaintext(aws_smithy_types::Blob::new(plaintext.as_bytes()))
            .set_encryption_context(Some(encryption_context(context)))
            .send()
            .await
            .map_err(|e| format!("KMS Encrypt failed: {}", describe(&e)))?;
        let blob = out
            .ciphertext_blob()
            .ok_or("KMS Encrypt answered no ciphertext")?;
        Ok(KMS.encode(blob.as_ref()))
    }

    async fn open(&self, sealed: &SealedSecret, context: &SealContext) -> Result<String, BoxError> {
        let blob = KMS.decode(sealed)?;
        let out = self
            .client()
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(aws_smithy_types::Blob::new(blob))
            .set_encryption_context(Some(encryption_context(context)))
            .send()
            .await
            .map_err(|e| format!("KMS Decrypt failed: {}", describe(&e)))?;
        let plaintext = out.plaintext().ok_or("KMS Decrypt answered no plaintext")?;
        Ok(String::from_utf8(plaintext.as_ref().to_vec())?)
    }
}

/// Sealing with AES-256-GCM under a local key (local runs and tests): a random 96-bit nonce per
/// value, the context as associated data.
#[derive(Clone)]
pub struct LocalSealer {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for LocalSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LocalSealer([REDACTED])")
    }
}

/// The committed development sealing key (base64 of 32 bytes): public, for local runs only, like
/// the development signing key. A deployment seals with KMS instead.
pub const DEVELOPMENT_SEALING_KEY: &str = "ZGV2ZWxvcG1lbnQtc2VhbGluZy1rZXktMzItYnl0ZXM=";

impl LocalSealer {
    /// The environment variable holding a local key (base64 of 32 bytes).
    pub const VARIABLE: &'static str = "LOCAL_SEALING_KEY";

    /// A sealer with `key`, base64 of 32 bytes.
    ///
    /// Errors: not base64 of exactly 32 bytes.
    pub fn from_base64(key: &str) -> Result<Self, String> {
        let bytes = STANDARD
            .decode(key.trim())
            .map_err(|e| format!("{}: not base64 ({e})", Self::VARIABLE))?;
        let cipher = Aes256Gcm::new_from_slice(&bytes)
            .map_err(|_| format!("{}: must be 32 bytes, got {}", Self::VARIABLE, bytes.len()))?;
        Ok(Self { cipher })
    }

    /// A sealer with [`DEVELOPMENT_SEALING_KEY`].
    pub fn development() -> Self {
        Self::from_base64(DEVELOPMENT_SEALING_KEY).unwrap_or_else(|_| unreachable_key())
    }
}

/// The committed development key is 32 bytes of base64 (checked by a unit test).
fn unreachable_key() -> LocalSealer {
    LocalSealer {
        cipher: Aes256Gcm::new(&[0u8; 32].into()),
    }
}

fn associated_data(context: &SealContext) -> Vec<u8> {
    serde_json::to_vec(context).unwrap_or_default()
}

#[async_trait]
impl Sealer for LocalSealer {
    async fn seal(&self, plaintext: &str, context: &SealContext) -> Result<SealedSecret, BoxError> {
        let nonce_bytes: [u8; 12] = rand::random();
        let aad = associated_data(context);
        let ciphertext = self
            .cipher
            .encrypt(
                &Nonce::from(nonce_bytes),
                Payload {
                    msg: plaintext.as_bytes(),
                    aad: &aad,
                },
            )
            .map_err(|_| "AES-GCM sealing failed")?;
        let mut sealed = nonce_bytes.to_vec();
        sealed.extend_from_slice(&ciphertext);
        Ok(LOCAL.encode(&sealed))
    }

    async fn open(&self, sealed: &SealedSecret, context: &SealContext) -> Result<String, BoxError> {
        let bytes = LOCAL.decode(sealed)?;
        if bytes.len() < 12 {
            return Err("the sealed value is too short".into());
        }
        let (nonce, ciphertext) = bytes.split_at(12);
        let nonce: [u8; 12] = nonce.try_into()?;
        let aad = associated_data(context);
        let plaintext = self
            .cipher
            .decrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| "the sealed value does not open with this key and context")?;
        Ok(String::from_utf8(plaintext)?)
    }
}

/// `crm_error` when the stored token of a connection does not open (BEHAVIOR 7's "CRM request
/// failed" row: nothing was sent).
pub const TOKEN_NOT_OPENED: &str = "CRM request failed: the access token cannot be opened";

/// `crm_error` when an OAuth app's stored client secret or refresh token does not open
/// (nothing was sent).
pub const OAUTH_NOT_OPENED: &str = "CRM request failed: the OAuth app's secrets cannot be opened";

/// An account's CRM connection with its secrets opened, held in memory only.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenCrmConnection {
    /// The account it belongs to (the key of the sync's per-account caches and pace).
    pub account_id: crate::types::ids::AccountId,
    /// The CRM.
    pub provider: crate::model::account::CrmProvider,
    /// The base URL (Salesforce: the org's My Domain URL).
    pub base_url: String,
    /// The credentials in the clear (their `Debug` redacted).
    pub credentials: crate::model::account::CrmCredentials,
    /// What the connection says beyond its URL and credentials.
    pub options: crate::model::account::CrmOptions,
}

/// The CRM connection of `account` with its secrets opened by `sealer`: `None` without a
/// connection; `Err` with [`TOKEN_NOT_OPENED`] or [`OAUTH_NOT_OPENED`] when a secret does not
/// open (logged).
pub async fn open_crm(
    sealer: &dyn Sealer, account: &crate::model::account::Account,
) -> Option<Result<OpenCrmConnection, String>> {
    use crate::model::account::{CrmCredentials, CrmSecret, OAuthApp, SealedCrmCredentials};
    let connection = account.crm.as_ref()?;
    let credentials = match &connection.credentials {
        SealedCrmCredentials::PrivateApp { access_token } => sealer
            .open(access_token, &crm_token_context(account.id))
            .await
            .map(|token| CrmCredentials::PrivateApp(CrmSecret::new(token)))
            .map_err(|e| (e, TOKEN_NOT_OPENED)),
        SealedCrmCredentials::OAuth { oauth } => {
            let secret = sealer
                .open(
                    &oauth.client_secret,
                    &crm_oauth_context(account.id, OAuthSecret::ClientSecret),
                )
                .await;
            let refresh = match &oauth.refresh_token {
                Some(sealed) => sealer
                    .open(
                        sealed,
                        &crm_oauth_context(account.id, OAuthSecret::RefreshToken),
                    )
                    .await
                    .map(Some),
                None => Ok(None),
            };
            match (secret, refresh) {
                (Ok(secret), Ok(refresh)) => Ok(CrmCredentials::OAuth(OAuthApp {
                    client_id: oauth.client_id.clone(),
                    client_secret: CrmSecret::new(secret),
                    refresh_token: refresh.map(CrmSecret::new),
                })),
                (Err(e), _) | (_, Err(e)) => Err((e, OAUTH_NOT_OPENED)),
            }
        }
    };
    Some(match credentials {
        Ok(credentials) => Ok(OpenCrmConnection {
            account_id: account.id,
            provider: connection.provider,
            base_url: connection.base_url.clone(),
            credentials,
            options: connection.options.clone(),
        }),
        Err((error, crm_error)) => {
            tracing::error!(account_id = %account.id, error = %error, "CRM secrets not opened");
            Err(crm_error.to_string())
        }
    })
}

/// The context of an account's CRM access token (a private app's).
pub fn crm_token_context(account_id: crate::types::ids::AccountId) -> SealContext {
    SealContext::from([
        ("purpose", "crm_access_token".to_string()),
        ("account_id", account_id.to_string()),
    ])
}

/// Which secret of an OAuth app a sealed value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthSecret {
    /// The client secret.
    ClientSecret,
    /// The refresh token.
    RefreshToken,
}

/// The context of one of an account's OAuth app secrets: each opens only as what it is.
pub fn crm_oauth_context(
    account_id: crate::types::ids::AccountId, secret: OAuthSecret,
) -> SealContext {
    let purpose = match secret {
        OAuthSecret::ClientSecret => "crm_oauth_client_secret",
        OAuthSecret::RefreshToken => "crm_oauth_refresh_token",
    };
    SealContext::from([
        ("purpose", purpose.to_string()),
        ("account_id", account_id.to_string()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(account: &str) -> SealContext {
        SealContext::from([("purpose", "test".into()), ("account_id", account.into())])
    }

    #[test]
    fn the_development_key_is_32_bytes() {
        assert!(LocalSealer::from_base64(DEVELOPMENT_SEALING_KEY).is_ok());
        assert!(LocalSealer::from_base64("c2hvcnQ=").is_err());
        assert!(LocalSealer::from_base64("not base64!").is_err());
    }

    #[tokio::test]
    async fn a_locally_sealed_value_opens_only_with_its_key_and_context() {
        let sealer = LocalSealer::development();
        let sealed = sealer.seal("pat-na1-secret", &context("a")).await.unwrap();
        assert!(sealed.as_str().starts_with("local:"));
        assert!(!sealed.as_str().contains("pat-na1-secret"));
        let again = sealer.seal("pat-na1-secret", &context("a")).await.unwrap();
        assert_ne!(sealed, again, "a fresh nonce per value");
        assert_eq!(
            sealer.open(&sealed, &context("a")).await.unwrap(),
            "pat-na1-secret"
        );
        assert!(sealer.open(&sealed, &context("b")).await.is_err());
        let other = LocalSealer::from_base64(&STANDARD.encode([7u8; 32])).unwrap();
        assert!(other.open(&sealed, &context("a")).await.is_err());
        let tampered = SealedSecret::new(format!("{}A", sealed.as_str()));
        assert!(sealer.open(&tampered, &context("a")).await.is_err());
        assert!(sealer
            .open(&SealedSecret::new("kms:AAAA"), &context("a"))
            .await
            .is_err());
    }
}
