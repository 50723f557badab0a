//! `GET /audit-events` and `GET /audit-events/{id}` (BEHAVIOR 18): the account's change log,
//! newest first, by target and window, with BEHAVIOR 11's list rules.

use crate::clock::Clock;
use crate::error::DomainError;
use crate::history::stats::parse_instant;
use crate::model::audit::{
    AuditAction, AuditActor, AuditChange, AuditEvent, AuditFilter, AuditTarget, TargetType,
};
use crate::page::cursor::{CursorKey, ListRequest};
use crate::page::ListView;
use crate::store::{audit_position, AuditStore};
use crate::timefmt::Timestamp;
use crate::types::ids::AccountId;
use serde::Serialize;
use std::sync::Arc;
use utoipa::ToSchema;
use uuid::Uuid;

/// The 404 of an unknown event.
pub const AUDIT_EVENT_NOT_FOUND: &str = "Audit event not found";

/// One audit event as the API shows it: `{id, at, actor, action, target, changes}`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = AuditEvent, example = json!({
    "id": "01936b2a-7c00-7a00-8000-0000000000e1",
    "at": "2026-11-20T16:42:07.123Z",
    "actor": {"client_id": "northwind-integration", "sub": "northwind-integration"},
    "action": "member.updated",
    "target": {"type": "member", "id": "7d3f1c2a-0000-4000-8000-000000000001"},
    "changes": [{"path": "office_status", "before": true, "after": false}]
}))]
pub struct AuditEventView {
    /// Event id (UUID).
    #[schema(value_type = String, format = Uuid)]
    pub id: Uuid,
    /// When the change was made (RFC 3339 UTC, milliseconds).
    pub at: Timestamp,
    /// Who made it (from the token).
    pub actor: AuditActor,
    /// What was done, e.g. `router.published`.
    pub action: AuditAction,
    /// To what.
    pub target: AuditTarget,
    /// One entry per changed key (their order is not part of the contract); empty for a router
    /// action that changed nothing and for `webhook.secret_rotated`. A value too large to keep
    /// is `{"omitted": "too large", "json_bytes": n, "sha256": "<hex>"}`.
    pub changes: Vec<AuditChange>,
}

impl AuditEventView {
    /// The view of `event`.
    pub fn new(event: &AuditEvent) -> Self {
        Self {
            id: event.id,
            at: Timestamp(event.at),
            actor: event.actor.clone(),
            action: event.action,
            target: event.target.clone(),
            changes: event.changes.clone(),
        }
    }
}

/// The filters of `GET /audit-events`, checked: `target_type` with `target_id` (both or
/// neither), `from` and `to` (RFC 3339 instants, `from < to`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditQuery {
    /// The store's filter.
    pub filter: AuditFilter,
    /// The list's name, which a cursor is bound to (the filters included).
    list_name: String,
}

fn invalid(name: &str, why: &str) -> DomainError {
    DomainError::bad_field(name, format!("Invalid query parameter {name}: {why}"))
}

impl AuditQuery {
    /// Checks the decoded filter parameters (the API layer decodes the query string).
    ///
    /// Errors (BEHAVIOR 18): 400 naming `target_id` (or `target_type`) when only the other is
    /// given; 400 naming `target_type` for an unknown type; 400 naming `target_id` for an id
    /// that is not a UUID; 400 naming `from` or `to` for a value that is not an RFC 3339
    /// instant; 400 naming `from` unless `from < to`.
    pub fn parse(
        target_type: Option<&str>, target_id: Option<&str>, from: Option<&str>, to: Option<&str>,
    ) -> Result<Self, DomainError> {
        let target = match (target_type, target_id) {
            (None, None) => None,
            (Some(_), None) => return Err(invalid("target_id", "required with target_type")),
            (None, Some(_)) => return Err(invalid("target_type", "required with target_id")),
            (Some(t), Some(id)) => {
                let t = TargetType::parse(t).ok_or_else(|| {
                    invalid(
                        "target_type",
                        "must be one of router, member, holiday_calendar, webhook",
                    )
                })?;
                let id = Uuid::try_parse(id).map_err(|_| invalid("target_id", "must be a UUID"))?;
                Some(AuditTarget::new(t, id))
            }
        };
        let instant = |name: &str, text: Option<&str>| {
            text.map(|t| {
                parse_instant(t).ok_or_else(|| invalid(name, "must be an RFC 3339 instant"))
            })
            .transpose()
        };
        let (from, to) = (instant("from", from)?, instant("to", to)?);
        if let (Some(f), Some(t)) = (from, to) {
            if f >= t {
                return Err(invalid("from", "must be before to"));
            }
        }
        let list_name = format!(
            "audit-events:{}:{}:{}:{}",
            target.as_ref().map_or("", |t| t.target_type.as_str()),
            target
                .as_ref()
                .map_or_else(String::new, |t| t.id.to_string()),
            from.map(|f| f.timestamp_nanos_opt().unwrap_or(0))
                .unwrap_or(0),
            to.map(|t| t.timestamp_nanos_opt().unwrap_or(0))
                .unwrap_or(0),
        );
        Ok(Self {
            filter: AuditFilter { target, from, to },
            list_name,
        })
    }
}

