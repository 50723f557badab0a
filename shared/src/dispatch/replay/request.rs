//! The body of `POST /routers/{id}/simulate` (BEHAVIOR 16), `{revision?, from?, to?}`: its
//! parsing into the configuration replayed and the window ([`SimulateRequest`]), and its
//! description for the OpenAPI document ([`SimulateBody`]).

use super::bounds::DEFAULT_WINDOW_DAYS;
use crate::error::DomainError;
use crate::history::stats::{parse_instant, StatsWindow, WindowError, MAX_WINDOW_DAYS};
use crate::routers::revision::{RevisionChoice, REVISION_KEY};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// The body of `POST /routers/{id}/simulate`: `{revision?, from?, to?}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimulateRequest {
    /// The configuration replayed (default: the draft).
    pub revision: RevisionChoice,
    /// The window: `to` defaults to now, `from` to `to` minus 30 days; a `to` in the future is
    /// accepted (BEHAVIOR 16).
    pub window: StatsWindow,
}

impl SimulateRequest {
    /// Parses the body (an empty body is `{}`) at `now`.
    ///
    /// Errors: 400 naming the key: `revision` not `"draft"` nor a positive integer; `from` /
    /// `to` not an RFC 3339 instant (a string); `from` not before `to` (naming `from`); a
    /// window over 93 days (naming `to`); any other key (`Unknown field: <key>`).
    pub fn parse(body: &Map<String, Value>, now: DateTime<Utc>) -> Result<Self, DomainError> {
        if let Some(key) = body
            .keys()
            .find(|k| ![REVISION_KEY, "from", "to"].contains(&k.as_str()))
        {
            return Err(DomainError::bad_field(
                key.clone(),
                format!("Unknown field: {key}"),
            ));
        }
        let revision = match body.get(REVISION_KEY) {
            Some(value) => RevisionChoice::parse(value)?,
            None => RevisionChoice::Draft,
        };
        let instant = |name: &str| -> Result<Option<DateTime<Utc>>, DomainError> {
            let Some(value) = body.get(name) else {
                return Ok(None);
            };
            value.as_str().and_then(parse_instant).map(Some).ok_or_else(|| {
                DomainError::bad_field(
                    name,
                    format!("Invalid {name}: must be an RFC 3339 instant, e.g. 2026-11-01T00:00:00Z"),
                )
            })
        };
        let to = instant("to")?.unwrap_or(now);
        let from = match instant("from")? {
            Some(from) => from,
            None => to - chrono::Duration::days(DEFAULT_WINDOW_DAYS),
        };
        let window = StatsWindow::new(from, to).map_err(|error| match error {
            WindowError::NotBefore => {
                DomainError::bad_field("from", "Invalid from: must be before to")
            }
            WindowError::TooLong => DomainError::bad_field(
                "to",
                format!("Invalid to: the window may be at most {MAX_WINDOW_DAYS} days"),
            ),
        })?;
        Ok(Self { revision, window })
    }
}

/// The body of `POST /routers/{id}/simulate` (BEHAVIOR 16): every key optional; an unknown
/// key is 400. Only describes it: the handler reads it with `SimulateRequest::parse`.
#[derive(ToSchema, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[schema(
    example = json!({"revision": 1, "from": "2026-10-23T09:30:00Z", "to": "2026-11-22T09:30:00Z"})
)]
#[allow(dead_code)]
pub struct SimulateBody {
    /// The configuration to replay: `"draft"` (default) or a revision number.
    #[schema(nullable = false)]
    revision: Option<RevisionChoice>,
    /// Start of the window (RFC 3339; default `to` minus 30 days); before `to`.
    #[schema(value_type = String, format = DateTime, required = false)]
    from: Option<String>,
    /// End of the window, excluded (RFC 3339; default now; a future instant is accepted); at
    /// most 93 days after `from`.
    #[schema(value_type = String, format = DateTime, required = false)]
    to: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    fn parse(body: Value) -> Result<SimulateRequest, DomainError> {
        let body = body.as_object().cloned().unwrap();
        SimulateRequest::parse(&body, at("2026-11-22T09:30:00Z"))
    }

    #[test]
    fn the_defaults_are_the_draft_over_the_30_days_before_now() {
        let r = parse(json!({})).unwrap();
        assert_eq!(r.revision, RevisionChoice::Draft);
        assert_eq!(r.window.to, at("2026-11-22T09:30:00Z"));
        assert_eq!(r.window.from, at("2026-10-23T09:30:00Z"));
        let only_to = parse(json!({"to": "2026-11-01T00:00:00+01:00", "revision": 2})).unwrap();
        assert_eq!(only_to.revision, RevisionChoice::Number(2));
        assert_eq!(only_to.window.from, at("2026-10-01T23:00:00Z"));
        let future = parse(json!({"from": "2026-11-20T00:00:00Z", "to": "2027-01-01T00:00:00Z"}));
        assert!(future.is_ok(), "a future to is accepted");
    }

    #[test]
    fn bad_windows_and_keys_name_the_key() {
        let cases = [
            (json!({"from": "yesterday"}), "from"),
            (json!({"to": 5}), "to"),
            (json!({"from": null}), "from"),
            (
                json!({"from": "2026-11-02T00:00:00Z", "to": "2026-11-01T00:00:00Z"}),
                "from",
            ),
            (
                json!({"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T00:00:00Z"}),
                "from",
            ),
            (json!({"from": "2026-12-01T00:00:00Z"}), "from"),
            (
                json!({"from": "2026-01-01T00:00:00Z", "to": "2026-04-04T00:00:01Z"}),
                "to",
            ),
            (json!({"from": "2026-01-01T00:00:00Z"}), "to"),
            (json!({"revision": 0}), "revision"),
            (json!({"revision": "live"}), "revision"),
            (json!({"window": 30}), "window"),
        ];
        for (body, field) in cases {
            let err = parse(body.clone()).unwrap_err();
            assert_eq!(err.field(), Some(field), "{body}");
        }
        let exactly = json!({"from": "2026-01-01T00:00:00Z", "to": "2026-04-04T00:00:00Z"});
        assert!(parse(exactly).is_ok(), "exactly 93 days");
    }
}
