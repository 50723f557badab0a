//! The one JSON response type of every route.

use crate::error::DomainError;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, BytesMut};
use serde::Serialize;

/// Bytes reserved for a JSON body before it is written: a record, a member or an error fits
/// (about 250 to 900 bytes), so most responses are written without growing the buffer; a list
/// grows it as it needs.
pub const RESPONSE_BUFFER_BYTES: usize = 1024;

/// A `200 OK` (or the status beside it in a tuple) with `value` as its `application/json`
/// body, like `axum::Json`, which starts from 128 bytes and grows its buffer as it writes
/// (docs/performance.md). A value that fails to serialise (never expected: every
/// response type serialises infallibly) answers the contract's 500 instead of axum's plain text.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        let mut body = BytesMut::with_capacity(RESPONSE_BUFFER_BYTES).writer();
        match serde_json::to_writer(&mut body, &self.0) {
            Ok(()) => (
                [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
                Bytes::from(body.into_inner()),
            )
                .into_response(),
            Err(error) => DomainError::internal(format!("response body not serialisable: {error}"))
                .into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use serde::ser::Error as _;

    async fn body_of(response: Response) -> (StatusCode, String, String) {
        let status = response.status();
        let content_type = response.headers()[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (
            status,
            content_type,
            String::from_utf8(bytes.to_vec()).unwrap(),
        )
    }

    #[tokio::test]
    async fn a_value_is_its_json_body() {
        let long = "x".repeat(3 * RESPONSE_BUFFER_BYTES);
        let (status, content_type, body) = body_of(
            (
                StatusCode::CREATED,
                Json(serde_json::json!({"a": 1, "b": long})),
            )
                .into_response(),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(content_type, "application/json");
        assert_eq!(body, format!(r#"{{"a":1,"b":"{long}"}}"#));
    }

    struct Unserialisable;

    impl Serialize for Unserialisable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(S::Error::custom("no"))
        }
    }

    #[tokio::test]
    async fn a_value_that_fails_to_serialise_is_the_contracts_500() {
        let (status, content_type, body) = body_of(Json(Unserialisable).into_response()).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(content_type, "application/json");
        let error: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["error"], true, "{body}");
        assert_eq!(error["message"], "Internal server error");
    }
}
