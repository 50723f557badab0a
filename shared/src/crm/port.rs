//! The CRM port (BEHAVIOR 7): one owner update, its failures with BEHAVIOR 7's `crm_error`
//! texts and what follows each, and the redaction of the connection's secrets.

use crate::model::object_type::ObjectType;
use crate::secrets::OpenCrmConnection;
use crate::types::ids::MemberId;
use async_trait::async_trait;
use std::time::{Duration, Instant};

/// `crm_error` when the account has no CRM connection (BEHAVIOR 7).
pub const NO_CONNECTION: &str = "No CRM connection for the account";
/// `crm_error` when the record has no `external_id`.
pub const RECORD_WITHOUT_EXTERNAL_ID: &str = "Record has no external_id";
/// `crm_error` when the record's `external_id` is `.` or `..`: a dot segment, which the URL
/// parser would resolve (no CRM id can be one; final, no request).
pub const RECORD_EXTERNAL_ID_INVALID: &str = "Record external_id is not a valid CRM id";
/// `crm_error` when the assigned member is gone before a retry (no `external_id` nor e-mail to
/// find their owner by).
pub const OWNER_WITHOUT_EXTERNAL_ID: &str = "Owner has no external_id";
/// `crm_error` when the owners API knows no active owner with the member's e-mail (BEHAVIOR 7
/// "HubSpot as it is", final).
pub const NO_OWNER_WITH_EMAIL: &str = "No HubSpot owner with the member's e-mail";
/// `crm_error` when a SOQL query over Salesforce's `User` finds no active user with the member's
/// e-mail (BEHAVIOR 7 "Salesforce as it is", final).
pub const NO_SALESFORCE_USER_WITH_EMAIL: &str =
    "No active Salesforce user with the member's e-mail";
/// `crm_error` when more than one active Salesforce user has the member's e-mail (final).
pub const SEVERAL_SALESFORCE_USERS_WITH_EMAIL: &str =
    "Several active Salesforce users have the member's e-mail";
/// `crm_error` when the CRM refused to grant an access token (final).
pub const AUTHORIZATION_FAILED: &str = "CRM authorization failed";
/// `crm_error` when the account's pace put the request more than 3 s away: it goes to the
/// background retry at once, nothing sent (BEHAVIOR 7 "Rate limits").
pub const RATE_LIMIT_DEFERRED: &str = "CRM rate limit: request deferred";
/// `crm_error` when the CRM did not answer within [`REQUEST_TIMEOUT`].
pub const TIMED_OUT: &str = "CRM request timed out";
/// The longest a CRM request may take (BEHAVIOR 7), connection included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// Who the record's new owner is in the CRM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// The member's `external_id`: the CRM's id of the user (HubSpot's owner id, Salesforce's
    /// User Id) as the customer typed it.
    Id(String),
    /// A member without `external_id`: the user the CRM finds by their e-mail (HubSpot's owners
    /// API, a SOQL query over Salesforce's `User`), remembered per account and member for at
    /// most an hour when found.
    ByEmail {
        /// The member (the key the owner is remembered by, with the account).
        member_id: MemberId,
        /// The member's e-mail.
        email: String,
    },
}

/// One owner update: what the CRM is asked to set (BEHAVIOR 7, "Request").
#[derive(Debug, Clone)]
pub struct OwnerUpdate {
    /// The account's connection, secrets opened (their `Debug` redacted).
    pub connection: OpenCrmConnection,
    /// The router's object type (HubSpot's `{type}` of the path; Salesforce's sObject).
    pub object_type: ObjectType,
    /// The record's `external_id`: the `{id}` of the path, percent-encoded as one segment (an
    /// object id, or the value of the HubSpot connection's id property for the type).
    pub record_external_id: String,
    /// The owner to set.
    pub owner: Owner,
}

impl OwnerUpdate {
    /// The id property the PATCH names (`?idProperty=`), if the connection has one for the type.
    pub fn id_property(&self) -> Option<&str> {
        self.connection.options.id_properties.get(self.object_type)
    }
}

