//! The CRM port (BEHAVIOR 7): one owner update, its failures with BEHAVIOR 7's `crm_error`
//! texts, and the redaction of the access token.

use crate::model::account::CrmAccessToken;
use crate::model::object_type::ObjectType;
use async_trait::async_trait;
use std::time::Duration;

/// `crm_error` when the account has no CRM connection (BEHAVIOR 7).
pub const NO_CONNECTION: &str = "No CRM connection for the account";
/// `crm_error` when the record has no `external_id`.
pub const RECORD_WITHOUT_EXTERNAL_ID: &str = "Record has no external_id";
/// `crm_error` when the assigned member has no `external_id`.
pub const OWNER_WITHOUT_EXTERNAL_ID: &str = "Owner has no external_id";
/// `crm_error` when the CRM did not answer within [`REQUEST_TIMEOUT`].
pub const TIMED_OUT: &str = "CRM request timed out";
/// The longest a CRM request may take (BEHAVIOR 7), connection included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// One owner update: what the CRM is asked to set (BEHAVIOR 7, "Request").
#[derive(Debug, Clone)]
pub struct OwnerUpdate {
    /// The connection's base URL (any URL; tests point it at a local fake).
    pub base_url: String,
    /// The connection's bearer token.
    pub access_token: CrmAccessToken,
    /// The router's object type: the `{type}` of the path.
    pub object_type: ObjectType,
    /// The record's `external_id`: the `{id}` of the path, percent-encoded as one segment.
    pub record_external_id: String,
    /// The assigned member's `external_id`: the HubSpot owner id.
    pub owner_external_id: String,
}

/// Why an owner update did not go through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrmFailure {
    /// The `crm_error` text (BEHAVIOR 7's table), the access token redacted.
    pub error: String,
    /// Whether the failure can pass by itself (timeout, connection error, 429, 5xx) and is
    /// retried; missing ids, a missing connection and other 4xx answers are final at once.
    pub transient: bool,
    /// The CRM's `Retry-After`, when it gave one (honoured when longer than the next delay).
    pub retry_after: Option<Duration>,
}

impl CrmFailure {
    /// A failure that is final at once.
    pub fn permanent(error: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            transient: false,
            retry_after: None,
        }
    }

    /// A failure that is retried.
    pub fn transient(error: impl Into<String>, retry_after: Option<Duration>) -> Self {
        Self {
            error: error.into(),
            transient: true,
            retry_after,
        }
    }
}

/// The CRM port: sets a record's owner in the account's CRM.
#[async_trait]
pub trait CrmClient: Send + Sync + 'static {
    /// Sends `update`; `Ok` on any 2xx answer.
    ///
    /// Errors: a [`CrmFailure`] with the `crm_error` text of BEHAVIOR 7's table.
    async fn set_owner(&self, update: &OwnerUpdate) -> Result<(), CrmFailure>;
}

/// `text` with every occurrence of `secret` replaced by `[REDACTED]`, in every encoding a JSON
/// text can give it (RFC 8259 section 7: any character as `\uXXXX` in either case, characters
/// beyond the BMP as a surrogate pair, `/` as `\/`, and the short escapes), so a CRM that
/// echoes the token inside a JSON string cannot slip it through. An empty secret changes
/// nothing.
pub fn redact(text: &str, secret: &str) -> String {
    if secret.is_empty() {
        return text.to_string();
    }
    let pattern: String = secret.chars().map(json_forms).collect();
    match regex::Regex::new(&pattern) {
        Ok(re) => re.replace_all(text, "[REDACTED]").into_owned(),
        Err(_) => text.replace(secret, "[REDACTED]"),
    }
}

/// A regular expression matching `c` as it can stand in a JSON text.
fn json_forms(c: char) -> String {
    let hex = |unit: u16| format!(r"\\u(?i:{unit:04x})");
    let mut forms = vec![regex::escape(&c.to_string())];
    let mut units = [0u16; 2];
    let units = c.encode_utf16(&mut units);
    forms.push(units.iter().map(|u| hex(*u)).collect());
    let short = match c {
        '/' => Some(r"\\/"),
        '"' => Some(r#"\\""#),
        '\\' => Some(r"\\\\"),
        '\n' => Some(r"\\n"),
        '\r' => Some(r"\\r"),
        '\t' => Some(r"\\t"),
        '\u{8}' => Some(r"\\b"),
        '\u{c}' => Some(r"\\f"),
        _ => None,
    };
    forms.extend(short.map(str::to_string));
    format!("(?:{})", forms.join("|"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_covers_every_json_encoding_of_the_token() {
        let token = "pat/na1-é😀x";
        let escaped = serde_json::to_string(token).unwrap(); // the plain form
        assert_eq!(redact(&escaped, token), "\"[REDACTED]\"");
        for echoed in [
            r#"{"m":"pat\/na1-\u00e9\ud83d\ude00x"}"#,
            r#"{"m":"\u0070at\/na1-\u00E9😀\u0078"}"#,
            r#"{"m":"pat/na1-é\uD83D\uDE00x"}"#,
        ] {
            let cleaned = redact(echoed, token);
            assert_eq!(cleaned, r#"{"m":"[REDACTED]"}"#, "{echoed}");
            let decoded: serde_json::Value = serde_json::from_str(echoed).unwrap();
            assert_eq!(decoded["m"], token, "the echo really is the token");
        }
        assert_eq!(
            redact("pat/na1-é😀", token),
            "pat/na1-é😀",
            "a prefix is kept"
        );
    }

    #[test]
    fn redaction_removes_every_occurrence_of_the_token() {
        assert_eq!(
            redact("bad token tok-123 (tok-123)", "tok-123"),
            "bad token [REDACTED] ([REDACTED])"
        );
        assert_eq!(redact("nothing", ""), "nothing");
    }

    #[test]
    fn an_owner_update_never_prints_its_token() {
        let update = OwnerUpdate {
            base_url: "http://crm.example".into(),
            access_token: CrmAccessToken::new("pat-na1-secret"),
            object_type: ObjectType::Contacts,
            record_external_id: "1".into(),
            owner_external_id: "2".into(),
        };
        let printed = format!("{update:?}");
        assert!(!printed.contains("pat-na1-secret"), "{printed}");
    }
}
