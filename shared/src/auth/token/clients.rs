//! Tokens of a re-keyed or disabled client are refused within a minute (BEHAVIOR 1). A
//! token carries the key generation its client was at when it was issued (claim
//! `gen`); every function checks it against the client's generation as the store holds it,
//! kept per instance for at most [`MAX_AGE`]: a warm check is a map look-up, and the store is
//! read once per client and minute (never on the hot path of a client seen within it).
//!
//! A token is refused (401 `Unauthorized: invalid token`, as any other refused token) when its
//! client is unknown, disabled, of another account, or at a later generation than the token.
//! A store failure is a 500, not a refusal.

use super::principal::{AuthError, Principal};
use crate::clock::Clock;
use crate::error::DomainError;
use crate::model::account::ApiClient;
use crate::store::AccountStore;
use crate::types::ids::AccountId;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The longest a client's generation is trusted without reading the store again: a change
/// made by provisioning reaches every instance within this (BEHAVIOR 1: 60 s).
pub const MAX_AGE: chrono::Duration = chrono::Duration::seconds(60);

/// Clients remembered at most; past it the map is emptied (a client id reaches it only from a
/// token with our valid signature, so the map holds the provisioned clients and no more).
const CAPACITY: usize = 10_000;

/// What a token's client is, as read from the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    /// Known and enabled: its account and generation.
    Current {
        account_id: AccountId,
        generation: u64,
    },
    /// Unknown or disabled: every token of it is refused.
    ShutOut,
}

impl Standing {
    fn of(client: Option<&ApiClient>) -> Self {
        match client {
            Some(c) if !c.disabled => Self::Current {
                account_id: c.account_id,
                generation: c.generation,
            },
            _ => Self::ShutOut,
        }
    }

    /// Whether a token of `principal` is still good.
    fn admits(self, principal: &Principal) -> bool {
        match self {
            Self::Current {
                account_id,
                generation,
            } => account_id == principal.account_id && principal.generation >= generation,
            Self::ShutOut => false,
        }
    }
}

/// The clients' standings of one instance, each read at most [`MAX_AGE`] ago. Shared by every
/// route of the instance (through its [`super::TokenVerifier`]).
pub struct ClientGenerations {
    store: Arc<dyn AccountStore>,
    clock: Arc<dyn Clock>,
    max_age: chrono::Duration,
    seen: Mutex<HashMap<String, (Standing, DateTime<Utc>), foldhash::fast::RandomState>>,
}

impl std::fmt::Debug for ClientGenerations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientGenerations")
            .field("max_age", &self.max_age)
            .finish()
    }
}

