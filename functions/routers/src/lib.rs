//! Handler of the routers function: `GET /routers`, `GET /routers/{routerId}` (spec "Routers").
//! Thin: authenticate, scope, parse, call [`shared::routers::RouterService`].

use axum::extract::{FromRef, RawQuery, State};
use axum::http::Method;
use axum::Json;
use shared::api::openapi::responses::*;
use shared::api::openapi::{ListParams, TAG_ROUTERS};
use shared::api::{empty_id_route, with_405, ApiError, Authenticated, ListQuery, PathId};
use shared::auth::{Scope, TokenVerifier};
use shared::deps::{ConfigError, Deps};
use shared::page::cursor::CursorKey;
use shared::page::ListView;
use shared::routers::{RouterService, RouterView};
use shared::types::RouterId;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// What the handler needs, built once per cold start.
#[derive(Clone, FromRef)]
pub struct RoutersState {
    /// The router read operations.
    pub routers: Arc<RouterService>,
    /// Bearer-token verification.
    pub verifier: Arc<TokenVerifier>,
    /// Signs and opens the lists' `after` cursors (BEHAVIOR 11).
    pub cursors: Arc<CursorKey>,
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
        })
    }
}

const ITEM_METHODS: &[(Method, Scope)] = &[(Method::GET, Scope::Read)];

/// The described routes of the function, stateful (for the local server to merge).
pub fn api(state: RoutersState) -> OpenApiRouter {
    let (schemas, paths, methods) = routes!(list);
    let (schemas_item, paths_item, methods_item) = routes!(get);
    OpenApiRouter::new()
        .routes((schemas, paths, with_405(methods, "GET")))
        .routes((schemas_item, paths_item, with_405(methods_item, "GET")))
        .route("/routers/", empty_id_route("GET", ITEM_METHODS, "routerId"))
        .with_state(state)
}

/// The function's application: its routes, finished ([`shared::api::finish`]).
///
/// Errors: no token verifier configured.
pub fn app(deps: &Deps) -> Result<axum::Router, ConfigError> {
    let (router, _) = api(RoutersState::new(deps)?).split_for_parts();
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
    params(ListParams),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of routers", body = ListView<RouterView>),
        BadRequest, Unauthorized, Forbidden, InternalError
    )
)]
pub async fn list(
    Authenticated(p): Authenticated,
    State(s): State<RoutersState>,
    RawQuery(q): RawQuery,
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
    Authenticated(p): Authenticated,
    State(s): State<RoutersState>,
    PathId(id): PathId,
) -> Answer<RouterView> {
    p.require(Scope::Read)?;
    Ok(Json(
        s.routers.get(p.account_id, RouterId::parse(&id)?).await?,
    ))
}
