//! Handler of the routers function: `GET /routers`, `GET /routers/{routerId}` (spec "Routers"),
//! and a router's routing history and fairness stats (BEHAVIOR 8):
//! `GET /routers/{routerId}/dispatches`, `GET /routers/{routerId}/stats`.
//! Thin: authenticate, scope, parse, call [`shared::routers::RouterService`] or
//! [`shared::history::HistoryService`].

use axum::extract::{FromRef, RawQuery, State};
use axum::http::Method;
use axum::Json;
use shared::api::openapi::responses::*;
use shared::api::openapi::Description;
use shared::api::openapi::{ArchivedParam, PageParams, StatsParams, TAG_HISTORY, TAG_ROUTERS};
use shared::api::{empty_id_route, with_405, ApiError, Authenticated, ListQuery, PathId};
use shared::auth::{Scope, TokenVerifier};
use shared::clock::Clock;
use shared::deps::{ConfigError, Deps};
use shared::described_routes;
use shared::history::{DispatchEntryView, HistoryService, RouterStats};
use shared::page::cursor::CursorKey;
use shared::page::ListView;
use shared::routers::{RouterService, RouterView};
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
    pub cursors: Arc<CursorKey>,
    /// The routing history and stats (BEHAVIOR 8).
    pub history: Arc<HistoryService>,
    /// The current time (the stats' default window).
    pub clock: Arc<dyn Clock>,
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
        })
    }
}

const ITEM_METHODS: &[(Method, Scope)] = &[(Method::GET, Scope::Read)];

/// The described routes of the function, stateful (for the local server to merge).
pub fn api(state: RoutersState) -> OpenApiRouter {
    routes(state, Description::Full)
}

/// The function's routes, with their OpenAPI description or without it ([`Description`]: the
/// Lambda function never serves it and saves building it at every cold start).
fn routes(state: RoutersState, description: Description) -> OpenApiRouter {
    let (schemas, paths, methods) = described_routes!(description; list);
    let (schemas_item, paths_item, methods_item) = described_routes!(description; get);
    let (schemas_history, paths_history, methods_history) =
        described_routes!(description; dispatches);
    let (schemas_stats, paths_stats, methods_stats) = described_routes!(description; stats);
    OpenApiRouter::new()
        .routes((schemas, paths, with_405(methods, "GET")))
        .routes((schemas_item, paths_item, with_405(methods_item, "GET")))
        .routes((
            schemas_history,
            paths_history,
            with_405(methods_history, "GET"),
        ))
        .routes((schemas_stats, paths_stats, with_405(methods_stats, "GET")))
        .route("/routers/", empty_id_route("GET", ITEM_METHODS, "routerId"))
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
            .list(p.account_id, &query.list, &s.cursors)
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
            .router_dispatches(p.account_id, id, &query.list, &s.cursors)
            .await?,
    ))
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
