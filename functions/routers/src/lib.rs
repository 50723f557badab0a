//! Handler of the routers function: `GET /routers`, `GET /routers/{routerId}` (spec "Routers"),
//! a router's routing history and fairness stats (BEHAVIOR 8):
//! `GET /routers/{routerId}/dispatches`, `GET /routers/{routerId}/stats`, and router management
//! (BEHAVIOR 15): `POST /routers`, `DELETE /routers/{routerId}`, `GET|PUT|DELETE
//! /routers/{routerId}/draft`, `POST /routers/{routerId}/publish` and `/unpublish`, `GET
//! /routers/{routerId}/revisions[/{revision}]`, `POST
//! /routers/{routerId}/revisions/{revision}/restore`, and the what-if replay (BEHAVIOR 16):
//! `POST /routers/{routerId}/simulate`; and the audit trail of BEHAVIOR 18: one entry with the
//! explanation of its run, `GET /routers/{routerId}/dispatches/{entryId}`, and the change log,
//! `GET /audit-events`, `GET /audit-events/{id}`.
//! Thin: authenticate, scope, parse, call [`shared::routers::RouterService`],
//! [`shared::routers::RouterAdmin`], [`shared::history::HistoryService`],
//! [`shared::dispatch::Replayer`] or [`shared::audit::AuditService`].
//!
//! The change log lives here: it is read by the same routing admins, with the same
//! permissions (queries of the table and of GSI1) as the routers' lists.

