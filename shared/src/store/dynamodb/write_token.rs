//! Single-item writes that survive a lost answer.
//!
//! DynamoDB may apply a write and still fail to answer it: an `InternalServerError` ("the
//! request may or may not have succeeded"), a timeout, a connection dropped after the request
//! was sent. The SDK then sends the same request again (its standard retry mode), and a
//! conditional write re-sent after it applied meets its own effect: a create finds the item it
//! made (`attribute_not_exists` fails), a versioned update finds the version it wrote. Answered
//! as a conflict, the caller would report a failure for a write that happened (a record create
//! answering 500, an `Idempotency-Key` claim answering 409 "being processed" to its own client).
//!
//! `TransactWriteItems` has the cure built in: its `ClientRequestToken`, which the SDK fills in
//! once per call and keeps across its retries, makes a repeat within 10 minutes answer as done
//! without applying anything (API reference, `TransactWriteItems`). Single-item writes have no
//! such token, so each carries one of its own, as the due-work claim carries its lease id:
//!
//! - the write stamps the item with [`WRITE_TOKEN`], a fresh random value per write (a `PutItem`
//!   puts it with the item, an `UpdateItem` sets it);
//! - its condition becomes `(condition) AND (attribute_not_exists(write_token) OR write_token <>
//!   :token)`, so a re-send of an applied write is never applied twice (an `ADD` is not doubled,
//!   a put does not overwrite what came after it);
//! - it asks for the item as it was when a condition fails (`ReturnValuesOnConditionCheckFailure:
//!   ALL_OLD`, no extra read): a failure whose item carries the write's own token is the write's
//!   own earlier success, answered as done ([`WriteToken::is_ours`]).
//!
//! A delete leaves nothing to find, so the adapter sends a conditional delete as a one-item
//! transaction instead, which keeps its client token.

use super::items::{s, Expr, Item};
use aws_sdk_dynamodb::types::AttributeValue;

/// The attribute a single-item write stamps its item with (a UUID's 32 hex digits; 43 bytes of
/// the item, within the size rule's reserve, `store::size::RESERVE_BYTES`).
pub const WRITE_TOKEN: &str = "write_token";

const NAME: &str = "#write_token";
const VALUE: &str = ":write_token";

/// One single-item write's own token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteToken(String);

impl WriteToken {
    /// A fresh token (a random UUID).
    pub fn new() -> Self {
        Self(uuid::Uuid::new_v4().simple().to_string())
    }

    /// The token as an attribute value.
    pub fn value(&self) -> AttributeValue {
        s(self.0.clone())
    }

    /// `item` stamped with the token.
    pub fn stamp(&self, mut item: Item) -> Item {
        item.insert(WRITE_TOKEN.into(), self.value());
        item
    }

    /// `condition` (`None`: none) and "this write has not been applied yet", with the names and
    /// values both need.
    pub fn guard(&self, condition: Option<&Expr>) -> Expr {
        let not_applied = format!("(attribute_not_exists({NAME}) OR {NAME} <> {VALUE})");
        let mut guarded = match condition.filter(|c| !c.text.trim().is_empty()) {
            Some(c) => Expr {
                text: format!("({}) AND {not_applied}", c.text),
                ..c.clone()
            },
            None => Expr::new(not_applied),
        };
        guarded.names.insert(NAME.into(), WRITE_TOKEN.into());
        guarded.values.insert(VALUE.into(), self.value());
        guarded
    }

    /// `update` (an `UpdateExpression` with its placeholders) also setting the token: added to
    /// its `SET` clause, or as a `SET` clause of its own when it has none.
    pub fn stamp_update(&self, update: &Expr) -> Expr {
        let assignment = format!("{NAME} = {VALUE}");
        let text = match set_clause_start(&update.text) {
            Some(at) => format!("{}{assignment}, {}", &update.text[..at], &update.text[at..]),
            None => format!("{} SET {assignment}", update.text.trim_end()),
        };
        let mut stamped = Expr {
            text,
            ..update.clone()
        };
        stamped.names.insert(NAME.into(), WRITE_TOKEN.into());
        stamped.values.insert(VALUE.into(), self.value());
        stamped
    }

    /// Whether `old`, the item a failed condition returned, carries this token: the write had
    /// been applied already.
    pub fn is_ours(&self, old: Option<&Item>) -> bool {
        old.and_then(|item| item.get(WRITE_TOKEN)) == Some(&self.value())
    }
}

impl Default for WriteToken {
    fn default() -> Self {
        Self::new()
    }
}

/// Where the first assignment of the `SET` clause of an update expression starts: just after the
/// keyword `SET` (any letter case) where it stands as a word of its own at the start of the text
/// or after white space (a placeholder such as `#set` or `:set` is not the keyword; an attribute
/// called `set` can only be written through a placeholder, `SET` being a reserved word).
fn set_clause_start(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i + 3 <= bytes.len() {
        let at_word_start = i == 0 || bytes[i - 1].is_ascii_whitespace();
        let followed_by_space = bytes.get(i + 3).is_some_and(u8::is_ascii_whitespace);
        if at_word_start && followed_by_space && text[i..i + 3].eq_ignore_ascii_case("set") {
            let mut start = i + 3;
            while bytes.get(start).is_some_and(u8::is_ascii_whitespace) {
                start += 1;
            }
            return Some(start);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_joins_the_set_clause_or_makes_one() {
        let token = WriteToken::new();
        for (update, stamped) in [
            (
                "SET #a = :a, #b = :b REMOVE #c",
                "SET #write_token = :write_token, #a = :a, #b = :b REMOVE #c",
            ),
            (
                "ADD #count :delta",
                "ADD #count :delta SET #write_token = :write_token",
            ),
            (
                "REMOVE #x set #y = :set",
                "REMOVE #x set #write_token = :write_token, #y = :set",
            ),
            (
                "ADD #set :set",
                "ADD #set :set SET #write_token = :write_token",
            ),
        ] {
            let e = token.stamp_update(&Expr::new(update));
            assert_eq!(e.text, stamped);
            assert_eq!(e.values[":write_token"], token.value());
            assert_eq!(e.names["#write_token"], WRITE_TOKEN);
        }
    }

    #[test]
    fn the_condition_keeps_its_own_and_refuses_a_second_application() {
        let token = WriteToken::new();
        let c = Expr::new("attribute_not_exists(#pk)").name("#pk", "PK");
        let g = token.guard(Some(&c));
        assert_eq!(
            g.text,
            "(attribute_not_exists(#pk)) AND (attribute_not_exists(#write_token) OR #write_token <> :write_token)"
        );
        assert_eq!(g.names["#pk"], "PK");
        assert_eq!(
            token.guard(None).text,
            "(attribute_not_exists(#write_token) OR #write_token <> :write_token)"
        );
    }

    #[test]
    fn only_an_item_with_this_writes_token_is_its_own() {
        let token = WriteToken::new();
        let ours = token.stamp(Item::new());
        assert!(token.is_ours(Some(&ours)));
        assert!(!WriteToken::new().is_ours(Some(&ours)));
        assert!(!token.is_ours(Some(&Item::new())));
        assert!(!token.is_ours(None));
    }
}
