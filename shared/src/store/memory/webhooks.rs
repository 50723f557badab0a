//! The embedded store's webhook subscriptions and deliveries ([`WebhookStore`], BEHAVIOR 13).

use super::MemoryStore;
use crate::model::audit::AuditEvent;
use crate::model::due::DueChanges;
use crate::model::webhook::{
    HealthChange, SubscriptionHealth, WebhookDelivery, WebhookSubscription,
};
use crate::store::{
    delivery_position, webhook_position, Page, PageRequest, PageStart, StoreError, StoreResult,
    WebhookStore,
};
use crate::types::ids::{AccountId, WebhookId};
use async_trait::async_trait;

impl super::State {
    /// Moves the account's subscriptions version (every write of a subscription that changes
    /// what a dispatch makes of them).
    fn subscriptions_changed(&mut self, account_id: AccountId) {
        *self.webhooks_versions.entry(account_id).or_default() += 1;
    }

    /// The account's subscriptions version.
    pub(super) fn subscriptions_version(&self, account_id: AccountId) -> u64 {
        self.webhooks_versions
            .get(&account_id)
            .copied()
            .unwrap_or(0)
    }
}

#[async_trait]
impl WebhookStore for MemoryStore {
    async fn create_webhook(
        &self, subscription: &WebhookSubscription, max: u64, audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        let account = subscription.account_id;
        let count = state
            .webhooks
            .range((account, WebhookId::from_uuid(uuid::Uuid::nil()))..)
            .take_while(|((a, _), _)| *a == account)
            .count();
        if count as u64 >= max {
            return Err(StoreError::Rejected(format!(
                "the account has {max} subscriptions already"
            )));
        }
        if state.webhooks.contains_key(&(account, subscription.id)) {
            return Err(StoreError::Conflict);
        }
        state.check_audit(audit)?;
        state
            .webhooks
            .insert((account, subscription.id), subscription.clone());
        state.subscriptions_changed(account);
        state.put_audit(audit);
        Ok(())
    }

    async fn list_webhooks(
        &self, account_id: AccountId, page: &PageRequest,
    ) -> StoreResult<Page<WebhookSubscription>> {
        let state = self.lock();
        let all = state
            .webhooks
            .range((account_id, WebhookId::from_uuid(uuid::Uuid::nil()))..)
            .take_while(|((a, _), _)| *a == account_id)
            .map(|(_, s)| s);
        let wanted = page.limit.saturating_add(1);
        let items: Vec<WebhookSubscription> = match &page.start {
            PageStart::Offset(offset) => all.skip(*offset).take(wanted).cloned().collect(),
            PageStart::After(after) => all
                .filter(|s| s.id.to_string().as_str() > after.as_str())
                .take(wanted)
                .cloned()
                .collect(),
        };
        Ok(Page::from_lookahead(items, page.limit, webhook_position))
    }

    async fn get_webhook(
        &self, account_id: AccountId, id: WebhookId,
    ) -> StoreResult<Option<WebhookSubscription>> {
        Ok(self.lock().webhooks.get(&(account_id, id)).cloned())
    }

    async fn update_webhook(
        &self, subscription: &WebhookSubscription, expected_version: u64, reset_health: bool,
        due: &DueChanges, audit: Option<&AuditEvent>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        let key = (subscription.account_id, subscription.id);
        let failing_since = match state.webhooks.get(&key) {
            Some(stored) if stored.version == expected_version => stored.failing_since,
            _ => return Err(StoreError::Conflict),
        };
        state.check_due_lease(due)?;
        state.check_due_puts(due)?;
        state.check_audit(audit)?;
        let next = WebhookSubscription {
            failing_since: if reset_health { None } else { failing_since },
            ..subscription.clone()
        };
        state.webhooks.insert(key, next);
        state.subscriptions_changed(subscription.account_id);
        state.apply_due(due);
        state.put_audit(audit);
        Ok(())
    }

    async fn delete_webhook(
        &self, account_id: AccountId, id: WebhookId, expected_version: u64,
        audit: Option<&AuditEvent>,
    ) -> StoreResult<bool> {
        let mut state = self.lock();
        match state.webhooks.get(&(account_id, id)) {
            None => return Ok(false),
            Some(stored) if stored.version != expected_version => return Err(StoreError::Conflict),
            Some(_) => {}
        }
        state.check_audit(audit)?;
        state.webhooks.remove(&(account_id, id));
        state.subscriptions_changed(account_id);
        state.put_audit(audit);
        Ok(true)
    }

    async fn get_delivery(
        &self, subscription_id: WebhookId, delivery_id: &str,
    ) -> StoreResult<Option<WebhookDelivery>> {
        Ok(self
            .lock()
            .deliveries
            .get(&(subscription_id, delivery_id.to_string()))
            .cloned())
    }

    async fn list_deliveries(
        &self, subscription_id: WebhookId, page: &PageRequest,
    ) -> StoreResult<Page<WebhookDelivery>> {
        let state = self.lock();
        let newest_first = state
            .deliveries
            .range((subscription_id, String::new())..)
            .take_while(|((s, _), _)| *s == subscription_id)
            .map(|(_, d)| d)
            .collect::<Vec<_>>()
            .into_iter()
            .rev();
        let wanted = page.limit.saturating_add(1);
        let items: Vec<WebhookDelivery> = match &page.start {
            PageStart::Offset(offset) => newest_first.skip(*offset).take(wanted).cloned().collect(),
            PageStart::After(after) => newest_first
                .filter(|d| d.id.as_str() < after.as_str())
                .take(wanted)
                .cloned()
                .collect(),
        };
        Ok(Page::from_lookahead(items, page.limit, delivery_position))
    }

    async fn record_delivery(
        &self, delivery: &WebhookDelivery, expected_attempts: u32,
        health: Option<&SubscriptionHealth>, due: &DueChanges,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        state.check_due_lease(due)?;
        let key = (delivery.subscription_id, delivery.id.clone());
        if state
            .deliveries
            .get(&key)
            .is_none_or(|d| d.attempts != expected_attempts)
        {
            return Err(StoreError::Conflict);
        }
        let healed = match health {
            Some(h) => {
                let Some(stored) = state.webhooks.get(&(h.account_id, h.subscription_id)) else {
                    return Err(StoreError::Conflict);
                };
                if let HealthChange::DisableFailing { since, .. } = h.change {
                    if stored.failing_since != Some(since) {
                        return Err(StoreError::Conflict);
                    }
                }
                Some(h.change.apply(stored))
            }
            None => None,
        };
        state.check_due_puts(due)?;
        state.deliveries.insert(key, delivery.clone());
        if let Some(next) = healed {
            if health.is_some_and(|h| h.change.disables().is_some()) {
                // A disabled subscription gets no new deliveries (BEHAVIOR 13).
                state.subscriptions_changed(next.account_id);
            }
            state.webhooks.insert((next.account_id, next.id), next);
        }
        state.apply_due(due);
        Ok(())
    }
}
