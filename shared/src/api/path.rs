//! The path-id extractor of item routes (BEHAVIOR 2 and 12).
//!
//! axum's `Path` rejects a segment whose percent-decoding is not UTF-8 (`/contacts/%FF`) with a
//! plain-text 400, before the handler runs, so before its 401 and 403 and outside the contract's
//! error shape. [`PathId`] never rejects such a segment: it decodes it lossily (each invalid
//! sequence becomes U+FFFD), which no id type parses, so the handler answers it exactly like any
//! other malformed id, after authentication and scope: 404 for a record id (it names no record,
//! BEHAVIOR 3), 400 naming the parameter for a user or router id.

use super::error::ApiError;
use crate::error::DomainError;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, MatchedPath, Path, RawPathParams};
use axum::http::request::Parts;
use percent_encoding::percent_decode_str;

/// The one path parameter of an item route (`/contacts/{contactId}`), percent-decoded; invalid
/// UTF-8 is replaced by U+FFFD instead of being refused (module docs). Every handler of a route
/// with an id takes it instead of `Path<String>`; the id's own `parse` then decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(id)) => Ok(Self(id)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => match e.into_kind() {
                ErrorKind::InvalidUtf8InPathParam { key } => Ok(Self(
                    lossy_segment(parts, &key).unwrap_or_else(|| "\u{FFFD}".into()),
                )),
                // A route with no parameter or several: a wiring mistake, not the client's.
                other => Err(DomainError::internal(format!(
                    "path id extractor on a route it does not fit: {other}"
                ))
                .into()),
            },
            Err(other) => Err(DomainError::internal(format!(
                "path id extractor on a route it does not fit: {other}"
            ))
            .into()),
        }
    }
}

/// Every path parameter of a route (`/webhooks/{webhookId}/deliveries/{deliveryId}`), in order,
/// each percent-decoded with invalid UTF-8 replaced by U+FFFD, like [`PathId`]: never a
/// rejection, so the handler's own parse answers a malformed id after 401 and 403.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathIds(pub Vec<String>);

impl<S: Send + Sync> FromRequestParts<S> for PathIds {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        // axum has percent-decoded the values; it refuses them all when one is not UTF-8, and
        // then every segment is decoded here, lossily, from the matched template.
        if let Ok(raw) = RawPathParams::from_request_parts(parts, state).await {
            return Ok(Self(raw.iter().map(|(_, v)| v.to_string()).collect()));
        }
        let template = parts
            .extensions
            .get::<MatchedPath>()
            .map(|m| m.as_str().to_string())
            .unwrap_or_default();
        let segments: Vec<&str> = parts.uri.path().split('/').collect();
        Ok(Self(
            template
                .split('/')
                .enumerate()
                .filter(|(_, s)| s.starts_with('{') && s.ends_with('}'))
                .map(|(i, _)| {
                    let raw = segments.get(i).copied().unwrap_or_default();
                    percent_decode_str(raw).decode_utf8_lossy().into_owned()
                })
                .collect(),
        ))
    }
}

impl PathIds {
    /// The `index`th parameter, or an empty string (a route with fewer: a wiring mistake that
    /// no id parses).
    pub fn get(&self, index: usize) -> &str {
        self.0.get(index).map(String::as_str).unwrap_or_default()
    }
}

/// The raw segment of the request path that the route's `{key}` matched, percent-decoded with
/// invalid UTF-8 replaced by U+FFFD. `None` when the matched route and the path do not line up
/// segment for segment (they always do for routes of `{param}` segments).
fn lossy_segment(parts: &Parts, key: &str) -> Option<String> {
    let template = parts.extensions.get::<MatchedPath>()?.as_str();
    let wanted = format!("{{{key}}}");
    let index = template.split('/').position(|s| s == wanted)?;
    let raw = parts.uri.path().split('/').nth(index)?;
    Some(percent_decode_str(raw).decode_utf8_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::get;
    use axum::Router;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn echo(uri: &str) -> (StatusCode, String) {
        let app = Router::new().route(
            "/things/{thingId}",
            get(|PathId(id): PathId| async move { id }),
        );
        let response = app
            .oneshot(Request::get(uri).body(Body::empty()).expect("a request"))
            .await
            .expect("infallible");
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        (status, String::from_utf8(bytes.to_vec()).expect("UTF-8"))
    }

    #[tokio::test]
    async fn valid_ids_are_percent_decoded_and_invalid_utf8_becomes_replacement_characters() {
        let cases = [
            ("/things/abc", "abc"),
            ("/things/a%20b", "a b"),
            ("/things/caf%C3%A9", "café"),
            ("/things/%FF", "\u{FFFD}"),
            ("/things/ab%E2%82", "ab\u{FFFD}"),
            ("/things/%C0%AFx", "\u{FFFD}\u{FFFD}x"),
            ("/things/%ZZ", "%ZZ"),
        ];
        for (uri, id) in cases {
            assert_eq!(echo(uri).await, (StatusCode::OK, id.to_owned()), "{uri}");
        }
    }

    #[tokio::test]
    async fn a_route_with_two_parameters_is_a_wiring_mistake_answered_500() {
        let app = Router::new().route("/a/{x}/{y}", get(|PathId(id): PathId| async move { id }));
        let response = app
            .oneshot(
                Request::get("/a/1/2")
                    .body(Body::empty())
                    .expect("a request"),
            )
            .await
            .expect("infallible");
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
