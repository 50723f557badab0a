//! The one request-body extractor of every route (the token endpoint included).

use super::error::ApiError;
use crate::error::DomainError;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use serde_json::{Map, Value};

/// Largest accepted request body: 1 MiB (BEHAVIOR 2); larger -> 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The raw request body, at most [`MAX_BODY_BYTES`]. It is read, not yet parsed: a route checks
/// its path and the target's existence first and parses the body after (BEHAVIOR 2's order).
///
/// Rejection: 413 in the contract's error shape; 400 when the body cannot be read.
#[derive(Debug, Clone, Default)]
pub struct Body(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        match axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES).await {
            Ok(bytes) => Ok(Body(bytes)),
            Err(error) => {
                let too_large = std::error::Error::source(&error)
                    .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
                if too_large {
                    Err(ApiError::PayloadTooLarge)
                } else {
                    tracing::warn!(%error, "could not read the request body");
                    Err(DomainError::bad_request("The request body could not be read").into())
                }
            }
        }
    }
}

impl Body {
    /// The body as one JSON object.
    ///
    /// Errors: 400 `Invalid JSON: <parser message>` when it does not parse or is not an object.
    pub fn json_object(&self) -> Result<Map<String, Value>, DomainError> {
        match serde_json::from_slice::<Value>(&self.0) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(DomainError::bad_request(
                "Invalid JSON: the body must be a JSON object",
            )),
            Err(e) => Err(DomainError::bad_request(format!("Invalid JSON: {e}"))),
        }
    }

    /// The body as one JSON object, an empty one (nothing, or only white space) as `{}`: the
    /// body of an operation whose keys are all optional, or that takes none.
    ///
    /// Errors: as [`Self::json_object`], for a body that is not empty.
    pub fn json_object_or_empty(&self) -> Result<Map<String, Value>, DomainError> {
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Ok(Map::new());
        }
        self.json_object()
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_json_object_is_a_body_object() {
        assert!(Body(Bytes::from_static(br#"{"a": 1}"#))
            .json_object()
            .is_ok());
        for raw in [&b"[1]"[..], b"null", b"{", b""] {
            let err = Body(Bytes::copy_from_slice(raw)).json_object().unwrap_err();
            assert!(err.to_string().starts_with("Invalid JSON"), "{err}");
        }
    }

    #[test]
    fn an_empty_body_is_an_empty_object_where_one_is_accepted() {
        for raw in [&b""[..], b" \r\n\t", b"{}", b" {} "] {
            let body = Body(Bytes::copy_from_slice(raw));
            assert_eq!(body.json_object_or_empty().unwrap(), Map::new(), "{raw:?}");
        }
        let body = Body(Bytes::from_static(br#"{"a": 1}"#));
        assert_eq!(body.json_object_or_empty().unwrap()["a"], 1);
        for raw in [&b"[1]"[..], b"null", b"{", b"\x0b"] {
            let err = Body(Bytes::copy_from_slice(raw))
                .json_object_or_empty()
                .unwrap_err();
            assert!(err.to_string().starts_with("Invalid JSON"), "{err}");
        }
    }
}
