//! The floor under every function: a lambda_http function that does nothing but what each of them
//! must, with the libraries they must use: it loads the AWS configuration, builds a DynamoDB
//! client (AWS SDK for Rust, rustls on aws-lc-rs), opens its connection during init with one
//! `GetItem` (docs/performance.md, goal 3) and answers every event with one more `GetItem`. No
//! routing, no tokens, no time zones. `infra/scripts/bench-coldstart.sh` measures it beside the
//! empty function: what it costs above the empty function is what the AWS SDK and TLS cost, which
//! no change to the functions' own code can remove (docs/performance.md, goal 2).
//!
//! Environment: `TABLE_NAME` (a table with string keys `PK` and `SK`) and the standard AWS
//! variables (`AWS_ENDPOINT_URL`, `SSL_CERT_FILE` for an emulator behind a test CA).

use aws_sdk_dynamodb::types::AttributeValue;
use lambda_http::{service_fn, Body, Error, Request, Response};

/// One `GetItem` of a key that need not exist (`PK` = `SK` = `FLOOR`).
async fn get_item(client: &aws_sdk_dynamodb::Client, table: &str) -> Result<(), Error> {
    client
        .get_item()
        .table_name(table)
        .key("PK", AttributeValue::S("FLOOR".into()))
        .key("SK", AttributeValue::S("FLOOR".into()))
        .send()
        .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let table = std::env::var("TABLE_NAME")?;
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    get_item(&client, &table).await?;
    lambda_http::run(service_fn(|_request: Request| {
        let (client, table) = (&client, &table);
        async move {
            get_item(client, table).await?;
            Ok::<_, Error>(Response::new(Body::Empty))
        }
    }))
    .await
}
