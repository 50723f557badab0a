//! Handler of the dispatch function: `POST /dispatch/router` (spec "Dispatch"),
//! `POST /dispatch/router/explain` (BEHAVIOR 9: the same evaluation, written nowhere) and
//! batches from the SQS dispatch queue (spec "Events"; BEHAVIOR 6, "Queue path"). All run
//! [`shared::dispatch::DispatchEngine`]. The queue also carries the engine's own due work
//! (CRM sync attempts, BEHAVIOR 7; SLA checks, BEHAVIOR 14; [`shared::due`]), told from dispatch requests by
//! `kind: "due_work"`, and an EventBridge schedule invokes the function every minute to sweep
//! due work whose hand-off was lost ([`shared::due::DueWorker::sweep`]).
//!
//! The queue handler answers with a partial batch response (`batchItemFailures`, Lambda's
//! `ReportBatchItemFailures`): a message whose processing hit an error (store failure, lost
//! races past the deadline) or whose body is not valid JSON with both ids is reported failed, so
//! SQS redelivers it and, after the queue's `maxReceiveCount`, moves it to the dead-letter
//! queue. Every non-error outcome counts as processed. The SQS message id is the idempotency
//! key, so a redelivered message never assigns twice.
//!
//! One Lambda binary serves the three event sources: [`LambdaHandler`] tells an SQS batch and a
//! scheduled event from an API Gateway request and routes them.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use axum::extract::{FromRef, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use lambda_runtime::LambdaEvent;
use serde_json::Value;
use shared::api::idempotency::{self, IdempotentRequests};
use shared::api::lambda::{QueueConsumer, ScheduleRun};
use shared::api::openapi::responses::*;
use shared::api::openapi::Description;
use shared::api::openapi::{IdempotencyParams, TAG_DISPATCH};
use shared::api::Json;
use shared::api::{with_own_405, ApiError, Authenticated, Body};
use shared::auth::{Scope, TokenVerifier};
use shared::crm::{CrmSettings, CrmSync, LazyHttpCrm};
use shared::deps::{ConfigError, Deps};
use shared::described_routes;
use shared::dispatch::request::ExplainRequest;
use shared::dispatch::{
    AccountContext, DispatchAnswer, DispatchEngine, DispatchRequest, ExplainAnswer,
};
use shared::due::{DueMessage, SweepReport};
use shared::error::DomainError;
use shared::error::ErrorChain;
use shared::model::MessageDeduplicationId;
use shared::sla::SlaChecks;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;

/// What the handler needs, built once per cold start.
#[derive(Clone, FromRef)]
pub struct DispatchState {
    /// The engine.
    pub engine: Arc<DispatchEngine>,
    /// Bearer-token verification.
    pub verifier: Arc<TokenVerifier>,
    /// `Idempotency-Key` handling (BEHAVIOR 10).
    pub idempotency: Arc<IdempotentRequests>,
}

impl DispatchState {
    /// The state over `deps`: the engine with its CRM sync (one CRM client, built at the
    /// first sync: a cold start builds no HTTP client, docs/performance.md) and its SLA checks
    /// (BEHAVIOR 14), both registered as jobs of the due-work worker of `deps` (queue or
    /// timers).
    ///
    /// Errors: no token verifier configured (`JWT_PUBLIC_JWKS`), no sealer
    /// (`SEALING_KMS_KEY_ID` in Lambda).
    pub fn new(deps: &Deps) -> Result<Self, ConfigError> {
        let pace: Arc<dyn shared::store::PaceStore> = deps.store.clone();
        let client = Arc::new(
            LazyHttpCrm::new(deps.outbound, pace).with_settings(CrmSettings {
                limit_wait: deps.crm_limit_wait.0,
                ..CrmSettings::default()
            }),
        );
        let sealer = deps.sealer()?;
        let crm = CrmSync::new(
            client,
            deps.store.clone(),
            deps.clock.clone(),
            deps.crm_retry_delays.clone(),
            sealer.clone(),
        );
        let engine = Arc::new(
            DispatchEngine::new(
                deps.store.clone(),
                deps.clock.clone(),
                deps.catalogues.clone(),
            )
            .with_due(deps.due.clone())
            .with_sealer(sealer)
            .with_crm(crm)
            .with_history_retention(deps.history_retention)
            .with_sla_minute(deps.sla_minute),
        );
        SlaChecks::register(&engine);
        Ok(Self {
            engine,
            verifier: deps.verifier()?,
            idempotency: Arc::new(IdempotentRequests::new(
                deps.store.clone(),
                deps.clock.clone(),
            )),
        })
    }
}

