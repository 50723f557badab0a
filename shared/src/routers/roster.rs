//! The members a router's runs read: its pool and backup user (by the ids resolved when the
//! router was provisioned, [`Router::member_ids`]) and any other member a run names, read in
//! one wave whatever the size of the account (`docs/decisions.md`, "Cost that follows the router,
//! not the account"). Dispatch, explain and stats read the
//! pool through here, and keep its order through [`Router::pool_emails`].

use crate::model::account::Team;
use crate::model::member::Member;
use crate::model::router::Router;
use crate::store::{MemberStore, StoreResult};
use crate::types::email::Email;
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
    /// The member with e-mail `email`, active or not.
    pub fn by_email(&self, email: &Email) -> Option<&Member> {
        self.members.iter().find(|m| m.email == *email)
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
    /// E-mails to read.
    pub emails: &'a [&'a Email],
}

/// Which members a run of a router reads, and how: the roster's e-mails
/// ([`Router::roster_emails`] over the account's teams, then the e-mails a run names) with the id
/// each resolves to ([`Router::roster`]), the ids to read by key (the resolved ones, then the ids
/// the run names), and the e-mails without a resolved id (read by the e-mail index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RosterKeys<'a> {
    /// Every e-mail the run may need, with its resolved id when it has one.
    resolved: Vec<(&'a Email, Option<MemberId>)>,
    /// The ids to read by key, each once: the roster's resolved ids first, then `named.ids`.
    pub ids: Vec<MemberId>,
    /// How many of [`Self::ids`] are the roster's own (the others are named by the run).
    roster_ids: usize,
    /// The e-mails without a resolved id.
    pub unresolved: Vec<&'a Email>,
}

impl<'a> RosterKeys<'a> {
    /// The keys of a run of `router` over the account's `teams` that names `named`.
    pub fn of(router: &'a Router, teams: &'a [Team], named: Named<'a>) -> Self {
        let mut emails = router.roster_emails(teams);
        for email in named.emails {
            if !emails.contains(email) {
                emails.push(email);
            }
        }
        let resolved = router.roster(&emails);
        let mut ids: Vec<MemberId> = Vec::with_capacity(resolved.len() + named.ids.len());
        for id in resolved.iter().filter_map(|(_, id)| *id) {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let roster_ids = ids.len();
        for id in named.ids {
            if !ids.contains(id) {
                ids.push(*id);
            }
        }
        let unresolved = resolved
            .iter()
            .filter(|(_, id)| id.is_none())
            .map(|(email, _)| *email)
            .collect();
        Self {
            resolved,
            ids,
            roster_ids,
            unresolved,
        }
    }

    /// The ids of the router's own roster (its pool and backup user as resolved), without the
    /// ids the run names: what the router's next run will read again.
    pub fn roster_ids(&self) -> &[MemberId] {
        &self.ids[..self.roster_ids]
    }
}

/// Reads the roster of `router` ([`Router::roster_emails`] over `teams`) and `named`: the ids
/// known by key in one consistent batch read, the e-mails without a resolved id by the e-mail
/// index, all at once. An id whose member is gone or archived while its e-mail is wanted is
/// looked up by e-mail after that (a member provisioned again under the same address; rare).
/// Items read: the roster and `named`, not the account.
///
/// Errors: the store's.
pub async fn read_roster(
    store: &dyn MemberStore, account_id: AccountId, router: &Router, teams: &[Team],
    named: Named<'_>,
) -> StoreResult<Roster> {
    read_roster_with(
        store,
        account_id,
        &RosterKeys::of(router, teams, named),
        Vec::new(),
    )
    .await
}

/// [`read_roster`] of `keys` when some members were read already, consistently by key (a
/// dispatch's first round reads the members its instance expects): the members of `read` that
/// `keys` asks for are taken as they are, only the others are read (none: no request). Members of
/// `read` that `keys` does not ask for are left out.
///
/// Errors: the store's.
pub async fn read_roster_with(
    store: &dyn MemberStore, account_id: AccountId, keys: &RosterKeys<'_>, read: Vec<Member>,
) -> StoreResult<Roster> {
    let missing: Vec<MemberId> = keys
        .ids
        .iter()
        .filter(|id| !read.iter().any(|m| m.id == **id))
        .copied()
        .collect();
    let (fetched, by_email) = tokio::try_join!(
        async {
            match missing.is_empty() {
                true => Ok(Vec::new()),
                false => store.get_members(account_id, &missing).await,
            }
        },
        members_by_email(store, account_id, &keys.unresolved)
    )?;
    let mut by_id: std::collections::HashMap<MemberId, Member> =
        read.into_iter().chain(fetched).map(|m| (m.id, m)).collect();
    // In the order of the keys, as one read of them all answers.
    let by_key: Vec<Member> = keys.ids.iter().filter_map(|id| by_id.remove(id)).collect();
    let mut roster = Roster {
        consistent: by_key.iter().map(|m| m.id).collect(),
        members: by_key,
    };
    for member in by_email {
        roster.add_indexed(member);
    }
    let stale: Vec<&Email> = keys
        .resolved
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
    store: &dyn MemberStore, account_id: AccountId, emails: &[S],
) -> StoreResult<Vec<Member>> {
    let found = futures_util::future::try_join_all(
        emails
            .iter()
            .map(|email| store.find_member_by_email(account_id, email.as_ref())),
    )
    .await?;
    Ok(found.into_iter().flatten().collect())
}
