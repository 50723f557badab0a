//! The routing history and fairness stats (BEHAVIOR 8): every dispatch of an existing router
//! leaves an entry (written by the dispatch engine); this module reads them.
//!
//! - `GET /routers/{routerId}/dispatches`: the router's entries, newest first;
//! - `GET /{type}/{id}/dispatches`: one record's entries from every router of its type;
//! - `GET /routers/{routerId}/stats`: the router's assignments in a window, per member, with
//!   the share the distribution model aims at.
//!
//! Lists follow BEHAVIOR 11 (offset or `after` cursor; a cursor opens only for the list that
//! issued it, the router or record included).

pub mod stats;
pub mod view;

use crate::routers::roster::{read_roster, Named};
use crate::store::HistoryPorts;
pub use stats::StatsWindow;
pub use view::{
    ByReason, DispatchEntryView, ExplainedEntryView, MemberStats, RouterStats, SlaStateView,
};

use crate::clock::Clock;
use crate::error::DomainError;
use crate::model::dispatch::AssignmentReason;
use crate::model::dispatch::DispatchEntry;
use crate::model::object_type::ObjectType;
use crate::model::router::{DistributionModel, Router};
use crate::page::cursor::{CursorKey, ListId, ListRequest};
use crate::page::{ListView, Page, PageRequest};
use crate::store::dispatch_position;
use crate::timefmt::Timestamp;
use crate::types::ids::{AccountId, RecordId, RouterId};
use std::collections::HashMap;
use std::sync::Arc;

/// The 404 of an unknown history entry (BEHAVIOR 18).
pub const DISPATCH_NOT_FOUND: &str = "Dispatch not found";

/// The history read operations: `HistoryService::new(store, clock)` reads from `store` and
/// takes the time (what has expired) from `clock`.
#[derive(derive_more::Constructor)]
pub struct HistoryService {
    store: Arc<dyn HistoryPorts>,
    clock: Arc<dyn Clock>,
}

/// The share of `router`'s assignments that its distribution model aims at for `email`
/// (BEHAVIOR 8 `target_share`; the what-if replay's too, BEHAVIOR 16): a percentage router's
/// percentage / 100, 1 / (pool size) for round robin, `None` for someone outside `pool` (the
/// router's pool in pool order, archived members left out).
pub fn target_share(router: &Router, pool: &[String], email: &str) -> Option<f64> {
    if !pool.iter().any(|p| p == email) {
        return None;
    }
    let percentage = router.settings.as_ref().and_then(|s| s.distribution_model)
        == Some(DistributionModel::Percentage);
    if percentage {
        let weight = router
            .users
            .iter()
            .find(|u| u.email.as_str() == email)
            .and_then(|u| u.percentage)
            .unwrap_or(0.0);
        Some(weight / 100.0)
    } else {
        Some(1.0 / pool.len() as f64)
    }
}

impl HistoryService {
    /// A page of entries as answered: expired entries left out (DynamoDB's TTL deletes them up
    /// to days late; BEHAVIOR 8), at most [`crate::page::MAX_PAGE_DATA_BYTES`] of JSON
    /// (BEHAVIOR 12: a page cut short has fewer than `limit` items and a `next_after`).
    fn answer(
        &self, mut listed: Page<DispatchEntry>, page: &PageRequest, list: &ListId,
        cursors: &CursorKey,
    ) -> ListView<DispatchEntryView> {
        let now = self.clock.now();
        listed.items.retain(|e| e.expires_at > now);
        cursors.answer(
            list,
            page,
            listed,
            DispatchEntryView::new,
            dispatch_position,
        )
    }

    /// `GET /routers/{routerId}/dispatches`: the router's entries (archived router included),
    /// newest first.
    ///
    /// Errors: 404 `Router not found` when the router is not the account's; 400 naming `after`
    /// for a cursor this list did not issue.
    pub async fn router_dispatches(
        &self, account_id: AccountId, router_id: RouterId, request: &ListRequest,
        cursors: &CursorKey,
    ) -> Result<ListView<DispatchEntryView>, DomainError> {
        self.router(account_id, router_id).await?;
        let name = format!("router-dispatches:{router_id}");
        let (list, page) = request.open_unfiltered(cursors, account_id, name)?;
        let listed = self
            .store
            .list_router_dispatches(account_id, router_id, &page)
            .await?;
        Ok(self.answer(listed, &page, &list, cursors))
    }

