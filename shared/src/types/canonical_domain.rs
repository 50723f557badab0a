//! Canonical web domains: the stored form of `website_url` (BEHAVIOR 3), the key companies are
//! unique by and matched on (BEHAVIOR 6 step 10).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A host in canonical form: lowercased, without scheme, `www.`, port, path, query, fragment or
/// trailing dot; internationalized names in their IDNA (punycode) A-label form, as the URL
/// standard's host parser gives them. `https://www.Example.com/about` -> `example.com`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CanonicalDomain(String);

impl CanonicalDomain {
    /// The canonical host of a website URL. A value without a scheme is read as
    /// `http://<value>`. No public-suffix check.
    ///
    /// Errors: `not a valid URL (<reason>)`, `the URL has no host`.
    pub fn parse(input: &str) -> Result<Self, String> {
        let trimmed = input.trim();
        let with_scheme = if trimmed.contains("://") {
            trimmed.to_string()
        } else {
            format!("http://{trimmed}")
        };
        let url = url::Url::parse(&with_scheme).map_err(|e| format!("not a valid URL ({e})"))?;
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or("the URL has no host")?;
        let host = host.trim_end_matches('.').to_lowercase();
        let host = host.strip_prefix("www.").unwrap_or(&host).to_string();
        if host.is_empty() {
            return Err("the URL has no host".into());
        }
        Ok(Self(host))
    }

    /// The domain text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The domain text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for CanonicalDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn website_urls_are_stored_as_their_canonical_host() {
        let cases = [
            ("https://www.Example.com/about", Some("example.com")),
            ("http://example.com", Some("example.com")),
            ("www.example.com", Some("example.com")),
            ("example.com.", Some("example.com")),
            ("EXAMPLE.com:8080/path?q=1#frag", Some("example.com")),
            ("https://shop.example.co.uk/", Some("shop.example.co.uk")),
            ("https://", None),
            ("http://exa mple.com", None),
        ];
        for (input, expected) in cases {
            assert_eq!(
                CanonicalDomain::parse(input)
                    .ok()
                    .as_ref()
                    .map(CanonicalDomain::as_str),
                expected,
                "{input}"
            );
        }
    }
}
