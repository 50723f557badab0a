//! Handler of the routers function: `GET /routers`, `GET /routers/{routerId}` (spec "Routers").
//! Thin: authenticate, scope, parse, call [`shared::routers::RouterService`].

use axum::extract::{FromRef, Path, RawQuery, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;
use shared::api::{missing_path_parameter, with_405, Authenticated, ListQuery};
use shared::auth::{Scope, TokenVerifier};
use shared::routers::RouterService;
use shared::ApiError;
use std::sync::Arc;

/// What the handler needs, built once per cold start.
#[derive(Clone)]
pub struct RoutersState {
    /// The router read operations.
    pub routers: Arc<RouterService>,
    /// Bearer-token verification.
    pub verifier: Arc<TokenVerifier>,
}

impl FromRef<RoutersState> for Arc<TokenVerifier> {
    fn from_ref(state: &RoutersState) -> Self {
        state.verifier.clone()
    }
}

type Answer = Result<Json<Value>, ApiError>;

/// The router routes, without fallback (see [`shared::api::finish`]).
pub fn routes(state: RoutersState) -> Router {
    let missing = |Authenticated(p): Authenticated| async move {
        p.require(Scope::Read)?;
        Err::<(), _>(missing_path_parameter("routerId"))
    };
    Router::new()
        .route("/routers", with_405(get(list), "GET"))
        .route("/routers/", with_405(get(missing), "GET"))
        .route("/routers/{router_id}", with_405(get(read), "GET"))
        .with_state(state)
}

async fn list(
    Authenticated(p): Authenticated,
    State(s): State<RoutersState>,
    RawQuery(q): RawQuery,
) -> Answer {
    p.require(Scope::Read)?;
    let query = ListQuery::parse(q.as_deref())?;
    Ok(Json(s.routers.list(p.account_id, query.page).await?))
}

async fn read(
    Authenticated(p): Authenticated,
    State(s): State<RoutersState>,
    Path(id): Path<String>,
) -> Answer {
    p.require(Scope::Read)?;
    Ok(Json(s.routers.get(p.account_id, &id).await?))
}
