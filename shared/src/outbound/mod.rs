//! The one outbound guard: every request to a URL a customer or an operator supplied (the CRM
//! connection's `base_url`, webhook subscriptions' `url`) goes through [`OutboundClient`].
//!
//! - **The URL** ([`OutboundUrl::parse`], at provisioning or subscription time and again before
//!   every request): absolute, `https`, no user info, at most 2,048 characters, and a host that
//!   is not an IP literal in a forbidden range ([`forbidden_address`]: every range of the IANA
//!   IPv4 and IPv6 Special-Purpose Address Registries that is not globally reachable (loopback,
//!   private, link-local with the instance metadata endpoint 169.254.169.254, unspecified, shared
//!   (carrier-grade NAT), documentation, benchmarking, ...), multicast and broadcast, the
//!   deprecated site-local and IPv4-compatible IPv6 ranges; IPv4-mapped, IPv4-translated, NAT64
//!   and 6to4 IPv6 read as the IPv4 they reach).
//! - **The resolved addresses** ([`GuardedResolver`]): the host is resolved by the client's own
//!   resolver and refused when any address it resolves to is forbidden, at every request, so a
//!   name that later points inside the network (DNS rebinding) is refused too.
//! - **The exchange**: no redirects are followed (a 3xx is an answer), the whole exchange has a
//!   timeout, and at most `max_body` bytes of an answer are read ([`OutboundResponse::body`]).
//! - **The operator setting** ([`OutboundPolicy`], `ALLOW_INSECURE_OUTBOUND`): off in production;
//!   on in the local server and tests, where it also allows `http` and loopback hosts (the fake
//!   CRM and fake webhook receivers listen on 127.0.0.1). Private and link-local ranges stay
//!   forbidden either way.
//!
//! Files: `policy.rs` (the setting), `url.rs` (the URL check), `address.rs` (the forbidden
//! ranges, tested with the URL check in `tests.rs`), `resolve.rs` (the guarded resolver); this
//! file holds the client and its errors.

mod address;
mod policy;
mod resolve;
#[cfg(test)]
mod tests;
mod url;

pub use address::forbidden_address;
pub use policy::OutboundPolicy;
pub use resolve::{DnsFailure, ForbiddenAddress, GuardedResolver, Lookup, SystemLookup};
pub use url::{OutboundUrl, MAX_URL_CHARS};

use std::sync::Arc;
use std::time::Duration;

/// The HTTP client could not be built (a TLS set-up failure; never expected).
#[derive(Debug, thiserror::Error)]
#[error("cannot build the outbound HTTP client: {0}")]
pub struct ClientBuildError(String);

/// Why an outbound request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    /// The guard refused the URL or the address it resolves to.
    #[error("{0}")]
    Refused(String),
    /// No answer within the timeout.
    #[error("request timed out")]
    TimedOut,
    /// A connection or protocol error.
    #[error(transparent)]
    Failed(reqwest::Error),
}

impl OutboundError {
    /// What an account may be told of the failure (a webhook delivery's `last_error`,
    /// BEHAVIOR 13):
    /// a coarse class, `connection refused`, `timed out`, `TLS error`, `DNS error` or
    /// `connection error`, never the addresses, ports, certificate or resolver details that
    /// would let it probe hosts through the service (those go to the operator's log only, with
    /// [`crate::error::ErrorChain`]). A refusal by the guard keeps its reason: it names only the
    /// kind of address the account's own URL or name points to.
    pub fn class(&self) -> String {
        match self {
            Self::Refused(why) => format!("refused: url {why}"),
            Self::TimedOut => "timed out".into(),
            Self::Failed(error) => failure_class(error).into(),
        }
    }
}

/// The class of a connection or protocol failure, from its chain of causes.
fn failure_class(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        return "timed out";
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(c) = cause {
        if c.is::<DnsFailure>() {
            return "DNS error";
        }
        if c.is::<rustls::Error>() {
            return "TLS error";
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return "connection refused",
                std::io::ErrorKind::TimedOut => return "timed out",
                _ => {}
            }
            // A TLS failure reaches hyper as an `io::Error` wrapping (an `io::Error` wrapping)
            // rustls' error; an `io::Error`'s `source` skips the error it wraps, so descend
            // into it.
            if let Some(inner) = io.get_ref() {
                cause = Some(inner);
                continue;
            }
        }
        cause = c.source();
    }
    "connection error"
}

