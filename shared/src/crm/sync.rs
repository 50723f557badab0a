//! The CRM sync of one assignment (BEHAVIOR 7): the checks before a request, the attempts, and
//! the sync state on the history entry (`crm_sync: {status, attempts, error}`, BEHAVIOR 8).
//!
//! Every attempt is due work ([`crate::due`]): the assignment's transaction stores the entry
//! with `pending` and a `crm_sync` due item already claimed by the dispatching process, which
//! makes the first attempt right after the commit (the dispatch answer waits for it). Each
//! attempt stores the entry's new state together with the item's settlement in one write: the
//! item is removed when the state is final, or moved to the next retry's due time. A process
//! that dies anywhere leaves the item stored; the sweeper resumes it.
//!
//! State changes are conditional on the state the attempt started from (`pending` or
//! `retrying` after so many attempts, [`crate::store::DispatchStore::update_crm_sync`]) and on the
//! item's lease, so a duplicate attempt changes nothing, and `synced`, `failed` and `superseded`
//! never change again.

use super::port::{
    CrmClient, Next, Owner, OwnerUpdate, NO_CONNECTION, OWNER_WITHOUT_EXTERNAL_ID,
    RECORD_EXTERNAL_ID_INVALID, RECORD_WITHOUT_EXTERNAL_ID,
};
use super::retry::RetryDelays;
use crate::clock::Clock;
use crate::due::{Claimed, Commit, DueJob, Ran};
use crate::error::DomainError;
use crate::model::dispatch::{CrmSyncState, CrmSyncStatus, DispatchEntry, DispatchEntryKey};
use crate::model::due::{DueChanges, DueId, DueKind, Settlement};
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::record::Record;
use crate::model::webhook::EventType;
use crate::page::PageRequest;
use crate::secrets::{open_crm, OpenCrmConnection, Sealer};
use crate::store::SyncPorts;
use crate::types::email::Email;
use crate::webhooks::add_deliveries;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// The subject of a `crm_sync` due item: the history entry's key, and for a retry the entry's
/// `crm_sync.attempts` and the retries spent when it was scheduled. `attempts` counts the
/// attempts that sent a request; a deferral (nothing sent) and a `DAILY` wait spend no retry
/// (BEHAVIOR 7 "Rate limits"), so neither is the item's attempt number. Items stored before
/// these two were kept read as `attempts` = `retries` = the item's attempt number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncSubject {
    /// The history entry.
    #[serde(flatten)]
    pub key: DispatchEntryKey,
    /// The entry's `crm_sync.attempts` this attempt starts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// Retries of the delays (`CRM_SYNC_RETRY_DELAYS`) already spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
}

/// The next 00:00 UTC after `now` (when a `DAILY` limit without `Retry-After` resets).
pub fn next_midnight_utc(now: DateTime<Utc>) -> DateTime<Utc> {
    let tomorrow = now.date_naive() + chrono::Days::new(1);
    tomorrow.and_time(chrono::NaiveTime::MIN).and_utc()
}

/// The longest any wait before a retry (a `Retry-After`, a hold, the limit wait): a day.
pub const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// The least a `DAILY` 429 waits (BEHAVIOR 7: a `Retry-After` of 0 or in the past waits 60 s).
pub const MIN_DAILY_WAIT: Duration = Duration::from_secs(60);

/// The first attempt's time in all, counted from the assignment's commit (BEHAVIOR 7: token
/// grant, owner look-up, the update and any resend together); what is not done by then
/// continues as a background retry, `CRM request timed out`.
pub const FIRST_ATTEMPT_BOUND: Duration = Duration::from_secs(3);

/// A background attempt's time in all (its requests each have 3 s; well within the due item's
/// lease of 60 s).
pub const ATTEMPT_BOUND: Duration = Duration::from_secs(25);

/// How the sync of an assignment went, as far as the dispatch answer is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncResult {
    /// The CRM took the owner.
    Synced,
    /// It did not (yet): the answer adds `crm_sync_failed: true` and this `crm_error`. Retries
    /// may still follow.
    Failed(String),
}

/// The CRM sync service of one instance: the CRM client, the store holding the history and the
/// retry delays. It is the job of `crm_sync` due items.
#[derive(derive_more::Debug)]
pub struct CrmSync {
    #[debug(skip)]
    client: Arc<dyn CrmClient>,
    #[debug(skip)]
    store: Arc<dyn SyncPorts>,
    #[debug(skip)]
    clock: Arc<dyn Clock>,
    delays: RetryDelays,
    /// Opens the stored access tokens.
    #[debug(skip)]
    sealer: Arc<dyn Sealer>,
}

