//! What every function is built from, read once at cold start from the environment, failing fast
//! with a clear message (`docs/design.md`, "Configuration read once at cold start").
//!
//! | variable | meaning |
//! |---|---|
//! | `JWT_PUBLIC_JWKS` | JWKS (JSON) of the public keys that verify bearer tokens (selected by `kid`); every function but the token function |
//! | `JWT_ISSUER`, `JWT_AUDIENCE` | expected `iss` / `aud`; default `account-routing-api` |
//! | `STORE_BACKEND` | `dynamodb` (default) or `memory` (embedded store loaded from `SEED_PATH`; for local invocation) |
//! | `TABLE_NAME` | the DynamoDB table (required for `dynamodb`) |
//! | `AWS_ENDPOINT_URL` | optional: a local emulator instead of AWS |
//! | `SEED_PATH` | seed file for the `memory` backend |
//! | `ALLOW_DEVELOPMENT_SIGNING_KEY` | `true` lets `JWT_PUBLIC_JWKS` list the committed development key's public key (local runs only); otherwise the function refuses to start with it |
//! | `CURSOR_SECRET_ARN` | a Secrets Manager secret whose text (at least 32 bytes) signs `after` cursors (BEHAVIOR 11), read once, by the first request that lists (not during the cold start: a `GET` of one record never needs it); the same for every instance, so required with `dynamodb` by the functions that list |
//! | `CURSOR_SECRET` | the same key in the clear, for local runs only (a deployment never puts a secret in the environment); the `memory` backend uses a random key when neither is set |
//! | `SEALING_KMS_KEY_ID` | the KMS key that seals stored secrets (CRM access tokens, webhook signing secrets; [`crate::secrets`]); required by the functions that open or seal them in Lambda |
//! | `LOCAL_SEALING_KEY` | base64 of a 32-byte AES key sealing them instead, for local runs; without either, the committed development key (refused in Lambda) |
//! | `ALLOW_INSECURE_OUTBOUND` | `true` lets outbound requests (CRM, webhooks) and provisioned URLs use `http` and loopback hosts (local runs and tests); default `false` ([`crate::outbound`]) |
//! | `CRM_SYNC_RETRY_DELAYS` | seconds between CRM sync attempts, comma-separated (BEHAVIOR 7); default `30,300,1800` |
//! | `DISPATCH_QUEUE_URL` | the dispatch queue, where due work (CRM sync attempts, ...) waits as delayed messages ([`crate::due`]; the dispatch function); unset: timers of the process |
//! | `WEBHOOK_QUEUE_URL` | the webhook delivery queue: webhook deliveries (BEHAVIOR 13) wait there instead of on the dispatch queue (the dispatch and webhooks functions) |
//! | `WEBHOOK_RETRY_DELAYS` | comma-separated seconds between webhook delivery attempts (default 5,300,1800,7200,18000,36000,36000) |
//! | `DUE_WORK_LEASE_SECONDS` | how long a worker's claim on a due item holds (1 to 900, default 60); on the queue also how long after its due time a message may still be on its way before the sweeper resumes the item |
//! | `DISPATCH_HISTORY_RETENTION_DAYS` | how long routing history entries are kept (BEHAVIOR 8); default 400 |
//! | `SLA_MINUTE_SECONDS` | how long a minute of a router's SLA lasts (BEHAVIOR 14), seconds from 0.1 to 60; default 60 (tests scale it down) |
//!
//! Region and credentials come from the standard AWS environment (the Lambda role in AWS). One
//! AWS configuration ([`aws_config::SdkConfig`]) is loaded and shared by every client a function
//! builds (DynamoDB, and SQS or Secrets Manager where a function needs them).

