//! Opened secrets kept briefly in the process (`docs/decisions.md`, "Work that happens
//! later"): a webhook delivery presents its
//! subscription's signing secrets on every attempt, and opening each with KMS costs a request
//! (and money, and a failure mode) per attempt. [`CachingSealer`] remembers what it opened for a
//! short time, keyed by the sealed value and its context, so retries and bursts of deliveries of
//! one subscription open each secret once.

use super::{SealContext, Sealer};
use crate::error::BoxError;
use crate::model::account::SealedSecret;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A [`Sealer`] that remembers the plaintexts it opened for `ttl`. Sealing is not cached (every
/// new secret is sealed afresh). A failed open is not remembered: the next one asks again.
pub struct CachingSealer {
    inner: Arc<dyn Sealer>,
    ttl: Duration,
    opened: Mutex<HashMap<(String, String), (String, Instant)>>,
}

impl std::fmt::Debug for CachingSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the plaintexts.
        f.debug_struct("CachingSealer")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl CachingSealer {
    /// How long an opened secret is kept by default: a rotation's 24 h overlap is far longer,
    /// and a retired secret stops signing through its `retires_at`, not through the cache.
    pub const TTL: Duration = Duration::from_secs(300);

    /// Most entries kept; beyond, the expired ones are dropped, then all.
    pub const MAX_ENTRIES: usize = 4096;

    /// `inner`, remembering what it opens for `ttl`.
    pub fn new(inner: Arc<dyn Sealer>, ttl: Duration) -> Self {
        Self {
            inner,
            ttl,
            opened: Mutex::new(HashMap::new()),
        }
    }

    fn key(sealed: &SealedSecret, context: &SealContext) -> (String, String) {
        let context = context
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("\u{1f}");
        (sealed.as_str().to_string(), context)
    }
}

#[async_trait]
impl Sealer for CachingSealer {
    async fn seal(&self, plaintext: &str, context: &SealContext) -> Result<SealedSecret, BoxError> {
        self.inner.seal(plaintext, context).await
    }

    async fn open(&self, sealed: &SealedSecret, context: &SealContext) -> Result<String, BoxError> {
        let key = Self::key(sealed, context);
        {
            let opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((plaintext, at)) = opened.get(&key) {
                if at.elapsed() < self.ttl {
                    return Ok(plaintext.clone());
                }
            }
        }
        let plaintext = self.inner.open(sealed, context).await?;
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        if opened.len() >= Self::MAX_ENTRIES {
            let ttl = self.ttl;
            opened.retain(|_, (_, at)| at.elapsed() < ttl);
            if opened.len() >= Self::MAX_ENTRIES {
                opened.clear();
            }
        }
        opened.insert(key, (plaintext.clone(), Instant::now()));
        Ok(plaintext)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::LocalSealer;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts the opens that reach the sealer underneath.
    struct Counting {
        inner: LocalSealer,
        opens: AtomicUsize,
    }

    #[async_trait]
    impl Sealer for Counting {
        async fn seal(&self, p: &str, c: &SealContext) -> Result<SealedSecret, BoxError> {
            self.inner.seal(p, c).await
        }
        async fn open(&self, s: &SealedSecret, c: &SealContext) -> Result<String, BoxError> {
            self.opens.fetch_add(1, Ordering::SeqCst);
            self.inner.open(s, c).await
        }
    }

    fn context(webhook: &str) -> SealContext {
        SealContext::from([
            ("purpose", "test".to_string()),
            ("webhook_id", webhook.into()),
        ])
    }

    #[tokio::test]
    async fn a_secret_is_opened_once_within_the_ttl_and_only_under_its_own_context() {
        let counting = Arc::new(Counting {
            inner: LocalSealer::development(),
            opens: AtomicUsize::new(0),
        });
        let cache = CachingSealer::new(counting.clone(), Duration::from_secs(60));
        let sealed = cache.seal("whsec_x", &context("a")).await.unwrap();
        for _ in 0..5 {
            assert_eq!(cache.open(&sealed, &context("a")).await.unwrap(), "whsec_x");
        }
        assert_eq!(counting.opens.load(Ordering::SeqCst), 1);
        // Another context is asked of the sealer (and refused by it), never served from memory.
        assert!(cache.open(&sealed, &context("b")).await.is_err());
        assert_eq!(counting.opens.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_expired_entry_is_opened_again() {
        let counting = Arc::new(Counting {
            inner: LocalSealer::development(),
            opens: AtomicUsize::new(0),
        });
        let cache = CachingSealer::new(counting.clone(), Duration::ZERO);
        let sealed = cache.seal("whsec_y", &context("a")).await.unwrap();
        cache.open(&sealed, &context("a")).await.unwrap();
        cache.open(&sealed, &context("a")).await.unwrap();
        assert_eq!(counting.opens.load(Ordering::SeqCst), 2);
    }
}
