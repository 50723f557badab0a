//! The router writes of the management operations, built without a store: each takes what a
//! round read (the router, its draft, its rotation state) and the time, and answers the one
//! [`RouterWrite`] (or the draft, or the audit event) the round stores. Nothing here reads or
//! writes, so the decisions of a publish, an unpublish and an archive are tested on values.

use super::Actor;
use crate::audit::diff::ROUTER;
use crate::error::DomainError;
use crate::idempotency::{IdempotencyClaim, IdempotencyCompletion, StoredResponse};
use crate::model::audit::{AuditAction, AuditChange, AuditEvent, AuditTarget, TargetType};
use crate::model::dispatch::RotationState;
use crate::model::holiday_calendar::CalendarRefs;
use crate::model::router::{Router, RouterConfig, RouterDraft, RouterRevision};
use crate::model::router_write::{DraftChange, RouterWrite};
use crate::routers::view::{config_json, router_json};
use crate::types::etag::ETag;
use crate::types::ids::RouterId;
use chrono::{DateTime, Utc};

/// The write that makes `router` published or not (`published`) at `now` and changes nothing
/// else: a publish without a draft, an unpublish.
pub(super) fn publication(router: &Router, published: bool, now: DateTime<Utc>) -> RouterWrite {
    let mut next = moved_on(router, now);
    next.is_published = published;
    RouterWrite {
        router: next,
        expected_version: router.version,
        revision: None,
        draft: DraftChange::Keep,
        rotation: None,
        archives: false,
        completion: None,
        calendars: CalendarRefs::none(),
        audit: None,
    }
}

/// The write of a publish of `draft` on `router` (read with its rotation state `rotation`):
/// the next revision, live at once, published; the rotation state kept as BEHAVIOR 15 says.
pub(super) fn published(
    actor: Actor<'_>, router: &Router, draft: RouterDraft, rotation: &RotationState,
    now: DateTime<Utc>,
) -> RouterWrite {
    let next_number = router.revision + 1;
    let mut next = moved_on(&router.with_config(&draft.config, next_number), now);
    next.is_published = true;
    let rotation = rotation_after(rotation, &router.config(), &draft.config);
    // The draft's calendar reference becomes the live configuration's; the old live one's goes.
    let calendars = CalendarRefs::change(
        &router.calendar_refs_with(Some(&draft)),
        &next.calendar_refs_with(None),
    );
    RouterWrite {
        router: next,
        expected_version: router.version,
        revision: Some(RouterRevision {
            router_id: router.id,
            account_id: router.account_id,
            revision: next_number,
            config: draft.config,
            published_at: now,
            published_by: actor.sub.to_string(),
        }),
        draft: DraftChange::Publish(draft.etag),
        rotation,
        archives: false,
        completion: None,
        calendars,
        audit: None,
    }
}

/// The write that archives `router` (read with its draft `draft`) at `now` by `actor`: the
/// draft dropped, and (BEHAVIOR 17) no calendar named any more, live or draft.
pub(super) fn archived(
    actor: Actor<'_>, router: &Router, draft: Option<RouterDraft>, now: DateTime<Utc>,
) -> RouterWrite {
    let mut next = moved_on(router, now);
    next.archived_at = Some(now);
    next.archived_by = Some(actor.sub.to_string());
    let calendars = CalendarRefs::change(
        &router.calendar_refs_with(draft.as_ref()),
        &next.calendar_refs_with(None),
    );
    RouterWrite {
        router: next,
        expected_version: router.version,
        revision: None,
        draft: DraftChange::Drop(draft.map(|d| d.etag)),
        rotation: None,
        archives: true,
        completion: None,
        calendars,
        audit: None,
    }
}

/// A new draft of `router` with `config`, based on revision `based_on`, written by `actor` at
/// `now`, with a fresh entity tag.
pub(super) fn draft(
    actor: Actor<'_>, router: &Router, based_on: u64, config: RouterConfig, now: DateTime<Utc>,
) -> RouterDraft {
    RouterDraft {
        router_id: router.id,
        account_id: router.account_id,
        based_on_revision: based_on,
        config,
        updated_at: now,
        updated_by: actor.sub.to_string(),
        etag: ETag::new_random(),
    }
}

