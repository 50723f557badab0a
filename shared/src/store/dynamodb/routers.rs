//! The DynamoDB adapter's routers, drafts and revisions ([`RouterStore`], BEHAVIOR 15), and the
//! account's router count.

use super::cancel::{Part, Precedence};
use super::dispatch::rotation_at_version;
use super::items;
use super::items::{n, s, Expr};
use super::query::{Query, SortCondition};
use super::request::parse_items;
use super::DynamoStore;
use crate::idempotency::IdempotencyCompletion;
use crate::model::audit::AuditEvent;
use crate::model::holiday_calendar::CalendarRefs;
use crate::model::router::{Router, RouterDraft, RouterRevision, FIRST_REVISION};
use crate::model::router_write::{DraftChange, RouterWrite};
use crate::store::dynamodb::keys;
use crate::store::revision_order;
use crate::store::{
    revision_position, router_position, Page, PageRequest, PageStart, RouterStore, StoreError,
    StoreResult,
};
use crate::types::etag::ETag;
use crate::types::ids::{AccountId, RouterId};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};

impl DynamoStore {
    /// The account's router count item's `ADD` of `delta`, conditional on staying below `max`
    /// when given (BEHAVIOR 15: at most 1,000 non-archived routers).
    pub(super) fn router_count_update(
        &self, account_id: AccountId, delta: i64, max: Option<u64>,
    ) -> StoreResult<TransactWriteItem> {
        let mut e = Expr::new("ADD #count :delta SET #type = :type, #account = :account")
            .name("#count", items::COUNT)
            .name("#type", keys::ITEM_TYPE)
            .name("#account", "account_id")
            .value(":delta", AttributeValue::N(delta.to_string()))
            .value(":type", s("router_count"))
            .value(":account", s(account_id.to_string()));
        let condition = max.map(|max| {
            e.values.insert(":max".into(), n(max));
            "attribute_not_exists(#count) OR #count < :max".to_string()
        });
        self.update_item(&keys::router_count(account_id), &e, condition)
    }
}

#[async_trait]
impl RouterStore for DynamoStore {
    async fn list_routers(
        &self, account_id: AccountId, page: &PageRequest,
    ) -> StoreResult<Page<Router>> {
        let q = Query::listing(keys::routers_partition(account_id), page);
        self.list_page(&q, page, router_position).await
    }