use crate::auth::keys::{
    development_key_allowed, jwks_lists_development_key, ALLOW_DEVELOPMENT_SIGNING_KEY,
    DEFAULT_AUDIENCE, DEFAULT_ISSUER,
};
use crate::auth::token::issue::TokenIssuer;
use crate::auth::token::verify::TokenVerifier;
use crate::clock::{Clock, SystemClock};
use crate::crm::RetryDelays;
use crate::dispatch::DEFAULT_HISTORY_RETENTION_DAYS;
use crate::due::{DueSettings, DueWorker, SqsHandoff};
use crate::fields::cache::CatalogueCache;
use crate::outbound::OutboundPolicy;
use crate::page::cursor::{CursorKey, CursorKeySource, LoadCursorKey};
use crate::secrets::{read_secret_string, KmsSealer, LocalSealer, Sealer};
use crate::sla::SlaMinute;
use crate::store::dynamodb::{env as dynamodb_env, DynamoStore};
use crate::store::memory::MemoryStore;
use crate::store::Store;
use aws_config::SdkConfig;
use std::sync::Arc;

/// A configuration problem found at cold start; the message names the variable to fix.
#[derive(Debug, thiserror::Error)]
#[error("configuration error: {0}")]
pub struct ConfigError(pub String);

/// What the functions are built from: the store, the clock, the catalogue cache, the token
/// keys, and the shared AWS configuration. Cheap to clone.
#[derive(derive_more::Debug, Clone)]
pub struct Deps {
    /// Where the data lives.
    #[debug(skip)]
    pub store: Arc<dyn Store>,
    /// The current time.
    #[debug(skip)]
    pub clock: Arc<dyn Clock>,
    /// The accounts' field catalogues, cached for a short TTL.
    #[debug(skip)]
    pub catalogues: Arc<CatalogueCache>,
    /// Verifies bearer tokens (`JWT_PUBLIC_JWKS`); every function but the token function.
    pub verifier: Option<Arc<TokenVerifier>>,
    /// Signs access tokens; the token function only (its key comes from a secret).
    pub issuer: Option<Arc<TokenIssuer>>,
    /// The AWS configuration every client is built from; `None` without AWS (embedded store).
    #[debug(skip)]
    pub aws: Option<SdkConfig>,
    /// Signs and opens `after` cursors (BEHAVIOR 11), ready or read on first use; `None` when
    /// `CURSOR_SECRET` and `CURSOR_SECRET_ARN` are missing on a shared store.
    pub cursors: Option<Arc<CursorKeySource>>,
    /// Delays between CRM sync attempts (BEHAVIOR 7).
    pub crm_retry_delays: RetryDelays,
    /// How long Salesforce's daily total and an API usage at the share wait (BEHAVIOR 7,
    /// `CRM_SYNC_LIMIT_WAIT`).
    pub crm_limit_wait: crate::crm::retry::LimitWait,
    /// Delays between webhook delivery attempts (BEHAVIOR 13, `WEBHOOK_RETRY_DELAYS`).
    pub webhook_retry_delays: crate::webhooks::RetrySchedule,
    /// The worker of due work (`docs/design.md`, "Work that happens later"): hand-offs on the
    /// dispatch queue, or timers of this process. Jobs register on it (the dispatch function's
    /// CRM sync).
    pub due: Arc<DueWorker>,
    /// How long routing history entries are kept (BEHAVIOR 8).
    pub history_retention: chrono::Duration,
    /// What outbound requests (CRM, webhooks) may call (`ALLOW_INSECURE_OUTBOUND`; strict unless
    /// set).
    pub outbound: OutboundPolicy,
    /// Seals and opens stored secrets; `None` in Lambda without `SEALING_KMS_KEY_ID`.
    #[debug(skip)]
    pub sealer: Option<Arc<dyn Sealer>>,
    /// How long a minute of a router's SLA lasts (BEHAVIOR 14, `SLA_MINUTE_SECONDS`).
    pub sla_minute: SlaMinute,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl Deps {
    /// Deps over `store` with the system clock, a fresh catalogue cache and no keys.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store: store.clone(),
            clock: Arc::new(SystemClock),
            catalogues: Arc::new(CatalogueCache::default()),
            verifier: None,
            issuer: None,
            aws: None,
            cursors: Some(Arc::new(CursorKeySource::ready(CursorKey::random()))),
            crm_retry_delays: RetryDelays::default(),
            crm_limit_wait: crate::crm::retry::LimitWait::default(),
            webhook_retry_delays: crate::webhooks::RetrySchedule::default(),
            due: DueWorker::in_process(
                store.clone(),
                Arc::new(SystemClock),
                DueSettings::default(),
            ),
            history_retention: chrono::Duration::days(DEFAULT_HISTORY_RETENTION_DAYS),
            outbound: OutboundPolicy::STRICT,
            sealer: Some(Arc::new(LocalSealer::development())),
            sla_minute: SlaMinute::default(),
        }
    }

    /// The same deps with SLA minutes of `minute` (BEHAVIOR 14).
    pub fn with_sla_minute(mut self, minute: SlaMinute) -> Self {
        self.sla_minute = minute;
        self
    }

    /// The same deps sealing stored secrets with `sealer`.
    pub fn with_sealer(mut self, sealer: Arc<dyn Sealer>) -> Self {
        self.sealer = Some(sealer);
        self
    }

    /// The sealer of stored secrets.
    ///
    /// Errors: none configured (Lambda without `SEALING_KMS_KEY_ID`).
    pub fn sealer(&self) -> Result<Arc<dyn Sealer>, ConfigError> {
        self.sealer.clone().ok_or_else(|| {
            ConfigError(format!(
                "{} is not set: stored secrets (CRM access tokens, webhook signing secrets) are sealed with a KMS key in a deployment",
                KmsSealer::VARIABLE
            ))
        })
    }

    /// The same deps calling out under `policy`.
    pub fn with_outbound(mut self, policy: OutboundPolicy) -> Self {
        self.outbound = policy;
        self
    }

    /// The same deps with CRM sync retries after `delays`.
    pub fn with_crm_retry_delays(mut self, delays: RetryDelays) -> Self {
        self.crm_retry_delays = delays;
        self
    }

    /// The same deps with webhook deliveries retried after `delays`.
    pub fn with_webhook_retry_delays(mut self, delays: crate::webhooks::RetrySchedule) -> Self {
        self.webhook_retry_delays = delays;
        self
    }

    /// The same deps with due work handed on as timers of this process, claimed with
    /// `settings` (no job registered yet).
    pub fn with_due_in_process(mut self, settings: DueSettings) -> Self {
        self.due = DueWorker::in_process(self.store.clone(), self.clock.clone(), settings);
        self
    }

    /// The same deps with due work handed on as delayed messages of the dispatch queue
    /// `queue_url` (SQS, with the AWS configuration of the deps, loaded now when needed; the SQS
    /// client is built at the first hand-off, [`SqsHandoff`]), claimed
    /// with `settings` and resumed by the sweeper a lease after their due time (no job
    /// registered yet); webhook deliveries go to `webhook_queue_url` when given (their own queue
    /// and dead-letter queue, BEHAVIOR 13).
    pub async fn with_due_queues(
        mut self, queue_url: impl Into<String>, webhook_queue_url: Option<String>,
        settings: DueSettings,
    ) -> Self {
        let mut handoff = SqsHandoff::new(&self.aws().await, queue_url, settings.lease);
        if let Some(url) = webhook_queue_url {
            use crate::model::due::DueKind;
            handoff = handoff
                .with_queue(DueKind::WebhookDelivery, url.clone())
                .with_queue(DueKind::CloseDeliveries, url);
        }
        self.due = DueWorker::new(
            self.store.clone(),
            self.clock.clone(),
            settings,
            Arc::new(handoff),
        );
        self
    }

    /// The same deps signing cursors with `key` (every instance of a deployment shares one).
    pub fn with_cursor_key(mut self, key: CursorKey) -> Self {
        self.cursors = Some(Arc::new(CursorKeySource::ready(key)));
        self
    }

    /// The same deps verifying tokens with `verifier`, which also checks every token's client
    /// against the store (a re-keyed or disabled client's earlier tokens are refused within a
    /// minute, BEHAVIOR 1: [`crate::auth::token::ClientGenerations`], on this deps' store and
    /// clock).
    pub fn with_verifier(mut self, verifier: TokenVerifier) -> Self {
        let clients =
            crate::auth::token::ClientGenerations::new(self.store.clone(), self.clock.clone());
        self.verifier = Some(Arc::new(verifier.checking_clients(Arc::new(clients))));
        self
    }

    /// The same deps signing tokens with `issuer`.
    pub fn with_issuer(mut self, issuer: TokenIssuer) -> Self {
        self.issuer = Some(Arc::new(issuer));
        self
    }

    /// The same deps reading the time from `clock`.
    ///
    /// The due-work worker is built again on `clock`, with timers of this process (call
    /// [`Self::with_due_queues`] after this one for a queue).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        // The clients' generations age on the new clock too.
        if let Some(verifier) = self.verifier.take() {
            self = self.with_verifier(TokenVerifier::clone(&verifier));
        }
        let settings = self.due.settings();
        self.with_due_in_process(settings)
    }

    /// Reads the environment (table above) as a Lambda function does: the store named by
    /// `STORE_BACKEND`, the verifier when `JWT_PUBLIC_JWKS` is set, and the AWS configuration.
    /// For DynamoDB the SDK client is built here (`BehaviorVersion::latest()`, standard retries,
    /// `AWS_ENDPOINT_URL` when set) and its connection opened by one warm-up request
    /// ([`dynamodb_env::warm_up`]; a failure is logged, not returned), so the first request after
    /// a cold start finds it open. [`Self::from_env_for`] with [`Process::function`].
    ///
    /// One connection, in every function: a request that reads concurrently opens the others it
    /// needs. For the dispatch function, whose first round reads up to five items at once, five
    /// connections during init made the cold start slower as a whole than one
    /// (`docs/performance.md`).
    ///
    /// Errors: an unknown backend, `TABLE_NAME` missing, an unreadable or invalid seed, an invalid
    /// JWKS, a JWKS listing the development key without `ALLOW_DEVELOPMENT_SIGNING_KEY=true`.
    pub async fn from_env() -> Result<Self, ConfigError> {
        Self::from_env_for(Process::function()?).await
    }

    /// Reads the environment (table above) for `process`: a Lambda function
    /// ([`Process::function`]) or the local server ([`Process::local_server`]), which differ
    /// only where [`Process`] says. The one way every process builds its deps.
    ///
    /// Errors: as [`Deps::from_env`].
    pub async fn from_env_for(process: Process) -> Result<Self, ConfigError> {
        let outbound =
            OutboundPolicy::from_env_or(process.outbound_default).map_err(ConfigError)?;
        let mut deps = match process.store {
            StoreBackend::Dynamodb => {
                let table = var("TABLE_NAME").ok_or_else(|| {
                    ConfigError(format!(
                        "TABLE_NAME is not set ({}=dynamodb)",
                        StoreBackend::VARIABLE
                    ))
                })?;
                let sdk = dynamodb_env::sdk_config().await;
                let client = dynamodb_env::client(&sdk);
                if process.warm_connections > 0 {
                    dynamodb_env::warm_up(&client, &table, process.warm_connections).await;
                }
                let mut deps = Self::new(Arc::new(DynamoStore::new(client, table)));
                deps.aws = Some(sdk);
                if process.many_instances {
                    // Instances of one deployment must open each other's cursors: no random key.
                    deps.cursors = None;
                }
                deps
            }
            StoreBackend::Memory => {
                let sealer = sealer_from_env(None)
                    .await?
                    .unwrap_or_else(|| Arc::new(LocalSealer::development()));
                let store = if process.seed_from_env {
                    memory_store_from_seed_path(outbound, sealer.as_ref()).await?
                } else {
                    MemoryStore::new()
                };
                Self::new(Arc::new(store)).with_sealer(sealer)
            }
        };
        if let Some(jwks) = var("JWT_PUBLIC_JWKS") {
            let issuer = var("JWT_ISSUER").unwrap_or_else(|| DEFAULT_ISSUER.into());
            let audience = var("JWT_AUDIENCE").unwrap_or_else(|| DEFAULT_AUDIENCE.into());
            let verifier = TokenVerifier::from_jwks_str(&jwks, &issuer, &audience)
                .map_err(|e| ConfigError(format!("JWT_PUBLIC_JWKS is invalid: {e}")))?;
            refuse_development_key(&jwks)?;
            deps = deps.with_verifier(verifier);
        }
        deps = deps.with_settings_from_env(outbound)?;
        let due_settings = DueSettings::from_env().map_err(ConfigError)?;
        let webhook_queue = process.webhook_queue_url;
        // The webhooks function knows only its own queue: it hands on nothing else.
        deps = match process.dispatch_queue_url.or_else(|| webhook_queue.clone()) {
            Some(queue_url) => {
                deps.with_due_queues(queue_url, webhook_queue, due_settings)
                    .await
            }
            None => deps.with_due_in_process(due_settings),
        };
        deps = deps.with_cursor_key_from_env().await?;
        if process.store == StoreBackend::Dynamodb {
            let sdk = deps.aws().await;
            deps.sealer = sealer_from_env(Some(&sdk)).await?;
        }
        Ok(deps)
    }

    /// Applies the settings every process reads from its environment, whatever its store
    /// ([`Deps::from_env_for`]): `CRM_SYNC_RETRY_DELAYS` (BEHAVIOR 7), the `outbound` policy
    /// (`ALLOW_INSECURE_OUTBOUND` as read by the caller: strict in Lambda when unset, local for
    /// the local server), `DISPATCH_HISTORY_RETENTION_DAYS` (BEHAVIOR 8), `SLA_MINUTE_SECONDS`
    /// (BEHAVIOR 14) and `WEBHOOK_RETRY_DELAYS` (BEHAVIOR 13).
    ///
    /// Errors: the first variable with an invalid value, named.
    fn with_settings_from_env(mut self, outbound: OutboundPolicy) -> Result<Self, ConfigError> {
        self.crm_retry_delays = RetryDelays::from_env().map_err(ConfigError)?;
        self.crm_limit_wait = crate::crm::retry::LimitWait::from_env().map_err(ConfigError)?;
        self.outbound = outbound;
        if let Some(text) = var("DISPATCH_HISTORY_RETENTION_DAYS") {
            let days = text
                .trim()
                .parse()
                .ok()
                .filter(|d| (1..=36_500).contains(d));
            let days: i64 = days.ok_or_else(|| {
                let wanted = "is not a number of days from 1 to 36500";
                ConfigError(format!("DISPATCH_HISTORY_RETENTION_DAYS={text} {wanted}"))
            })?;
            self.history_retention = chrono::Duration::days(days);
        }
        self.sla_minute = SlaMinute::from_env().map_err(ConfigError)?;
        self.webhook_retry_delays =
            crate::webhooks::RetrySchedule::from_env().map_err(ConfigError)?;
        Ok(self)
    }

    /// Sets the cursor key the environment names: `CURSOR_SECRET`, or the secret
    /// `CURSOR_SECRET_ARN` (read from Secrets Manager by the first request that lists, with the
    /// one AWS configuration: [`CursorKeySource::on_first_use`]); unchanged when neither is set.
    ///
    /// Errors: an invalid `CURSOR_SECRET`. A secret that cannot be read, or is too short, fails
    /// the lists (500, logged naming the secret), not the cold start.
    async fn with_cursor_key_from_env(self) -> Result<Self, ConfigError> {
        let mut deps = self;
        if let Some(secret) = var("CURSOR_SECRET") {
            let key = CursorKey::from_secret(secret.as_bytes())
                .map_err(|e| ConfigError(format!("CURSOR_SECRET is invalid: {e}")))?;
            deps = deps.with_cursor_key(key);
        }
        if let Some(arn) = var("CURSOR_SECRET_ARN") {
            let sdk = deps.aws().await;
            let load: LoadCursorKey = Box::new(move || {
                let (sdk, arn) = (sdk.clone(), arn.clone());
                Box::pin(async move {
                    let secret = read_secret_string(&sdk, &arn).await?;
                    CursorKey::from_secret(secret.as_bytes()).map_err(|e| {
                        format!("the cursor secret {arn} (CURSOR_SECRET_ARN) is invalid: {e}")
                    })
                })
            });
            deps.cursors = Some(Arc::new(CursorKeySource::on_first_use(load)));
        }
        Ok(deps)
    }

    /// The token verifier.
    ///
    /// Errors: `JWT_PUBLIC_JWKS is not set`.
    pub fn verifier(&self) -> Result<Arc<TokenVerifier>, ConfigError> {
        self.verifier
            .clone()
            .ok_or_else(|| ConfigError("JWT_PUBLIC_JWKS is not set".into()))
    }

    /// The cursor key, ready or read on first use.
    ///
    /// Errors: `CURSOR_SECRET is not set` (a shared store without a shared secret).
    pub fn cursors(&self) -> Result<Arc<CursorKeySource>, ConfigError> {
        self.cursors.clone().ok_or_else(|| {
            ConfigError(
                "CURSOR_SECRET is not set: every instance must sign list cursors with one secret of at least 32 bytes"
                    .into(),
            )
        })
    }

    /// The token issuer.
    ///
    /// Errors: no signing key was configured.
    pub fn issuer(&self) -> Result<Arc<TokenIssuer>, ConfigError> {
        self.issuer.clone().ok_or_else(|| {
            ConfigError(
                "no signing key: set JWT_SIGNING_KEY_SECRET_ARN or JWT_SIGNING_KEY_PEM".into(),
            )
        })
    }

    /// The AWS configuration, loaded now when the store did not need it.
    pub async fn aws(&mut self) -> SdkConfig {
        if let Some(sdk) = &self.aws {
            return sdk.clone();
        }
        let sdk = dynamodb_env::sdk_config().await;
        self.aws = Some(sdk.clone());
        sdk
    }
}

