//! Handler of the users function: `GET /users`, `GET /users/{userId}`, `PATCH /users/{userId}`
//! (spec "Users"). Thin: authenticate, scope, parse, call [`shared::members::MemberService`].

use axum::extract::{FromRef, RawQuery, State};
use axum::http::Method;
use axum::Json;
use shared::api::openapi::responses::*;
use shared::api::openapi::Description;
use shared::api::openapi::{ArchivedParam, PageParams, TAG_USERS};
use shared::api::{
    empty_id_route, missing_path_parameter, with_405, ApiError, Authenticated, Body, ListQuery,
    PathId,
};
use shared::auth::{Scope, TokenVerifier};
use shared::deps::{ConfigError, Deps};
use shared::described_routes;
use shared::members::{MemberPatch, MemberService, MemberView};
use shared::page::cursor::CursorKey;
use shared::page::ListView;
use shared::types::MemberId;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;

/// What the handler needs, built once per cold start.
#[derive(Clone, FromRef)]
pub struct UsersState {
    /// The member operations.
    pub members: Arc<MemberService>,
    /// Bearer-token verification.
    pub verifier: Arc<TokenVerifier>,
    /// Signs and opens the lists' `after` cursors (BEHAVIOR 11).
    pub cursors: Arc<CursorKey>,
}

impl UsersState {
    /// The state over `deps`.
    ///
    /// Errors: no token verifier configured (`JWT_PUBLIC_JWKS`), no cursor key (`CURSOR_SECRET`).
    pub fn new(deps: &Deps) -> Result<Self, ConfigError> {
        Ok(Self {
            members: Arc::new(MemberService::new(deps.store.clone(), deps.clock.clone())),
            verifier: deps.verifier()?,
            cursors: deps.cursors()?,
        })
    }
}

/// The described routes of the function, stateful (for the local server to merge).
pub fn api(state: UsersState) -> OpenApiRouter {
    routes(state, Description::Full)
}

/// The function's routes, with their OpenAPI description or without it ([`Description`]: the
/// Lambda function never serves it and saves building it at every cold start).
fn routes(state: UsersState, description: Description) -> OpenApiRouter {
    let (schemas, paths, methods) = described_routes!(description; list, update_without_id);
    let collection = with_405(methods, "GET, PATCH");
    let (schemas_item, paths_item, methods_item) = described_routes!(description; get, update);
    OpenApiRouter::new()
        .routes((schemas, paths, collection))
        .routes((
            schemas_item,
            paths_item,
            with_405(methods_item, "GET, PATCH"),
        ))
        .route(
            "/users/",
            empty_id_route("GET, PATCH", ITEM_METHODS, "userId"),
        )
        .with_state(state)
}

/// The function's application: its routes, finished ([`shared::api::finish`]).
///
/// Errors: no token verifier configured.
pub fn app(deps: &Deps) -> Result<axum::Router, ConfigError> {
    let (router, _) = routes(UsersState::new(deps)?, Description::RoutesOnly).split_for_parts();
    Ok(shared::api::finish(router))
}

const ITEM_METHODS: &[(Method, Scope)] =
    &[(Method::GET, Scope::Read), (Method::PATCH, Scope::Update)];

type Answer<T> = Result<Json<T>, ApiError>;

/// Lists the account's members.
#[utoipa::path(
    get,
    path = "/users",
    operation_id = "listUsers",
    tag = TAG_USERS,
    summary = "List users",
    description = "The account's members by e-mail, active ones unless `archived=true`.",
    params(ArchivedParam, PageParams),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of users", body = ListView<MemberView>),
        BadRequest, Unauthorized, Forbidden, InternalError
    )
)]
pub async fn list(
    Authenticated(p): Authenticated, State(s): State<UsersState>, RawQuery(q): RawQuery,
) -> Answer<ListView<MemberView>> {
    p.require(Scope::Read)?;
    let query = ListQuery::parse(q.as_deref())?;
    Ok(Json(
        s.members
            .list(p.account_id, &query.list, &s.cursors)
            .await?,
    ))
}

/// `PATCH /users` without an id: always 400.
#[utoipa::path(
    patch,
    path = "/users",
    operation_id = "updateUserWithoutId",
    tag = TAG_USERS,
    summary = "(no user id) always 400",
    description = "PATCH is defined on `/users/{userId}` only: without the id the answer is 400 `Missing path parameter: userId` (after 401 and 403). There is no successful request.",
    security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
    responses(BadRequest, Unauthorized, Forbidden, InternalError)
)]
pub async fn update_without_id(Authenticated(p): Authenticated) -> Result<(), ApiError> {
    p.require(Scope::Update)?;
    Err(missing_path_parameter("userId").into())
}

/// Reads a member.
#[utoipa::path(
    get,
    path = "/users/{userId}",
    operation_id = "getUser",
    tag = TAG_USERS,
    summary = "Read a user",
    description = "The member, archived or not.",
    params(("userId" = uuid::Uuid, Path, description = "The member's id")),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The user", body = MemberView),
        BadRequest, Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn get(
    Authenticated(p): Authenticated, State(s): State<UsersState>, PathId(id): PathId,
) -> Answer<MemberView> {
    p.require(Scope::Read)?;
    Ok(Json(
        s.members.get(p.account_id, MemberId::parse(&id)?).await?,
    ))
}

/// Updates a member.
#[utoipa::path(
    patch,
    path = "/users/{userId}",
    operation_id = "updateUser",
    tag = TAG_USERS,
    summary = "Update a user",
    description = "Changes the writable keys sent (a flat object, at least one key). Read-only and unknown keys are 400 naming the key; an archived member is 409.",
    params(("userId" = uuid::Uuid, Path, description = "The member's id")),
    request_body(content = shared::api::openapi::users::UserPatch, content_type = "application/json"),
    security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The updated user", body = MemberView),
        BadRequest, Unauthorized, Forbidden, NotFound, Conflict, PayloadTooLarge, InternalError
    )
)]
pub async fn update(
    Authenticated(p): Authenticated, State(s): State<UsersState>, PathId(id): PathId, body: Body,
) -> Answer<MemberView> {
    p.require(Scope::Update)?;
    let id = MemberId::parse(&id)?;
    let patch = body.json_object().and_then(|b| MemberPatch::parse(&b));
    Ok(Json(s.members.update(p.account_id, id, patch).await?))
}