impl CrmSync {
    /// The sync over `client` and `store`, retrying after `delays`, opening stored tokens with
    /// `sealer`.
    pub fn new(
        client: Arc<dyn CrmClient>, store: Arc<dyn SyncPorts>, clock: Arc<dyn Clock>,
        delays: RetryDelays, sealer: Arc<dyn Sealer>,
    ) -> Arc<Self> {
        Arc::new(Self {
            client,
            store,
            clock,
            delays,
            sealer,
        })
    }

    /// The retry delays.
    pub fn delays(&self) -> &RetryDelays {
        &self.delays
    }

    /// The due item of the sync of the history entry `key`.
    pub fn due_id(key: &DispatchEntryKey) -> DueId {
        DueId::new(DueKind::CrmSync, key.id.to_string())
    }

    /// The subject of that item's first attempt: the entry's key.
    pub fn due_subject(key: &DispatchEntryKey) -> serde_json::Value {
        serde_json::to_value(SyncSubject {
            key: key.clone(),
            attempts: None,
            retries: None,
        })
        .unwrap_or_default()
    }

    /// The checks before any request (BEHAVIOR 7's first rows, in that order): the account's
    /// connection (`connection`, its secrets opened), the record's `external_id`; then the owner:
    /// the member's `external_id` when set, else the member's e-mail to look the owner up by
    /// (BEHAVIOR 7 "HubSpot as it is", "Owner").
    ///
    /// Errors: the `crm_error` of the first that is missing (final at once, no request), or
    /// `Record external_id is not a valid CRM id` for a dot segment (`.`, `..`); secrets
    /// that did not open are [`crate::secrets::TOKEN_NOT_OPENED`] or
    /// [`crate::secrets::OAUTH_NOT_OPENED`].
    pub fn prepare(
        connection: Option<&Result<OpenCrmConnection, String>>, object_type: ObjectType,
        record: &Record, owner: &Member,
    ) -> Result<OwnerUpdate, String> {
        let connection = connection
            .ok_or(NO_CONNECTION)?
            .as_ref()
            .map_err(Clone::clone)?;
        let record_external_id = record
            .value("external_id")
            .filter(|v| !v.trim().is_empty())
            .ok_or(RECORD_WITHOUT_EXTERNAL_ID)?;
        if matches!(record_external_id, "." | "..") {
            return Err(RECORD_EXTERNAL_ID_INVALID.into());
        }
        let owner = match owner
            .external_id
            .as_deref()
            .filter(|v| !v.trim().is_empty())
        {
            Some(id) => Owner::Id(id.to_string()),
            None => Owner::ByEmail {
                member_id: owner.id,
                email: owner.email.as_str().to_string(),
            },
        };
        Ok(OwnerUpdate {
            connection: connection.clone(),
            object_type,
            record_external_id: record_external_id.to_string(),
            owner,
        })
    }

    /// The state an assignment's entry is written with: `pending` with no attempt when a
    /// request will follow, `failed` with no attempt when [`Self::prepare`] refused.
    pub fn initial_state(prepared: &Result<OwnerUpdate, String>) -> CrmSyncState {
        match prepared {
            Ok(_) => CrmSyncState::pending(),
            Err(error) => CrmSyncState {
                status: CrmSyncStatus::Failed,
                attempts: 0,
                error: Some(error.clone()),
            },
        }
    }

    /// The first attempt, right after the assignment `entry` committed `pending` with its due
    /// item `claimed` by this process: `update` was prepared from what the assignment read, and
    /// the attempt gives up at `deadline` ([`FIRST_ATTEMPT_BOUND`] after the commit). The answer
    /// says what the CRM did even when the new state could not be stored (logged; the item
    /// stays, and the sweeper makes the attempt again).
    pub async fn first_attempt(
        &self, claimed: &Claimed, entry: &DispatchEntry, update: &OwnerUpdate,
        deadline: std::time::Instant,
    ) -> (SyncResult, Ran) {
        let key = &entry.key();
        let from = CrmSyncState::pending();
        let (to, settlement) = self
            .attempt(claimed, &entry.key(), &from, 0, update, deadline)
            .await;
        let ran = match self
            .store_state(claimed, entry, &from, &to, settlement)
            .await
        {
            Ok(ran) => ran,
            Err(error) => {
                tracing::error!(
                    entry_id = %key.id,
                    error = %crate::error::ErrorChain(&error),
                    "CRM sync state not stored; the sweeper makes the attempt again"
                );
                Ran::nothing("not_stored")
            }
        };
        (result_of(&to), ran)
    }

