//! Steps 2 to 9 of BEHAVIOR 6, each a pure check of what the run read: it holds and hands on
//! what it found, or the run stops with the step's [`Skip`]. Steps 2 to 6 (who, which router,
//! which record) are dispatch's and explain's own, steps 5 and 6 the what-if replay's too; steps 7
//! to 9 run inside the evaluation ([`super::admit`]).

use super::run::{Step, Trace};
use crate::dispatch::directory::AccountDirectory;
use crate::dispatch::outcome::Skip;
use crate::fields::catalogue::{Catalogue, FieldDef};
use crate::fields::definition::FieldType;
use crate::model::account::Account;
use crate::model::member::Member;
use crate::model::record::Record;
use crate::model::router::{Router, RouterConfig, RouterSettings};
use crate::model::sla::SlaSettingView;
use crate::routers::revision::RevisionChoice;
use crate::types::ids::MemberId;

/// Step 2: the account of the context exists and is active.
pub(super) fn account(directory: Option<&AccountDirectory>) -> Step<&Account> {
    let account = &directory.ok_or(Skip::AccountNotFound)?.account;
    if !account.active {
        return Err(Skip::AccountNotActive.into());
    }
    Ok(account)
}

/// Steps 3 and 4: the router exists in the account, is not archived, and is published. A
/// router that exists and is not archived goes into `trace` (its history takes the entry).
/// With `chosen` (explain with `revision`, BEHAVIOR 9: the choice and the configuration it
/// found) the router runs that configuration, published or not.
///
/// Errors: [`Skip::RouterNotFound`], [`Skip::RouterUnpublished`]; with `chosen`, 404 `Draft not
/// found` / `Revision not found` when it found none.
pub(super) fn router(
    router: Option<Router>, chosen: Option<(RevisionChoice, Option<&RouterConfig>)>,
    trace: &mut Trace,
) -> Step<Router> {
    let router = router
        .filter(|r| r.archived_at.is_none())
        .ok_or(Skip::RouterNotFound)?;
    let router = match chosen {
        Some((choice, config)) => choice.apply(&router, config)?,
        None => router,
    };
    trace.explanation.sla = router
        .settings
        .as_ref()
        .and_then(|s| s.sla.as_ref())
        .map(SlaSettingView::new);
    trace.router = Some(router.clone());
    if !router.is_published && chosen.is_none() {
        return Err(Skip::RouterUnpublished.into());
    }
    Ok(router)
}

/// Step 5: the router has settings with a `distribution_model` and an `owner_field` that is a
/// writable `user` field of its type.
pub(crate) fn settings<'r, 'c>(
    router: &'r Router, catalogue: &'c Catalogue,
) -> Step<(&'r RouterSettings, &'c FieldDef)> {
    let settings = router
        .settings
        .as_ref()
        .filter(|s| s.distribution_model.is_some())
        .ok_or(Skip::NoSettings)?;
    let owner_field = settings
        .owner_field
        .as_deref()
        .and_then(|f| catalogue.get(f))
        .filter(|d| d.field_type == FieldType::User && !d.is_system())
        .ok_or(Skip::NoSettings)?;
    Ok((settings, owner_field))
}

/// Step 6: the record is an active record of the router's type in the account.
pub(crate) fn record(record: Option<Record>, router: &Router) -> Step<Record> {
    Ok(record
        .filter(|r| r.object_type == router.object_type && r.is_active())
        .ok_or(Skip::ObjectNotFound)?)
}

/// Step 7: the trigger holds for the record (no trigger matches every record). A member id in
/// a `user` value is resolved among `members`, which hold every id the trigger asks for
/// ([`super::reads::trigger_member_ids`], read with the roster), archived members included.
/// Every condition is read (no short-circuit) and the reading goes into `trace`.
pub(super) fn trigger(
    settings: &RouterSettings, record: &Record, catalogue: &Catalogue, members: &[Member],
    trace: &mut Trace,
) -> Step<()> {
    let Some(trigger) = &settings.trigger else {
        return Ok(());
    };
    let resolve = |id: &str| {
        let id = MemberId::try_parse(id)?;
        members
            .iter()
            .find(|m| m.id == id)
            .map(|m| m.email.as_str().to_string())
    };
    let explained = trigger.explain(record, catalogue, &resolve);
    let matched = explained.matched;
    trace.explanation.trigger = Some(explained);
    if matched {
        Ok(())
    } else {
        Err(Skip::TriggerDidNotMatch.into())
    }
}

/// Step 8: a record that has an owner is assigned again only when the router may overwrite.
pub(super) fn overwrite(
    settings: &RouterSettings, record: &Record, owner_field: &FieldDef,
) -> Step<()> {
    if record.value(&owner_field.internal_name).is_some() && !settings.overwrite {
        return Err(Skip::CannotOverwrite.into());
    }
    Ok(())
}

/// Step 9: the account's monthly `quota` (calendar month, UTC) is not used up; `count` is this
/// month's assignments (read only for an account with a quota).
pub(super) fn quota(quota: Option<u64>, count: u64) -> Step<()> {
    if quota.is_some_and(|quota| count >= quota) {
        return Err(Skip::LimitReached.into());
    }
    Ok(())
}
