//! A dispatch request: the body of `POST /dispatch/router` or of a queue message (spec
//! "Dispatch"; BEHAVIOR 6 step 1 and "Queue path").

use crate::error::DomainError;
use crate::types::ids::AccountId;
use serde_json::Value;
use utoipa::ToSchema;

/// The 400 message of a dispatch without `router_id` or `object_id` (spec "Dispatch").
pub const INVALID_EVENT: &str = "Invalid event: require router_id and object_id";

/// The longest `router_id` / `object_id` (characters, after trimming) taken; a longer one is
/// answered like a missing one (BEHAVIOR 12) and recorded nowhere.
pub const MAX_ID_CHARS: usize = 256;

/// A parsed dispatch request. The ids are kept as sent (trimmed): a `router_id` or `object_id`
/// that is not a UUID simply finds nothing (BEHAVIOR 6).
#[derive(Debug, Clone, PartialEq, Eq, ToSchema)]
#[schema(example = json!({"router_id": "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45", "object_id": "01936b2a-7c00-7a00-8000-000000000002"}))]
pub struct DispatchRequest {
    /// The router to run (a UUID; another value finds no router).
    #[schema(
        max_length = 256,
        pattern = "[^\\u0009-\\u000d \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub router_id: String,
    /// The record (of the router's object type) to assign (a UUID; another value finds none).
    #[schema(
        max_length = 256,
        pattern = "[^\\u0009-\\u000d \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub object_id: String,
    /// Queue messages only: the account the sender expects the router to belong to.
    #[schema(ignore)]
    pub account_id: Option<String>,
}

impl DispatchRequest {
    /// Parses a body `{router_id, object_id, account_id?}`.
    ///
    /// Errors: 400 [`INVALID_EVENT`] when the body is not a JSON object or either id is
    /// missing, `null`, empty, not a string, or longer than [`MAX_ID_CHARS`] (BEHAVIOR 12; an
    /// `account_id` too).
    pub fn parse(body: &[u8]) -> Result<Self, DomainError> {
        let invalid = || DomainError::bad_request(INVALID_EVENT);
        let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
            return Err(invalid());
        };
        let text = |key: &str| match map.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
            _ => None,
        };
        let bounded = |id: String| (id.chars().count() <= MAX_ID_CHARS).then_some(id);
        Ok(Self {
            router_id: text("router_id").and_then(bounded).ok_or_else(invalid)?,
            object_id: text("object_id").and_then(bounded).ok_or_else(invalid)?,
            account_id: match text("account_id") {
                Some(id) => Some(bounded(id).ok_or_else(invalid)?),
                None => None,
            },
        })
    }
}

/// The body of `POST /dispatch/router/explain`: a dispatch request, and optionally the
/// configuration to explain (BEHAVIOR 9). Only describes it: [`DispatchRequest::parse`] and
/// [`explained_revision`] read it.
#[derive(ToSchema)]
#[schema(example = json!({"router_id": "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45", "object_id": "01936b2a-7c00-7a00-8000-000000000002", "revision": 1}))]
#[allow(dead_code)]
pub struct ExplainRequest {
    /// The router to run (a UUID; another value finds no router).
    #[schema(
        max_length = 256,
        pattern = "[^\\u0009-\\u000d \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    router_id: String,
    /// The record (of the router's object type) to explain (a UUID; another value finds none).
    #[schema(
        max_length = 256,
        pattern = "[^\\u0009-\\u000d \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    object_id: String,
    /// The configuration to explain instead of the live one, whatever the router's publication
    /// state: `"draft"` or a revision number.
    #[schema(nullable = false)]
    revision: Option<crate::routers::RevisionChoice>,
}

/// The body key `revision` of an explain (BEHAVIOR 9), read from a body that
/// [`DispatchRequest::parse`] accepted: `None` when absent.
///
/// Errors: 400 naming `revision` for a value that is neither `"draft"` nor a positive integer.
pub fn explained_revision(
    body: &[u8],
) -> Result<Option<crate::routers::RevisionChoice>, DomainError> {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
        return Err(DomainError::bad_request(INVALID_EVENT));
    };
    map.get(crate::routers::revision::REVISION_KEY)
        .map(crate::routers::RevisionChoice::parse)
        .transpose()
}

/// Whose account a dispatch runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountContext {
    /// The account of the bearer token (HTTP route).
    Token(AccountId),
    /// The router's own account (queue path: router ids are unique across the store).
    RouterOwner,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ids_must_be_non_empty_strings() {
        let ok = DispatchRequest::parse(br#"{"router_id": " r ", "object_id": "o"}"#).unwrap();
        assert_eq!((ok.router_id.as_str(), ok.object_id.as_str()), ("r", "o"));
        for body in [
            &b"not json"[..],
            br#"[]"#,
            br#"{"router_id": "r"}"#,
            br#"{"router_id": "r", "object_id": ""}"#,
            br#"{"router_id": "r", "object_id": null}"#,
            br#"{"router_id": 1, "object_id": "o"}"#,
        ] {
            let err = DispatchRequest::parse(body).unwrap_err();
            assert_eq!(err.to_string(), INVALID_EVENT);
        }
        let at_limit = "é".repeat(MAX_ID_CHARS);
        let body = serde_json::json!({"router_id": "r", "object_id": at_limit});
        assert!(DispatchRequest::parse(body.to_string().as_bytes()).is_ok());
        for body in [
            serde_json::json!({"router_id": "r", "object_id": "x".repeat(MAX_ID_CHARS + 1)}),
            serde_json::json!({"router_id": "x".repeat(MAX_ID_CHARS + 1), "object_id": "o"}),
            serde_json::json!({"router_id": "r", "object_id": "o", "account_id": "a".repeat(1_000)}),
        ] {
            let body = body.to_string();
            let body = body.as_bytes();
            let err = DispatchRequest::parse(body).unwrap_err();
            assert_eq!(err.to_string(), INVALID_EVENT);
        }
    }
}