    /// Makes one attempt and decides the entry's next state and the item's settlement:
    /// `synced` or `failed` (done), or `retrying` with the next retry due: after the configured
    /// delay (or the CRM's longer wait), spending one of the retries (`retries` spent so far);
    /// after a `DAILY` limit's wait or a deferral without spending one. `attempts` grows only
    /// when a request reached the CRM.
    async fn attempt(
        &self, claimed: &Claimed, key: &DispatchEntryKey, from: &CrmSyncState, retries: u32,
        update: &OwnerUpdate, deadline: std::time::Instant,
    ) -> (CrmSyncState, Settlement) {
        let failure = match self.client.set_owner(update, deadline).await {
            Ok(done) => {
                let synced = CrmSyncState {
                    status: CrmSyncStatus::Synced,
                    attempts: from.attempts + done.updates.max(1),
                    error: None,
                };
                return (synced, claimed.done());
            }
            Err(failure) => failure,
        };
        let attempts = from.attempts + failure.updates;
        let now = self.clock.now();
        // Every wait comes from outside (a `Retry-After`, a hold): at most a day, added with
        // checked arithmetic: no CRM answer can panic the process.
        let after = |wait: Duration| {
            chrono::Duration::from_std(wait.min(MAX_WAIT))
                .ok()
                .and_then(|wait| now.checked_add_signed(wait))
                .unwrap_or(now)
        };
        let next = match failure.next {
            Next::Final => None,
            Next::Retry { at_least } => {
                let spent = retries + 1;
                self.delays
                    .after_attempt(spent)
                    .map(|delay| (after(delay.max(at_least.unwrap_or_default())), spent))
            }
            Next::Daily { retry_after } => {
                let due = retry_after.map_or_else(|| next_midnight_utc(now), after);
                Some((due.max(after(MIN_DAILY_WAIT)), retries))
            }
            Next::Wait { wait } => Some((after(wait), retries)),
        };
        match next {
            Some((due, spent)) => {
                let retrying = CrmSyncState {
                    status: CrmSyncStatus::Retrying,
                    attempts,
                    error: Some(failure.error),
                };
                let subject = SyncSubject {
                    key: key.clone(),
                    attempts: Some(attempts),
                    retries: Some(spent),
                };
                let subject = serde_json::to_value(subject).unwrap_or_default();
                (retrying, claimed.again_from(due, subject))
            }
            None => {
                let failed = CrmSyncState {
                    status: CrmSyncStatus::Failed,
                    attempts,
                    error: Some(failure.error),
                };
                (failed, claimed.done())
            }
        }
    }

    /// Stores `to` on `entry` (from `from`) with the item's `settlement`, in one write; a final
    /// `failed` makes the `crm_sync.failed` event in it too (BEHAVIOR 13). Through the
    /// mechanism's commit ([`Claimed::commit`]): a write that conflicts is made again on a fresh
    /// read of the entry, unless the entry is gone or its state moved on from `from` (another
    /// attempt recorded it, or it is final), which ends the item.
    ///
    /// Errors: a store failure.
    async fn store_state(
        &self, claimed: &Claimed, entry: &DispatchEntry, from: &CrmSyncState, to: &CrmSyncState,
        settlement: Settlement,
    ) -> Result<Ran, DomainError> {
        let key = &entry.key();
        let label = label_of(to.status);
        claimed
            .commit(|round| {
                let settlement = settlement.clone();
                async move {
                    let entry = match round {
                        0 => entry.clone(),
                        _ => match self.store.get_dispatch(key).await? {
                            Some(fresh) => fresh,
                            None => return Ok(Commit::SubjectGone),
                        },
                    };
                    let moved_on = entry.crm_sync.as_ref().is_none_or(|state| {
                        state.status != from.status || state.attempts != from.attempts
                    });
                    if moved_on {
                        return Ok(Commit::SubjectGone);
                    }
                    let mut changes = DueChanges::settling(settlement.clone());
                    if to.status == CrmSyncStatus::Failed {
                        let subscriptions = self
                            .store
                            .list_webhooks(entry.account_id, &PageRequest::first(100, false))
                            .await?
                            .items;
                        let failed = DispatchEntry {
                            crm_sync: Some(to.clone()),
                            ..entry.clone()
                        };
                        let schedule = |id, subject, due_at| claimed.schedule(id, subject, due_at);
                        add_deliveries(
                            &mut changes,
                            &subscriptions,
                            EventType::CrmSyncFailed,
                            &failed,
                            None,
                            self.clock.now(),
                            &schedule,
                        )
                        .map_err(DomainError::internal)?;
                    }
                    self.store.update_crm_sync(key, from, to, &changes).await?;
                    tracing::info!(
                        entry_id = %key.id,
                        router_id = %key.router_id,
                        status = label,
                        attempts = to.attempts,
                        error = to.error.as_deref().unwrap_or(""),
                        "CRM sync state"
                    );
                    Ok(Commit::Stored {
                        label,
                        settlement,
                        spawned: changes.put,
                    })
                }
            })
            .await
    }

