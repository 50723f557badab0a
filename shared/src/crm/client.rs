//! The CRM port over HTTP ([`HttpCrm`]): one per instance, it holds the guarded HTTP client,
//! the pace, the memos and one adapter per CRM, and sends each owner update through the adapter
//! of its connection's provider ([`super::attempt::run`]).

use super::adapter::CrmAdapter;
use super::attempt::{self, KeepFor, Memos};
use super::exchange::Exchange;
use super::hubspot::HubSpot;
use super::pace::Pace;
use super::port::{CrmClient, CrmFailure, OwnerUpdate, Synced, REQUEST_TIMEOUT};
use super::salesforce::Salesforce;
use crate::model::account::CrmProvider;
use crate::outbound::{ClientBuildError, OutboundClient, OutboundPolicy};
use crate::store::PaceStore;
use async_trait::async_trait;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Bytes of an answer's body read at most (a JSON `message`, a token, a page of owners fit).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// What an [`HttpCrm`] keeps and how it paces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrmSettings {
    /// How long tokens and owners are kept.
    pub keep: KeepFor,
    /// How long Salesforce's daily total and an API usage at the connection's share wait
    /// (BEHAVIOR 7: 1 hour; `CRM_SYNC_LIMIT_WAIT`).
    pub limit_wait: Duration,
}

impl Default for CrmSettings {
    fn default() -> Self {
        Self {
            keep: KeepFor::default(),
            limit_wait: super::salesforce::LIMIT_WAIT,
        }
    }
}

/// The CRM port over HTTP (see the module's doc).
#[derive(derive_more::Debug)]
pub struct HttpCrm {
    http: OutboundClient,
    settings: CrmSettings,
    pace: Pace,
    #[debug(skip)]
    memos: Memos,
    hubspot: HubSpot,
    salesforce: Salesforce,
}

impl HttpCrm {
    /// A client under `policy` with BEHAVIOR 7's 3 s timeout per request, pacing the accounts'
    /// requests in `pace` (the store every instance shares).
    ///
    /// Errors: the TLS configuration or the client cannot be built.
    pub fn new(policy: OutboundPolicy, pace: Arc<dyn PaceStore>) -> Result<Self, ClientBuildError> {
        Self::with_timeout(policy, REQUEST_TIMEOUT, pace)
    }

    /// A client whose requests time out after `timeout` (connection and answer included).
    ///
    /// Errors: as [`Self::new`].
    pub fn with_timeout(
        policy: OutboundPolicy, timeout: Duration, pace: Arc<dyn PaceStore>,
    ) -> Result<Self, ClientBuildError> {
        Ok(Self::over(
            OutboundClient::new(policy, timeout, MAX_BODY_BYTES)?,
            pace,
        ))
    }

    /// A client over the guarded `http` client (tests give it a fixed resolver).
    pub fn over(http: OutboundClient, pace: Arc<dyn PaceStore>) -> Self {
        Self::with_settings(http, CrmSettings::default(), pace)
    }

    /// A client over `http` keeping owners and tokens as `settings` say (tests shorten them).
    pub fn with_settings(
        http: OutboundClient, settings: CrmSettings, pace: Arc<dyn PaceStore>,
    ) -> Self {
        Self {
            http,
            settings,
            pace: Pace::new(pace),
            memos: Memos::default(),
            hubspot: HubSpot {
                token_margin: settings.keep.token_margin,
            },
            salesforce: Salesforce {
                limit_wait: settings.limit_wait,
            },
        }
    }

    fn adapter(&self, provider: CrmProvider) -> &dyn CrmAdapter {
        match provider {
            CrmProvider::HubSpot => &self.hubspot,
            CrmProvider::Salesforce => &self.salesforce,
        }
    }
}

#[async_trait]
impl CrmClient for HttpCrm {
    async fn set_owner(
        &self, update: &OwnerUpdate, deadline: Instant,
    ) -> Result<Synced, CrmFailure> {
        let adapter = self.adapter(update.connection.provider);
        let mut exchange =
            Exchange::new(&self.http, &self.pace, adapter.reader(), update, deadline);
        let ran = attempt::run(&mut exchange, adapter, &self.memos, self.settings.keep).await;
        let updates = exchange.updates();
        match ran {
            Ok(()) => Ok(Synced { updates }),
            Err(failure) => Err(CrmFailure {
                // Every text kept is redacted once more, whatever produced it.
                error: exchange.redact(&failure.error),
                updates,
                ..failure
            }),
        }
    }
}

/// An [`HttpCrm`] built at its first request: an instance whose requests sync nothing never
/// builds the HTTP client, and a cold start does not pay for it. Built once and kept for the
/// instance's life; a build that fails (the TLS configuration, never seen) fails that attempt
/// as transient and is tried again at the next.
#[derive(derive_more::Debug)]
pub struct LazyHttpCrm {
    policy: OutboundPolicy,
    timeout: Duration,
    settings: CrmSettings,
    #[debug(skip)]
    pace: Arc<dyn PaceStore>,
    client: OnceLock<HttpCrm>,
}

impl LazyHttpCrm {
    /// A client under `policy` with BEHAVIOR 7's 3 s timeout, pacing in `pace`, not built yet.
    pub fn new(policy: OutboundPolicy, pace: Arc<dyn PaceStore>) -> Self {
        Self::with_timeout(policy, REQUEST_TIMEOUT, pace)
    }

    /// A client whose requests time out after `timeout`, not built yet.
    pub fn with_timeout(
        policy: OutboundPolicy, timeout: Duration, pace: Arc<dyn PaceStore>,
    ) -> Self {
        Self {
            policy,
            timeout,
            settings: CrmSettings::default(),
            pace,
            client: OnceLock::new(),
        }
    }

    /// The same client keeping and waiting as `settings` say.
    pub fn with_settings(mut self, settings: CrmSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The client, built now if this is the first request.
    ///
    /// Errors: as [`HttpCrm::new`].
    pub fn client(&self) -> Result<&HttpCrm, ClientBuildError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let http = OutboundClient::new(self.policy, self.timeout, MAX_BODY_BYTES)?;
        let built = HttpCrm::with_settings(http, self.settings, self.pace.clone());
        Ok(self.client.get_or_init(|| built))
    }

    /// Whether the client was built.
    pub fn is_built(&self) -> bool {
        self.client.get().is_some()
    }
}

#[async_trait]
impl CrmClient for LazyHttpCrm {
    async fn set_owner(
        &self, update: &OwnerUpdate, deadline: Instant,
    ) -> Result<Synced, CrmFailure> {
        let client = self.client().map_err(|e| {
            CrmFailure::transient(format!("CRM request failed: no HTTP client: {e}"), None)
        })?;
        client.set_owner(update, deadline).await
    }
}
