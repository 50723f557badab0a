//! The change log (BEHAVIOR 18): `GET /audit-events` and `GET /audit-events/{id}`. It lives in
//! this function because the same routing admins read it, with the same permissions (queries of
//! the table and of GSI1), as the routers' lists.

use crate::state::{Answer, RoutersState};
use axum::extract::{RawQuery, State};
use shared::api::openapi::responses::*;
use shared::api::openapi::{AuditParams, PageParams, TAG_AUDIT};
use shared::api::Json;
use shared::api::{Authenticated, ListQuery, PathId};
use shared::audit::AuditEventView;
use shared::auth::Scope;
use shared::page::ListView;

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
