//! Dead letters on the emulator (`docs/operations.md`, "Dead letters"): `list` shows every message
//! and leaves it in place; `move` puts each back on its queue with its body and attributes and
//! empties the dead-letter queue; `delete` removes one message; and the `redrive` binary does the
//! same from the command line.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use aws_sdk_sqs::types::MessageAttributeValue;
use aws_sdk_sqs::Client;
use provision::dead_letters;
use shared::store::dynamodb::test_table::EMULATOR_MISSING;
use std::collections::BTreeSet;

async fn client() -> Client {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        panic!("{EMULATOR_MISSING}");
    }
    Client::new(&shared::store::dynamodb::env::sdk_config().await)
}

async fn queue(sqs: &Client, name: &str) -> String {
    sqs.create_queue()
        .queue_name(format!("{name}-{}", uuid::Uuid::new_v4().simple()))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap()
}

async fn bodies(sqs: &Client, url: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for _ in 0..5 {
        let got = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .visibility_timeout(30)
            .message_attribute_names("All")
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap()
            .messages
            .unwrap_or_default();
        for m in got {
            let source = m
                .message_attributes
                .as_ref()
                .and_then(|a| a.get("source"))
                .and_then(|v| v.string_value.clone())
                .unwrap_or_default();
            seen.insert(format!("{}|{source}", m.body.unwrap_or_default()));
        }
    }
    seen
}

#[tokio::test]
async fn dead_letters_are_listed_moved_back_with_their_attributes_and_deleted() {
    let sqs = client().await;
    let dlq = queue(&sqs, "dlq").await;
    let main = queue(&sqs, "dispatch").await;
    for n in 0..3 {
        sqs.send_message()
            .queue_url(&dlq)
            .message_body(format!("{{\"router_id\": \"r\", \"object_id\": \"o{n}\"}}"))
            .message_attributes(
                "source",
                MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value(format!("upstream-{n}"))
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
    }
    let listed = dead_letters::list(&sqs, &dlq, 100).await.unwrap();
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(listed.iter().all(|m| m.receive_count >= 1));
    // Listing leaves them in place.
    assert_eq!(dead_letters::list(&sqs, &dlq, 100).await.unwrap().len(), 3);

    // One is deleted by id.
    let gone = listed[0].message_id.clone();
    assert!(dead_letters::delete(&sqs, &dlq, &gone).await.unwrap());
    assert!(!dead_letters::delete(&sqs, &dlq, &gone).await.unwrap());

    let moved = dead_letters::move_all(&sqs, &dlq, &main, 100)
        .await
        .unwrap();
    assert_eq!(moved, 2);
    let expected: BTreeSet<String> = listed[1..]
        .iter()
        .map(|m| {
            format!(
                "{}|{}",
                m.body,
                m.attributes["source"].string_value.clone().unwrap()
            )
        })
        .collect();
    assert_eq!(
        bodies(&sqs, &main).await,
        expected,
        "body and attributes kept"
    );
    assert!(dead_letters::list(&sqs, &dlq, 100)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn the_redrive_binary_lists_and_moves() {
    let sqs = client().await;
    let dlq = queue(&sqs, "dlq").await;
    let main = queue(&sqs, "webhooks").await;
    sqs.send_message()
        .queue_url(&dlq)
        .message_body("{\"kind\": \"due_work\"}")
        .send()
        .await
        .unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_redrive"))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let listed = run(&["list", &dlq]);
    assert!(
        listed.contains("{\"kind\": \"due_work\"}") && listed.contains("1 message(s)"),
        "{listed}"
    );
    let moved = run(&["move", &dlq, &main]);
    assert!(moved.contains("moved 1 message(s)"), "{moved}");
    assert_eq!(bodies(&sqs, &main).await.len(), 1);
}
