//! One attempt of an owner update, the same for every CRM (BEHAVIOR 7): the access token (the
//! credentials' own, or one kept from an earlier grant, or a new grant), the owner (the member's
//! `external_id`, or one found by e-mail earlier, or a new look-up), the update; then, once each:
//! a new token and one more send when the token was refused, and a new look-up and one more send
//! when an owner found by e-mail was refused. The adapter says how each step is done and how
//! each answer reads ([`super::adapter::CrmAdapter`]).

use super::adapter::{CrmAdapter, Session};
use super::exchange::{Exchange, Refusal};
use super::memo::Memo;
use super::port::{CrmFailure, Owner};
use super::reading::Remedy;
use crate::model::account::{CrmCredentials, CrmProvider};
use crate::types::ids::{AccountId, MemberId};
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

/// What one instance keeps between attempts, for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepFor {
    /// How long an owner found by e-mail is remembered (BEHAVIOR 7: at most 1 hour).
    pub owner_ttl: Duration,
    /// How long before its expiry an access token is replaced (BEHAVIOR 7: 60 s).
    pub token_margin: Duration,
}

impl Default for KeepFor {
    fn default() -> Self {
        Self {
            owner_ttl: Duration::from_secs(3600),
            token_margin: Duration::from_secs(60),
        }
    }
}

/// The key of a kept access token: the account, its CRM and a digest of the credentials it was
/// granted for (a connection provisioned anew does not reuse it).
pub type SessionKey = (AccountId, CrmProvider, [u8; 32]);

/// An owner found by e-mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundOwner {
    /// The e-mail looked up (a member whose e-mail changed is looked up again).
    pub email: String,
    /// The CRM's id of the active user with that e-mail.
    pub id: String,
}

/// The instance's memos: access tokens and owners found by e-mail.
#[derive(Debug, Default)]
pub struct Memos {
    /// Access tokens.
    pub sessions: Memo<SessionKey, Session, CrmFailure>,
    /// Owners found by e-mail, per account and member.
    pub owners: Memo<(AccountId, MemberId), FoundOwner, Refusal>,
}

fn credentials_digest(credentials: &CrmCredentials) -> [u8; 32] {
    let mut hash = Sha256::new();
    match credentials {
        CrmCredentials::PrivateApp(token) => hash.update(token.expose()),
        CrmCredentials::OAuth(app) => {
            for part in [
                app.client_id.as_str(),
                app.client_secret.expose(),
                app.refresh_token.as_ref().map_or("", |t| t.expose()),
            ] {
                hash.update((part.len() as u64).to_be_bytes());
                hash.update(part);
            }
        }
    }
    hash.finalize().into()
}

/// One attempt over `exchange`, as `adapter` does each step (see the module's doc).
///
/// Errors: the failure that stands (its `crm_error` and what follows).
pub async fn run(
    exchange: &mut Exchange<'_>, adapter: &dyn CrmAdapter, memos: &Memos, keep: KeepFor,
) -> Result<(), CrmFailure> {
    let standing = adapter.standing_session(exchange.connection())?;
    let renewable = standing.is_none();
    let mut session = match standing {
        Some(session) => session,
        None => session(exchange, adapter, memos, None).await?,
    };
    let mut renewed = false;
    let mut looked_again = false;
    let mut forget: Option<String> = None;
    loop {
        let owner = owner_id(exchange, adapter, memos, keep, &session, forget.take()).await;
        let refusal = match owner {
            Ok((owner_id, looked_up)) => {
                match adapter.update(exchange, &session, &owner_id).await {
                    Ok(()) => return Ok(()),
                    Err(refusal)
                        if refusal.remedy == Remedy::LookUpOwnerAgain
                            && looked_up
                            && !looked_again =>
                    {
                        looked_again = true;
                        tracing::info!(
                            account_id = %exchange.account(),
                            provider = %adapter.provider(),
                            "the CRM refused the owner found by e-mail; looking it up again"
                        );
                        forget = Some(owner_id);
                        continue;
                    }
                    Err(refusal) => refusal,
                }
            }
            Err(refusal) => refusal,
        };
        if refusal.remedy == Remedy::Reauthenticate && renewable && !renewed {
            renewed = true;
            session = self::session(exchange, adapter, memos, Some(&session)).await?;
            continue;
        }
        return Err(refusal.failure);
    }
}

/// The access token to present: a kept one, or a new grant when none is kept, it is about to
/// expire, or it is `stale` (the one just refused).
async fn session(
    exchange: &mut Exchange<'_>, adapter: &dyn CrmAdapter, memos: &Memos, stale: Option<&Session>,
) -> Result<Session, CrmFailure> {
    let connection = exchange.connection();
    let key = (
        connection.account_id,
        connection.provider,
        credentials_digest(&connection.credentials),
    );
    let kept = memos
        .sessions
        .get_or_load(
            &key,
            |kept| kept.value.replace_at > Instant::now() && Some(&kept.value) != stale,
            || adapter.grant(exchange),
        )
        .await?;
    exchange.keep_secret(kept.token.expose());
    Ok(kept)
}

/// The owner id to set and whether it was found by e-mail; a kept one equal to `forget` is
/// looked up again.
async fn owner_id(
    exchange: &mut Exchange<'_>, adapter: &dyn CrmAdapter, memos: &Memos, keep: KeepFor,
    session: &Session, forget: Option<String>,
) -> Result<(String, bool), Refusal> {
    let (member_id, email) = match &exchange.update.owner {
        Owner::Id(id) => return Ok((id.clone(), false)),
        Owner::ByEmail { member_id, email } => (*member_id, email.clone()),
    };
    let key = (exchange.account(), member_id);
    let found = memos
        .owners
        .get_or_load(
            &key,
            |kept| {
                kept.at.elapsed() < keep.owner_ttl
                    && kept.value.email == email
                    && forget.as_deref() != Some(kept.value.id.as_str())
            },
            || async {
                let id = adapter.find_owner(exchange, session, &email).await?;
                Ok(FoundOwner {
                    email: email.clone(),
                    id,
                })
            },
        )
        .await?;
    Ok((found.id, true))
}
