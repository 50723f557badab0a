//! The whole contents of a store as text, to show that an operation wrote nothing: the embedded
//! store's dump, or every item of a DynamoDB table (a full consistent `Scan`), canonical.

#![allow(dead_code)] // each suite uses part of it

use aws_sdk_dynamodb::types::AttributeValue;
use shared::store::dynamodb::test_table::TestTable;
use shared::store::memory::MemoryStore;
use shared::store::Store;
use std::sync::Arc;

/// A store and a way to read all of it.
#[derive(Clone)]
pub enum Held {
    /// The embedded store.
    Memory(Arc<MemoryStore>),
    /// A fresh table on the emulator.
    Dynamo(TestTable),
}

impl Held {
    /// A fresh, empty store of `backend`'s kind, and the handle that reads all of it.
    pub async fn new(backend: super::Backend) -> (Arc<dyn Store>, Held) {
        match backend {
            super::Backend::Memory => {
                let store = Arc::new(MemoryStore::new());
                (store.clone(), Held::Memory(store))
            }
            super::Backend::Dynamo => {
                let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
                (Arc::new(table.store.clone()), Held::Dynamo(table))
            }
        }
    }

    /// The store's full contents as text: the embedded store's dump, or every item of the
    /// table, each item's attributes sorted, items sorted.
    pub async fn snapshot(&self) -> String {
        match self {
            Held::Memory(store) => store.snapshot(),
            Held::Dynamo(table) => {
                let mut items: Vec<String> = Vec::new();
                let mut start = None;
                loop {
                    let page = table
                        .store
                        .client()
                        .scan()
                        .table_name(table.store.table_name())
                        .consistent_read(true)
                        .set_exclusive_start_key(start.take())
                        .send()
                        .await
                        .unwrap_or_else(|e| panic!("scan: {e}"));
                    for item in page.items() {
                        items.push(canonical(&AttributeValue::M(item.clone())));
                    }
                    match page.last_evaluated_key() {
                        Some(key) => start = Some(key.clone()),
                        None => break,
                    }
                }
                items.sort();
                assert!(!items.is_empty(), "the scan found the seeded items");
                items.join("\n")
            }
        }
    }
}

/// One attribute value as canonical text: map keys and sets sorted.
pub fn canonical(value: &AttributeValue) -> String {
    match value {
        AttributeValue::S(s) => format!("S{s:?}"),
        AttributeValue::N(n) => format!("N{n}"),
        AttributeValue::B(b) => format!("B{:?}", b.as_ref()),
        AttributeValue::Bool(b) => format!("BOOL{b}"),
        AttributeValue::Null(_) => "NULL".into(),
        AttributeValue::L(list) => {
            let parts: Vec<String> = list.iter().map(canonical).collect();
            format!("L[{}]", parts.join(","))
        }
        AttributeValue::M(map) => {
            let mut parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k:?}:{}", canonical(v)))
                .collect();
            parts.sort();
            format!("M{{{}}}", parts.join(","))
        }
        AttributeValue::Ss(set) | AttributeValue::Ns(set) => {
            let mut set = set.clone();
            set.sort();
            format!("SET{set:?}")
        }
        AttributeValue::Bs(set) => {
            let mut set: Vec<Vec<u8>> = set.iter().map(|b| b.as_ref().to_vec()).collect();
            set.sort();
            format!("BS{set:?}")
        }
        other => format!("{other:?}"),
    }
}
