//! Query-string parsing (BEHAVIOR 2, 11 and 12): `archived` is `true` or `false`; `limit` an
//! integer 1..=100 (default 10); `offset` an integer 0..=10000 (default 0); `after` a cursor, with
//! `offset` absent or 0; anything else -> 400 naming the parameter. Unknown parameters are
//! ignored. Repeated `properties` values are joined with commas.
//!
//! Names and values are `application/x-www-form-urlencoded` (`+` is a space, `%XX` a byte). A
//! value of a parameter the route reads whose bytes are not UTF-8 is 400 naming the parameter
//! (BEHAVIOR 12), never replaced or dropped; an unknown parameter is ignored whatever its bytes.
//! A `%` not followed by two hex digits is kept as it is (the WHATWG URL rules browsers follow).

use crate::error::DomainError;
use crate::page::cursor::{ListRequest, RequestedStart, INVALID_AFTER};
use crate::page::{DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET};
use percent_encoding::percent_decode_str;

/// Parsed query of a list route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// Raw `properties` value, when given (record lists only).
    pub properties: Option<String>,
    /// `limit`, `offset` or `after`, `archived`.
    pub list: ListRequest,
}

/// The message of an `offset` past [`MAX_OFFSET`] or not a number.
pub const INVALID_OFFSET: &str = "Invalid query parameter offset: must be an integer from 0 to 10000; page further with after (the pagination.next_after of the previous page)";

/// The decoded parameters of a raw query string, in order. Every route that reads its query
/// goes through it, so a value that is not percent-encoded UTF-8 is answered alike everywhere:
/// [`QueryParams::first`] and [`QueryParams::all`] are 400 naming the parameter for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryParams {
    /// (name, value); a value whose bytes are not UTF-8 is `None`. Names are decoded lossily (an
    /// undecodable name is no parameter a route knows).
    pairs: Vec<(String, Option<String>)>,
}

impl QueryParams {
    /// Splits and decodes `raw` (the part after `?`, without it); `None` is an empty query.
    /// Linear in the length of `raw`; never fails (errors surface when a value is read).
    pub fn parse(raw: Option<&str>) -> Self {
        let pairs = raw
            .unwrap_or_default()
            .split('&')
            .filter(|piece| !piece.is_empty())
            .map(|piece| {
                let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
                let name = decode(name)
                    .unwrap_or_else(|bytes| String::from_utf8_lossy(&bytes).into_owned());
                (name, decode(value).ok())
            })
            .collect();
        Self { pairs }
    }

    /// The value of the first occurrence of `name`, if any.
    ///
    /// Errors: 400 `Invalid query parameter <name>: not valid percent-encoded UTF-8` with
    /// `field` = `name` when that value's bytes are not UTF-8.
    pub fn first(&self, name: &str) -> Result<Option<&str>, DomainError> {
        match self.pairs.iter().find(|(k, _)| k == name) {
            None => Ok(None),
            Some((_, Some(value))) => Ok(Some(value)),
            Some((_, None)) => Err(not_utf8(name)),
        }
    }

    /// Every value of `name`, in order.
    ///
    /// Errors: as [`QueryParams::first`], when any of them is not UTF-8.
    pub fn all(&self, name: &str) -> Result<Vec<&str>, DomainError> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_deref().ok_or_else(|| not_utf8(name)))
            .collect()
    }

    /// The `properties` values joined with commas, when there is at least one.
    fn properties(&self) -> Result<Option<String>, DomainError> {
        let values = self.all("properties")?;
        Ok((!values.is_empty()).then(|| values.join(",")))
    }
}

/// Form-urldecodes one name or value: `+` is a space, `%XX` a byte (a `%` without two hex
/// digits is kept). `Err` holds the decoded bytes when they are not UTF-8.
fn decode(text: &str) -> Result<String, Vec<u8>> {
    let bytes: Vec<u8> = percent_decode_str(&text.replace('+', " ")).collect();
    String::from_utf8(bytes).map_err(|e| e.into_bytes())
}

fn not_utf8(name: &str) -> DomainError {
    invalid(name, "not valid percent-encoded UTF-8")
}

