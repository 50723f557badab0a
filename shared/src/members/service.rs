//! The member service (spec "Users"; BEHAVIOR 4).

use super::patch::MemberPatch;
use super::view::MemberView;
use crate::audit::diff::MEMBER;
use crate::audit::Actor;
use crate::clock::Clock;
use crate::error::DomainError;
use crate::model::audit::{AuditAction, AuditTarget, TargetType};
use crate::model::holiday_calendar::CalendarRefs;
use crate::model::member::Member;
use crate::page::cursor::{CursorKey, ListRequest};
use crate::page::ListView;
use crate::store::retry::Kept;
use crate::store::MemberPorts;
use crate::store::{member_position, write_rounds, Backoff, RoundError, StoreError, Turns};
use crate::types::ids::{AccountId, MemberId};
use std::sync::Arc;

/// The member operations of one warm instance: `MemberService::new(store, clock)` reads and
/// writes `store` and dates changes with `clock`.
pub struct MemberService {
    store: Arc<dyn MemberPorts>,
    clock: Arc<dyn Clock>,
    /// PATCHes of one member take turns in this instance ([`Turns`]).
    turns: Turns,
}

impl MemberService {
    /// The operations over `store`, dating changes with `clock`.
    pub fn new(store: Arc<dyn MemberPorts>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            turns: Turns::default(),
        }
    }

    /// `GET /users`: `{data, pagination}`, by e-mail; archived members only with
    /// `archived=true`; `after` cursors opened and sealed with `cursors` (BEHAVIOR 11).
    ///
    /// Errors: 400 naming `after` for a cursor this list did not issue.
    pub async fn list(
        &self, account_id: AccountId, request: &ListRequest, cursors: &CursorKey,
    ) -> Result<ListView<MemberView>, DomainError> {
        let (list, page) = request.open(cursors, account_id, "users")?;
        let listed = self.store.list_members(account_id, &page).await?;
        let roles = self.store.list_roles(account_id).await?;
        let view = |m: &Member| MemberView::new(m, &roles);
        Ok(cursors.answer(&list, &page, listed, view, member_position))
    }

    /// `GET /users/{userId}`: the member, archived or not.
    ///
    /// Errors: 404 not a member of this account.
    pub async fn get(
        &self, account_id: AccountId, id: MemberId,
    ) -> Result<MemberView, DomainError> {
        let member = self.find(account_id, id).await?;
        let roles = self.store.list_roles(account_id).await?;
        Ok(MemberView::new(&member, &roles))
    }

    /// `PATCH /users/{userId}` by `actor` with a parsed body; `patch` is handed in as parsed, its
    /// error is reported after 404 and 409 (BEHAVIOR 2). A PATCH that changes a value records
    /// `member.updated` with the changed writable keys in the member's own write (BEHAVIOR 18);
    /// one that changes none records nothing.
    ///
    /// Errors, in order: 404; 409 `Cannot update an archived user`; 400 the body's error;
    /// 400 `Invalid role_id` for a role of no account or another one; 400 an out-of-office range
    /// that runs backwards in the resulting zone; 400 `Invalid holiday_calendar_id` for a
    /// calendar that is not the account's (BEHAVIOR 17); 409 when the member kept changing
    /// until the retry deadline ([`crate::store::retry`]: a PATCH that lost a race reads the
    /// member again and applies again until then).
    pub async fn update(
        &self, actor: Actor<'_>, id: MemberId, patch: Result<MemberPatch, DomainError>,
    ) -> Result<MemberView, DomainError> {
        let account_id = actor.account_id;
        let _turn = self.turns.take(id.to_string()).await;
        let current = self.find(account_id, id).await?;
        if !current.is_active() {
            return Err(archived());
        }
        let patch = patch?;
        let roles = self.store.list_roles(account_id).await?;
        if patch
            .role_ids()
            .any(|role_id| !roles.iter().any(|r| r.id == role_id))
        {
            return Err(DomainError::bad_field("role_id", "Invalid role_id"));
        }
        let (patch, roles) = (&patch, &roles);
        write_rounds(&mut Backoff::new(), current, |Kept(current, _), n| {
            Box::pin(async move {
                if n > 0 {
                    *current = self.find(account_id, id).await?;
                    if !current.is_active() {
                        return Err(archived().into());
                    }
                }
                let mut next = patch.apply_to(current)?;
                let now = self.clock.now();
                next.updated_at = now.max(current.updated_at);
                next.version = current.version + 1;
                // BEHAVIOR 12: the member's item within the size rule of every stored item.
                crate::store::size::check_write(&next)
                    .map_err(|_| DomainError::bad_request(crate::members::patch::USER_TOO_LARGE))?;
                // BEHAVIOR 17: the calendars' reference counts move in the member's own write.
                let calendars =
                    CalendarRefs::moving(current.holiday_calendar_id, next.holiday_calendar_id);
                let view = MemberView::new(&next, roles);
                let changes = MEMBER.changes(
                    Some(&json(&MemberView::new(current, roles))),
                    Some(&json(&view)),
                );
                let event = (!changes.is_empty()).then(|| {
                    let target = AuditTarget::new(TargetType::Member, id);
                    actor.event(AuditAction::MemberUpdated, target, changes, now)
                });
                match self
                    .store
                    .update_member(&next, current.version, &calendars, event.as_ref())
                    .await
                {
                    Ok(()) => Ok(view),
                    Err(StoreError::UnknownHolidayCalendar) => {
                        Err(crate::types::ids::invalid_holiday_calendar_id().into())
                    }
                    Err(e) => Err(e.into()),
                }
            })
        })
        .await
        .map_err(RoundError::answer)
    }

    async fn find(&self, account_id: AccountId, id: MemberId) -> Result<Member, DomainError> {
        self.store
            .get_member(account_id, id)
            .await?
            .ok_or_else(|| DomainError::not_found("User not found"))
    }
}

/// The JSON shape of `view` (the member as the API shows it).
fn json(view: &MemberView) -> serde_json::Value {
    serde_json::to_value(view).unwrap_or(serde_json::Value::Null)
}

fn archived() -> DomainError {
    DomainError::conflict("Cannot update an archived user")
}
