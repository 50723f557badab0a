//! Router management through the API (BEHAVIOR 15): create, the draft, publish and unpublish,
//! revisions and restore, archive.
//!
//! Checks run in BEHAVIOR 2's order with section 15's additions: 400 (path) -> 404 -> 409
//! (`Router is archived`) -> 412 / 428 (`If-Match`) -> 400 (body). Every write is one store
//! write conditional on what was read (the router's version, the draft's tag, the rotation
//! state's version); one that loses a race reads again and decides again until the retry
//! deadline ([`crate::store::retry`]), then answers 409. A publish reads in one round (router,
//! draft, rotation state at once) and writes in a second.

use super::config::{self, ConfigBody, ConfigError, SettingsBody, TeamBody, UserBody};
use super::revision::{ensure_first_revision, first_revision_mended};
pub use super::revision::{DRAFT_NOT_FOUND, REVISION_NOT_FOUND};
use super::view::{config_json, router_json, DraftView, RevisionView, RouterView};
use crate::audit::diff::ROUTER;
pub use crate::audit::Actor;
use crate::calendars::read_holiday_calendars;
use crate::clock::Clock;
use crate::error::DomainError;
use crate::fields::cache::CatalogueCache;
use crate::idempotency::{IdempotencyClaim, IdempotencyCompletion, StoredResponse};
use crate::model::audit::{AuditAction, AuditEvent, AuditTarget, TargetType};
use crate::model::dispatch::RotationState;
use crate::model::holiday_calendar::CalendarRefs;
use crate::model::member::MemberIdentity;
use crate::model::object_type::ObjectType;
use crate::model::router::{Router, RouterConfig, RouterDraft, RouterRevision, FIRST_REVISION};
use crate::model::router_write::{DraftChange, RouterWrite};
use crate::page::cursor::{CursorKey, ListRequest};
use crate::page::{ListView, PageRequest, PageStart, Position};
use crate::store::retry::Kept;
use crate::store::RouterAdminPorts;
use crate::store::{
    keys, revision_position, write_rounds, Backoff, Page, RoundError, StoreError, Turns,
};
use crate::types::etag::{ETag, IfMatch};
use crate::types::ids::{AccountId, RouterId};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Most non-archived routers of an account (BEHAVIOR 15).
pub const MAX_ROUTERS: u64 = 1000;
/// 400 when an account has [`MAX_ROUTERS`] already.
pub const ROUTER_LIMIT_REACHED: &str = "Router limit reached";
/// 404 of an unknown router.
pub const ROUTER_NOT_FOUND: &str = "Router not found";
/// 409 of a write to an archived router.
pub const ROUTER_ARCHIVED: &str = "Router is archived";
/// 412 of an `If-Match` that is not the draft's tag (or of any `If-Match` without a draft).
pub const DRAFT_CHANGED: &str = "Draft has changed";
/// 428 of a publish of a draft without `If-Match`.
pub const IF_MATCH_REQUIRED: &str = "If-Match required";
/// 409 of a restore whose revision names a holiday calendar deleted since (BEHAVIOR 17 keeps a
/// calendar only while a live or draft configuration names it, not a past revision).
pub const REVISION_CALENDAR_DELETED: &str =
    "Revision names a holiday calendar that no longer exists";

/// A draft and its tag, for the answer and its `ETag` header.
#[derive(Debug, Clone, PartialEq)]
pub struct Tagged {
    /// The draft.
    pub draft: DraftView,
    /// Its entity tag.
    pub etag: ETag,
}

/// The router management operations.
pub struct RouterAdmin {
    store: Arc<dyn RouterAdminPorts>,
    clock: Arc<dyn Clock>,
    catalogues: Arc<CatalogueCache>,
    /// Writes of one router, and the creates of one account (its router count), take turns
    /// in this instance ([`Turns`]).
    turns: Turns,
}

/// The configuration keys of a create or a draft body (BEHAVIOR 15).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RouterBody {
    name: String,
    #[serde(default)]
    object_type: Option<ObjectType>,
    #[serde(default)]
    has_integration: Option<bool>,
    settings: Option<SettingsBody>,
    users: Vec<UserBody>,
    teams: Vec<TeamBody>,
}

impl RouterAdmin {
    /// The operations over `store`, dating writes with `clock`, reading field catalogues
    /// through `catalogues`.
    pub fn new(
        store: Arc<dyn RouterAdminPorts>, clock: Arc<dyn Clock>, catalogues: Arc<CatalogueCache>,
    ) -> Self {
        Self {
            store,
            clock,
            catalogues,
            turns: Turns::default(),
        }
    }

