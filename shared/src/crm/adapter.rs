//! What one CRM says (DESIGN "CRM adapters: one sync, one folder per CRM"): how to get a token,
//! how to find an owner, how to send the update, and how to read an answer (synced, retry,
//! wait without an attempt, final, take a new token). One implementation per CRM, each in a
//! folder of its own ([`super::hubspot`], [`super::salesforce`]); the attempt that drives them
//! ([`super::attempt`]), the sync's states and retries ([`super::sync`]), the memos and the pace
//! are the same for every CRM. A third CRM is one more folder and one line in
//! [`super::client::HttpCrm`].

use super::exchange::{Exchange, Refusal};
use super::port::{CrmFailure, Next};
use crate::model::account::{CrmProvider, CrmSecret};
use crate::secrets::OpenCrmConnection;
use async_trait::async_trait;
use reqwest::header::HeaderMap;
use std::time::{Duration, Instant, SystemTime};

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

/// What the attempt may do about a refusal, once, before giving the failure up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// Nothing: the failure stands.
    None,
    /// The access token was refused (HubSpot's 401, Salesforce's `INVALID_SESSION_ID`): take a
    /// new one and send once more (an OAuth app's connection only).
    Reauthenticate,
    /// The owner id was refused (HubSpot's `INVALID_OWNER_ID`): when it was found by e-mail,
    /// forget it, look it up once more and send once more.
    LookUpOwnerAgain,
}

/// How a non-2xx answer reads: the detail of `CRM answered <status>: <detail>` (at most 200
/// characters, from a redacted body), what follows, and what the attempt may do first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    /// The detail.
    pub detail: String,
    /// What follows when the failure stands.
    pub next: Next,
    /// What the attempt may do once first.
    pub remedy: Remedy,
}

/// What an answer's headers say about the account's pace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PaceSignal {
    /// The CRM's allowance is spent: no request of the account for this long (HubSpot's
    /// `X-HubSpot-RateLimit-Remaining: 0`, `-Secondly-Remaining: 0`).
    Hold(Duration),
    /// The org's API usage (Salesforce's `Sforce-Limit-Info: api-usage=N/M`): at or above the
    /// connection's `max_api_share` the account's syncs wait `hold`; below it, `hold` is `None`
    /// and a usage hold ends.
    ApiUsage {
        /// Requests used (`N`).
        used: u64,
        /// The org's daily allowance (`M`).
        limit: u64,
        /// How long the account's syncs wait, when the usage is at or above the share.
        hold: Option<Duration>,
    },
}

/// One CRM's rules (see the module's doc).
#[async_trait]
pub trait CrmAdapter: Send + Sync + 'static {
    /// The CRM.
    fn provider(&self) -> CrmProvider;

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

    /// How a non-2xx answer `status` with `headers` and the redacted body `text` reads: the
    /// provider's retry classification table.
    fn classify(&self, status: u16, headers: &HeaderMap, text: &str, now: SystemTime)
        -> Classified;

    /// What an answer's headers say about the account's pace.
    fn limits(&self, headers: &HeaderMap, connection: &OpenCrmConnection) -> Vec<PaceSignal>;

    /// Requests per second per account the connection allows (BEHAVIOR 7: 10, or HubSpot's
    /// `max_requests_per_second`).
    fn requests_per_second(&self, connection: &OpenCrmConnection) -> u32;
}
