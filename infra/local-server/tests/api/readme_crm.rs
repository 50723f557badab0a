//! The README's "CRM sync, end to end" walk-through, run: the local server binary with the demo
//! seed (Initech connected through an OAuth app, members matched by e-mail) against the fake
//! HubSpot holding the demo portal (`fake_crm::FakeCrm::start_demo`, what `cargo run -p
//! fake-crm` serves), with the README's requests: the control routes `/_fake/requests`,
//! `/_fake/objects` and `/_fake/script` as the README's `curl` commands use them. Only the ports
//! and the retry delays (1 s instead of 5 s) differ.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ROUTER: &str = "f6b7c8d9-e0f1-4a2b-9c34-d5e6f7a8b920";
const MILTON: &str = "01936b2a-7c00-7a00-8000-000000000021";
const BILL: &str = "01936b2a-7c00-7a00-8000-000000000022";
const NINA: &str = "01936b2a-7c00-7a00-8000-000000000023";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_crm_journey_syncs_through_an_oauth_connection_with_members_matched_by_email() {
    let (_fake, crm) = fake_crm::FakeCrm::start_demo().await.unwrap();
    let seed = local_server::DEMO_SEED.replace("http://127.0.0.1:4010", &crm);
    let seed_file =
        std::env::temp_dir().join(format!("readme-crm-seed-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&seed_file, seed).unwrap();
    let server = common::start_server(
        &["--seed", seed_file.to_str().unwrap()],
        &[("CRM_SYNC_RETRY_DELAYS", "1,1,1")],
    );
    let http = common::http();
    let token = server
        .token_response_of(common::INITECH, "service-api/read service-api/update")
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let dispatch = |record: &'static str| {
        let http = http.clone();
        let url = format!("{}/dispatch/router", server.base);
        let token = token.clone();
        async move {
            http.post(url)
                .bearer_auth(token)
                .json(&json!({"router_id": ROUTER, "object_id": record}))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let get = |url: String| {
        let http = http.clone();
        async move {
            http.get(url)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let sync_state = |record: &'static str| {
        let http = http.clone();
        let url = format!("{}/contacts/{record}/dispatches", server.base);
        let token = token.clone();
        async move {
            let page: Value = http
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            page["data"][0]["crm_sync"].clone()
        }
    };

    // 1. a sync: a token from the refresh-token grant, the owner found by e-mail, the update.
    let answer = dispatch(MILTON).await;
    assert_eq!(answer["message"], "Owner assigned", "{answer}");
    assert!(answer.get("crm_error").is_none(), "{answer}");
    let requests = get(format!("{crm}/_fake/requests")).await;
    let seen: Vec<(String, String, bool)> = requests
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["method"].as_str().unwrap().to_string(),
                r["path"].as_str().unwrap().to_string(),
                r["violations"] == json!([]),
            )
        })
        .collect();
    let expected = [
        ("POST", "/oauth/v1/token"),
        ("GET", "/crm/v3/owners"),
        ("PATCH", "/crm/v3/objects/contacts/5101"),
    ];
    assert_eq!(
        seen,
        expected.map(|(m, p)| (m.to_string(), p.to_string(), true)),
        "{requests}"
    );
    let owner_email = answer["user"].as_str().unwrap();
    assert_eq!(
        requests[1]["query"],
        format!("email={}", owner_email.replace('@', "%40"))
    );
    let owner = if owner_email.starts_with("peter") {
        "71234501"
    } else {
        "71234502"
    };
    let object = get(format!("{crm}/_fake/objects/contacts/5101")).await;
    assert_eq!(object["properties"]["hubspot_owner_id"], owner, "{object}");
    assert_eq!(
        sync_state(MILTON).await,
        json!({"status": "synced", "attempts": 1, "error": null})
    );

    // 2. a failure, reported and retried: HubSpot is down twice, then back.
    let scripted = http
        .post(format!("{crm}/_fake/script"))
        .json(
            &json!({"status": 503, "body": {"message": "Service Unavailable"}, "times": 2,
                      "method": "PATCH", "path": "/crm/v3/objects/"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(scripted.status(), 204);
    let answer = dispatch(BILL).await;
    assert_eq!(answer["crm_sync_failed"], true, "{answer}");
    assert_eq!(answer["crm_error"], "CRM answered 503: Service Unavailable");
    assert_eq!(sync_state(BILL).await["status"], "retrying");
    let started = Instant::now();
    while sync_state(BILL).await["status"] != "synced" {
        assert!(started.elapsed() < Duration::from_secs(20), "never synced");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        sync_state(BILL).await,
        json!({"status": "synced", "attempts": 3, "error": null})
    );
    let bill = get(format!("{crm}/_fake/objects/contacts/5102")).await;
    assert!(bill["properties"]["hubspot_owner_id"].is_string(), "{bill}");

    // 3. a failure that cannot pass by itself: Nina has no HubSpot id.
    let answer = dispatch(NINA).await;
    assert_eq!(answer["crm_error"], "Record has no external_id", "{answer}");
    assert_eq!(
        sync_state(NINA).await,
        json!({"status": "failed", "attempts": 0, "error": "Record has no external_id"})
    );

    // Every request the sync sent is one HubSpot's description allows.
    let requests = get(format!("{crm}/_fake/requests")).await;
    for r in requests.as_array().unwrap() {
        assert_eq!(r["violations"], json!([]), "{r}");
    }
    let tokens = requests
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["path"] == "/oauth/v1/token")
        .count();
    assert_eq!(tokens, 1, "one access token for the whole journey");
    drop(server);
    let _ = std::fs::remove_file(seed_file);
}

/// The README's Salesforce steps, run: the demo seed's Umbrella is connected to the fake
/// Salesforce holding the demo org (`fake_crm::salesforce::FakeSalesforce::start_demo`, what
/// `cargo run -p fake-crm` serves on port 4011) through an External Client App's client
/// credentials, and its members are matched by e-mail: the token comes from the My Domain, the
/// user from a SOQL query on the instance, and the Lead's owner is set without the org's
/// assignment rule (which would give it to a queue) overwriting it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_crm_journey_syncs_to_salesforce_with_a_member_matched_by_email() {
    const SF_ROUTER: &str = "e5a6b7c8-d9e0-4f1a-8b23-c4d5e6f7a893";
    const JILL: &str = "01936b2a-7c00-7a00-8000-000000000031";
    const UMBRELLA: (&str, &str) = ("umbrella-integration", "umbrella-dev-secret-2f7c");
    let (fake, sf) = fake_crm::salesforce::FakeSalesforce::start_demo()
        .await
        .unwrap();
    let seed = local_server::DEMO_SEED.replace("http://localhost:4011", &sf);
    let seed_file =
        std::env::temp_dir().join(format!("readme-sf-seed-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&seed_file, seed).unwrap();
    let server = common::start_server(
        &["--seed", seed_file.to_str().unwrap()],
        &[("CRM_SYNC_RETRY_DELAYS", "1,1,1")],
    );
    let http = common::http();
    let token = server
        .token_response_of(UMBRELLA, "service-api/read service-api/update")
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let answer: Value = http
        .post(format!("{}/dispatch/router", server.base))
        .bearer_auth(&token)
        .json(&json!({"router_id": SF_ROUTER, "object_id": JILL}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["message"], "Owner assigned", "{answer}");
    assert!(answer.get("crm_error").is_none(), "{answer}");
    // What the README's `curl -s $SF/_fake/requests | jq ...` shows.
    let requests: Value = http
        .get(format!("{sf}/_fake/requests"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let port = sf.rsplit(':').next().unwrap();
    let seen: Vec<(String, String, String, bool)> = requests
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["method"].as_str().unwrap().to_string(),
                r["path"].as_str().unwrap().to_string(),
                r["headers"]["host"].as_str().unwrap().to_string(),
                r["violations"] == json!([]),
            )
        })
        .collect();
    let expected = [
        (
            "POST",
            "/services/oauth2/token",
            format!("localhost:{port}"),
        ),
        (
            "GET",
            "/services/data/v66.0/query",
            format!("127.0.0.1:{port}"),
        ),
        (
            "PATCH",
            "/services/data/v66.0/sobjects/Lead/00Q5g0000000001",
            format!("127.0.0.1:{port}"),
        ),
    ];
    assert_eq!(
        seen,
        expected.map(|(m, p, h)| (m.to_string(), p.to_string(), h, true)),
        "{requests}"
    );
    assert_eq!(requests[2]["headers"]["sforce-auto-assign"], "FALSE");
    let user = if answer["user"] == "ada.wong@umbrella.example" {
        "0055g0000000001"
    } else {
        "0055g0000000002"
    };
    // `curl -s $SF/_fake/records/Lead/00Q5g0000000001 | jq .OwnerId`
    let lead: Value = http
        .get(format!("{sf}/_fake/records/Lead/00Q5g0000000001"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(lead["OwnerId"], user, "{lead}");
    let history: Value = http
        .get(format!("{}/contacts/{JILL}/dispatches", server.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        history["data"][0]["crm_sync"],
        json!({"status": "synced", "attempts": 1, "error": null})
    );
    assert!(fake.violations().is_empty(), "{:?}", fake.violations());
    drop(server);
    let _ = std::fs::remove_file(seed_file);
}