/// The audit event of a router action (BEHAVIOR 18) on `router_id`.
pub(super) fn router_event(
    actor: Actor<'_>, action: AuditAction, router_id: RouterId, changes: Vec<AuditChange>,
    now: DateTime<Utc>,
) -> AuditEvent {
    actor.event(
        action,
        AuditTarget::new(TargetType::Router, router_id),
        changes,
        now,
    )
}

/// `write` with its audit event (BEHAVIOR 18): the router as read (`before`) compared with the
/// router `write` stores, live configuration, publication and archive.
pub(super) fn audited(
    actor: Actor<'_>, action: AuditAction, before: &Router, mut write: RouterWrite,
    now: DateTime<Utc>,
) -> RouterWrite {
    let changes = ROUTER.changes(
        Some(&router_json(before)),
        Some(&router_json(&write.router)),
    );
    write.audit = Some(router_event(actor, action, before.id, changes, now));
    write
}

/// The audit event of a draft write (BEHAVIOR 18): the draft before (`current`, or the live
/// configuration without one) compared with the configuration `after`.
pub(super) fn draft_event(
    actor: Actor<'_>, action: AuditAction, router: &Router, current: Option<&RouterDraft>,
    after: &RouterConfig, now: DateTime<Utc>,
) -> AuditEvent {
    let before = match current {
        Some(draft) => config_json(&draft.config),
        None => config_json(&router.config()),
    };
    let changes = ROUTER.changes(Some(&before), Some(&config_json(after)));
    router_event(actor, action, router.id, changes, now)
}

/// The rotation state after `next` replaces `previous` (BEHAVIOR 15), with the version it
/// replaces, when it changes: round robin keeps its last member; team rotation keeps the state
/// of the teams that remain; a percentage router whose users or percentages changed starts its
/// counts again (N = 0).
pub fn rotation_after(
    state: &RotationState, previous: &RouterConfig, next: &RouterConfig,
) -> Option<(RotationState, u64)> {
    let mut after = state.clone();
    after
        .team_last_member
        .retain(|team, _| next.teams.contains(team));
    if next.restarts_percentage_counts(previous) {
        after.counts.clear();
        after.total = 0;
    }
    if after == *state {
        return None;
    }
    after.version = state.version + 1;
    Some((after, state.version))
}

/// `router` as its next write stores it: version moved on, `updated_at` now.
fn moved_on(router: &Router, now: DateTime<Utc>) -> Router {
    Router {
        version: router.version + 1,
        updated_at: now.max(router.updated_at),
        ..router.clone()
    }
}

