//! `Idempotency-Key` (BEHAVIOR 10; IETF httpapi draft "The Idempotency-Key HTTP Header Field").
//!
//! A key is scoped to an account and a route (`POST /contacts`, `POST /dispatch/router`) and
//! kept [`RETENTION`] (24 h). The first request *claims* it: an in-flight marker holding the
//! request's [`Fingerprint`] and a lease of [`LEASE`], so a crashed request does not block its
//! key for a day. The request's response is stored as the key's [`StoredResponse`] in the same
//! store transaction as its effect ([`IdempotencyCompletion`], carried by the write), or alone
//! when the answer has no effect (a 4xx, a dispatch that assigned nothing). A 5xx releases the
//! key. A repeat finds the claim ([`ClaimOutcome`]): the stored response when completed (replayed
//! with `Idempotent-Replayed: true`), 409 while in flight, 422 for another body.
//!
//! The orchestration of one HTTP request is [`crate::api::idempotency`]; the stores implement
//! [`crate::store::IdempotencyStore::claim_idempotency_key`] and its siblings.

use crate::error::DomainError;
use crate::types::ids::AccountId;
use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};

/// How long a key and its response are kept (BEHAVIOR 10: 24 h).
pub const RETENTION: Duration = Duration::hours(24);

/// How long an in-flight claim blocks its key. Longer than any function's timeout (45 s), so a
/// request still running is never taken over; a request that crashed frees its key after it.
pub const LEASE: Duration = Duration::seconds(60);

/// The request header.
pub const HEADER: &str = "Idempotency-Key";

/// The response header of a replay.
pub const REPLAYED_HEADER: &str = "Idempotent-Replayed";

/// The longest key (BEHAVIOR 10).
pub const MAX_KEY_CHARS: usize = 255;

/// The message of a malformed key (400).
pub const INVALID_KEY: &str = "Invalid Idempotency-Key";

/// The message of a key reused with another body (422).
pub const KEY_REUSED: &str = "Idempotency-Key was used with a different request";

/// The message of a key whose first request is still running (409).
pub const KEY_IN_FLIGHT: &str = "A request with this Idempotency-Key is being processed";

/// A valid `Idempotency-Key` value: 1 to 255 printable ASCII characters (0x20 to 0x7E).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Parses the raw header value (bytes: a header may carry any octet).
    ///
    /// Errors: 400 `Invalid Idempotency-Key` with `field` `Idempotency-Key` when empty, longer
    /// than 255 characters, or holding anything but printable ASCII.
    pub fn parse(raw: &[u8]) -> Result<Self, DomainError> {
        let printable = raw.iter().all(|b| (0x20..=0x7e).contains(b));
        if raw.is_empty() || raw.len() > MAX_KEY_CHARS || !printable {
            return Err(DomainError::bad_field(HEADER, INVALID_KEY));
        }
        // Printable ASCII is UTF-8.
        Ok(Self(raw.iter().map(|b| char::from(*b)).collect()))
    }

    /// The key as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// SHA-256 of a request body in canonical form: a JSON body with its object keys sorted and no
/// insignificant whitespace (so key order and spacing do not matter, BEHAVIOR 10), any other
/// body as its bytes. Lower-case hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// The fingerprint of `body`.
    pub fn of_body(body: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(value) => {
                hasher.update(b"json:");
                hasher.update(canonical(&value).to_string().as_bytes());
            }
            Err(_) => {
                hasher.update(b"raw:");
                hasher.update(body);
            }
        }
        Self(hex(&hasher.finalize()))
    }

    /// A stored fingerprint read back.
    pub fn from_stored(hex: impl Into<String>) -> Self {
        Self(hex.into())
    }

    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `value` with every object's keys in sorted order (`serde_json` keeps insertion order here, its
/// `preserve_order` feature being on), printed without whitespace. The recursion is bounded by
/// `serde_json`'s own nesting limit (128) on what it parses.
fn canonical(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), canonical(v)))
                    .collect(),
            )
        }
        scalar => scalar.clone(),
    }
}

/// A response kept for replay: the status and the exact body bytes (JSON text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The HTTP status, 200..=499.
    pub status: u16,
    /// The body as sent.
    pub body: String,
}

impl StoredResponse {
    /// The response `status` with `body` serialized as JSON.
    ///
    /// Errors: 500 if `body` cannot be serialized (never for the API's views).
    pub fn json(status: u16, body: &impl serde::Serialize) -> Result<Self, DomainError> {
        let body = serde_json::to_string(body).map_err(DomainError::internal)?;
        Ok(Self { status, body })
    }
}

/// One request's claim on a key: who (account, route, key), what (the body's fingerprint), and
/// the lease that makes the claim this request's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyClaim {
    /// The account of the token.
    pub account_id: AccountId,
    /// The route, e.g. `POST /contacts`.
    pub route: String,
    /// The key.
    pub key: IdempotencyKey,
    /// The body's fingerprint.
    pub fingerprint: Fingerprint,
    /// Unique per request: completing or releasing the key requires it.
    pub lease_id: String,
    /// When the claim was made.
    pub claimed_at: DateTime<Utc>,
}

