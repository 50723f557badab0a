//! The dispatch engine: evaluates a router for one record and assigns its owner
//! (spec "Dispatch"; BEHAVIOR 5 and 6). The HTTP route and the SQS queue run this same engine.
//!
//! Checks run in BEHAVIOR 6's order; each one that stops the run is a non-error outcome
//! ([`Skip`], answered 200 with only `message`). An assignment is ONE atomic store write
//! ([`crate::store::Store::commit_assignment`]): owner field, its assigned date, `updated_at`,
//! rotation state, the member's capacity counters, the account's monthly count, the log item and
//! the queue message's idempotency marker. A write that loses a race (a condition failed) is
//! re-evaluated from fresh reads and retried with jitter until [`DispatchEngine::deadline`]; only
//! then does the call fail (500). So concurrent dispatches never share a rotation turn, never
//! push a member past `max_capacity` and never push the account past its quota.

pub mod distribution;

use crate::clock::Clock;
use crate::error::ApiError;
use crate::fields::{CatalogueCache, FieldType};
use crate::model::{
    AssignmentLog, AssignmentReason, AssignmentWrite, DistributionModel, Member, ObjectType,
    RotationType, Router,
};
use crate::schedule::is_available;
use crate::store::{Page, Store, StoreError, UniqueKey};
use crate::timefmt::{rfc2822, rfc3339_millis};
use chrono::{DateTime, Utc};
use rand::Rng;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The 400 message of a dispatch without `router_id` or `object_id` (spec "Dispatch").
pub const INVALID_EVENT: &str = "Invalid event: require router_id and object_id";

/// A run that stopped without assigning: 200 with only `message` (spec "Dispatch").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The account of the context does not exist.
    AccountNotFound,
    /// The account is inactive.
    AccountNotActive,
    /// No such router in the account, or it is archived.
    RouterNotFound,
    /// `is_published` is false.
    RouterUnpublished,
    /// No settings, or no `owner_field` / `distribution_model`.
    NoSettings,
    /// No such active record of the router's type.
    ObjectNotFound,
    /// The trigger is false for the record.
    TriggerDidNotMatch,
    /// The record has an owner and the router may not overwrite.
    CannotOverwrite,
    /// The account's monthly quota is used up, or available members are all at capacity.
    LimitReached,
    /// Nobody available and no usable backup user.
    NoUsersAvailable,
}

impl Skip {
    /// The outcome text, exactly as the spec lists it.
    pub fn message(self) -> &'static str {
        match self {
            Self::AccountNotFound => "Account not found",
            Self::AccountNotActive => "Account is not active",
            Self::RouterNotFound => "Router not found",
            Self::RouterUnpublished => "The router is unpublished",
            Self::NoSettings => "The router has no settings",
            Self::ObjectNotFound => "Object not found",
            Self::TriggerDidNotMatch => "Trigger did not match",
            Self::CannotOverwrite => "The router can not overwrite",
            Self::LimitReached => "Assignment limit reached",
            Self::NoUsersAvailable => {
                "There are no users available and the backup user is disabled"
            }
        }
    }
}

/// A committed assignment.
#[derive(Debug, Clone, PartialEq)]
pub struct Assigned {
    /// The owner's e-mail.
    pub user: String,
    /// Display name of the owner field, e.g. `Contact owner`.
    pub field_name: String,
    /// Assignment time.
    pub owner_assigned_at: DateTime<Utc>,
    /// Why this member.
    pub reason: AssignmentReason,
    /// The record.
    pub record_id: Uuid,
}

/// What a dispatch did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The owner was set.
    Assigned(Assigned),
    /// The run stopped at a check.
    Skipped(Skip),
    /// The queue message was processed before (its idempotency key is used): nothing done.
    AlreadyProcessed,
}

impl Outcome {
    /// The 200 body: `{message, success: true, user, field_name, owner_assigned_at}` (RFC 2822
    /// UTC) for an assignment, `{message}` otherwise.
    pub fn body(&self) -> Value {
        match self {
            Self::Assigned(a) => json!({
                "message": "Owner assigned",
                "success": true,
                "user": a.user,
                "field_name": a.field_name,
                "owner_assigned_at": rfc2822(a.owner_assigned_at),
            }),
            Self::Skipped(skip) => json!({ "message": skip.message() }),
            Self::AlreadyProcessed => json!({ "message": "Already processed" }),
        }
    }

