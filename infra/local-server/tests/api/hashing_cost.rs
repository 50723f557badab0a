//! The suites' secret hashing (`common::cheap_secret_hashing`, argon2id at its lowest cost in the
//! test process): the demo clients still get tokens, a wrong secret and an unknown client are
//! still refused, and the hashes are argon2id PHC strings of that cost.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common::*;
use axum::http::{Method, StatusCode};

async fn token_status(app: &TestApp, client_id: &str, secret: &str) -> StatusCode {
    let form = format!(
        "grant_type=client_credentials&client_id={client_id}&client_secret={secret}&scope=service-api%2Fread"
    );
    app.raw(
        Method::POST,
        "/oauth2/token",
        &[("content-type", "application/x-www-form-urlencoded")],
        form.into_bytes(),
    )
    .await
    .status
}

#[tokio::test]
async fn at_the_lowest_cost_secrets_verify_and_wrong_or_unknown_clients_are_refused() {
    let app = TestApp::spawn().await;
    let phc = shared::auth::hash_secret("s3cret").unwrap();
    assert!(phc.starts_with("$argon2id$v=19$m=8,t=1,p=1$"), "{phc}");
    assert!(shared::auth::verify_secret("s3cret", &phc));
    assert!(!shared::auth::verify_secret("s3creT", &phc));

    assert_eq!(
        token_status(&app, NORTHWIND.0, NORTHWIND.1).await,
        StatusCode::OK
    );
    assert_eq!(
        token_status(&app, NORTHWIND.0, "wrong").await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        token_status(&app, "nobody", NORTHWIND.1).await,
        StatusCode::UNAUTHORIZED
    );
}
