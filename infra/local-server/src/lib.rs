//! Wiring of the local server: every function's described routes over one [`Deps`] (the embedded
//! store by default, or the DynamoDB table with `--store dynamodb`), so the HTTP tests and the
//! binary run the very same application. It also serves the interactive API reference at
//! `GET /docs` (Swagger UI, vendored into the build) over the `GET /openapi.json` every
//! deployment serves.

pub mod prometheus;
pub mod queue;

use anyhow::Context;
use axum::Router;
use shared::api::openapi::{finish_document, Description};
use shared::auth::{
    SigningKey, TokenIssuer, TokenVerifier, DEFAULT_AUDIENCE, DEFAULT_ISSUER, DEV_SIGNING_KEY_PEM,
};
use shared::deps::Deps;
use shared::dispatch::DispatchEngine;
use shared::due::DueWorker;
use shared::store::memory::MemoryStore;
use shared::store::Store;
use std::sync::Arc;
use utoipa::openapi::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::{oauth, Config, SwaggerUi};

/// The demo seed committed in the repository (`infra/seed/demo.json`).
pub const DEMO_SEED: &str = include_str!("../../seed/demo.json");

/// Lifetime of issued tokens, seconds.
pub const TOKEN_TTL_SECONDS: u64 = 3600;

/// The log filter when `RUST_LOG` is unset: `info`, without the requests' spans and their
/// `request done` lines ([`shared::api::REQUEST_LOG_TARGET`]: a request that succeeds writes no
/// line, a 5xx one `request failed` line; `RUST_LOG=info` shows the spans and every done line),
/// and tower-http's per-request lines.
pub const DEFAULT_LOG_FILTER: &str = "info,tower_http=warn,request=warn";

/// Path of the interactive API reference.
pub const DOCS_PATH: &str = "/docs";

/// What the local server is built from.
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// Seed file text.
    pub seed: String,
    /// PEM of the signing key; `None` = the development key.
    pub signing_key_pem: Option<String>,
}

/// The function route groups, each as its Lambda function runs it (finished: 404 fallback,
/// request ids).
pub struct Functions {
    /// `POST /oauth2/token`, `GET /openapi.json`.
    pub token: Router,
    /// `/{contacts,companies,deals,tickets}[/{id}]`.
    pub records: Router,
    /// `/users[/{userId}]`.
    pub users: Router,
    /// `/routers[/{routerId}]`.
    pub routers: Router,
    /// `POST /dispatch/router`.
    pub dispatch: Router,
    /// `/webhooks[/{webhookId}[/...]]`.
    pub webhooks: Router,
}

/// The built application.
pub struct App {
    /// All routes merged and finished (404 fallback, request ids), plus `GET /docs`.
    pub router: Router,
    /// Each function's application alone, for tests that drive one handler.
    pub functions: Functions,
    /// The routes of every function, merged and not finished (without their description: the
    /// same routes [`App::openapi`] describes).
    pub routes: Router,
    /// The dispatch function's state, from which [`App::openapi`] describes its routes.
    dispatch_state: dispatch_function::DispatchState,
    /// The webhooks function's state, likewise.
    webhooks_state: webhooks_function::WebhooksState,
    /// What the functions are built from.
    pub deps: Deps,
    /// The dispatch engine (also fed by the queue poller).
    pub engine: Arc<DispatchEngine>,
    /// The store behind it.
    pub store: Arc<dyn Store>,
    /// The demo seed's first client id, when the seed is the demo seed (the start-up hint and
    /// `/docs`); `None` for any other seed.
    pub demo_client: Option<String>,
    /// Its secret as written in the demo seed; `None` for any other seed.
    pub demo_secret: Option<String>,
}

impl App {
    /// The API description generated from the routes (each function's routes built again with
    /// their description, merged and finished by [`shared::api::openapi::finish_document`]):
    /// what `openapi.json` holds. Built when asked, not with the application: a server serves the
    /// committed document, and building the description was, in a debug build, about half of
    /// the CPU of an in-process test application (perf).
    ///
    /// Errors: a function's state failing to build from the application's dependencies (never
    /// once the application is built).
    pub fn openapi(&self) -> anyhow::Result<OpenApi> {
        let described = described_routes(
            &self.deps,
            self.dispatch_state.clone(),
            self.webhooks_state.clone(),
            Description::Full,
        )?;
        let (_, openapi) = described.split_for_parts();
        Ok(finish_document(openapi))
    }

    /// The application as served on `addr`: [`App::router`], except that `/docs` is pre-filled
    /// with the demo client's secret only when `addr` is a loopback address (a page other hosts
    /// can reach gives no secret away, not even the demo's: `docs/decisions.md`, "HTTP").
    pub fn serving(&self, addr: std::net::SocketAddr) -> Router {
        let (client, secret) = if addr.ip().is_loopback() {
            (self.demo_client.as_deref(), self.demo_secret.as_deref())
        } else {
            (None, None)
        };
        shared::api::finish(self.routes.clone().merge(docs_page(client, secret)))
    }
}