    /// `POST /routers`: a new unpublished router whose revision 1 is `body`'s configuration;
    /// `claim`'s answer (201) is stored with it.
    ///
    /// Errors: 400 naming the JSON path of the first problem of the body; 400 `Router limit
    /// reached` at [`MAX_ROUTERS`]; 409 when the claim's lease was lost, or when the account's
    /// router count kept changing until the retry deadline.
    pub async fn create(
        &self, actor: Actor<'_>, body: &Map<String, Value>, claim: Option<&IdempotencyClaim>,
    ) -> Result<RouterView, DomainError> {
        let (object_type, body) = parse_body(body, None)?;
        let config = self.validate(actor.account_id, object_type, body).await?;
        let now = self.clock.now();
        let router = Router {
            id: RouterId::new_v7(),
            account_id: actor.account_id,
            name: String::new(),
            object_type,
            has_integration: false,
            is_published: false,
            settings: None,
            users: Vec::new(),
            teams: Vec::new(),
            created_at: now,
            updated_at: now,
            archived_at: None,
            archived_by: None,
            member_ids: Vec::new(),
            revision: FIRST_REVISION,
            version: 0,
        }
        .with_config(&config, FIRST_REVISION);
        let revision = RouterRevision {
            router_id: router.id,
            account_id: router.account_id,
            revision: FIRST_REVISION,
            config,
            published_at: now,
            published_by: actor.sub.to_string(),
        };
        let view = RouterView::new(&router);
        let completion = completion(claim, 201, &view)?;
        // BEHAVIOR 18: every configuration key, before `null`.
        let changes = ROUTER.changes(None, Some(&config_json(&revision.config)));
        let event = router_event(actor, AuditAction::RouterCreated, router.id, changes, now);
        // The account's router count is one item every create and archive moves: a create that
        // lost the race to it writes again (its own items are new, nothing to read again).
        let _turn = self.turns.take(format!("count:{}", actor.account_id)).await;
        let (completion, event, revision, router) = (&completion, &event, &revision, &router);
        write_rounds(&mut Backoff::new(), (), |_, _| {
            Box::pin(async move {
                match self
                    .store
                    .create_router(
                        router,
                        revision,
                        MAX_ROUTERS,
                        completion.as_ref(),
                        Some(event),
                    )
                    .await
                {
                    Ok(()) => Ok(()),
                    Err(StoreError::Rejected(_)) => {
                        Err(DomainError::bad_request(ROUTER_LIMIT_REACHED).into())
                    }
                    Err(StoreError::UnknownHolidayCalendar) => {
                        Err(invalid_router_calendar().into())
                    }
                    Err(e) => Err(e.into()),
                }
            })
        })
        .await
        .map_err(RoundError::answer)?;
        Ok(view)
    }

    /// `GET /routers/{id}/draft`.
    ///
    /// Errors: 404 `Router not found`, 404 `Draft not found`.
    pub async fn draft(&self, account_id: AccountId, id: RouterId) -> Result<Tagged, DomainError> {
        let (router, draft) = tokio::try_join!(
            self.store.get_router(account_id, id),
            self.store.get_router_draft(account_id, id)
        )?;
        let router = router.ok_or_else(|| DomainError::not_found(ROUTER_NOT_FOUND))?;
        let draft = draft.ok_or_else(|| DomainError::not_found(DRAFT_NOT_FOUND))?;
        Ok(tagged(&draft, router.object_type))
    }

    /// `PUT /routers/{id}/draft`: creates the draft (based on the live revision) or replaces it
    /// (keeping its `based_on_revision`) with `body`'s configuration.
    ///
    /// Errors: 404; 409 `Router is archived`; 412 `Draft has changed` when `if_match` does not
    /// hold; then `body`'s own error (a body that is not a JSON object), or 400 naming the JSON
    /// path of the body's first problem.
    pub async fn put_draft(
        &self, actor: Actor<'_>, id: RouterId, if_match: Option<&IfMatch>,
        body: Result<Map<String, Value>, DomainError>,
    ) -> Result<Tagged, DomainError> {
        // The body is parsed and checked once, by the first round that reads the router.
        let parsed: (_, Option<RouterConfig>) = (Some(body), None);
        let _turn = self.turns.take(id.to_string()).await;
        write_rounds(&mut Backoff::new(), parsed, |Kept((body, config), _), _| {
            Box::pin(async move {
                let (router, current) = self.writable_with_draft(actor.account_id, id).await?;
                check_if_match(if_match, current.as_ref())?;
                let config = match config {
                    Some(config) => config.clone(),
                    None => {
                        let body = body
                            .take()
                            .unwrap_or_else(|| Err(DomainError::internal("the body was read")))?;
                        let (_, body) = parse_body(&body, Some(router.object_type))?;
                        let parsed = self
                            .validate(actor.account_id, router.object_type, body)
                            .await?;
                        config.insert(parsed).clone()
                    }
                };
                let based_on = current
                    .as_ref()
                    .map_or(router.revision, |d| d.based_on_revision);
                let draft = self.new_draft(actor, &router, based_on, config);
                let event = draft_event(
                    actor,
                    AuditAction::RouterDraftUpdated,
                    &router,
                    current.as_ref(),
                    &draft.config,
                    draft.updated_at,
                );
                match self
                    .put_draft_over(&router, current.as_ref(), &draft, None, &event)
                    .await
                {
                    Ok(()) => Ok(tagged(&draft, router.object_type)),
                    // The calendar was deleted after the validator read it.
                    Err(StoreError::UnknownHolidayCalendar) => {
                        Err(invalid_router_calendar().into())
                    }
                    Err(e) => Err(e.into()),
                }
            })
        })
        .await
        .map_err(RoundError::answer)
    }

