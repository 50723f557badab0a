//! Handler of the webhooks function (BEHAVIOR 13): the subscription routes
//! (`/webhooks[/{webhookId}]`, `POST /webhooks/{webhookId}/rotate-secret`, the delivery log
//! `GET /webhooks/{webhookId}/deliveries` and its manual retry) and the batches of the webhook
//! delivery queue, each message one attempt of one delivery ([`shared::webhooks::WebhookSender`]
//! run by the due-work worker, [`shared::due`]). Thin: authenticate, scope, parse, call
//! [`shared::webhooks::WebhookService`].
//!
//! The queue handler answers with a partial batch response (`batchItemFailures`): a message
//! whose attempt could not store its outcome is reported failed and comes back; an attempt whose
//! receiver failed is a stored outcome (its retry is a new delayed message), not a failure.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use axum::extract::{FromRef, RawQuery, State};
use axum::http::{Method, StatusCode};
use lambda_runtime::LambdaEvent;
use serde_json::Value;
use shared::api::lambda::QueueConsumer;
use shared::api::openapi::responses::*;
use shared::api::openapi::{Description, PageParams, TAG_WEBHOOKS};
use shared::api::Json;
use shared::api::{
    allow_of, empty_id_route, missing_path_parameter, with_own_405, ApiError, Authenticated, Body,
    ListQuery, PathId, PathIds,
};
use shared::auth::{Scope, TokenVerifier};
use shared::deps::{ConfigError, Deps};
use shared::described_routes;
use shared::due::{DueMessage, DueWorker};
use shared::outbound::OutboundClient;
use shared::page::cursor::CursorKeySource;
use shared::page::ListView;
use shared::types::ids::WebhookId;
use shared::webhooks::sender::{DELIVERY_TIMEOUT, MAX_ANSWER_BYTES};
use shared::webhooks::view::{DeliveryView, WebhookView};
use shared::webhooks::{DeliveryCloser, WebhookSender, WebhookService};
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;

/// What the handler needs, built once per cold start.
#[derive(Clone, FromRef)]
pub struct WebhooksState {
    /// The subscription operations.
    pub webhooks: Arc<WebhookService>,
    /// Bearer-token verification.
    pub verifier: Arc<TokenVerifier>,
    /// Signs and opens the lists' `after` cursors (BEHAVIOR 11).
    pub cursors: Arc<CursorKeySource>,
}

impl WebhooksState {
    /// The state over `deps`, with the delivery job ([`WebhookSender`]: the outbound guard of
    /// `deps`, a 15 s timeout, 1 KiB of answer read) registered on the due-work worker of
    /// `deps`, so deliveries handed on by any function of this process run here.
    ///
    /// Errors: no token verifier (`JWT_PUBLIC_JWKS`), no cursor key, no sealer
    /// (`SEALING_KMS_KEY_ID` in Lambda), or the HTTP client cannot be built.
    pub fn new(deps: &Deps) -> Result<Self, ConfigError> {
        register_sender(deps)?;
        Ok(Self {
            webhooks: Arc::new(WebhookService::new(
                deps.store.clone(),
                deps.clock.clone(),
                deps.sealer()?,
                deps.outbound,
                deps.due.clone(),
            )),
            verifier: deps.verifier()?,
            cursors: deps.cursors()?,
        })
    }
}

/// Registers the webhook jobs on the due-work worker of `deps`: deliveries
/// ([`WebhookSender`]) and the closing of a disabled subscription's open deliveries
/// ([`DeliveryCloser`]).
///
/// Errors: no sealer, or the HTTP client cannot be built.
pub fn register_sender(deps: &Deps) -> Result<(), ConfigError> {
    let http = OutboundClient::new(deps.outbound, DELIVERY_TIMEOUT, MAX_ANSWER_BYTES)
        .map_err(|e| ConfigError(e.to_string()))?;
    deps.due.register(WebhookSender::new(
        deps.store.clone(),
        deps.clock.clone(),
        http,
        deps.sealer()?,
        deps.webhook_retry_delays.clone(),
    ));
    deps.due.register(DeliveryCloser::new(
        deps.store.clone(),
        &deps.webhook_retry_delays,
    ));
    Ok(())
}

