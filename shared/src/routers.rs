//! Routers, read-only through the API (spec "Router object", "Routers"; BEHAVIOR 5).

use crate::error::ApiError;
use crate::model::Router;
use crate::store::{Page, Store};
use crate::timefmt::rfc3339_millis;
use serde_json::{json, Value};
use std::sync::Arc;
use uuid::Uuid;

/// The router object of the spec: flat `settings` (every key present, `null` when unset;
/// `trigger` the only object value; `settings: null` for a router without settings),
/// `users: [{email}]`, `teams: [{name}]`. Weights and rotation state are internal and never shown.
pub fn router_json(router: &Router) -> Value {
    let settings = router.settings.as_ref().map(|s| {
        json!({
            "overwrite": s.overwrite,
            "owner_field": s.owner_field,
            "distribution_model": s.distribution_model,
            "default_user": s.default_user,
            "disable_default_assignment": s.disable_default_assignment,
            "ignore_working_hours": s.ignore_working_hours,
            "account_matching": s.account_matching,
            "rotation_type": s.rotation_type,
            "trigger": s.trigger,
        })
    });
    let mut out = json!({
        "id": router.id,
        "name": router.name,
        "object_type": router.object_type,
        "has_integration": router.has_integration,
        "is_published": router.is_published,
        "archived": router.archived_at.map_or(json!(false), |at| json!(rfc3339_millis(at))),
        "created_at": rfc3339_millis(router.created_at),
        "updated_at": rfc3339_millis(router.updated_at),
        "settings": settings,
        "users": router.users.iter().map(|u| json!({"email": u.email})).collect::<Vec<_>>(),
        "teams": router.teams.iter().map(|t| json!({"name": t})).collect::<Vec<_>>(),
    });
    if router.archived_at.is_some() {
        out["archived_by"] = json!(router.archived_by);
    }
    out
}

/// Parses a `routerId` path segment.
///
/// Errors: 400 `Invalid routerId: must be a UUID`.
pub fn parse_router_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw)
        .map_err(|_| ApiError::bad_field("routerId", "Invalid routerId: must be a UUID"))
}

/// The router read operations.
pub struct RouterService {
    store: Arc<dyn Store>,
}

impl RouterService {
    /// A service over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    /// `GET /routers`: `{data, pagination}`, by creation time; archived only with `archived=true`.
    pub async fn list(&self, account_id: Uuid, page: Page) -> Result<Value, ApiError> {
        let routers = self.store.list_routers(account_id, page).await?;
        let data: Vec<Value> = routers.iter().map(router_json).collect();
        Ok(
            json!({"data": data, "pagination": {"limit": page.limit, "offset": page.offset, "count": data.len()}}),
        )
    }

    /// `GET /routers/{routerId}`, archived or not.
    ///
    /// Errors: 400 non-UUID id; 404 not a router of this account.
    pub async fn get(&self, account_id: Uuid, raw_id: &str) -> Result<Value, ApiError> {
        let id = parse_router_id(raw_id)?;
        let router = self
            .store
            .get_router(account_id, id)
            .await?
            .ok_or_else(|| ApiError::not_found("Router not found"))?;
        Ok(router_json(&router))
    }
}