/// The routes of the function, stateful (for the local server to merge).
///
/// With [`Description::Full`] the routes carry their OpenAPI description (what `openapi.json` is
/// generated from); with [`Description::RoutesOnly`] the same routes without it (the local
/// server, which serves the committed document).
pub fn api(state: DispatchState, description: Description) -> OpenApiRouter {
    routes(state, description)
}

/// The function's routes, with their OpenAPI description or without it ([`Description`]: the
/// Lambda function never serves it and saves building it at every cold start).
fn routes(state: DispatchState, description: Description) -> OpenApiRouter {
    OpenApiRouter::new()
        .routes(with_own_405(described_routes!(description; dispatch)))
        .routes(with_own_405(described_routes!(description; explain)))
        .with_state(state)
}

/// The function's application: its routes, finished ([`shared::api::finish`]).
///
/// Errors: no token verifier configured.
pub fn app(deps: &Deps) -> Result<axum::Router, ConfigError> {
    Ok(app_of(DispatchState::new(deps)?))
}

/// The function's application over an existing `state` (the local server shares one engine,
/// and so one registration of its due-work jobs, between its routes).
pub fn app_of(state: DispatchState) -> axum::Router {
    let (router, _) = routes(state, Description::RoutesOnly).split_for_parts();
    shared::api::finish(router)
}

/// Runs a router for one record.
#[utoipa::path(
    post,
    path = "/dispatch/router",
    operation_id = "dispatchRouter",
    tag = TAG_DISPATCH,
    summary = "Dispatch a record through a router",
    description = "Evaluates the router's trigger, the members' availability and capacity and the distribution model, and assigns the record's owner when the rules match (one atomic write; on a router with an SLA a rotation or backup assignment also starts an SLA check, BEHAVIOR 14). A run that stops without assigning is still 200, with only `message`: `Trigger did not match`, `Router not found`, `Object not found`, `The router is unpublished`, `The router has no settings`, `Account not found`, `Account is not active`, `Assignment limit reached`, `The router can not overwrite`, `There are no users available and the backup user is disabled`. A body without both ids is 400 `Invalid event: require router_id and object_id`.",
    params(IdempotencyParams),
    request_body(content = DispatchRequest, content_type = "application/json"),
    security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The outcome: an assignment, or a message (or, with `Idempotent-Replayed: true`, the answer first given to this `Idempotency-Key`)", body = DispatchAnswer,
            headers(("Idempotent-Replayed" = String, description = "`true` when this is the stored answer of an earlier request with the same `Idempotency-Key`"))),
        BadRequest, Unauthorized, Forbidden, KeyInFlight, PayloadTooLarge, KeyReused, InternalError
    )
)]
pub async fn dispatch(
    Authenticated(p): Authenticated, State(s): State<DispatchState>, headers: HeaderMap, body: Body,
) -> Result<Response, ApiError> {
    p.require(Scope::Update)?;
    let (engine, body) = (&s.engine, &body);
    s.idempotency
        .run(
            p.account_id,
            "POST /dispatch/router",
            &headers,
            body.bytes(),
            move |claim| async move {
                let request = DispatchRequest::parse(body.bytes())?;
                let context = AccountContext::Token(p.account_id);
                let (outcome, answer_stored) = match &claim {
                    Some(claim) => {
                        let done = engine.dispatch_completing(context, &request, claim).await?;
                        (done.outcome, done.answer_stored)
                    }
                    None => (engine.dispatch(context, &request, None).await?, false),
                };
                tracing::info!(
                    router_id = %request.router_id,
                    object_id = %request.object_id,
                    outcome = outcome.label(),
                    "dispatch"
                );
                shared::telemetry::dispatch(outcome.label(), outcome.reason_label());
                Ok(idempotency::HandlerAnswer {
                    status: StatusCode::OK,
                    body: outcome.answer(),
                    // An assignment or a history entry stored the answer with itself (one write).
                    stored_with_effect: answer_stored,
                })
            },
        )
        .await
}

