//! `local-server --store dynamodb` against the emulator (`bash infra/scripts/test.sh`): it
//! creates the table, provisions the demo seed, answers a token request and lists contacts; a
//! second start on the same table provisions nothing new and serves the same data.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;

use common::{start_server, Server};
use shared::store::dynamodb::env;
use shared::store::dynamodb::test_table::EMULATOR_MISSING;

fn start(table: &str) -> Server {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        panic!("{EMULATOR_MISSING}");
    }
    start_server(&["--store", "dynamodb"], &[("TABLE_NAME", table)])
}

async fn token_and_contacts(base: &str) -> serde_json::Value {
    let http = common::http();
    let token: serde_json::Value = http
        .post(format!("{base}/oauth2/token"))
        .basic_auth("northwind-integration", Some("dev-secret-change-me"))
        .form(&[
            ("grant_type", "client_credentials"),
            ("scope", "service-api/read service-api/create"),
        ])
        .send()
        .await
        .expect("token answered")
        .json()
        .await
        .expect("token body");
    assert_eq!(token["token_type"], "Bearer", "{token}");
    let access = token["access_token"].as_str().expect("access token");
    let created = http
        .post(format!("{base}/contacts"))
        .bearer_auth(access)
        .json(&serde_json::json!({"fields": {"email": "new.lead@example.com"}}))
        .send()
        .await
        .expect("create answered");
    assert_eq!(created.status(), 201);
    http.get(format!("{base}/contacts?properties=region"))
        .bearer_auth(access)
        .send()
        .await
        .expect("list answered")
        .json()
        .await
        .expect("list body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_on_dynamodb_creates_the_table_provisions_the_seed_and_serves_it() {
    let table = format!("local-{}", uuid::Uuid::new_v4().simple());
    let server = start(&table);
    let contacts = token_and_contacts(&server.base).await;
    // The demo seed's two contacts, then the one just created.
    assert_eq!(contacts["pagination"]["count"], 3, "{contacts}");
    assert_eq!(contacts["data"][0]["email"], "dana@contoso.example");
    assert_eq!(contacts["data"][0]["region"], "emea");
    assert_eq!(contacts["data"][2]["email"], "new.lead@example.com");
    drop(server);

    // Restarted on the same table: the seed is skipped, what was written since stays.
    let server = start(&table);
    let http = common::http();
    let again: serde_json::Value = {
        let token: serde_json::Value = http
            .post(format!("{}/oauth2/token", server.base))
            .basic_auth("northwind-integration", Some("dev-secret-change-me"))
            .form(&[
                ("grant_type", "client_credentials"),
                ("scope", "service-api/read"),
            ])
            .send()
            .await
            .expect("token answered")
            .json()
            .await
            .expect("token body");
        http.get(format!("{}/contacts", server.base))
            .bearer_auth(token["access_token"].as_str().expect("token"))
            .send()
            .await
            .expect("list answered")
            .json()
            .await
            .expect("list body")
    };
    assert_eq!(again["pagination"]["count"], 3, "{again}");
    assert_eq!(again["data"][2]["email"], "new.lead@example.com");
    drop(server);
    let client = env::client(&env::sdk_config().await);
    let _ = shared::store::dynamodb::table::delete_table(&client, &table).await;
}
