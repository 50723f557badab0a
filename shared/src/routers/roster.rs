//! The members a router's runs read: its pool and backup user (by the ids resolved when the
//! router was provisioned, [`Router::member_ids`]) and any other member a run names, read in
//! one wave whatever the size of the account (issue 23). Dispatch, explain and stats read the
//! pool through here, and keep its order through [`Router::pool_emails`].

use crate::model::account::Team;
use crate::model::member::Member;
use crate::model::router::Router;
use crate::store::{Store, StoreResult};
use crate::types::ids::{AccountId, MemberId};
use std::collections::HashSet;

/// Members read for one run, and which of them were read consistently (by key).
#[derive(Debug, Clone, Default)]
pub struct Roster {
    /// The members found, archived ones included, each once.
    pub members: Vec<Member>,
    /// The ids of the members read by key, consistently; the others came from the e-mail
    /// index (eventually consistent) and are read again before they are written.
    pub consistent: HashSet<MemberId>,
}

impl Roster {
    /// The member with e-mail `email` (lowercase), active or not.
    pub fn by_email(&self, email: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.email.as_str() == email)
    }

    /// Whether the member with `id` was read consistently.
    pub fn is_consistent(&self, id: MemberId) -> bool {
        self.consistent.contains(&id)
    }

    /// Adds `member` (read from the e-mail index) unless it is already here.
    pub fn add_indexed(&mut self, member: Member) {
        if !self.members.iter().any(|m| m.id == member.id) {
            self.members.push(member);
        }
    }
}

/// What a run names besides the router's roster: member ids (a trigger's `user` values) and
/// e-mails (an SLA reassignment's current owner).
#[derive(Debug, Clone, Copy, Default)]
pub struct Named<'a> {
    /// Member ids to read.
    pub ids: &'a [MemberId],
    /// E-mails (lowercase) to read.
    pub emails: &'a [&'a str],
}

/// Reads the roster of `router` ([`Router::roster_emails`] over `teams`) and `named`: the ids
/// known by key in one consistent batch read, the e-mails without a resolved id by the e-mail
/// index, all at once. An id whose member is gone or archived while its e-mail is wanted is
/// looked up by e-mail after that (a member provisioned again under the same address; rare).
/// Items read: the roster and `named`, not the account.
///
/// Errors: the store's.
pub async fn read_roster(
    store: &dyn Store, account_id: AccountId, router: &Router, teams: &[Team], named: Named<'_>,
) -> StoreResult<Roster> {
    let mut emails = router.roster_emails(teams);
    for email in named.emails {
        if !emails.contains(email) {
            emails.push(email);
        }
    }
    let resolved = router.roster(&emails);
    let mut ids: Vec<MemberId> = resolved.iter().filter_map(|(_, id)| *id).collect();
    for id in named.ids {
        if !ids.contains(id) {
            ids.push(*id);
        }
    }
    let unresolved: Vec<&str> = resolved
        .iter()
        .filter(|(_, id)| id.is_none())
        .map(|(email, _)| *email)
        .collect();
    let (by_key, by_email) = tokio::try_join!(
        async {
            match ids.is_empty() {
                true => Ok(Vec::new()),
                false => store.get_members(account_id, &ids).await,
            }
        },
        members_by_email(store, account_id, &unresolved)
    )?;
    let mut roster = Roster {
        consistent: by_key.iter().map(|m| m.id).collect(),
        members: by_key,
    };
    for member in by_email {
        roster.add_indexed(member);
    }
    let stale: Vec<&str> = resolved
        .iter()
        .filter(|(email, id)| {
            id.is_some() && !roster.by_email(email).is_some_and(Member::is_active)
        })
        .map(|(email, _)| *email)
        .collect();
    for member in members_by_email(store, account_id, &stale).await? {
        roster.add_indexed(member);
    }
    Ok(roster)
}

/// The members whose e-mail is one of `emails` (lowercase), archived ones included, found by the
/// e-mail index (eventually consistent): one lookup each, all at once. The one lookup of members
/// by e-mail for a run's roster and a configuration's check ([`crate::routers::RouterAdmin`]); a
/// caller that may name many bounds the wave by passing a slice at a time.
///
/// Errors: the store's.
pub async fn members_by_email<S: AsRef<str>>(
    store: &dyn Store, account_id: AccountId, emails: &[S],
) -> StoreResult<Vec<Member>> {
    let found = futures_util::future::try_join_all(
        emails
            .iter()
            .map(|email| store.find_member_by_email(account_id, email.as_ref())),
    )
    .await?;
    Ok(found.into_iter().flatten().collect())
}