use axum::extract::{FromRef, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use shared::api::idempotency::{self, IdempotentRequests};
use shared::api::openapi::responses::*;
use shared::api::openapi::routers::{IfMatchParams, RouterCreate, RouterDraftBody};
use shared::api::openapi::Description;
use shared::api::openapi::{
    ArchivedParam, AuditParams, IdempotencyParams, PageParams, StatsParams, TAG_AUDIT, TAG_HISTORY,
    TAG_ROUTERS,
};
use shared::api::Json;
use shared::api::{
    empty_id_route, with_405, ApiError, Authenticated, Body, ListQuery, PathId, PathIds,
};
use shared::audit::{AuditEventView, AuditService};
use shared::auth::{Scope, TokenVerifier};
use shared::clock::Clock;
use shared::deps::{ConfigError, Deps};
use shared::described_routes;
use shared::dispatch::replay::SimulateBody;
use shared::dispatch::{Replayer, Simulation};
use shared::error::DomainError;
use shared::history::{DispatchEntryView, ExplainedEntryView, HistoryService, RouterStats};
use shared::page::cursor::CursorKeySource;
use shared::page::ListView;
use shared::routers::{DraftView, RevisionView, RouterAdmin, Tagged};
use shared::routers::{RouterService, RouterView};
use shared::types::etag::{ETag, IfMatch};
use shared::types::RouterId;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;

/// What the handler needs, built once per cold start.
#[derive(Clone, FromRef)]
pub struct RoutersState {
    /// The router read operations.
    pub routers: Arc<RouterService>,
    /// Bearer-token verification.
    pub verifier: Arc<TokenVerifier>,
    /// Signs and opens the lists' `after` cursors (BEHAVIOR 11).
    pub cursors: Arc<CursorKeySource>,
    /// The routing history and stats (BEHAVIOR 8).
    pub history: Arc<HistoryService>,
    /// The current time (the stats' default window).
    pub clock: Arc<dyn Clock>,
    /// Router management (BEHAVIOR 15).
    pub admin: Arc<RouterAdmin>,
    /// `Idempotency-Key` handling (BEHAVIOR 10) of create, publish, unpublish and restore.
    pub idempotency: Arc<IdempotentRequests>,
    /// The what-if replay (BEHAVIOR 16).
    pub replayer: Arc<Replayer>,
    /// The change log (BEHAVIOR 18).
    pub audit: Arc<AuditService>,
}

impl RoutersState {
    /// The state over `deps`.
    ///
    /// Errors: no token verifier configured (`JWT_PUBLIC_JWKS`), no cursor key (`CURSOR_SECRET`).
    pub fn new(deps: &Deps) -> Result<Self, ConfigError> {
        Ok(Self {
            routers: Arc::new(RouterService::new(deps.store.clone())),
            verifier: deps.verifier()?,
            cursors: deps.cursors()?,
            history: Arc::new(HistoryService::new(deps.store.clone(), deps.clock.clone())),
            clock: deps.clock.clone(),
            admin: Arc::new(RouterAdmin::new(
                deps.store.clone(),
                deps.clock.clone(),
                deps.catalogues.clone(),
            )),
            idempotency: Arc::new(IdempotentRequests::new(
                deps.store.clone(),
                deps.clock.clone(),
            )),
            replayer: Arc::new(Replayer::new(
                deps.store.clone(),
                deps.clock.clone(),
                deps.catalogues.clone(),
            )),
            audit: Arc::new(AuditService::new(deps.store.clone(), deps.clock.clone())),
        })
    }
}

const ITEM_METHODS: &[(Method, Scope)] =
    &[(Method::GET, Scope::Read), (Method::DELETE, Scope::Delete)];

const AUDIT_METHODS: &[(Method, Scope)] = &[(Method::GET, Scope::Read)];

/// The routes of the function, stateful (for the local server to merge).
///
/// With [`Description::Full`] the routes carry their OpenAPI description (what `openapi.json` is
/// generated from); with [`Description::RoutesOnly`] the same routes without it (the local
/// server, which serves the committed document).
pub fn api(state: RoutersState, description: Description) -> OpenApiRouter {
    routes(state, description)
}

/// The function's routes, with their OpenAPI description or without it ([`Description`]: the
/// Lambda function never serves it and saves building it at every cold start).
fn routes(state: RoutersState, description: Description) -> OpenApiRouter {
    let (schemas, paths, methods) = described_routes!(description; list, create);
    let (schemas_item, paths_item, methods_item) = described_routes!(description; get, archive);
    let (schemas_draft, paths_draft, methods_draft) =
        described_routes!(description; get_draft, put_draft, delete_draft);
    let (schemas_publish, paths_publish, methods_publish) = described_routes!(description; publish);
    let (schemas_unpublish, paths_unpublish, methods_unpublish) =
        described_routes!(description; unpublish);
    let (schemas_revisions, paths_revisions, methods_revisions) =
        described_routes!(description; revisions);
    let (schemas_revision, paths_revision, methods_revision) =
        described_routes!(description; revision);
    let (schemas_restore, paths_restore, methods_restore) = described_routes!(description; restore);
    let (schemas_history, paths_history, methods_history) =
        described_routes!(description; dispatches);
    let (schemas_stats, paths_stats, methods_stats) = described_routes!(description; stats);
    let (schemas_simulate, paths_simulate, methods_simulate) =
        described_routes!(description; simulate);
    let (schemas_entry, paths_entry, methods_entry) = described_routes!(description; dispatch);
    let (schemas_audit, paths_audit, methods_audit) = described_routes!(description; audit_events);
    let (schemas_event, paths_event, methods_event) = described_routes!(description; audit_event);
    OpenApiRouter::new()
        .routes((schemas, paths, with_405(methods, "GET, POST")))
        .routes((
            schemas_item,
            paths_item,
            with_405(methods_item, "GET, DELETE"),
        ))
        .routes((
            schemas_draft,
            paths_draft,
            with_405(methods_draft, "GET, PUT, DELETE"),
        ))
        .routes((
            schemas_publish,
            paths_publish,
            with_405(methods_publish, "POST"),
        ))
        .routes((
            schemas_unpublish,
            paths_unpublish,
            with_405(methods_unpublish, "POST"),
        ))
        .routes((
            schemas_revisions,
            paths_revisions,
            with_405(methods_revisions, "GET"),
        ))
        .routes((
            schemas_revision,
            paths_revision,
            with_405(methods_revision, "GET"),
        ))
        .routes((
            schemas_restore,
            paths_restore,
            with_405(methods_restore, "POST"),
        ))
        .routes((
            schemas_history,
            paths_history,
            with_405(methods_history, "GET"),
        ))
        .routes((schemas_stats, paths_stats, with_405(methods_stats, "GET")))
        .routes((
            schemas_simulate,
            paths_simulate,
            with_405(methods_simulate, "POST"),
        ))
        .routes((schemas_entry, paths_entry, with_405(methods_entry, "GET")))
        .routes((schemas_audit, paths_audit, with_405(methods_audit, "GET")))
        .routes((schemas_event, paths_event, with_405(methods_event, "GET")))
        .route(
            "/routers/",
            empty_id_route("GET, DELETE", ITEM_METHODS, "routerId"),
        )
        .route("/audit-events/", empty_id_route("GET", AUDIT_METHODS, "id"))
        .with_state(state)
}

/// The function's application: its routes, finished ([`shared::api::finish`]).
///
/// Errors: no token verifier configured.
pub fn app(deps: &Deps) -> Result<axum::Router, ConfigError> {
    let (router, _) = routes(RoutersState::new(deps)?, Description::RoutesOnly).split_for_parts();
    Ok(shared::api::finish(router))
}

type Answer<T> = Result<Json<T>, ApiError>;

/// Lists the account's routers.
#[utoipa::path(
    get,
    path = "/routers",
    operation_id = "listRouters",
    tag = TAG_ROUTERS,
    summary = "List routers",
    description = "The account's routers by creation time, active ones unless `archived=true`.",
    params(ArchivedParam, PageParams),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of routers", body = ListView<RouterView>),
        BadRequest, Unauthorized, Forbidden, InternalError
    )
)]
pub async fn list(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, RawQuery(q): RawQuery,
) -> Answer<ListView<RouterView>> {
    p.require(Scope::Read)?;
    let query = ListQuery::parse(q.as_deref())?;
    Ok(Json(
        s.routers
            .list(p.account_id, &query.list, &*s.cursors.key().await?)
            .await?,
    ))
}

