//! `GET /routers/{routerId}/dispatches/{entryId}` reads little for an id no entry has (BEHAVIOR
//! 18's 404 `Dispatch not found`), on DynamoDB (the emulator): an entry written since decision
//! snapshots existed is found by its snapshot item, and only an entry older than them is looked
//! up by the time its UUIDv7 id carries, in one page of keys. Here the router's history holds
//! over a megabyte of entries in the five minutes before an unknown id's time; the look-up is at
//! most one `Query` (before, it read every page of those minutes, whole items, strongly
//! consistent).

use crate::common;
use axum::http::{Method, StatusCode};
use chrono::{Duration, Utc};
use shared::model::{DispatchEntry, DispatchSource, ObjectType};
use shared::store::dynamodb::items;
use shared::store::dynamodb::test_table::TestTable;
use std::sync::Arc;
use uuid::Uuid;

const INBOUND_ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const NORTHWIND_ACCOUNT: &str = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01";

/// `n` history entries of the router dispatched in the minute before now, each item padded to
/// about 1.2 KB (an attribute the entry does not read).
fn entries(n: usize) -> Vec<items::Item> {
    let now = Utc::now();
    (0..n)
        .map(|i| {
            let at = now - Duration::milliseconds(60_000 * i as i64 / n as i64);
            let entry = DispatchEntry {
                id: Uuid::now_v7(),
                account_id: Uuid::parse_str(NORTHWIND_ACCOUNT).unwrap().into(),
                router_id: Uuid::parse_str(INBOUND_ROUTER).unwrap().into(),
                router_revision: 1,
                object_type: ObjectType::Contacts,
                object_id: Uuid::new_v4().to_string(),
                message: "Trigger did not match".into(),
                success: false,
                user: None,
                reason: None,
                previous_owner: None,
                field_name: None,
                owner_field: None,
                source: DispatchSource::Api,
                dispatched_at: at,
                crm_sync: None,
                sla: None,
                expires_at: at + Duration::days(400),
            };
            let (_, mut item) = items::dispatch_entry(&entry).unwrap();
            item.insert("padding".into(), items::s("p".repeat(1_200)));
            item
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_entry_id_is_404_after_at_most_one_page_read() {
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let counter = table.counter.clone();
    let client = table.store.client().clone();
    let name = table.store.table_name().to_string();
    let app = common::app_on(Arc::new(table.store)).await;
    let t = app.northwind().await;
    let all = entries(1_000);
    for chunk in all.chunks(25) {
        let mut writes: Vec<WriteRequest> = chunk
            .iter()
            .map(|item| {
                WriteRequest::builder()
                    .put_request(
                        PutRequest::builder()
                            .set_item(Some(item.clone()))
                            .build()
                            .unwrap(),
                    )
                    .build()
            })
            .collect();
        while !writes.is_empty() {
            let out = client
                .batch_write_item()
                .request_items(&name, writes)
                .send()
                .await
                .unwrap();
            writes = out
                .unprocessed_items
                .and_then(|mut u| u.remove(&name))
                .unwrap_or_default();
        }
    }
    counter.take();
    let unknown = Uuid::now_v7();
    let answer = app
        .call(
            Method::GET,
            &format!("/routers/{INBOUND_ROUTER}/dispatches/{unknown}"),
            &t,
            None,
        )
        .await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.body);
    assert_eq!(answer.body["message"], "Dispatch not found");
    let requests = counter.take();
    assert!(
        requests.get("Query").copied().unwrap_or(0) <= 1,
        "{requests:?}"
    );
    // A known entry without a snapshot (written as an older release wrote it) is still found.
    let known: DispatchEntry = items::from_item(all[10].clone()).unwrap();
    let found = app
        .call(
            Method::GET,
            &format!("/routers/{INBOUND_ROUTER}/dispatches/{}", known.id),
            &t,
            None,
        )
        .await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.body);
    assert_eq!(found.body["id"], known.id.to_string());
}