/// The change log's reads: `AuditService::new(store, clock)` reads `store` and leaves out what
/// has expired at `clock`'s time.
#[derive(derive_more::Constructor)]
pub struct AuditService {
    store: Arc<dyn AuditStore>,
    clock: Arc<dyn Clock>,
}

impl AuditService {
    /// `GET /audit-events`: the account's events within `query`, newest first (`at`, then
    /// id), BEHAVIOR 11's list rules (a cursor opens only for the same filters).
    ///
    /// Errors: 400 naming `after` for a cursor this list did not issue.
    pub async fn list(
        &self, account_id: AccountId, query: &AuditQuery, request: &ListRequest,
        cursors: &CursorKey,
    ) -> Result<ListView<AuditEventView>, DomainError> {
        let (list, page) = request.open_unfiltered(cursors, account_id, &query.list_name)?;
        let mut listed = self
            .store
            .list_audit_events(account_id, &query.filter, &page)
            .await?;
        let now = self.clock.now();
        listed.items.retain(|e| e.expires_at > now);
        Ok(cursors.answer(&list, &page, listed, AuditEventView::new, audit_position))
    }

    /// `GET /audit-events/{id}`.
    ///
    /// Errors: 404 `Audit event not found` (an id that is not a UUID, another account's, or
    /// expired).
    pub async fn get(
        &self, account_id: AccountId, id: &str,
    ) -> Result<AuditEventView, DomainError> {
        let not_found = || DomainError::not_found(AUDIT_EVENT_NOT_FOUND);
        let id = Uuid::try_parse(id).map_err(|_| not_found())?;
        let now = self.clock.now();
        self.store
            .get_audit_event(account_id, id)
            .await?
            .filter(|e| e.expires_at > now)
            .map(|e| AuditEventView::new(&e))
            .ok_or_else(not_found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_filters_go_in_pairs_and_name_what_is_missing_or_unknown() {
        let field = |r: Result<AuditQuery, DomainError>| r.unwrap_err().field().map(str::to_string);
        assert_eq!(
            field(AuditQuery::parse(Some("member"), None, None, None)).as_deref(),
            Some("target_id")
        );
        assert_eq!(
            field(AuditQuery::parse(None, Some("x"), None, None)).as_deref(),
            Some("target_type")
        );
        assert_eq!(
            field(AuditQuery::parse(Some("team"), Some("x"), None, None)).as_deref(),
            Some("target_type")
        );
        assert_eq!(
            field(AuditQuery::parse(
                Some("member"),
                Some("not-a-uuid"),
                None,
                None
            ))
            .as_deref(),
            Some("target_id")
        );
        let id = Uuid::new_v4().to_string();
        let q = AuditQuery::parse(Some("webhook"), Some(&id), None, None).unwrap();
        assert_eq!(q.filter.target.unwrap().target_type, TargetType::Webhook);
    }

    #[test]
    fn the_window_is_two_rfc3339_instants_from_before_to() {
        let field = |r: Result<AuditQuery, DomainError>| r.unwrap_err().field().map(str::to_string);
        let (a, b) = ("2026-01-01T00:00:00Z", "2026-01-02T00:00:00+01:00");
        assert!(AuditQuery::parse(None, None, Some(a), Some(b)).is_ok());
        assert_eq!(
            field(AuditQuery::parse(None, None, Some(b), Some(a))).as_deref(),
            Some("from")
        );
        assert_eq!(
            field(AuditQuery::parse(None, None, Some(a), Some(a))).as_deref(),
            Some("from")
        );
        assert_eq!(
            field(AuditQuery::parse(None, None, Some("yesterday"), None)).as_deref(),
            Some("from")
        );
        assert_eq!(
            field(AuditQuery::parse(None, None, None, Some("2026-13-01"))).as_deref(),
            Some("to")
        );
        let only_from = AuditQuery::parse(None, None, Some(a), None).unwrap();
        assert!(only_from.filter.to.is_none() && only_from.filter.from.is_some());
        assert_ne!(
            AuditQuery::parse(None, None, Some(a), None)
                .unwrap()
                .list_name,
            AuditQuery::parse(None, None, None, None).unwrap().list_name,
            "a cursor belongs to its filters"
        );
    }
}