/// Reads a router.
#[utoipa::path(
    get,
    path = "/routers/{routerId}",
    operation_id = "getRouter",
    tag = TAG_ROUTERS,
    summary = "Read a router",
    description = "The router, archived or not. Weights and rotation state are internal and never shown.",
    params(("routerId" = uuid::Uuid, Path, description = "The router's id")),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The router", body = RouterView),
        BadRequest, Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn get(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathId(id): PathId,
) -> Answer<RouterView> {
    p.require(Scope::Read)?;
    Ok(Json(
        s.routers.get(p.account_id, RouterId::parse(&id)?).await?,
    ))
}

/// Lists a router's routing history, newest first.
#[utoipa::path(
    get,
    path = "/routers/{routerId}/dispatches",
    operation_id = "listRouterDispatches",
    tag = TAG_HISTORY,
    summary = "List a router's routing history",
    description = "Every dispatch of the router (archived routers too), newest first (BEHAVIOR 8): assignments with their member, reason, previous owner and CRM sync state, and the outcomes from `The router is unpublished` on. Errors, `Account not found`, `Account is not active` and `Router not found` leave no entry, nor does a redelivered queue message (one entry per message). Offset or `after` cursor, as every list.",
    params(("routerId" = uuid::Uuid, Path, description = "The router's id"), PageParams),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of history entries", body = ListView<DispatchEntryView>),
        BadRequest, Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn dispatches(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathId(id): PathId,
    RawQuery(q): RawQuery,
) -> Answer<ListView<DispatchEntryView>> {
    p.require(Scope::Read)?;
    let id = RouterId::parse(&id)?;
    let query = ListQuery::parse(q.as_deref())?;
    Ok(Json(
        s.history
            .router_dispatches(p.account_id, id, &query.list, &*s.cursors.key().await?)
            .await?,
    ))
}

/// Reads one history entry of a router with the explanation of its run.
#[utoipa::path(
    get,
    path = "/routers/{routerId}/dispatches/{entryId}",
    operation_id = "getRouterDispatch",
    tag = TAG_HISTORY,
    summary = "Read a history entry and why it was decided",
    description = "The entry (as the history lists show it) plus `explanation`: what its own run found, as it stood at `dispatched_at` (BEHAVIOR 18), the object explain answers (BEHAVIOR 9: `trigger`, `candidates` with each member's reasons, `account_match`, `sla`), built from the values that run read; each `actual` cut to 256 characters; `null` parts where the run stopped. An entry written before explanations were kept has `explanation: null`. Lists never carry `explanation`. 404 `Dispatch not found` for an unknown id, one that is not a UUID, or an entry of another router; 404 `Router not found`; 400 for a `routerId` that is not a UUID.",
    params(
        ("routerId" = uuid::Uuid, Path, description = "The router's id"),
        ("entryId" = uuid::Uuid, Path, description = "The history entry's id")
    ),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The entry and the explanation of its run", body = ExplainedEntryView),
        BadRequest, Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn dispatch(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, ids: PathIds,
) -> Answer<ExplainedEntryView> {
    p.require(Scope::Read)?;
    let id = RouterId::parse(ids.get(0))?;
    Ok(Json(
        s.history
            .router_dispatch(p.account_id, id, ids.get(1))
            .await?,
    ))
}

