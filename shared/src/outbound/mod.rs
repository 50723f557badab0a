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

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// Who may be called: production's strict rules, or those of a local run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutboundPolicy {
    /// Also allows `http` URLs and loopback hosts (local runs and tests only).
    pub allow_insecure_local: bool,
}

impl OutboundPolicy {
    /// The environment variable of the operator setting (`true` or `false`, default `false`).
    pub const VARIABLE: &'static str = "ALLOW_INSECURE_OUTBOUND";

    /// Production: `https` only, no loopback.
    pub const STRICT: Self = Self {
        allow_insecure_local: false,
    };

    /// A local run: `http` and loopback hosts allowed too.
    pub const LOCAL: Self = Self {
        allow_insecure_local: true,
    };

    /// The setting from the environment; `unset` when the variable is unset or blank (strict in
    /// Lambda and for provisioning, [`Self::LOCAL`] for the local server).
    ///
    /// Errors: a value other than `true` or `false`.
    pub fn from_env_or(unset: Self) -> Result<Self, String> {
        match std::env::var(Self::VARIABLE) {
            Ok(value) if !value.trim().is_empty() => Self::parse(&value),
            _ => Ok(unset),
        }
    }

    /// The setting `true` or `false` (blank: strict).
    ///
    /// Errors: any other value.
    pub fn parse(value: &str) -> Result<Self, String> {
        match value.trim() {
            "" | "false" => Ok(Self::STRICT),
            "true" => Ok(Self::LOCAL),
            other => Err(format!("{}={other} must be true or false", Self::VARIABLE)),
        }
    }
}

/// The longest URL accepted.
pub const MAX_URL_CHARS: usize = 2048;

/// A URL that may be called under a policy (checked again before every request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundUrl(url::Url);

impl OutboundUrl {
    /// Parses `text` under `policy`.
    ///
    /// Errors: a message saying what is wrong (the caller names the key): not an absolute URL,
    /// another scheme than `https` (or `http` under [`OutboundPolicy::LOCAL`]), user info, no
    /// host, over 2,048 characters, or a host that is an IP literal in a forbidden range.
    pub fn parse(text: &str, policy: OutboundPolicy) -> Result<Self, String> {
        if text.chars().count() > MAX_URL_CHARS {
            return Err(format!("must be at most {MAX_URL_CHARS} characters"));
        }
        let url = url::Url::parse(text).map_err(|e| format!("must be an absolute URL ({e})"))?;
        match url.scheme() {
            "https" => {}
            "http" if policy.allow_insecure_local => {}
            _ => return Err("must be an https URL".into()),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not carry user information".into());
        }
        let ip = match url.host() {
            None => return Err("must have a host".into()),
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            Some(url::Host::Domain(_)) => None,
        };
        if let Some(reason) = ip.and_then(|ip| forbidden_address(ip, policy)) {
            return Err(format!("must not point to a {reason} address"));
        }
        Ok(Self(url))
    }

    /// The URL.
    pub fn as_url(&self) -> &url::Url {
        &self.0
    }

    /// The URL's text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

/// Why `ip` may not be called under `policy` (`loopback`, `private`, `link-local`, ...), or
/// `None` when it may.
pub fn forbidden_address(ip: IpAddr, policy: OutboundPolicy) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4, policy),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return forbidden_v4(v4, policy);
            }
            forbidden_v6(v6, policy)
        }
    }
}

/// An IPv4 range that is not globally reachable and why it is refused: the IANA IPv4
/// Special-Purpose Address Registry's entries whose "Globally Reachable" is false (or N/A), plus
/// multicast (its own registry). Loopback is listed apart: the local policy allows it.
/// `192.0.0.0/24` is refused whole, its two anycast entries (PCP, TURN) included: no webhook
/// receiver or CRM answers there.
const FORBIDDEN_V4: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "unspecified (this network)"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private"),
    (
        Ipv4Addr::new(100, 64, 0, 0),
        10,
        "shared (carrier-grade NAT)",
    ),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link-local"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private"),
    (
        Ipv4Addr::new(192, 0, 0, 0),
        24,
        "reserved (IETF protocol assignments)",
    ),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "reserved (documentation)"),
    (
        Ipv4Addr::new(192, 88, 99, 0),
        24,
        "reserved (6to4 relay anycast)",
    ),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "private"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "reserved (benchmarking)"),
    (
        Ipv4Addr::new(198, 51, 100, 0),
        24,
        "reserved (documentation)",
    ),
    (
        Ipv4Addr::new(203, 0, 113, 0),
        24,
        "reserved (documentation)",
    ),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast or reserved"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "multicast or reserved"),
];

