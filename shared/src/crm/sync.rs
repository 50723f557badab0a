//! The CRM sync of one assignment (BEHAVIOR 7): the checks before a request, the first attempt
//! right after the commit, the retries, and the sync state on the history entry
//! (`crm_sync: {status, attempts, error}`, BEHAVIOR 8).
//!
//! State changes are conditional writes on the entry ([`Store::update_crm_sync`]): a state
//! moves only from `retrying` after the expected number of attempts, so a duplicate retry (a
//! redelivered message) changes nothing, and `synced`, `failed` and `superseded` never change
//! again.

use super::port::{
    CrmClient, CrmFailure, OwnerUpdate, NO_CONNECTION, OWNER_WITHOUT_EXTERNAL_ID,
    RECORD_WITHOUT_EXTERNAL_ID,
};
use super::retry::{CrmRetry, RetryDelays, RetryQueue};
use crate::clock::Clock;
use crate::error::{DomainError, ErrorChain};
use crate::model::account::Account;
use crate::model::dispatch::{CrmSyncState, CrmSyncStatus, DispatchEntry, DispatchEntryKey};
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::record::Record;
use crate::store::{Store, StoreError};
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::Weak;
use std::time::Duration;

/// How the sync of an assignment went, as far as the dispatch answer is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncResult {
    /// The CRM took the owner.
    Synced,
    /// It did not (yet): the answer adds `crm_sync_failed: true` and this `crm_error`. Retries
    /// may still follow.
    Failed(String),
}

/// What a retry did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryOutcome {
    /// The entry is not `retrying` after the retry's attempt count (a duplicate, or it ended).
    Dropped,
    /// Not due yet: handed back to the queue for the time that remains.
    Postponed,
    /// The record's owner changed: `superseded`.
    Superseded,
    /// An attempt was made (or the ids went missing); the entry's new state.
    Attempted(CrmSyncState),
}

/// The CRM sync service of one instance: the CRM client, the store holding the history, the
/// retry delays and where retries wait.
pub struct CrmSync {
    client: Arc<dyn CrmClient>,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    delays: RetryDelays,
    queue: Arc<dyn RetryQueue>,
}

impl std::fmt::Debug for CrmSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrmSync")
            .field("delays", &self.delays)
            .finish_non_exhaustive()
    }
}

impl CrmSync {
    /// A sync whose retries go to `queue`.
    pub fn with_queue(
        client: Arc<dyn CrmClient>,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        delays: RetryDelays,
        queue: Arc<dyn RetryQueue>,
    ) -> Arc<Self> {
        Arc::new(Self {
            client,
            store,
            clock,
            delays,
            queue,
        })
    }

    /// A sync whose retries sleep in this process ([`InProcessRetries`]).
    pub fn in_process(
        client: Arc<dyn CrmClient>,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        delays: RetryDelays,
    ) -> Arc<Self> {
        Arc::new_cyclic(|sync| Self {
            client,
            store,
            clock,
            delays,
            queue: Arc::new(InProcessRetries::new(sync.clone())),
        })
    }

    /// The retry delays.
    pub fn delays(&self) -> &RetryDelays {
        &self.delays
    }

    /// The checks before any request (BEHAVIOR 7's first three rows, in that order): the
    /// account's connection, the record's `external_id`, the owner's `external_id`.
    ///
    /// Errors: the `crm_error` of the first that is missing (final at once, no request).
    pub fn prepare(
        account: &Account,
        object_type: ObjectType,
        record: &Record,
        owner: &Member,
    ) -> Result<OwnerUpdate, String> {
        let connection = account.crm.as_ref().ok_or(NO_CONNECTION)?;
        let record_external_id = record
            .value("external_id")
            .filter(|v| !v.trim().is_empty())
            .ok_or(RECORD_WITHOUT_EXTERNAL_ID)?;
        let owner_external_id = owner
            .external_id
            .as_deref()
            .filter(|v| !v.trim().is_empty())
            .ok_or(OWNER_WITHOUT_EXTERNAL_ID)?;
        Ok(OwnerUpdate {
            base_url: connection.base_url.clone(),
            access_token: connection.access_token.clone(),
            object_type,
            record_external_id: record_external_id.to_string(),
            owner_external_id: owner_external_id.to_string(),
        })
    }

    /// The state an assignment's entry is written with: `retrying` with no attempt when a
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