/// Lists the account's audit events, newest first.
#[utoipa::path(
    get,
    path = "/audit-events",
    operation_id = "listAuditEvents",
    tag = TAG_AUDIT,
    summary = "List the change log",
    description = "One event per successful API write to the account's routing configuration (BEHAVIOR 18): `router.created`, `router.draft_updated`, `router.draft_deleted`, `router.published`, `router.unpublished`, `router.restored`, `router.archived`, `member.updated`, `holiday_calendar.created`, `holiday_calendar.updated`, `holiday_calendar.deleted`, `webhook.created`, `webhook.updated`, `webhook.deleted`, `webhook.secret_rotated`, each written in the same transaction as its change. Refused writes, `Idempotency-Key` replays, provisioning and a member PATCH, calendar PUT or subscription PATCH that changes no value record nothing; every successful router action records its event, even with empty `changes`. `changes` holds one `{path, before, after}` per changed key (`settings.<key>` for a router's settings); a value whose JSON would make the event pass 300 KiB is replaced, largest first, by `{\"omitted\": \"too large\", \"json_bytes\": n, \"sha256\": \"<hex>\"}`, so a valid write never fails because of its event. Secrets never appear. Newest first (`at`, then `id`); `target_type` with `target_id` (both or neither) lists one resource's events; `from` and `to` bound `at` to `[from, to)`. Offset or `after` cursor, as every list (a cursor belongs to its filters). Events expire after 400 days.",
    params(AuditParams, PageParams),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of audit events", body = ListView<AuditEventView>),
        BadRequest, Unauthorized, Forbidden, InternalError
    )
)]
pub async fn audit_events(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, RawQuery(q): RawQuery,
) -> Answer<ListView<AuditEventView>> {
    p.require(Scope::Read)?;
    let filters = shared::api::audit_query(q.as_deref())?;
    let query = ListQuery::parse(q.as_deref())?;
    Ok(Json(
        s.audit
            .list(
                p.account_id,
                &filters,
                &query.list,
                &*s.cursors.key().await?,
            )
            .await?,
    ))
}

/// Reads one audit event.
#[utoipa::path(
    get,
    path = "/audit-events/{id}",
    operation_id = "getAuditEvent",
    tag = TAG_AUDIT,
    summary = "Read an audit event",
    description = "One event of the change log (BEHAVIOR 18). 404 `Audit event not found` for an unknown id, one that is not a UUID, or another account's.",
    params(("id" = uuid::Uuid, Path, description = "The event's id")),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The event", body = AuditEventView),
        Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn audit_event(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathId(id): PathId,
) -> Answer<AuditEventView> {
    p.require(Scope::Read)?;
    Ok(Json(s.audit.get(p.account_id, &id).await?))
}

/// A router's fairness stats: who got how many assignments in a window.
#[utoipa::path(
    get,
    path = "/routers/{routerId}/stats",
    operation_id = "getRouterStats",
    tag = TAG_HISTORY,
    summary = "Read a router's fairness stats",
    description = "The router's assignments with `dispatched_at` in `[from, to)` (default: the current calendar month in UTC; at most 93 days), per member: the router's current pool in pool order, then anyone else assigned in the window. `share` is the member's part of the total; `target_share` what the distribution model aims at (percentage / 100, or 1 / pool size for round robin; `null` outside the pool). Reads every history entry of the router in the window.",
    params(("routerId" = uuid::Uuid, Path, description = "The router's id"), StatsParams),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The router's assignments per member", body = RouterStats),
        BadRequest, Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn stats(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathId(id): PathId,
    RawQuery(q): RawQuery,
) -> Answer<RouterStats> {
    p.require(Scope::Read)?;
    let id = RouterId::parse(&id)?;
    let window = shared::api::stats_window(q.as_deref(), s.clock.now())?;
    Ok(Json(s.history.stats(p.account_id, id, window).await?))
}

