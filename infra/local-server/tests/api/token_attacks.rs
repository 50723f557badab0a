//! Forged, altered and unusable bearer tokens (BEHAVIOR 1; RFC 8725): each
//! is 401 in the contract's error shape with `WWW-Authenticate: Bearer` on a route of every
//! function. Tokens are built by hand (header and payload JSON, ES256 with p256, HS256 with hmac)
//! so any header or claim can be forged; a control test shows the same builder's honest token is
//! accepted, so each refusal is the verifier's doing.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::*;
use hmac::{Hmac, Mac};
use p256::ecdsa::signature::Signer;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::pkcs8::{DecodePrivateKey, EncodePublicKey, LineEnding};
use serde_json::{json, Value};
use shared::auth::{SigningKey, DEV_SIGNING_KEY_PEM};

/// Northwind's account in the demo seed.
const NORTHWIND_ACCOUNT: &str = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01";
/// Globex's account in the demo seed.
const GLOBEX_ACCOUNT: &str = "aa6b7c89-eafb-4ac6-b1d8-e35e6f7a8b01";

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn b64(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn dev_kid() -> String {
    SigningKey::from_pem(DEV_SIGNING_KEY_PEM)
        .unwrap()
        .kid()
        .to_owned()
}

/// The claims the token endpoint would issue to Northwind's full client now.
fn claims() -> Value {
    json!({
        "iss": "account-routing-api",
        "aud": "account-routing-api",
        "sub": "northwind-integration",
        "account_id": NORTHWIND_ACCOUNT,
        "scope": ALL_SCOPES,
        "iat": now(),
        "exp": now() + 3600,
        "jti": uuid::Uuid::new_v4().to_string(),
    })
}

/// The header the token endpoint writes: ES256, JWT, the development key's `kid`.
fn header() -> Value {
    json!({"alg": "ES256", "typ": "JWT", "kid": dev_kid()})
}

fn with(mut value: Value, key: &str, new: Value) -> Value {
    value[key] = new;
    value
}

fn without(mut value: Value, key: &str) -> Value {
    value.as_object_mut().unwrap().remove(key);
    value
}

/// `header.payload` of a JWS compact serialization.
fn signing_input(header: &Value, claims: &Value) -> String {
    format!("{}.{}", b64(header.to_string()), b64(claims.to_string()))
}

/// An ES256 JWS over `header` and `claims` with the P-256 private key `pem`.
fn es256(pem: &str, header: &Value, claims: &Value) -> String {
    let key = p256::ecdsa::SigningKey::from_pkcs8_pem(pem).unwrap();
    let input = signing_input(header, claims);
    let signature: p256::ecdsa::Signature = key.sign(input.as_bytes());
    // Low-S, as the issuer signs (a high-S signature is refused: see below).
    let signature = signature.normalize_s().unwrap_or(signature);
    format!("{input}.{}", b64(signature.to_bytes()))
}

/// An ES256 token signed with the development key (the key the local server trusts).
fn trusted(header: &Value, claims: &Value) -> String {
    es256(DEV_SIGNING_KEY_PEM, header, claims)
}

/// A key the server does not trust: (PKCS#8 PEM, its public JWK with its RFC 7638 kid).
fn stranger() -> (String, Value) {
    let secret = p256::SecretKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
    let pem = p256::pkcs8::EncodePrivateKey::to_pkcs8_pem(&secret, LineEnding::LF)
        .unwrap()
        .to_string();
    let jwk = SigningKey::from_pem(&pem).unwrap().public_jwk();
    (pem, jwk)
}

fn hs256(secret: &[u8], header: &Value, claims: &Value) -> String {
    let input = signing_input(header, claims);
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).unwrap();
    mac.update(input.as_bytes());
    format!("{input}.{}", b64(mac.finalize().into_bytes()))
}

