//! Lambda entry point of the routers function: [`shared::deps::Deps::from_env`] once per cold
//! start, then every API Gateway request goes through [`routers_function::app`].

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::deps::init_tracing();
    shared::telemetry::install("routers");
    let deps = shared::deps::Deps::from_env().await?;
    lambda_http::run(routers_function::app(&deps)?).await
}