/// Replays a router's draft (or any revision) over the records its history says it routed.
#[utoipa::path(
    post,
    path = "/routers/{routerId}/simulate",
    operation_id = "simulateRouter",
    tag = TAG_HISTORY,
    summary = "What-if replay: run a draft or revision over past dispatches",
    description = "Replays a configuration of the router (`revision`: `\"draft\"` by default, or a revision number; published or not) over its history entries with `dispatched_at` in `[from, to)` (`to` defaults to now, `from` to `to` minus 30 days; `from < to`, else 400 naming `from`; at most 93 days, else 400 naming `to`; a future `to` is accepted). The replay set: entries from `api` or `queue` whose outcome is `Trigger did not match` or later in dispatch's order (assignments included), the oldest 10,000 (`truncated: true` when the window held more). Each entry is evaluated by the dispatch engine at its `dispatched_at`: the record's current fields with the owner field holding the entry's `previous_owner` (a record gone since counts as `Object not found`), the members' current settings with working hours and out-of-office at that instant, the rotation state from empty at `from` moving through the replay; capacity and the account quota are not applied (the history does not hold their past values) and account matching uses today's companies. The answer counts each outcome, puts each member's real and replayed assignments side by side with the shares and `target_share` (as in the stats, for the replayed configuration), counts the entries whose assignee changed and shows the first 20 of them. Writes nothing: no owner, rotation state, counter, history entry, event, CRM call or SLA check. 404 `Router not found`, `Draft not found`, `Revision not found`.",
    params(("routerId" = uuid::Uuid, Path, description = "The router's id")),
    request_body(content = SimulateBody, content_type = "application/json"),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "What the configuration would have done", body = Simulation),
        BadRequest, Unauthorized, Forbidden, NotFound, PayloadTooLarge, InternalError
    )
)]
pub async fn simulate(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathId(id): PathId, body: Body,
) -> Answer<Simulation> {
    p.require(Scope::Read)?;
    let id = RouterId::parse(&id)?;
    // The body is read after the router's 404 (BEHAVIOR 2); an empty body is `{}`.
    let body = body.json_object_or_empty();
    let simulation = s.replayer.simulate(p.account_id, id, body).await?;
    tracing::info!(
        router_id = %id,
        replayed = simulation.replayed,
        changed = simulation.changed,
        "router replayed"
    );
    Ok(Json(simulation))
}

/// Creates a router.
#[utoipa::path(
    post,
    path = "/routers",
    operation_id = "createRouter",
    tag = TAG_ROUTERS,
    summary = "Create a router",
    description = "A new router of `object_type` (fixed from then on) whose configuration `{name, has_integration?, settings, users, teams}` is its revision 1; it starts unpublished. Checked as provisioning checks a router: members by e-mail (an archived one is accepted and skipped by dispatch), teams, `default_user`, `owner_field` (a `user` field of the type), the trigger grammar, `sla`, percentages (only on percentage routers, on every user, 0 to 100, summing to 100: 400 naming `users`), `rotation_type: teams` (teams and no users), `name` 1 to 256 characters, at most 500 users and 50 teams. A 400 names the JSON path of the first problem in `field` (e.g. `settings.trigger.groups[0].conditions[0].operator`). At most 1,000 non-archived routers per account (400 `Router limit reached`). `Idempotency-Key` makes a retry safe.",
    params(IdempotencyParams),
    request_body(content = RouterCreate, content_type = "application/json"),
    security(("oauth2" = ["service-api/create"]), ("bearer" = [])),
    responses(
        (status = 201, description = "The router, unpublished, at revision 1", body = RouterView),
        BadRequest, Unauthorized, Forbidden, KeyInFlight, PayloadTooLarge, KeyReused, InternalError
    )
)]
pub async fn create(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, headers: HeaderMap, body: Body,
) -> Result<Response, ApiError> {
    p.require(Scope::Create)?;
    let (s, p, body) = (&s, &p, &body);
    s.idempotency
        .run(
            p.account_id,
            "POST /routers",
            &headers,
            body.bytes(),
            move |claim| async move {
                let view = s
                    .admin
                    .create(p.actor(), &body.json_object()?, claim.as_ref())
                    .await?;
                tracing::info!(router_id = %view.id, "router created");
                Ok(idempotency::HandlerAnswer {
                    status: StatusCode::CREATED,
                    body: view,
                    stored_with_effect: true,
                })
            },
        )
        .await
}

