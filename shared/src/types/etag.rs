//! Entity tags of router drafts (BEHAVIOR 15; RFC 9110 8.8.3 `ETag`, 13.1.1 `If-Match`; Google
//! AIP-154). The header grammar and the strong comparison are the `headers` crate's.

use crate::error::DomainError;
use headers::{Header, HeaderMapExt};
use http::HeaderMap;
use serde::{Deserialize, Serialize};

/// A strong entity tag in its quoted header form, e.g. `"3f2a..."`: a new random one at every
/// draft write, so it changes with every write (RFC 9110 8.8.3: a strong validator).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ETag(String);

impl ETag {
    /// A new tag: a random UUID's 32 hex digits, quoted.
    pub fn new_random() -> Self {
        Self(format!("\"{}\"", uuid::Uuid::new_v4().simple()))
    }

    /// The tag as the `ETag` header carries it (quotes included).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The name of the request header.
pub const IF_MATCH: &str = "If-Match";

/// A request's `If-Match` precondition (RFC 9110 13.1.1): `*`, or a list of entity tags
/// compared strongly. A value that is not of that grammar is a precondition no tag meets
/// (answered like a stale tag: 412), as the `headers` crate reads a list without a valid member.
#[derive(Debug, Clone, PartialEq)]
pub struct IfMatch(Option<headers::IfMatch>);

impl IfMatch {
    /// The request's precondition; `None` without the header.
    ///
    /// Errors: none today (a malformed value is a precondition that never holds); the
    /// `Result` keeps the door open for a stricter reading.
    pub fn from_headers(headers: &HeaderMap) -> Result<Option<Self>, DomainError> {
        if headers.get(headers::IfMatch::name()).is_none() {
            return Ok(None);
        }
        Ok(Some(Self(
            headers.typed_try_get::<headers::IfMatch>().ok().flatten(),
        )))
    }

    /// Whether the precondition holds for the current tag `current` (`None`: there is no draft,
    /// which not even `*` matches).
    pub fn passes(&self, current: Option<&ETag>) -> bool {
        let (Some(if_match), Some(current)) = (&self.0, current) else {
            return false;
        };
        match current.as_str().parse::<headers::ETag>() {
            Ok(tag) => if_match.precondition_passes(&tag),
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn if_match(value: &str) -> Result<Option<IfMatch>, DomainError> {
        let mut headers = HeaderMap::new();
        headers.insert("if-match", HeaderValue::from_str(value).unwrap());
        IfMatch::from_headers(&headers)
    }

    #[test]
    fn every_new_tag_is_a_different_quoted_strong_tag() {
        let (a, b) = (ETag::new_random(), ETag::new_random());
        assert_ne!(a, b);
        assert!(a.as_str().starts_with('"') && a.as_str().ends_with('"'));
        assert_eq!(a.as_str().len(), 34);
        assert!(a.as_str().parse::<headers::ETag>().is_ok());
    }

    #[test]
    fn if_match_passes_for_its_tag_any_tag_of_a_list_or_star_and_never_without_a_draft() {
        let tag = ETag::new_random();
        let other = ETag::new_random();
        let exact = if_match(tag.as_str()).unwrap().unwrap();
        assert!(exact.passes(Some(&tag)));
        assert!(!exact.passes(Some(&other)));
        assert!(!exact.passes(None));
        let list = if_match(&format!("{}, {}", other.as_str(), tag.as_str()))
            .unwrap()
            .unwrap();
        assert!(list.passes(Some(&tag)));
        let star = if_match("*").unwrap().unwrap();
        assert!(star.passes(Some(&other)));
        assert!(
            !star.passes(None),
            "no draft: even * fails (RFC 9110 13.1.1)"
        );
        let weak = if_match(&format!("W/{}", tag.as_str())).unwrap().unwrap();
        assert!(!weak.passes(Some(&tag)), "If-Match compares strongly");
    }

    #[test]
    fn no_header_is_no_precondition_and_a_malformed_one_never_holds() {
        assert_eq!(IfMatch::from_headers(&HeaderMap::new()).unwrap(), None);
        let tag = ETag::new_random();
        for malformed in ["not-quoted", "0", "null"] {
            let read = if_match(malformed).unwrap().unwrap();
            assert!(!read.passes(Some(&tag)), "{malformed}");
        }
    }
}