    /// `DELETE /routers/{id}/draft`.
    ///
    /// Errors: 404 `Router not found`; 409 `Router is archived`; 412 `Draft has changed` when
    /// `if_match` does not hold; 404 `Draft not found` without a draft (and without
    /// `If-Match`).
    pub async fn delete_draft(
        &self, actor: Actor<'_>, id: RouterId, if_match: Option<&IfMatch>,
    ) -> Result<(), DomainError> {
        let account_id = actor.account_id;
        let _turn = self.turns.take(id.to_string()).await;
        write_rounds(&mut Backoff::new(), (), |_, _| {
            Box::pin(async move {
                let (router, current) = self.writable_with_draft(account_id, id).await?;
                check_if_match(if_match, current.as_ref())?;
                let current = current.ok_or_else(|| DomainError::not_found(DRAFT_NOT_FOUND))?;
                let calendars = CalendarRefs::change(
                    &router.calendar_refs_with(Some(&current)),
                    &router.calendar_refs_with(None),
                );
                // BEHAVIOR 18: the draft before, compared with no draft (the live configuration).
                let event = draft_event(
                    actor,
                    AuditAction::RouterDraftDeleted,
                    &router,
                    Some(&current),
                    &router.config(),
                    self.clock.now(),
                );
                self.store
                    .delete_router_draft(account_id, id, &current.etag, &calendars, Some(&event))
                    .await?;
                Ok(())
            })
        })
        .await
        .map_err(RoundError::answer)
    }

    /// `POST /routers/{id}/publish`: the draft becomes the next revision, live at once, and
    /// the router is published; without a draft the router is only published. One round of
    /// reads (router, draft, rotation state), one write; `claim`'s answer (200) goes with it.
    ///
    /// Errors: 404; 409 `Router is archived`; with a draft 428 `If-Match required` without
    /// `if_match` and 412 `Draft has changed` when it does not hold; without one 412 for any
    /// `if_match`; then `body`'s error (the operation takes no body).
    pub async fn publish(
        &self, actor: Actor<'_>, id: RouterId, if_match: Option<&IfMatch>,
        body: Result<(), DomainError>, claim: Option<&IdempotencyClaim>,
    ) -> Result<(RouterView, bool), DomainError> {
        // The body is looked at once; a missing revision 1 is mended once.
        let once = (Some(body), false);
        let _turn = self.turns.take(id.to_string()).await;
        write_rounds(&mut Backoff::new(), once, |Kept((body, mended), _), _| {
            Box::pin(async move {
                let (router, draft, rotation) = tokio::try_join!(
                    self.store.get_router(actor.account_id, id),
                    self.store.get_router_draft(actor.account_id, id),
                    self.store.rotation_state(id)
                )?;
                let router = writable(router)?;
                let now = self.clock.now();
                let write = match draft {
                    Some(draft) => {
                        let if_match = if_match.ok_or_else(|| {
                            DomainError::PreconditionRequired(IF_MATCH_REQUIRED.into())
                        })?;
                        if !if_match.passes(Some(&draft.etag)) {
                            return Err(
                                DomainError::PreconditionFailed(DRAFT_CHANGED.into()).into()
                            );
                        }
                        // The write stores revision n only while revision n - 1 exists
                        // ([`RouterStore::write_router`]): no read of revision 1 first.
                        published(actor, &router, draft, &rotation, now)
                    }
                    None if if_match.is_some() => {
                        return Err(DomainError::PreconditionFailed(DRAFT_CHANGED.into()).into())
                    }
                    None if router.is_published => {
                        take_body(body)?;
                        // Nothing changes, and the action still goes on record (BEHAVIOR 18).
                        return Ok(self
                            .unchanged(actor, AuditAction::RouterPublished, &router, claim)
                            .await?);
                    }
                    None => publication(&router, true, now),
                };
                take_body(body)?;
                let first_publish = write
                    .revision
                    .as_ref()
                    .is_some_and(|r| r.revision == FIRST_REVISION + 1);
                let write = audited(actor, AuditAction::RouterPublished, &router, write, now);
                match self.write(write, claim).await {
                    // Revision 1 of a router stored before revisions existed is missing, so its first
                    // publish's condition fails: it is mended (kept before revision 2 replaces its
                    // configuration), then the publish goes again.
                    Err(RoundError::Store(StoreError::Conflict)) if first_publish && !*mended => {
                        *mended = true;
                        ensure_first_revision(self.store.as_ref(), &router)
                            .await
                            .map_err(kept_changing)?;
                        Err(StoreError::Conflict.into())
                    }
                    written => Ok((written?, true)),
                }
            })
        })
        .await
        .map_err(RoundError::answer)
    }

