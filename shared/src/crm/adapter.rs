//! What one CRM says (`docs/design.md`, "CRM adapters: one sync, one folder per CRM"): how to get a
//! token, how to find an owner, how to send the update, and how to read an answer (synced, retry,
//! wait without an attempt, final, take a new token). One implementation per CRM, each in a
//! folder of its own ([`super::hubspot`], [`super::salesforce`]); the attempt that drives them
//! ([`super::attempt`]), the sync's states and retries ([`super::sync`]), the memos and the pace
//! are the same for every CRM. A third CRM is one more folder and one line in
//! [`super::client::HttpCrm`].

use super::exchange::{Exchange, Refusal};
use super::port::CrmFailure;
use super::reading::ReadAnswers;
use crate::model::account::{CrmProvider, CrmSecret};
use crate::secrets::OpenCrmConnection;
use async_trait::async_trait;
use std::time::{Duration, Instant};

/// The longest an access token is kept, whatever its grant says (a CRM answer's `expires_in`
/// is clamped to this; BEHAVIOR 7: a token lifetime at most 24 h).
pub const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// What a grant gave: the access token and where the REST calls go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The access token.
    pub token: CrmSecret,
    /// The base of the REST calls, without a trailing `/` (HubSpot: the connection's base URL;
    /// Salesforce: the grant's `instance_url`).
    pub api_base: String,
    /// When it is replaced by a new grant (HubSpot: 60 s before its `expires_in`; Salesforce,
    /// which gives no lifetime: [`MAX_TOKEN_LIFETIME`] after the grant, or at its first refusal).
    pub replace_at: Instant,
}

impl Session {
    /// When a token granted at `asked` for `lifetime` (clamped to [`MAX_TOKEN_LIFETIME`]) is
    /// replaced, `margin` before it expires; never past the clamp, never overflowing.
    pub fn replace_at(asked: Instant, lifetime: Duration, margin: Duration) -> Instant {
        let kept = lifetime.min(MAX_TOKEN_LIFETIME).saturating_sub(margin);
        asked.checked_add(kept).unwrap_or(asked)
    }
}

/// One CRM's rules (see the module's doc); how its answers read is its [`ReadAnswers`].
#[async_trait]
pub trait CrmAdapter: ReadAnswers + 'static {
    /// The CRM.
    fn provider(&self) -> CrmProvider;

    /// The adapter as the reader of its answers (what the exchange holds).
    fn reader(&self) -> &dyn ReadAnswers;

    /// The session the credentials give without a grant (a HubSpot private app's token), or
    /// `None` when a grant is needed (an OAuth app: a refused token may then be replaced).
    ///
    /// Errors: a base URL that cannot be read (final).
    fn standing_session(
        &self, connection: &OpenCrmConnection,
    ) -> Result<Option<Session>, CrmFailure>;

    /// A new access token from the CRM's token endpoint.
    ///
    /// Errors: a refused grant (`CRM authorization failed`, final), or the request's failure.
    async fn grant(&self, exchange: &mut Exchange<'_>) -> Result<Session, CrmFailure>;

    /// The CRM's id of the active user with `email`.
    ///
    /// Errors: nobody or several (final), or the request's refusal.
    async fn find_owner(
        &self, exchange: &mut Exchange<'_>, session: &Session, email: &str,
    ) -> Result<String, Refusal>;

    /// The owner update itself: `Ok` on any 2xx.
    ///
    /// Errors: the request's refusal.
    async fn update(
        &self, exchange: &mut Exchange<'_>, session: &Session, owner_id: &str,
    ) -> Result<(), Refusal>;
}
