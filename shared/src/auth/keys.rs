//! The token signing key: an ECDSA P-256 key for ES256 (RFC 7518 section 3.4), its key id and
//! its public half as a JWK Set (RFC 7517).
//!
//! Only the token function holds the private key; every other function verifies with the public
//! JWKS from plain configuration (BEHAVIOR 1). The key id is the RFC 7638 JWK thumbprint, so the
//! same key always gets the same `kid` and keys can rotate by publishing several.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, EllipticCurveKeyParameters,
    EllipticCurveKeyType, Jwk, KeyAlgorithm, PublicKeyUse, ThumbprintHash,
};
use jsonwebtoken::EncodingKey;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use p256::{PublicKey, SecretKey};
use std::fmt;

/// Default `iss` of issued tokens, and the issuer verifiers expect, unless configured otherwise.
pub const DEFAULT_ISSUER: &str = "account-routing-api";

/// Default `aud` of issued tokens, and the audience verifiers expect, unless configured otherwise.
pub const DEFAULT_AUDIENCE: &str = "account-routing-api";

/// A fixed P-256 private key (PKCS#8 PEM) for local runs and tests only.
///
/// This key is PUBLIC: it is committed to the repository, so anyone can sign tokens with it.
/// Never configure it in a deployed environment; production reads its own key from a secret.
pub const DEV_SIGNING_KEY_PEM: &str = include_str!("../../dev-keys/dev-signing-key.pem");

/// The environment variable that lets a function start with the development key
/// ([`DEV_SIGNING_KEY_PEM`]) configured: its signing key (token function) or a public key of its
/// `JWT_PUBLIC_JWKS` (every other function). Only `true` allows it; local scripts set it, a
/// deployment never does (`docs/decisions.md`, "Token endpoint").
pub const ALLOW_DEVELOPMENT_SIGNING_KEY: &str = "ALLOW_DEVELOPMENT_SIGNING_KEY";

/// Whether the value of [`ALLOW_DEVELOPMENT_SIGNING_KEY`] allows the development key: `true`
/// (any case, surrounding blanks ignored); anything else, or unset, does not.
pub fn development_key_allowed(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The public point of [`DEV_SIGNING_KEY_PEM`] as JWK coordinates (RFC 7518 section 6.2.1,
/// base64url): written out rather than derived from the private key at every cold start, where
/// the scalar multiplication cost 0.5 to 1 ms of CPU in every function's init
/// (`docs/performance.md`; a test derives it and compares).
const DEVELOPMENT_PUBLIC_JWK: &str = r#"{"kty":"EC","crv":"P-256","x":"zb3ODqgtFcB0R2HK4CIUtFKzy2KaCfBnyevyeSax9GI","y":"NtwgS68KTcicTYR8lpq2FQIkgiLZIxTxFBoQbW5kdjs"}"#;

/// The public key of [`DEV_SIGNING_KEY_PEM`] ([`DEVELOPMENT_PUBLIC_JWK`]).
fn development_public_key() -> Option<&'static PublicKey> {
    static KEY: std::sync::OnceLock<Option<PublicKey>> = std::sync::OnceLock::new();
    KEY.get_or_init(|| PublicKey::from_jwk_str(DEVELOPMENT_PUBLIC_JWK).ok())
        .as_ref()
}

/// Whether a JWK Set (`{"keys": [...]}`) lists the development key's public key, whatever `kid`
/// it gives it (the points are compared). Entries that are not P-256 points are skipped (the
/// verifier refuses them on its own).
pub fn jwks_lists_development_key(jwks: &serde_json::Value) -> bool {
    let Some(dev) = development_public_key() else {
        return false;
    };
    jwks.get("keys")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|jwk| {
            let text = serde_json::json!({"kty": "EC", "crv": "P-256", "x": jwk.get("x")?, "y": jwk.get("y")?});
            PublicKey::from_jwk_str(&text.to_string()).ok()
        })
        .any(|key| key == *dev)
}

const PKCS8_LABEL: &str = "PRIVATE KEY";
const SEC1_LABEL: &str = "EC PRIVATE KEY";

/// Why a key or key set could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The text holds neither a `BEGIN PRIVATE KEY` (PKCS#8) nor a `BEGIN EC PRIVATE KEY` (SEC1)
    /// block; e.g. a public key, a certificate or an encrypted private key.
    #[error("expected a PEM block BEGIN PRIVATE KEY (PKCS#8) or BEGIN EC PRIVATE KEY (SEC1)")]
    UnsupportedPem,
    /// The PEM block is not a valid P-256 private key (wrong curve, corrupt base64 or DER).
    #[error("not a valid P-256 private key in {format} form")]
    InvalidPrivateKey {
        /// `PKCS#8` or `SEC1`.
        format: &'static str,
    },
    /// The JWK Set is malformed or holds a key this service cannot use; the text says which.
    #[error("invalid JWK Set: {0}")]
    InvalidJwks(String),
}

