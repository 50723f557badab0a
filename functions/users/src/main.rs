//! Lambda entry point of the users function: configuration and store built once per cold start,
//! then every API Gateway request goes through [`users_function::routes`].

use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::runtime::init_tracing();
    let verifier = Arc::new(shared::runtime::verifier_from_env()?);
    let store = shared::runtime::store_from_env().await?;
    let clock = shared::runtime::clock();
    let state = users_function::UsersState {
        members: Arc::new(shared::members::MemberService::new(store, clock)),
        verifier,
    };
    lambda_http::run(shared::api::finish(users_function::routes(state))).await
}
