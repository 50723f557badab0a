//! Router management (BEHAVIOR 15): `POST /routers`, `DELETE /routers/{routerId}`,
//! `GET|PUT|DELETE /routers/{routerId}/draft`, `POST /routers/{routerId}/publish` and
//! `/unpublish`, `GET /routers/{routerId}/revisions[/{revision}]` and
//! `POST /routers/{routerId}/revisions/{revision}/restore`; the writes with an
//! `Idempotency-Key` (BEHAVIOR 10) run through [`shared::api::idempotency::IdempotentRequests`].

use crate::state::{Answer, RoutersState};
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use shared::api::idempotency;
use shared::api::openapi::responses::*;
use shared::api::openapi::routers::{IfMatchParams, RouterCreate, RouterDraftBody};
use shared::api::openapi::{IdempotencyParams, PageParams, TAG_ROUTERS};
use shared::api::Json;
use shared::api::{ApiError, Authenticated, Body, ListQuery, PathId, PathIds};
use shared::auth::Scope;
use shared::error::DomainError;
use shared::page::ListView;
use shared::routers::{DraftView, RevisionView, RouterView, Tagged};
use shared::types::etag::{ETag, IfMatch};
use shared::types::RouterId;

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
