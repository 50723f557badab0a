//! Signing deliveries as the Standard Webhooks specification (v1) defines it, so its published
//! verifier libraries work unchanged (BEHAVIOR 13): `webhook-signature` is `v1,` + base64 of
//! HMAC-SHA256, keyed with the secret's decoded bytes, over `{webhook-id}.{webhook-timestamp}.{body}`;
//! several signatures are space-separated while a rotated secret still signs.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Prefix of a signing secret.
pub const SECRET_PREFIX: &str = "whsec_";

/// A subscription's signing secret: `whsec_` + base64 of 32 random bytes. Its `Debug` is
/// redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret {
    text: String,
    key: Vec<u8>,
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret([REDACTED])")
    }
}

impl WebhookSecret {
    /// A new secret of 32 random bytes.
    pub fn generate() -> Self {
        let bytes: [u8; 32] = rand::random();
        Self {
            text: format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes)),
            key: bytes.to_vec(),
        }
    }

    /// Reads `whsec_<base64>`.
    ///
    /// Errors: another prefix, or a body that is not base64 of at least one byte.
    pub fn parse(text: &str) -> Result<Self, String> {
        let encoded = text
            .strip_prefix(SECRET_PREFIX)
            .ok_or_else(|| format!("a signing secret starts with {SECRET_PREFIX}"))?;
        let key = STANDARD
            .decode(encoded)
            .map_err(|e| format!("a signing secret is base64 after {SECRET_PREFIX}: {e}"))?;
        if key.is_empty() {
            return Err("a signing secret has at least one byte".into());
        }
        Ok(Self {
            text: text.to_string(),
            key,
        })
    }

    /// The secret as shown once to the subscriber (`whsec_...`).
    pub fn expose(&self) -> &str {
        &self.text
    }

    fn mac(&self, id: &str, timestamp: i64, body: &str) -> HmacSha256 {
        // HMAC takes a key of any length.
        let mut mac = HmacSha256::new_from_slice(&self.key)
            .unwrap_or_else(|_| HmacSha256::new_from_slice(&[0]).expect("a one-byte key"));
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body.as_bytes());
        mac
    }

    /// The `v1,<base64>` signature of one delivery attempt.
    pub fn sign(&self, id: &str, timestamp: i64, body: &str) -> String {
        let tag = self.mac(id, timestamp, body).finalize().into_bytes();
        format!("v1,{}", STANDARD.encode(tag))
    }

    /// Whether `header` (space-separated `v1,<base64>` signatures) holds this secret's signature
    /// of the attempt; the comparison is constant-time (`Mac::verify_slice`).
    pub fn verify(&self, id: &str, timestamp: i64, body: &str, header: &str) -> bool {
        header.split(' ').any(|candidate| {
            let Some(encoded) = candidate.strip_prefix("v1,") else {
                return false;
            };
            let Ok(tag) = STANDARD.decode(encoded) else {
                return false;
            };
            self.mac(id, timestamp, body).verify_slice(&tag).is_ok()
        })
    }
}

/// The `webhook-signature` header of one attempt: one signature per secret, space-separated.
pub fn signature_header(secrets: &[WebhookSecret], id: &str, timestamp: i64, body: &str) -> String {
    secrets
        .iter()
        .map(|s| s.sign(id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks test vector.
    #[test]
    fn the_standard_webhooks_test_vector_signs_as_published() {
        let secret = WebhookSecret::parse("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD").unwrap();
        let body = r#"{"email":"test@example.com","username":"test_user"}"#;
        let signature = secret.sign("msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", 1649367553, body);
        assert_eq!(signature, "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=");
        assert!(secret.verify(
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            1649367553,
            body,
            &signature
        ));
        assert!(!secret.verify(
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            1649367554,
            body,
            &signature
        ));
        assert!(!secret.verify("msg_x", 1649367553, body, &signature));
        assert!(!secret.verify(
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            1649367553,
            "{}",
            &signature
        ));
    }

    #[test]
    fn a_rotated_secret_signs_beside_the_new_one() {
        let old = WebhookSecret::generate();
        let new = WebhookSecret::generate();
        let header = signature_header(&[new.clone(), old.clone()], "msg_1", 10, "{}");
        assert_eq!(header.split(' ').count(), 2);
        assert!(new.verify("msg_1", 10, "{}", &header));
        assert!(old.verify("msg_1", 10, "{}", &header));
        assert!(!WebhookSecret::generate().verify("msg_1", 10, "{}", &header));
    }

    #[test]
    fn a_generated_secret_is_whsec_and_32_bytes_and_never_printed() {
        let secret = WebhookSecret::generate();
        assert!(secret.expose().starts_with("whsec_"));
        let parsed = WebhookSecret::parse(secret.expose()).unwrap();
        assert_eq!(parsed.key.len(), 32);
        assert_eq!(format!("{secret:?}"), "WebhookSecret([REDACTED])");
        for bad in ["whsec_", "whsec_!!", "sk_abc"] {
            assert!(WebhookSecret::parse(bad).is_err(), "{bad}");
        }
    }
}
