//! Lambda entry point of the routers function: configuration and store built once per cold start,
//! then every API Gateway request goes through [`routers_function::routes`].

use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::runtime::init_tracing();
    let verifier = Arc::new(shared::runtime::verifier_from_env()?);
    let store = shared::runtime::store_from_env().await?;
    let state = routers_function::RoutersState {
        routers: Arc::new(shared::routers::RouterService::new(store)),
        verifier,
    };
    lambda_http::run(shared::api::finish(routers_function::routes(state))).await
}
