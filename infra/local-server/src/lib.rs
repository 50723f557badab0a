//! Wiring of the local server: every function's routes over one store (the embedded store by
//! default, or the DynamoDB table with `--store dynamodb`), so the HTTP tests and the binary run
//! the very same application.

pub mod queue;

use anyhow::Context;
use axum::Router;
use shared::auth::{
    SigningKey, TokenIssuer, TokenVerifier, DEFAULT_AUDIENCE, DEFAULT_ISSUER, DEV_SIGNING_KEY_PEM,
};
use shared::clock::{Clock, SystemClock};
use shared::dispatch::DispatchEngine;
use shared::fields::CatalogueCache;
use shared::members::MemberService;
use shared::records::RecordService;
use shared::routers::RouterService;
use shared::store::memory::MemoryStore;
use shared::store::Store;
use std::sync::Arc;

/// The demo seed committed in the repository (`infra/seed/demo.json`).
pub const DEMO_SEED: &str = include_str!("../../seed/demo.json");

/// Lifetime of issued tokens, seconds.
pub const TOKEN_TTL_SECONDS: u64 = 3600;

/// What the local server is built from.
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// Seed file text.
    pub seed: String,
    /// PEM of the signing key; `None` = the development key.
    pub signing_key_pem: Option<String>,
}

/// The function route groups, each as its Lambda function mounts it (not yet finished).
pub struct Functions {
    /// `POST /oauth2/token`.
    pub token: Router,
    /// `/{contacts,companies,deals,tickets}[/{id}]`.
    pub records: Router,
    /// `/users[/{userId}]`.
    pub users: Router,
    /// `/routers[/{routerId}]`.
    pub routers: Router,
    /// `POST /dispatch/router`.
    pub dispatch: Router,
}

/// The built application.
pub struct App {
    /// All routes merged and finished (404 fallback, request ids).
    pub router: Router,
    /// Each function's routes alone, for tests that drive one handler.
    pub functions: Functions,
    /// The store behind it.
    pub store: Arc<dyn Store>,
    /// The dispatch engine (also fed by the queue poller).
    pub engine: Arc<DispatchEngine>,
    /// First client id of the seed, for the start-up hint.
    pub demo_client: Option<String>,
    /// Its secret as written in the seed (only for the start-up hint).
    pub demo_secret: Option<String>,
}

/// Loads the seed into a fresh embedded store and mounts every function's routes.
///
/// Errors: an invalid seed (with the JSON path of the first problem) or signing key.
pub async fn build_app(config: AppConfig) -> anyhow::Result<App> {
    build_app_on(config, Arc::new(MemoryStore::new())).await
}

/// Loads the seed into `store` (insert-if-absent: what exists is left as stored, so a table
/// that already holds the seed is not changed) and mounts every function's routes over it.
///
/// Errors: an invalid seed (with the JSON path of the first problem; nothing written), a record
/// key held by another record, the store's, or an invalid signing key.
pub async fn build_app_on(config: AppConfig, store: Arc<dyn Store>) -> anyhow::Result<App> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let plan = shared::seed::load(&config.seed, clock.now()).context("invalid seed file")?;
    let report = store
        .provision(&plan)
        .await
        .context("provisioning the seed failed")?;
    tracing::info!(
        inserted = report.inserted,
        skipped = report.skipped.len(),
        "seed loaded"
    );
    let (demo_client, demo_secret) = first_client(&config.seed);

    let pem = config
        .signing_key_pem
        .as_deref()
        .unwrap_or(DEV_SIGNING_KEY_PEM);
    let key = SigningKey::from_pem(pem).context("invalid signing key")?;
    let verifier = Arc::new(
        TokenVerifier::from_signing_key(&key, DEFAULT_ISSUER, DEFAULT_AUDIENCE)
            .context("invalid signing key")?,
    );
    let issuer = Arc::new(TokenIssuer::new(
        key,
        DEFAULT_ISSUER,
        DEFAULT_AUDIENCE,
        TOKEN_TTL_SECONDS,
    ));

    let catalogues = Arc::new(CatalogueCache::default());
    let engine = Arc::new(DispatchEngine::new(
        store.clone(),
        clock.clone(),
        catalogues.clone(),
    ));
    let functions = Functions {
        token: token_function::routes(token_function::TokenState {
            store: store.clone(),
            issuer,
            clock: clock.clone(),
        }),
        records: records_function::routes(records_function::RecordsState {
            records: Arc::new(RecordService::new(store.clone(), clock.clone(), catalogues)),
            verifier: verifier.clone(),
        }),
        users: users_function::routes(users_function::UsersState {
            members: Arc::new(MemberService::new(store.clone(), clock.clone())),
            verifier: verifier.clone(),
        }),
        routers: routers_function::routes(routers_function::RoutersState {
            routers: Arc::new(RouterService::new(store.clone())),
            verifier: verifier.clone(),
        }),
        dispatch: dispatch_function::routes(dispatch_function::DispatchState {
            engine: engine.clone(),
            verifier,
        }),
    };
    let router = shared::api::finish(
        Router::new()
            .merge(functions.token.clone())
            .merge(functions.records.clone())
            .merge(functions.users.clone())
            .merge(functions.routers.clone())
            .merge(functions.dispatch.clone()),
    );
    Ok(App {
        router,
        functions,
        store,
        engine,
        demo_client,
        demo_secret,
    })
}

fn first_client(seed: &str) -> (Option<String>, Option<String>) {
    let value: serde_json::Value = serde_json::from_str(seed).unwrap_or_default();
    let client = &value["accounts"][0]["clients"][0];
    (
        client["client_id"].as_str().map(str::to_string),
        client["client_secret"].as_str().map(str::to_string),
    )
}