    /// The first attempt, right after the assignment of entry `key` committed (its state is
    /// `retrying` with 0 attempts). A failure that can pass by itself schedules the first retry.
    /// The answer says what the CRM did even when the new state could not be stored (logged).
    pub async fn first_attempt(&self, key: &DispatchEntryKey, update: &OwnerUpdate) -> SyncResult {
        let state = match self.request(key, 1, update).await {
            Ok(state) => state,
            Err(e) => {
                // Unreachable after a first attempt (see `after_failure`); kept total.
                tracing::error!(entry_id = %key.id, error = %e, "CRM sync retry not scheduled");
                CrmSyncState {
                    status: CrmSyncStatus::Failed,
                    attempts: 1,
                    error: Some("CRM sync retry could not be scheduled".into()),
                }
            }
        };
        match self.store.update_crm_sync(key, 0, &state).await {
            Ok(()) => log_attempt(key, &state),
            Err(error) => tracing::error!(
                entry_id = %key.id,
                error = %ErrorChain(&error),
                "CRM sync state not stored"
            ),
        }
        result_of(&state)
    }

    /// A retry message from the dispatch queue: postponed while not due (SQS delays at most 15
    /// minutes), else [`Self::retry`].
    ///
    /// Errors: as [`Self::retry`]; the message is then reported failed and redelivered.
    pub async fn handle_message(&self, retry: &CrmRetry) -> Result<RetryOutcome, DomainError> {
        let now = self.clock.now();
        if let Ok(remaining) = (retry.not_before - now).to_std() {
            if remaining > Duration::from_secs(1) {
                self.queue
                    .schedule(retry.clone(), remaining)
                    .await
                    .map_err(DomainError::Internal)?;
                return Ok(RetryOutcome::Postponed);
            }
        }
        self.retry(retry).await
    }

    /// Runs a due retry: drops it when the entry moved on; `superseded` when the record's owner
    /// is no longer the synced member; else checks the ids again and sends one more request.
    ///
    /// Errors: a store failure, or the next retry could not be scheduled (nothing stored: a
    /// redelivery runs this retry again).
    pub async fn retry(&self, retry: &CrmRetry) -> Result<RetryOutcome, DomainError> {
        let key = retry.entry();
        let Some(entry) = self.store.get_dispatch(&key).await? else {
            return Ok(RetryOutcome::Dropped);
        };
        let Some(state) = entry
            .crm_sync
            .clone()
            .filter(|s| s.status == CrmSyncStatus::Retrying && s.attempts == retry.attempts)
        else {
            return Ok(RetryOutcome::Dropped);
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
        if record.is_none() || owner != entry.user.as_deref() {
            let superseded = CrmSyncState {
                status: CrmSyncStatus::Superseded,
                attempts: state.attempts,
                error: state.error.clone(),
            };
            return match self
                .store
                .update_crm_sync(&key, state.attempts, &superseded)
                .await
            {
                Ok(()) => {
                    log_state(&entry, &superseded);
                    Ok(RetryOutcome::Superseded)
                }
                Err(StoreError::Conflict) => Ok(RetryOutcome::Dropped),
                Err(e) => Err(e.into()),
            };
        }
        let prepared = self.prepare_again(&entry, record.as_ref()).await?;
        let update = match prepared {
            Ok(update) => update,
            Err(error) => {
                let failed = CrmSyncState {
                    status: CrmSyncStatus::Failed,
                    attempts: state.attempts,
                    error: Some(error),
                };
                return self.store_state(&entry, state.attempts, failed).await;
            }
        };
        let next = self
            .request(&key, state.attempts + 1, &update)
            .await
            .map_err(DomainError::Internal)?;
        match self
            .store
            .update_crm_sync(&key, state.attempts, &next)
            .await
        {
            Ok(()) => {
                log_attempt(&key, &next);
                Ok(RetryOutcome::Attempted(next))
            }
            Err(StoreError::Conflict) => Ok(RetryOutcome::Dropped),
            Err(e) => Err(e.into()),
        }
    }

    async fn prepare_again(
        &self,
        entry: &DispatchEntry,
        record: Option<&Record>,
    ) -> Result<Result<OwnerUpdate, String>, DomainError> {
        let account = self.store.get_account(entry.account_id).await?;
        let member = match &entry.user {
            Some(email) => {
                self.store
                    .find_member_by_email(entry.account_id, email)
                    .await?
            }
            None => None,
        };
        Ok(match (account, record, member) {
            (Some(account), Some(record), Some(member)) => {
                Self::prepare(&account, entry.object_type, record, &member)
            }
            (None, _, _) => Err(NO_CONNECTION.to_string()),
            (_, None, _) => Err(RECORD_WITHOUT_EXTERNAL_ID.to_string()),
            (_, _, None) => Err(OWNER_WITHOUT_EXTERNAL_ID.to_string()),
        })
    }

    async fn store_state(
        &self,
        entry: &DispatchEntry,
        expected_attempts: u32,
        state: CrmSyncState,
    ) -> Result<RetryOutcome, DomainError> {
        match self
            .store
            .update_crm_sync(&entry.key(), expected_attempts, &state)
            .await
        {
            Ok(()) => {
                log_state(entry, &state);
                Ok(RetryOutcome::Attempted(state))
            }
            Err(StoreError::Conflict) => Ok(RetryOutcome::Dropped),
            Err(e) => Err(e.into()),
        }
    }

    /// Sends request number `attempts` for entry `key` and returns the entry's new state; a
    /// failure that can pass by itself with a delay left schedules the next retry before the
    /// state is stored (so a crash between the two never loses it).
    ///
    /// Errors: the next retry could not be scheduled (only after a retry's request: the retry
    /// message is then redelivered).
    async fn request(
        &self,
        key: &DispatchEntryKey,
        attempts: u32,
        update: &OwnerUpdate,
    ) -> Result<CrmSyncState, crate::error::BoxError> {
        match self.client.set_owner(update).await {
            Ok(()) => Ok(CrmSyncState {
                status: CrmSyncStatus::Synced,
                attempts,
                error: None,
            }),
            Err(failure) => self.after_failure(key, attempts, failure).await,
        }
    }

    /// The state after a failed request number `attempts`: `retrying` with the next retry
    /// scheduled, or `failed`.
    async fn after_failure(
        &self,
        key: &DispatchEntryKey,
        attempts: u32,
        failure: CrmFailure,
    ) -> Result<CrmSyncState, crate::error::BoxError> {
        let next = failure
            .transient
            .then(|| self.delays.after_attempt(attempts))
            .flatten();
        let Some(delay) = next else {
            return Ok(CrmSyncState {
                status: CrmSyncStatus::Failed,
                attempts,
                error: Some(failure.error),
            });
        };
        let delay = delay.max(failure.retry_after.unwrap_or(Duration::ZERO));
        let due = self.clock.now()
            + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::zero());
        let retry = CrmRetry::new(key, attempts, due);
        match self.queue.schedule(retry, delay).await {
            Ok(()) => Ok(CrmSyncState {
                status: CrmSyncStatus::Retrying,
                attempts,
                error: Some(failure.error),
            }),
            Err(e) if attempts == 1 => {
                // No message to redeliver after the first attempt: say so, finally.
                tracing::error!(entry_id = %key.id, error = %e, "CRM sync retry not scheduled");
                Ok(CrmSyncState {
                    status: CrmSyncStatus::Failed,
                    attempts,
                    error: Some(failure.error),
                })
            }
            Err(e) => Err(e),
        }
    }
}