/// The routes of the function, stateful (for the local server to merge).
///
/// With [`Description::Full`] the routes carry their OpenAPI description (what `openapi.json` is
/// generated from); with [`Description::RoutesOnly`] the same routes without it (the local
/// server, which serves the committed document).
pub fn api(state: WebhooksState, description: Description) -> OpenApiRouter {
    routes(state, description)
}

const ITEM_METHODS: &[(Method, Scope)] = &[
    (Method::GET, Scope::Read),
    (Method::PATCH, Scope::Update),
    (Method::DELETE, Scope::Delete),
];

/// The function's routes, with their OpenAPI description or without it ([`Description`]).
fn routes(state: WebhooksState, description: Description) -> OpenApiRouter {
    let item = with_own_405(described_routes!(description; get, update, delete));
    // The empty-id path allows what its item path does.
    let item_allow = allow_of(&item.1);
    OpenApiRouter::new()
        .routes(with_own_405(described_routes!(description; list, create)))
        .routes(item)
        .routes(with_own_405(described_routes!(description; rotate_secret)))
        .routes(with_own_405(described_routes!(description; deliveries)))
        .routes(with_own_405(described_routes!(description; retry)))
        .route(
            "/webhooks/",
            empty_id_route(item_allow, ITEM_METHODS, "webhookId"),
        )
        .with_state(state)
}

/// The function's application: its routes, finished ([`shared::api::finish`]).
///
/// Errors: as [`WebhooksState::new`].
pub fn app(deps: &Deps) -> Result<axum::Router, ConfigError> {
    let (router, _) = routes(WebhooksState::new(deps)?, Description::RoutesOnly).split_for_parts();
    Ok(shared::api::finish(router))
}

type Answer<T> = Result<Json<T>, ApiError>;

/// A path's subscription id: `None` (404 `Webhook not found`) when it is not a UUID.
fn webhook_id(text: &str) -> Option<WebhookId> {
    uuid::Uuid::parse_str(text).ok().map(WebhookId::from)
}

/// Lists the account's subscriptions, oldest first.
#[utoipa::path(
    get,
    path = "/webhooks",
    operation_id = "listWebhooks",
    tag = TAG_WEBHOOKS,
    summary = "List webhook subscriptions",
    description = "The account's subscriptions by creation time then id (oldest first), without their secrets. Offset or `after` cursor, as every list.",
    params(PageParams),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of subscriptions", body = ListView<WebhookView>),
        BadRequest, Unauthorized, Forbidden, InternalError
    )
)]
pub async fn list(
    Authenticated(p): Authenticated, State(s): State<WebhooksState>, RawQuery(q): RawQuery,
) -> Answer<ListView<WebhookView>> {
    p.require(Scope::Read)?;
    let query = ListQuery::parse(q.as_deref())?;
    Ok(Json(
        s.webhooks
            .list(p.account_id, &query.list, &*s.cursors.key().await?)
            .await?,
    ))
}

/// Creates a subscription.
#[utoipa::path(
    post,
    path = "/webhooks",
    operation_id = "createWebhook",
    tag = TAG_WEBHOOKS,
    summary = "Subscribe a URL to routing events",
    description = "A new enabled subscription of `url` (absolute `https`, at most 2,048 characters, no user info, not an IP literal in a loopback, private, link-local or unspecified range) to `events` (a non-empty array of `assignment.created`, `dispatch.unassigned`, `crm_sync.failed`; duplicates removed), with an optional `description`. The answer holds the signing `secret` (`whsec_` + base64 of 32 bytes): it is shown here and by the rotation only. At most 20 subscriptions per account (400 beyond).",
    request_body(content = shared::api::openapi::webhooks::WebhookCreate, content_type = "application/json"),
    security(("oauth2" = ["service-api/create"]), ("bearer" = [])),
    responses(
        (status = 201, description = "The subscription, with its secret", body = WebhookView),
        BadRequest, Unauthorized, Forbidden, PayloadTooLarge, InternalError
    )
)]
pub async fn create(
    Authenticated(p): Authenticated, State(s): State<WebhooksState>, body: Body,
) -> Result<(StatusCode, Json<WebhookView>), ApiError> {
    p.require(Scope::Create)?;
    let body = body.json_object()?;
    let view = s.webhooks.create(p.actor(), &body).await?;
    tracing::info!(webhook_id = %view.id, "webhook subscription created");
    Ok((StatusCode::CREATED, Json(view)))
}

