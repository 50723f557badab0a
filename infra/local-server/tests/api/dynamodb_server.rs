//! `local-server --store dynamodb` against the emulator (`bash infra/scripts/test.sh`): it
//! creates the table, provisions the demo seed, answers a token request and lists contacts; a
//! second start on the same table (chosen by `STORE_BACKEND` this time) provisions nothing new
//! and serves the same data.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

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

    // Restarted on the same table, named as a function names it (`STORE_BACKEND`, no flag):
    // the seed is skipped, what was written since stays.
    let server = start_server(
        &[],
        &[
            ("STORE_BACKEND", "dynamodb"),
            ("TABLE_NAME", table.as_str()),
        ],
    );
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

/// `docs/design.md`, "Work that happens later": a CRM sync retry pending when the local server dies
/// (on DynamoDB, retries on timers of the process) is resumed by the sweeper of the next start on
/// the same table, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_on_dynamodb_resumes_the_crm_retry_the_dead_server_left() {
    const CRM_ROUTER: &str = "f6b7c8d9-e0f1-4a2b-9c34-d5e6f7a8b920";
    const MILTON: &str = "01936b2a-7c00-7a00-8000-000000000021";
    let (fake, crm) = fake_crm::FakeCrm::start_demo().await.unwrap();
    fake.push(
        fake_crm::Scripted::status(503)
            .body(serde_json::json!({"message": "down"}))
            .for_updates(),
    );
    let seed = local_server::DEMO_SEED.replace("http://127.0.0.1:4010", &crm);
    let seed_file =
        std::env::temp_dir().join(format!("restart-seed-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&seed_file, seed).unwrap();
    let table = format!("local-{}", uuid::Uuid::new_v4().simple());
    let args = ["--store", "dynamodb", "--seed", seed_file.to_str().unwrap()];
    let envs = [
        ("TABLE_NAME", table.as_str()),
        ("CRM_SYNC_RETRY_DELAYS", "2,2,2"),
        ("SWEEP_INTERVAL_SECONDS", "1"),
    ];
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        panic!("{EMULATOR_MISSING}");
    }
    let server = common::start_server(&args, &envs);
    let http = common::http();
    let token = server
        .token_response_of(common::INITECH, "service-api/read service-api/update")
        .await;
    let access = token["access_token"].as_str().expect("token").to_string();
    let answer: serde_json::Value = http
        .post(format!("{}/dispatch/router", server.base))
        .bearer_auth(&access)
        .json(&serde_json::json!({"router_id": CRM_ROUTER, "object_id": MILTON}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["crm_error"], "CRM answered 503: down", "{answer}");
    // The server dies with the retry on its timer, 2 s away.
    drop(server);
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(
        fake.owner_updates().len(),
        1,
        "nobody retried while no server ran"
    );

    let server = common::start_server(&args, &envs);
    let started = std::time::Instant::now();
    let entry = loop {
        let page: serde_json::Value = http
            .get(format!("{}/contacts/{MILTON}/dispatches", server.base))
            .bearer_auth(&access)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let entry = page["data"][0].clone();
        if entry["crm_sync"]["status"] == "synced" || started.elapsed().as_secs() > 20 {
            break entry;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(
        entry["crm_sync"],
        serde_json::json!({"status": "synced", "attempts": 2, "error": null}),
        "{entry}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(fake.owner_updates().len(), 2, "the retry ran once");
    assert!(fake.violations().is_empty(), "{:?}", fake.violations());
    drop(server);
    let _ = std::fs::remove_file(seed_file);
    let client = env::client(&env::sdk_config().await);
    let _ = shared::store::dynamodb::table::delete_table(&client, &table).await;
}