    /// `GET /routers/{routerId}/dispatches/{entryId}` (BEHAVIOR 18): the router's entry with
    /// the `explanation` of its run. The router and the entry are read at once.
    ///
    /// Errors: 404 `Router not found` when the router is not the account's; 404 `Dispatch not
    /// found` for an entry id that is not a UUID, unknown, of another router, or expired.
    pub async fn router_dispatch(
        &self, account_id: AccountId, router_id: RouterId, entry_id: &str,
    ) -> Result<ExplainedEntryView, DomainError> {
        let entry_id = uuid::Uuid::try_parse(entry_id).ok();
        let (_, explained) = tokio::try_join!(self.router(account_id, router_id), async {
            match entry_id {
                Some(id) => Ok(self
                    .store
                    .get_explained_dispatch(account_id, router_id, id)
                    .await?),
                None => Ok(None),
            }
        })?;
        let now = self.clock.now();
        explained
            .filter(|e| e.entry.expires_at > now)
            .map(|e| ExplainedEntryView::new(&e))
            .ok_or_else(|| DomainError::not_found(DISPATCH_NOT_FOUND))
    }

    /// `GET /{type}/{id}/dispatches`: one record's entries (archived record included) from
    /// every router of its type, newest first.
    ///
    /// Errors: 404 `Record not found` when the record is not the account's; 400 naming `after`
    /// for a cursor this list did not issue.
    pub async fn record_dispatches(
        &self, account_id: AccountId, object_type: ObjectType, record_id: RecordId,
        request: &ListRequest, cursors: &CursorKey,
    ) -> Result<ListView<DispatchEntryView>, DomainError> {
        self.store
            .get_record(account_id, object_type, record_id)
            .await?
            .ok_or_else(|| DomainError::not_found("Record not found"))?;
        let name = format!("record-dispatches:{object_type}:{record_id}");
        let (list, page) = request.open_unfiltered(cursors, account_id, name)?;
        let listed = self
            .store
            .list_record_dispatches(account_id, object_type, record_id, &page)
            .await?;
        Ok(self.answer(listed, &page, &list, cursors))
    }

    /// `GET /routers/{routerId}/stats`: the router's assignments with `dispatched_at` in the
    /// window, per member: its current pool in pool order (users, then team members, without
    /// duplicates and archived members), then anyone else assigned in the window, by e-mail.
    /// Cost: the window's counters (its whole days, hours and minutes x members items) and the
    /// entries of its two partial edge minutes
    /// ([`crate::store::DispatchStore::tally_assignments`]), the pool's members by key and the
    /// account's teams; not the router's volume nor the account's members.
    ///
    /// Errors: 404 `Router not found` when the router is not the account's.
    pub async fn stats(
        &self, account_id: AccountId, router_id: RouterId, window: StatsWindow,
    ) -> Result<RouterStats, DomainError> {
        let router = self.router(account_id, router_id).await?;
        // The counts and the pool depend only on the router: read together.
        let (tally, pool) = tokio::try_join!(
            async {
                self.store
                    .tally_assignments(account_id, router_id, window.from, window.to)
                    .await
                    .map_err(DomainError::from)
            },
            self.pool(account_id, &router)
        )?;
        let mut by_member: HashMap<String, ByReason> = HashMap::new();
        let mut total = 0u64;
        for t in &tally {
            let counts = by_member.entry(t.user.clone()).or_default();
            match t.reason {
                AssignmentReason::Rotation => counts.rotation += t.count,
                AssignmentReason::AccountMatching => counts.account_matching += t.count,
                AssignmentReason::Backup => counts.backup += t.count,
                AssignmentReason::SlaReassignment => counts.sla_reassignment += t.count,
            }
            total += t.count;
        }
        let target = |email: &str| target_share(&router, &pool, email);
        let mut others: Vec<String> = by_member
            .keys()
            .filter(|e| !pool.contains(e))
            .cloned()
            .collect();
        others.sort();
        let members = pool
            .iter()
            .chain(others.iter())
            .map(|email| {
                let by_reason = by_member.get(email).cloned().unwrap_or_default();
                let assigned = by_reason.total();
                MemberStats {
                    user: email.clone(),
                    assigned,
                    share: if total == 0 {
                        0.0
                    } else {
                        assigned as f64 / total as f64
                    },
                    target_share: target(email),
                    by_reason,
                }
            })
            .collect();
        Ok(RouterStats {
            router_id,
            from: Timestamp(window.from),
            to: Timestamp(window.to),
            total,
            members,
        })
    }

    async fn router(&self, account_id: AccountId, id: RouterId) -> Result<Router, DomainError> {
        self.store
            .get_router(account_id, id)
            .await?
            .ok_or_else(|| DomainError::not_found("Router not found"))
    }

    /// The router's current pool without archived members ([`Router::active_pool`]: the rule
    /// dispatch uses, BEHAVIOR 6.11), its members read by key ([`read_roster`]): O(pool).
    async fn pool(
        &self, account_id: AccountId, router: &Router,
    ) -> Result<Vec<String>, DomainError> {
        let teams = if router.teams.is_empty() {
            Vec::new()
        } else {
            self.store.list_teams(account_id).await?
        };
        let roster = read_roster(
            self.store.as_ref(),
            account_id,
            router,
            &teams,
            Named::default(),
        )
        .await?;
        Ok(router
            .active_pool(&teams, &roster.members)
            .into_iter()
            .map(|email| email.as_str().to_string())
            .collect())
    }
}
