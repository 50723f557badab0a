//! Handler of the routers function: `GET /routers`, `GET /routers/{routerId}` (spec "Routers"),
//! a router's routing history and fairness stats (BEHAVIOR 8):
//! `GET /routers/{routerId}/dispatches`, `GET /routers/{routerId}/stats`, and router management
//! (BEHAVIOR 15): `POST /routers`, `DELETE /routers/{routerId}`, `GET|PUT|DELETE
//! /routers/{routerId}/draft`, `POST /routers/{routerId}/publish` and `/unpublish`, `GET
//! /routers/{routerId}/revisions[/{revision}]`, `POST
//! /routers/{routerId}/revisions/{revision}/restore`, and the what-if replay (BEHAVIOR 16):
//! `POST /routers/{routerId}/simulate`; and the audit trail of BEHAVIOR 18: one entry with the
//! explanation of its run, `GET /routers/{routerId}/dispatches/{entryId}`, and the change log,
//! `GET /audit-events`, `GET /audit-events/{id}`.
//! Thin: authenticate, scope, parse, call [`shared::routers::RouterService`],
//! [`shared::routers::RouterAdmin`], [`shared::history::HistoryService`],
//! [`shared::dispatch::Replayer`] or [`shared::audit::AuditService`].
//!
//! One module per route group: `routers.rs` (the reads), `manage.rs` (management),
//! `history.rs` (history, stats, replay) and `audit.rs` (the change log), over the state of
//! `state.rs`; this file holds the routes, whose 405 `Allow` values come from the handlers' own methods.

mod audit;
mod history;
mod manage;
mod routers;
mod state;

// The handlers and their OpenAPI descriptions (`__path_<handler>`), for `described_routes!`.
pub use audit::*;
pub use history::*;
pub use manage::*;
pub use routers::*;
pub use state::RoutersState;

use axum::http::Method;
use shared::api::openapi::Description;
use shared::api::{allow_of, empty_id_route, with_own_405};
use shared::auth::Scope;
use shared::deps::{ConfigError, Deps};
use shared::described_routes;
use utoipa_axum::router::OpenApiRouter;

/// The scope each method of `/routers/{routerId}` needs, for its empty-id path's answers.
const ITEM_METHODS: &[(Method, Scope)] =
    &[(Method::GET, Scope::Read), (Method::DELETE, Scope::Delete)];

/// The scope each method of `/audit-events/{id}` needs, for its empty-id path's answers.
const AUDIT_METHODS: &[(Method, Scope)] = &[(Method::GET, Scope::Read)];

/// The routes of the function, stateful (for the local server to merge).
///
/// With [`Description::Full`] the routes carry their OpenAPI description (what `openapi.json` is
/// generated from); with [`Description::RoutesOnly`] the same routes without it (the local
/// server, which serves the committed document).
pub fn api(state: RoutersState, description: Description) -> OpenApiRouter {
    routes(state, description)
}

/// The function's routes, with their OpenAPI description or without it ([`Description`]: the
/// Lambda function never serves it and saves building it at every cold start): one entry per
/// path, naming its handlers. Every path answers 405 to the methods it does not route, with the
/// `Allow` value of its own handlers' methods ([`with_own_405`]).
fn routes(state: RoutersState, description: Description) -> OpenApiRouter {
    let item = with_own_405(described_routes!(description; get, archive));
    let audit_event = with_own_405(described_routes!(description; audit_event));
    // The empty-id paths allow what their item paths do.
    let (item_allow, audit_event_allow) = (allow_of(&item.1), allow_of(&audit_event.1));
    OpenApiRouter::new()
        // Routers and their management (BEHAVIOR 15).
        .routes(with_own_405(described_routes!(description; list, create)))
        .routes(item)
        .routes(with_own_405(
            described_routes!(description; get_draft, put_draft, delete_draft),
        ))
        .routes(with_own_405(described_routes!(description; publish)))
        .routes(with_own_405(described_routes!(description; unpublish)))
        .routes(with_own_405(described_routes!(description; revisions)))
        .routes(with_own_405(described_routes!(description; revision)))
        .routes(with_own_405(described_routes!(description; restore)))
        // History, stats and the what-if replay (BEHAVIOR 8, 16, 18).
        .routes(with_own_405(described_routes!(description; dispatches)))
        .routes(with_own_405(described_routes!(description; stats)))
        .routes(with_own_405(described_routes!(description; simulate)))
        .routes(with_own_405(described_routes!(description; dispatch)))
        // The change log (BEHAVIOR 18).
        .routes(with_own_405(described_routes!(description; audit_events)))
        .routes(audit_event)
        .route(
            "/routers/",
            empty_id_route(item_allow, ITEM_METHODS, "routerId"),
        )
        .route(
            "/audit-events/",
            empty_id_route(audit_event_allow, AUDIT_METHODS, "id"),
        )
        .with_state(state)
}

/// The function's application: its routes, finished ([`shared::api::finish`]).
///
/// Errors: no token verifier configured.
pub fn app(deps: &Deps) -> Result<axum::Router, ConfigError> {
    let (router, _) = routes(RoutersState::new(deps)?, Description::RoutesOnly).split_for_parts();
    Ok(shared::api::finish(router))
}