/// Retries in this process: a task sleeps, then runs the retry (the local server without a
/// queue). Retries die with the process.
pub struct InProcessRetries {
    sync: Weak<CrmSync>,
}

impl InProcessRetries {
    /// Retries run by `sync` (held weakly: the sync owns its queue).
    pub fn new(sync: Weak<CrmSync>) -> Self {
        Self { sync }
    }
}

#[async_trait]
impl RetryQueue for InProcessRetries {
    async fn schedule(
        &self,
        retry: CrmRetry,
        delay: Duration,
    ) -> Result<(), crate::error::BoxError> {
        let sync = self.sync.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(sync) = sync.upgrade() {
                if let Err(error) = sync.retry(&retry).await {
                    tracing::error!(
                        entry_id = %retry.entry_id,
                        error = %ErrorChain(&error),
                        "CRM sync retry failed"
                    );
                }
            }
        });
        Ok(())
    }
}

fn log_attempt(key: &DispatchEntryKey, state: &CrmSyncState) {
    tracing::info!(
        entry_id = %key.id,
        router_id = %key.router_id,
        status = ?state.status,
        attempts = state.attempts,
        error = state.error.as_deref().unwrap_or(""),
        "CRM sync attempt"
    );
}

fn result_of(state: &CrmSyncState) -> SyncResult {
    match (&state.status, &state.error) {
        (CrmSyncStatus::Synced, _) => SyncResult::Synced,
        (_, Some(error)) => SyncResult::Failed(error.clone()),
        (_, None) => SyncResult::Failed("CRM sync did not complete".into()),
    }
}

fn log_state(entry: &DispatchEntry, state: &CrmSyncState) {
    tracing::info!(
        entry_id = %entry.id,
        router_id = %entry.router_id,
        status = ?state.status,
        attempts = state.attempts,
        error = state.error.as_deref().unwrap_or(""),
        "CRM sync state"
    );
}