    /// `POST /routers/{id}/unpublish`: dispatch answers `The router is unpublished` from now
    /// on.
    ///
    /// Errors: 404; 409 `Router is archived`; then `body`'s error (the operation takes no
    /// body).
    pub async fn unpublish(
        &self, actor: Actor<'_>, id: RouterId, body: Result<(), DomainError>,
        claim: Option<&IdempotencyClaim>,
    ) -> Result<(RouterView, bool), DomainError> {
        let body = Some(body);
        let _turn = self.turns.take(id.to_string()).await;
        write_rounds(&mut Backoff::new(), body, |Kept(body, _), _| {
            Box::pin(async move {
                let router = writable(self.store.get_router(actor.account_id, id).await?)?;
                take_body(body)?;
                if !router.is_published {
                    // Nothing changes, and the action still goes on record (BEHAVIOR 18).
                    return Ok(self
                        .unchanged(actor, AuditAction::RouterUnpublished, &router, claim)
                        .await?);
                }
                let now = self.clock.now();
                let write = publication(&router, false, now);
                let write = audited(actor, AuditAction::RouterUnpublished, &router, write, now);
                Ok((self.write(write, claim).await?, true))
            })
        })
        .await
        .map_err(RoundError::answer)
    }

    /// `DELETE /routers/{id}`: archives the router and drops its draft; dispatch answers
    /// `Router not found` from now on, and its pending SLA checks end `cancelled` when they
    /// come due (BEHAVIOR 14's check of an archived router). Revisions and history stay.
    ///
    /// Errors: 404 for an unknown or already archived router; 409 when it kept changing until
    /// the retry deadline.
    pub async fn archive(&self, actor: Actor<'_>, id: RouterId) -> Result<RouterView, DomainError> {
        let _turn = self.turns.take(id.to_string()).await;
        write_rounds(&mut Backoff::new(), (), |_, _| {
            Box::pin(async move {
                let (router, draft) = tokio::try_join!(
                    self.store.get_router(actor.account_id, id),
                    self.store.get_router_draft(actor.account_id, id)
                )?;
                let router = router
                    .filter(|r| !r.is_archived())
                    .ok_or_else(|| DomainError::not_found(ROUTER_NOT_FOUND))?;
                let now = self.clock.now();
                let mut next = moved_on(&router, now);
                next.archived_at = Some(now);
                next.archived_by = Some(actor.sub.to_string());
                // BEHAVIOR 17: an archived router names no calendar any more (live or draft).
                let calendars = CalendarRefs::change(
                    &router.calendar_refs_with(draft.as_ref()),
                    &next.calendar_refs_with(None),
                );
                let write = RouterWrite {
                    router: next,
                    expected_version: router.version,
                    revision: None,
                    draft: DraftChange::Drop(draft.map(|d| d.etag)),
                    rotation: None,
                    archives: true,
                    completion: None,
                    calendars,
                    audit: None,
                };
                let write = audited(actor, AuditAction::RouterArchived, &router, write, now);
                self.write(write, None).await
            })
        })
        .await
        .map_err(RoundError::answer)
    }

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
                PageRequest::after(
                    page.limit,
                    Position::new(keys::revision_number(newest + 1)),
                    false,
                )
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

