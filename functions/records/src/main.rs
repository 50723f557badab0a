//! Lambda entry point of the records function: configuration and store built once per cold start,
//! then every API Gateway request goes through [`records_function::routes`].

use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::runtime::init_tracing();
    let verifier = Arc::new(shared::runtime::verifier_from_env()?);
    let store = shared::runtime::store_from_env().await?;
    let clock = shared::runtime::clock();
    let state = records_function::RecordsState {
        records: Arc::new(shared::records::RecordService::new(
            store,
            clock,
            Arc::new(shared::fields::CatalogueCache::default()),
        )),
        verifier,
    };
    lambda_http::run(shared::api::finish(records_function::routes(state))).await
}
