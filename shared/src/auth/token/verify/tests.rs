//! The verifier's tests: the checks of a token, the key set it loads, and the tokens it
//! remembers.

use super::*;
use crate::auth::keys::KeyError;
use crate::auth::scope::Scope;
use crate::auth::token::fixtures::*;
use crate::auth::token::issue::TokenIssuer;
use crate::auth::token::principal::AuthError;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::pkcs8::{EncodePublicKey, LineEnding};
use serde_json::json;

fn issuer() -> TokenIssuer {
    TokenIssuer::new(dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, 3600)
}

fn verifier() -> TokenVerifier {
    TokenVerifier::from_signing_key(&dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE)
        .expect("the dev key makes a verifier")
}

#[test]
fn an_issued_token_verifies_to_its_principal() {
    let issued = issuer()
        .issue(
            "northwind-integration",
            ACCOUNT,
            &[Scope::Read, Scope::Update],
            t0(),
        )
        .expect("issues");
    assert_eq!(issued.expires_in, 3600);
    assert_eq!(issued.scope, "service-api/read service-api/update");
    let principal = verifier()
        .verify(&issued.access_token, t0())
        .expect("verifies");
    assert_eq!(principal.client_id, "northwind-integration");
    assert_eq!(principal.account_id, ACCOUNT);
    assert_eq!(principal.scopes, vec![Scope::Read, Scope::Update]);
    assert!(Uuid::parse_str(&principal.jti).is_ok(), "{}", principal.jti);
}

#[test]
fn a_token_is_accepted_until_the_leeway_after_expiry_and_refused_after() {
    let issued = issuer()
        .issue("c", ACCOUNT, &[Scope::Read], t0())
        .expect("issues");
    let expiry = t0() + chrono::Duration::seconds(3600);
    let leeway = chrono::Duration::seconds(30);
    assert!(verifier()
        .verify(&issued.access_token, expiry + leeway)
        .is_ok());
    assert_eq!(
        verifier().verify(
            &issued.access_token,
            expiry + leeway + chrono::Duration::seconds(1)
        ),
        Err(AuthError::InvalidToken)
    );
}

#[test]
fn tokens_of_another_issuer_or_audience_are_refused() {
    let cases = [
        (
            "wrong iss",
            TokenIssuer::new(dev_key(), "someone-else", DEFAULT_AUDIENCE, 3600),
        ),
        (
            "wrong aud",
            TokenIssuer::new(dev_key(), DEFAULT_ISSUER, "another-api", 3600),
        ),
    ];
    for (name, issuer) in cases {
        let issued = issuer
            .issue("c", ACCOUNT, &[Scope::Read], t0())
            .expect("issues");
        assert_eq!(
            verifier().verify(&issued.access_token, t0()),
            Err(AuthError::InvalidToken),
            "{name}"
        );
    }
}

#[test]
fn tokens_missing_a_required_claim_are_refused() {
    for name in ["iss", "aud", "sub", "exp"] {
        let mut payload = serde_json::to_value(claims()).expect("serializes");
        payload.as_object_mut().expect("an object").remove(name);
        let header = Header {
            kid: Some(dev_key().kid().to_owned()),
            ..Header::new(Algorithm::ES256)
        };
        let token =
            jsonwebtoken::encode(&header, &payload, dev_key().encoding_key()).expect("signs");
        assert_eq!(
            verifier().verify(&token, t0()),
            Err(AuthError::InvalidToken),
            "without {name}"
        );
    }
}

#[test]
fn a_token_signed_by_an_unknown_key_is_refused_whatever_its_kid() {
    let stranger = other_key();
    let cases = [
        ("its own kid", Some(stranger.kid().to_owned())),
        ("the trusted key's kid", Some(dev_key().kid().to_owned())),
        ("no kid", None),
    ];
    for (name, kid) in cases {
        let token = sign(&stranger, kid.as_deref(), &claims());
        assert_eq!(
            verifier().verify(&token, t0()),
            Err(AuthError::InvalidToken),
            "{name}"
        );
    }
}

#[test]
fn a_trusted_key_without_the_kid_in_the_header_is_refused() {
    let token = sign(&dev_key(), None, &claims());
    assert_eq!(
        verifier().verify(&token, t0()),
        Err(AuthError::InvalidToken)
    );
}

#[test]
fn a_tampered_signature_or_payload_is_refused() {
    let token = sign(&dev_key(), Some(dev_key().kid()), &claims());
    assert!(
        verifier().verify(&token, t0()).is_ok(),
        "the untampered token verifies"
    );
    let parts: Vec<&str> = token.split('.').collect();
    let mut signature = URL_SAFE_NO_PAD.decode(parts[2]).expect("base64url");
    signature[10] ^= 0x01;
    let bad_signature = format!(
        "{}.{}.{}",
        parts[0],
        parts[1],
        URL_SAFE_NO_PAD.encode(signature)
    );
    let mut forged = claims();
    forged.account_id = Some(Uuid::from_u128(7).to_string());
    let bad_payload = format!("{}.{}.{}", parts[0], segment(&json!(forged)), parts[2]);
    for (name, token) in [("signature", bad_signature), ("payload", bad_payload)] {
        assert_eq!(
            verifier().verify(&token, t0()),
            Err(AuthError::InvalidToken),
            "{name}"
        );
    }
}