impl ListQuery {
    /// Parses the raw query string of a list route.
    ///
    /// Errors: 400 with `field` = the parameter, e.g. `Invalid query parameter limit: must be an
    /// integer from 1 to 100`.
    pub fn parse(raw: Option<&str>) -> Result<Self, DomainError> {
        let params = QueryParams::parse(raw);
        let include_archived = match params.first("archived")? {
            None => false,
            Some("true") => true,
            Some("false") => false,
            Some(_) => return Err(invalid("archived", "must be true or false")),
        };
        let limit = match params.first("limit")? {
            None => DEFAULT_LIMIT,
            Some(v) => v
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| invalid("limit", "must be an integer from 1 to 100"))?,
        };
        let offset = match params.first("offset")? {
            None => 0,
            Some(v) => v
                .parse::<usize>()
                .ok()
                .filter(|n| *n <= MAX_OFFSET)
                .ok_or_else(|| DomainError::bad_field("offset", INVALID_OFFSET))?,
        };
        let start = match params.first("after")? {
            None => RequestedStart::Offset(offset),
            Some("") => return Err(DomainError::bad_field("after", INVALID_AFTER)),
            Some(_) if offset != 0 => {
                return Err(invalid("offset", "must be absent or 0 when after is given"))
            }
            Some(after) => RequestedStart::After(after.to_string()),
        };
        Ok(Self {
            properties: params.properties()?,
            list: ListRequest {
                limit,
                start,
                include_archived,
            },
        })
    }
}

/// The `properties` value of an item route's query, if any (repeated values joined with
/// commas).
///
/// Errors: 400 naming `properties` when a value is not percent-encoded UTF-8.
pub fn item_properties(raw: Option<&str>) -> Result<Option<String>, DomainError> {
    QueryParams::parse(raw).properties()
}

