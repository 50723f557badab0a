//! Secrets against the emulator: the KMS sealer round trip bound to its
//! context, and the cursor key read from Secrets Manager at cold start (`CURSOR_SECRET_ARN`), so
//! no function carries a secret in its environment. One test function: it sets the process
//! environment.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use shared::deps::Deps;
use shared::secrets::{KmsSealer, SealContext, Sealer};
use shared::store::dynamodb::test_table::EMULATOR_MISSING;

#[tokio::test]
async fn kms_seals_and_the_cursor_key_comes_from_secrets_manager() {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        panic!("{EMULATOR_MISSING}");
    }
    let sdk = shared::store::dynamodb::env::sdk_config().await;

    // KMS: sealed under a context, opened only under the same one.
    let kms = aws_sdk_kms::Client::new(&sdk);
    let key = kms.create_key().send().await.unwrap();
    let key_id = key.key_metadata().unwrap().key_id().to_string();
    let sealer = KmsSealer::new(&sdk, &key_id);
    let context = SealContext::from([
        ("purpose", "crm_access_token".to_string()),
        ("account_id", "a1".to_string()),
    ]);
    let sealed = sealer.seal("pat-na1-secret", &context).await.unwrap();
    assert!(sealed.as_str().starts_with("kms:"));
    assert!(!sealed.as_str().contains("pat-na1-secret"));
    assert_eq!(
        sealer.open(&sealed, &context).await.unwrap(),
        "pat-na1-secret"
    );
    let other = SealContext::from([
        ("purpose", "crm_access_token".to_string()),
        ("account_id", "a2".to_string()),
    ]);
    assert!(
        sealer.open(&sealed, &other).await.is_err(),
        "another account's context"
    );

    // Deps: SEALING_KMS_KEY_ID names the sealer; CURSOR_SECRET_ARN the cursor key.
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
    let create_secret = |text: &'static str| {
        let secrets = secrets.clone();
        async move {
            let made = secrets
                .create_secret()
                .name(format!("cursor-{}", uuid::Uuid::new_v4().simple()))
                .secret_string(text)
                .send()
                .await
                .unwrap();
            made.arn().unwrap().to_string()
        }
    };
    let text = "a-cursor-key-of-at-least-thirty-two-bytes!";
    let arn = create_secret(text).await;
    std::env::set_var("STORE_BACKEND", "dynamodb");
    std::env::set_var("TABLE_NAME", "not-read-here");
    std::env::remove_var("CURSOR_SECRET");
    std::env::set_var("CURSOR_SECRET_ARN", &arn);
    std::env::set_var("SEALING_KMS_KEY_ID", &key_id);
    let deps = Deps::from_env().await.unwrap();
    let key = deps.cursors().unwrap().key().await.unwrap();
    let list = shared::page::cursor::ListId::new(uuid::Uuid::nil().into(), "contacts", false);
    let position = shared::page::Position::new("2026-11-27T00:00:00Z#x");
    let from_text = shared::page::cursor::CursorKey::from_secret(text.as_bytes()).unwrap();
    assert_eq!(
        from_text.open(&list, &key.seal(&list, &position)).unwrap(),
        position,
        "the cursor key is the secret's text"
    );
    let sealed = deps.sealer().unwrap().seal("x", &context).await.unwrap();
    assert!(sealed.as_str().starts_with("kms:"), "{sealed:?}");

    // The secret is read by the first list, not during the cold start: one that
    // cannot be read starts the function, then fails each use (a 500, logged naming it) until
    // it can be read.
    std::env::set_var("CURSOR_SECRET_ARN", format!("{arn}-missing"));
    let deps = Deps::from_env()
        .await
        .expect("the cold start reads no secret");
    let cursors = deps.cursors().unwrap();
    for _ in 0..2 {
        let err = cursors.key().await.expect_err("unreadable");
        let cause = match &err {
            shared::error::DomainError::Internal(cause) => cause.to_string(),
            other => panic!("not a 500: {other:?}"),
        };
        assert!(
            cause.contains("cannot read the secret") && cause.contains("-missing"),
            "{cause}"
        );
    }
    // Too short: refused at first use, naming the secret.
    std::env::set_var("CURSOR_SECRET_ARN", create_secret("short").await);
    let deps = Deps::from_env().await.unwrap();
    let err = deps.cursors().unwrap().key().await.expect_err("too short");
    assert!(
        format!("{err:?}").contains("(CURSOR_SECRET_ARN) is invalid"),
        "{err:?}"
    );

    // In Lambda without a KMS key, the functions that seal or open refuse to start.
    std::env::remove_var("CURSOR_SECRET_ARN");
    std::env::remove_var("SEALING_KMS_KEY_ID");
    std::env::set_var("AWS_LAMBDA_FUNCTION_NAME", "dispatch");
    let deps = Deps::from_env().await.unwrap();
    let err = deps.sealer().err().unwrap().to_string();
    assert!(err.contains("SEALING_KMS_KEY_ID is not set"), "{err}");
    std::env::remove_var("AWS_LAMBDA_FUNCTION_NAME");
}