    /// Stores `draft` as `router`'s draft in place of `current` (the draft read with it, if
    /// any), conditional on both as read, with the calendar references the change moves
    /// (BEHAVIOR 17) and `completion`: the one draft write of a `PUT` and a restore.
    ///
    /// Errors: the store's ([`StoreError::Conflict`] when either changed meanwhile,
    /// [`StoreError::UnknownHolidayCalendar`] when the draft names a calendar gone since).
    async fn put_draft_over(
        &self, router: &Router, current: Option<&RouterDraft>, draft: &RouterDraft,
        completion: Option<&IdempotencyCompletion>, event: &AuditEvent,
    ) -> Result<(), StoreError> {
        let calendars = CalendarRefs::change(
            &router.calendar_refs_with(current),
            &router.calendar_refs_with(Some(draft)),
        );
        self.store
            .put_router_draft(
                draft,
                current.map(|d| &d.etag),
                router.version,
                &calendars,
                completion,
                Some(event),
            )
            .await
    }

    /// A router action that changes nothing (a publish of a published router without a draft,
    /// an unpublish of an unpublished one): its event alone, with empty `changes` (BEHAVIOR
    /// 18), and `claim`'s answer (200, the router's view) stored with it.
    ///
    /// Errors: the store's; 409 when the claim's lease was lost.
    async fn unchanged(
        &self, actor: Actor<'_>, action: AuditAction, router: &Router,
        claim: Option<&IdempotencyClaim>,
    ) -> Result<(RouterView, bool), DomainError> {
        let view = RouterView::new(router);
        let completion = completion(claim, 200, &view)?;
        let event = router_event(actor, action, router.id, Vec::new(), self.clock.now());
        self.store
            .append_audit_event(&event, completion.as_ref())
            .await
            .map_err(kept_changing)?;
        Ok((view, true))
    }

    /// The router (404 unknown, 409 archived) and its draft, read at once.
    async fn writable_with_draft(
        &self, account_id: AccountId, id: RouterId,
    ) -> Result<(Router, Option<RouterDraft>), DomainError> {
        let (router, draft) = tokio::try_join!(
            self.store.get_router(account_id, id),
            self.store.get_router_draft(account_id, id)
        )?;
        Ok((writable(router)?, draft))
    }

    fn new_draft(
        &self, actor: Actor<'_>, router: &Router, based_on: u64, config: RouterConfig,
    ) -> RouterDraft {
        RouterDraft {
            router_id: router.id,
            account_id: router.account_id,
            based_on_revision: based_on,
            config,
            updated_at: self.clock.now(),
            updated_by: actor.sub.to_string(),
            etag: ETag::new_random(),
        }
    }

    /// Stores `write` with `claim`'s answer (200, the router's view): the view, or
    /// [`StoreError::Conflict`] when it lost a race (the round reads again: [`write_rounds`]). A publish, an unpublish and an archive gain no calendar
    /// reference (a publish's draft held it already), and a reference released from a calendar
    /// that is gone is left out by the store, so [`StoreError::UnknownHolidayCalendar`] cannot
    /// happen here.
    async fn write(
        &self, mut write: RouterWrite, claim: Option<&IdempotencyClaim>,
    ) -> Result<RouterView, RoundError> {
        let view = RouterView::new(&write.router);
        write.completion = completion(claim, 200, &view)?;
        self.store.write_router(&write).await?;
        Ok(view)
    }

    /// Checks `body` against the account, at a cost bounded by the body's limits
    /// (BEHAVIOR 12): its counts, name and shapes first, before any read ([`config::check_counts`];
    /// 400 without a store request); then the field catalogues and the teams; then the members
    /// it names, by key ([`MemberStore::identify_members`]: its users, its backup user, the
    /// members of the teams it names, and the worked values of an SLA on a `user` field, by
    /// e-mail; such worked values given by id with [`MemberStore::get_members`]): at most
    /// [`config::MAX_NAMED_MEMBERS`] from the body and [`config::MAX_ROSTER_EMAILS`] with the
    /// teams' members, counted before any member is read, whatever the size of the account.
    ///
    /// [`MemberStore::identify_members`]: crate::store::MemberStore::identify_members
    /// [`MemberStore::get_members`]: crate::store::MemberStore::get_members
    async fn validate(
        &self, account_id: AccountId, object_type: ObjectType, body: ConfigBody,
    ) -> Result<RouterConfig, DomainError> {
        config::check_counts(&body).map_err(invalid)?;
        let (catalogues, teams) = tokio::try_join!(
            self.catalogues.get(self.store.as_ref(), account_id),
            self.store.list_teams(account_id)
        )?;
        let catalogue = catalogues.get(object_type);
        let named = config::named_members(&body, catalogue).map_err(invalid)?;
        let named = config::with_team_members(named, &body, &teams).map_err(invalid)?;
        let (mut members, by_id) = tokio::try_join!(
            self.store.identify_members(account_id, &named.emails),
            async {
                match named.ids.is_empty() {
                    true => Ok(Vec::new()),
                    false => self.store.get_members(account_id, &named.ids).await,
                }
            }
        )?;
        for member in &by_id {
            if !members.iter().any(|m| m.id == member.id) {
                members.push(MemberIdentity::from(member));
            }
        }
        // BEHAVIOR 17: a named calendar must be one of the account's (at most 20, one read).
        let names_calendar = body
            .settings
            .as_ref()
            .is_some_and(|s| s.holiday_calendar_id.is_some());
        let holiday_calendars: Vec<_> = if names_calendar {
            read_holiday_calendars(self.store.as_ref(), account_id, None)
                .await?
                .ids()
                .collect()
        } else {
            Vec::new()
        };
        let account = config::Account {
            members: &members,
            teams: &teams,
            catalogue,
            holiday_calendars: &holiday_calendars,
        };
        config::parse(body, account).map_err(invalid)
    }
}

