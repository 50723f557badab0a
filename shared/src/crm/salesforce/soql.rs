//! The one SOQL query the sync sends (BEHAVIOR 7 "Owner"): the active user with an e-mail,
//! the e-mail written as a SOQL string literal (Salesforce's "Quoted String Escape Sequences"
//! and "Reserved Characters": `\` and `'` are escaped with a backslash).

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Characters kept as they are in the query parameter: RFC 3986's unreserved set; everything
/// else (spaces, quotes, `=`, `@`, `+`, `&`, `%`, `\`) is percent-encoded.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `text` as a SOQL string literal: quoted, `\` and `'` preceded by a backslash.
pub fn string_literal(text: &str) -> String {
    let mut literal = String::with_capacity(text.len() + 2);
    literal.push('\'');
    for c in text.chars() {
        if matches!(c, '\\' | '\'') {
            literal.push('\\');
        }
        literal.push(c);
    }
    literal.push('\'');
    literal
}

/// The query for the active user with `email`.
pub fn active_user_with(email: &str) -> String {
    format!(
        "SELECT Id FROM User WHERE Email = {} AND IsActive = true",
        string_literal(email)
    )
}

/// `soql` percent-encoded as the value of the Query resource's `q` parameter.
pub fn query_parameter(soql: &str) -> String {
    utf8_percent_encode(soql, QUERY_VALUE).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_email_is_a_soql_string_literal_and_the_query_is_percent_encoded() {
        assert_eq!(
            active_user_with("ann@acme.example"),
            "SELECT Id FROM User WHERE Email = 'ann@acme.example' AND IsActive = true"
        );
        assert_eq!(
            string_literal(r"o'brien\x@acme.example"),
            r"'o\'brien\\x@acme.example'"
        );
        assert_eq!(string_literal("' OR Id != '"), r"'\' OR Id != \''");
        assert_eq!(
            query_parameter("SELECT Id FROM User WHERE Email = 'a+b@x.example'"),
            "SELECT%20Id%20FROM%20User%20WHERE%20Email%20%3D%20%27a%2Bb%40x.example%27"
        );
    }
}