    /// A short label for logs: `assigned`, `already_processed` or the skip's message.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Assigned(_) => "assigned",
            Self::Skipped(skip) => skip.message(),
            Self::AlreadyProcessed => "already_processed",
        }
    }
}

/// A dispatch request: the body of `POST /dispatch/router` or of a queue message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchRequest {
    /// Router id as sent (not necessarily a UUID: a malformed one simply finds nothing).
    pub router_id: String,
    /// Record id as sent.
    pub object_id: String,
    /// Queue messages only: the account the sender expects the router to belong to.
    pub account_id: Option<String>,
}

impl DispatchRequest {
    /// Parses a body `{router_id, object_id, account_id?}`.
    ///
    /// Errors: 400 [`INVALID_EVENT`] when the body is not a JSON object or either id is
    /// missing, `null`, empty or not a string.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let invalid = || ApiError::bad_request(INVALID_EVENT);
        let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
            return Err(invalid());
        };
        let text = |key: &str| match map.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
            _ => None,
        };
        Ok(Self {
            router_id: text("router_id").ok_or_else(invalid)?,
            object_id: text("object_id").ok_or_else(invalid)?,
            account_id: text("account_id"),
        })
    }
}

/// Whose account a dispatch runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountContext {
    /// The account of the bearer token (HTTP route).
    Token(Uuid),
    /// The router's own account (queue path: router ids are unique across the store).
    RouterOwner,
}

