//! Test harness: the whole application in process, one fresh embedded store per test
//! (zero2prod's `spawn_app`), driven with real HTTP requests through the router; [`app_on`] is
//! the same over a given store, for the suites that run on both stores
//! (`shared::on_both_stores!(with app_on: ...)`, the shared crate's harness).

#![allow(dead_code)]

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use local_server::{build_app, build_app_on, AppConfig, DEMO_SEED};
use serde_json::Value;
use shared::store::Store;
use std::sync::Arc;
use tower::ServiceExt;

/// Northwind (active account, custom `region` field, several members).
pub const NORTHWIND: (&str, &str) = ("northwind-integration", "dev-secret-change-me");
/// Northwind's read-only client.
pub const NORTHWIND_READONLY: (&str, &str) = ("northwind-readonly", "dev-readonly-secret");
/// Globex (another, inactive account).
pub const GLOBEX: (&str, &str) = ("globex-integration", "globex-dev-secret");
/// Every scope.
pub const ALL_SCOPES: &str =
    "service-api/read service-api/create service-api/update service-api/delete";

/// The application over the demo seed on `store`.
pub async fn app_on(store: Arc<dyn Store>) -> TestApp {
    cheap_secret_hashing();
    let built = build_app_on(
        AppConfig {
            seed: DEMO_SEED.to_string(),
            signing_key_pem: None,
        },
        store,
    )
    .await
    .expect("app builds");
    TestApp {
        router: built.router,
    }
}

/// Makes this process hash secrets at argon2id's lowest cost
/// (`shared::auth::secret::use_lowest_cost_for_tests`): these suites are about the API, not the
/// hashing cost, and every application they build hashes its seed's client secrets and verifies
/// one per token request. Called before each in-process application is built; the binaries the
/// suites start (`local-server`) keep the production cost.
pub fn cheap_secret_hashing() {
    shared::auth::secret::use_lowest_cost_for_tests();
}

/// A plain HTTP client for the started binary (10 s timeout). reqwest is built with rustls and
/// no default crypto provider: the process gets the one the API uses first.
pub fn http() -> reqwest::Client {
    shared::outbound::ensure_crypto_provider();
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .unwrap()
}

/// An answer: status, headers, JSON body (`Null` when empty or not JSON).
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

pub struct TestApp {
    pub router: Router,
}

