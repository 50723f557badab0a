//! End to end through a real SQS wire protocol (the emulator the README's test command starts):
//! messages sent to the queue are polled like Lambda's event source mapping does, processed
//! ones are deleted, a message delivered twice assigns once, and a poison message ends in the
//! dead-letter queue through the queue's redrive policy.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use aws_sdk_sqs::types::QueueAttributeName;
use axum::http::Method;
use local_server::{build_app, AppConfig, DEMO_SEED};
use serde_json::json;
use std::collections::HashMap;
use std::time::{Duration, Instant};

const INBOUND_ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const DANA: &str = "01936b2a-7c00-7a00-8000-000000000002";
const LEE: &str = "01936b2a-7c00-7a00-8000-000000000004";

fn require_emulator() {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        panic!("AWS_ENDPOINT_URL is not set: run the tests with `bash infra/scripts/test.sh`, which starts the AWS emulator");
    }
}

struct Queues {
    client: aws_sdk_sqs::Client,
    main: String,
    dlq: String,
}

/// A fresh queue with a dead-letter queue (`maxReceiveCount` 2) and a 1 s visibility timeout.
async fn queues() -> Queues {
    require_emulator();
    let client = local_server::queue::client_from_env().await;
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let dlq = client
        .create_queue()
        .queue_name(format!("dlq-{suffix}"))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let arn = client
        .get_queue_attributes()
        .queue_url(&dlq)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap()[&QueueAttributeName::QueueArn]
        .clone();
    let redrive = json!({"deadLetterTargetArn": arn, "maxReceiveCount": "2"}).to_string();
    let main = client
        .create_queue()
        .queue_name(format!("dispatch-{suffix}"))
        .set_attributes(Some(HashMap::from([
            (QueueAttributeName::VisibilityTimeout, "1".to_string()),
            (QueueAttributeName::RedrivePolicy, redrive),
        ])))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    Queues { client, main, dlq }
}

async fn depth(client: &aws_sdk_sqs::Client, url: &str) -> (u64, u64) {
    let attrs = client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap_or_default();
    let n = |k: QueueAttributeName| attrs.get(&k).and_then(|v| v.parse().ok()).unwrap_or(0);
    (
        n(QueueAttributeName::ApproximateNumberOfMessages),
        n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
    )
}

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_messages_assign_once_and_poison_ends_in_the_dead_letter_queue() {
    let q = queues().await;
    let seed = DEMO_SEED.replace("\"overwrite\": false", "\"overwrite\": true");
    crate::common::cheap_secret_hashing();
    let app = build_app(AppConfig {
        seed,
        signing_key_pem: None,
    })
    .await
    .unwrap();
    let account = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01".parse().unwrap();

    // First delivery of message A is processed by a "crashed" consumer: handled, never deleted.
    let body = json!({"router_id": INBOUND_ROUTER, "object_id": DANA}).to_string();
    q.client
        .send_message()
        .queue_url(&q.main)
        .message_body(&body)
        .send()
        .await
        .unwrap();
    let received = q
        .client
        .receive_message()
        .queue_url(&q.main)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap();
    assert_eq!(received.len(), 1);
    let mut event = aws_lambda_events::event::sqs::SqsEvent::default();
    let mut message = aws_lambda_events::event::sqs::SqsMessage::default();
    message.message_id = received[0].message_id.clone();
    message.body = received[0].body.clone();
    event.records.push(message);
    assert!(dispatch_function::handle_sqs_batch(&app.engine, event)
        .await
        .batch_item_failures
        .is_empty());

    // Then the poller runs: it gets A again after the visibility timeout, plus B and a poison one.
    q.client
        .send_message()
        .queue_url(&q.main)
        .message_body(json!({"router_id": INBOUND_ROUTER, "object_id": LEE}).to_string())
        .send()
        .await
        .unwrap();
    q.client
        .send_message()
        .queue_url(&q.main)
        .message_body("{not json")
        .send()
        .await
        .unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let poller = tokio::spawn(local_server::queue::poll(
        q.client.clone(),
        q.main.clone(),
        app.engine.clone(),
        stopped,
    ));

    let test = common::TestApp {
        router: app.router.clone(),
    };
    let token = test.northwind().await;
    eventually("Lee is assigned through the queue", || async {
        let lee = test
            .call(Method::GET, &format!("/contacts/{LEE}"), &token, None)
            .await;
        lee.body["contact_owner"].is_string()
    })
    .await;
    eventually("the poison message is in the dead-letter queue", || async {
        depth(&q.client, &q.dlq).await.0 == 1
    })
    .await;
    eventually("the main queue is drained", || async {
        depth(&q.client, &q.main).await == (0, 0)
    })
    .await;
    let _ = stop.send(true);
    poller.await.unwrap();

    // Message A was delivered twice but assigned once.
    let log: Vec<_> = app
        .store
        .list_record_dispatches(
            account,
            shared::model::ObjectType::Contacts,
            DANA.parse().unwrap(),
            &shared::page::PageRequest::first(100, false),
        )
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.success)
        .collect();
    assert_eq!(log.len(), 1, "{log:?}");
}

