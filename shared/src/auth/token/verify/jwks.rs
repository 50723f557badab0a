//! Reading the configured public keys: a JWK Set (RFC 7517 section 5) of P-256 keys for ES256,
//! each checked to lie on the curve, by `kid` (a key without one gets its RFC 7638
//! thumbprint).

use crate::auth::keys::{coordinates, thumbprint, KeyError};
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, EllipticCurveKeyType, Jwk, JwkSet, KeyAlgorithm,
    PublicKeyUse,
};
use jsonwebtoken::DecodingKey;
use std::collections::HashMap;

/// The decoding keys of a JWK Set by `kid` ([`TokenVerifier::from_jwks`] says what is accepted).
///
/// Errors: [`KeyError::InvalidJwks`] naming the first problem.
pub(super) fn decoding_keys(
    jwks: &serde_json::Value,
) -> Result<HashMap<String, DecodingKey>, KeyError> {
    let invalid = |why: String| KeyError::InvalidJwks(why);
    if !jwks.get("keys").is_some_and(serde_json::Value::is_array) {
        return Err(invalid(
            "expected an object with a \"keys\" array".to_owned(),
        ));
    }
    // The typed set cannot tell a published private key: look for `d` in the raw members.
    if let Some(index) = jwks["keys"]
        .as_array()
        .and_then(|keys| keys.iter().position(|k| k.get("d").is_some()))
    {
        return Err(invalid(format!(
            "key {index}: holds a private key (d); publish public keys only"
        )));
    }
    let set: JwkSet =
        serde_json::from_value(jwks.clone()).map_err(|e| invalid(format!("not a JWK Set: {e}")))?;
    if set.keys.is_empty() {
        return Err(invalid("the \"keys\" array is empty".to_owned()));
    }
    let mut keys = HashMap::with_capacity(set.keys.len());
    for (index, jwk) in set.keys.iter().enumerate() {
        let (kid, key) = decoding_key(jwk).map_err(|why| invalid(format!("key {index}: {why}")))?;
        if keys.insert(kid.clone(), key).is_some() {
            return Err(invalid(format!("key {index}: duplicate kid {kid}")));
        }
    }
    Ok(keys)
}

/// The `kid` and decoding key of one public P-256 JWK (RFC 7517, RFC 7518 section 6.2). The
/// point must lie on the curve; a key without `kid` gets its RFC 7638 thumbprint.
fn decoding_key(jwk: &Jwk) -> Result<(String, DecodingKey), String> {
    let AlgorithmParameters::EllipticCurve(ec) = &jwk.algorithm else {
        return Err("only kty EC with crv P-256 is supported".to_owned());
    };
    if ec.key_type != EllipticCurveKeyType::EC || ec.curve != EllipticCurve::P256 {
        return Err("only kty EC with crv P-256 is supported".to_owned());
    }
    if let Some(alg) = jwk.common.key_algorithm {
        if alg != KeyAlgorithm::ES256 {
            return Err(format!("alg {alg:?} is not ES256"));
        }
    }
    if let Some(usage) = &jwk.common.public_key_use {
        if *usage != PublicKeyUse::Signature {
            return Err(format!("use {usage:?} is not sig"));
        }
    }
    // Parse the point with p256 first: it must lie on the curve. Re-encoding it also normalises
    // the coordinates to 32 bytes each.
    let text = serde_json::json!({"kty": "EC", "crv": "P-256", "x": ec.x, "y": ec.y}).to_string();
    let public =
        p256::PublicKey::from_jwk_str(&text).map_err(|_| "x/y are not a P-256 point".to_owned())?;
    let (x, y) = coordinates(&public);
    let kid = match &jwk.common.key_id {
        Some(kid) if !kid.is_empty() => kid.clone(),
        Some(_) => return Err("kid is empty".to_owned()),
        None => thumbprint(&x, &y).map_err(|e| e.to_string())?,
    };
    let key = DecodingKey::from_ec_components(&x, &y).map_err(|e| e.to_string())?;
    Ok((kid, key))
}