/// Archives a router.
#[utoipa::path(
    delete,
    path = "/routers/{routerId}",
    operation_id = "archiveRouter",
    tag = TAG_ROUTERS,
    summary = "Archive a router",
    description = "Archives the router (`archived`, `archived_by`) and drops its draft. Dispatch then answers `Router not found`; its pending SLA checks end `cancelled`; its revisions and history stay readable, and every write to it answers 409 `Router is archived`. A second DELETE is 404.",
    params(("routerId" = uuid::Uuid, Path, description = "The router's id")),
    security(("oauth2" = ["service-api/delete"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The archived router", body = RouterView),
        BadRequest, Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn archive(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathId(id): PathId,
) -> Answer<RouterView> {
    p.require(Scope::Delete)?;
    let id = RouterId::parse(&id)?;
    Ok(Json(s.admin.archive(p.actor(), id).await?))
}

/// Reads a router's draft.
#[utoipa::path(
    get,
    path = "/routers/{routerId}/draft",
    operation_id = "getRouterDraft",
    tag = TAG_ROUTERS,
    summary = "Read a router's draft",
    description = "The configuration being edited (no dispatch uses it), with its `ETag`. 404 `Draft not found` when the router has none.",
    params(("routerId" = uuid::Uuid, Path, description = "The router's id")),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The draft", body = DraftView,
            headers(("ETag" = String, description = "The draft's entity tag (strong; changes with every draft write)"))),
        BadRequest, Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn get_draft(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathId(id): PathId,
) -> Result<Response, ApiError> {
    p.require(Scope::Read)?;
    let id = RouterId::parse(&id)?;
    Ok(with_etag(
        StatusCode::OK,
        s.admin.draft(p.account_id, id).await?,
    ))
}

/// Creates or replaces a router's draft.
#[utoipa::path(
    put,
    path = "/routers/{routerId}/draft",
    operation_id = "putRouterDraft",
    tag = TAG_ROUTERS,
    summary = "Write a router's draft",
    description = "Creates the draft (based on the live revision) or replaces it (keeping its `based_on_revision`) with a whole configuration, checked as on create. `If-Match` is optional: when sent and not the draft's current `ETag` (or there is no draft), 412 `Draft has changed`.",
    params(("routerId" = uuid::Uuid, Path, description = "The router's id"), IfMatchParams),
    request_body(content = RouterDraftBody, content_type = "application/json"),
    security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The draft", body = DraftView,
            headers(("ETag" = String, description = "The draft's new entity tag"))),
        BadRequest, Unauthorized, Forbidden, NotFound, Conflict, PreconditionFailed, PayloadTooLarge, InternalError
    )
)]
pub async fn put_draft(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathId(id): PathId,
    headers: HeaderMap, body: Body,
) -> Result<Response, ApiError> {
    p.require(Scope::Update)?;
    let id = RouterId::parse(&id)?;
    let if_match = IfMatch::from_headers(&headers)?;
    // The body is read after the router's 404 and 409 and the precondition (BEHAVIOR 2).
    let tagged = s
        .admin
        .put_draft(p.actor(), id, if_match.as_ref(), body.json_object())
        .await?;
    Ok(with_etag(StatusCode::OK, tagged))
}

/// Deletes a router's draft.
#[utoipa::path(
    delete,
    path = "/routers/{routerId}/draft",
    operation_id = "deleteRouterDraft",
    tag = TAG_ROUTERS,
    summary = "Delete a router's draft",
    description = "Drops the draft. `If-Match` is optional: when sent and not the draft's current `ETag` (or there is no draft), 412 `Draft has changed`. 404 `Draft not found` without a draft.",
    params(("routerId" = uuid::Uuid, Path, description = "The router's id"), IfMatchParams),
    security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
    responses(
        (status = 204, description = "The draft is gone"),
        BadRequest, Unauthorized, Forbidden, NotFound, Conflict, PreconditionFailed, InternalError
    )
)]
pub async fn delete_draft(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathId(id): PathId,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    p.require(Scope::Update)?;
    let id = RouterId::parse(&id)?;
    let if_match = IfMatch::from_headers(&headers)?;
    s.admin
        .delete_draft(p.actor(), id, if_match.as_ref())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Publishes a router.
#[utoipa::path(
    post,
    path = "/routers/{routerId}/publish",
    operation_id = "publishRouter",
    tag = TAG_ROUTERS,
    summary = "Publish a router (and its draft)",
    description = "With a draft: the draft becomes the next revision, live at once, the router is published and the draft is gone; `If-Match` with the draft's `ETag` is required (428 `If-Match required` without it, 412 `Draft has changed` when stale). From the answer on, no assignment is made by the previous revision. Without a draft: only `is_published: true` (an `If-Match` sent then is 412). Takes no body (`{}` is accepted). On an archived router 409 comes before any `If-Match` check; an `Idempotency-Key` replay answers before it too.",
    params(("routerId" = uuid::Uuid, Path, description = "The router's id"), IfMatchParams, IdempotencyParams),
    security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The router, published", body = RouterView),
        BadRequest, Unauthorized, Forbidden, NotFound, Conflict, PreconditionFailed, KeyReused, PreconditionRequired, InternalError
    )
)]
pub async fn publish(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathId(id): PathId,
    headers: HeaderMap, body: Body,
) -> Result<Response, ApiError> {
    p.require(Scope::Update)?;
    let route = format!("POST /routers/{id}/publish");
    let id = RouterId::parse(&id)?;
    let (s, p, headers, body) = (&s, &p, &headers, &body);
    s.idempotency
        .run(
            p.account_id,
            &route,
            headers,
            body.bytes(),
            move |claim| async move {
                let if_match = IfMatch::from_headers(headers)?;
                let (view, wrote) = s
                    .admin
                    .publish(
                        p.actor(),
                        id,
                        if_match.as_ref(),
                        no_body(body),
                        claim.as_ref(),
                    )
                    .await?;
                Ok(answer(view, wrote))
            },
        )
        .await
}

