//! An empty lambda_http function: every event is answered 200 with an empty body. The yardstick
//! of `infra/scripts/bench-coldstart.sh` (cold init, cold CPU, RSS, package size).

use lambda_http::{service_fn, Body, Error, Request, Response};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::run(service_fn(|_request: Request| async {
        Ok::<_, Error>(Response::new(Body::Empty))
    }))
    .await
}
