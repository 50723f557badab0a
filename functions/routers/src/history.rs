//! A router's routing history and fairness stats (BEHAVIOR 8), one entry with the explanation of
//! its run (BEHAVIOR 18), and the what-if replay (BEHAVIOR 16):
//! `GET /routers/{routerId}/dispatches[/{entryId}]`, `GET /routers/{routerId}/stats`,
//! `POST /routers/{routerId}/simulate`.

use crate::state::{Answer, RoutersState};
use axum::extract::{RawQuery, State};
use shared::api::openapi::responses::*;
use shared::api::openapi::{PageParams, StatsParams, TAG_HISTORY};
use shared::api::Json;
use shared::api::{Authenticated, Body, ListQuery, PathId, PathIds};
use shared::auth::Scope;
use shared::dispatch::replay::SimulateBody;
use shared::dispatch::Simulation;
use shared::history::{DispatchEntryView, ExplainedEntryView, RouterStats};
use shared::page::ListView;
use shared::types::RouterId;

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