/// Unpublishes a router.
#[utoipa::path(
    post,
    path = "/routers/{routerId}/unpublish",
    operation_id = "unpublishRouter",
    tag = TAG_ROUTERS,
    summary = "Unpublish a router",
    description = "`is_published: false`: dispatch answers `The router is unpublished` from now on. The draft and revisions stay. Takes no body (`{}` is accepted).",
    params(("routerId" = uuid::Uuid, Path, description = "The router's id"), IdempotencyParams),
    security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The router, unpublished", body = RouterView),
        BadRequest, Unauthorized, Forbidden, NotFound, Conflict, KeyReused, InternalError
    )
)]
pub async fn unpublish(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathId(id): PathId,
    headers: HeaderMap, body: Body,
) -> Result<Response, ApiError> {
    p.require(Scope::Update)?;
    let route = format!("POST /routers/{id}/unpublish");
    let id = RouterId::parse(&id)?;
    let (s, p, headers, body) = (&s, &p, &headers, &body);
    s.idempotency
        .run(
            p.account_id,
            &route,
            headers,
            body.bytes(),
            move |claim| async move {
                let (view, wrote) = s
                    .admin
                    .unpublish(p.actor(), id, no_body(body), claim.as_ref())
                    .await?;
                Ok(answer(view, wrote))
            },
        )
        .await
}

/// Lists a router's revisions, newest first.
#[utoipa::path(
    get,
    path = "/routers/{routerId}/revisions",
    operation_id = "listRouterRevisions",
    tag = TAG_ROUTERS,
    summary = "List a router's revisions",
    description = "Every configuration a create or a publish made, newest first, with `published_at` and `published_by` (`provisioning` for a seeded router). Archived routers too. Offset or `after` cursor, as every list; a page reads at most `limit` + 1 revisions.",
    params(("routerId" = uuid::Uuid, Path, description = "The router's id"), PageParams),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of revisions", body = ListView<RevisionView>),
        BadRequest, Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn revisions(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathId(id): PathId,
    RawQuery(q): RawQuery,
) -> Answer<ListView<RevisionView>> {
    p.require(Scope::Read)?;
    let id = RouterId::parse(&id)?;
    let query = ListQuery::parse(q.as_deref())?;
    Ok(Json(
        s.admin
            .revisions(p.account_id, id, &query.list, &*s.cursors.key().await?)
            .await?,
    ))
}

/// Reads one revision of a router.
#[utoipa::path(
    get,
    path = "/routers/{routerId}/revisions/{revision}",
    operation_id = "getRouterRevision",
    tag = TAG_ROUTERS,
    summary = "Read a router revision",
    description = "Revision `revision` of the router. 404 `Revision not found` for an unknown number, or one that is not a positive integer.",
    params(
        ("routerId" = uuid::Uuid, Path, description = "The router's id"),
        ("revision" = u64, Path, description = "The revision's number (1, 2, ...)", minimum = 1)
    ),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The revision", body = RevisionView),
        BadRequest, Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn revision(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathIds(ids): PathIds,
) -> Answer<RevisionView> {
    p.require(Scope::Read)?;
    let id = RouterId::parse(ids.first().map(String::as_str).unwrap_or_default())?;
    let n = ids.get(1).map(String::as_str).unwrap_or_default();
    Ok(Json(s.admin.revision(p.account_id, id, n).await?))
}