/// Loads the seed into a fresh embedded store and mounts every function's routes.
///
/// Errors: an invalid seed (with the JSON path of the first problem) or signing key.
pub async fn build_app(config: AppConfig) -> anyhow::Result<App> {
    build_app_on(config, Arc::new(MemoryStore::new())).await
}

/// `deps` with the local server's keys: the signing key's issuer and verifier (the development
/// key unless `signing_key_pem`).
///
/// Errors: an invalid signing key.
pub fn with_local_keys(deps: Deps, signing_key_pem: Option<&str>) -> anyhow::Result<Deps> {
    let key = SigningKey::from_pem(signing_key_pem.unwrap_or(DEV_SIGNING_KEY_PEM))
        .context("invalid signing key")?;
    let verifier = TokenVerifier::from_signing_key(&key, DEFAULT_ISSUER, DEFAULT_AUDIENCE)
        .context("invalid signing key")?;
    let issuer = TokenIssuer::new(key, DEFAULT_ISSUER, DEFAULT_AUDIENCE, TOKEN_TTL_SECONDS);
    Ok(deps.with_verifier(verifier).with_issuer(issuer))
}

/// Loads the seed into `store` (insert-if-absent: what exists is left as stored, so a table
/// that already holds the seed is not changed) and mounts every function's routes over it.
///
/// Errors: an invalid seed (with the JSON path of the first problem; nothing written), a record
/// key held by another record, the store's, or an invalid signing key.
pub async fn build_app_on(config: AppConfig, store: Arc<dyn Store>) -> anyhow::Result<App> {
    let deps = with_local_keys(Deps::new(store), config.signing_key_pem.as_deref())?
        .with_outbound(shared::outbound::OutboundPolicy::LOCAL);
    build_app_with(config, deps).await
}

/// Loads the seed into `deps.store` and mounts every function's routes over `deps`.
///
/// Errors: as [`build_app_on`].
pub async fn build_app_with(config: AppConfig, deps: Deps) -> anyhow::Result<App> {
    let plan = shared::seed::load(&config.seed, deps.clock.now(), deps.outbound)
        .context("invalid seed file")?;
    let report = shared::seed::provision(deps.store.as_ref(), deps.sealer()?.as_ref(), plan)
        .await
        .map_err(|e| anyhow::anyhow!("provisioning the seed failed: {e}"))?;
    tracing::info!(
        inserted = report.inserted,
        skipped = report.skipped.len(),
        "seed loaded"
    );
    // Only the committed demo seed's client is ever shown (the start-up hint, `/docs`).
    let (demo_client, demo_secret) = if config.seed == DEMO_SEED {
        first_client(&config.seed)
    } else {
        (None, None)
    };

    // The webhooks state registers the delivery job on the shared due-work worker first, so
    // deliveries the dispatch engine hands on run in this process.
    let webhooks_state = webhooks_function::WebhooksState::new(&deps)?;
    let dispatch_state = dispatch_function::DispatchState::new(&deps)?;
    let engine = dispatch_state.engine.clone();
    // One engine for both route sets: its jobs (CRM sync, SLA checks) are registered once.
    let dispatch_app = dispatch_function::app_of(dispatch_state.clone());
    let described = described_routes(
        &deps,
        dispatch_state.clone(),
        webhooks_state.clone(),
        Description::RoutesOnly,
    )?;
    let (routes, _) = described.split_for_parts();
    let router = shared::api::finish(
        routes
            .clone()
            .merge(docs_page(demo_client.as_deref(), demo_secret.as_deref())),
    );
    let functions = Functions {
        token: token_function::app(&deps)?,
        records: records_function::app(&deps)?,
        users: users_function::app(&deps)?,
        routers: routers_function::app(&deps)?,
        dispatch: dispatch_app,
        webhooks: webhooks_function::app(&deps)?,
    };
    Ok(App {
        router,
        functions,
        routes,
        dispatch_state,
        webhooks_state,
        store: deps.store.clone(),
        deps,
        engine,
        demo_client,
        demo_secret,
    })
}

/// Sweeps due work every `interval` (at once first: a restart resumes what the last run left),
/// until `stop` turns true (`docs/design.md`, "Work that happens later": the local server's
/// sweeper; in Lambda an EventBridge schedule invokes the dispatch function every minute). Use
/// [`sweep_interval`] for `interval`.
pub async fn sweep_periodically(
    worker: Arc<DueWorker>, interval: std::time::Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        if *stop.borrow() {
            return;
        }
        if let Err(error) = worker.sweep_all(SWEEP_BATCH, interval).await {
            tracing::warn!(error = %shared::error::ErrorChain(&error), "sweep failed; trying again");
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.changed() => return,
        }
    }
}

