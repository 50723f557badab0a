//! What the token tests share: keys, a fixed instant, claims, and raw JWT helpers. Each test
//! module builds its own issuer or verifier from these, so no test file imports another that
//! imports it back.

pub(crate) use super::claims::Claims;
pub(crate) use crate::auth::keys::SigningKey;
pub(crate) use crate::auth::{DEFAULT_AUDIENCE, DEFAULT_ISSUER, DEV_SIGNING_KEY_PEM};
pub(crate) use crate::types::ids::AccountId;
pub(crate) use base64::engine::general_purpose::URL_SAFE_NO_PAD;
pub(crate) use base64::Engine as _;
pub(crate) use chrono::{DateTime, TimeZone, Utc};
pub(crate) use jsonwebtoken::{Algorithm, Header};
use p256::elliptic_curve::rand_core::OsRng;
use p256::pkcs8::{EncodePrivateKey, LineEnding};
pub(crate) use uuid::Uuid;

pub(crate) const ACCOUNT: AccountId =
    AccountId::from_uuid(Uuid::from_u128(0x5b1c_0000_0000_4000_8000_0000_0000_0001));

pub(crate) fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 22, 9, 30, 0)
        .single()
        .expect("a valid instant")
}

pub(crate) fn dev_key() -> SigningKey {
    SigningKey::from_pem(DEV_SIGNING_KEY_PEM).expect("the development key parses")
}

pub(crate) fn other_key() -> SigningKey {
    let secret = p256::SecretKey::random(&mut OsRng);
    let pem = secret.to_pkcs8_pem(LineEnding::LF).expect("encodes");
    SigningKey::from_pem(&pem).expect("parses")
}

pub(crate) fn claims() -> Claims {
    Claims {
        iss: DEFAULT_ISSUER.to_owned(),
        aud: DEFAULT_AUDIENCE.to_owned(),
        sub: "northwind-integration".to_owned(),
        account_id: Some(ACCOUNT.to_string()),
        scope: "service-api/read".to_owned(),
        iat: t0().timestamp(),
        exp: t0().timestamp() + 3600,
        nbf: None,
        jti: Uuid::new_v4().to_string(),
        r#gen: None,
    }
}

/// Signs `claims` with `key` as ES256, with `kid` in the header.
pub(crate) fn sign(key: &SigningKey, kid: Option<&str>, claims: &Claims) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = kid.map(str::to_owned);
    super::signature::low_s(
        jsonwebtoken::encode(&header, claims, key.encoding_key()).expect("signs"),
    )
}

pub(crate) fn segment(value: &serde_json::Value) -> String {
    URL_SAFE_NO_PAD.encode(value.to_string())
}

pub(crate) fn decode_segment(token: &str, index: usize) -> serde_json::Value {
    let part = token.split('.').nth(index).expect("three segments");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("base64url")).expect("JSON")
}
