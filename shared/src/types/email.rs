//! E-mail addresses (spec "Field types": `email` is lowercased; BEHAVIOR 3 and 4).

use super::canonical_domain::CanonicalDomain;
use email_address::{EmailAddress, Options};
use serde::{Deserialize, Serialize};
use std::fmt;
use utoipa::ToSchema;

/// A syntactically valid e-mail address in its canonical form: lowercased, the domain in its
/// IDNA A-label (punycode) form, as the URL standard's host parser gives it and as
/// [`CanonicalDomain`] stores `website_url` hosts. `Ana@Bücher.example` and
/// `ana@xn--bcher-kva.example` are one address, stored and unique as the latter
/// (`docs/decisions.md`, "E-mail addresses").
///
/// Built only by [`Email::parse`] (a stored value deserializes as it was written by it). Display
/// text (`Ana <a@b.com>`) and domain literals are refused; the domain needs a dot (a TLD).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = String, format = Email)]
pub struct Email(String);

impl Email {
    /// Parses an address, trimming surrounding whitespace, lowercasing it and writing its
    /// domain in A-label form (UTS 46 mapping, then punycode: the URL standard's
    /// domain-to-ASCII).
    ///
    /// Errors: `not a valid e-mail address (<reason>)`.
    pub fn parse(input: &str) -> Result<Self, String> {
        let options = Options::default()
            .without_display_text()
            .without_domain_literal()
            .with_required_tld();
        let address = EmailAddress::parse_with_options(input.trim(), options)
            .map_err(|e| format!("not a valid e-mail address ({e})"))?;
        let domain = match url::Host::parse(address.domain()) {
            Ok(url::Host::Domain(ascii)) => ascii,
            _ => return Err("not a valid e-mail address (the domain is not a host name)".into()),
        };
        Ok(Self(format!(
            "{}@{domain}",
            address.local_part().to_lowercase()
        )))
    }

    /// The canonical domain of a stored or given address text, in the form `website_url` is
    /// stored in ([`CanonicalDomain`]: A-labels, no `www.`): what account matching compares
    /// with companies (BEHAVIOR 6 step 10). `None` when `text` is not an address.
    pub fn canonical_domain_of(text: &str) -> Option<CanonicalDomain> {
        Self::parse(text).ok()?.canonical_domain()
    }

    /// The address's domain in the canonical form of `website_url` ([`CanonicalDomain`]):
    /// `ana@www.Bücher.example` -> `xn--bcher-kva.example`.
    pub fn canonical_domain(&self) -> Option<CanonicalDomain> {
        CanonicalDomain::parse(self.domain()).ok()
    }

    /// The address text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The part after the last `@`.
    pub fn domain(&self) -> &str {
        self.0.rsplit_once('@').map_or("", |(_, domain)| domain)
    }

    /// The address text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Email {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Email {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Email {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_lowercased_and_invalid_ones_rejected() {
        let cases = [
            (
                "Ana.Lopez@Northwind.EXAMPLE",
                Some("ana.lopez@northwind.example"),
            ),
            ("  dana@contoso.example ", Some("dana@contoso.example")),
            ("not-an-email", None),
            ("a@b", None),
            ("Ana <ana@x.example>", None),
            ("two@@x.example", None),
            ("", None),
        ];
        for (input, expected) in cases {
            assert_eq!(
                Email::parse(input).ok().as_ref().map(Email::as_str),
                expected,
                "{input}"
            );
        }
    }

    #[test]
    fn the_u_label_and_a_label_forms_of_an_address_are_one_address() {
        let u = Email::parse("Ana@Bücher.Example").unwrap();
        let a = Email::parse("ana@xn--bcher-kva.example").unwrap();
        assert_eq!(u, a);
        assert_eq!(u.as_str(), "ana@xn--bcher-kva.example");
        // UTS 46 mapping: full-width letters are their ASCII selves.
        assert_eq!(
            Email::parse("jo@ＥＸＡＭＰＬＥ.com").unwrap().as_str(),
            "jo@example.com"
        );
    }

    #[test]
    fn an_addresss_canonical_domain_is_the_form_website_urls_are_stored_in() {
        for (email, url) in [
            ("ana@bücher.example", "https://bücher.example"),
            ("ana@www.Bücher.example", "https://www.BÜCHER.example/shop"),
            ("ana@xn--bcher-kva.example", "bücher.example"),
            ("jo@Example.com", "http://www.example.com"),
        ] {
            assert_eq!(
                Email::canonical_domain_of(email),
                Some(CanonicalDomain::parse(url).unwrap()),
                "{email} / {url}"
            );
        }
        assert_eq!(Email::canonical_domain_of("not an address"), None);
    }

    #[test]
    fn the_domain_is_the_part_after_the_last_at() {
        assert_eq!(Email::parse("a@x.example").unwrap().domain(), "x.example");
    }
}
