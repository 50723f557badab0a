//! The addresses never called ([`forbidden_address`]): every range of the IANA IPv4 and IPv6
//! Special-Purpose Address Registries that is not globally reachable, multicast and broadcast,
//! the deprecated non-global ranges, and IPv6 addresses judged by the IPv4 address they reach.

use super::OutboundPolicy;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbound::OutboundUrl;

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
}