/// Parses a `{n}` path segment: a positive integer, else `None` (404 `Revision not found`).
pub fn parse_revision_number(n: &str) -> Option<u64> {
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse::<u64>().ok().filter(|n| *n >= FIRST_REVISION)
}

/// The write that makes `router` published or not (`published`) at `now` and changes nothing
/// else: a publish without a draft, an unpublish.
fn publication(
    router: &Router, published: bool, now: chrono::DateTime<chrono::Utc>,
) -> RouterWrite {
    let mut next = moved_on(router, now);
    next.is_published = published;
    RouterWrite {
        router: next,
        expected_version: router.version,
        revision: None,
        draft: DraftChange::Keep,
        rotation: None,
        archives: false,
        completion: None,
        calendars: CalendarRefs::none(),
        audit: None,
    }
}

/// The write of a publish of `draft` on `router` (read with its rotation state `rotation`):
/// the next revision, live at once, published; the rotation state kept as BEHAVIOR 15 says.
fn published(
    actor: Actor<'_>, router: &Router, draft: RouterDraft, rotation: &RotationState,
    now: chrono::DateTime<chrono::Utc>,
) -> RouterWrite {
    let next_number = router.revision + 1;
    let mut next = moved_on(&router.with_config(&draft.config, next_number), now);
    next.is_published = true;
    let rotation = rotation_after(rotation, &router.config(), &draft.config);
    // The draft's calendar reference becomes the live configuration's; the old live one's goes.
    let calendars = CalendarRefs::change(
        &router.calendar_refs_with(Some(&draft)),
        &next.calendar_refs_with(None),
    );
    RouterWrite {
        router: next,
        expected_version: router.version,
        revision: Some(RouterRevision {
            router_id: router.id,
            account_id: router.account_id,
            revision: next_number,
            config: draft.config,
            published_at: now,
            published_by: actor.sub.to_string(),
        }),
        draft: DraftChange::Publish(draft.etag),
        rotation,
        archives: false,
        completion: None,
        calendars,
        audit: None,
    }
}

/// The audit event of a router action (BEHAVIOR 18) on `router_id`.
fn router_event(
    actor: Actor<'_>, action: AuditAction, router_id: RouterId,
    changes: Vec<crate::model::audit::AuditChange>, now: chrono::DateTime<chrono::Utc>,
) -> AuditEvent {
    actor.event(
        action,
        AuditTarget::new(TargetType::Router, router_id),
        changes,
        now,
    )
}

/// `write` with its audit event (BEHAVIOR 18): the router as read (`before`) compared with the
/// router `write` stores, live configuration, publication and archive.
fn audited(
    actor: Actor<'_>, action: AuditAction, before: &Router, mut write: RouterWrite,
    now: chrono::DateTime<chrono::Utc>,
) -> RouterWrite {
    let changes = ROUTER.changes(
        Some(&router_json(before)),
        Some(&router_json(&write.router)),
    );
    write.audit = Some(router_event(actor, action, before.id, changes, now));
    write
}

/// The audit event of a draft write (BEHAVIOR 18): the draft before (`current`, or the live
/// configuration without one) compared with the configuration `after`.
fn draft_event(
    actor: Actor<'_>, action: AuditAction, router: &Router, current: Option<&RouterDraft>,
    after: &RouterConfig, now: chrono::DateTime<chrono::Utc>,
) -> AuditEvent {
    let before = match current {
        Some(draft) => config_json(&draft.config),
        None => config_json(&router.config()),
    };
    let changes = ROUTER.changes(Some(&before), Some(&config_json(after)));
    router_event(actor, action, router.id, changes, now)
}

