//! End-to-end: the `local-server` binary started as a newcomer starts it, talked to over HTTP.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use common::start_server;
use std::process::Command;
use std::time::Duration;

/// The worked example of docs/seed-format.md, inside the repository.
fn minimal_seed() -> String {
    format!("{}/../seed/minimal.json", env!("CARGO_MANIFEST_DIR"))
}

#[tokio::test]
async fn the_binary_serves_the_documented_minimal_seed_and_issues_tokens() {
    let server = start_server(&["--seed", &minimal_seed()], &[]);
    let http = common::http();
    let token = server
        .token_response_of(
            ("fabrikam-integration", "fabrikam-local-secret"),
            "service-api/read",
        )
        .await;
    assert_eq!(token["token_type"], "Bearer");
    assert_eq!(token["expires_in"], 3600);
    let access = token["access_token"].as_str().unwrap();
    let deals: serde_json::Value = http
        .get(format!("{}/deals?properties=territory", server.base))
        .bearer_auth(access)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(deals["pagination"]["count"], 2);
    assert_eq!(deals["data"][0]["deal_name"], "Fleet renewal");
    assert_eq!(deals["data"][1]["territory"], "south");
    assert_eq!(deals["data"][1]["deal_stage"], "contract_sent");
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

/// The local server reads the functions' environment through `Deps::from_env_for`: a setting a
/// function would refuse stops it too, named, before it listens.
#[test]
fn the_binary_refuses_the_settings_a_function_refuses() {
    for (variable, value) in [
        ("STORE_BACKEND", "postgres"),
        ("DUE_WORK_LEASE_SECONDS", "0"),
        ("SLA_MINUTE_SECONDS", "soon"),
        ("ALLOW_INSECURE_OUTBOUND", "maybe"),
        ("DISPATCH_HISTORY_RETENTION_DAYS", "0"),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_local-server"))
            .args(["--addr", "127.0.0.1:0"])
            .env(variable, value)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A server that accepted the setting keeps running: give it 30 s, then fail.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = child.kill();
        let output = child.wait_with_output().unwrap();
        assert!(!output.status.success(), "{variable}={value} was accepted");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(variable), "{variable}: {stderr}");
    }
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
