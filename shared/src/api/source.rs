//! Where a request came from (BEHAVIOR 1: failed client authentications are counted per source
//! address): API Gateway's `requestContext.http.sourceIp` in Lambda, the listener's peer address
//! (`ConnectInfo`) locally. Never a request header: `X-Forwarded-For` is written by the client.

use crate::auth::attempts::SourceAddress;
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::Extensions;
use std::convert::Infallible;
use std::net::SocketAddr;

/// The source of a request ([`source_of`]); never fails (an in-process call is
/// [`SourceAddress::unknown`]).
#[derive(Debug, Clone)]
pub struct Source(pub SourceAddress);

impl<S: Send + Sync> FromRequestParts<S> for Source {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Infallible> {
        Ok(Source(source_of(&parts.extensions)))
    }
}

/// The source address of a request from its extensions: API Gateway's source IP (Lambda), else
/// the peer of the local server's listener, else unknown.
pub fn source_of(extensions: &Extensions) -> SourceAddress {
    use lambda_http::request::RequestContext;
    #[allow(unreachable_patterns)]
    if let Some(ip) = extensions
        .get::<RequestContext>()
        .and_then(|context| match context {
            RequestContext::ApiGatewayV2(context) => context.http.source_ip.as_deref(),
            _ => None,
        })
    {
        return SourceAddress::parse(ip);
    }
    match extensions.get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(peer)) => SourceAddress::from_ip(peer.ip()),
        None => SourceAddress::unknown(),
    }
}