/// One route of every function that verifies tokens.
fn routes() -> [(Method, &'static str, Option<Value>); 4] {
    [
        (Method::GET, "/contacts", None),
        (Method::GET, "/users", None),
        (Method::GET, "/routers", None),
        (
            Method::POST,
            "/dispatch/router",
            Some(
                json!({"router_id": "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45", "object_id": "01936b2a-7c00-7a00-8000-000000000002"}),
            ),
        ),
    ]
}

/// Every token is 401 in the error shape, with the Bearer challenge, on every route.
/// [`assert_refused`] for tokens with these claims, signed with the trusted key.
async fn assert_claims_refused(app: &TestApp, cases: &[(&str, Value)]) {
    let tokens: Vec<(&str, String)> = cases
        .iter()
        .map(|(name, c)| (*name, trusted(&header(), c)))
        .collect();
    assert_refused(app, &tokens).await;
}

async fn assert_refused(app: &TestApp, cases: &[(&str, String)]) {
    for (case, token) in cases {
        for (method, path, body) in routes() {
            let answer = app.call(method.clone(), path, token, body).await;
            assert_eq!(
                answer.status,
                StatusCode::UNAUTHORIZED,
                "{case}: {method} {path}: {}",
                answer.body
            );
            assert_eq!(answer.body["error"], true, "{case}");
            assert!(answer.body["message"].is_string(), "{case}");
            assert_eq!(
                answer.headers.get("www-authenticate").unwrap(),
                "Bearer",
                "{case}"
            );
        }
    }
}

#[tokio::test]
async fn control_the_hand_built_token_of_the_issuer_is_accepted_everywhere() {
    let app = TestApp::spawn().await;
    let token = trusted(&header(), &claims());
    for (method, path, body) in routes() {
        let answer = app.call(method.clone(), path, &token, body).await;
        assert!(
            answer.status.is_success(),
            "{method} {path}: {} {}",
            answer.status,
            answer.body
        );
    }
    // Within the 30 s leeway an expired token still passes (the expiry tests below go past it).
    let late = with(claims(), "exp", json!(now() - 5));
    let answer = app
        .call(Method::GET, "/contacts", &trusted(&header(), &late), None)
        .await;
    assert_eq!(answer.status, StatusCode::OK);
}

#[tokio::test]
async fn alg_none_is_refused() {
    let app = TestApp::spawn().await;
    let mut cases = Vec::new();
    for alg in ["none", "None", "NONE", "nOnE"] {
        let input = signing_input(&with(header(), "alg", json!(alg)), &claims());
        cases.push((alg, format!("{input}.")));
    }
    let input = signing_input(&with(header(), "alg", json!("none")), &claims());
    let borrowed_signature = trusted(&header(), &claims());
    let signature = borrowed_signature.rsplit('.').next().unwrap();
    cases.push(("none with a real signature", format!("{input}.{signature}")));
    let cases: Vec<(&str, String)> = cases.into_iter().collect();
    assert_refused(&app, &cases).await;
}

#[tokio::test]
async fn hs256_keyed_with_the_public_key_is_refused() {
    let app = TestApp::spawn().await;
    let key = SigningKey::from_pem(DEV_SIGNING_KEY_PEM).unwrap();
    let point = key.public_key().to_encoded_point(false).as_bytes().to_vec();
    let compressed = key.public_key().to_encoded_point(true).as_bytes().to_vec();
    let pem = key
        .public_key()
        .to_public_key_pem(LineEnding::LF)
        .unwrap()
        .into_bytes();
    let der = key.public_key().to_public_key_der().unwrap().into_vec();
    let jwk = key.public_jwk().to_string().into_bytes();
    let jwks = key.public_jwks().to_string().into_bytes();
    let x = key.public_jwk()["x"].as_str().unwrap().as_bytes().to_vec();
    let secrets: [(&str, Vec<u8>); 7] = [
        ("SEC1 point", point),
        ("compressed point", compressed),
        ("SPKI PEM", pem),
        ("SPKI DER", der),
        ("JWK text", jwk),
        ("JWKS text", jwks),
        ("x coordinate", x),
    ];
    let h = with(header(), "alg", json!("HS256"));
    let cases: Vec<(&str, String)> = secrets
        .iter()
        .map(|(name, secret)| (*name, hs256(secret, &h, &claims())))
        .collect();
    assert_refused(&app, &cases).await;
}

#[tokio::test]
async fn an_unknown_or_injected_kid_is_refused() {
    let app = TestApp::spawn().await;
    let (stranger_pem, stranger_jwk) = stranger();
    let stranger_kid = stranger_jwk["kid"].as_str().unwrap().to_owned();
    let long_kid = "k".repeat(4000);
    let injected: [(&str, Value); 9] = [
        ("another kid", json!("prod-2026-01")),
        ("path traversal", json!("../../../../dev/null")), // self-contained: not a path
        ("SQL", json!("' OR '1'='1")),
        ("URL", json!("http://127.0.0.1:1/key")),
        ("control characters", json!("\u{0}\n\r")),
        ("the kid with a suffix", json!(format!("{}x", dev_kid()))),
        ("a long kid", json!(long_kid)),
        ("a number", json!(1)),
        ("an object", json!({"kid": dev_kid()})),
    ];
    let mut cases: Vec<(&str, String)> = injected
        .iter()
        .map(|(name, kid)| {
            (
                *name,
                trusted(&with(header(), "kid", kid.clone()), &claims()),
            )
        })
        .collect();
    cases.push(("no kid", trusted(&without(header(), "kid"), &claims())));
    cases.push((
        "a stranger's key with its own kid",
        es256(
            &stranger_pem,
            &with(header(), "kid", json!(stranger_kid)),
            &claims(),
        ),
    ));
    cases.push((
        "a stranger's key with the trusted kid",
        es256(&stranger_pem, &header(), &claims()),
    ));
    assert_refused(&app, &cases).await;
}

#[tokio::test]
async fn keys_offered_in_jku_jwk_or_x5u_headers_are_not_trusted() {
    let app = TestApp::spawn().await;
    let (pem, jwk) = stranger();
    let own_kid = jwk["kid"].clone();
    let public_jwk = without(jwk, "kid");
    let variants: [(&str, Value); 6] = [
        (
            "jwk with its kid",
            with(
                with(header(), "jwk", public_jwk.clone()),
                "kid",
                own_kid.clone(),
            ),
        ),
        (
            "jwk with the trusted kid",
            with(header(), "jwk", public_jwk.clone()),
        ),
        (
            "jwk without kid",
            with(without(header(), "kid"), "jwk", public_jwk),
        ),
        (
            "jku with its kid",
            with(
                with(
                    header(),
                    "jku",
                    json!("http://127.0.0.1:1/.well-known/jwks.json"),
                ),
                "kid",
                own_kid,
            ),
        ),
        (
            "jku with the trusted kid",
            with(
                header(),
                "jku",
                json!("http://127.0.0.1:1/.well-known/jwks.json"),
            ),
        ),
        (
            "x5u",
            with(header(), "x5u", json!("http://127.0.0.1:1/cert.pem")),
        ),
    ];
    let cases: Vec<(&str, String)> = variants
        .iter()
        .map(|(name, h)| (*name, es256(&pem, h, &claims())))
        .collect();
    assert_refused(&app, &cases).await;
}

#[tokio::test]
async fn an_expired_token_is_refused_past_the_leeway() {
    let app = TestApp::spawn().await;
    let cases = [
        (
            "expired 31 s ago plus a margin",
            trusted(&header(), &with(claims(), "exp", json!(now() - 45))),
        ),
        (
            "expired an hour ago",
            trusted(&header(), &with(claims(), "exp", json!(now() - 3600))),
        ),
        (
            "exp at the epoch",
            trusted(&header(), &with(claims(), "exp", json!(0))),
        ),
        (
            "exp far negative",
            trusted(&header(), &with(claims(), "exp", json!(i64::MIN))),
        ),
        (
            "exp as a string",
            trusted(&header(), &with(claims(), "exp", json!("9999999999"))),
        ),
        ("no exp", trusted(&header(), &without(claims(), "exp"))),
    ];
    assert_refused(&app, &cases).await;
}

/// A token is not valid before its `nbf` (RFC 7519 section 4.1.5), nor when its `iat` lies in
/// the future (the issuer stamps `iat` with its own clock, so such a token was not issued by it),
/// each beyond the 30 s leeway (docs/decisions.md).
#[tokio::test]
async fn a_token_not_yet_valid_is_refused() {
    let app = TestApp::spawn().await;
    let cases = [
        (
            "nbf in an hour",
            trusted(&header(), &with(claims(), "nbf", json!(now() + 3600))),
        ),
        (
            "nbf past the leeway",
            trusted(&header(), &with(claims(), "nbf", json!(now() + 90))),
        ),
        (
            "iat in an hour",
            trusted(&header(), &with(claims(), "iat", json!(now() + 3600))),
        ),
        (
            "iat far in the future",
            trusted(&header(), &with(claims(), "iat", json!(i64::MAX))),
        ),
        (
            "nbf as a string",
            trusted(&header(), &with(claims(), "nbf", json!("0"))),
        ),
    ];
    assert_refused(&app, &cases).await;
    // Within the leeway both are accepted (clock skew between instances).
    let skewed = with(
        with(claims(), "nbf", json!(now() + 5)),
        "iat",
        json!(now() + 5),
    );
    let answer = app
        .call(Method::GET, "/contacts", &trusted(&header(), &skewed), None)
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
}

#[tokio::test]
async fn a_wrong_issuer_or_audience_is_refused() {
    let app = TestApp::spawn().await;
    let cases = [
        (
            "another iss",
            with(claims(), "iss", json!("https://evil.example")),
        ),
        (
            "iss in another case",
            with(claims(), "iss", json!("Account-Routing-API")),
        ),
        ("no iss", without(claims(), "iss")),
        ("another aud", with(claims(), "aud", json!("another-api"))),
        (
            "aud list without ours",
            with(claims(), "aud", json!(["another-api"])),
        ),
        ("no aud", without(claims(), "aud")),
    ];
    assert_claims_refused(&app, &cases).await;
}

#[tokio::test]
async fn a_token_without_account_context_is_refused_saying_so() {
    let app = TestApp::spawn().await;
    let cases = [
        ("no account_id", without(claims(), "account_id")),
        ("empty account_id", with(claims(), "account_id", json!(""))),
        (
            "account_id not a UUID",
            with(claims(), "account_id", json!("northwind")),
        ),
        ("account_id null", with(claims(), "account_id", Value::Null)),
    ];
    for (case, c) in &cases {
        let answer = app
            .call(Method::GET, "/contacts", &trusted(&header(), c), None)
            .await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{case}");
        assert_eq!(
            answer.body,
            json!({"message": "Unauthorized: missing account context", "error": true}),
            "{case}"
        );
    }
    assert_claims_refused(&app, &cases).await;
}

#[tokio::test]
async fn a_tampered_token_is_refused() {
    let app = TestApp::spawn().await;
    let honest = trusted(&header(), &claims());
    let parts: Vec<&str> = honest.split('.').collect();
    let swap_payload = |c: &Value| format!("{}.{}.{}", parts[0], b64(c.to_string()), parts[2]);
    let mut signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
    signature[0] ^= 0x80;
    let other = trusted(
        &header(),
        &with(claims(), "scope", json!("service-api/read")),
    );
    let other_signature = other.rsplit('.').next().unwrap();
    let cases = [
        (
            "account_id moved to another account",
            swap_payload(&with(claims(), "account_id", json!(GLOBEX_ACCOUNT))),
        ),
        (
            "scope widened",
            swap_payload(&with(claims(), "scope", json!("service-api/admin"))),
        ),
        (
            "exp extended",
            swap_payload(&with(claims(), "exp", json!(now() + 10 * 365 * 86_400))),
        ),
        (
            "header changed",
            format!(
                "{}.{}.{}",
                b64(with(header(), "typ", json!("at+jwt")).to_string()),
                parts[1],
                parts[2]
            ),
        ),
        (
            "a flipped signature bit",
            format!("{}.{}.{}", parts[0], parts[1], b64(&signature)),
        ),
        (
            "another token's signature",
            format!("{}.{}.{other_signature}", parts[0], parts[1]),
        ),
        ("no signature", format!("{}.{}.", parts[0], parts[1])),
        ("two segments", format!("{}.{}", parts[0], parts[1])),
        ("four segments", format!("{honest}.{}", parts[2])),
        (
            "padded base64",
            format!("{}=.{}.{}", parts[0], parts[1], parts[2]),
        ),
    ];
    assert_refused(&app, &cases).await;
}

/// An 8 KB token, even one signed with the trusted key, is refused before it is decoded: no
/// token this API issues is longer than a few hundred bytes (docs/decisions.md).
#[tokio::test]
async fn an_8_kb_token_is_refused() {
    let app = TestApp::spawn().await;
    let padded = with(claims(), "padding", json!("p".repeat(5680)));
    let signed = trusted(&header(), &padded);
    assert!(
        (8 * 1024 - 200..=8 * 1024 + 200).contains(&signed.len()),
        "{}",
        signed.len()
    );
    let junk = format!(
        "{}.{}.{}",
        "a".repeat(4000),
        "b".repeat(4000),
        "c".repeat(192)
    );
    let cases = [
        ("an 8 KB token signed with the trusted key", signed),
        ("8 KB of base64url junk", junk),
    ];
    assert_refused(&app, &cases).await;
}

/// BEHAVIOR 1: a token whose lifetime (`exp - iat`) is over 24 h is refused,
/// however it was signed: the longest lifetime the issuer can be configured with is 24 h.
#[tokio::test]
async fn a_lifetime_over_24_hours_is_refused() {
    let app = TestApp::spawn().await;
    let day = 86_400;
    let accepted = with(claims(), "exp", json!(now() + day));
    let answer = app
        .call(
            Method::GET,
            "/contacts",
            &trusted(&header(), &accepted),
            None,
        )
        .await;
    assert_eq!(
        answer.status,
        StatusCode::OK,
        "24 h exactly: {}",
        answer.body
    );
    let cases = [
        (
            "24 h and a second",
            with(claims(), "exp", json!(now() + day + 1)),
        ),
        (
            "100 years",
            with(claims(), "exp", json!(now() + 100 * 365 * day)),
        ),
        (
            "exp at the end of time",
            with(claims(), "exp", json!(i64::MAX)),
        ),
        (
            "an old iat with a fresh exp",
            with(
                with(claims(), "iat", json!(now() - 2 * day)),
                "exp",
                json!(now() + 60),
            ),
        ),
    ];
    assert_claims_refused(&app, &cases).await;
}

/// RFC 7515 section 4.1.11: `crit` names extensions the recipient must
/// understand; none is understood here, so any `crit` header is refused.
#[tokio::test]
async fn a_crit_header_is_refused() {
    let app = TestApp::spawn().await;
    let cases: Vec<(&str, String)> = [
        ("crit naming a registered claim", json!(["exp"])),
        ("crit naming an extension", json!(["b64"])),
        ("an empty crit", json!([])),
        ("crit that is not a list", json!("exp")),
    ]
    .into_iter()
    .map(|(case, crit)| {
        let mut header = with(header(), "crit", crit.clone());
        if crit == json!(["b64"]) {
            header["b64"] = json!(true);
        }
        (case, trusted(&header, &claims()))
    })
    .collect();
    assert_refused(&app, &cases).await;
}

/// An ECDSA signature `(r, s)` and `(r, n - s)` both verify; only the low-S
/// one is accepted, so a token has one valid string (the issuer signs low-S).
#[tokio::test]
async fn a_high_s_signature_is_refused() {
    let app = TestApp::spawn().await;
    let token = trusted(&header(), &claims());
    let answer = app.call(Method::GET, "/contacts", &token, None).await;
    assert_eq!(
        answer.status,
        StatusCode::OK,
        "the low-S token: {}",
        answer.body
    );
    let (input, signature) = token.rsplit_once('.').unwrap();
    let signature =
        p256::ecdsa::Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature).unwrap()).unwrap();
    let (r, s) = signature.split_scalars();
    let high = p256::ecdsa::Signature::from_scalars(r, -*s).unwrap();
    assert!(high.normalize_s().is_some(), "the twin is high-S");
    let twin = format!("{input}.{}", b64(high.to_bytes()));
    assert_refused(&app, &[("the high-S twin of a valid token", twin)]).await;
}
