//! Building the SDK client from the standard AWS environment.
//!
//! Region and credentials come from the standard chain (`AWS_REGION`, `AWS_ACCESS_KEY_ID`, ...,
//! or the Lambda role); `AWS_ENDPOINT_URL`, when set, points the client at a local emulator.
//! The SDK's standard retry mode retries throttling and transient service errors.
//!
//! TLS: rustls with aws-lc-rs (the crypto library jsonwebtoken already uses here, so it is linked
//! once). The roots trusted are the five of Amazon Trust Services, compiled in
//! ([`AWS_TRUST_ANCHORS_PEM`]), rather than the system's store: loading and parsing that
//! store's ~150 certificates cost about 3 ms of every cold start, and AWS service endpoints
//! chain to these roots. When `SSL_CERT_FILE` or `SSL_CERT_DIR` is set (a local emulator
//! behind TLS with a test CA, a TLS-inspecting proxy), the system's store is used instead, as
//! those variables say (`docs/performance.md`, "TLS provider and trust store").

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::Client;
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode, TlsContext, TrustStore};
use aws_smithy_runtime_api::client::http::SharedHttpClient;

/// The root certificates of Amazon Trust Services (PEM), which AWS service endpoints' certificate
/// chains end in: Amazon Root CA 1, 2, 3 and 4 and Starfield Services Root Certificate
/// Authority - G2 (the cross-signing root), as shipped by Debian's `ca-certificates`.
pub const AWS_TRUST_ANCHORS_PEM: &str = include_str!("../../../certs/amazon-trust-services.pem");

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The shared AWS configuration: `BehaviorVersion::latest()`, standard retries, the HTTPS
/// client of [`http_client`], and `AWS_ENDPOINT_URL` when set.
pub async fn sdk_config() -> SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .retry_config(RetryConfig::standard())
        .http_client(http_client());
    if let Some(url) = var("AWS_ENDPOINT_URL") {
        loader = loader.endpoint_url(url);
    }
    loader.load().await
}

/// Whether the system's trust store is asked for: `SSL_CERT_FILE` or `SSL_CERT_DIR` is set.
fn system_roots_requested() -> bool {
    var("SSL_CERT_FILE").is_some() || var("SSL_CERT_DIR").is_some()
}

/// The HTTPS client of every AWS client: rustls on aws-lc-rs, trusting
/// [`AWS_TRUST_ANCHORS_PEM`], or the system's store when `SSL_CERT_FILE` / `SSL_CERT_DIR` is set.
/// Test builds wrap it to record every call (`store::dynamodb::recording`).
pub fn http_client() -> SharedHttpClient {
    let client = https_client();
    #[cfg(any(test, feature = "test-util"))]
    let client = SharedHttpClient::new(super::recording::RecordingHttpClient(client));
    client
}

fn https_client() -> SharedHttpClient {
    let trust = if system_roots_requested() {
        TrustStore::default()
    } else {
        TrustStore::empty().with_pem_certificate(AWS_TRUST_ANCHORS_PEM.as_bytes())
    };
    let builder = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc));
    match TlsContext::builder().with_trust_store(trust).build() {
        Ok(context) => builder.tls_context(context).build_https(),
        // Building a context only stores its parts; should it ever fail, keep the SDK's default.
        Err(_) => builder.build_https(),
    }
}

/// A DynamoDB client over `sdk`.
pub fn client(sdk: &SdkConfig) -> Client {
    Client::new(sdk)
}

/// How long [`warm_up`] waits for its request before giving up (init goes on without it).
pub const WARM_UP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Opens `connections` connections of the client to DynamoDB during init, so that the first
/// request after a cold start does not pay for one: as many concurrent `GetItem`s of a key that
/// never exists (the nil account's item, [`keys::account`](crate::store::dynamodb::keys::account)) in
/// `table`; the first also resolves the credentials and the endpoint and loads the trust store.
/// Every function asks for one; a request that reads concurrently opens the others it needs.
/// The connections stay in the client's pool for the requests that follow
/// (`docs/performance.md`, "Cold start (goal 2) and the connections made during init").
///
/// Never fails: an error or no answer within [`WARM_UP_TIMEOUT`] is logged once as a warning,
/// and the first real request meets (and reports) the problem itself. Returns whether DynamoDB
/// answered every request.
pub async fn warm_up(client: &Client, table: &str, connections: usize) -> bool {
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..connections.max(1) {
        let (client, table) = (client.clone(), table.to_owned());
        requests.spawn(async move { warm_up_request(&client, &table).await });
    }
    let mut failure = None;
    while let Some(answer) = requests.join_next().await {
        match answer {
            Ok(Ok(())) => {}
            Ok(Err(error)) => failure = failure.or(Some(error)),
            Err(join_error) => failure = failure.or(Some(join_error.to_string())),
        }
    }
    match failure {
        None => true,
        Some(error) => {
            tracing::warn!(%error, table, connections, "DynamoDB warm-up failed");
            false
        }
    }
}

/// One warm-up `GetItem` (projection `PK` only), bounded by [`WARM_UP_TIMEOUT`].
async fn warm_up_request(client: &Client, table: &str) -> Result<(), String> {
    use crate::store::dynamodb::keys;
    use crate::types::ids::AccountId;
    let key = keys::account(AccountId::from_uuid(uuid::Uuid::nil()));
    let request = client
        .get_item()
        .table_name(table)
        .set_key(Some(super::items::key_attributes(&key)))
        .projection_expression("#pk")
        .expression_attribute_names("#pk", keys::PK)
        .send();
    match tokio::time::timeout(WARM_UP_TIMEOUT, request).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(aws_sdk_dynamodb::error::DisplayErrorContext(error).to_string()),
        Err(_) => Err(format!(
            "no answer within {} ms",
            WARM_UP_TIMEOUT.as_millis()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::CertificateDer;

    #[test]
    fn the_compiled_in_trust_anchors_are_the_five_amazon_trust_services_roots() {
        // The TLS client parses them at the first connection and panics on a bad PEM: check
        // here that every one parses as a certificate.
        let certificates = CertificateDer::pem_slice_iter(AWS_TRUST_ANCHORS_PEM.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("every PEM block parses");
        assert_eq!(certificates.len(), 5);
        let anchors: Vec<_> = certificates
            .iter()
            .map(|der| webpki::anchor_from_trusted_cert(der).expect("a usable trust anchor"))
            .collect();
        assert_eq!(anchors.len(), 5);
    }
}