/// An ES256 signing key: a P-256 private key with its RFC 7638 key id.
///
/// `Debug` shows the key id only, never the private key.
#[derive(Clone)]
pub struct SigningKey {
    encoding: EncodingKey,
    public: PublicKey,
    kid: String,
}

impl SigningKey {
    /// Parses a P-256 private key from PEM: PKCS#8 (`-----BEGIN PRIVATE KEY-----`, what
    /// `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256` writes) or SEC1
    /// (`-----BEGIN EC PRIVATE KEY-----`, what `openssl ecparam -genkey` writes). Text around the
    /// block, such as a leading `BEGIN EC PARAMETERS` block, is ignored.
    ///
    /// Errors: [`KeyError::UnsupportedPem`] when neither block is present,
    /// [`KeyError::InvalidPrivateKey`] when the block is not a P-256 private key.
    pub fn from_pem(pem: &str) -> Result<SigningKey, KeyError> {
        let secret = if let Some(block) = pem_block(pem, PKCS8_LABEL) {
            SecretKey::from_pkcs8_pem(block)
                .map_err(|_| KeyError::InvalidPrivateKey { format: "PKCS#8" })?
        } else if let Some(block) = pem_block(pem, SEC1_LABEL) {
            SecretKey::from_sec1_pem(block)
                .map_err(|_| KeyError::InvalidPrivateKey { format: "SEC1" })?
        } else {
            return Err(KeyError::UnsupportedPem);
        };
        Self::from_secret_key(&secret)
    }

    fn from_secret_key(secret: &SecretKey) -> Result<SigningKey, KeyError> {
        // jsonwebtoken's ES256 signer takes the PKCS#8 DER of the private key.
        let der = secret
            .to_pkcs8_der()
            .map_err(|_| KeyError::InvalidPrivateKey { format: "PKCS#8" })?;
        let public = secret.public_key();
        let (x, y) = coordinates(&public);
        let kid =
            thumbprint(&x, &y).map_err(|_| KeyError::InvalidPrivateKey { format: "PKCS#8" })?;
        Ok(SigningKey {
            encoding: EncodingKey::from_ec_der(der.as_bytes()),
            kid,
            public,
        })
    }

    /// The key id: the RFC 7638 JWK thumbprint, i.e. base64url (no padding) of the SHA-256 of
    /// `{"crv":"P-256","kty":"EC","x":"<x>","y":"<y>"}`; 43 characters.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key as a JWK (RFC 7517 section 4, RFC 7518 section 6.2):
    /// `{kty: "EC", crv: "P-256", x, y, kid, alg: "ES256", use: "sig"}`, `x` and `y` being the
    /// 32-byte coordinates in base64url without padding.
    pub fn public_jwk(&self) -> serde_json::Value {
        let (x, y) = coordinates(&self.public);
        let mut jwk = ec_jwk(x, y);
        jwk.common.key_id = Some(self.kid.clone());
        jwk.common.key_algorithm = Some(KeyAlgorithm::ES256);
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        serde_json::to_value(&jwk).unwrap_or_default()
    }

    /// The public key as a JWK Set `{"keys": [jwk]}` (RFC 7517 section 5), the shape
    /// `TokenVerifier::from_jwks` reads and verifying functions are configured with.
    pub fn public_jwks(&self) -> serde_json::Value {
        serde_json::json!({ "keys": [self.public_jwk()] })
    }

    /// The public key.
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// Whether this is the committed development key ([`DEV_SIGNING_KEY_PEM`]), which anyone
    /// can sign tokens with.
    pub fn is_development_key(&self) -> bool {
        development_public_key().is_some_and(|dev| *dev == self.public)
    }

