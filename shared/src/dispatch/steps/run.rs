//! What a run of the steps is and what they share: the run ([`Run`]: what is asked, by whom,
//! from where), what the engine hands the steps ([`Context`]), what a run learns on its way
//! ([`Trace`]), and why a step stops it ([`Stop`]).

use crate::clock::Clock;
use crate::dispatch::directory::DirectoryCache;
use crate::dispatch::explain::Explanation;
use crate::dispatch::hints::RouterHints;
use crate::dispatch::outcome::Skip;
use crate::dispatch::request::{AccountContext, DispatchRequest};
use crate::error::DomainError;
use crate::fields::cache::CatalogueCache;
use crate::model::dispatch::{DispatchSource, MessageDeduplicationId};
use crate::model::router::Router;
use crate::model::webhook::WebhookSubscription;
use crate::routers::revision::RevisionChoice;
use crate::sla::{SlaMinute, SlaRun};
use crate::store::{DispatchPorts, StoreError};
use crate::webhooks::SubscriptionCache;
use std::sync::Arc;

/// Why a step stopped the run.
#[derive(Debug)]
pub enum Stop {
    /// A non-error outcome (200 with only `message`).
    Skip(Skip),
    /// A failure (500).
    Failed(DomainError),
    /// An SLA reassignment found the record changed since its check read it (BEHAVIOR 14):
    /// the check reads it again.
    RecordMoved,
    /// The queue message's de-duplication id was used by a committed write (its marker was
    /// found in the first round): a redelivery, answered `Already processed`.
    AlreadyProcessed,
}

impl From<DomainError> for Stop {
    fn from(e: DomainError) -> Self {
        Self::Failed(e)
    }
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        Self::Failed(e.into())
    }
}

impl From<Skip> for Stop {
    fn from(skip: Skip) -> Self {
        Self::Skip(skip)
    }
}

/// What a step gives the next one, or why the run stops.
pub type Step<T> = Result<T, Stop>;

/// What the engine hands the steps: the store, the clock, the catalogue cache and how long
/// history entries are kept.
pub struct Context<'a> {
    /// The store.
    pub store: &'a dyn DispatchPorts,
    /// The clock.
    pub clock: &'a dyn Clock,
    /// The field catalogues.
    pub catalogues: &'a CatalogueCache,
    /// The accounts and their teams (cached like the catalogues).
    pub directory: &'a DirectoryCache,
    /// What each router's last run here read after the router ([`crate::dispatch::hints`]).
    pub hints: &'a RouterHints,
    /// The accounts' webhook subscriptions as last read here, with their version.
    pub subscriptions: &'a SubscriptionCache,
    /// Opens the accounts' stored CRM tokens.
    pub sealer: &'a dyn crate::secrets::Sealer,
    /// How long a history entry is kept (BEHAVIOR 8: 400 days by default).
    pub history_retention: chrono::Duration,
    /// How long an SLA minute lasts (BEHAVIOR 14: `SLA_MINUTE_SECONDS`).
    pub sla_minute: SlaMinute,
}

/// One run of the engine: what is asked, by whom, and from where.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// Whose account the run is in.
    pub context: AccountContext,
    /// The request.
    pub request: &'a DispatchRequest,
    /// The queued message's de-duplication id, which makes a redelivery a no-op.
    pub deduplication_id: Option<&'a MessageDeduplicationId>,
    /// `api` or `queue` (BEHAVIOR 8 `source`).
    pub source: DispatchSource,
    /// The router as it was read before this run (an SLA check's read of it), so the first
    /// attempt does not read it again. An attempt that lost a race reads it again: a publish
    /// may have moved it on (BEHAVIOR 15).
    pub known_router: Option<&'a Router>,
    /// Whether the run writes (dispatch) and so reads the account's webhook subscriptions to
    /// make its events; explain does not.
    pub writes: bool,
    /// For an SLA reassignment (BEHAVIOR 14): the check that asks for it. The run leaves its
    /// owner out of the pool and ignores `overwrite`; `None` for dispatch and explain.
    pub sla: Option<&'a SlaRun>,
    /// For explain with `revision` (BEHAVIOR 9): the configuration evaluated instead of the
    /// live one, whatever the router's publication state; `None`: the live revision.
    pub revision: Option<RevisionChoice>,
}

impl<'a> Run<'a> {
    /// A dispatch of `request` that writes: `source` `api` with a token's context, `queue` on
    /// the queue path (whose message's `deduplication_id` makes a redelivery a no-op).
    pub fn dispatch(
        context: AccountContext, request: &'a DispatchRequest,
        deduplication_id: Option<&'a MessageDeduplicationId>,
    ) -> Self {
        Self {
            context,
            request,
            deduplication_id,
            source: match context {
                AccountContext::Token(_) => DispatchSource::Api,
                AccountContext::RouterOwner => DispatchSource::Queue,
            },
            known_router: None,
            writes: true,
            sla: None,
            revision: None,
        }
    }
}

/// What a run learned on its way, whatever its end: the router (once found and not archived:
/// the history entry of a stop from step 4 on needs it) and the [`Explanation`].
#[derive(Debug, Default)]
pub struct Trace {
    /// The router, once found in the account and not archived.
    pub router: Option<Router>,
    /// What explain shows.
    pub explanation: Explanation,
    /// The account's enabled webhook subscriptions (for a run that writes), to make the run's
    /// events (BEHAVIOR 13): those this instance kept at the version the first round read, or
    /// listed after it.
    pub subscriptions: Arc<Vec<WebhookSubscription>>,
}
