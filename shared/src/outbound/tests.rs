//! The guard as a whole against the address registries: every range that is not globally
//! reachable is refused by the address check and by the URL check, and its globally reachable
//! neighbours pass.

use super::*;
use std::net::IpAddr;

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