/// The rotation state after `next` replaces `previous` (BEHAVIOR 15), with the version it
/// replaces, when it changes: round robin keeps its last member; team rotation keeps the state
/// of the teams that remain; a percentage router whose users or percentages changed starts its
/// counts again (N = 0).
pub fn rotation_after(
    state: &RotationState, previous: &RouterConfig, next: &RouterConfig,
) -> Option<(RotationState, u64)> {
    let mut after = state.clone();
    after
        .team_last_member
        .retain(|team, _| next.teams.contains(team));
    if next.restarts_percentage_counts(previous) {
        after.counts.clear();
        after.total = 0;
    }
    if after == *state {
        return None;
    }
    after.version = state.version + 1;
    Some((after, state.version))
}

/// The body check of an operation that takes no body, answered once: after the checks that
/// come before a body's 400 (BEHAVIOR 2).
fn take_body(body: &mut Option<Result<(), DomainError>>) -> Result<(), DomainError> {
    body.take().unwrap_or(Ok(()))
}

/// `router` as its next write stores it: version moved on, `updated_at` now.
fn moved_on(router: &Router, now: chrono::DateTime<chrono::Utc>) -> Router {
    Router {
        version: router.version + 1,
        updated_at: now.max(router.updated_at),
        ..router.clone()
    }
}

/// The router of a write: 404 when unknown, 409 when archived.
fn writable(router: Option<Router>) -> Result<Router, DomainError> {
    let router = router.ok_or_else(|| DomainError::not_found(ROUTER_NOT_FOUND))?;
    if router.is_archived() {
        return Err(DomainError::conflict(ROUTER_ARCHIVED));
    }
    Ok(router)
}

/// 400 `Invalid holiday_calendar_id` naming `settings.holiday_calendar_id` (BEHAVIOR 17): the
/// calendar the configuration names was deleted between the validator's read and the write.
fn invalid_router_calendar() -> DomainError {
    DomainError::bad_field(
        "settings.holiday_calendar_id",
        "Invalid holiday_calendar_id",
    )
}

/// 412 `Draft has changed` when `if_match` is sent and does not hold for `current`.
fn check_if_match(
    if_match: Option<&IfMatch>, current: Option<&RouterDraft>,
) -> Result<(), DomainError> {
    match if_match {
        Some(if_match) if !if_match.passes(current.map(|d| &d.etag)) => {
            Err(DomainError::PreconditionFailed(DRAFT_CHANGED.into()))
        }
        _ => Ok(()),
    }
}

fn tagged(draft: &RouterDraft, object_type: ObjectType) -> Tagged {
    Tagged {
        draft: DraftView::new(draft, object_type),
        etag: draft.etag.clone(),
    }
}

/// `claim`'s completion with the answer `status` and `body`.
fn completion(
    claim: Option<&IdempotencyClaim>, status: u16, body: &impl serde::Serialize,
) -> Result<Option<IdempotencyCompletion>, DomainError> {
    claim
        .map(|claim| {
            Ok(IdempotencyCompletion {
                claim: claim.clone(),
                response: StoredResponse::json(status, body)?,
            })
        })
        .transpose()
}

/// A store failure of a write that has no retry loop of its own: a write that kept meeting
/// others until the deadline ([`StoreError::Conflict`]) is the 409 of a router that kept
/// changing (BEHAVIOR 12: never a 500), anything else as usual ([`RoundError::answer`]).
fn kept_changing(e: StoreError) -> DomainError {
    RoundError::Store(e).answer()
}

/// A configuration problem as a 400 naming its path in `field`.
fn invalid(e: ConfigError) -> DomainError {
    match e.path.is_empty() {
        true => DomainError::bad_request(e.message),
        // BEHAVIOR 17: the same message as a member's (`Invalid holiday_calendar_id`).
        false if e.path == "settings.holiday_calendar_id" => {
            DomainError::bad_field(e.path, e.message)
        }
        false => DomainError::bad_field(e.path.clone(), e.to_string()),
    }
}