impl TestApp {
    /// `POST /contacts` of a contact named Lead with token `t`; asserts 201, returns its id.
    pub async fn new_contact(&self, t: &str) -> String {
        let a = self
            .call(
                Method::POST,
                "/contacts",
                t,
                Some(serde_json::json!({"fields": {"first_name": "Lead"}})),
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
        a.body["id"].as_str().unwrap().to_string()
    }

    /// `POST /dispatch/router` of `object` through `router` with token `t`; asserts 200, returns
    /// the answer's body.
    pub async fn dispatch(&self, t: &str, router: &str, object: &str) -> Value {
        let a = self
            .call(
                Method::POST,
                "/dispatch/router",
                t,
                Some(serde_json::json!({"router_id": router, "object_id": object})),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        a.body
    }

    /// The application over the demo seed.
    pub async fn spawn() -> Self {
        Self::with_seed(DEMO_SEED).await
    }

    /// The application over `seed`.
    pub async fn with_seed(seed: &str) -> Self {
        cheap_secret_hashing();
        let app = build_app(AppConfig {
            seed: seed.to_string(),
            signing_key_pem: None,
        })
        .await
        .expect("app builds");
        Self { router: app.router }
    }

    /// Sends a request with an optional bearer token and raw body.
    pub async fn raw(
        &self, method: Method, uri: &str, headers: &[(&str, &str)], body: Vec<u8>,
    ) -> Answer {
        let mut request = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = self
            .router
            .clone()
            .oneshot(request.body(Body::from(body)).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
        }
    }

    /// A JSON request with a bearer token.
    pub async fn call(
        &self, method: Method, uri: &str, token: &str, body: Option<Value>,
    ) -> Answer {
        self.with_headers(method, uri, token, &[], body).await
    }

    /// [`Self::call`] with extra request headers (`If-Match`, `Idempotency-Key`, ...).
    pub async fn with_headers(
        &self, method: Method, uri: &str, token: &str, headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> Answer {
        let auth = format!("Bearer {token}");
        let mut all = vec![("authorization", auth.as_str())];
        all.extend_from_slice(headers);
        let bytes = match &body {
            Some(b) => {
                all.push(("content-type", "application/json"));
                serde_json::to_vec(b).unwrap()
            }
            None => Vec::new(),
        };
        self.raw(method, uri, &all, bytes).await
    }

    /// A token for `client` with `scope` through the token endpoint.
    pub async fn token(&self, client: (&str, &str), scope: &str) -> String {
        let form = format!(
            "grant_type=client_credentials&client_id={}&client_secret={}&scope={}",
            client.0,
            client.1,
            scope.replace(' ', "+").replace('/', "%2F")
        );
        let answer = self
            .raw(
                Method::POST,
                "/oauth2/token",
                &[("content-type", "application/x-www-form-urlencoded")],
                form.into_bytes(),
            )
            .await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "token request failed: {}",
            answer.body
        );
        answer.body["access_token"].as_str().unwrap().to_string()
    }

    /// A Northwind token with every scope.
    pub async fn northwind(&self) -> String {
        self.token(NORTHWIND, ALL_SCOPES).await
    }
}

/// The `local-server` binary, started as a newcomer starts it; killed when dropped.
pub struct Server {
    pub child: std::process::Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary on a free port with `args` and `envs`, and waits for its "listening on"
/// line.
pub fn start_server(args: &[&str], envs: &[(&str, &str)]) -> Server {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_local-server"))
        .args(["--addr", "127.0.0.1:0"])
        .args(args)
        .envs(envs.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("local-server starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("server printed its address")
            .expect("readable stdout");
        if let Some(rest) = line.strip_prefix("account routing API listening on ") {
            break rest.trim().to_string();
        }
    };
    // Keep draining stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server { child, base }
}

/// Starts an in-process app whose store can be taken down: the demo seed on the embedded store
/// behind [`shared::store::faulty::FaultyStore`].
pub async fn spawn_on_faulty_store() -> (TestApp, std::sync::Arc<shared::store::faulty::FaultyStore>)
{
    use shared::store::faulty::FaultyStore;
    use shared::store::memory::MemoryStore;
    use std::sync::Arc;
    let faulty = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new())));
    cheap_secret_hashing();
    let built = local_server::build_app_on(
        AppConfig {
            seed: DEMO_SEED.into(),
            signing_key_pem: None,
        },
        faulty.clone(),
    )
    .await
    .expect("app builds");
    (
        TestApp {
            router: built.router,
        },
        faulty,
    )
}

/// Initech (the demo's CRM-connected account).
pub const INITECH: (&str, &str) = ("initech-integration", "initech-dev-secret");

impl Server {
    /// The token endpoint's JSON answer for the demo client `northwind-integration` (Basic auth).
    pub async fn token_response(&self, scope: &str) -> Value {
        self.token_response_of(NORTHWIND, scope).await
    }

    /// The token endpoint's JSON answer for `client` (Basic auth).
    pub async fn token_response_of(&self, client: (&str, &str), scope: &str) -> Value {
        http()
            .post(format!("{}/oauth2/token", self.base))
            .basic_auth(client.0, Some(client.1))
            .form(&[("grant_type", "client_credentials"), ("scope", scope)])
            .timeout(std::time::Duration::from_secs(10))
            .send()
            .await
            .expect("token request")
            .json()
            .await
            .expect("JSON answer")
    }
}

/// A history entry of a contacts dispatch by router `router_id` (a UUID) of `account_id` at
/// `now` that assigned nobody (`Trigger did not match`), for tests that store due work beside it.
pub fn unassigned_entry(
    account_id: shared::types::AccountId, router_id: &str, now: chrono::DateTime<chrono::Utc>,
) -> shared::model::DispatchEntry {
    shared::model::DispatchEntry::unassigned(
        account_id,
        router_id.parse::<uuid::Uuid>().unwrap().into(),
        shared::model::ObjectType::Contacts,
        "gone".into(),
        "Trigger did not match".into(),
        shared::model::DispatchSource::Api,
        now,
    )
}