fn invalid(name: &str, why: &str) -> DomainError {
    DomainError::bad_field(name, format!("Invalid query parameter {name}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_limit_10_offset_0_active_only() {
        let q = ListQuery::parse(None).unwrap();
        assert_eq!(q.list, ListRequest::default());
        assert_eq!(q.properties, None);
    }

    #[test]
    fn valid_values_are_read_and_unknown_parameters_ignored() {
        let q = ListQuery::parse(Some(
            "limit=100&offset=5&archived=true&foo=bar&properties=a,b",
        ))
        .unwrap();
        assert_eq!(
            q.list,
            ListRequest {
                limit: 100,
                start: RequestedStart::Offset(5),
                include_archived: true
            }
        );
        assert_eq!(q.properties.as_deref(), Some("a,b"));
    }

    #[test]
    fn invalid_values_are_400_naming_the_parameter() {
        let cases = [
            ("limit=0", "limit"),
            ("limit=101", "limit"),
            ("limit=-1", "limit"),
            ("limit=ten", "limit"),
            ("limit=", "limit"),
            ("limit=1.5", "limit"),
            ("offset=-1", "offset"),
            ("offset=x", "offset"),
            ("offset=10001", "offset"),
            ("offset=1000000001", "offset"),
            ("after=", "after"),
            ("after=abc&offset=1", "offset"),
            ("offset=9223372036854775808", "offset"),
            ("archived=yes", "archived"),
            ("archived=TRUE", "archived"),
            ("archived=", "archived"),
        ];
        for (query, field) in cases {
            let err = ListQuery::parse(Some(query)).unwrap_err();
            assert!(matches!(err, DomainError::Invalid { .. }), "{query}");
            assert_eq!(err.field(), Some(field), "{query}");
        }
    }

    #[test]
    fn after_is_taken_raw_with_offset_absent_or_zero_and_offset_stops_at_10000() {
        let q = ListQuery::parse(Some("after=abc.def&offset=0&limit=3")).unwrap();
        assert_eq!(q.list.start, RequestedStart::After("abc.def".into()));
        assert_eq!(q.list.limit, 3);
        let q = ListQuery::parse(Some("offset=10000")).unwrap();
        assert_eq!(q.list.start, RequestedStart::Offset(10000));
        let err = ListQuery::parse(Some("offset=10001")).unwrap_err();
        assert!(err.to_string().contains("after"), "{err}");
    }

    #[test]
    fn repeated_properties_are_joined_and_encoded_values_decoded() {
        let props = |q: &str| item_properties(Some(q)).unwrap();
        assert_eq!(
            props("properties=a&properties=b%2Cc").as_deref(),
            Some("a,b,c")
        );
        assert_eq!(props("properties=").as_deref(), Some(""));
        assert_eq!(props("properties=a+b%2Bc").as_deref(), Some("a b+c"));
        assert_eq!(props("x=1"), None);
    }

    #[test]
    fn values_that_are_not_utf8_are_400_naming_the_parameter_when_read() {
        for (query, field) in [
            ("limit=%FF", "limit"),
            ("limit=2&offset=%C3", "offset"),
            ("archived=%E2%82", "archived"),
            ("after=%ED%A0%80", "after"),
            ("properties=a&properties=%FF", "properties"),
        ] {
            let err = ListQuery::parse(Some(query)).unwrap_err();
            assert_eq!(err.field(), Some(field), "{query}");
            assert_eq!(
                err.to_string(),
                format!("Invalid query parameter {field}: not valid percent-encoded UTF-8"),
                "{query}"
            );
        }
        assert_eq!(
            item_properties(Some("properties=%FF")).unwrap_err().field(),
            Some("properties")
        );
        // Unknown parameters are ignored whatever their bytes; only the first limit counts.
        let q = ListQuery::parse(Some("x=%FF&%FE=1&limit=3&limit=%FF")).unwrap();
        assert_eq!(q.list.limit, 3);
        // A broken escape is kept literally (WHATWG), then judged as any other value.
        assert_eq!(
            QueryParams::parse(Some("a=%ZZ&b=%4&c=100%"))
                .all("a")
                .unwrap(),
            ["%ZZ"]
        );
        assert_eq!(
            QueryParams::parse(Some("a=1&&a&=x")).all("a").unwrap(),
            ["1", ""]
        );
    }
}

/// The window of `GET /routers/{routerId}/stats` from the raw query string: `from` and `to`
/// decoded (a value that is not percent-encoded UTF-8 is 400 naming it, BEHAVIOR 12; a
/// repeated parameter counts once, the first; others are ignored), then
/// [`crate::history::StatsWindow::parse`].
///
/// Errors: as `StatsWindow::parse`, and the decoding's 400.
pub fn stats_window(
    raw: Option<&str>, now: chrono::DateTime<chrono::Utc>,
) -> Result<crate::history::StatsWindow, DomainError> {
    let params = QueryParams::parse(raw);
    crate::history::StatsWindow::parse(params.first("from")?, params.first("to")?, now)
}

/// The filters of `GET /audit-events` from the raw query string (BEHAVIOR 18): `target_type`,
/// `target_id`, `from` and `to` decoded (a value that is not percent-encoded UTF-8 is 400 naming
/// it; a repeated parameter counts once, the first), then [`crate::audit::AuditQuery::parse`].
///
/// Errors: as `AuditQuery::parse`, and the decoding's 400.
pub fn audit_query(raw: Option<&str>) -> Result<crate::audit::AuditQuery, DomainError> {
    let params = QueryParams::parse(raw);
    crate::audit::AuditQuery::parse(
        params.first("target_type")?,
        params.first("target_id")?,
        params.first("from")?,
        params.first("to")?,
    )
}

#[cfg(test)]
mod stats_window_tests {
    use super::*;

    #[test]
    fn the_query_is_decoded_and_the_first_of_a_repeated_bound_counts() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-24T10:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let w = stats_window(
            Some("from=2026-11-01T01:00:00%2B01:00&to=2026-11-02T00:00:00Z&to=x&other=1"),
            now,
        )
        .unwrap();
        assert_eq!(w.from.to_rfc3339(), "2026-11-01T00:00:00+00:00");
        assert_eq!(w.to.to_rfc3339(), "2026-11-02T00:00:00+00:00");
        let bad = stats_window(Some("from=%FF"), now).unwrap_err();
        assert_eq!(bad.field(), Some("from"));
    }
}
