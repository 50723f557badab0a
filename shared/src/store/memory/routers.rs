//! The embedded store's routers, drafts and revisions ([`RouterStore`], BEHAVIOR 15).

use super::{read_page, MemoryStore, State};
use crate::idempotency::IdempotencyCompletion;
use crate::model::audit::AuditEvent;
use crate::model::holiday_calendar::CalendarRefs;
use crate::model::router::{Router, RouterDraft, RouterRevision, FIRST_REVISION};
use crate::model::router_write::{DraftChange, RouterWrite};
use crate::store::{
    revision_position, router_position, Page, PageRequest, PageStart, RouterStore, StoreError,
    StoreResult,
};
use crate::types::etag::ETag;
use crate::types::ids::{AccountId, RouterId};
use async_trait::async_trait;

impl State {
    /// The number of non-archived routers of `account_id` (its active list).
    pub(super) fn active_routers(&self, account_id: AccountId) -> u64 {
        self.router_lists
            .get(&account_id)
            .map_or(0, |l| l.active.len() as u64)
    }

    /// Whether `router_id`'s router is stored at `version`.
    pub(super) fn router_at(&self, router_id: RouterId, version: u64) -> bool {
        self.routers
            .get(&router_id)
            .is_some_and(|r| r.version == version)
    }

    /// Stores `router` and indexes it in its list.
    pub(super) fn put_router(&mut self, router: Router) {
        let old = self.routers.get(&router.id).map(router_position);
        self.router_lists.entry(router.account_id).or_default().put(
            old,
            router_position(&router),
            router.archived_at.is_none(),
            router.id,
        );
        self.routers.insert(router.id, router);
    }
}

#[async_trait]
impl RouterStore for MemoryStore {
    async fn list_routers(
        &self, account_id: AccountId, page: &PageRequest,
    ) -> StoreResult<Page<Router>> {
        let state = self.lock();
        Ok(read_page(state.router_lists.get(&account_id), page, |id| {
            state.routers.get(id)
        }))
    }