#[test]
fn an_unsigned_alg_none_token_is_refused() {
    let header = json!({"alg": "none", "typ": "JWT", "kid": dev_key().kid()});
    let payload = json!(claims());
    for signature in ["", "AAAA"] {
        let token = format!("{}.{}.{signature}", segment(&header), segment(&payload));
        assert_eq!(
            verifier().verify(&token, t0()),
            Err(AuthError::InvalidToken)
        );
    }
}

#[test]
fn an_hs256_token_keyed_with_the_public_key_is_refused() {
    // Algorithm confusion (RFC 8725 section 2.1): an attacker signs with HMAC using the
    // public key, in each representation a verifier might use as "the key", as the secret.
    let key = dev_key();
    let point = key.public_key().to_encoded_point(false).as_bytes().to_vec();
    let pem = key
        .public_key()
        .to_public_key_pem(LineEnding::LF)
        .expect("encodes");
    let jwks = key.public_jwks().to_string();
    for secret in [point, pem.into_bytes(), jwks.into_bytes()] {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(key.kid().to_owned());
        let token = jsonwebtoken::encode(
            &header,
            &claims(),
            &jsonwebtoken::EncodingKey::from_secret(&secret),
        )
        .expect("signs");
        assert_eq!(
            verifier().verify(&token, t0()),
            Err(AuthError::InvalidToken)
        );
    }
}

#[test]
fn garbage_is_an_invalid_token_not_a_panic() {
    for token in [
        "",
        ".",
        "..",
        "a.b.c",
        "eyJhbGciOiJFUzI1NiJ9..",
        "\u{1F600}.x.y",
    ] {
        assert_eq!(
            verifier().verify(token, t0()),
            Err(AuthError::InvalidToken),
            "{token:?}"
        );
    }
}

#[test]
fn a_valid_token_without_a_usable_account_id_lacks_account_context() {
    for account_id in [None, Some(""), Some("not-a-uuid"), Some("   ")] {
        let mut claims = claims();
        claims.account_id = account_id.map(str::to_owned);
        let token = sign(&dev_key(), Some(dev_key().kid()), &claims);
        assert_eq!(
            verifier().verify(&token, t0()),
            Err(AuthError::MissingAccountContext),
            "{account_id:?}"
        );
    }
}

#[test]
fn a_forged_token_without_account_id_is_invalid_not_missing_context() {
    let mut claims = claims();
    claims.account_id = None;
    let token = sign(&other_key(), Some(dev_key().kid()), &claims);
    assert_eq!(
        verifier().verify(&token, t0()),
        Err(AuthError::InvalidToken)
    );
}

#[test]
fn unknown_scope_names_in_a_token_grant_nothing() {
    let mut claims = claims();
    claims.scope = "service-api/read  service-api/admin service-api/delete".to_owned();
    let token = sign(&dev_key(), Some(dev_key().kid()), &claims);
    let principal = verifier().verify(&token, t0()).expect("verifies");
    assert_eq!(principal.scopes, vec![Scope::Read, Scope::Delete]);
}

#[test]
fn authenticate_combines_header_parsing_and_verification() {
    let issued = issuer()
        .issue("c", ACCOUNT, &[Scope::Read], t0())
        .expect("issues");
    let header = format!("Bearer {}", issued.access_token);
    assert_eq!(
        verifier()
            .authenticate(Some(&header), t0())
            .map(|p| p.account_id)
            .ok(),
        Some(ACCOUNT)
    );
    let late = t0() + chrono::Duration::hours(2);
    assert_eq!(
        verifier()
            .authenticate(Some(&header), late)
            .map_err(|e| e.to_string()),
        Err("Unauthorized: invalid token".to_owned())
    );
}

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

#[test]
fn a_remembered_token_answers_its_principal_until_the_leeway_after_expiry_and_not_after() {
    let verifier = verifier();
    let issued = issuer()
        .issue("c", ACCOUNT, &[Scope::Read], t0())
        .expect("issues");
    let first = verifier
        .verify(&issued.access_token, t0())
        .expect("verifies");
    assert_eq!(
        verifier.cached_tokens(),
        1,
        "a verified token is remembered"
    );
    let expiry = t0() + chrono::Duration::seconds(3600 + 30);
    assert_eq!(verifier.verify(&issued.access_token, expiry), Ok(first));
    assert_eq!(
        verifier.verify(&issued.access_token, expiry + chrono::Duration::seconds(1)),
        Err(AuthError::InvalidToken),
        "the cache never extends a token's life"
    );
}

