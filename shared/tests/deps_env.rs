//! `Deps::from_env`: the store backend chosen by `STORE_BACKEND` (default `dynamodb`), failing fast
//! with a clear message. One test function, so nothing else in this binary races on the
//! process environment.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use shared::deps::Deps;
use shared::store::dynamodb::scripted::{error_body, ScriptedDynamoDb};

#[tokio::test]
async fn the_store_backend_defaults_to_dynamodb_and_needs_a_table_name() {
    std::env::remove_var("STORE_BACKEND");
    std::env::remove_var("TABLE_NAME");
    let err = Deps::from_env()
        .await
        .expect_err("no table name")
        .to_string();
    assert!(err.contains("TABLE_NAME is not set"), "{err}");

    std::env::set_var("STORE_BACKEND", "cassandra");
    let err = Deps::from_env()
        .await
        .expect_err("unknown backend")
        .to_string();
    assert!(err.contains("STORE_BACKEND=cassandra is unknown"), "{err}");

    // Building the DynamoDB store makes no request (cold start stays light): it succeeds even
    // with an endpoint where nothing listens.
    std::env::set_var("STORE_BACKEND", "dynamodb");
    std::env::set_var("TABLE_NAME", "routing");
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
    std::env::set_var("AWS_ENDPOINT_URL", "http://127.0.0.1:9");
    let deps = Deps::from_env().await.unwrap();
    assert!(
        deps.aws.is_some(),
        "the AWS configuration is loaded once and kept"
    );
    assert!(deps.verifier.is_none());
    // The builds below read other variables; an endpoint that answers at once ends each one's
    // warm-up request at once, where the dead one above is retried until its bound (2 s each).
    let missing_table = ScriptedDynamoDb::start(Box::new(|_, _| {
        (
            400,
            error_body("ResourceNotFoundException", "Requested resource not found"),
        )
    }))
    .await
    .unwrap();
    std::env::set_var("AWS_ENDPOINT_URL", missing_table.endpoint());

    // A JWKS, when set, must be valid; the verifier is built from it.
    std::env::set_var("JWT_PUBLIC_JWKS", "{\"keys\": []}");
    let err = Deps::from_env().await.expect_err("empty JWKS").to_string();
    assert!(err.contains("JWT_PUBLIC_JWKS is invalid"), "{err}");
    let jwks = shared::auth::SigningKey::from_pem(shared::auth::DEV_SIGNING_KEY_PEM)
        .unwrap()
        .public_jwks()
        .to_string();
    // The committed development key's public key makes a verifier that
    // accepts tokens anyone can sign: refused unless ALLOW_DEVELOPMENT_SIGNING_KEY=true.
    std::env::set_var("JWT_PUBLIC_JWKS", &jwks);
    std::env::remove_var("ALLOW_DEVELOPMENT_SIGNING_KEY");
    let err = Deps::from_env().await.expect_err("dev key").to_string();
    assert!(
        err.contains("JWT_PUBLIC_JWKS lists the public key of the committed development key")
            && err.contains("ALLOW_DEVELOPMENT_SIGNING_KEY=true"),
        "{err}"
    );
    for no in ["false", "1", ""] {
        std::env::set_var("ALLOW_DEVELOPMENT_SIGNING_KEY", no);
        assert!(Deps::from_env().await.is_err(), "{no:?}");
    }
    std::env::set_var("ALLOW_DEVELOPMENT_SIGNING_KEY", "true");
    assert!(Deps::from_env().await.unwrap().verifier().is_ok());
    std::env::remove_var("ALLOW_DEVELOPMENT_SIGNING_KEY");
    // Any other key needs no opt-in.
    let own = p256::SecretKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
    let own =
        p256::pkcs8::EncodePrivateKey::to_pkcs8_pem(&own, p256::pkcs8::LineEnding::LF).unwrap();
    let own_jwks = shared::auth::SigningKey::from_pem(&own)
        .unwrap()
        .public_jwks()
        .to_string();
    std::env::set_var("JWT_PUBLIC_JWKS", own_jwks);
    assert!(Deps::from_env().await.unwrap().verifier().is_ok());
    std::env::remove_var("JWT_PUBLIC_JWKS");

    // BEHAVIOR 11: on a shared store every instance must sign cursors with one key, so there
    // is no random fallback; a short secret is refused; one secret opens another's cursors.
    std::env::remove_var("CURSOR_SECRET");
    let err = Deps::from_env()
        .await
        .unwrap()
        .cursors()
        .unwrap_err()
        .to_string();
    assert!(err.contains("CURSOR_SECRET is not set"), "{err}");
    std::env::set_var("CURSOR_SECRET", "too short");
    let err = Deps::from_env().await.expect_err("weak").to_string();
    assert!(err.contains("CURSOR_SECRET is invalid"), "{err}");
    std::env::set_var("CURSOR_SECRET", "0123456789abcdef0123456789abcdef-instance");
    let one = Deps::from_env().await.unwrap().cursors().unwrap();
    let two = Deps::from_env().await.unwrap().cursors().unwrap();
    let (one, two) = (one.key().await.unwrap(), two.key().await.unwrap());
    let list = shared::page::cursor::ListId::new(uuid::Uuid::nil().into(), "contacts", false);
    let position = shared::page::Position::new("2026-11-23T00:00:00Z#x");
    assert_eq!(
        two.open(&list, &one.seal(&list, &position)).unwrap(),
        position
    );
    std::env::remove_var("CURSOR_SECRET");

    std::env::set_var("STORE_BACKEND", "memory");
    std::env::remove_var("SEED_PATH");
    let err = Deps::from_env().await.expect_err("no seed").to_string();
    assert!(err.contains("SEED_PATH is not set"), "{err}");
}