/// Restores a revision into the draft.
#[utoipa::path(
    post,
    path = "/routers/{routerId}/revisions/{revision}/restore",
    operation_id = "restoreRouterRevision",
    tag = TAG_ROUTERS,
    summary = "Restore a router revision into the draft",
    description = "Replaces the draft with revision `revision`'s configuration (`based_on_revision` = that number) and answers it with its `ETag`. A rollback is a restore, then a publish, which makes a new revision: history is never rewritten. `If-Match` is optional as on `PUT` of the draft. Takes no body (`{}` is accepted). A replay of an `Idempotency-Key` answers the stored body (read the draft for its `ETag`).",
    params(
        ("routerId" = uuid::Uuid, Path, description = "The router's id"),
        ("revision" = u64, Path, description = "The revision's number (1, 2, ...)", minimum = 1),
        IfMatchParams,
        IdempotencyParams
    ),
    security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The draft", body = DraftView,
            headers(("ETag" = String, description = "The draft's new entity tag"))),
        BadRequest, Unauthorized, Forbidden, NotFound, Conflict, PreconditionFailed, KeyReused, InternalError
    )
)]
pub async fn restore(
    Authenticated(p): Authenticated, State(s): State<RoutersState>, PathIds(ids): PathIds,
    headers: HeaderMap, body: Body,
) -> Result<Response, ApiError> {
    p.require(Scope::Update)?;
    let raw_id = ids.first().cloned().unwrap_or_default();
    let n = ids.get(1).cloned().unwrap_or_default();
    let route = format!("POST /routers/{raw_id}/revisions/{n}/restore");
    let id = RouterId::parse(&raw_id)?;
    let etag = std::sync::Mutex::new(None);
    let (s, p, headers, body, n, cell) = (&s, &p, &headers, &body, &n, &etag);
    let mut response = s
        .idempotency
        .run(
            p.account_id,
            &route,
            headers,
            body.bytes(),
            move |claim| async move {
                let if_match = IfMatch::from_headers(headers)?;
                let Tagged { draft, etag: tag } = s
                    .admin
                    .restore(
                        p.actor(),
                        id,
                        n,
                        if_match.as_ref(),
                        no_body(body),
                        claim.as_ref(),
                    )
                    .await?;
                *cell.lock().unwrap_or_else(|e| e.into_inner()) = Some(tag);
                Ok(idempotency::HandlerAnswer {
                    status: StatusCode::OK,
                    body: draft,
                    stored_with_effect: true,
                })
            },
        )
        .await?;
    if let Some(tag) = etag.lock().unwrap_or_else(|e| e.into_inner()).take() {
        set_etag(&mut response, &tag);
    }
    Ok(response)
}

/// A draft answer with its `ETag` header.
fn with_etag(status: StatusCode, tagged: Tagged) -> Response {
    let mut response = (status, Json(tagged.draft)).into_response();
    set_etag(&mut response, &tagged.etag);
    response
}

/// Puts `etag` in `response`'s `ETag` header (a draft's answer: read, written or restored).
fn set_etag(response: &mut Response, etag: &ETag) {
    if let Ok(value) = HeaderValue::from_str(etag.as_str()) {
        response.headers_mut().insert(header::ETAG, value);
    }
}

/// The 200 of a router write; `wrote` says whether the write stored it (the
/// `Idempotency-Key` answer then went with it).
fn answer(view: RouterView, wrote: bool) -> idempotency::HandlerAnswer<RouterView> {
    idempotency::HandlerAnswer {
        status: StatusCode::OK,
        body: view,
        stored_with_effect: wrote,
    }
}

/// Publish, unpublish and restore take no body: nothing, or an empty JSON object.
///
/// Errors: 400 `Invalid JSON ...` for a body that is not a JSON object; 400 `Unknown field:
/// <key>` naming the first key of a non-empty one.
fn no_body(body: &Body) -> Result<(), DomainError> {
    match body.json_object_or_empty()?.keys().next() {
        None => Ok(()),
        Some(key) => Err(DomainError::bad_field(
            key.clone(),
            format!("Unknown field: {key} (this operation takes no body)"),
        )),
    }
}