/// The local server's sweep interval: `SWEEP_INTERVAL_SECONDS` (`configured`), but at most one
/// SLA minute (BEHAVIOR 14: checks run at most one scaled minute late, also after a restart),
/// and at least 0.1 s.
pub fn sweep_interval(
    configured: std::time::Duration, sla_minute: shared::sla::SlaMinute,
) -> std::time::Duration {
    configured
        .min(sla_minute.duration())
        .max(std::time::Duration::from_millis(100))
}

/// Items one sweep round of the local server reads.
pub const SWEEP_BATCH: usize = 500;

/// Every function's routes, merged, with their description or without it.
fn described_routes(
    deps: &Deps, dispatch_state: dispatch_function::DispatchState,
    webhooks_state: webhooks_function::WebhooksState, description: Description,
) -> anyhow::Result<OpenApiRouter> {
    Ok(OpenApiRouter::new()
        .merge(token_function::api(
            token_function::TokenState::new(deps)?,
            description,
        ))
        .merge(records_function::api(
            records_function::RecordsState::new(deps)?,
            description,
        ))
        .merge(users_function::api(
            users_function::UsersState::new(deps)?,
            description,
        ))
        .merge(routers_function::api(
            routers_function::RoutersState::new(deps)?,
            description,
        ))
        .merge(dispatch_function::api(dispatch_state, description))
        .merge(webhooks_function::api(webhooks_state, description)))
}

/// The API description generated from the routes, as committed in `openapi.json` (pretty JSON
/// with a final newline).
///
/// Errors: the demo seed or development key failing to load (never in practice).
pub async fn generated_openapi_json() -> anyhow::Result<String> {
    let app = build_app(AppConfig {
        seed: DEMO_SEED.to_string(),
        signing_key_pem: None,
    })
    .await?;
    Ok(format!("{}\n", app.openapi()?.to_pretty_json()?))
}

/// The Content-Security-Policy of `/docs` (`docs/decisions.md`, "HTTP"): scripts, styles, fonts and
/// calls from the page's own origin only (Swagger UI's bundle is vendored; its React views set
/// inline `style` attributes and its icons are `data:` images), no plug-ins, no `<base>` rewriting,
/// forms posting nowhere else, and no framing by another site.
pub const DOCS_CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; \
     connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// `GET /docs`: Swagger UI (assets vendored into the build, no CDN) reading `/openapi.json`,
/// with the OAuth 2.0 client-credentials flow wired to `POST /oauth2/token` so a reader can get
/// a token from the page and try a call; the demo client is filled in when given (the demo seed
/// on a loopback address: [`App::serving`]). Every answer carries
/// [`DOCS_CONTENT_SECURITY_POLICY`].
fn docs_page(client_id: Option<&str>, client_secret: Option<&str>) -> Router {
    let config = Config::new(["/openapi.json"])
        .persist_authorization(true)
        .display_operation_id(true)
        .try_it_out_enabled(true)
        .filter(true)
        .doc_expansion("list");
    let mut oauth = oauth::Config::new();
    if let Some(id) = client_id {
        oauth = oauth.client_id(id);
    }
    if let Some(secret) = client_secret {
        // The local server's demo client (the seed's first); never a production secret.
        oauth = oauth.client_secret(secret);
    }
    let oauth = oauth
        .scopes(vec![
            "service-api/read".to_string(),
            "service-api/create".to_string(),
            "service-api/update".to_string(),
            "service-api/delete".to_string(),
        ])
        .app_name("Account routing API");
    let page: Router = SwaggerUi::new(DOCS_PATH).config(config).oauth(oauth).into();
    page.layer(axum::middleware::map_response(
        |mut response: axum::response::Response| async move {
            response.headers_mut().insert(
                axum::http::header::CONTENT_SECURITY_POLICY,
                axum::http::HeaderValue::from_static(DOCS_CONTENT_SECURITY_POLICY),
            );
            response
        },
    ))
}

/// The local server's log: text lines filtered by `filter`, written to `writer`, every field
/// escaped ([`shared::logging`]: a value from a request cannot forge a line), with colours when
/// `ansi`.
pub fn log_subscriber<W>(
    filter: tracing_subscriber::EnvFilter, writer: W, ansi: bool,
) -> impl tracing::Subscriber + Send + Sync + 'static
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(writer)
        .fmt_fields(shared::logging::escaped_fields())
        .finish()
}

fn first_client(seed: &str) -> (Option<String>, Option<String>) {
    let value: serde_json::Value = serde_json::from_str(seed).unwrap_or_default();
    let client = &value["accounts"][0]["clients"][0];
    (
        client["client_id"].as_str().map(str::to_string),
        client["client_secret"].as_str().map(str::to_string),
    )
}
