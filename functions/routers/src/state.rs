//! What the routers function's handlers share: their state, built once per cold start, and the
//! type of their JSON answers.

use axum::extract::FromRef;
use shared::api::idempotency::IdempotentRequests;
use shared::api::{ApiError, Json};
use shared::audit::AuditService;
use shared::auth::TokenVerifier;
use shared::clock::Clock;
use shared::deps::{ConfigError, Deps};
use shared::dispatch::Replayer;
use shared::history::HistoryService;
use shared::page::cursor::CursorKeySource;
use shared::routers::{RouterAdmin, RouterService};
use std::sync::Arc;

/// What the handler needs, built once per cold start.
#[derive(Clone, FromRef)]
pub struct RoutersState {
    /// The router read operations.
    pub routers: Arc<RouterService>,
    /// Bearer-token verification.
    pub verifier: Arc<TokenVerifier>,
    /// Signs and opens the lists' `after` cursors (BEHAVIOR 11).
    pub cursors: Arc<CursorKeySource>,
    /// The routing history and stats (BEHAVIOR 8).
    pub history: Arc<HistoryService>,
    /// The current time (the stats' default window).
    pub clock: Arc<dyn Clock>,
    /// Router management (BEHAVIOR 15).
    pub admin: Arc<RouterAdmin>,
    /// `Idempotency-Key` handling (BEHAVIOR 10) of create, publish, unpublish and restore.
    pub idempotency: Arc<IdempotentRequests>,
    /// The what-if replay (BEHAVIOR 16).
    pub replayer: Arc<Replayer>,
    /// The change log (BEHAVIOR 18).
    pub audit: Arc<AuditService>,
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
            history: Arc::new(HistoryService::new(deps.store.clone(), deps.clock.clone())),
            clock: deps.clock.clone(),
            admin: Arc::new(RouterAdmin::new(
                deps.store.clone(),
                deps.clock.clone(),
                deps.catalogues.clone(),
            )),
            idempotency: Arc::new(IdempotentRequests::new(
                deps.store.clone(),
                deps.clock.clone(),
            )),
            replayer: Arc::new(Replayer::new(
                deps.store.clone(),
                deps.clock.clone(),
                deps.catalogues.clone(),
            )),
            audit: Arc::new(AuditService::new(deps.store.clone(), deps.clock.clone())),
        })
    }
}

/// A handler's JSON answer.
pub(crate) type Answer<T> = Result<Json<T>, ApiError>;