/// Reads a subscription.
#[utoipa::path(
    get,
    path = "/webhooks/{webhookId}",
    operation_id = "getWebhook",
    tag = TAG_WEBHOOKS,
    summary = "Read a webhook subscription",
    description = "The subscription, without its secret. An unknown id (or one that is not a UUID) is 404 `Webhook not found`.",
    params(("webhookId" = uuid::Uuid, Path, description = "The subscription's id")),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The subscription", body = WebhookView),
        Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn get(
    Authenticated(p): Authenticated, State(s): State<WebhooksState>, PathId(id): PathId,
) -> Answer<WebhookView> {
    p.require(Scope::Read)?;
    Ok(Json(s.webhooks.get(p.account_id, webhook_id(&id)).await?))
}

/// Changes a subscription.
#[utoipa::path(
    patch,
    path = "/webhooks/{webhookId}",
    operation_id = "updateWebhook",
    tag = TAG_WEBHOOKS,
    summary = "Change a webhook subscription",
    description = "Changes the keys sent among `url`, `events`, `description` and `enabled` (at least one; others are 400 naming the key). Enabling clears `disabled_reason` and sends nothing from the disabled time; disabling ends the open deliveries `failed` (`Subscription disabled`).",
    params(("webhookId" = uuid::Uuid, Path, description = "The subscription's id")),
    request_body(content = shared::api::openapi::webhooks::WebhookPatch, content_type = "application/json"),
    security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The changed subscription", body = WebhookView),
        BadRequest, Unauthorized, Forbidden, NotFound, PayloadTooLarge, InternalError
    )
)]
pub async fn update(
    Authenticated(p): Authenticated, State(s): State<WebhooksState>, PathId(id): PathId, body: Body,
) -> Answer<WebhookView> {
    p.require(Scope::Update)?;
    let id = webhook_id(&id);
    // An unknown subscription is 404 before the body is looked at.
    s.webhooks.find(p.account_id, id).await?;
    let body = body.json_object()?;
    Ok(Json(s.webhooks.patch(p.actor(), id, &body).await?))
}

