//! Lambda entry point of the users function: [`shared::deps::Deps::from_env`] once per cold
//! start, then every API Gateway request goes through [`users_function::app`].

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::deps::init_tracing();
    shared::telemetry::install("users");
    let deps = shared::deps::Deps::from_env().await?;
    lambda_http::run(users_function::app(&deps)?).await
}