/// An IPv6 range that is not globally reachable: the IANA IPv6 Special-Purpose Address
/// Registry's entries whose "Globally Reachable" is false (or N/A), plus multicast, the
/// deprecated site-local `fec0::/10` (RFC 3879) and the IPv4-compatible (`::/96`, deprecated)
/// and IPv4-translated (`::ffff:0:0:0/96`, RFC 2765) forms. `2001::/23` is refused whole
/// (Teredo included), its few globally reachable anycast and ORCHID entries too. Loopback and
/// the unspecified address are handled apart; IPv4-mapped addresses are judged as their IPv4,
/// NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) by the IPv4 they reach.
const FORBIDDEN_V6: &[(Ipv6Addr, u8, &str)] = &[
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0),
        96,
        "reserved (IPv4-compatible)",
    ),
    (
        Ipv6Addr::new(0, 0, 0, 0, 0xffff, 0, 0, 0),
        96,
        "reserved (IPv4-translated)",
    ),
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        "private (local-use NAT64)",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "reserved (discard-only)",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 1, 0, 0, 0, 0),
        64,
        "reserved (dummy prefix)",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        32,
        "reserved (Teredo tunnel)",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        23,
        "reserved (IETF protocol assignments)",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "reserved (documentation)",
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        "reserved (documentation)",
    ),
    (
        Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0),
        16,
        "reserved (segment routing)",
    ),
    (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, "private"),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link-local"),
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "site-local"),
    (
        Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
        8,
        "multicast or reserved",
    ),
];

/// Whether `ip` lies in `network/prefix` (bits compared as one integer).
fn in_range<const N: usize>(ip: [u8; N], network: [u8; N], prefix: u8) -> bool {
    let mut bits = u32::from(prefix);
    for (a, b) in ip.iter().zip(network.iter()) {
        let take = bits.min(8);
        if take == 0 {
            return true;
        }
        let mask = u8::MAX << (8 - take);
        if a & mask != b & mask {
            return false;
        }
        bits -= take;
    }
    true
}

fn forbidden_v4(ip: Ipv4Addr, policy: OutboundPolicy) -> Option<&'static str> {
    if ip.is_loopback() {
        return (!policy.allow_insecure_local).then_some("loopback");
    }
    FORBIDDEN_V4
        .iter()
        .find(|(network, prefix, _)| in_range(ip.octets(), network.octets(), *prefix))
        .map(|(_, _, reason)| *reason)
}

fn forbidden_v6(ip: Ipv6Addr, policy: OutboundPolicy) -> Option<&'static str> {
    if ip.is_loopback() {
        return (!policy.allow_insecure_local).then_some("loopback");
    }
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if let Some((_, _, reason)) = FORBIDDEN_V6
        .iter()
        .find(|(network, prefix, _)| in_range(ip.octets(), network.octets(), *prefix))
    {
        return Some(reason);
    }
    // A translated or tunnelled IPv4 address is judged as the IPv4 address it reaches.
    embedded_ipv4(ip).and_then(|v4| forbidden_v4(v4, OutboundPolicy::STRICT))
}

/// The IPv4 address an IPv6 address reaches through a translator or a tunnel: the well-known
/// NAT64 prefix `64:ff9b::/96` (RFC 6052: the last 32 bits) and 6to4 `2002::/16` (RFC 3056:
/// bits 16 to 48). Without this, `64:ff9b::7f00:1` or `2002:a9fe:a9fe::` would pass the guard on
/// their way to `127.0.0.1` or `169.254.169.254`.
fn embedded_ipv4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let octets = |high: u16, low: u16| {
        let [a, b] = high.to_be_bytes();
        let [c, d] = low.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(octets(s[6], s[7]))
    } else if s[0] == 0x2002 {
        Some(octets(s[1], s[2]))
    } else {
        None
    }
}