/// What follows a failed owner update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Nothing: the failure is final (missing ids, a missing connection, a refused
    /// authorization, no owner with the e-mail, and 4xx answers other than 429, 423 and 477).
    Final,
    /// A retry after the schedule's next delay, or after `at_least` when that is longer
    /// (timeouts, connection errors, 429, 5xx, 423, 477); it spends one of the retries.
    Retry {
        /// The CRM's wait (`Retry-After`, 423's 2 s, the rate-limit window), when it gave one.
        at_least: Option<Duration>,
    },
    /// HubSpot's daily limit (a 429 whose `policyName` is `DAILY`): a retry after
    /// `retry_after`, or else at the next 00:00 UTC, that spends none of the retries.
    Daily {
        /// The CRM's `Retry-After`, when it gave one.
        retry_after: Option<Duration>,
    },
    /// A retry after `wait` that spends none of the retries: a request not sent because the
    /// account's turn was more than 3 s away or its Salesforce API usage is at its share, or
    /// Salesforce's daily total reached (`REQUEST_LIMIT_EXCEEDED`).
    Wait {
        /// How long to wait.
        wait: Duration,
    },
}

/// An owner update the CRM took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Synced {
    /// Update requests sent, the resend included (BEHAVIOR 7 `attempts`).
    pub updates: u32,
}

/// Why an owner update did not go through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrmFailure {
    /// The `crm_error` text (BEHAVIOR 7's table), every secret redacted.
    pub error: String,
    /// What follows.
    pub next: Next,
    /// Update requests sent in this attempt, the resend included (BEHAVIOR 7 `attempts`:
    /// token grants and owner look-ups are not counted).
    pub updates: u32,
}

impl CrmFailure {
    /// A failure that is final at once.
    pub fn permanent(error: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            next: Next::Final,
            updates: 0,
        }
    }

    /// A failure that is retried, after at least `at_least` when given.
    pub fn transient(error: impl Into<String>, at_least: Option<Duration>) -> Self {
        Self {
            error: error.into(),
            next: Next::Retry { at_least },
            updates: 0,
        }
    }

    /// Whether nothing follows.
    pub fn is_final(&self) -> bool {
        self.next == Next::Final
    }
}

/// The CRM port: sets a record's owner in the account's CRM.
#[async_trait]
pub trait CrmClient: Send + Sync + 'static {
    /// Sends `update` (with whatever the CRM needs first: an access token, the owner's id),
    /// giving up at `deadline` (BEHAVIOR 7: the first attempt has 3 s in all from the commit);
    /// `Ok` on any 2xx answer to the update, with the update requests sent.
    ///
    /// Errors: a [`CrmFailure`] with the `crm_error` text of BEHAVIOR 7's table and what follows
    /// (`CRM request timed out`, retried, when the deadline passed first).
    async fn set_owner(
        &self, update: &OwnerUpdate, deadline: Instant,
    ) -> Result<Synced, CrmFailure>;
}

/// `text` with every secret of `secrets` redacted ([`redact`]), longest first (so a secret
/// that contains another is replaced whole).
pub fn redact_all(text: &str, secrets: &[&str]) -> String {
    let mut sorted: Vec<&str> = secrets.to_vec();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
    sorted
        .into_iter()
        .fold(text.to_string(), |text, secret| redact(&text, secret))
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
    fn an_owner_update_never_prints_its_secrets() {
        use crate::model::account::{CrmCredentials, CrmProvider, CrmSecret, OAuthApp};
        let update = OwnerUpdate {
            connection: OpenCrmConnection {
                account_id: uuid::Uuid::nil().into(),
                provider: CrmProvider::HubSpot,
                base_url: "http://crm.example".into(),
                credentials: CrmCredentials::OAuth(OAuthApp {
                    client_id: "app".into(),
                    client_secret: CrmSecret::new("cs-secret"),
                    refresh_token: Some(CrmSecret::new("rt-secret")),
                }),
                options: Default::default(),
            },
            object_type: ObjectType::Contacts,
            record_external_id: "1".into(),
            owner: Owner::Id("2".into()),
        };
        let printed = format!("{update:?}");
        assert!(!printed.contains("cs-secret"), "{printed}");
        assert!(!printed.contains("rt-secret"), "{printed}");
        assert_eq!(
            redact_all("a cs-secret b rt-secret", &["rt-secret", "cs-secret"]),
            "a [REDACTED] b [REDACTED]"
        );
    }
}
