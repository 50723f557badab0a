//! List throughput of the embedded store by collection size (BEHAVIOR 11): one page of
//! 10 contacts through [`RecordService::list`] (what `GET /contacts` runs after authentication),
//! first page and a page `after` a cursor in the middle, in an account with 20 records and in
//! one with 50,000, side by side in one run (and, for scale, pages at offsets 1,000 and 10,000 of
//! the large one). The ordered indexes keep a page at O(log n + limit): the 50,000-record figures
//! stay within 2x of the 20-record ones.
//! The figures of a run are in `docs/performance.md`.
//!
//! `cargo bench -p shared --bench list_throughput`
#![allow(missing_docs, clippy::unwrap_used)] // a benchmark binary

use chrono::{Duration, TimeZone, Utc};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use shared::clock::SystemClock;
use shared::fields::CatalogueCache;
use shared::model::{ObjectType, Record};
use shared::page::cursor::{CursorKey, ListRequest, RequestedStart};
use shared::records::RecordService;
use shared::store::memory::MemoryStore;
use shared::store::prelude::*;
use shared::types::AccountId;
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

/// An account holding `n` contacts; the service over it and a cursor into its middle.
fn account_with(
    rt: &tokio::runtime::Runtime, n: usize,
) -> (RecordService, AccountId, CursorKey, String) {
    let store = Arc::new(MemoryStore::new());
    let account: AccountId = Uuid::new_v4().into();
    let start = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    rt.block_on(async {
        for i in 0..n {
            let at = start + Duration::milliseconds(i as i64);
            let record = Record {
                id: Uuid::now_v7().into(),
                account_id: account,
                object_type: ObjectType::Contacts,
                values: BTreeMap::from([("first_name".to_string(), format!("Contact {i}"))]),
                created_at: at,
                updated_at: at,
                archived_at: None,
                archived_by: None,
                version: 1,
            };
            store.create_record(&record, &[]).await.unwrap();
        }
    });
    let service = RecordService::new(
        store as Arc<dyn Store>,
        Arc::new(SystemClock),
        Arc::new(CatalogueCache::default()),
    );
    let key = CursorKey::random();
    // Walk to the middle once to get a real cursor.
    let middle = rt.block_on(async {
        // The cursor after item n/2 (after item 10,000 at most: the deepest offset).
        let limit = (n / 2).min(10);
        let request = ListRequest {
            limit,
            start: RequestedStart::Offset((n / 2).min(10_000) - limit),
            include_archived: false,
        };
        service
            .list(account, ObjectType::Contacts, None, &request, &key)
            .await
            .unwrap()
            .pagination
            .next_after
            .unwrap()
    });
    (service, account, key, middle)
}

fn list_pages(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("list 10 contacts");
    for n in [20usize, 50_000] {
        let (service, account, key, middle) = account_with(&rt, n);
        let mut pages = vec![
            ("first page", RequestedStart::Offset(0)),
            (
                "after a cursor in the middle",
                RequestedStart::After(middle),
            ),
        ];
        if n >= 10_010 {
            // What an offset costs: O(offset + limit).
            pages.push(("offset 1000", RequestedStart::Offset(1_000)));
            pages.push(("offset 10000", RequestedStart::Offset(10_000)));
        }
        for (name, start) in pages {
            let request = ListRequest {
                limit: 10,
                start,
                include_archived: false,
            };
            group.bench_with_input(
                BenchmarkId::new(name, format!("{n} records")),
                &request,
                |b, request| {
                    b.iter(|| {
                        rt.block_on(service.list(
                            account,
                            ObjectType::Contacts,
                            None,
                            black_box(request),
                            &key,
                        ))
                        .unwrap()
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, list_pages);
criterion_main!(benches);
