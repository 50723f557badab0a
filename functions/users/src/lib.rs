//! Handler of the users function: `GET /users`, `GET /users/{userId}`, `PATCH /users/{userId}`
//! (spec "Users"), and the account's holiday calendars (BEHAVIOR 17:
//! `GET|POST /holiday-calendars`, `GET|PUT|DELETE /holiday-calendars/{id}`). Thin: authenticate,
//! scope, parse, call [`shared::members::MemberService`] or
//! [`shared::calendars::HolidayCalendarService`].
//!
//! Calendars live here rather than in a function of their own: they are the members'
//! availability data, and a member PATCH already writes them (the calendar it names gains a
//! reference in the member's transaction), so this function holds those permissions anyway;
//! another function would add a cold start and a policy for five routes.

use axum::extract::{FromRef, RawQuery, State};
use axum::http::{Method, StatusCode};
use shared::api::openapi::responses::*;
use shared::api::openapi::Description;
use shared::api::openapi::{ArchivedParam, PageParams, TAG_USERS};
use shared::api::Json;
use shared::api::{
    allow_of, empty_id_route, with_own_405, with_own_item_methods, ApiError, Authenticated, Body,
    ListQuery, PathId,
};
use shared::auth::{Scope, TokenVerifier};
use shared::calendars::{HolidayCalendarService, HolidayCalendarView};
use shared::deps::{ConfigError, Deps};
use shared::described_routes;
use shared::members::{MemberPatch, MemberService, MemberView};
use shared::page::cursor::CursorKeySource;
use shared::page::ListView;
use shared::types::HolidayCalendarId;
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
    pub cursors: Arc<CursorKeySource>,
    /// The holiday calendar operations (BEHAVIOR 17).
    pub calendars: Arc<HolidayCalendarService>,
}

impl UsersState {
    /// The state over `deps`.
    ///
    /// Errors: no token verifier configured (`JWT_PUBLIC_JWKS`), no cursor key (`CURSOR_SECRET`).
    pub fn new(deps: &Deps) -> Result<Self, ConfigError> {
        Ok(Self {
            members: Arc::new(MemberService::new(deps.store.clone(), deps.clock.clone())),
            calendars: Arc::new(HolidayCalendarService::new(
                deps.store.clone(),
                deps.clock.clone(),
            )),
            verifier: deps.verifier()?,
            cursors: deps.cursors()?,
        })
    }
}

/// The routes of the function, stateful (for the local server to merge).
///
/// With [`Description::Full`] the routes carry their OpenAPI description (what `openapi.json` is
/// generated from); with [`Description::RoutesOnly`] the same routes without it (the local
/// server, which serves the committed document).
pub fn api(state: UsersState, description: Description) -> OpenApiRouter {
    routes(state, description)
}

/// The function's routes, with their OpenAPI description or without it ([`Description`]: the
/// Lambda function never serves it and saves building it at every cold start).
fn routes(state: UsersState, description: Description) -> OpenApiRouter {
    // The item path's PATCH sent to the collection: 400 `Missing path parameter` (BEHAVIOR 2),
    // not an operation of its own, so not in `Allow`.
    let collection =
        with_own_item_methods(described_routes!(description; list), ITEM_METHODS, "userId");
    let item = with_own_405(described_routes!(description; get, update));
    let calendar = with_own_405(described_routes!(
        description; get_calendar, update_calendar, delete_calendar
    ));
    // The empty-id paths allow what their item paths do.
    let (item_allow, calendar_allow) = (allow_of(&item.1), allow_of(&calendar.1));
    OpenApiRouter::new()
        .routes(collection)
        .routes(item)
        .route(
            "/users/",
            empty_id_route(item_allow, ITEM_METHODS, "userId"),
        )
        .routes(with_own_405(
            described_routes!(description; list_calendars, create_calendar),
        ))
        .routes(calendar)
        .route(
            "/holiday-calendars/",
            empty_id_route(calendar_allow, CALENDAR_METHODS, "id"),
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

const CALENDAR_METHODS: &[(Method, Scope)] = &[
    (Method::GET, Scope::Read),
    (Method::PUT, Scope::Update),
    (Method::DELETE, Scope::Delete),
];

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
            .list(p.account_id, &query.list, &*s.cursors.key().await?)
            .await?,
    ))
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
    Ok(Json(s.members.update(p.actor(), id, patch).await?))
}

/// A path's calendar id: `None` (404 `Holiday calendar not found`) when it is not a UUID.
fn calendar_id(text: &str) -> Option<HolidayCalendarId> {
    HolidayCalendarId::try_parse(text)
}