impl ClientGenerations {
    /// Standings read from `store`, aged by `clock`, kept at most [`MAX_AGE`].
    pub fn new(store: Arc<dyn AccountStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            max_age: MAX_AGE,
            seen: Mutex::new(HashMap::default()),
        }
    }

    /// `Ok` when `principal`'s client still admits its token: known, enabled, of the token's
    /// account, not past the token's generation.
    ///
    /// Errors: 401 [`AuthError::InvalidToken`] when it does not; the store's failure (500).
    pub async fn check(&self, principal: &Principal) -> Result<(), DomainError> {
        let now = self.clock.now();
        let standing = match self.remembered(&principal.client_id, now) {
            Some(standing) => standing,
            None => {
                let client = self.store.get_client(&principal.client_id).await?;
                let standing = Standing::of(client.as_ref());
                self.remember(&principal.client_id, standing, now);
                standing
            }
        };
        if standing.admits(principal) {
            Ok(())
        } else {
            tracing::debug!(
                client_id = ?principal.client_id,
                generation = principal.generation,
                "bearer token rejected: its client was re-keyed or disabled"
            );
            Err(AuthError::InvalidToken.into())
        }
    }

    fn remembered(&self, client_id: &str, now: DateTime<Utc>) -> Option<Standing> {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.get(client_id)
            .filter(|(_, read_at)| now - *read_at < self.max_age && *read_at <= now)
            .map(|(standing, _)| *standing)
    }

    fn remember(&self, client_id: &str, standing: Standing, now: DateTime<Utc>) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.len() >= CAPACITY {
            seen.clear();
        }
        seen.insert(client_id.to_owned(), (standing, now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::scope::Scope;
    use crate::clock::FixedClock;
    use crate::store::faulty::FaultyStore;
    use crate::store::memory::MemoryStore;
    use crate::store::ProvisionStore;
    use chrono::TimeZone;
    use std::sync::atomic::Ordering;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 22, 9, 30, 0).unwrap()
    }

    fn client(account: AccountId, generation: u64, disabled: bool) -> ApiClient {
        ApiClient {
            client_id: "c".into(),
            account_id: account,
            secret_hash: "h".into(),
            scopes: vec![Scope::Read],
            disabled,
            generation,
        }
    }

    fn principal(account: AccountId, generation: u64) -> Principal {
        Principal {
            client_id: "c".into(),
            account_id: account,
            scopes: vec![Scope::Read],
            jti: "j".into(),
            generation,
        }
    }

    async fn store_with(client: ApiClient) -> Arc<FaultyStore> {
        let memory = MemoryStore::new();
        let mut plan = crate::model::provision::ProvisionPlan::default();
        plan.accounts.push(crate::model::provision::AccountPlan {
            account: crate::model::account::Account {
                id: client.account_id,
                name: "A".into(),
                active: true,
                assignment_quota: None,
                crm: None,
                created_at: t0(),
            },
            crm: None,
            clients: vec![client],
            client_secrets: vec![],
            roles: vec![],
            holiday_calendars: vec![],
            members: vec![],
            teams: vec![],
            field_definitions: vec![],
            routers: vec![],
            records: vec![],
        });
        memory.provision(&plan).await.unwrap();
        Arc::new(FaultyStore::new(Arc::new(memory)))
    }

    /// The standing is read once, kept for less than a minute and read again at a minute; a
    /// warm check reads nothing (the store is down then, and the check still answers).
    #[tokio::test]
    async fn a_standing_is_read_once_a_minute_at_most() {
        let account = AccountId::from(uuid::Uuid::new_v4());
        let store = store_with(client(account, 1, false)).await;
        let clock = Arc::new(FixedClock::new(t0()));
        let generations = ClientGenerations::new(store.clone(), clock.clone());
        assert!(generations.check(&principal(account, 1)).await.is_ok());
        assert!(
            generations.check(&principal(account, 0)).await.is_err(),
            "a token of an older generation"
        );
        store.faults.backend_down.store(true, Ordering::SeqCst);
        clock.set(t0() + MAX_AGE - chrono::Duration::milliseconds(1));
        assert!(
            generations.check(&principal(account, 1)).await.is_ok(),
            "warm: no store read"
        );
        clock.set(t0() + MAX_AGE);
        let error = generations
            .check(&principal(account, 1))
            .await
            .expect_err("read again, and the store is down");
        assert!(matches!(error, DomainError::Internal(_)), "{error}");
    }

    #[tokio::test]
    async fn unknown_disabled_or_foreign_clients_admit_no_token() {
        let account = AccountId::from(uuid::Uuid::new_v4());
        let other = AccountId::from(uuid::Uuid::new_v4());
        for (stored, principal, admitted) in [
            (Some(client(account, 0, false)), principal(account, 0), true),
            (Some(client(account, 0, false)), principal(account, 3), true),
            (
                Some(client(account, 2, false)),
                principal(account, 1),
                false,
            ),
            (Some(client(account, 0, true)), principal(account, 0), false),
            (Some(client(account, 0, false)), principal(other, 0), false),
            (None, principal(account, 0), false),
        ] {
            let store: Arc<dyn AccountStore> = match stored {
                Some(c) => store_with(c).await,
                None => Arc::new(MemoryStore::new()),
            };
            let generations = ClientGenerations::new(store, Arc::new(FixedClock::new(t0())));
            assert_eq!(
                generations.check(&principal).await.is_ok(),
                admitted,
                "{principal:?}"
            );
        }
    }
}
