//! Step 10, account matching (contacts of a router with `account_matching`): the key a
//! contact's company is found by (its e-mail domain as `website_url` holds it), the read of that
//! company, the company owners added to the members a run chooses among, and the choice of the
//! matched company's owner. Dispatch, explain and the what-if replay read through these.

use super::pool::Pool;
use super::run::{Context, Step, Trace};
use crate::dispatch::explain::AccountMatch;
use crate::model::object_type::ObjectType;
use crate::model::record::{Record, UniqueKey};
use crate::model::router::{Router, RouterSettings};
use crate::routers::roster::{members_by_email, Roster};
use crate::store::{MemberStore, RecordStore, StoreError};
use crate::types::email::Email;
use crate::types::ids::AccountId;

/// Company owners looked up by e-mail at once ([`add_company_owners`]; the what-if replay
/// may name thousands).
pub const OWNER_LOOKUPS_AT_ONCE: usize = 16;

/// Step 10's company owners outside `roster`: the `company_owner` of each of `companies` that
/// names no member read yet, each once, added from the e-mail index (eventually consistent: a
/// chosen one is read again before it is written, [`super::reads::choose_owner`]). Dispatch,
/// explain and the what-if replay read them through this, after the roster and the companies.
///
/// Errors: the store's.
pub(crate) async fn add_company_owners<'c>(
    store: &dyn MemberStore, account_id: AccountId, roster: &mut Roster,
    companies: impl IntoIterator<Item = &'c Record>,
) -> Result<(), StoreError> {
    let mut owners: Vec<&str> = companies
        .into_iter()
        .filter_map(|c| c.value("company_owner"))
        .filter(|owner| !roster.members.iter().any(|m| m.email == *owner))
        .collect();
    owners.sort_unstable();
    owners.dedup();
    for chunk in owners.chunks(OWNER_LOOKUPS_AT_ONCE) {
        for member in members_by_email(store, account_id, chunk).await? {
            roster.add_indexed(member);
        }
    }
    Ok(())
}

/// Step 10's read (contacts only, with `account_matching`): the oldest active company whose
/// `website_url` is the contact's e-mail domain, found by the uniqueness guard in one read.
pub(super) async fn matching_company(
    cx: &Context<'_>, account_id: AccountId, router: &Router, settings: &RouterSettings,
    contact: &Record,
) -> Step<Option<Record>> {
    match company_key(router, settings, contact) {
        Some(key) => Ok(find_company(cx.store, account_id, &key).await?),
        None => Ok(None),
    }
}

/// Step 10's key (contacts of a router with `account_matching` only): the contact's e-mail
/// domain in the form `website_url` is stored in (A-labels, no `www.`;
/// `docs/decisions.md`, "E-mail addresses").
pub(crate) fn company_key(
    router: &Router, settings: &RouterSettings, contact: &Record,
) -> Option<UniqueKey> {
    if !settings.account_matching || router.object_type != ObjectType::Contacts {
        return None;
    }
    let domain = contact
        .value("email")
        .and_then(Email::canonical_domain_of)?;
    Some(UniqueKey {
        field: "website_url".into(),
        value: domain.to_string(),
    })
}

/// The active company holding `key` (a [`company_key`]), by its uniqueness guard.
///
/// Errors: the store's.
pub(crate) async fn find_company(
    store: &dyn RecordStore, account_id: AccountId, key: &UniqueKey,
) -> Result<Option<Record>, StoreError> {
    let company = store
        .find_by_unique_key(account_id, ObjectType::Companies, key)
        .await?;
    Ok(company.filter(|c| c.is_active()))
}

/// Step 10: the matched `company`'s `company_owner`, when that owner is an active member who
/// is available and under capacity, in the router's pool or not: that member's e-mail. The
/// match goes into `trace` (its `owner` as the company holds it).
pub(super) fn account_matching(
    company: Option<&Record>, pool: &Pool<'_>, trace: &mut Trace,
) -> Option<Email> {
    let company = company?;
    let owner = company.value("company_owner");
    let member = owner.and_then(|o| pool.named(o));
    let eligible = member.is_some_and(|m| pool.eligible(m));
    trace.explanation.account_match = Some(AccountMatch {
        company_id: company.id,
        owner: owner.map(str::to_string),
        eligible,
    });
    member.filter(|_| eligible).cloned()
}
