//! The `provision` binary against the emulator (`bash infra/scripts/test.sh`): the demo seed
//! twice into a fresh table, and an invalid seed that must write nothing.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use shared::store::dynamodb::env;
use shared::store::dynamodb::test_table::{TestTable, EMULATOR_MISSING};
use shared::store::prelude::*;
use std::process::{Command, Output};

fn demo_seed() -> String {
    format!("{}/../seed/demo.json", env!("CARGO_MANIFEST_DIR"))
}

/// Runs `provision` on `table` as for a local run (the demo's fake CRM is on
/// http://127.0.0.1:4010: `ALLOW_INSECURE_OUTBOUND=true`; sealed with the development key:
/// `--development-sealing`).
fn provision(table: &str, args: &[&str]) -> Output {
    provision_with(table, args, "true")
}

fn provision_with(table: &str, args: &[&str], allow_insecure_outbound: &str) -> Output {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        panic!("{EMULATOR_MISSING}");
    }
    Command::new(env!("CARGO_BIN_EXE_provision"))
        .args(args)
        .arg("--development-sealing")
        .env("TABLE_NAME", table)
        .env("ALLOW_INSECURE_OUTBOUND", allow_insecure_outbound)
        .output()
        .expect("provision runs")
}

/// Production provisioning (the setting off, as by default) refuses a CRM on plain http or a
/// loopback host, naming the key, and writes nothing.
#[test]
fn production_provisioning_refuses_an_unsafe_crm_url_naming_the_key() {
    let table = format!("provision-{}", uuid::Uuid::new_v4().simple());
    let refused = provision_with(&table, &["--seed", &demo_seed(), "--create-table"], "false");
    assert!(!refused.status.success());
    let err = text(&refused.stderr);
    assert!(
        err.contains("accounts[2].crm.base_url: must be an https URL"),
        "{err}"
    );
    assert!(
        !err.contains("created table"),
        "nothing done before validation: {err}"
    );
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provisioning_the_demo_seed_twice_inserts_once_then_skips_everything() {
    let table = format!("provision-{}", uuid::Uuid::new_v4().simple());
    let first = provision(&table, &["--seed", &demo_seed(), "--create-table"]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let out = text(&first.stdout);
    assert!(out.contains("skipped 0 already present"), "{out}");
    let inserted: usize = out
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {out}"));
    assert!(inserted > 10, "{out}");

    let second = provision(&table, &["--seed", &demo_seed(), "--create-table"]);
    assert!(second.status.success(), "{}", text(&second.stderr));
    let out = text(&second.stdout);
    assert!(
        out.starts_with(&format!(
            "inserted 0 items, skipped {inserted} already present"
        )),
        "{out}"
    );
    assert!(
        out.contains("skipped client northwind-integration"),
        "{out}"
    );

    // The data is there, secrets hashed.
    let client = env::client(&env::sdk_config().await);
    let store = shared::store::dynamodb::DynamoStore::new(client, &table);
    let api_client = store
        .get_client("northwind-integration")
        .await
        .expect("read")
        .expect("provisioned client");
    assert!(api_client.secret_hash.starts_with("$argon2id$"));
    assert_ne!(api_client.secret_hash, "dev-secret-change-me");
    let _ = shared::store::dynamodb::table::delete_table(store.client(), &table).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_seed_is_refused_with_its_json_path_before_anything_is_written() {
    let dir = std::env::temp_dir().join(format!("seed-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let seed = dir.join("bad.json");
    let mut value: serde_json::Value =
        serde_json::from_str(include_str!("../../../seed/demo.json")).expect("demo seed");
    value["accounts"][0]["users"][0]["time_zone"] = "Mars/Olympus".into();
    std::fs::write(&seed, value.to_string()).expect("written");

    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let out = provision(
        table.store.table_name(),
        &["--seed", seed.to_str().expect("utf-8 path")],
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("accounts[0].users[0].time_zone"), "{err}");
    let items = table
        .store
        .client()
        .scan()
        .table_name(table.store.table_name())
        .send()
        .await
        .expect("scan");
    assert_eq!(items.count, 0, "nothing may be written");

    // With --create-table, an invalid seed does not even create the table.
    let missing = format!("never-{}", uuid::Uuid::new_v4().simple());
    let out = provision(
        &missing,
        &[
            "--seed",
            seed.to_str().expect("utf-8 path"),
            "--create-table",
        ],
    );
    assert!(!out.status.success());
    let described = table
        .store
        .client()
        .describe_table()
        .table_name(&missing)
        .send()
        .await;
    assert!(described.is_err(), "table {missing} must not exist");
    table.delete().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Outside Lambda, without a KMS key (`SEALING_KMS_KEY_ID`) or a key of its
/// own (`LOCAL_SEALING_KEY`), `provision` refuses to seal the CRM secrets with the committed
/// development key unless `--development-sealing` says so; it names both ways out, after
/// validating the seed and before creating or writing anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_kms_key_provisioning_refuses_to_seal_unless_told_development_sealing() {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        panic!("{EMULATOR_MISSING}");
    }
    let table = format!("provision-{}", uuid::Uuid::new_v4().simple());
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_provision"))
            .args(["--seed", &demo_seed(), "--create-table"])
            .args(extra)
            .env("TABLE_NAME", &table)
            .env("ALLOW_INSECURE_OUTBOUND", "true")
            .env_remove("SEALING_KMS_KEY_ID")
            .env_remove("LOCAL_SEALING_KEY")
            .env_remove("AWS_LAMBDA_FUNCTION_NAME")
            .output()
            .expect("provision runs")
    };
    let refused = run(&[]);
    assert!(!refused.status.success(), "{}", text(&refused.stdout));
    let err = text(&refused.stderr);
    assert!(err.contains("SEALING_KMS_KEY_ID"), "{err}");
    assert!(err.contains("--development-sealing"), "{err}");
    assert!(!err.contains("created table"), "nothing done: {err}");
    let client = env::client(&env::sdk_config().await);
    assert!(
        client
            .describe_table()
            .table_name(&table)
            .send()
            .await
            .is_err(),
        "table {table} must not exist"
    );

    let allowed = run(&["--development-sealing"]);
    assert!(allowed.status.success(), "{}", text(&allowed.stderr));
    assert!(text(&allowed.stdout).contains("skipped 0 already present"));
    let _ = shared::store::dynamodb::table::delete_table(&client, &table).await;
}
