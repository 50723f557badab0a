//! The embedded store's members ([`MemberStore`]).

use super::{read_page, MemoryStore, State};
use crate::model::audit::AuditEvent;
use crate::model::holiday_calendar::CalendarRefs;
use crate::model::member::{Member, MemberIdentity};
use crate::store::{member_position, MemberStore, Page, PageRequest, StoreError, StoreResult};
use crate::types::email::Email;
use crate::types::ids::{AccountId, MemberId};
use async_trait::async_trait;
use std::collections::HashSet;

impl State {
    /// Stores `member` and indexes it in its list.
    pub(super) fn put_member(&mut self, member: Member) {
        let old = self.members.get(&member.id).map(member_position);
        self.member_lists.entry(member.account_id).or_default().put(
            old,
            member_position(&member),
            member.is_active(),
            member.id,
        );
        self.members.insert(member.id, member);
    }
}

#[async_trait]
impl MemberStore for MemoryStore {
    async fn list_members(
        &self, account_id: AccountId, page: &PageRequest,
    ) -> StoreResult<Page<Member>> {
        let state = self.lock();
        Ok(read_page(state.member_lists.get(&account_id), page, |id| {
            state.members.get(id)
        }))
    }

    async fn get_member(
        &self, account_id: AccountId, member_id: MemberId,
    ) -> StoreResult<Option<Member>> {
        Ok(self
            .lock()
            .members
            .get(&member_id)
            .filter(|m| m.account_id == account_id)
            .cloned())
    }

    async fn get_members(
        &self, account_id: AccountId, ids: &[MemberId],
    ) -> StoreResult<Vec<Member>> {
        let state = self.lock();
        let mut seen = std::collections::HashSet::new();
        Ok(ids
            .iter()
            .filter(|id| seen.insert(**id))
            .filter_map(|id| state.members.get(id))
            .filter(|m| m.account_id == account_id)
            .cloned()
            .collect())
    }

    async fn find_member_by_email(
        &self, account_id: AccountId, email: &str,
    ) -> StoreResult<Option<Member>> {
        let wanted = email.to_lowercase();
        Ok(self
            .lock()
            .members
            .values()
            .find(|m| m.account_id == account_id && m.email.as_str() == wanted)
            .cloned())
    }

    async fn identify_members(
        &self, account_id: AccountId, emails: &[Email],
    ) -> StoreResult<Vec<MemberIdentity>> {
        let wanted: HashSet<&Email> = emails.iter().collect();
        Ok(self
            .lock()
            .members
            .values()
            .filter(|m| m.account_id == account_id && wanted.contains(&m.email))
            .map(MemberIdentity::from)
            .collect())
    }

    async fn update_member(
        &self, member: &Member, expected_version: u64, calendars: &CalendarRefs,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        match state.members.get(&member.id) {
            Some(stored)
                if stored.version == expected_version
                    && stored.is_active()
                    && stored.account_id == member.account_id => {}
            _ => return Err(StoreError::Conflict),
        }
        state.check_audit(audit)?;
        state.check_calendar_refs(member.account_id, calendars)?;
        state.apply_calendar_refs(member.account_id, calendars);
        state.put_member(member.clone());
        state.put_audit(audit);
        Ok(())
    }
}
