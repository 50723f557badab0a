//! The DynamoDB adapter's members ([`MemberStore`]).

use super::cancel::{Part, Precedence};
use super::items;
use super::items::from_item;
use super::query::Query;
use super::request::parse_items;
use super::DynamoStore;
use crate::model::audit::AuditEvent;
use crate::model::holiday_calendar::CalendarRefs;
use crate::model::member::Member;
use crate::store::{
    keys::{self, Key},
    member_position, Listed, MemberStore, Page, StoreResult,
};
use crate::types::ids::{AccountId, MemberId};
use async_trait::async_trait;

#[async_trait]
impl MemberStore for DynamoStore {
    async fn list_members(
        &self, account_id: AccountId, page: &Page,
    ) -> StoreResult<Listed<Member>> {
        let q = Query::listing(keys::members_partition(account_id), page);
        self.list_page(&q, page, member_position).await
    }

    async fn get_member(
        &self, account_id: AccountId, member_id: MemberId,
    ) -> StoreResult<Option<Member>> {
        Ok(self
            .get_as::<Member>(&keys::member(member_id))
            .await?
            .filter(|m| m.account_id == account_id))
    }

    async fn get_members(
        &self, account_id: AccountId, ids: &[MemberId],
    ) -> StoreResult<Vec<Member>> {
        let keys: Vec<Key> = ids.iter().map(|id| keys::member(*id)).collect();
        let mut found = self.batch_get_projected(&keys, false).await?;
        let mut members = Vec::with_capacity(found.len());
        for key in &keys {
            if let Some(item) = found.remove(key) {
                let member: Member = from_item(item)?;
                if member.account_id == account_id {
                    members.push(member);
                }
            }
        }
        Ok(members)
    }

    async fn find_member_by_email(
        &self, account_id: AccountId, email: &str,
    ) -> StoreResult<Option<Member>> {
        // `<email>#` is also a prefix of the sort key of an address that begins with
        // `<email>#` (`a#b@x.example` for `a`): read every member under the prefix and keep the
        // one whose address is exactly `email`, as the embedded store does (issue 13 defect 8).
        let wanted = email.to_lowercase();
        let q = Query::index(keys::GSI2, keys::members_partition(account_id))
            .prefix(keys::email_prefix(&wanted));
        let found: Vec<Member> = parse_items(self.query_all(&q).await?)?;
        Ok(found.into_iter().find(|m| m.email.as_str() == wanted))
    }

    async fn update_member(
        &self, member: &Member, expected_version: u64, calendars: &CalendarRefs,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let (_, item) = items::member(member)?;
        let condition = items::active_at_version(member.account_id, expected_version);
        if calendars.is_empty() && audit.is_none() {
            return self.put_conditional(item, condition).await;
        }
        let mut tx = vec![self.put(item, Some(condition))?];
        let mut parts = vec![Part::Record];
        self.calendar_ref_writes(member.account_id, calendars, &mut tx, &mut parts)?;
        self.audit_write(audit, &mut tx, &mut parts)?;
        self.transact(tx, &parts, Precedence::RecordFirst).await
    }
}