/// The configuration of a create (`fixed` `None`: `object_type` required) or a draft (`fixed`
/// the router's type: `object_type` may be sent, and must be it).
///
/// Errors: 400 naming the missing key or the JSON path of the first problem.
fn parse_body(
    body: &Map<String, Value>, fixed: Option<ObjectType>,
) -> Result<(ObjectType, ConfigBody), DomainError> {
    let required: &[&str] = match fixed {
        None => &["name", "object_type", "settings", "users", "teams"],
        Some(_) => &["name", "settings", "users", "teams"],
    };
    if let Some(missing) = required.iter().find(|k| !body.contains_key(**k)) {
        return Err(DomainError::bad_field(
            *missing,
            format!("{missing}: required"),
        ));
    }
    let value = Value::Object(body.clone());
    let parsed: RouterBody = serde_path_to_error::deserialize(&value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        match path.as_str() {
            "." => DomainError::bad_request(message),
            _ => DomainError::bad_field(path.clone(), format!("{path}: {message}")),
        }
    })?;
    let object_type = match (fixed, parsed.object_type) {
        (Some(fixed), Some(sent)) if sent != fixed => {
            return Err(DomainError::bad_field(
                "object_type",
                "object_type: fixed when the router is created",
            ))
        }
        (Some(fixed), _) => fixed,
        (None, Some(sent)) => sent,
        (None, None) => {
            return Err(DomainError::bad_field(
                "object_type",
                "object_type: required",
            ))
        }
    };
    Ok((
        object_type,
        ConfigBody {
            name: parsed.name,
            has_integration: parsed.has_integration.unwrap_or(false),
            settings: parsed.settings,
            users: parsed.users,
            teams: parsed.teams,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::router::RouterUser;
    use crate::types::email::Email;
    use std::collections::BTreeMap;

    fn config(users: &[(&str, Option<f64>)], teams: &[&str], percentage: bool) -> RouterConfig {
        let settings = crate::model::router::RouterSettings {
            overwrite: false,
            owner_field: Some("contact_owner".into()),
            distribution_model: Some(match percentage {
                true => crate::model::router::DistributionModel::Percentage,
                false => crate::model::router::DistributionModel::RoundRobin,
            }),
            default_user: None,
            disable_default_assignment: false,
            ignore_working_hours: false,
            account_matching: false,
            rotation_type: Default::default(),
            trigger: None,
            sla: None,
            holiday_calendar_id: None,
        };
        RouterConfig {
            name: "R".into(),
            has_integration: false,
            settings: Some(settings),
            users: users
                .iter()
                .map(|(e, p)| RouterUser {
                    email: Email::parse(e).unwrap(),
                    percentage: *p,
                })
                .collect(),
            teams: teams.iter().map(|t| t.to_string()).collect(),
            member_ids: vec![],
        }
    }

    fn state() -> RotationState {
        RotationState {
            version: 7,
            last_member: Some("a@x.co".into()),
            last_team: Some("Inbound".into()),
            team_last_member: BTreeMap::from([
                ("Inbound".into(), "a@x.co".into()),
                ("Outbound".into(), "b@x.co".into()),
            ]),
            counts: BTreeMap::from([("a@x.co".into(), 5), ("b@x.co".into(), 5)]),
            total: 10,
        }
    }

    #[test]
    fn a_percentage_router_whose_weights_changed_restarts_its_counts_and_nothing_else_moves() {
        let before = config(&[("a@x.co", Some(50.0)), ("b@x.co", Some(50.0))], &[], true);
        let same = before.clone();
        let reweighted = config(&[("a@x.co", Some(60.0)), ("b@x.co", Some(40.0))], &[], true);
        let grown = config(
            &[
                ("a@x.co", Some(50.0)),
                ("b@x.co", Some(25.0)),
                ("c@x.co", Some(25.0)),
            ],
            &[],
            true,
        );
        let mut only_teams = state();
        only_teams.team_last_member.clear();
        assert_eq!(
            rotation_after(&only_teams, &before, &same),
            None,
            "counts go on"
        );
        for next in [reweighted, grown] {
            let (after, version) = rotation_after(&only_teams, &before, &next).unwrap();
            assert_eq!(version, 7);
            assert_eq!((after.total, after.counts.len(), after.version), (0, 0, 8));
            assert_eq!(after.last_member, only_teams.last_member);
        }
    }

    #[test]
    fn round_robin_keeps_its_last_member_and_team_rotation_the_state_of_teams_that_remain() {
        let before = config(&[], &["Inbound", "Outbound"], false);
        let next = config(&[], &["Inbound"], false);
        let (after, _) = rotation_after(&state(), &before, &next).unwrap();
        assert_eq!(after.last_member.as_deref(), Some("a@x.co"));
        assert_eq!(
            after.team_last_member,
            BTreeMap::from([("Inbound".to_string(), "a@x.co".to_string())])
        );
        assert_eq!(
            (after.total, after.counts.len()),
            (10, 2),
            "not a percentage router"
        );
        let unchanged = config(&[], &["Inbound", "Outbound"], false);
        assert_eq!(rotation_after(&state(), &before, &unchanged), None);
    }

    #[test]
    fn a_revision_number_is_a_positive_integer() {
        assert_eq!(parse_revision_number("1"), Some(1));
        assert_eq!(parse_revision_number("0042"), Some(42));
        for bad in ["0", "-1", "+1", "1.0", "x", "", "99999999999999999999999"] {
            assert_eq!(parse_revision_number(bad), None, "{bad}");
        }
    }
}