/// A verifier that trusts the committed development key accepts tokens
/// anyone can sign; refuse to start with it unless [`ALLOW_DEVELOPMENT_SIGNING_KEY`] is `true`
/// (local runs).
fn refuse_development_key(jwks: &str) -> Result<(), ConfigError> {
    let lists_it = serde_json::from_str(jwks)
        .map(|value| jwks_lists_development_key(&value))
        .unwrap_or(false);
    if lists_it && !development_key_allowed(var(ALLOW_DEVELOPMENT_SIGNING_KEY).as_deref()) {
        return Err(ConfigError(format!(
            "JWT_PUBLIC_JWKS lists the public key of the committed development key \
             (shared/dev-keys/dev-signing-key.pem), with which anyone can sign tokens: configure \
             the public JWKS of your own signing key (docs/deploy.md), or set \
             {ALLOW_DEVELOPMENT_SIGNING_KEY}=true for a local run"
        )));
    }
    Ok(())
}

/// The sealer the environment names: KMS (`SEALING_KMS_KEY_ID`), a local key
/// (`LOCAL_SEALING_KEY`), or the development key outside Lambda; `None` in Lambda without a key
/// (the functions that need one fail at cold start through [`Deps::sealer`]).
///
/// Errors: an invalid `LOCAL_SEALING_KEY`.
pub async fn sealer_from_env(
    sdk: Option<&SdkConfig>,
) -> Result<Option<Arc<dyn Sealer>>, ConfigError> {
    if let Some(key_id) = var(KmsSealer::VARIABLE) {
        let sdk = match sdk {
            Some(sdk) => sdk.clone(),
            None => dynamodb_env::sdk_config().await,
        };
        return Ok(Some(Arc::new(KmsSealer::new(&sdk, key_id))));
    }
    if let Some(key) = var(LocalSealer::VARIABLE) {
        return Ok(Some(Arc::new(
            LocalSealer::from_base64(&key).map_err(ConfigError)?,
        )));
    }
    if var("AWS_LAMBDA_FUNCTION_NAME").is_some() {
        return Ok(None);
    }
    Ok(Some(Arc::new(LocalSealer::development())))
}