/// How host names are resolved (the system's resolver; tests give fixed answers).
pub trait Lookup: Send + Sync + 'static {
    /// The addresses of `host`.
    fn lookup(&self, host: String) -> Resolving;
}

/// The operating system's resolver (`getaddrinfo` through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(&self, host: String) -> Resolving {
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The address a guarded name resolved to is forbidden.
#[derive(Debug, thiserror::Error)]
#[error("the host resolves to a {0} address")]
pub struct ForbiddenAddress(pub &'static str);

/// A DNS resolver that refuses names resolving to forbidden addresses (any of them).
pub struct GuardedResolver {
    policy: OutboundPolicy,
    lookup: Arc<dyn Lookup>,
}

impl GuardedResolver {
    /// A resolver over `lookup` under `policy`.
    pub fn new(policy: OutboundPolicy, lookup: Arc<dyn Lookup>) -> Self {
        Self { policy, lookup }
    }
}

/// The name could not be resolved (the resolver's own error is its source): marks DNS
/// failures for [`OutboundError::class`].
#[derive(Debug, thiserror::Error)]
#[error("DNS lookup failed")]
pub struct DnsFailure(#[source] Box<dyn std::error::Error + Send + Sync>);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy;
        let resolving = self.lookup.lookup(name.as_str().to_string());
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = resolving
                .await
                .map_err(|e| Box::new(DnsFailure(e)) as Box<dyn std::error::Error + Send + Sync>)?
                .collect();
            if let Some(reason) = addrs.iter().find_map(|a| forbidden_address(a.ip(), policy)) {
                return Err(Box::new(ForbiddenAddress(reason)) as _);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_urls_without_user_info_to_public_hosts_pass_the_strict_policy() {
        let strict = OutboundPolicy::STRICT;
        for ok in [
            "https://api.hubapi.com",
            "https://hooks.example.com/a/b?c=1",
            "https://93.184.216.34/x",
            "https://[2606:2800:220:1::]/",
            // Translated and tunnelled addresses of a public IPv4 address.
            "https://[64:ff9b::5db8:d822]/",
            "https://[2002:5db8:d822::1]/",
        ] {
            assert!(OutboundUrl::parse(ok, strict).is_ok(), "{ok}");
        }
        let refused = [
            ("http://api.hubapi.com", "https"),
            ("ftp://x.example", "https"),
            ("/relative", "absolute"),
            ("https://user:pw@x.example", "user information"),
            ("https://user@x.example", "user information"),
            ("https://127.0.0.1/", "loopback"),
            ("https://[::1]/", "loopback"),
            ("https://10.1.2.3/", "private"),
            ("https://172.16.0.1/", "private"),
            ("https://192.168.1.1/", "private"),
            ("https://169.254.169.254/latest/meta-data", "link-local"),
            ("https://0.0.0.0/", "unspecified"),
            ("https://[::]/", "unspecified"),
            ("https://[fd00::1]/", "private"),
            ("https://[fe80::1]/", "link-local"),
            ("https://[::ffff:169.254.169.254]/", "link-local"),
            ("https://[::ffff:10.0.0.1]/", "private"),
            ("https://100.64.0.1/", "carrier-grade"),
            ("https://224.0.0.1/", "multicast"),
            // NAT64 (RFC 6052) and 6to4 (RFC 3056) addresses are judged by the IPv4 they reach.
            ("https://[64:ff9b::7f00:1]/", "loopback"),
            ("https://[64:ff9b::a9fe:a9fe]/", "link-local"),
            ("https://[64:ff9b::a00:1]/", "private"),
            ("https://[2002:7f00:1::]/", "loopback"),
            ("https://[2002:a9fe:a9fe::1]/", "link-local"),
            ("https://[2002:c0a8:101::]/", "private"),
            ("https://[64:ff9b:1::a00:1]/", "local-use NAT64"),
            ("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo"),
        ];
        for (url, why) in refused {
            let error = OutboundUrl::parse(url, strict).unwrap_err();
            assert!(error.contains(why), "{url}: {error}");
        }
        let long = format!("https://x.example/{}", "a".repeat(MAX_URL_CHARS));
        assert!(OutboundUrl::parse(&long, strict).is_err());
    }

    /// Every range of the IANA IPv4 and IPv6 Special-Purpose Address
    /// Registries that is not globally reachable, and the older non-global ranges they no longer
    /// list (site-local, IPv4-compatible, IPv4-translated), is refused under the strict policy:
    /// its first and last address, and one inside.
    #[test]
    fn every_special_purpose_range_that_is_not_globally_reachable_is_refused() {
        let cases: &[(&str, &[&str])] = &[
            // IPv4 Special-Purpose Address Registry (RFC 6890 and its updates).
            (
                "0.0.0.0/8 this network",
                &["0.0.0.0", "0.1.2.3", "0.255.255.255"],
            ),
            (
                "10.0.0.0/8 private-use",
                &["10.0.0.0", "10.20.30.40", "10.255.255.255"],
            ),
            (
                "100.64.0.0/10 shared address space",
                &["100.64.0.0", "100.100.100.100", "100.127.255.255"],
            ),
            (
                "127.0.0.0/8 loopback",
                &["127.0.0.0", "127.0.0.1", "127.255.255.255"],
            ),
            (
                "169.254.0.0/16 link local",
                &["169.254.0.0", "169.254.169.254", "169.254.255.255"],
            ),
            (
                "172.16.0.0/12 private-use",
                &["172.16.0.0", "172.20.1.1", "172.31.255.255"],
            ),
            (
                "192.0.0.0/24 IETF protocol assignments",
                &[
                    "192.0.0.0",
                    "192.0.0.8",
                    "192.0.0.170",
                    "192.0.0.192",
                    "192.0.0.255",
                ],
            ),
            (
                "192.0.2.0/24 documentation (TEST-NET-1)",
                &["192.0.2.0", "192.0.2.1", "192.0.2.255"],
            ),
            (
                "192.88.99.0/24 6to4 relay anycast (deprecated)",
                &["192.88.99.0", "192.88.99.2", "192.88.99.255"],
            ),
            (
                "192.168.0.0/16 private-use",
                &["192.168.0.0", "192.168.1.1", "192.168.255.255"],
            ),
            (
                "198.18.0.0/15 benchmarking",
                &["198.18.0.0", "198.18.0.1", "198.19.255.255"],
            ),
            (
                "198.51.100.0/24 documentation (TEST-NET-2)",
                &["198.51.100.0", "198.51.100.7", "198.51.100.255"],
            ),
            (
                "203.0.113.0/24 documentation (TEST-NET-3)",
                &["203.0.113.0", "203.0.113.9", "203.0.113.255"],
            ),
            (
                "224.0.0.0/4 multicast",
                &["224.0.0.0", "239.1.2.3", "239.255.255.255"],
            ),
            (
                "240.0.0.0/4 reserved",
                &["240.0.0.0", "250.1.2.3", "255.255.255.254"],
            ),
            ("255.255.255.255/32 limited broadcast", &["255.255.255.255"]),
            // IPv6 Special-Purpose Address Registry.
            ("::1/128 loopback", &["::1"]),
            ("::/128 unspecified", &["::"]),
            (
                "::ffff:0:0/96 IPv4-mapped",
                &["::ffff:0.0.0.0", "::ffff:127.0.0.1", "::ffff:192.0.2.1"],
            ),
            (
                "::ffff:0:0:0/96 IPv4-translated (RFC 2765)",
                &[
                    "::ffff:0:0.0.0.0",
                    "::ffff:0:127.0.0.1",
                    "::ffff:0:93.184.216.34",
                ],
            ),
            (
                "::/96 IPv4-compatible (deprecated)",
                &["::0.0.0.2", "::127.0.0.1", "::93.184.216.34"],
            ),
            (
                "64:ff9b:1::/48 local-use IPv4/IPv6 translation",
                &[
                    "64:ff9b:1::",
                    "64:ff9b:1::5db8:d822",
                    "64:ff9b:1:ffff:ffff:ffff:ffff:ffff",
                ],
            ),
            (
                "100::/64 discard-only",
                &["100::", "100::1", "100::ffff:ffff:ffff:ffff"],
            ),
            (
                "100:0:0:1::/64 dummy prefix",
                &["100:0:0:1::", "100:0:0:1::1"],
            ),
            (
                "2001::/23 IETF protocol assignments",
                &[
                    "2001::",
                    "2001:1::1",
                    "2001:2::1",
                    "2001:10::1",
                    "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff",
                ],
            ),
            (
                "2001::/32 Teredo",
                &["2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2"],
            ),
            (
                "2001:db8::/32 documentation",
                &[
                    "2001:db8::",
                    "2001:db8::1",
                    "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff",
                ],
            ),
            (
                "3fff::/20 documentation",
                &["3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff"],
            ),
            (
                "5f00::/16 segment routing SIDs",
                &["5f00::", "5f00:ffff::1"],
            ),
            (
                "fc00::/7 unique-local",
                &[
                    "fc00::",
                    "fd12:3456::1",
                    "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                ],
            ),
            (
                "fe80::/10 link-local",
                &[
                    "fe80::",
                    "fe80::1",
                    "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                ],
            ),
            (
                "fec0::/10 site-local (deprecated)",
                &[
                    "fec0::",
                    "fec0::1",
                    "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                ],
            ),
            (
                "ff00::/8 multicast",
                &[
                    "ff00::",
                    "ff02::1",
                    "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                ],
            ),
            // Translated and tunnelled addresses of a non-global IPv4 address.
            (
                "64:ff9b::/96 to a non-global IPv4",
                &["64:ff9b::c000:201", "64:ff9b::c612:1"],
            ),
            (
                "2002::/16 6to4 of a non-global IPv4",
                &["2002:c000:201::1", "2002:c612:1::1"],
            ),
        ];
        for (range, addresses) in cases {
            for address in *addresses {
                let ip: IpAddr = address.parse().expect("a test address");
                assert!(
                    forbidden_address(ip, OutboundPolicy::STRICT).is_some(),
                    "{range}: {address} must be refused"
                );
                let url = match ip {
                    IpAddr::V4(_) => format!("https://{address}/hooks"),
                    IpAddr::V6(_) => format!("https://[{address}]/hooks"),
                };
                assert!(
                    OutboundUrl::parse(&url, OutboundPolicy::STRICT).is_err(),
                    "{range}: {url} must be refused"
                );
            }
        }
        // Globally reachable neighbours of those ranges stay allowed.
        for address in [
            "1.1.1.1",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "191.255.255.255",
            "192.0.1.0",
            "192.0.3.0",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "198.51.99.255",
            "198.51.101.0",
            "203.0.112.255",
            "203.0.114.0",
            "223.255.255.255",
            "2606:4700::1111",
            "2001:200::1",
            "2001:db7:ffff::1",
            "2001:db9::1",
            "3ffe:ffff::1",
            "64:ff9b::5db8:d822",
            "2002:5db8:d822::1",
        ] {
            let ip: IpAddr = address.parse().expect("a test address");
            assert_eq!(
                forbidden_address(ip, OutboundPolicy::STRICT),
                None,
                "{address} is globally reachable"
            );
        }
    }

    #[test]
    fn the_local_policy_allows_http_and_loopback_but_not_private_ranges() {
        let local = OutboundPolicy::LOCAL;
        assert!(OutboundUrl::parse("http://127.0.0.1:4010", local).is_ok());
        assert!(OutboundUrl::parse("http://localhost:4010", local).is_ok());
        assert!(OutboundUrl::parse("http://[::1]:8080/", local).is_ok());
        assert!(OutboundUrl::parse("http://10.0.0.1/", local).is_err());
        assert!(OutboundUrl::parse("http://169.254.169.254/", local).is_err());
    }

    #[test]
    fn the_setting_reads_true_or_false() {
        assert_eq!(OutboundPolicy::parse("true"), Ok(OutboundPolicy::LOCAL));
        assert_eq!(OutboundPolicy::parse("false"), Ok(OutboundPolicy::STRICT));
        assert_eq!(OutboundPolicy::parse(""), Ok(OutboundPolicy::STRICT));
        assert!(OutboundPolicy::parse("yes").is_err());
    }
}