/// Deletes a subscription.
#[utoipa::path(
    delete,
    path = "/webhooks/{webhookId}",
    operation_id = "deleteWebhook",
    tag = TAG_WEBHOOKS,
    summary = "Delete a webhook subscription",
    description = "Deletes the subscription; its pending and retrying deliveries are dropped (none is sent after the answer).",
    params(("webhookId" = uuid::Uuid, Path, description = "The subscription's id")),
    security(("oauth2" = ["service-api/delete"]), ("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn delete(
    Authenticated(p): Authenticated, State(s): State<WebhooksState>, PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    p.require(Scope::Delete)?;
    s.webhooks.delete(p.actor(), webhook_id(&id)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Rotates a subscription's signing secret.
#[utoipa::path(
    post,
    path = "/webhooks/{webhookId}/rotate-secret",
    operation_id = "rotateWebhookSecret",
    tag = TAG_WEBHOOKS,
    summary = "Rotate a webhook subscription's signing secret",
    description = "A new `secret`, shown in this answer only; the previous one keeps signing beside it for 24 hours (`webhook-signature` then carries both signatures, space-separated).",
    params(("webhookId" = uuid::Uuid, Path, description = "The subscription's id")),
    security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The subscription, with its new secret", body = WebhookView),
        Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn rotate_secret(
    Authenticated(p): Authenticated, State(s): State<WebhooksState>, PathId(id): PathId,
) -> Answer<WebhookView> {
    p.require(Scope::Update)?;
    Ok(Json(
        s.webhooks.rotate_secret(p.actor(), webhook_id(&id)).await?,
    ))
}

/// Lists a subscription's deliveries, newest first.
#[utoipa::path(
    get,
    path = "/webhooks/{webhookId}/deliveries",
    operation_id = "listWebhookDeliveries",
    tag = TAG_WEBHOOKS,
    summary = "List a webhook subscription's deliveries",
    description = "The deliveries of the last 30 days, newest first: `id` (the `webhook-id` header), `event_type`, `status` (`pending`, `delivered`, `retrying`, `failed`), `attempts`, `last_status_code`, `last_error`, `created_at`, `delivered_at`. Offset or `after` cursor, as every list.",
    params(("webhookId" = uuid::Uuid, Path, description = "The subscription's id"), PageParams),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of deliveries", body = ListView<DeliveryView>),
        BadRequest, Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn deliveries(
    Authenticated(p): Authenticated, State(s): State<WebhooksState>, PathId(id): PathId,
    RawQuery(q): RawQuery,
) -> Answer<ListView<DeliveryView>> {
    p.require(Scope::Read)?;
    let id = webhook_id(&id);
    s.webhooks.find(p.account_id, id).await?;
    let query = ListQuery::parse(q.as_deref())?;
    Ok(Json(
        s.webhooks
            .deliveries(p.account_id, id, &query.list, &*s.cursors.key().await?)
            .await?,
    ))
}

/// Sends a delivery once more, now.
#[utoipa::path(
    post,
    path = "/webhooks/{webhookId}/deliveries/{deliveryId}/retry",
    operation_id = "retryWebhookDelivery",
    tag = TAG_WEBHOOKS,
    summary = "Send a webhook delivery again",
    description = "One more attempt of the delivery now, with the same `webhook-id`, whatever its status (a delivered event may be sent again). Answers 202 with the delivery as it stands; the attempt's outcome appears in the delivery log. An unknown delivery is 404 `Delivery not found`; on a disabled subscription the attempt ends `failed` (`Subscription disabled`). A delivery changed by another request at the same instant is 409.",
    params(
        ("webhookId" = uuid::Uuid, Path, description = "The subscription's id"),
        ("deliveryId" = String, Path, description = "The delivery's id (`msg_...`)")
    ),
    security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
    responses(
        (status = 202, description = "The attempt is under way", body = DeliveryView),
        Unauthorized, Forbidden, NotFound, Conflict, InternalError
    )
)]
pub async fn retry(
    Authenticated(p): Authenticated, State(s): State<WebhooksState>, PathIds(ids): PathIds,
) -> Result<(StatusCode, Json<DeliveryView>), ApiError> {
    p.require(Scope::Update)?;
    let webhook = ids.first().map(String::as_str).unwrap_or_default();
    let delivery = ids.get(1).map(String::as_str).unwrap_or_default();
    if delivery.is_empty() {
        return Err(missing_path_parameter("deliveryId").into());
    }
    let view = s
        .webhooks
        .retry(p.account_id, webhook_id(webhook), delivery)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}

/// Processes one SQS batch of the webhook delivery queue and reports the messages to retry
/// ([`shared::api::lambda::sqs_batch`]).
pub async fn handle_sqs_batch(due: &Arc<DueWorker>, event: SqsEvent) -> SqsBatchResponse {
    shared::api::lambda::sqs_batch(&DeliveryQueue(due), event).await
}

/// The webhooks function as a queue consumer: due work (deliveries, closings) from the webhook
/// delivery queue; no schedule.
struct DeliveryQueue<'a>(&'a Arc<DueWorker>);

impl QueueConsumer for DeliveryQueue<'_> {
    async fn message(&self, message_id: &str, body: &str) -> Result<(), ()> {
        match DueMessage::from_body(body) {
            Some(item) => self.0.receive_message(message_id, item).await,
            None => {
                tracing::warn!(
                    message_id,
                    outcome = "invalid_body",
                    "webhook queue message is not due work"
                );
                Err(())
            }
        }
    }
}

/// The Lambda handler of the webhooks binary: an SQS batch goes to [`handle_sqs_batch`],
/// anything else is an API Gateway (HTTP API, payload 2.0) request served by the app.
#[derive(Clone)]
pub struct LambdaHandler {
    due: Arc<DueWorker>,
    app: axum::Router,
}

impl LambdaHandler {
    /// The handler over `deps`.
    ///
    /// Errors: as [`WebhooksState::new`].
    pub fn new(deps: &Deps) -> Result<Self, ConfigError> {
        let state = WebhooksState::new(deps)?;
        let (router, _) = routes(state, Description::RoutesOnly).split_for_parts();
        Ok(Self {
            due: deps.due.clone(),
            app: shared::api::finish(router),
        })
    }

    /// Handles one raw event and returns the raw answer ([`shared::api::lambda::handle_event`]).
    ///
    /// Errors: an event that is neither an SQS batch nor an API Gateway request.
    pub async fn handle(&self, event: LambdaEvent<Value>) -> Result<Value, lambda_runtime::Error> {
        shared::api::lambda::handle_event(&DeliveryQueue(&self.due), &self.app, event).await
    }
}
