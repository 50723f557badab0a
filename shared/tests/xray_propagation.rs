//! X-Ray propagation (`docs/operations.md`): inside a Lambda invocation (`AWS_LAMBDA_FUNCTION_NAME`
//! set, `_X_AMZN_TRACE_ID` set by the runtime for the invocation) every AWS SDK request the
//! store sends carries the invocation's trace header, so its DynamoDB calls appear in the trace.
//! A binary of its own: it sets process-wide environment variables.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use shared::store::dynamodb::recording::last_trace_header;
use shared::store::dynamodb::test_table::TestTable;
use shared::store::prelude::*;

#[tokio::test]
async fn store_requests_carry_the_invocations_trace_header() {
    let trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    std::env::set_var("AWS_LAMBDA_FUNCTION_NAME", "account-routing-dev-dispatch");
    std::env::set_var("_X_AMZN_TRACE_ID", trace);
    let table = TestTable::create().await.unwrap_or_else(|e| panic!("{e}"));
    let account = uuid::Uuid::new_v4().into();
    table.store.get_account(account).await.unwrap();
    assert_eq!(last_trace_header().as_deref(), Some(trace));
    // Outside an invocation no header is made up.
    std::env::remove_var("_X_AMZN_TRACE_ID");
    std::env::remove_var("AWS_LAMBDA_FUNCTION_NAME");
    table.store.get_account(account).await.unwrap();
    assert_eq!(last_trace_header(), None);
}
