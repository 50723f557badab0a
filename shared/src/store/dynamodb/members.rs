//! The DynamoDB adapter's members ([`MemberStore`]).

use super::cancel::{Part, Precedence};
use super::items;
use super::items::from_item;
use super::items::Item;
use super::query::Query;
use super::request::parse_items;
use super::{DynamoStore, MAX_TRANSACTION_ITEMS};
use crate::model::audit::AuditEvent;
use crate::model::holiday_calendar::CalendarRefs;
use crate::model::member::{Member, MemberIdentity};
use crate::store::dynamodb::keys::{self, Key};
use crate::store::{member_position, MemberStore, Page, PageRequest, StoreResult};
use crate::types::email::Email;
use crate::types::ids::{AccountId, MemberId};
use async_trait::async_trait;
use std::collections::HashSet;

/// Requests sent at once by [`MemberStore::identify_members`] (its `BatchGetItem`s, and its
/// index queries on a table without member e-mail items).
const LOOKUPS_AT_ONCE: usize = 8;

impl DynamoStore {
    /// Writes the member e-mail items ([`items::member_email`]) that `account_id`'s members lack,
    /// then the account's marker ([`keys::member_emails_complete`]): provisioning's backfill of
    /// a table written before these items existed. Nothing to do once the
    /// marker is there (one `GetItem`); else one `Query` of the account's members on the e-mail
    /// index, `BatchGetItem`s of their items, and the missing ones written in transactions of
    /// 100 (unconditional: an item holds what never changes, so a concurrent writer writes the
    /// same). Members provisioned from now on get theirs in their own transaction, so an
    /// account that this provisioning created (`fresh`) only gets its marker.
    ///
    /// Errors: the SDK's.
    pub(super) async fn backfill_member_emails(
        &self, account_id: AccountId, fresh: bool,
    ) -> StoreResult<()> {
        let (marker, marker_item) = items::member_emails_complete(account_id);
        if fresh {
            let put = self.put(marker_item, None)?;
            return self
                .transact(vec![put], &[Part::Other], Precedence::RecordFirst)
                .await;
        }
        if self.get(&marker).await?.is_some() {
            return Ok(());
        }
        let q = Query::index(keys::GSI2, keys::members_partition(account_id));
        let members: Vec<Member> = parse_items(self.query_all(&q).await?)?;
        let lookups: Vec<(Key, Item)> = members
            .iter()
            .map(items::member_email)
            .collect::<StoreResult<_>>()?;
        let wanted: Vec<Key> = lookups.iter().map(|(k, _)| k.clone()).collect();
        let present = self.batch_get(&wanted).await?;
        let missing: Vec<Item> = lookups
            .into_iter()
            .filter(|(k, _)| !present.contains_key(k))
            .map(|(_, item)| item)
            .collect();
        for chunk in missing.chunks(MAX_TRANSACTION_ITEMS) {
            let puts = chunk
                .iter()
                .map(|item| self.put(item.clone(), None))
                .collect::<StoreResult<Vec<_>>>()?;
            let parts = vec![Part::Other; puts.len()];
            self.transact(puts, &parts, Precedence::RecordFirst).await?;
        }
        let put = self.put(marker_item, None)?;
        self.transact(vec![put], &[Part::Other], Precedence::RecordFirst)
            .await
    }
}

#[async_trait]
impl MemberStore for DynamoStore {
    async fn list_members(
        &self, account_id: AccountId, page: &PageRequest,
    ) -> StoreResult<Page<Member>> {
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
        // one whose address is exactly `email`, as the embedded store does.
        let wanted = email.to_lowercase();
        let q = Query::index(keys::GSI2, keys::members_partition(account_id))
            .prefix(keys::email_prefix(&wanted));
        let found: Vec<Member> = parse_items(self.query_all(&q).await?)?;
        Ok(found.into_iter().find(|m| m.email.as_str() == wanted))
    }

    async fn identify_members(
        &self, account_id: AccountId, emails: &[Email],
    ) -> StoreResult<Vec<MemberIdentity>> {
        if emails.is_empty() {
            return Ok(Vec::new());
        }
        // The e-mails' items and the account's marker, by key: ceil((n + 1) / 100) requests.
        let marker = keys::member_emails_complete(account_id);
        let mut wanted: Vec<Key> = emails
            .iter()
            .map(|e| keys::member_email(account_id, e))
            .collect();
        wanted.push(marker.clone());
        let mut found = self
            .batch_get_waves(&wanted, false, LOOKUPS_AT_ONCE)
            .await?;
        let complete = found.remove(&marker).is_some();
        let mut identities: Vec<MemberIdentity> = Vec::with_capacity(emails.len());
        let mut missing: Vec<&Email> = Vec::new();
        for (email, key) in emails.iter().zip(&wanted) {
            match found.remove(key) {
                Some(item) => identities.push(from_item(item)?),
                None => missing.push(email),
            }
        }
        // A table written before these items existed: the e-mail index for the rest.
        if !complete {
            for chunk in missing.chunks(LOOKUPS_AT_ONCE) {
                let members = futures_util::future::try_join_all(
                    chunk
                        .iter()
                        .map(|e| self.find_member_by_email(account_id, e.as_str())),
                )
                .await?;
                identities.extend(members.iter().flatten().map(MemberIdentity::from));
            }
        }
        let mut seen = HashSet::new();
        identities.retain(|m| m.account_id == account_id && seen.insert(m.id));
        Ok(identities)
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
