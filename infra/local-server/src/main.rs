//! `local-server`: the whole API behind one HTTP listener, for development and black-box tests.
//!
//! Every function's handler is mounted exactly as Lambda runs it, over the embedded store loaded
//! from a seed file (`--seed`, default: the demo seed committed in `infra/seed/demo.json`), or
//! with `--store dynamodb` over the DynamoDB table named by `TABLE_NAME` (endpoint, region and
//! credentials from the standard AWS environment; the table is created from `infra/table.json`
//! when missing and the seed provisioned insert-if-absent). Tokens are signed with
//! `--signing-key` (a P-256 PEM), or the fixed development key. Its metrics are served as
//! Prometheus text on `GET /metrics` ([`local_server::prometheus`]); its log holds no metrics and,
//! at the default level, nothing for a successful request.

use anyhow::Context;
use clap::Parser;
use local_server::{build_app_with, with_local_keys, AppConfig};
use shared::deps::{Deps, Process, StoreBackend};
use shared::store::dynamodb::{env, DynamoStore};
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;

/// mimalloc rather than glibc's allocator: a request allocates dozens of times, on worker threads
/// that free what another allocated. Counted with callgrind on `GET /contacts/{id}`, it takes the
/// server's instructions per request from 43,800 to 37,200 (`docs/performance.md`). The
/// Lambda functions keep glibc's: one request at a time per process, and a smaller binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Command line of the local server.
#[derive(Debug, Parser)]
#[command(
    name = "local-server",
    about = "Runs the account routing API locally on the embedded store"
)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:3000")]
    addr: SocketAddr,
    /// Seed file (docs/seed-format.md); default: the demo seed.
    #[arg(long)]
    seed: Option<PathBuf>,
    /// PEM file of the P-256 private key that signs tokens; default: the development key.
    #[arg(long)]
    signing_key: Option<PathBuf>,
    /// SQS queue to poll for dispatch messages, as Lambda's event source mapping would
    /// (endpoint, credentials and region from the standard AWS environment); due work waits
    /// on it too, as in Lambda.
    #[arg(long, env = "DISPATCH_QUEUE_URL")]
    queue_url: Option<String>,
    /// Where the data lives: `memory` (the embedded store) or `dynamodb` (the table named by
    /// `TABLE_NAME`).
    #[arg(long, env = StoreBackend::VARIABLE, default_value = "memory", value_parser = StoreBackend::parse)]
    store: StoreBackend,
    /// Seconds between two sweeps of due work whose hand-off was lost (a restart, a crash):
    /// CRM sync attempts and the like are resumed by the sweeper. At most one SLA minute
    /// (`SLA_MINUTE_SECONDS`) is used, so SLA checks run at most a minute late.
    #[arg(long, env = "SWEEP_INTERVAL_SECONDS", default_value_t = 5)]
    sweep_interval: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::util::SubscriberInitExt::try_init(local_server::log_subscriber(
        tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| local_server::DEFAULT_LOG_FILTER.into()),
        std::io::stdout,
        // Colours for a terminal only: a log written to a file or a pipe holds no escape codes.
        std::io::stdout().is_terminal(),
    ))
    .map_err(|e| anyhow::anyhow!("cannot install the log subscriber: {e}"))?;
    // Metrics go to `GET /metrics` (Prometheus text), never to the log.
    let metrics = local_server::prometheus::install()
        .map_err(|e| anyhow::anyhow!("cannot install the metrics recorder: {e}"))?;
    let args = Args::parse();
    let seed = match &args.seed {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read seed file {}", path.display()))?,
        None => local_server::DEMO_SEED.to_string(),
    };
    let signing_key = match &args.signing_key {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read signing key {}", path.display()))?,
        ),
        None => None,
    };
    let config = AppConfig {
        seed,
        signing_key_pem: signing_key,
    };
    // The same environment as the functions (`Deps::from_env_for`): retry delays, history
    // retention, the SLA minute, the due-work lease, cursor and sealing keys; outbound requests
    // may reach http and loopback hosts unless ALLOW_INSECURE_OUTBOUND=false.
    let process = Process::local_server(args.store, args.queue_url.clone());
    let deps = Deps::from_env_for(process)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let sla_minute = deps.sla_minute;
    if args.store == StoreBackend::Dynamodb {
        // Validate the seed before touching the table.
        shared::seed::load(&config.seed, chrono::Utc::now(), deps.outbound)
            .context("invalid seed file")?;
        let table = std::env::var("TABLE_NAME").unwrap_or_default();
        let sdk = deps
            .aws
            .clone()
            .context("the DynamoDB deps carry the AWS configuration")?;
        if DynamoStore::new(env::client(&sdk), &table)
            .create_table_if_missing()
            .await
            .with_context(|| format!("cannot create table {table}"))?
        {
            tracing::info!(table, "created table");
        }
    }
    let deps = with_local_keys(deps, config.signing_key_pem.as_deref())?;
    let app = build_app_with(config, deps).await?;
    let shutdown = shutdown_signal();
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    let addr = listener.local_addr()?;
    println!("account routing API listening on http://{addr}");
    println!("API reference: http://{addr}{}", local_server::DOCS_PATH);
    println!(
        "metrics (Prometheus text): http://{addr}{}",
        local_server::prometheus::PATH
    );
    if let Some(client) = &app.demo_client {
        println!("demo client id: {client}");
        if let Some(secret) = app.demo_secret.as_ref().filter(|_| addr.ip().is_loopback()) {
            println!(
                "get a token:\n  curl -s -X POST http://{addr}/oauth2/token -u '{client}:{secret}' \
                 -d grant_type=client_credentials -d 'scope=service-api/read service-api/create service-api/update service-api/delete'"
            );
        }
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let poller = match args.queue_url.clone() {
        Some(url) => {
            let mut deps = app.deps.clone();
            let client = aws_sdk_sqs::Client::new(&deps.aws().await);
            println!("polling dispatch queue {url}");
            Some(tokio::spawn(local_server::queue::poll(
                client,
                url,
                app.engine.clone(),
                stopped,
            )))
        }
        None => None,
    };
    let upkeep = tokio::spawn(local_server::prometheus::upkeep_periodically(
        metrics.clone(),
        stop.subscribe(),
    ));
    let sweeper = tokio::spawn(local_server::sweep_periodically(
        app.engine.due().clone(),
        local_server::sweep_interval(
            std::time::Duration::from_secs(args.sweep_interval.max(1)),
            sla_minute,
        ),
        stop.subscribe(),
    ));
    // The peer address reaches the handlers (`ConnectInfo`): the token endpoint counts failed
    // client authentications per source address (BEHAVIOR 1).
    axum::serve(
        listener,
        app.serving(addr)
            .merge(local_server::prometheus::router(metrics))
            .into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
    .context("server failed")?;
    let _ = stop.send(true);
    if let Some(poller) = poller {
        let _ = poller.await;
    }
    let _ = sweeper.await;
    let _ = upkeep.await;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on SIGINT or SIGTERM. The SIGTERM handler is registered when this is called (before
/// the address is printed), so a signal sent right after start-up still stops the server cleanly.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        #[cfg(unix)]
        let terminate = async move {
            match terminate {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let terminate = std::future::pending::<()>();
        tokio::select! {
            _ = ctrl_c => {},
            _ = terminate => {},
        }
    }
}
