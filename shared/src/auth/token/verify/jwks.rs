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
#[cfg(test)]
mod tests {
    use super::super::TokenVerifier;
    use super::*;
    use crate::auth::scope::Scope;
    use crate::auth::token::fixtures::*;
    use crate::auth::token::issue::TokenIssuer;
    use crate::auth::token::principal::AuthError;
    use serde_json::json;

    #[test]
    fn a_verifier_with_several_keys_accepts_each_by_kid() {
        let (old, new) = (dev_key(), other_key());
        let jwks = json!({"keys": [old.public_jwk(), new.public_jwk()]});
        let verifier =
            TokenVerifier::from_jwks(&jwks, DEFAULT_ISSUER, DEFAULT_AUDIENCE).expect("loads");
        for key in [&old, &new] {
            let issued = TokenIssuer::new(key.clone(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, 60)
                .issue("c", ACCOUNT, &[Scope::Read], t0())
                .expect("issues");
            assert_eq!(
                verifier
                    .verify(&issued.access_token, t0())
                    .map(|p| p.account_id),
                Ok(ACCOUNT)
            );
        }
        let third = sign(&other_key(), None, &claims());
        assert_eq!(verifier.verify(&third, t0()), Err(AuthError::InvalidToken));
    }

    #[test]
    fn a_jwks_given_as_text_loads_and_a_key_without_kid_gets_its_thumbprint() {
        let mut jwk = dev_key().public_jwk();
        jwk.as_object_mut().expect("an object").remove("kid");
        let text = json!({"keys": [jwk]}).to_string();
        let verifier =
            TokenVerifier::from_jwks_str(&text, DEFAULT_ISSUER, DEFAULT_AUDIENCE).expect("loads");
        assert_eq!(verifier.kids().collect::<Vec<_>>(), vec![dev_key().kid()]);
    }

    #[test]
    fn unusable_jwks_are_refused_at_load() {
        let good = dev_key().public_jwk();
        let with = |name: &str, value: serde_json::Value| {
            let mut jwk = good.clone();
            jwk[name] = value;
            json!({"keys": [jwk]})
        };
        let cases = [
            ("not a set", json!([good.clone()])),
            ("empty set", json!({"keys": []})),
            (
                "duplicate kid",
                json!({"keys": [good.clone(), good.clone()]}),
            ),
            ("RSA", with("kty", json!("RSA"))),
            ("P-384", with("crv", json!("P-384"))),
            ("HS256", with("alg", json!("HS256"))),
            ("encryption key", with("use", json!("enc"))),
            ("private member", with("d", json!("AAAA"))),
            (
                "point off the curve",
                with("y", json!(URL_SAFE_NO_PAD.encode([1u8; 32]))),
            ),
            ("x not a string", with("x", json!(1))),
            ("empty kid", with("kid", json!(""))),
        ];
        for (name, jwks) in cases {
            assert!(
                matches!(
                    TokenVerifier::from_jwks(&jwks, "i", "a"),
                    Err(KeyError::InvalidJwks(_))
                ),
                "{name}"
            );
        }
        assert!(matches!(
            TokenVerifier::from_jwks_str("{", "i", "a"),
            Err(KeyError::InvalidJwks(_))
        ));
    }
}
