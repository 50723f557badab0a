//! E-mail addresses (spec "Field types": `email` is lowercased; BEHAVIOR 3 and 4).

use email_address::{EmailAddress, Options};
use serde::{Deserialize, Serialize};
use std::fmt;
use utoipa::ToSchema;

/// A syntactically valid e-mail address in its canonical, lowercased form.
///
/// Built only by [`Email::parse`] (a stored value deserializes as it was written by it). Display
/// text (`Ana <a@b.com>`) and domain literals are refused; the domain needs a dot (a TLD).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = String, format = Email)]
pub struct Email(String);

impl Email {
    /// Parses an address, trimming surrounding whitespace and lowercasing it.
    ///
    /// Errors: `not a valid e-mail address (<reason>)`.
    pub fn parse(input: &str) -> Result<Self, String> {
        let options = Options::default()
            .without_display_text()
            .without_domain_literal()
            .with_required_tld();
        EmailAddress::parse_with_options(input.trim(), options)
            .map(|e| Self(e.as_str().to_lowercase()))
            .map_err(|e| format!("not a valid e-mail address ({e})"))
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
    fn the_domain_is_the_part_after_the_last_at() {
        assert_eq!(Email::parse("a@x.example").unwrap().domain(), "x.example");
    }
}