/// Explains what a dispatch would do now, and why (BEHAVIOR 9).
#[utoipa::path(
    post,
    path = "/dispatch/router/explain",
    operation_id = "explainDispatch",
    tag = TAG_DISPATCH,
    summary = "Explain a dispatch without running it (dry run)",
    description = "Runs the same evaluation as `POST /dispatch/router` at the current instant and writes nothing: no owner, rotation state, counters, monthly count, history entry or CRM call. The answer is what dispatch would answer now (`message`; for an assignment also `success`, `user`, `field_name` and `reason`), with `dry_run: true` and the `explanation`: the trigger read on the record (every condition with the record's value), the pool in pool order with each member's reasons (`office_status_off`, `out_of_office`, `holiday` (a holiday of the member's calendar or the router's, BEHAVIOR 17), `outside_working_hours`, `at_capacity`, `zero_weight`), the account match, and the router's SLA setting (`sla`, BEHAVIOR 14; explain starts no SLA check). When nothing changes in between, a dispatch right after assigns the member the explain named. Same body and same 400 as `POST /dispatch/router`, plus the optional key `revision`: `\"draft\"` or a revision number explains that configuration instead of the live one, whatever the router's publication state (an unpublished router's draft can be explained); the answer then adds `revision`. No such draft or revision: 404 `Draft not found` / `Revision not found`; any other value: 400 naming `revision`.",
    request_body(content = ExplainRequest, content_type = "application/json"),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "What dispatch would do now, and why", body = ExplainAnswer),
        BadRequest, Unauthorized, Forbidden, NotFound, PayloadTooLarge, InternalError
    )
)]
pub async fn explain(
    Authenticated(p): Authenticated, State(s): State<DispatchState>, body: Body,
) -> Result<Json<ExplainAnswer>, ApiError> {
    p.require(Scope::Read)?;
    let request = DispatchRequest::parse(body.bytes())?;
    let revision = shared::dispatch::request::explained_revision(body.bytes())?;
    let (preview, explanation) = s
        .engine
        .explain_revision(p.account_id, &request, revision)
        .await?;
    Ok(Json(
        ExplainAnswer::new(preview, explanation).with_revision(revision),
    ))
}

/// Processes one SQS batch of the dispatch queue in order and reports the messages to retry
/// ([`shared::api::lambda::sqs_batch`]).
pub async fn handle_sqs_batch(engine: &DispatchEngine, event: SqsEvent) -> SqsBatchResponse {
    shared::api::lambda::sqs_batch(&DispatchQueue(engine), event).await
}

/// The dispatch function as a queue consumer: dispatch requests and due work from the queue,
/// and the sweeper's schedule.
struct DispatchQueue<'a>(&'a DispatchEngine);

impl QueueConsumer for DispatchQueue<'_> {
    async fn message(&self, message_id: &str, body: &str) -> Result<(), ()> {
        // One deadline per message, as per HTTP request: every write of it stops retrying by
        // then (`shared::store::retry`).
        let deadline = tokio::time::Instant::now() + shared::store::REQUEST_DEADLINE;
        shared::store::within_request_deadline(deadline, process_message(self.0, message_id, body))
            .await
    }

    fn schedule(&self) -> Option<ScheduleRun<'_>> {
        Some(Box::pin(async {
            let report = handle_schedule(self.0).await?;
            Ok(serde_json::json!({"found": report.found, "handed_on": report.handed_on}))
        }))
    }
}

