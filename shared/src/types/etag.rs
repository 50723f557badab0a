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

/// The message of a malformed `If-Match` header (400, `field` `If-Match`).
pub const INVALID_IF_MATCH: &str = "Invalid If-Match";

/// A request's `If-Match` precondition (RFC 9110 13.1.1): `*`, or a list of entity tags
/// compared strongly.
#[derive(Debug, Clone, PartialEq)]
pub struct IfMatch(headers::IfMatch);

impl IfMatch {
    /// The request's precondition; `None` without the header.
    ///
    /// Errors: 400 `Invalid If-Match` (`field` `If-Match`) when a value does not follow the
    /// grammar (`*` or a list of quoted entity tags).
    pub fn from_headers(headers: &HeaderMap) -> Result<Option<Self>, DomainError> {
        let values: Vec<&http::HeaderValue> =
            headers.get_all(headers::IfMatch::name()).iter().collect();
        if values.is_empty() {
            return Ok(None);
        }
        // The crate skips list members it cannot read; a malformed member is a 400 here.
        let well_formed = values.iter().all(|v| {
            v.to_str().is_ok_and(|text| {
                text.trim() == "*"
                    || text
                        .split(',')
                        .all(|tag| tag.trim().parse::<headers::ETag>().is_ok())
            })
        });
        if !well_formed {
            return Err(DomainError::bad_field(IF_MATCH, INVALID_IF_MATCH));
        }
        match headers.typed_try_get::<headers::IfMatch>() {
            Ok(Some(if_match)) => Ok(Some(Self(if_match))),
            _ => Err(DomainError::bad_field(IF_MATCH, INVALID_IF_MATCH)),
        }
    }

    /// Whether the precondition holds for the current tag `current` (`None`: there is no draft,
    /// which not even `*` matches).
    pub fn passes(&self, current: Option<&ETag>) -> bool {
        let Some(current) = current else {
            return false;
        };
        match current.as_str().parse::<headers::ETag>() {
            Ok(tag) => self.0.precondition_passes(&tag),
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
    fn no_header_is_no_precondition_and_a_malformed_one_is_a_400_naming_it() {
        assert_eq!(IfMatch::from_headers(&HeaderMap::new()).unwrap(), None);
        let error = if_match("not-quoted").unwrap_err();
        assert_eq!(error.to_string(), INVALID_IF_MATCH);
        assert_eq!(error.field(), Some(IF_MATCH));
    }
}
