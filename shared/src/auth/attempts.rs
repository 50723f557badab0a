//! The limit on failed client authentications at the token endpoint (BEHAVIOR 1): per
//! `client_id` and source address, after [`MAX_FAILURES`] failures within [`WINDOW`], every
//! further attempt of that pair (a correct secret included) is refused with 429 until the
//! window ends. The count lives in the store ([`crate::store::AuthAttemptStore`]), so every
//! instance of the token function sees the same count.
//!
//! The window is fixed: it opens with a pair's first failure and ends [`WINDOW`] later, and
//! `Retry-After` says how many seconds are left of it. An attempt refused with 429 is not
//! counted (its secret is not even checked), so waiting out the window always lets the pair try
//! again.

use crate::model::auth_attempt::{AttemptKey, FailureWindow};
use chrono::{DateTime, Utc};
use std::net::IpAddr;

/// Failures of one pair after which its attempts are refused until the window ends.
pub const MAX_FAILURES: u32 = 20;

/// The length of a pair's window, from its first failure.
pub const WINDOW: chrono::Duration = chrono::Duration::seconds(60);

/// Where a token request came from, as counted: the IPv4 address, or the /64 prefix of an
/// IPv6 address (one subscriber's network: a client given a /64 could otherwise try from as
/// many addresses as it likes), or [`SourceAddress::UNKNOWN`] when the transport gives none.
/// In Lambda it is API Gateway's `requestContext.http.sourceIp` (the TCP peer API Gateway saw;
/// never a request header such as `X-Forwarded-For`, which the client writes), locally the
/// listener's peer address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourceAddress(String);

impl SourceAddress {
    /// The text of a source the transport did not name (an in-process call).
    pub const UNKNOWN: &'static str = "unknown";

    /// The source of a request from `ip` (an IPv4-mapped IPv6 address counts as its IPv4).
    pub fn from_ip(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self(v4.to_string()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self(v4.to_string()),
                None => {
                    let s = v6.segments();
                    Self(format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3]))
                }
            },
        }
    }

    /// The source named by API Gateway's `sourceIp` text; [`Self::unknown`] when it is not an
    /// IP address.
    pub fn parse(text: &str) -> Self {
        text.trim()
            .parse::<IpAddr>()
            .map_or_else(|_| Self::unknown(), Self::from_ip)
    }

    /// A source the transport did not name.
    pub fn unknown() -> Self {
        Self(Self::UNKNOWN.to_owned())
    }

    /// The source as counted.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The store key of `client_id`'s failures from this source.
    pub fn key(&self, client_id: &str) -> AttemptKey {
        AttemptKey {
            client_id: client_id.to_owned(),
            source: self.0.clone(),
        }
    }
}

/// Seconds until `window` ends when its pair is shut out at `now` (at least 1: the value of
/// `Retry-After`), or `None` while the pair may still try.
pub fn shut_out_for(window: Option<&FailureWindow>, now: DateTime<Utc>) -> Option<u64> {
    let window = window.filter(|w| w.open_at(now) && w.count >= MAX_FAILURES)?;
    let left_ms = (window.ends_at - now).num_milliseconds().max(0);
    let seconds = u64::try_from(left_ms.saturating_add(999) / 1000).unwrap_or(u64::MAX);
    Some(seconds.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 22, 9, 30, 0).unwrap()
    }

    #[test]
    fn ipv4_counts_by_address_and_ipv6_by_its_64_prefix() {
        let cases = [
            ("203.0.113.7", "203.0.113.7"),
            ("::ffff:203.0.113.7", "203.0.113.7"),
            ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
            ("2001:db8:1:2::ffff", "2001:db8:1:2::/64"),
            ("::1", "0:0:0:0::/64"),
            (" 198.51.100.1 ", "198.51.100.1"),
            ("not an address", "unknown"),
            ("203.0.113.7, 10.0.0.1", "unknown"),
            ("", "unknown"),
        ];
        for (text, counted) in cases {
            assert_eq!(SourceAddress::parse(text).as_str(), counted, "{text:?}");
        }
    }

    #[test]
    fn a_pair_is_shut_out_from_its_twentieth_failure_until_its_window_ends() {
        let ends_at = t0() + WINDOW;
        let window = |count| FailureWindow { count, ends_at };
        assert_eq!(shut_out_for(None, t0()), None);
        assert_eq!(shut_out_for(Some(&window(19)), t0()), None);
        assert_eq!(shut_out_for(Some(&window(20)), t0()), Some(60));
        assert_eq!(
            shut_out_for(
                Some(&window(20)),
                t0() + chrono::Duration::milliseconds(100)
            ),
            Some(60),
            "rounded up"
        );
        assert_eq!(
            shut_out_for(
                Some(&window(500)),
                ends_at - chrono::Duration::milliseconds(1)
            ),
            Some(1)
        );
        assert_eq!(shut_out_for(Some(&window(500)), ends_at), None, "ended");
    }
}