    async fn get_router(
        &self, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<Router>> {
        Ok(self
            .find_router(router_id)
            .await?
            .filter(|r| r.account_id == account_id))
    }

    async fn find_router(&self, router_id: RouterId) -> StoreResult<Option<Router>> {
        self.get_as(&keys::router(router_id)).await
    }

    async fn create_router(
        &self, router: &Router, revision: &RouterRevision, max: u64,
        completion: Option<&IdempotencyCompletion>, audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let (_, item) = items::router(router)?;
        let (_, first) = items::router_revision(revision)?;
        let mut tx = vec![
            self.router_count_update(router.account_id, 1, Some(max))?,
            self.put(item, Some(items::absent()))?,
            self.put(first, Some(items::absent()))?,
        ];
        let mut parts = vec![Part::Quota, Part::Record, Part::Other];
        self.completion_write(completion, &mut tx, &mut parts)?;
        self.audit_write(audit, &mut tx, &mut parts)?;
        self.calendar_ref_writes(
            router.account_id,
            &router.calendar_refs(),
            &mut tx,
            &mut parts,
        )?;
        self.transact_under_limit(
            tx,
            &parts,
            &keys::router_count(router.account_id),
            max,
            "routers",
        )
        .await
    }

    async fn get_router_draft(
        &self, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<RouterDraft>> {
        Ok(self
            .get_as::<RouterDraft>(&keys::router_draft(router_id))
            .await?
            .filter(|d| d.account_id == account_id))
    }

    async fn put_router_draft(
        &self, draft: &RouterDraft, replaces: Option<&ETag>, router_version: u64,
        calendars: &CalendarRefs, completion: Option<&IdempotencyCompletion>,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let (_, item) = items::router_draft(draft)?;
        let condition = match replaces {
            Some(etag) => items::draft_tagged(etag),
            None => items::absent(),
        };
        let mut tx = vec![
            self.condition_check(
                &keys::router(draft.router_id),
                items::router_at_version(router_version),
            )?,
            self.put(item, Some(condition))?,
        ];
        let mut parts = vec![Part::Record, Part::Other];
        self.completion_write(completion, &mut tx, &mut parts)?;
        self.calendar_ref_writes(draft.account_id, calendars, &mut tx, &mut parts)?;
        self.audit_write(audit, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn delete_router_draft(
        &self, account_id: AccountId, router_id: RouterId, etag: &ETag, calendars: &CalendarRefs,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let condition = items::draft_tagged(etag)
            .name("#account", "account_id")
            .value(":account", s(account_id.to_string()));
        let condition = Expr {
            text: format!("{} AND #account = :account", condition.text),
            ..condition
        };
        if calendars.is_empty() && audit.is_none() {
            return self
                .delete_conditional(&keys::router_draft(router_id), condition)
                .await;
        }
        let mut tx = vec![self.delete(&keys::router_draft(router_id), condition)?];
        let mut parts = vec![Part::Other];
        self.calendar_ref_writes(account_id, calendars, &mut tx, &mut parts)?;
        self.audit_write(audit, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }

    async fn get_router_revision(
        &self, account_id: AccountId, router_id: RouterId, revision: u64,
    ) -> StoreResult<Option<RouterRevision>> {
        Ok(self
            .get_as::<RouterRevision>(&keys::router_revision(router_id, revision))
            .await?
            .filter(|r| r.account_id == account_id))
    }

    async fn put_first_revision(&self, revision: &RouterRevision) -> StoreResult<bool> {
        let (key, item) = items::router_revision(revision)?;
        match self.put_conditional(item, items::absent()).await {
            Ok(()) => Ok(true),
            // There already, or still absent after meeting transactions until the deadline.
            Err(StoreError::Conflict) => match self.get(&key).await? {
                Some(_) => Ok(false),
                None => Err(StoreError::Conflict),
            },
            Err(e) => Err(e),
        }
    }

    async fn list_router_revisions(
        &self, account_id: AccountId, router_id: RouterId, page: &PageRequest,
    ) -> StoreResult<Page<RouterRevision>> {
        let mut q = Query::table(keys::router(router_id).pk).newest_first();
        q.sk = match &page.start {
            PageStart::Offset(_) => SortCondition::Prefix(keys::REVISION_PREFIX.to_string()),
            // Older than the position: up to the number just below it (a position is a
            // revision number this list issued; the cursor is tamper-evident).
            PageStart::After(after) => match after.as_str().parse::<u64>() {
                Ok(number) if number > 1 => SortCondition::Between(
                    keys::REVISION_PREFIX.to_string(),
                    format!("{}{}", keys::REVISION_PREFIX, revision_order(number - 1)),
                ),
                _ => return Ok(Page::new(Vec::new(), None)),
            },
        };
        let wanted = page.limit.saturating_add(1);
        let items: Vec<RouterRevision> =
            parse_items::<RouterRevision>(self.query_range(&q, page.offset(), wanted).await?)?
                .into_iter()
                .filter(|r| r.account_id == account_id)
                .collect();
        Ok(Page::from_lookahead(items, page.limit, revision_position))
    }

    async fn write_router(&self, w: &RouterWrite) -> StoreResult<()> {
        let (_, item) = items::router(&w.router)?;
        let mut tx = vec![self.put(item, Some(items::router_at_version(w.expected_version)))?];
        let mut parts = vec![Part::Record];
        if let Some(revision) = &w.revision {
            let (_, item) = items::router_revision(revision)?;
            tx.push(self.put(item, Some(items::absent()))?);
            parts.push(Part::Other);
            // Revisions are numbered without gaps: n only while n - 1 is stored (the first
            // publish of a router stored before revisions existed finds no revision 1).
            if revision.revision > FIRST_REVISION {
                let previous = keys::router_revision(w.router.id, revision.revision - 1);
                let stored = Expr::new("attribute_exists(#pk)").name("#pk", keys::PK);
                tx.push(self.condition_check(&previous, stored)?);
                parts.push(Part::Other);
            }
        }
        let draft_key = keys::router_draft(w.router.id);
        match &w.draft {
            DraftChange::Keep => {}
            DraftChange::Publish(etag) => {
                tx.push(self.delete(&draft_key, items::draft_tagged(etag))?);
                parts.push(Part::Other);
            }
            DraftChange::Drop(Some(etag)) => {
                tx.push(self.delete(&draft_key, items::draft_tagged(etag))?);
                parts.push(Part::Other);
            }
            DraftChange::Drop(None) => {
                tx.push(self.condition_check(&draft_key, items::absent())?);
                parts.push(Part::Other);
            }
        }
        if let Some((state, version)) = &w.rotation {
            let (_, item) = items::rotation(w.router.id, state)?;
            tx.push(self.put(item, Some(rotation_at_version(*version)))?);
            parts.push(Part::Rotation);
        }
        if w.archives {
            tx.push(self.router_count_update(w.router.account_id, -1, None)?);
            parts.push(Part::Other);
        }
        self.calendar_ref_writes(w.router.account_id, &w.calendars, &mut tx, &mut parts)?;
        self.completion_write(w.completion.as_ref(), &mut tx, &mut parts)?;
        self.audit_write(w.audit.as_ref(), &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }
}