impl IdempotencyClaim {
    /// A new claim of `key` on `route` for `account_id` at `now`, with a fresh lease id.
    pub fn new(
        account_id: AccountId, route: impl Into<String>, key: IdempotencyKey,
        fingerprint: Fingerprint, now: DateTime<Utc>,
    ) -> Self {
        Self {
            account_id,
            route: route.into(),
            key,
            fingerprint,
            lease_id: uuid::Uuid::new_v4().to_string(),
            claimed_at: now,
        }
    }

    /// When the in-flight claim stops blocking the key.
    pub fn lease_until(&self) -> DateTime<Utc> {
        self.claimed_at + LEASE
    }

    /// When the key and its response are forgotten.
    pub fn expires_at(&self) -> DateTime<Utc> {
        self.claimed_at + RETENTION
    }
}

/// The response to store for a claim, written with (or instead of) the request's effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyCompletion {
    /// The claim being completed; its lease must still be held.
    pub claim: IdempotencyClaim,
    /// What to replay.
    pub response: StoredResponse,
}

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The key was free (or expired, or its lease lapsed): this request runs.
    Claimed,
    /// A request completed with this key: its body's fingerprint and response.
    Completed {
        /// The first request's fingerprint.
        fingerprint: Fingerprint,
        /// Its response.
        response: StoredResponse,
    },
    /// A request with this key is running.
    InFlight {
        /// Its fingerprint.
        fingerprint: Fingerprint,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_one_to_255_printable_ascii_characters() {
        assert_eq!(IdempotencyKey::parse(b"a").unwrap().as_str(), "a");
        assert!(
            IdempotencyKey::parse(" ~!\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}".as_bytes()).is_ok()
        );
        assert!(IdempotencyKey::parse("k".repeat(255).as_bytes()).is_ok());
        for bad in [
            b"".to_vec(),
            "k".repeat(256).into_bytes(),
            b"tab\there".to_vec(),
            b"new\nline".to_vec(),
            b"del\x7f".to_vec(),
            "caf\u{e9}".as_bytes().to_vec(),
        ] {
            let err = IdempotencyKey::parse(&bad).unwrap_err();
            assert_eq!(err.to_string(), INVALID_KEY);
            assert_eq!(err.field(), Some(HEADER));
        }
    }

    #[test]
    fn json_bodies_fingerprint_alike_whatever_their_key_order_and_whitespace() {
        let a = Fingerprint::of_body(
            br#"{"fields":{"email":"a@x.co","first_name":"A"},"n":[1,{"b":2,"a":1}]}"#,
        );
        let b = Fingerprint::of_body(
            b"{ \"n\" : [ 1 , { \"a\" : 1 , \"b\" : 2 } ] ,\n \"fields\" : { \"first_name\" : \"A\", \"email\" : \"a@x.co\" } }",
        );
        assert_eq!(a, b);
        assert_eq!(a.as_str().len(), 64);
        for other in [
            br#"{"fields":{"email":"a@x.co","first_name":"B"},"n":[1,{"b":2,"a":1}]}"#.as_slice(),
            br#"{"fields":{"email":"a@x.co","first_name":"A"},"n":[{"b":2,"a":1},1]}"#,
            br#"{"fields":{"email":"a@x.co","first_name":"A"}}"#,
            br#"{"fields":{"email":"a@x.co","first_name":"A"},"n":[1,{"b":2,"a":"1"}]}"#,
        ] {
            assert_ne!(a, Fingerprint::of_body(other));
        }
        // Keys that would print the same after naive joining stay apart.
        assert_ne!(
            Fingerprint::of_body(br#"{"a":"b,c"}"#),
            Fingerprint::of_body(br#"{"a":"b","c":null}"#)
        );
        // Not JSON: the bytes.
        assert_eq!(
            Fingerprint::of_body(b"not json"),
            Fingerprint::of_body(b"not json")
        );
        assert_ne!(
            Fingerprint::of_body(b"not json"),
            Fingerprint::of_body(b"not  json")
        );
    }

    #[test]
    fn a_body_nested_past_the_json_limit_is_fingerprinted_by_its_bytes() {
        // serde_json refuses nesting past 128 levels, so canonical() never recurses deeper.
        let nested =
            |depth: usize, pad: &str| format!("{}{pad}{}", "[".repeat(depth), "]".repeat(depth));
        let deep = nested(100_000, "");
        assert!(serde_json::from_str::<serde_json::Value>(&deep).is_err());
        assert_eq!(
            Fingerprint::of_body(deep.as_bytes()),
            Fingerprint::of_body(deep.as_bytes())
        );
        assert_ne!(
            Fingerprint::of_body(deep.as_bytes()),
            Fingerprint::of_body(nested(100_000, " ").as_bytes()),
            "bytes, not JSON: whitespace counts"
        );
        // Within the limit, JSON equality holds.
        assert_eq!(
            Fingerprint::of_body(nested(120, "").as_bytes()),
            Fingerprint::of_body(nested(120, " ").as_bytes())
        );
    }
}