/// The engine of one warm instance.
pub struct DispatchEngine {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    catalogues: Arc<CatalogueCache>,
    deadline: Duration,
    /// One async lock per router id: dispatches of one warm instance on one router take turns
    /// instead of racing each other in the store (a Lambda instance serves one event at a time,
    /// but the local server and a queue batch run many). Races between instances are still
    /// settled by the store's conditional write.
    turns: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// Default time a dispatch keeps retrying lost races before failing with 500.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(5);

enum Plan {
    Done(Outcome),
    Write(Box<AssignmentWrite>, Assigned),
}

impl DispatchEngine {
    /// An engine over `store`, retrying conflicts for [`DEFAULT_DEADLINE`].
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        catalogues: Arc<CatalogueCache>,
    ) -> Self {
        Self {
            store,
            clock,
            catalogues,
            deadline: DEFAULT_DEADLINE,
            turns: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The same engine with another retry deadline.
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// How long lost races are retried.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Runs one dispatch. `idempotency_key` (the SQS message id) makes a redelivery a no-op.
    ///
    /// Errors: 500 when the store fails or the write keeps losing races past the deadline.
    pub async fn dispatch(
        &self,
        context: AccountContext,
        request: &DispatchRequest,
        idempotency_key: Option<&str>,
    ) -> Result<Outcome, ApiError> {
        if let Some(key) = idempotency_key {
            if self.store.idempotency_key_used(key).await? {
                return Ok(Outcome::AlreadyProcessed);
            }
        }
        let turn = self.turn_lock(&request.router_id);
        let outcome = {
            let _turn = turn.lock().await;
            self.dispatch_in_turn(context, request, idempotency_key)
                .await
        };
        self.release_turn_lock(&request.router_id, turn);
        outcome
    }

    async fn dispatch_in_turn(
        &self,
        context: AccountContext,
        request: &DispatchRequest,
        idempotency_key: Option<&str>,
    ) -> Result<Outcome, ApiError> {
        let started = Instant::now();
        let mut attempt: u32 = 0;
        loop {
            let (write, assigned) = match self.plan(context, request, idempotency_key).await? {
                Plan::Done(outcome) => return Ok(outcome),
                Plan::Write(write, assigned) => (write, assigned),
            };
            match self.store.commit_assignment(&write).await {
                Ok(()) => return Ok(Outcome::Assigned(assigned)),
                Err(StoreError::AlreadyApplied) => return Ok(Outcome::AlreadyProcessed),
                Err(StoreError::Conflict) if started.elapsed() < self.deadline => {
                    attempt += 1;
                    let cap = 5u64 << attempt.min(5); // 10..160 ms
                    let pause = rand::thread_rng().gen_range(1..=cap);
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                }
                Err(StoreError::Conflict) => {
                    return Err(ApiError::internal(format!(
                        "dispatch lost {attempt} races in a row and gave up after {:?}",
                        self.deadline
                    )))
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn turn_lock(&self, router_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        turns.entry(router_id.to_string()).or_default().clone()
    }

    /// Drops the router's lock from the map when nobody else holds or waits for it, so the map
    /// holds only routers being dispatched right now (whatever ids callers send).
    fn release_turn_lock(&self, router_id: &str, turn: Arc<tokio::sync::Mutex<()>>) {
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        // Two references: the map's and ours.
        if Arc::strong_count(&turn) == 2 {
            turns.remove(router_id);
        }
    }

    async fn plan(
        &self,
        context: AccountContext,
        request: &DispatchRequest,
        idempotency_key: Option<&str>,
    ) -> Result<Plan, ApiError> {
        use Skip::*;
        let done = |skip: Skip| Ok(Plan::Done(Outcome::Skipped(skip)));
        let router_id = Uuid::parse_str(&request.router_id).ok();
        let account_id = match context {
            AccountContext::Token(account_id) => account_id,
            AccountContext::RouterOwner => {
                let Some(router) = self.find_router_anywhere(router_id).await? else {
                    return done(RouterNotFound);
                };
                let expected = request.account_id.as_deref().map(Uuid::parse_str);
                if expected.is_some_and(|e| e.ok() != Some(router.account_id)) {
                    return done(RouterNotFound);
                }
                router.account_id
            }
        };
        let Some(account) = self.store.get_account(account_id).await? else {
            return done(AccountNotFound);
        };
        if !account.active {
            return done(AccountNotActive);
        }
        let router = match router_id {
            Some(id) => self.store.get_router(account_id, id).await?,
            None => None,
        };
        let Some(router) = router.filter(|r| r.archived_at.is_none()) else {
            return done(RouterNotFound);
        };
        if !router.is_published {
            return done(RouterUnpublished);
        }
        let catalogue = self
            .catalogues
            .get(self.store.as_ref(), account_id)
            .await?
            .get(router.object_type)
            .clone();
        let settings = match &router.settings {
            Some(s) if s.distribution_model.is_some() => s,
            _ => return done(NoSettings),
        };
        let Some(owner_def) = settings
            .owner_field
            .as_deref()
            .and_then(|f| catalogue.get(f))
            .filter(|d| d.field_type == FieldType::User && !d.is_system())
        else {
            return done(NoSettings);
        };
        let record = match Uuid::parse_str(&request.object_id) {
            Ok(id) => {
                self.store
                    .get_record(account_id, router.object_type, id)
                    .await?
            }
            Err(_) => None,
        };
        let Some(record) = record.filter(|r| r.is_active()) else {
            return done(ObjectNotFound);
        };
        let members = self.all_members(account_id).await?;
        if let Some(trigger) = &settings.trigger {
            let resolve = |id: &str| {
                let id = Uuid::parse_str(id).ok()?;
                members.iter().find(|m| m.id == id).map(|m| m.email.clone())
            };
            if !trigger.matches(&record, &catalogue, &resolve) {
                return done(TriggerDidNotMatch);
            }
        }
        if record.value(&owner_def.internal_name).is_some() && !settings.overwrite {
            return done(CannotOverwrite);
        }
        let now = self.clock.now();
        let month = now.format("%Y-%m").to_string();
        if let Some(quota) = account.assignment_quota {
            if self.store.assignment_count(account_id, &month).await? >= quota {
                return done(LimitReached);
            }
        }

        let by_email: HashMap<&str, &Member> = members
            .iter()
            .filter(|m| m.is_active())
            .map(|m| (m.email.as_str(), m))
            .collect();
        let object_type = router.object_type;
        let available = |email: &str| {
            by_email
                .get(email)
                .is_some_and(|m| is_available(m, now, settings.ignore_working_hours))
        };
        let eligible = |email: &str| {
            available(email)
                && by_email
                    .get(email)
                    .is_some_and(|m| under_capacity(m, object_type))
        };

        // Account matching (contacts only): the owner of the company of the e-mail's domain.
        let mut choice: Option<(String, AssignmentReason)> = None;
        if settings.account_matching && object_type == ObjectType::Contacts {
            if let Some(owner) = self.matching_company_owner(account_id, &record).await? {
                if eligible(&owner) {
                    choice = Some((owner, AssignmentReason::AccountMatching));
                }
            }
        }

        let mut rotation = None;
        if choice.is_none() {
            let teams = self.store.list_teams(account_id).await?;
            let team_members = |name: &str| -> Vec<String> {
                teams
                    .iter()
                    .find(|t| t.name == name)
                    .map(|t| {
                        t.members
                            .iter()
                            .filter(|e| by_email.contains_key(e.as_str()))
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let mut pool: Vec<String> = Vec::new();
            for email in router
                .users
                .iter()
                .map(|u| u.email.clone())
                .chain(router.teams.iter().flat_map(|t| team_members(t)))
            {
                if by_email.contains_key(email.as_str()) && !pool.contains(&email) {
                    pool.push(email);
                }
            }
            if pool.iter().any(|e| available(e)) {
                if !pool.iter().any(|e| eligible(e)) {
                    return done(LimitReached);
                }
                let state = self.store.rotation_state(router.id).await?;
                let mut next = state.clone();
                let chosen = match (settings.distribution_model, settings.rotation_type) {
                    (Some(DistributionModel::Percentage), _) => {
                        let weighted: Vec<(String, f64)> = router
                            .users
                            .iter()
                            .filter(|u| pool.contains(&u.email))
                            .map(|u| (u.email.clone(), u.percentage.unwrap_or(0.0)))
                            .collect();
                        let chosen =
                            distribution::percentage(&weighted, &eligible, &state).cloned();
                        if let Some(c) = &chosen {
                            *next.counts.entry(c.clone()).or_default() += 1;
                            next.total += 1;
                        }
                        chosen
                    }
                    (_, RotationType::Teams) => {
                        let teams_pool: Vec<(String, Vec<String>)> = router
                            .teams
                            .iter()
                            .map(|t| (t.clone(), team_members(t)))
                            .collect();
                        let chosen = distribution::teams(&teams_pool, &eligible, &state)
                            .map(|(t, m)| (t.clone(), m.clone()));
                        chosen.map(|(team, member)| {
                            next.last_team = Some(team.clone());
                            next.team_last_member.insert(team, member.clone());
                            member
                        })
                    }
                    (_, RotationType::Users) => {
                        let chosen = distribution::round_robin(
                            &pool,
                            &eligible,
                            state.last_member.as_deref(),
                        )
                        .cloned();
                        next.last_member = chosen.clone();
                        chosen
                    }
                };
                // Eligible members exist, so every model finds one; a router whose weights
                // leave nobody (e.g. every eligible member at 0 %) has nobody to give it to.
                let Some(chosen) = chosen else {
                    return done(LimitReached);
                };
                next.version = state.version + 1;
                rotation = Some((router.id, next, state.version));
                choice = Some((chosen, AssignmentReason::Rotation));
            } else if let Some(backup) = settings
                .default_user
                .as_deref()
                .filter(|_| !settings.disable_default_assignment)
                .filter(|b| by_email.contains_key(b))
            {
                choice = Some((backup.to_string(), AssignmentReason::Backup));
            } else {
                return done(NoUsersAvailable);
            }
        }
        let Some((email, reason)) = choice else {
            return done(NoUsersAvailable);
        };

        let member_write = match (reason, by_email.get(email.as_str())) {
            (AssignmentReason::Backup, _) | (_, None) => None,
            (_, Some(member)) => count_assignment(member, object_type, now),
        };
        let mut next_record = record.clone();
        next_record
            .values
            .insert(owner_def.internal_name.clone(), email.clone());
        next_record.values.insert(
            format!("{}_assigned_date", owner_def.internal_name),
            rfc3339_millis(now),
        );
        next_record.updated_at = now.max(record.updated_at);
        next_record.version = record.version + 1;
        let assigned = Assigned {
            user: email.clone(),
            field_name: owner_def.name.clone(),
            owner_assigned_at: now,
            reason,
            record_id: record.id,
        };
        let write = AssignmentWrite {
            record: next_record,
            record_version: record.version,
            rotation,
            member: member_write,
            month,
            quota: account.assignment_quota,
            log: AssignmentLog {
                id: Uuid::now_v7(),
                account_id,
                router_id: router.id,
                record_id: record.id,
                member_email: email,
                reason,
                at: now,
            },
            idempotency_key: idempotency_key.map(str::to_string),
        };
        Ok(Plan::Write(Box::new(write), assigned))
    }

    async fn find_router_anywhere(
        &self,
        router_id: Option<Uuid>,
    ) -> Result<Option<Router>, ApiError> {
        Ok(match router_id {
            Some(id) => self.store.find_router(id).await?,
            None => None,
        })
    }

    /// Every member of the account, archived ones included (a trigger may name any member).
    async fn all_members(&self, account_id: Uuid) -> Result<Vec<Member>, ApiError> {
        let mut all = Vec::new();
        loop {
            let page = Page {
                limit: 100,
                offset: all.len(),
                include_archived: true,
            };
            let batch = self.store.list_members(account_id, page).await?;
            let done = batch.len() < page.limit;
            all.extend(batch);
            if done {
                return Ok(all);
            }
        }
    }

    /// The `company_owner` of the active company whose `website_url` is the contact's e-mail
    /// domain (BEHAVIOR 6, step 10). Website URLs are unique among active companies, so the
    /// uniqueness guard finds it in one read.
    async fn matching_company_owner(
        &self,
        account_id: Uuid,
        contact: &crate::model::Record,
    ) -> Result<Option<String>, ApiError> {
        let Some(domain) = contact
            .value("email")
            .and_then(|e| e.rsplit_once('@'))
            .map(|(_, d)| d)
        else {
            return Ok(None);
        };
        let key = UniqueKey {
            field: "website_url".into(),
            value: domain.to_string(),
        };
        let company = self
            .store
            .find_by_unique_key(account_id, ObjectType::Companies, &key)
            .await?;
        Ok(company
            .filter(|c| c.is_active())
            .and_then(|c| c.value("company_owner").map(str::to_string)))
    }
}

/// Whether a capacity entry applies to `object_type` (BEHAVIOR 6, step 12): its
/// `assignment_type` is the type, `all`, or absent, and it has an integer `max_capacity`.
fn applies(entry: &serde_json::Map<String, Value>, object_type: ObjectType) -> bool {
    let type_matches = match entry.get("assignment_type") {
        None | Some(Value::Null) => true,
        Some(Value::String(t)) => t == object_type.as_str() || t == "all",
        Some(_) => false,
    };
    type_matches && entry.get("max_capacity").and_then(Value::as_u64).is_some()
}

/// `current_capacity < max_capacity` for every applying entry.
pub fn under_capacity(member: &Member, object_type: ObjectType) -> bool {
    member
        .capacity
        .iter()
        .filter(|e| applies(e, object_type))
        .all(|e| {
            let current = e
                .get("current_capacity")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let max = e.get("max_capacity").and_then(Value::as_u64).unwrap_or(0);
            current < max
        })
}

/// The member with `current_capacity` + 1 on each applying entry, and the version read; `None`
/// when no entry applies (nothing to write).
fn count_assignment(
    member: &Member,
    object_type: ObjectType,
    now: DateTime<Utc>,
) -> Option<(Member, u64)> {
    if !member.capacity.iter().any(|e| applies(e, object_type)) {
        return None;
    }
    let mut next = member.clone();
    for entry in next.capacity.iter_mut().filter(|e| applies(e, object_type)) {
        let current = entry
            .get("current_capacity")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        entry.insert("current_capacity".into(), json!(current + 1));
    }
    next.updated_at = now.max(member.updated_at);
    next.version = member.version + 1;
    Some((next, member.version))
}
