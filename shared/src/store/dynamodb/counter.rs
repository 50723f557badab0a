//! A request counter: an SDK interceptor that counts DynamoDB requests by operation name.
//!
//! Added to a client's config (`config::Builder::interceptor`), it counts every request actually
//! sent (each attempt, retries included), so tests can measure what an API operation costs. It
//! also sums the items each `Query` evaluated (`ScannedCount`), the read cost a page pays, and
//! the items every read returned or evaluated (`GetItem`, `BatchGetItem`, `Query`).

use aws_sdk_dynamodb::config::interceptors::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemOutput;
use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Counts requests by operation name (`GetItem`, `Query`, `TransactWriteItems`, ...). Clones
/// share their counts.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
    scanned: Arc<Mutex<u64>>,
    items_read: Arc<Mutex<u64>>,
}

impl RequestCounter {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, u64>> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The counts so far, by operation name.
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.lock().clone()
    }

    /// The counts so far, and back to zero.
    pub fn take(&self) -> BTreeMap<String, u64> {
        std::mem::take(&mut *self.lock())
    }

    /// Items the `Query` requests evaluated so far (the sum of their `ScannedCount`), and back
    /// to zero.
    pub fn take_scanned(&self) -> u64 {
        std::mem::take(&mut *self.scanned.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Items read so far (each `GetItem` that found one, each item a `BatchGetItem` returned,
    /// each item a `Query` evaluated), and back to zero.
    pub fn take_items_read(&self) -> u64 {
        std::mem::take(&mut *self.items_read.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// All requests so far.
    pub fn total(&self) -> u64 {
        self.lock().values().sum()
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self, _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents, cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let operation = cfg
            .load::<Metadata>()
            .map(|m| m.name().to_string())
            .unwrap_or_else(|| "unknown".to_string());
        *self.lock().entry(operation).or_insert(0) += 1;
        Ok(())
    }

    fn read_after_execution(
        &self, context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents, _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(Ok(output)) = context.output_or_error() {
            let mut read = 0u64;
            if let Some(query) = output.downcast_ref::<QueryOutput>() {
                let scanned = query.scanned_count().max(0) as u64;
                *self.scanned.lock().unwrap_or_else(|e| e.into_inner()) += scanned;
                read = scanned;
            } else if let Some(get) = output.downcast_ref::<GetItemOutput>() {
                read = u64::from(get.item().is_some());
            } else if let Some(batch) = output.downcast_ref::<BatchGetItemOutput>() {
                read = batch
                    .responses()
                    .map_or(0, |r| r.values().map(|items| items.len() as u64).sum());
            }
            *self.items_read.lock().unwrap_or_else(|e| e.into_inner()) += read;
        }
        Ok(())
    }
}
