//! Name resolution under the guard ([`GuardedResolver`]): every address a host resolves to is
//! checked at every request, so a name that later points inside the network (DNS rebinding) is
//! refused too.

use super::{forbidden_address, OutboundPolicy};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::SocketAddr;
use std::sync::Arc;

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