/// How many [`OutboundClient`]s this process built (tests: one per cold start).
#[cfg(any(test, feature = "test-util"))]
pub static CLIENTS_BUILT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// An HTTP client that calls only what the guard allows: one per instance, built at cold start
/// (rustls with the aws-lc-rs provider and the Mozilla roots compiled in).
#[derive(derive_more::Debug, Clone)]
pub struct OutboundClient {
    #[debug(skip)]
    http: reqwest::Client,
    policy: OutboundPolicy,
    max_body: usize,
}

impl OutboundClient {
    /// A client under `policy` whose exchanges time out after `timeout` (connection included)
    /// and read at most `max_body` bytes of an answer.
    ///
    /// Errors: the TLS configuration or the client cannot be built.
    pub fn new(
        policy: OutboundPolicy, timeout: Duration, max_body: usize,
    ) -> Result<Self, ClientBuildError> {
        Self::with_lookup(policy, timeout, max_body, Arc::new(SystemLookup))
    }

    /// [`Self::new`] resolving names with `lookup` (tests).
    ///
    /// Errors: as [`Self::new`].
    pub fn with_lookup(
        policy: OutboundPolicy, timeout: Duration, max_body: usize, lookup: Arc<dyn Lookup>,
    ) -> Result<Self, ClientBuildError> {
        #[cfg(any(test, feature = "test-util"))]
        CLIENTS_BUILT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        ensure_crypto_provider();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientBuildError(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let http = reqwest::Client::builder()
            // Proxy variables (`HTTPS_PROXY`, `ALL_PROXY`) would send the request to the proxy,
            // which the guard never checked, and the proxy would reach the target unguarded.
            .no_proxy()
            .use_preconfigured_tls(tls)
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(GuardedResolver::new(policy, lookup)))
            .user_agent(concat!("account-routing-api/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientBuildError(e.to_string()))?;
        Ok(Self {
            http,
            policy,
            max_body,
        })
    }

    /// The client's policy.
    pub fn policy(&self) -> OutboundPolicy {
        self.policy
    }

    /// Sends `method url` with `headers` and `body` after checking the URL again.
    ///
    /// Errors: [`OutboundError::Refused`] by the guard (nothing sent), a timeout, or a
    /// connection or protocol error.
    pub async fn send(
        &self, method: reqwest::Method, url: &str, headers: reqwest::header::HeaderMap,
        body: Vec<u8>,
    ) -> Result<OutboundResponse, OutboundError> {
        let url = OutboundUrl::parse(url, self.policy).map_err(OutboundError::Refused)?;
        let sent = self
            .http
            .request(method, url.as_url().clone())
            .headers(headers)
            .body(body)
            .send()
            .await;
        match sent {
            Ok(response) => Ok(OutboundResponse {
                response,
                max_body: self.max_body,
            }),
            Err(error) => Err(classify(error)),
        }
    }
}

/// A refusal by the resolver, a timeout, or another failure.
fn classify(error: reqwest::Error) -> OutboundError {
    if error.is_timeout() {
        return OutboundError::TimedOut;
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(c) = cause {
        if let Some(forbidden) = c.downcast_ref::<ForbiddenAddress>() {
            return OutboundError::Refused(format!("must not point to a {} address", forbidden.0));
        }
        cause = c.source();
    }
    OutboundError::Failed(error)
}

/// An answer whose body is read only when asked, and then at most the client's `max_body`.
#[derive(Debug)]
pub struct OutboundResponse {
    response: reqwest::Response,
    max_body: usize,
}

impl OutboundResponse {
    /// The status.
    pub fn status(&self) -> reqwest::StatusCode {
        self.response.status()
    }

    /// The headers.
    pub fn headers(&self) -> &reqwest::header::HeaderMap {
        self.response.headers()
    }

    /// At most the client's `max_body` bytes of the body (the rest is never read).
    ///
    /// Errors: the connection failed or timed out while reading.
    pub async fn body(mut self) -> Result<Vec<u8>, OutboundError> {
        let mut body = Vec::new();
        while body.len() < self.max_body {
            match self.response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = self.max_body - body.len();
                    body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                Ok(None) => break,
                Err(error) => return Err(classify(error)),
            }
        }
        Ok(body)
    }
}

/// Makes aws-lc-rs (the crypto the AWS SDK links) rustls' process-wide default provider when
/// none is set, so every rustls client of the process (reqwest's included, whose own default
/// would be `ring`, not linked here) finds one. Idempotent.
pub fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another installer is fine: a provider is installed either way.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    }
}