    pub(crate) fn encoding_key(&self) -> &EncodingKey {
        &self.encoding
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// The affine coordinates of a P-256 public key, base64url without padding (32 bytes each).
pub(crate) fn coordinates(public: &PublicKey) -> (String, String) {
    let point = public.to_encoded_point(false);
    let encode = |c: Option<&p256::FieldBytes>| c.map(|c| URL_SAFE_NO_PAD.encode(c));
    // An uncompressed point of a valid public key always has both coordinates.
    (
        encode(point.x()).unwrap_or_default(),
        encode(point.y()).unwrap_or_default(),
    )
}

/// A public P-256 JWK with only its required members.
fn ec_jwk(x: String, y: String) -> Jwk {
    Jwk {
        common: CommonParameters::default(),
        algorithm: AlgorithmParameters::EllipticCurve(EllipticCurveKeyParameters {
            key_type: EllipticCurveKeyType::EC,
            curve: EllipticCurve::P256,
            x,
            y,
        }),
    }
}

/// The RFC 7638 thumbprint of a P-256 JWK given its base64url coordinates (jsonwebtoken's
/// [`Jwk::thumbprint`] with SHA-256): 43 base64url characters.
///
/// Errors: jsonwebtoken's, when no crypto backend computes the digest.
pub(crate) fn thumbprint(x: &str, y: &str) -> Result<String, jsonwebtoken::errors::Error> {
    ec_jwk(x.to_owned(), y.to_owned()).thumbprint(ThumbprintHash::SHA256)
}

/// The first `-----BEGIN <label>-----` ... `-----END <label>-----` block of `text`, if any.
fn pem_block<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)?;
    let stop = start + text[start..].find(&end)? + end.len();
    text.get(start..stop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sha2::{Digest, Sha256};

    #[test]
    fn the_written_out_development_public_key_is_the_development_keys_own() {
        let derived = SigningKey::from_pem(DEV_SIGNING_KEY_PEM)
            .expect("the development key loads")
            .public;
        assert_eq!(development_public_key(), Some(&derived));
    }

    /// The development key in SEC1 form, as `openssl ec -in dev-signing-key.pem` prints it.
    const DEV_KEY_SEC1_PEM: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIMYTEeknp9M77ooDQ+cEIGQpWohn2LTQ4saLv9QT7totoAoGCCqGSM49
AwEHoUQDQgAEzb3ODqgtFcB0R2HK4CIUtFKzy2KaCfBnyevyeSax9GI23CBLrwpN
yJxNhHyWmrYVAiSCItkjFPEUGhBtbmR2Ow==
-----END EC PRIVATE KEY-----
";

    /// The development key's public coordinates and RFC 7638 thumbprint, computed outside Rust
    /// (openssl for the point, Python's hashlib for the digest).
    const DEV_KEY_X: &str = "zb3ODqgtFcB0R2HK4CIUtFKzy2KaCfBnyevyeSax9GI";
    const DEV_KEY_Y: &str = "NtwgS68KTcicTYR8lpq2FQIkgiLZIxTxFBoQbW5kdjs";
    const DEV_KEY_KID: &str = "YK2UeLmqHtimpvZMy5uQGjo4jyAXoPA2FYbbsvdX5as";

    /// A throwaway P-384 key (PKCS#8), to show other curves are refused.
    const P384_PKCS8_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDCpycTut6/WNAib/pLJ
brWrWo9mP0qthYZdjZJPrP1bBm8XgLrB6fimakQT6anUFjihZANiAATyUFwDAqym
A0FEC7rDEdg69w/OmAXgeYJgzqKr4DMpMcPAOARjW80owSXnc0its9TCJWiioHiY
veCRmbTGRKbFsPC/Xucd73uT88x1KJaAtQh0c958yJX18pNCWKfbqaE=
-----END PRIVATE KEY-----
";

    fn dev_key() -> SigningKey {
        SigningKey::from_pem(DEV_SIGNING_KEY_PEM).expect("the development key parses")
    }

    #[test]
    fn the_development_key_parses_from_pkcs8_pem() {
        assert!(DEV_SIGNING_KEY_PEM.contains("BEGIN PRIVATE KEY"));
        assert_eq!(dev_key().kid(), DEV_KEY_KID);
    }

    #[test]
    fn a_sec1_pem_of_the_same_key_gives_the_same_key() {
        let sec1 = SigningKey::from_pem(DEV_KEY_SEC1_PEM).expect("SEC1 parses");
        assert_eq!(sec1.kid(), DEV_KEY_KID);
        assert_eq!(sec1.public_key(), dev_key().public_key());
    }

    #[test]
    fn a_sec1_pem_after_an_ec_parameters_block_parses() {
        let with_params =
            format!("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n{DEV_KEY_SEC1_PEM}");
        let key = SigningKey::from_pem(&with_params).expect("parses");
        assert_eq!(key.kid(), DEV_KEY_KID);
    }

    #[test]
    fn the_kid_is_the_rfc_7638_thumbprint_of_the_public_jwk() {
        let key = dev_key();
        let jwk = key.public_jwk();
        assert_eq!(jwk["x"], DEV_KEY_X);
        assert_eq!(jwk["y"], DEV_KEY_Y);
        // Recompute from the JWK's own members, in RFC 7638 section 3.2's canonical form.
        let canonical = serde_json::to_string(&json!({
            "crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"],
        }))
        .expect("serializes");
        assert_eq!(
            canonical,
            format!(r#"{{"crv":"P-256","kty":"EC","x":"{DEV_KEY_X}","y":"{DEV_KEY_Y}"}}"#)
        );
        let expected = URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()));
        assert_eq!(key.kid(), expected);
        assert_eq!(key.kid(), DEV_KEY_KID);
    }

    #[test]
    fn the_jwks_holds_exactly_the_public_signing_key() {
        let jwks = dev_key().public_jwks();
        assert_eq!(
            jwks,
            json!({"keys": [{
                "kty": "EC", "crv": "P-256", "x": DEV_KEY_X, "y": DEV_KEY_Y,
                "kid": DEV_KEY_KID, "alg": "ES256", "use": "sig",
            }]})
        );
        // p256 reads only the key members back, and must find the same public key.
        let jwk = &jwks["keys"][0];
        let members = json!({"kty": jwk["kty"], "crv": jwk["crv"], "x": jwk["x"], "y": jwk["y"]});
        let public =
            PublicKey::from_jwk_str(&members.to_string()).expect("p256 reads the JWK back");
        assert_eq!(&public, dev_key().public_key());
    }

    #[test]
    fn pems_that_are_not_p256_private_keys_are_refused() {
        let public_pem = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n";
        let cases: [(&str, &str, KeyError); 5] = [
            ("empty", "", KeyError::UnsupportedPem),
            ("public key", public_pem, KeyError::UnsupportedPem),
            (
                "P-384 key",
                P384_PKCS8_PEM,
                KeyError::InvalidPrivateKey { format: "PKCS#8" },
            ),
            (
                "corrupt PKCS#8",
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                KeyError::InvalidPrivateKey { format: "PKCS#8" },
            ),
            (
                "corrupt SEC1",
                "-----BEGIN EC PRIVATE KEY-----\nnot base64!\n-----END EC PRIVATE KEY-----\n",
                KeyError::InvalidPrivateKey { format: "SEC1" },
            ),
        ];
        for (name, pem, expected) in cases {
            assert_eq!(SigningKey::from_pem(pem).err(), Some(expected), "{name}");
        }
    }

    #[test]
    fn debug_output_never_shows_the_private_key() {
        let shown = format!("{:?}", dev_key());
        assert!(shown.contains(DEV_KEY_KID), "{shown}");
        assert!(!shown.contains("MIGHAgEA"), "{shown}");
    }

    #[test]
    fn the_development_key_is_recognised_in_any_form_and_other_keys_are_not() {
        assert!(dev_key().is_development_key());
        assert!(SigningKey::from_pem(DEV_KEY_SEC1_PEM)
            .expect("SEC1 parses")
            .is_development_key());
        let secret = SecretKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        let other = SigningKey::from_secret_key(&secret).expect("a key");
        assert!(!other.is_development_key());

        assert!(jwks_lists_development_key(&dev_key().public_jwks()));
        // Under another kid, without kid, next to another key: still the development key.
        let renamed = json!({"keys": [other.public_jwk(), {"kty": "EC", "crv": "P-256", "x": DEV_KEY_X, "y": DEV_KEY_Y, "kid": "prod-2026"}]});
        assert!(jwks_lists_development_key(&renamed));
        let bare = json!({"keys": [{"kty": "EC", "crv": "P-256", "x": DEV_KEY_X, "y": DEV_KEY_Y}]});
        assert!(jwks_lists_development_key(&bare));
        // Its kid on another key is not the development key (the point decides).
        let mut impostor = other.public_jwk();
        impostor["kid"] = json!(DEV_KEY_KID);
        for jwks in [
            other.public_jwks(),
            json!({"keys": [impostor]}),
            json!({"keys": [{"kty": "EC", "x": 1}]}),
            json!({"keys": []}),
            json!({}),
            json!([]),
        ] {
            assert!(!jwks_lists_development_key(&jwks), "{jwks}");
        }
    }

    #[test]
    fn only_true_allows_the_development_key() {
        for value in ["true", "TRUE", " True\n"] {
            assert!(development_key_allowed(Some(value)), "{value:?}");
        }
        for value in [
            None,
            Some(""),
            Some("1"),
            Some("yes"),
            Some("false"),
            Some("truex"),
        ] {
            assert!(!development_key_allowed(value), "{value:?}");
        }
    }
}
