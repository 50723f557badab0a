//! Router management through the API (BEHAVIOR 15): create, the draft, publish and unpublish,
//! revisions and restore, archive.
//!
//! Checks run in BEHAVIOR 2's order with section 15's additions: 400 (path) -> 404 -> 409
//! (`Router is archived`) -> 412 / 428 (`If-Match`) -> 400 (body). Every write is one store
//! write conditional on what was read (the router's version, the draft's tag, the rotation
//! state's version); one that loses a race reads again and decides again until the retry
//! deadline ([`crate::store::retry`]), then answers 409. A publish reads in one round (router,
//! draft, rotation state at once) and writes in a second.
//!
//! This file holds the operations (read, decide, write, in rounds) and the checks between
//! them; `revisions.rs` the revision list and the restore; `writes.rs` the writes they store,
//! built without a store; `body.rs` the parsing of what a request brings.

mod body;
mod revisions;
mod writes;

pub use body::parse_revision_number;
pub use writes::rotation_after;

use super::config::{self, ConfigBody};
use super::revision::ensure_first_revision;
pub use super::revision::{DRAFT_NOT_FOUND, REVISION_NOT_FOUND};
use super::view::{config_json, DraftView, RouterView};
use crate::audit::diff::ROUTER;
pub use crate::audit::Actor;
use crate::calendars::read_holiday_calendars;
use crate::clock::Clock;
use crate::error::DomainError;
use crate::fields::cache::CatalogueCache;
use crate::idempotency::{IdempotencyClaim, IdempotencyCompletion};
use crate::model::audit::{AuditAction, AuditEvent};
use crate::model::holiday_calendar::CalendarRefs;
use crate::model::member::MemberIdentity;
use crate::model::object_type::ObjectType;
use crate::model::router::{Router, RouterConfig, RouterDraft, RouterRevision, FIRST_REVISION};
use crate::model::router_write::RouterWrite;
use crate::store::retry::Kept;
use crate::store::RouterAdminPorts;
use crate::store::{write_rounds, Backoff, RoundError, StoreError, Turns};
use crate::types::etag::{ETag, IfMatch};
use crate::types::ids::{AccountId, RouterId};
use body::{invalid, parse_body, take_body};
use serde_json::{Map, Value};
use std::sync::Arc;
use writes::{archived, audited, completion, draft_event, publication, published, router_event};

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
        let router = Router::created(
            RouterId::new_v7(),
            actor.account_id,
            object_type,
            now,
            &config,
            FIRST_REVISION,
        );
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
                let write = archived(actor, &router, draft, now);
                let write = audited(actor, AuditAction::RouterArchived, &router, write, now);
                self.write(write, None).await
            })
        })
        .await
        .map_err(RoundError::answer)
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

    /// A draft of `router` by `actor` now ([`writes::draft`]).
    fn new_draft(
        &self, actor: Actor<'_>, router: &Router, based_on: u64, config: RouterConfig,
    ) -> RouterDraft {
        writes::draft(actor, router, based_on, config, self.clock.now())
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

/// A store failure of a write that has no retry loop of its own: a write that kept meeting
/// others until the deadline ([`StoreError::Conflict`]) is the 409 of a router that kept
/// changing (BEHAVIOR 12: never a 500), anything else as usual ([`RoundError::answer`]).
fn kept_changing(e: StoreError) -> DomainError {
    RoundError::Store(e).answer()
}
