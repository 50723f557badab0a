//! The router reads (spec "Routers"): `GET /routers` and `GET /routers/{routerId}`.

use crate::state::{Answer, RoutersState};
use axum::extract::{RawQuery, State};
use shared::api::openapi::responses::*;
use shared::api::openapi::{ArchivedParam, PageParams, TAG_ROUTERS};
use shared::api::Json;
use shared::api::{Authenticated, ListQuery, PathId};
use shared::auth::Scope;
use shared::page::ListView;
use shared::routers::RouterView;
use shared::types::RouterId;

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
