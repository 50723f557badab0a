//! The one mapping of errors to HTTP answers (spec "Errors"; BEHAVIOR 2).
//!
//! Every route but the token endpoint answers errors with the body `{message, error: true,
//! field?}` ([`ErrorBody`]). A 500 body is opaque (`Internal server error`) while the whole cause
//! chain is logged. 401 carries `WWW-Authenticate: Bearer`, 403 the RFC 6750 section 3.1
//! `insufficient_scope` challenge, 405 the `Allow` header.

use crate::error::{DomainError, ErrorChain};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// The error body of every route but the token endpoint (spec "Errors" 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[schema(example = json!({"message": "Invalid value for email: not a valid e-mail address", "error": true, "field": "email"}))]
pub struct ErrorBody {
    /// What went wrong, e.g. `Invalid property name: foo`.
    pub message: String,
    /// Always `true`.
    #[schema(value_type = bool)]
    pub error: bool,
    /// The offending or colliding key (400 caused by one field, 409 duplicates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// The longest `message` or `field` of an error answer, in characters: whatever client input a
/// message quotes (an unknown field's name, a rejected value), the answer echoes at most this
/// much of it (BEHAVIOR 12); a longer text is cut and ends with `…`.
pub const MAX_ECHO_CHARS: usize = 256;

/// `text` cut to [`MAX_ECHO_CHARS`] characters (the last one `…` when cut).
fn bounded(text: &str) -> String {
    if text.chars().count() <= MAX_ECHO_CHARS {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(MAX_ECHO_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// An error answer: a domain error, or one of the transport's own.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// What the domain refused (400, 401, 403, 404, 409, 422) or failed at (500).
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// 405: the path exists but not with this method; `allow` lists the methods (RFC 9110 15.5.6).
    #[error("Method not allowed")]
    MethodNotAllowed {
        /// Value of the `Allow` header, e.g. `GET, POST`.
        allow: std::sync::Arc<str>,
    },
    /// 413: the request body is over [`crate::api::MAX_BODY_BYTES`].
    #[error("Request body too large")]
    PayloadTooLarge,
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Domain(e) => match e {
                DomainError::Invalid { .. } => StatusCode::BAD_REQUEST,
                DomainError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
                DomainError::InsufficientScope(_) => StatusCode::FORBIDDEN,
                DomainError::NotFound(_) => StatusCode::NOT_FOUND,
                DomainError::Conflict { .. } => StatusCode::CONFLICT,
                DomainError::Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
                DomainError::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
                DomainError::PreconditionRequired(_) => StatusCode::PRECONDITION_REQUIRED,
                DomainError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                DomainError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            },
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        }
    }

    /// The contract body `{message, error: true, field?}`, each text at most
    /// [`MAX_ECHO_CHARS`] characters (BEHAVIOR 12: an error answer never echoes more of the
    /// client's input, so a stored idempotent answer stays small on both stores).
    pub fn body(&self) -> ErrorBody {
        let field = match self {
            Self::Domain(e) => e.field().map(bounded),
            _ => None,
        };
        ErrorBody {
            message: bounded(&self.to_string()),
            error: true,
            field,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match &self {
            Self::Domain(DomainError::Internal(_)) => {
                tracing::error!(error = %ErrorChain(&self), "internal error");
            }
            Self::Domain(DomainError::Unavailable(why)) => {
                tracing::warn!(reason = %why, "answered 503");
            }
            _ => {}
        }
        let mut response = (self.status(), axum::Json(self.body())).into_response();
        let headers = response.headers_mut();
        match &self {
            Self::Domain(DomainError::Unauthorized(_)) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Self::Domain(DomainError::InsufficientScope(scope)) => {
                if let Ok(v) = HeaderValue::from_str(&format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{scope}\""
                )) {
                    headers.insert(header::WWW_AUTHENTICATE, v);
                }
            }
            Self::MethodNotAllowed { allow } => {
                if let Ok(value) = HeaderValue::from_str(allow) {
                    headers.insert(header::ALLOW, value);
                }
            }
            Self::Domain(DomainError::Unavailable(_)) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        response
    }
}

impl IntoResponse for DomainError {
    fn into_response(self) -> Response {
        ApiError::from(self).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(e: impl Into<ApiError>) -> serde_json::Value {
        serde_json::to_value(e.into().body()).unwrap()
    }

    #[test]
    fn field_errors_carry_the_field_and_the_error_flag() {
        let e = ApiError::from(DomainError::bad_field("email", "Invalid email: x"));
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            body(e),
            json!({"message": "Invalid email: x", "error": true, "field": "email"})
        );
    }

    #[test]
    fn an_error_answer_echoes_at_most_256_characters_of_input() {
        let name = "x".repeat(1_000_000);
        let e = ApiError::from(DomainError::bad_field(
            name.clone(),
            format!("Unknown field: {name}"),
        ));
        let body = e.body();
        assert_eq!(body.message.chars().count(), MAX_ECHO_CHARS);
        assert!(body.message.starts_with("Unknown field: xxx") && body.message.ends_with('…'));
        assert_eq!(body.field.unwrap().chars().count(), MAX_ECHO_CHARS);
        let short = ApiError::from(DomainError::bad_field("email", "Unknown field: é"));
        assert_eq!(
            short.body().message,
            "Unknown field: é",
            "short texts are kept whole"
        );
    }

    #[test]
    fn internal_errors_never_leak_their_cause() {
        let e = ApiError::from(DomainError::internal("disk on fire"));
        assert_eq!(e.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body(e),
            json!({"message": "Internal server error", "error": true})
        );
    }

    #[test]
    fn each_domain_error_has_its_status() {
        let cases = [
            (DomainError::bad_request("x"), 400),
            (DomainError::Unauthorized("x".into()), 401),
            (DomainError::InsufficientScope("service-api/read"), 403),
            (DomainError::not_found("x"), 404),
            (DomainError::conflict("x"), 409),
            (DomainError::PreconditionFailed("x".into()), 412),
            (DomainError::PreconditionRequired("x".into()), 428),
            (DomainError::Unavailable("x".into()), 503),
            (
                DomainError::Unprocessable {
                    message: "x".into(),
                    field: None,
                },
                422,
            ),
        ];
        for (error, status) in cases {
            assert_eq!(ApiError::from(error).status().as_u16(), status);
        }
    }

    #[test]
    fn insufficient_scope_is_403_naming_the_scope() {
        let e = ApiError::from(DomainError::InsufficientScope("service-api/read"));
        assert_eq!(e.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            body(e)["message"],
            "Insufficient scope: requires service-api/read"
        );
    }
}