/// Processes one message; `Err(())` means "report it failed" (already logged).
async fn process_message(engine: &DispatchEngine, message_id: &str, body: &str) -> Result<(), ()> {
    if let Some(due) = DueMessage::from_body(body) {
        return engine.due().receive_message(message_id, due).await;
    }
    let Ok(request) = DispatchRequest::parse(body.as_bytes()) else {
        tracing::warn!(
            message_id,
            outcome = "invalid_body",
            "dispatch message rejected: {}",
            shared::dispatch::INVALID_EVENT
        );
        return Err(());
    };
    let deduplication = (!message_id.is_empty()).then(|| MessageDeduplicationId::new(message_id));
    match engine
        .dispatch(
            AccountContext::RouterOwner,
            &request,
            deduplication.as_ref(),
        )
        .await
    {
        Ok(outcome) => {
            tracing::info!(
                message_id,
                router_id = %request.router_id,
                object_id = %request.object_id,
                outcome = outcome.label(),
                "dispatch message processed"
            );
            shared::telemetry::dispatch(outcome.label(), outcome.reason_label());
            Ok(())
        }
        Err(error) => {
            shared::telemetry::dispatch_error();
            tracing::error!(
                message_id,
                router_id = %request.router_id,
                object_id = %request.object_id,
                outcome = "error",
                error = %ErrorChain(&error),
                "dispatch message failed; it will be retried"
            );
            Err(())
        }
    }
}

/// Items one sweep round reads.
pub const SWEEP_BATCH: usize = 500;

/// How long a scheduled sweep keeps going (the function's timeout is 45 s).
pub const SWEEP_BUDGET: std::time::Duration = std::time::Duration::from_secs(30);

/// Handles the EventBridge schedule: sweeps due work whose resume time has passed and hands it
/// on again ([`shared::due::DueWorker::sweep_all`]).
///
/// Errors: the store failed to read the due-work index (the invocation fails; EventBridge
/// invokes again a minute later).
pub async fn handle_schedule(engine: &DispatchEngine) -> Result<SweepReport, DomainError> {
    let report = engine.due().sweep_all(SWEEP_BATCH, SWEEP_BUDGET).await?;
    tracing::info!(
        found = report.found,
        handed_on = report.handed_on,
        "scheduled sweep"
    );
    Ok(report)
}

pub use shared::api::lambda::is_schedule_event;

pub use shared::api::is_sqs_event;

/// The Lambda handler of the dispatch binary: an SQS batch goes to [`handle_sqs_batch`] (the
/// answer is the partial batch response), an EventBridge scheduled event to
/// [`handle_schedule`], anything else is an API Gateway (HTTP API, payload 2.0) request served
/// by the app.
#[derive(Clone)]
pub struct LambdaHandler {
    engine: Arc<DispatchEngine>,
    app: axum::Router,
}

impl LambdaHandler {
    /// The handler over `deps`.
    ///
    /// Errors: no token verifier configured.
    pub fn new(deps: &Deps) -> Result<Self, ConfigError> {
        let state = DispatchState::new(deps)?;
        let engine = state.engine.clone();
        let (router, _) = routes(state, Description::RoutesOnly).split_for_parts();
        Ok(Self {
            engine,
            app: shared::api::finish(router),
        })
    }

    /// Handles one raw event and returns the raw answer ([`shared::api::lambda::handle_event`]).
    ///
    /// Errors: an event that is neither an SQS batch, a scheduled event nor an API Gateway
    /// request; a sweep that could not read the due-work index.
    pub async fn handle(&self, event: LambdaEvent<Value>) -> Result<Value, lambda_runtime::Error> {
        shared::api::lambda::handle_event(&DispatchQueue(&self.engine), &self.app, event).await
    }
}
