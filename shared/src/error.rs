//! The domain's one error type, and the formatter of error chains for logs.
//!
//! [`DomainError`] says what went wrong in the terms of the contract (invalid input, not found,
//! conflict, ...); it knows nothing of HTTP. `shared::api` maps it, in one place, to the status
//! and the contract's body `{message, error: true, field?}` (spec "Errors" 1). An internal error
//! carries its cause for the logs; its answer never shows it.

use std::fmt;

/// Boxed cause of an internal error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a domain operation refused or failed (spec "Errors" table, BEHAVIOR 2).
#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// The request is invalid: path, query, JSON, a field's value (answered 400).
    #[error("{message}")]
    Invalid {
        /// Human-readable message, e.g. `Invalid property name: foo`.
        message: String,
        /// The offending key, when one field caused it (BEHAVIOR 2).
        field: Option<String>,
    },
    /// Missing, malformed, expired or badly signed bearer token, or no account context (401).
    #[error("{0}")]
    Unauthorized(String),
    /// A valid token without the scope the operation needs (403, RFC 6750 section 3.1
    /// `insufficient_scope`); holds the scope's name.
    #[error("Insufficient scope: requires {0}")]
    InsufficientScope(&'static str),
    /// No such item in the caller's account (404); the message names what, e.g. `User not found`.
    #[error("{0}")]
    NotFound(String),
    /// The target is archived, or a unique key is held by another active item (409).
    #[error("{message}")]
    Conflict {
        /// Human-readable message.
        message: String,
        /// The colliding key, for duplicates.
        field: Option<String>,
    },
    /// A precondition of the request (`If-Match`) does not hold (412, RFC 9110 15.5.13), e.g.
    /// `Draft has changed`.
    #[error("{0}")]
    PreconditionFailed(String),
    /// The operation needs a precondition the request did not send (428, RFC 6585 section 3),
    /// e.g. `If-Match required`.
    #[error("{0}")]
    PreconditionRequired(String),
    /// The request is well formed but cannot be processed as sent (422), e.g. an
    /// `Idempotency-Key` reused with another body.
    #[error("{message}")]
    Unprocessable {
        /// Human-readable message.
        message: String,
        /// The offending key or header, when one caused it.
        field: Option<String>,
    },
    /// The service cannot finish the request now (503, with `Retry-After`): the store kept
    /// refusing (throttled) until the request's deadline, or the function's time ran out before
    /// an answer. Retrying later is safe for an idempotent request; a write may or may not have
    /// been applied (send an `Idempotency-Key`, BEHAVIOR 10).
    #[error("{0}")]
    Unavailable(String),
    /// Anything unexpected (500). The cause is logged, never sent.
    #[error("Internal server error")]
    Internal(#[source] BoxError),
}

impl DomainError {
    /// An invalid request without a field.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::Invalid {
            message: message.into(),
            field: None,
        }
    }

    /// An invalid request caused by one field (or parameter).
    pub fn bad_field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            message: message.into(),
            field: Some(field.into()),
        }
    }

    /// Not found, with a message such as `Contact not found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound(message.into())
    }

    /// A conflict without a field, e.g. `Cannot update an archived object`.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::Conflict {
            message: message.into(),
            field: None,
        }
    }

    /// An internal failure from any error.
    pub fn internal(cause: impl Into<BoxError>) -> Self {
        Self::Internal(cause.into())
    }

    /// The key that caused the error, for invalid requests, conflicts and unprocessable ones.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Invalid { field, .. }
            | Self::Conflict { field, .. }
            | Self::Unprocessable { field, .. } => field.as_deref(),
            _ => None,
        }
    }
}

/// Displays an error followed by each of its sources: `outer: cause: root cause`. The one
/// formatter of error chains for logs.
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'a));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

impl ErrorChain<'_> {
    /// The chain as one line for an answer or a stored error about an outbound request: each
    /// cause once (a cause repeating the one before it is dropped), and the URL an HTTP client
    /// appends to its messages (` for url (...)`) cut off, so a request's URL (a CRM path with a
    /// record id, a receiver's query string) is not repeated into it.
    pub fn without_urls(&self) -> String {
        let mut causes: Vec<String> = Vec::new();
        let mut current: Option<&dyn std::error::Error> = Some(self.0);
        while let Some(cause) = current {
            let mut text = cause.to_string();
            if let Some(at) = text.find(" for url (") {
                text.truncate(at);
            }
            if !text.is_empty() && causes.last() != Some(&text) {
                causes.push(text);
            }
            current = cause.source();
        }
        causes.join(": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("error sending request for url (https://crm.example/objects/1?token=x)")]
    struct Sending(#[source] Repeated);

    #[derive(Debug, thiserror::Error)]
    #[error("connection refused")]
    struct Repeated(#[source] Last);

    #[derive(Debug, thiserror::Error)]
    #[error("connection refused")]
    struct Last;

    #[test]
    fn without_urls_cuts_the_url_and_repeats() {
        let error = Sending(Repeated(Last));
        assert_eq!(
            ErrorChain(&error).without_urls(),
            "error sending request: connection refused"
        );
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn an_error_chain_shows_every_cause_in_order() {
        let error = Outer(std::io::Error::other("disk on fire"));
        assert_eq!(ErrorChain(&error).to_string(), "outer: disk on fire");
        let internal = DomainError::internal(error);
        assert_eq!(
            ErrorChain(&internal).to_string(),
            "Internal server error: outer: disk on fire"
        );
    }

    #[test]
    fn the_field_is_reported_for_invalid_requests_and_conflicts_only() {
        assert_eq!(DomainError::bad_field("email", "x").field(), Some("email"));
        assert_eq!(DomainError::bad_request("x").field(), None);
        assert_eq!(DomainError::not_found("x").field(), None);
    }
}
