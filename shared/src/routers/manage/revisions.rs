//! The router's revisions through the API (BEHAVIOR 15): the list, one revision, and the
//! restore of one into the draft; a router stored before revisions existed gets its revision 1
//! here when it is first asked for ([`super::super::revision`]).

use super::body::{parse_revision_number, take_body};
use super::writes::{completion, draft_event};
use super::{
    check_if_match, kept_changing, tagged, Actor, RouterAdmin, Tagged, REVISION_CALENDAR_DELETED,
    REVISION_NOT_FOUND, ROUTER_NOT_FOUND,
};
use crate::error::DomainError;
use crate::idempotency::IdempotencyClaim;
use crate::model::audit::AuditAction;
use crate::model::router::{Router, RouterRevision, FIRST_REVISION};
use crate::page::cursor::{CursorKey, ListRequest};
use crate::page::{ListView, PageRequest, PageStart, Position};
use crate::routers::revision::first_revision_mended;
use crate::routers::view::RevisionView;
use crate::store::retry::Kept;
use crate::store::{
    revision_order, revision_position, write_rounds, Backoff, Page, RoundError, StoreError,
};
use crate::types::etag::IfMatch;
use crate::types::ids::{AccountId, RouterId};

impl RouterAdmin {
    /// `GET /routers/{id}/revisions`: newest first, section 11's list rules. A page reads at
    /// most `limit` + 1 revisions: an offset becomes a position (revisions are numbered 1 to
    /// the live one without gaps).
    ///
    /// Errors: 404 `Router not found` (an archived router's revisions stay readable); 400
    /// naming `after` for a cursor this list did not issue.
    pub async fn revisions(
        &self, account_id: AccountId, id: RouterId, request: &ListRequest, cursors: &CursorKey,
    ) -> Result<ListView<RevisionView>, DomainError> {
        let router = self
            .store
            .get_router(account_id, id)
            .await?
            .ok_or_else(|| DomainError::not_found(ROUTER_NOT_FOUND))?;
        let (list, page) =
            request.open_unfiltered(cursors, account_id, format!("router-revisions:{id}"))?;
        let read = match page.start {
            PageStart::Offset(offset) if offset > 0 => {
                let newest = router.revision.saturating_sub(offset as u64);
                // Revisions below `newest + 1`, i.e. from `newest` down.
                PageRequest::after(page.limit, Position::new(revision_order(newest + 1)), false)
            }
            _ => page.clone(),
        };
        let mut listed = self
            .store
            .list_router_revisions(account_id, id, &read)
            .await?;
        // A router always has revisions 1 to its live one: an empty first page is a router
        // stored before revisions existed, whose revision 1 is stored now.
        if listed.items.is_empty() && matches!(read.start, PageStart::Offset(0)) {
            if let Some(first) = first_revision_mended(self.store.as_ref(), &router)
                .await
                .map_err(kept_changing)?
            {
                listed = Page::new(vec![first], None);
            }
        }
        Ok(cursors.answer(&list, &page, listed, RevisionView::new, revision_position))
    }

    /// `GET /routers/{id}/revisions/{n}`.
    ///
    /// Errors: 404 `Router not found`; 404 `Revision not found` (also for an `n` that is not a
    /// positive integer).
    pub async fn revision(
        &self, account_id: AccountId, id: RouterId, n: &str,
    ) -> Result<RevisionView, DomainError> {
        let (_, revision) = self.router_revision(account_id, id, n).await?;
        Ok(RevisionView::new(&revision))
    }

    /// `POST /routers/{id}/revisions/{n}/restore`: the draft becomes revision `n`'s
    /// configuration (`based_on_revision: n`); a rollback is this, then a publish. `claim`'s
    /// answer (200) is stored with the draft.
    ///
    /// Errors: 404 `Router not found` / `Revision not found`; 409 `Router is archived`; 412
    /// `Draft has changed` when `if_match` is sent and does not hold; then `body`'s error (the
    /// operation takes no body).
    pub async fn restore(
        &self, actor: Actor<'_>, id: RouterId, n: &str, if_match: Option<&IfMatch>,
        body: Result<(), DomainError>, claim: Option<&IdempotencyClaim>,
    ) -> Result<Tagged, DomainError> {
        let (_, revision) = self.router_revision(actor.account_id, id, n).await?;
        let body = Some(body);
        let _turn = self.turns.take(id.to_string()).await;
        let revision = &revision;
        write_rounds(&mut Backoff::new(), body, |Kept(body, _), _| {
            Box::pin(async move {
                let (router, current) = self.writable_with_draft(actor.account_id, id).await?;
                check_if_match(if_match, current.as_ref())?;
                take_body(body)?;
                let draft =
                    self.new_draft(actor, &router, revision.revision, revision.config.clone());
                let answer = tagged(&draft, router.object_type);
                let completion = completion(claim, 200, &answer.draft)?;
                let event = draft_event(
                    actor,
                    AuditAction::RouterRestored,
                    &router,
                    current.as_ref(),
                    &draft.config,
                    draft.updated_at,
                );
                match self
                    .put_draft_over(
                        &router,
                        current.as_ref(),
                        &draft,
                        completion.as_ref(),
                        &event,
                    )
                    .await
                {
                    Ok(()) => Ok(answer),
                    // The revision names a holiday calendar deleted since it was published.
                    Err(StoreError::UnknownHolidayCalendar) => {
                        Err(DomainError::conflict(REVISION_CALENDAR_DELETED).into())
                    }
                    Err(e) => Err(e.into()),
                }
            })
        })
        .await
        .map_err(RoundError::answer)
    }

    /// The router (404 when unknown) and revision `n` of it (404 `Revision not found`).
    async fn router_revision(
        &self, account_id: AccountId, id: RouterId, n: &str,
    ) -> Result<(Router, RouterRevision), DomainError> {
        let number = parse_revision_number(n);
        let (router, revision) = tokio::try_join!(self.store.get_router(account_id, id), async {
            match number {
                Some(n) => self.store.get_router_revision(account_id, id, n).await,
                None => Ok(None),
            }
        })?;
        let router = router.ok_or_else(|| DomainError::not_found(ROUTER_NOT_FOUND))?;
        let revision = match revision {
            Some(revision) => revision,
            // Revision 1 of a router stored before revisions existed: stored now.
            None if number == Some(FIRST_REVISION) => {
                first_revision_mended(self.store.as_ref(), &router)
                    .await
                    .map_err(kept_changing)?
                    .ok_or_else(|| DomainError::not_found(REVISION_NOT_FOUND))?
            }
            None => return Err(DomainError::not_found(REVISION_NOT_FOUND)),
        };
        Ok((router, revision))
    }
}