    async fn get_router(
        &self, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<Router>> {
        Ok(self
            .lock()
            .routers
            .get(&router_id)
            .filter(|r| r.account_id == account_id)
            .cloned())
    }

    async fn find_router(&self, router_id: RouterId) -> StoreResult<Option<Router>> {
        Ok(self.lock().routers.get(&router_id).cloned())
    }

    async fn create_router(
        &self, router: &Router, revision: &RouterRevision, max: u64,
        completion: Option<&IdempotencyCompletion>, audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if completion.is_some_and(|c| !state.holds_lease(&c.claim)) {
            return Err(StoreError::LeaseLost);
        }
        if state.active_routers(router.account_id) >= max {
            return Err(StoreError::Rejected(format!(
                "the account has {max} routers already"
            )));
        }
        if state.routers.contains_key(&router.id) {
            return Err(StoreError::Conflict);
        }
        state.check_audit(audit)?;
        let refs = router.calendar_refs();
        state.check_calendar_refs(router.account_id, &refs)?;
        state.apply_calendar_refs(router.account_id, &refs);
        state.put_audit(audit);
        state.put_router(router.clone());
        state
            .revisions
            .entry(router.id)
            .or_default()
            .insert(revision.revision, revision.clone());
        if let Some(c) = completion {
            state.complete_request(c);
        }
        Ok(())
    }

    async fn get_router_draft(
        &self, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<RouterDraft>> {
        Ok(self
            .lock()
            .drafts
            .get(&router_id)
            .filter(|d| d.account_id == account_id)
            .cloned())
    }

    async fn put_router_draft(
        &self, draft: &RouterDraft, replaces: Option<&ETag>, router_version: u64,
        calendars: &CalendarRefs, completion: Option<&IdempotencyCompletion>,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if completion.is_some_and(|c| !state.holds_lease(&c.claim)) {
            return Err(StoreError::LeaseLost);
        }
        let current = state.drafts.get(&draft.router_id).map(|d| &d.etag);
        if current != replaces || !state.router_at(draft.router_id, router_version) {
            return Err(StoreError::Conflict);
        }
        state.check_audit(audit)?;
        state.check_calendar_refs(draft.account_id, calendars)?;
        state.apply_calendar_refs(draft.account_id, calendars);
        state.put_audit(audit);
        state.drafts.insert(draft.router_id, draft.clone());
        if let Some(c) = completion {
            state.complete_request(c);
        }
        Ok(())
    }

    async fn delete_router_draft(
        &self, account_id: AccountId, router_id: RouterId, etag: &ETag, calendars: &CalendarRefs,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        match state.drafts.get(&router_id) {
            Some(d) if d.account_id == account_id && &d.etag == etag => {
                state.check_audit(audit)?;
                state.check_calendar_refs(account_id, calendars)?;
                state.apply_calendar_refs(account_id, calendars);
                state.put_audit(audit);
                state.drafts.remove(&router_id);
                Ok(())
            }
            _ => Err(StoreError::Conflict),
        }
    }

    async fn get_router_revision(
        &self, account_id: AccountId, router_id: RouterId, revision: u64,
    ) -> StoreResult<Option<RouterRevision>> {
        Ok(self
            .lock()
            .revisions
            .get(&router_id)
            .and_then(|r| r.get(&revision))
            .filter(|r| r.account_id == account_id)
            .cloned())
    }

    async fn put_first_revision(&self, revision: &RouterRevision) -> StoreResult<bool> {
        let mut state = self.lock();
        let revisions = state.revisions.entry(revision.router_id).or_default();
        if revisions.contains_key(&revision.revision) {
            return Ok(false);
        }
        revisions.insert(revision.revision, revision.clone());
        Ok(true)
    }

    async fn list_router_revisions(
        &self, account_id: AccountId, router_id: RouterId, page: &PageRequest,
    ) -> StoreResult<Page<RouterRevision>> {
        let state = self.lock();
        let Some(revisions) = state.revisions.get(&router_id) else {
            return Ok(Page::new(Vec::new(), None));
        };
        let newest_first = revisions
            .values()
            .rev()
            .filter(|r| r.account_id == account_id);
        let wanted = page.limit.saturating_add(1);
        let items: Vec<RouterRevision> = match &page.start {
            PageStart::Offset(offset) => newest_first.skip(*offset).take(wanted).cloned().collect(),
            PageStart::After(after) => newest_first
                .filter(|r| revision_position(r).as_str() < after.as_str())
                .take(wanted)
                .cloned()
                .collect(),
        };
        Ok(Page::from_lookahead(items, page.limit, revision_position))
    }

    async fn write_router(&self, w: &RouterWrite) -> StoreResult<()> {
        let mut state = self.lock();
        if w.completion
            .as_ref()
            .is_some_and(|c| !state.holds_lease(&c.claim))
        {
            return Err(StoreError::LeaseLost);
        }
        let router_id = w.router.id;
        let router_ok = state.router_at(router_id, w.expected_version);
        // Revisions are numbered without gaps: n only while n - 1 is stored.
        let revision_ok = w.revision.as_ref().is_none_or(|r| {
            let stored = state.revisions.get(&router_id);
            stored.is_none_or(|stored| !stored.contains_key(&r.revision))
                && (r.revision <= FIRST_REVISION
                    || stored.is_some_and(|stored| stored.contains_key(&(r.revision - 1))))
        });
        let draft_ok = match &w.draft {
            DraftChange::Publish(etag) => state
                .drafts
                .get(&router_id)
                .is_some_and(|d| &d.etag == etag),
            DraftChange::Drop(read) => {
                state.drafts.get(&router_id).map(|d| &d.etag) == read.as_ref()
            }
            DraftChange::Keep => true,
        };
        let rotation_ok = w.rotation.as_ref().is_none_or(|(_, version)| {
            state.rotation.get(&router_id).map_or(0, |r| r.version) == *version
        });
        if !(router_ok && revision_ok && draft_ok && rotation_ok) {
            return Err(StoreError::Conflict);
        }
        let account_id = w.router.account_id;
        state.check_audit(w.audit.as_ref())?;
        state.check_calendar_refs(account_id, &w.calendars)?;
        state.apply_calendar_refs(account_id, &w.calendars);
        state.put_audit(w.audit.as_ref());
        state.put_router(w.router.clone());
        if let Some(revision) = &w.revision {
            state
                .revisions
                .entry(router_id)
                .or_default()
                .insert(revision.revision, revision.clone());
        }
        if !matches!(w.draft, DraftChange::Keep) {
            state.drafts.remove(&router_id);
        }
        if let Some((rotation, _)) = &w.rotation {
            state.rotation.insert(router_id, rotation.clone());
        }
        if let Some(c) = &w.completion {
            state.complete_request(c);
        }
        Ok(())
    }
}