/// Lists the account's holiday calendars, oldest first.
#[utoipa::path(
    get,
    path = "/holiday-calendars",
    operation_id = "listHolidayCalendars",
    tag = TAG_USERS,
    summary = "List holiday calendars",
    description = "The account's holiday calendars (BEHAVIOR 17), oldest first. Offset or `after` cursor, as every list.",
    params(PageParams),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of holiday calendars", body = ListView<HolidayCalendarView>),
        BadRequest, Unauthorized, Forbidden, InternalError
    )
)]
pub async fn list_calendars(
    Authenticated(p): Authenticated, State(s): State<UsersState>, RawQuery(q): RawQuery,
) -> Answer<ListView<HolidayCalendarView>> {
    p.require(Scope::Read)?;
    let query = ListQuery::parse(q.as_deref())?;
    Ok(Json(
        s.calendars
            .list(p.account_id, &query.list, &*s.cursors.key().await?)
            .await?,
    ))
}

/// Creates a holiday calendar.
#[utoipa::path(
    post,
    path = "/holiday-calendars",
    operation_id = "createHolidayCalendar",
    tag = TAG_USERS,
    summary = "Create a holiday calendar",
    description = "A calendar `{name, time_zone, holidays}` (BEHAVIOR 17) that members (`holiday_calendar_id`) and routers (`settings.holiday_calendar_id`) name: during its holidays they are unavailable. At most 20 calendars per account and 500 holidays per calendar (400 beyond); an invalid body is 400 naming the JSON path (e.g. `holidays[3].end`).",
    request_body(content = shared::api::openapi::users::HolidayCalendarWrite, content_type = "application/json"),
    security(("oauth2" = ["service-api/create"]), ("bearer" = [])),
    responses(
        (status = 201, description = "The calendar", body = HolidayCalendarView),
        BadRequest, Unauthorized, Forbidden, PayloadTooLarge, InternalError
    )
)]
pub async fn create_calendar(
    Authenticated(p): Authenticated, State(s): State<UsersState>, body: Body,
) -> Result<(StatusCode, Json<HolidayCalendarView>), ApiError> {
    p.require(Scope::Create)?;
    let body = body.json_object()?;
    let view = s.calendars.create(p.actor(), &body).await?;
    tracing::info!(holiday_calendar_id = %view.id, "holiday calendar created");
    Ok((StatusCode::CREATED, Json(view)))
}

/// Reads a holiday calendar.
#[utoipa::path(
    get,
    path = "/holiday-calendars/{id}",
    operation_id = "getHolidayCalendar",
    tag = TAG_USERS,
    summary = "Read a holiday calendar",
    description = "The calendar. An unknown id (or one that is not a UUID) is 404 `Holiday calendar not found`.",
    params(("id" = uuid::Uuid, Path, description = "The calendar's id")),
    security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The calendar", body = HolidayCalendarView),
        Unauthorized, Forbidden, NotFound, InternalError
    )
)]
pub async fn get_calendar(
    Authenticated(p): Authenticated, State(s): State<UsersState>, PathId(id): PathId,
) -> Answer<HolidayCalendarView> {
    p.require(Scope::Read)?;
    Ok(Json(s.calendars.get(p.account_id, calendar_id(&id)).await?))
}

/// Replaces a holiday calendar.
#[utoipa::path(
    put,
    path = "/holiday-calendars/{id}",
    operation_id = "updateHolidayCalendar",
    tag = TAG_USERS,
    summary = "Replace a holiday calendar",
    description = "Replaces name, time zone and holidays (the body as on create). Members and routers that name the calendar follow it at their next dispatch.",
    params(("id" = uuid::Uuid, Path, description = "The calendar's id")),
    request_body(content = shared::api::openapi::users::HolidayCalendarWrite, content_type = "application/json"),
    security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
    responses(
        (status = 200, description = "The calendar", body = HolidayCalendarView),
        BadRequest, Unauthorized, Forbidden, NotFound, PayloadTooLarge, InternalError
    )
)]
pub async fn update_calendar(
    Authenticated(p): Authenticated, State(s): State<UsersState>, PathId(id): PathId, body: Body,
) -> Answer<HolidayCalendarView> {
    p.require(Scope::Update)?;
    // An unknown calendar is 404 before the body is looked at (the service reads it first).
    Ok(Json(
        s.calendars
            .update(p.actor(), calendar_id(&id), body.json_object())
            .await?,
    ))
}

/// Deletes a holiday calendar.
#[utoipa::path(
    delete,
    path = "/holiday-calendars/{id}",
    operation_id = "deleteHolidayCalendar",
    tag = TAG_USERS,
    summary = "Delete a holiday calendar",
    description = "Deletes the calendar, or 409 `Holiday calendar in use` while an active member or the live or draft configuration of a non-archived router names it.",
    params(("id" = uuid::Uuid, Path, description = "The calendar's id")),
    security(("oauth2" = ["service-api/delete"]), ("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        Unauthorized, Forbidden, NotFound, Conflict, InternalError
    )
)]
pub async fn delete_calendar(
    Authenticated(p): Authenticated, State(s): State<UsersState>, PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    p.require(Scope::Delete)?;
    s.calendars.delete(p.actor(), calendar_id(&id)).await?;
    Ok(StatusCode::NO_CONTENT)
}