/// `claim`'s completion with the answer `status` and `body`.
pub(super) fn completion(
    claim: Option<&IdempotencyClaim>, status: u16, body: &impl serde::Serialize,
) -> Result<Option<IdempotencyCompletion>, DomainError> {
    claim
        .map(|claim| {
            Ok(IdempotencyCompletion {
                claim: claim.clone(),
                response: StoredResponse::json(status, body)?,
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::router::RouterUser;
    use crate::types::email::Email;
    use std::collections::BTreeMap;

    fn config(users: &[(&str, Option<f64>)], teams: &[&str], percentage: bool) -> RouterConfig {
        let settings = crate::model::router::RouterSettings {
            overwrite: false,
            owner_field: Some("contact_owner".into()),
            distribution_model: Some(match percentage {
                true => crate::model::router::DistributionModel::Percentage,
                false => crate::model::router::DistributionModel::RoundRobin,
            }),
            default_user: None,
            disable_default_assignment: false,
            ignore_working_hours: false,
            account_matching: false,
            rotation_type: Default::default(),
            trigger: None,
            sla: None,
            holiday_calendar_id: None,
        };
        RouterConfig {
            name: "R".into(),
            has_integration: false,
            settings: Some(settings),
            users: users
                .iter()
                .map(|(e, p)| RouterUser {
                    email: email(e),
                    percentage: *p,
                })
                .collect(),
            teams: teams.iter().map(|t| t.to_string()).collect(),
            member_ids: vec![],
        }
    }

    fn email(text: &str) -> Email {
        Email::parse(text).unwrap()
    }

    fn state() -> RotationState {
        RotationState {
            version: 7,
            last_member: Some(email("a@x.co")),
            last_team: Some("Inbound".into()),
            team_last_member: BTreeMap::from([
                ("Inbound".into(), email("a@x.co")),
                ("Outbound".into(), email("b@x.co")),
            ]),
            counts: BTreeMap::from([(email("a@x.co"), 5), (email("b@x.co"), 5)]),
            total: 10,
        }
    }

    #[test]
    fn a_percentage_router_whose_weights_changed_restarts_its_counts_and_nothing_else_moves() {
        let before = config(&[("a@x.co", Some(50.0)), ("b@x.co", Some(50.0))], &[], true);
        let same = before.clone();
        let reweighted = config(&[("a@x.co", Some(60.0)), ("b@x.co", Some(40.0))], &[], true);
        let grown = config(
            &[
                ("a@x.co", Some(50.0)),
                ("b@x.co", Some(25.0)),
                ("c@x.co", Some(25.0)),
            ],
            &[],
            true,
        );
        let mut only_teams = state();
        only_teams.team_last_member.clear();
        assert_eq!(
            rotation_after(&only_teams, &before, &same),
            None,
            "counts go on"
        );
        for next in [reweighted, grown] {
            let (after, version) = rotation_after(&only_teams, &before, &next).unwrap();
            assert_eq!(version, 7);
            assert_eq!((after.total, after.counts.len(), after.version), (0, 0, 8));
            assert_eq!(after.last_member, only_teams.last_member);
        }
    }

    #[test]
    fn round_robin_keeps_its_last_member_and_team_rotation_the_state_of_teams_that_remain() {
        let before = config(&[], &["Inbound", "Outbound"], false);
        let next = config(&[], &["Inbound"], false);
        let (after, _) = rotation_after(&state(), &before, &next).unwrap();
        assert_eq!(after.last_member, Some(email("a@x.co")));
        assert_eq!(
            after.team_last_member,
            BTreeMap::from([("Inbound".to_string(), email("a@x.co"))])
        );
        assert_eq!(
            (after.total, after.counts.len()),
            (10, 2),
            "not a percentage router"
        );
        let unchanged = config(&[], &["Inbound", "Outbound"], false);
        assert_eq!(rotation_after(&state(), &before, &unchanged), None);
    }

    fn router(config: &RouterConfig) -> Router {
        let created = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 1, 0, 0, 0).unwrap();
        Router {
            id: uuid::Uuid::from_u128(7).into(),
            account_id: uuid::Uuid::from_u128(1).into(),
            name: String::new(),
            object_type: crate::model::object_type::ObjectType::Contacts,
            has_integration: false,
            is_published: false,
            settings: None,
            users: Vec::new(),
            teams: Vec::new(),
            created_at: created,
            updated_at: created,
            archived_at: None,
            archived_by: None,
            member_ids: Vec::new(),
            revision: 3,
            version: 5,
        }
        .with_config(config, 3)
    }

    fn with_calendar(mut config: RouterConfig, n: u128) -> RouterConfig {
        if let Some(settings) = config.settings.as_mut() {
            settings.holiday_calendar_id = Some(uuid::Uuid::from_u128(n).into());
        }
        config
    }

    const ACTOR: Actor<'static> = Actor {
        account_id: crate::types::ids::AccountId::from_uuid(uuid::Uuid::from_u128(1)),
        sub: "ops-client",
    };

    fn at(minutes: i64) -> DateTime<Utc> {
        chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 2, 1, 9, 0, 0).unwrap()
            + chrono::Duration::minutes(minutes)
    }

    #[test]
    fn a_publish_of_a_draft_stores_the_next_revision_live_conditional_on_the_version_read() {
        let live = config(&[("a@x.co", Some(50.0)), ("b@x.co", Some(50.0))], &[], true);
        let router = router(&with_calendar(live, 40));
        let next = with_calendar(
            config(&[("a@x.co", Some(60.0)), ("b@x.co", Some(40.0))], &[], true),
            41,
        );
        let draft = draft(ACTOR, &router, 3, next.clone(), at(0));
        let tag = draft.etag.clone();
        let write = published(ACTOR, &router, draft, &state(), at(1));
        assert_eq!(write.expected_version, 5);
        assert_eq!(
            (write.router.version, write.router.revision),
            (6, 4),
            "version and revision move on"
        );
        assert!(write.router.is_published);
        assert_eq!(write.router.updated_at, at(1));
        assert_eq!(write.router.config().users, next.users);
        let revision = write.revision.as_ref().unwrap();
        assert_eq!(
            (revision.revision, revision.published_by.as_str()),
            (4, "ops-client")
        );
        assert_eq!(revision.config, next);
        assert_eq!(write.draft, DraftChange::Publish(tag));
        let (rotation, read) = write.rotation.clone().unwrap();
        assert_eq!((read, rotation.total), (7, 0), "the counts start again");
        assert!(!write.archives);
        // The draft's calendar reference becomes the live one's; the old live one's goes.
        let moved: Vec<_> = write.calendars.changes().collect();
        assert_eq!(moved, vec![(uuid::Uuid::from_u128(40).into(), -1)]);
        assert!(write.audit.is_none() && write.completion.is_none());
    }

    #[test]
    fn an_archive_drops_the_draft_it_read_and_every_calendar_reference() {
        let router = router(&with_calendar(config(&[], &["Inbound"], false), 40));
        let draft = draft(
            ACTOR,
            &router,
            3,
            with_calendar(config(&[], &["Inbound"], false), 41),
            at(0),
        );
        let tag = draft.etag.clone();
        let write = archived(ACTOR, &router, Some(draft), at(2));
        assert_eq!(write.router.archived_at, Some(at(2)));
        assert_eq!(write.router.archived_by.as_deref(), Some("ops-client"));
        assert_eq!((write.expected_version, write.router.version), (5, 6));
        assert!(write.archives && write.revision.is_none() && write.rotation.is_none());
        assert_eq!(write.draft, DraftChange::Drop(Some(tag)));
        let released: Vec<_> = write.calendars.changes().collect();
        assert_eq!(
            released,
            vec![
                (uuid::Uuid::from_u128(40).into(), -1),
                (uuid::Uuid::from_u128(41).into(), -1)
            ]
        );
        let without_draft = archived(ACTOR, &router, None, at(2));
        assert_eq!(without_draft.draft, DraftChange::Drop(None));
    }

    #[test]
    fn an_unpublish_changes_only_publication_and_its_event_says_so() {
        let mut router = router(&config(&[], &["Inbound"], false));
        router.is_published = true;
        // A clock behind the router's last write never moves `updated_at` back.
        let early = router.updated_at - chrono::Duration::minutes(5);
        let write = publication(&router, false, early);
        assert!(!write.router.is_published);
        assert_eq!(write.router.updated_at, router.updated_at);
        assert_eq!(
            write.router,
            Router {
                is_published: false,
                version: 6,
                ..router.clone()
            }
        );
        assert_eq!(write.draft, DraftChange::Keep);
        assert!(write.revision.is_none() && write.rotation.is_none() && !write.archives);
        assert!(write.calendars.is_empty());
        let write = audited(ACTOR, AuditAction::RouterUnpublished, &router, write, at(3));
        let event = write.audit.unwrap();
        let paths: Vec<_> = event.changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["is_published"]);
        assert_eq!(event.at, at(3));
    }
}