#[tokio::test]
async fn the_binary_polls_the_queue_given_with_queue_url() {
    let q = queues().await;
    let server = common::start_server(&["--queue-url", &q.main], &[]);
    let body = json!({"router_id": INBOUND_ROUTER, "object_id": DANA}).to_string();
    q.client
        .send_message()
        .queue_url(&q.main)
        .message_body(&body)
        .send()
        .await
        .unwrap();
    let http = common::http();
    let token = server.token_response("service-api/read").await;
    let access = token["access_token"].as_str().unwrap().to_string();
    eventually("the binary assigned Dana from the queue", || async {
        let contact: serde_json::Value = http
            .get(format!("{}/contacts/{DANA}", server.base))
            .bearer_auth(&access)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        contact["contact_owner"] == "ana.lopez@northwind.example"
    })
    .await;
    eventually("the processed message was deleted", || async {
        depth(&q.client, &q.main).await == (0, 0)
    })
    .await;
}

/// BEHAVIOR 7 end to end, through the binary polling a real queue on the emulator with
/// `CRM_SYNC_RETRY_DELAYS=1,1,1`: the CRM first answers 503, the dispatch message is still
/// processed (deleted, not dead-lettered) and the assignment stands; the retry travels as a
/// delayed message on the same queue, arrives, and syncs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_crm_sync_leaves_the_message_processed_and_its_retry_arrives_through_the_queue() {
    const CRM_ROUTER: &str = "f6b7c8d9-e0f1-4a2b-9c34-d5e6f7a8b920";
    const MILTON: &str = "01936b2a-7c00-7a00-8000-000000000021";
    let q = queues().await;
    let (fake, base) = fake_crm::FakeCrm::start_demo().await.unwrap();
    fake.push(
        fake_crm::Scripted::status(503)
            .body(json!({"message": "Service Unavailable"}))
            .for_updates(),
    );
    let seed = DEMO_SEED.replace("http://127.0.0.1:4010", &base);
    let seed_file = std::env::temp_dir().join(format!("crm-seed-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&seed_file, seed).unwrap();
    let server = common::start_server(
        &[
            "--queue-url",
            &q.main,
            "--seed",
            seed_file.to_str().unwrap(),
        ],
        &[("CRM_SYNC_RETRY_DELAYS", "1,1,1")],
    );
    q.client
        .send_message()
        .queue_url(&q.main)
        .message_body(json!({"router_id": CRM_ROUTER, "object_id": MILTON}).to_string())
        .send()
        .await
        .unwrap();
    let http = common::http();
    let token = server
        .token_response_of(common::INITECH, "service-api/read")
        .await;
    let access = token["access_token"].as_str().unwrap().to_string();
    let history = || async {
        let page: serde_json::Value = http
            .get(format!("{}/contacts/{MILTON}/dispatches", server.base))
            .bearer_auth(&access)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        page["data"][0].clone()
    };
    eventually("the retry synced the owner", || async {
        history().await["crm_sync"]["status"] == "synced"
    })
    .await;
    let entry = history().await;
    assert_eq!(entry["source"], "queue");
    assert_eq!(entry["success"], true);
    assert_eq!(
        entry["crm_sync"],
        json!({"status": "synced", "attempts": 2, "error": null})
    );
    assert!(fake.violations().is_empty(), "{:?}", fake.violations());
    let requests = fake.owner_updates();
    assert_eq!(requests.len(), 2, "the first attempt and one retry");
    assert_eq!(requests[1].path, "/crm/v3/objects/contacts/5101");
    assert_eq!(
        requests[1].body["properties"]["hubspot_owner_id"],
        entry["user"]
            .as_str()
            .map(|u| if u.starts_with("peter") {
                "71234501"
            } else {
                "71234502"
            })
            .unwrap()
    );
    assert!(
        requests[1].at_ms - requests[0].at_ms >= 900,
        "the retry waited its delay"
    );
    eventually("the queue is drained", || async {
        depth(&q.client, &q.main).await == (0, 0)
    })
    .await;
    assert_eq!(
        depth(&q.client, &q.dlq).await,
        (0, 0),
        "nothing dead-lettered"
    );
    let _ = std::fs::remove_file(seed_file);
}