    /// An attempt of a claimed item found by a message, a timer or the sweeper: drops it when
    /// the entry moved on; `superseded` when the record's owner is no longer the synced member;
    /// `failed` when an id went missing; else sends one more request.
    ///
    /// Errors: a store failure (nothing stored; the lease lapses and the sweeper resumes it).
    async fn resume(&self, claimed: &Claimed) -> Result<Ran, DomainError> {
        let subject: SyncSubject = claimed.subject()?;
        let key = subject.key.clone();
        let expected = subject.attempts.unwrap_or(claimed.item.attempt);
        let entry = self.store.get_dispatch(&key).await?;
        let Some((entry, from)) = entry.and_then(|entry| {
            let state = entry
                .crm_sync
                .clone()
                .filter(|s| !s.status.is_final() && s.attempts == expected)?;
            Some((entry, state))
        }) else {
            return claimed.drop_item().await;
        };
        let record = match entry.record_id() {
            Some(id) => {
                self.store
                    .get_record(entry.account_id, entry.object_type, id)
                    .await?
            }
            None => None,
        };
        let owner = record
            .as_ref()
            .zip(entry.owner_field.as_deref())
            .and_then(|(r, field)| r.value(field));
        if record.is_none() || owner != entry.user.as_ref().map(Email::as_str) {
            let superseded = CrmSyncState {
                status: CrmSyncStatus::Superseded,
                ..from.clone()
            };
            return self
                .store_state(claimed, &entry, &from, &superseded, claimed.done())
                .await;
        }
        match self.prepare_again(&entry, record.as_ref()).await? {
            Ok(update) => {
                let retries = subject.retries.unwrap_or(from.attempts);
                let deadline = std::time::Instant::now() + ATTEMPT_BOUND;
                let (to, settlement) = self
                    .attempt(claimed, &key, &from, retries, &update, deadline)
                    .await;
                self.store_state(claimed, &entry, &from, &to, settlement)
                    .await
            }
            Err(error) => {
                let failed = CrmSyncState {
                    status: CrmSyncStatus::Failed,
                    attempts: from.attempts,
                    error: Some(error),
                };
                self.store_state(claimed, &entry, &from, &failed, claimed.done())
                    .await
            }
        }
    }

    async fn prepare_again(
        &self, entry: &DispatchEntry, record: Option<&Record>,
    ) -> Result<Result<OwnerUpdate, String>, DomainError> {
        let account = self.store.get_account(entry.account_id).await?;
        let member = match &entry.user {
            Some(email) => {
                self.store
                    .find_member_by_email(entry.account_id, email.as_str())
                    .await?
            }
            None => None,
        };
        let connection = match &account {
            Some(account) => open_crm(self.sealer.as_ref(), account).await,
            None => None,
        };
        Ok(match (account, record, member) {
            (Some(_), Some(record), Some(member)) => {
                Self::prepare(connection.as_ref(), entry.object_type, record, &member)
            }
            (None, _, _) => Err(NO_CONNECTION.to_string()),
            (_, None, _) => Err(RECORD_WITHOUT_EXTERNAL_ID.to_string()),
            (_, _, None) => Err(OWNER_WITHOUT_EXTERNAL_ID.to_string()),
        })
    }
}

#[async_trait]
impl DueJob for CrmSync {
    fn kind(&self) -> DueKind {
        DueKind::CrmSync
    }

    async fn run(&self, claimed: &Claimed) -> Result<Ran, DomainError> {
        self.resume(claimed).await
    }
}

/// The label of a state, as in the history (`synced`, `retrying`, ...).
fn label_of(status: CrmSyncStatus) -> &'static str {
    match status {
        CrmSyncStatus::Pending => "pending",
        CrmSyncStatus::Synced => "synced",
        CrmSyncStatus::Retrying => "retrying",
        CrmSyncStatus::Failed => "failed",
        CrmSyncStatus::Superseded => "superseded",
    }
}

fn result_of(state: &CrmSyncState) -> SyncResult {
    match (&state.status, &state.error) {
        (CrmSyncStatus::Synced, _) => SyncResult::Synced,
        (_, Some(error)) => SyncResult::Failed(error.clone()),
        (_, None) => SyncResult::Failed("CRM sync did not complete".into()),
    }
}
