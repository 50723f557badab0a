//! Handler of the users function: `GET /users`, `GET /users/{userId}`, `PATCH /users/{userId}`
//! (spec "Users"). Thin: authenticate, scope, parse, call [`shared::members::MemberService`].

use axum::extract::{FromRef, Path, RawQuery, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;
use shared::api::{missing_path_parameter, with_405, Authenticated, ListQuery, RawBody};
use shared::auth::{Scope, TokenVerifier};
use shared::members::MemberService;
use shared::ApiError;
use std::sync::Arc;

/// What the handler needs, built once per cold start.
#[derive(Clone)]
pub struct UsersState {
    /// The member operations.
    pub members: Arc<MemberService>,
    /// Bearer-token verification.
    pub verifier: Arc<TokenVerifier>,
}

impl FromRef<UsersState> for Arc<TokenVerifier> {
    fn from_ref(state: &UsersState) -> Self {
        state.verifier.clone()
    }
}

type Answer = Result<Json<Value>, ApiError>;

/// The user routes, without fallback (see [`shared::api::finish`]).
pub fn routes(state: UsersState) -> Router {
    let missing = |scope: Scope| {
        move |Authenticated(p): Authenticated| async move {
            p.require(scope)?;
            Err::<(), _>(missing_path_parameter("userId"))
        }
    };
    Router::new()
        .route(
            "/users",
            with_405(get(list).patch(missing(Scope::Update)), "GET"),
        )
        .route(
            "/users/",
            with_405(
                get(missing(Scope::Read)).patch(missing(Scope::Update)),
                "GET, PATCH",
            ),
        )
        .route(
            "/users/{user_id}",
            with_405(get(read).patch(update), "GET, PATCH"),
        )
        .with_state(state)
}

async fn list(
    Authenticated(p): Authenticated,
    State(s): State<UsersState>,
    RawQuery(q): RawQuery,
) -> Answer {
    p.require(Scope::Read)?;
    let query = ListQuery::parse(q.as_deref())?;
    Ok(Json(s.members.list(p.account_id, query.page).await?))
}

async fn read(
    Authenticated(p): Authenticated,
    State(s): State<UsersState>,
    Path(id): Path<String>,
) -> Answer {
    p.require(Scope::Read)?;
    Ok(Json(s.members.get(p.account_id, &id).await?))
}

async fn update(
    Authenticated(p): Authenticated,
    State(s): State<UsersState>,
    Path(id): Path<String>,
    RawBody(body): RawBody,
) -> Answer {
    p.require(Scope::Update)?;
    Ok(Json(s.members.update(p.account_id, &id, &body).await?))
}
