//! Log lines that a request cannot forge (`docs/decisions.md`, "HTTP", log lines): the text log
//! (the local server's; Lambda writes JSON, whose strings are escaped by the encoder) writes every
//! field value, and the message, with control characters escaped (`\n`, `\r`, `\t`, `\u{1b}`, ...)
//! and Unicode line and paragraph separators too, at every level. A value taken from a request (a
//! token header's `kid`, a form parameter, an error that quotes input) can then never end a line
//! and start a made-up one.

use std::fmt;
use tracing::field::Field;
use tracing_subscriber::field::delimited::Delimited;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::fmt::format::{debug_fn, FieldFn, Writer};

/// The signature of [`write_escaped`].
pub type EscapeFn = fn(&mut Writer<'_>, &Field, &dyn fmt::Debug) -> fmt::Result;

/// The text log's field formatter: `name=value` pairs separated by spaces, as
/// tracing-subscriber's default, every value escaped ([`escape`]).
pub type EscapedFields = Delimited<&'static str, FieldFn<EscapeFn>>;

/// The field formatter of a text log (`tracing_subscriber::fmt().fmt_fields(...)`).
pub fn escaped_fields() -> EscapedFields {
    debug_fn(write_escaped as EscapeFn).delimited(" ")
}

/// Writes one field: the message as its text, any other field as `name=value`, escaped.
fn write_escaped(writer: &mut Writer<'_>, field: &Field, value: &dyn fmt::Debug) -> fmt::Result {
    let text = escape(&format!("{value:?}"));
    match field.name() {
        "message" => writer.write_str(&text),
        name => write!(writer, "{}={text}", name.strip_prefix("r#").unwrap_or(name)),
    }
}

/// `text` with every control character and line or paragraph separator written as its Rust
/// escape (`\n`, `\u{1b}`, `\u{2028}`); everything else as is.
pub fn escape(text: &str) -> String {
    if !text.chars().any(needs_escape) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_line_separators_are_escaped_and_the_rest_kept() {
        let cases = [
            ("plain kid-1 é ✓", "plain kid-1 é ✓"),
            ("a\nINFO forged", "a\\nINFO forged"),
            ("a\r\nb", "a\\r\\nb"),
            ("tab\there", "tab\\there"),
            ("\u{1b}[31mred", "\\u{1b}[31mred"),
            ("x\u{2028}y\u{2029}z\u{85}", "x\\u{2028}y\\u{2029}z\\u{85}"),
        ];
        for (raw, written) in cases {
            assert_eq!(escape(raw), written, "{raw:?}");
        }
    }
}