/// Where the data lives (`STORE_BACKEND`; the local server's `--store`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreBackend {
    /// The DynamoDB table named by `TABLE_NAME`.
    Dynamodb,
    /// The embedded in-process store.
    Memory,
}

impl StoreBackend {
    /// The environment variable naming the backend of a function.
    pub const VARIABLE: &'static str = "STORE_BACKEND";

    /// Parses `dynamodb` or `memory` (exact, surrounding blanks ignored).
    ///
    /// Errors: any other text, named with the expected values.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        match text.trim() {
            "dynamodb" => Ok(Self::Dynamodb),
            "memory" => Ok(Self::Memory),
            other => Err(ConfigError(format!(
                "{}={other} is unknown; expected dynamodb or memory",
                Self::VARIABLE
            ))),
        }
    }

    /// `STORE_BACKEND`, `unset` when it is unset or blank.
    ///
    /// Errors: as [`Self::parse`].
    pub fn from_env_or(unset: Self) -> Result<Self, ConfigError> {
        var(Self::VARIABLE).map_or(Ok(unset), |text| Self::parse(&text))
    }
}

/// The kind of process [`Deps::from_env_for`] builds deps for, and what it assumes where the
/// environment is silent. A Lambda function and the local server read the same variables; they
/// differ only in these fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    /// The store: `STORE_BACKEND` for a function (default `dynamodb`), `--store` for the local
    /// server (default `memory`).
    store: StoreBackend,
    /// Outbound requests when `ALLOW_INSECURE_OUTBOUND` is unset: strict for a function,
    /// [`OutboundPolicy::LOCAL`] for the local server.
    outbound_default: OutboundPolicy,
    /// DynamoDB connections opened during start by warm-up requests; 0 sends none (the local
    /// server may have to create its table first).
    warm_connections: usize,
    /// Many instances share the table (Lambda): list cursors then need the shared key
    /// (`CURSOR_SECRET_ARN`); one process alone may sign them with a random key.
    many_instances: bool,
    /// The embedded store is loaded from `SEED_PATH` (a function); `false`: it starts empty and
    /// the caller provisions its seed (the local server's `--seed`).
    seed_from_env: bool,
    /// The dispatch queue where due work waits as delayed messages: `DISPATCH_QUEUE_URL` for a
    /// function, `--queue-url` for the local server; `None`: timers of this process.
    dispatch_queue_url: Option<String>,
    /// The webhook delivery queue (`WEBHOOK_QUEUE_URL`, the dispatch and webhooks functions);
    /// `None`: deliveries wait with the other due work. The local server polls only the
    /// dispatch queue, so it has none.
    webhook_queue_url: Option<String>,
}

