//! End-to-end: the `local-server` binary started as a newcomer starts it, talked to over HTTP.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;

use common::start_server;
use std::process::Command;
use std::time::Duration;

fn contract_seed() -> String {
    format!(
        "{}/../../../shared/contracts/seed-example.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[tokio::test]
async fn the_binary_serves_the_contract_example_seed_and_issues_tokens() {
    let seed = contract_seed();
    if !std::path::Path::new(&seed).exists() {
        panic!("the contract folder ../shared must sit beside the repository: {seed} is missing");
    }
    let server = start_server(&["--seed", &seed], &[]);
    let http = common::http();
    let token = server.token_response("service-api/read").await;
    assert_eq!(token["token_type"], "Bearer");
    assert_eq!(token["expires_in"], 3600);
    let access = token["access_token"].as_str().unwrap();
    let contacts: serde_json::Value = http
        .get(format!("{}/contacts?properties=region", server.base))
        .bearer_auth(access)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(contacts["pagination"]["count"], 1);
    assert_eq!(contacts["data"][0]["email"], "dana@contoso.example");
    assert_eq!(contacts["data"][0]["region"], "emea");
}

#[tokio::test]
async fn the_binary_refuses_an_invalid_seed_naming_the_json_path() {
    let dir = std::env::temp_dir().join(format!("seed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    std::fs::write(
        &path,
        r#"{"accounts": [{"id": "not-a-uuid", "name": "x"}]}"#,
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_local-server"))
        .args(["--addr", "127.0.0.1:0", "--seed", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("accounts[0].id"), "{stderr}");
}

#[tokio::test]
async fn the_binary_stops_cleanly_on_sigterm() {
    let mut server = start_server(&[], &[]);
    let pid = server.child.id();
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut waited = 0;
    let exit = loop {
        if let Some(exit) = server.child.try_wait().unwrap() {
            break exit;
        }
        std::thread::sleep(Duration::from_millis(50));
        waited += 50;
        assert!(waited < 10_000, "server did not stop within 10 s");
    };
    assert!(exit.success(), "{exit:?}");
}
