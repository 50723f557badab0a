//! The addresses never called ([`forbidden_address`]): every range of the IANA IPv4 and IPv6
//! Special-Purpose Address Registries that is not globally reachable, multicast and broadcast,
//! the deprecated non-global ranges, and IPv6 addresses judged by the IPv4 address they reach.

use super::policy::OutboundPolicy;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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
