//! Lambda entry point of the records function: [`shared::deps::Deps::from_env`] once per cold
//! start, then every API Gateway request goes through [`records_function::app`].

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::deps::init_tracing();
    shared::telemetry::install("records");
    let deps = shared::deps::Deps::from_env().await?;
    lambda_http::run(records_function::app(&deps)?).await
}
