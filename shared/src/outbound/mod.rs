//! The one outbound guard: every request to a URL a customer or an operator supplied (the CRM
//! connection's `base_url`, webhook subscriptions' `url`) goes through [`OutboundClient`].
//!
//! - **The URL** ([`OutboundUrl::parse`], at provisioning or subscription time and again before
//!   every request): absolute, `https`, no user info, at most 2,048 characters, and a host that
//!   is not an IP literal in a forbidden range ([`forbidden_address`]: loopback, private,
//!   link-local (the instance metadata endpoint 169.254.169.254 included), unspecified, shared
//!   (carrier-grade NAT), multicast and broadcast, IPv4-mapped IPv6 read as IPv4).
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

fn forbidden_v4(ip: Ipv4Addr, policy: OutboundPolicy) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        return (!policy.allow_insecure_local).then_some("loopback");
    }
    if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        Some("multicast or reserved")
    } else {
        None
    }
}

fn forbidden_v6(ip: Ipv6Addr, policy: OutboundPolicy) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        return (!policy.allow_insecure_local).then_some("loopback");
    }
    if ip.is_unspecified() {
        Some("unspecified")
    } else if first & 0xfe00 == 0xfc00 {
        Some("private")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if first & 0xff00 == 0xff00 {
        Some("multicast or reserved")
    } else if ip.to_ipv4().is_some() && ip.segments()[..6] == [0; 6] {
        // IPv4-compatible (deprecated) `::a.b.c.d`.
        Some("unspecified")
    } else if let Some(v4) = embedded_ipv4(ip) {
        // A translated or tunnelled IPv4 address is judged as the IPv4 address it reaches.
        forbidden_v4(v4, OutboundPolicy::STRICT)
    } else if ip.segments()[..3] == [0x64, 0xff9b, 1] {
        // The local-use NAT64 prefix `64:ff9b:1::/48` (RFC 8215): the network's own translator.
        Some("private (local-use NAT64)")
    } else if ip.segments()[..2] == [0x2001, 0] {
        // Teredo `2001::/32` (RFC 4380): a tunnel whose IPv4 end is obfuscated in the address.
        Some("reserved (Teredo tunnel)")
    } else {
        None
    }
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

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy;
        let resolving = self.lookup.lookup(name.as_str().to_string());
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = resolving.await?.collect();
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
