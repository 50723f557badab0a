//! The one error type of the API and its mapping to status and body.
//!
//! Body for every route but the token endpoint (spec "Errors" 1): `{message, error: true, field?}`.
//! A 500 body is opaque (`Internal server error`); the whole cause chain is logged instead.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Boxed cause of an internal error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error answer of the API.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: invalid path, query, JSON or field (spec "Errors" table).
    #[error("{message}")]
    BadRequest {
        /// Human-readable message, e.g. `Invalid property name: foo`.
        message: String,
        /// The offending key, when one field caused it (BEHAVIOR 2).
        field: Option<String>,
    },
    /// 401: missing, malformed, expired or badly signed bearer token, or no account context.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: a valid token without the route's scope (RFC 6750 section 3.1 `insufficient_scope`).
    #[error("Insufficient scope: requires {0}")]
    InsufficientScope(&'static str),
    /// 404: no such route, or no such item in the caller's account.
    #[error("{0}")]
    NotFound(String),
    /// 405: the path exists but not with this method; `allow` lists the methods (RFC 9110 15.5.6).
    #[error("Method not allowed")]
    MethodNotAllowed {
        /// Value of the `Allow` header, e.g. `GET, POST`.
        allow: &'static str,
    },
    /// 409: archived target or duplicate active unique key.
    #[error("{message}")]
    Conflict {
        /// Human-readable message.
        message: String,
        /// The colliding key for duplicates.
        field: Option<String>,
    },
    /// 413: request body over the limit.
    #[error("Request body too large")]
    PayloadTooLarge,
    /// 500: anything unexpected. The cause is logged, never sent.
    #[error("Internal server error")]
    Internal(#[source] BoxError),
}

impl ApiError {
    /// 400 without a field.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::BadRequest {
            message: message.into(),
            field: None,
        }
    }

    /// 400 caused by one field.
    pub fn bad_field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::BadRequest {
            message: message.into(),
            field: Some(field.into()),
        }
    }

    /// 404 with a message.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound(message.into())
    }

    /// 500 from any error.
    pub fn internal(cause: impl Into<BoxError>) -> Self {
        Self::Internal(cause.into())
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest { .. } => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::InsufficientScope(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The contract body `{message, error: true, field?}`.
    pub fn body(&self) -> serde_json::Value {
        let mut body = json!({ "message": self.to_string(), "error": true });
        if let Self::BadRequest { field: Some(f), .. } | Self::Conflict { field: Some(f), .. } =
            self
        {
            body["field"] = json!(f);
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Self::Internal(cause) = &self {
            let mut chain = cause.to_string();
            let mut source = std::error::Error::source(cause.as_ref());
            while let Some(s) = source {
                chain.push_str(": ");
                chain.push_str(&s.to_string());
                source = s.source();
            }
            tracing::error!(error = %chain, "internal error");
        }
        let status = self.status();
        let mut response = (status, axum::Json(self.body())).into_response();
        let headers = response.headers_mut();
        match &self {
            Self::Unauthorized(_) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Self::InsufficientScope(scope) => {
                if let Ok(v) = HeaderValue::from_str(&format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{scope}\""
                )) {
                    headers.insert(header::WWW_AUTHENTICATE, v);
                }
            }
            Self::MethodNotAllowed { allow } => {
                headers.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            _ => {}
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_errors_carry_the_field_and_the_error_flag() {
        let e = ApiError::bad_field("email", "Invalid email: x");
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            e.body(),
            json!({"message": "Invalid email: x", "error": true, "field": "email"})
        );
    }

    #[test]
    fn internal_errors_never_leak_their_cause() {
        let e = ApiError::internal("disk on fire");
        assert_eq!(
            e.body(),
            json!({"message": "Internal server error", "error": true})
        );
    }

    #[test]
    fn insufficient_scope_is_403_naming_the_scope() {
        let e = ApiError::InsufficientScope("service-api/read");
        assert_eq!(e.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            e.body()["message"],
            "Insufficient scope: requires service-api/read"
        );
    }
}
