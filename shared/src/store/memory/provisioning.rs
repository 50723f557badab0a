//! The embedded store's provisioning ([`ProvisionStore`]): a plan loaded insert-if-absent,
//! all-or-nothing.

use super::records::guard;
use super::MemoryStore;
use crate::model::holiday_calendar::CalendarRefs;
use crate::model::provision::ProvisionPlan;
use crate::model::router::RouterRevision;
use crate::store::{ProvisionReport, ProvisionStore, StoreError, StoreResult};
use async_trait::async_trait;

#[async_trait]
impl ProvisionStore for MemoryStore {
    async fn replace_client(
        &self, client: &crate::model::account::ApiClient, expected_generation: u64,
    ) -> StoreResult<bool> {
        let mut state = self.lock();
        match state.clients.get_mut(&client.client_id) {
            Some(stored) if stored.generation == expected_generation => {
                *stored = client.clone();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn provision(&self, plan: &ProvisionPlan) -> StoreResult<ProvisionReport> {
        let mut state = self.lock();
        // Check first, write after: nothing is written when any record's key is taken.
        for account in &plan.accounts {
            for planned in account
                .records
                .iter()
                .filter(|p| !state.records.contains_key(&p.record.id))
            {
                if let Some(key) = planned.unique_keys.iter().find(|k| {
                    state
                        .guards
                        .get(&guard(&planned.record, k))
                        .is_some_and(|h| *h != planned.record.id)
                }) {
                    return Err(StoreError::Rejected(planned.key_taken_message(key)));
                }
            }
        }
        let mut report = ProvisionReport::default();
        let mut note = |inserted: bool, what: String| {
            if inserted {
                report.inserted += 1;
            } else {
                report.skipped.push(what);
            }
        };
        for plan in &plan.accounts {
            let a = &plan.account;
            let fresh = !state.accounts.contains_key(&a.id);
            if fresh {
                state.accounts.insert(a.id, a.clone());
            }
            note(fresh, format!("account {}", a.id));
            for c in &plan.clients {
                let fresh = !state.clients.contains_key(&c.client_id);
                if fresh {
                    state.clients.insert(c.client_id.clone(), c.clone());
                }
                note(fresh, format!("client {}", c.client_id));
            }
            for r in &plan.roles {
                let fresh = !state.roles.contains_key(&r.id);
                if fresh {
                    state.roles.insert(r.id, r.clone());
                }
                note(fresh, format!("role {}", r.id));
            }
            for c in &plan.holiday_calendars {
                let fresh = !state.calendars.contains_key(&(a.id, c.id));
                if fresh {
                    state.calendars.insert((a.id, c.id), (c.clone(), 0));
                }
                note(fresh, format!("holiday calendar {}", c.id));
            }
            for m in &plan.members {
                let fresh = !state.members.contains_key(&m.id);
                if fresh {
                    if m.is_active() {
                        state.apply_calendar_refs(
                            a.id,
                            &CalendarRefs::moving(None, m.holiday_calendar_id),
                        );
                    }
                    state.put_member(m.clone());
                }
                note(fresh, format!("member {}", m.id));
            }
            for t in &plan.teams {
                let fresh = !state.teams.contains_key(&t.id);
                if fresh {
                    state.teams.insert(t.id, t.clone());
                }
                note(fresh, format!("team {}", t.id));
            }
            let stored = state.field_definitions.entry(a.id).or_default();
            for d in &plan.field_definitions {
                let fresh = !stored
                    .iter()
                    .any(|s| s.object_type == d.object_type && s.internal_name == d.internal_name);
                if fresh {
                    stored.push(d.clone());
                }
                note(
                    fresh,
                    format!("field {}.{}", d.object_type, d.internal_name),
                );
            }
            for r in &plan.routers {
                let fresh = !state.routers.contains_key(&r.id);
                if fresh {
                    state.apply_calendar_refs(a.id, &r.calendar_refs());
                    state.put_router(r.clone());
                    let first = RouterRevision::provisioned(r);
                    state
                        .revisions
                        .entry(r.id)
                        .or_default()
                        .insert(first.revision, first);
                }
                note(fresh, format!("router {}", r.id));
            }
            for p in &plan.records {
                let fresh = !state.records.contains_key(&p.record.id);
                if fresh {
                    for key in &p.unique_keys {
                        state.guards.insert(guard(&p.record, key), p.record.id);
                    }
                    state.put_record(p.record.clone());
                }
                note(fresh, format!("record {}", p.record.id));
            }
        }
        Ok(report)
    }
}
