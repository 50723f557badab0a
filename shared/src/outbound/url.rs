//! The URL check ([`OutboundUrl`]), run at provisioning or subscription time and again before
//! every request.

use super::address::forbidden_address;
use super::policy::OutboundPolicy;
use std::net::IpAddr;

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
}