#[test]
fn a_remembered_token_is_refused_before_its_iat_like_a_fresh_one() {
    // The cache re-checks every time-dependent condition, `iat`/`nbf` included (a clock
    // that steps back must not make the cache more lenient than a full verification).
    let verifier = verifier();
    let token = sign(&dev_key(), Some(dev_key().kid()), &claims());
    assert!(verifier.verify(&token, t0()).is_ok());
    assert_eq!(verifier.cached_tokens(), 1);
    let early = t0() + chrono::Duration::seconds(claims().iat - t0().timestamp() - 31);
    assert_eq!(
        verifier.verify_uncached(&token, early),
        Err(AuthError::InvalidToken)
    );
    assert_eq!(verifier.verify(&token, early), Err(AuthError::InvalidToken));
}

#[test]
fn tampered_copies_of_a_remembered_token_are_still_refused() {
    let verifier = verifier();
    let token = sign(&dev_key(), Some(dev_key().kid()), &claims());
    assert!(verifier.verify(&token, t0()).is_ok());
    let parts: Vec<&str> = token.split('.').collect();
    let mut forged = claims();
    forged.account_id = Some(Uuid::from_u128(7).to_string());
    let mut signature = URL_SAFE_NO_PAD.decode(parts[2]).expect("base64url");
    signature[5] ^= 0x01;
    let cases = [
        (
            "payload",
            format!("{}.{}.{}", parts[0], segment(&json!(forged)), parts[2]),
        ),
        (
            "signature",
            format!(
                "{}.{}.{}",
                parts[0],
                parts[1],
                URL_SAFE_NO_PAD.encode(signature)
            ),
        ),
        ("a byte appended", format!("{token}A")),
        ("a prefix", token[..token.len() - 1].to_owned()),
    ];
    for (name, tampered) in cases {
        assert_eq!(
            verifier.verify(&tampered, t0()),
            Err(AuthError::InvalidToken),
            "{name}"
        );
    }
    assert_eq!(verifier.cached_tokens(), 1, "refusals are not remembered");
}

#[test]
fn refused_tokens_and_tokens_without_account_context_are_not_remembered() {
    let verifier = verifier();
    let mut no_account = claims();
    no_account.account_id = None;
    let without_context = sign(&dev_key(), Some(dev_key().kid()), &no_account);
    for _ in 0..2 {
        assert_eq!(
            verifier.verify(&without_context, t0()),
            Err(AuthError::MissingAccountContext)
        );
        let stranger = sign(&other_key(), Some(dev_key().kid()), &claims());
        assert_eq!(
            verifier.verify(&stranger, t0()),
            Err(AuthError::InvalidToken)
        );
    }
    assert_eq!(verifier.cached_tokens(), 0);
}

#[test]
fn the_cache_holds_at_most_its_capacity_and_drops_expired_tokens_first() {
    let bounded = verifier().with_cache_capacity(3);
    let short = TokenIssuer::new(dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, 60);
    let long = TokenIssuer::new(dev_key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE, 3600);
    let issue = |issuer: &TokenIssuer| {
        issuer
            .issue("c", ACCOUNT, &[Scope::Read], t0())
            .expect("issues")
            .access_token
    };
    let (expiring, kept) = (issue(&short), issue(&long));
    for token in [&expiring, &kept, &issue(&long)] {
        assert!(bounded.verify(token, t0()).is_ok());
    }
    assert_eq!(bounded.cached_tokens(), 3);
    // Full: the expired token makes room, the others stay.
    let later = t0() + chrono::Duration::seconds(600);
    assert!(bounded.verify(&issue(&long), later).is_ok());
    assert_eq!(bounded.cached_tokens(), 3);
    // Full of live tokens: never more than the capacity.
    for _ in 0..10 {
        assert!(bounded.verify(&issue(&long), later).is_ok());
        assert!(bounded.cached_tokens() <= 3);
    }
    assert!(bounded.verify(&kept, later).is_ok(), "still verifies");
    let off = verifier().with_cache_capacity(0);
    assert!(off.verify(&kept, t0()).is_ok());
    assert_eq!(off.cached_tokens(), 0, "capacity 0 remembers nothing");
}

#[test]
fn verify_uncached_checks_in_full_and_remembers_nothing() {
    let verifier = verifier();
    let token = sign(&dev_key(), Some(dev_key().kid()), &claims());
    assert_eq!(
        verifier.verify_uncached(&token, t0()),
        verifier.verify(&token, t0()).map(Arc::unwrap_or_clone)
    );
    assert_eq!(verifier.cached_tokens(), 1, "only verify remembers");
}