impl Process {
    /// A Lambda function opening one DynamoDB connection at cold start, its store and queue
    /// named by `STORE_BACKEND` and `DISPATCH_QUEUE_URL`.
    ///
    /// Errors: an unknown `STORE_BACKEND`.
    pub fn function() -> Result<Self, ConfigError> {
        Ok(Self {
            store: StoreBackend::from_env_or(StoreBackend::Dynamodb)?,
            outbound_default: OutboundPolicy::STRICT,
            warm_connections: 1,
            many_instances: true,
            seed_from_env: true,
            dispatch_queue_url: var("DISPATCH_QUEUE_URL"),
            webhook_queue_url: var("WEBHOOK_QUEUE_URL"),
        })
    }

    /// The local server over `store`, handing due work on through `dispatch_queue_url` when
    /// given (webhook deliveries too: the server polls no other queue): outbound requests may
    /// reach `http` and loopback hosts unless `ALLOW_INSECURE_OUTBOUND=false`, no warm-up,
    /// cursors signed with a random key unless a cursor secret is set, and the seed provisioned
    /// by the server itself.
    pub fn local_server(store: StoreBackend, dispatch_queue_url: Option<String>) -> Self {
        Self {
            store,
            outbound_default: OutboundPolicy::LOCAL,
            warm_connections: 0,
            many_instances: false,
            seed_from_env: false,
            dispatch_queue_url,
            webhook_queue_url: None,
        }
    }
}

async fn memory_store_from_seed_path(
    outbound: OutboundPolicy, sealer: &dyn Sealer,
) -> Result<MemoryStore, ConfigError> {
    let path = var("SEED_PATH")
        .ok_or_else(|| ConfigError("SEED_PATH is not set for STORE_BACKEND=memory".into()))?;
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ConfigError(format!("cannot read SEED_PATH {path}: {e}")))?;
    let plan = crate::seed::load(&text, SystemClock.now(), outbound)
        .map_err(|e| ConfigError(format!("invalid seed: {e}")))?;
    let store = MemoryStore::new();
    crate::seed::provision(&store, sealer, plan)
        .await
        .map_err(|e| ConfigError(format!("seed not loaded: {e}")))?;
    Ok(store)
}

/// JSON logs (one object per line, CloudWatch-friendly), filtered by `RUST_LOG` (default `info`).
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_current_span(true)
        .without_time()
        .try_init();
}
