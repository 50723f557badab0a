//! `Deps::from_env`: the store backend chosen by `STORE_BACKEND` (default `dynamodb`), failing fast
//! with a clear message. One test function, so nothing else in this binary races on the
//! process environment.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use shared::deps::Deps;

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

    // A JWKS, when set, must be valid; the verifier is built from it.
    std::env::set_var("JWT_PUBLIC_JWKS", "{\"keys\": []}");
    let err = Deps::from_env().await.expect_err("empty JWKS").to_string();
    assert!(err.contains("JWT_PUBLIC_JWKS is invalid"), "{err}");
    let jwks = shared::auth::SigningKey::from_pem(shared::auth::DEV_SIGNING_KEY_PEM)
        .unwrap()
        .public_jwks()
        .to_string();
    std::env::set_var("JWT_PUBLIC_JWKS", jwks);
    assert!(Deps::from_env().await.unwrap().verifier().is_ok());
    std::env::remove_var("JWT_PUBLIC_JWKS");

    std::env::set_var("STORE_BACKEND", "memory");
    std::env::remove_var("SEED_PATH");
    let err = Deps::from_env().await.expect_err("no seed").to_string();
    assert!(err.contains("SEED_PATH is not set"), "{err}");
}
