//! Query-string parsing (BEHAVIOR 2 and 11): `archived` is `true` or `false`; `limit` an integer
//! 1..=100 (default 10); `offset` an integer 0..=10000 (default 0); `after` a cursor, with `offset`
//! absent or 0; anything else -> 400 naming the parameter. Unknown parameters are ignored.
//! Repeated `properties` values are joined with commas.

use crate::error::DomainError;
use crate::page::cursor::{ListRequest, RequestedStart, INVALID_AFTER};
use crate::page::{DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET};

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

fn pairs(raw: Option<&str>) -> Vec<(String, String)> {
    raw.map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default()
}

fn first<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn properties(pairs: &[(String, String)]) -> Option<String> {
    let values: Vec<&str> = pairs
        .iter()
        .filter(|(k, _)| k == "properties")
        .map(|(_, v)| v.as_str())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

impl ListQuery {
    /// Parses the raw query string of a list route.
    ///
    /// Errors: 400 with `field` = the parameter, e.g. `Invalid query parameter limit: must be an
    /// integer from 1 to 100`.
    pub fn parse(raw: Option<&str>) -> Result<Self, DomainError> {
        let pairs = pairs(raw);
        let include_archived = match first(&pairs, "archived") {
            None => false,
            Some("true") => true,
            Some("false") => false,
            Some(_) => return Err(invalid("archived", "must be true or false")),
        };
        let limit = match first(&pairs, "limit") {
            None => DEFAULT_LIMIT,
            Some(v) => v
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| invalid("limit", "must be an integer from 1 to 100"))?,
        };
        let offset = match first(&pairs, "offset") {
            None => 0,
            Some(v) => v
                .parse::<usize>()
                .ok()
                .filter(|n| *n <= MAX_OFFSET)
                .ok_or_else(|| DomainError::bad_field("offset", INVALID_OFFSET))?,
        };
        let start = match first(&pairs, "after") {
            None => RequestedStart::Offset(offset),
            Some("") => return Err(DomainError::bad_field("after", INVALID_AFTER)),
            Some(_) if offset != 0 => {
                return Err(invalid("offset", "must be absent or 0 when after is given"))
            }
            Some(after) => RequestedStart::After(after.to_string()),
        };
        Ok(Self {
            properties: properties(&pairs),
            list: ListRequest {
                limit,
                start,
                include_archived,
            },
        })
    }
}

/// The `properties` value of an item route's query, if any.
pub fn item_properties(raw: Option<&str>) -> Option<String> {
    properties(&pairs(raw))
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
        assert_eq!(
            item_properties(Some("properties=a&properties=b%2Cc")).as_deref(),
            Some("a,b,c")
        );
        assert_eq!(item_properties(Some("properties=")).as_deref(), Some(""));
        assert_eq!(item_properties(Some("x=1")), None);
    }
}
