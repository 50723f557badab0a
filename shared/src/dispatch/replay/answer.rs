//! The answer of a replay ([`Simulation`]: the outcomes, each member's real and replayed
//! assignments, the changed entries) and the running tallies it is made from ([`Tally`]), all a
//! replay keeps of the entries it replayed.

use super::bounds::MAX_SAMPLES;
use super::request::SimulateRequest;
use crate::history::target_share;
use crate::model::dispatch::DispatchEntry;
use crate::model::router::Router;
use crate::routers::revision::RevisionChoice;
use crate::timefmt::Timestamp;
use crate::types::email::Email;
use crate::types::ids::RouterId;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use utoipa::ToSchema;

/// One member's line of a replay: the replayed entries' real assignments and the replay's.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ReplayMember {
    /// The member's e-mail.
    #[schema(format = Email)]
    pub user: String,
    /// The replayed entries that really assigned this member.
    pub actual: u64,
    /// The replay's assignments to this member.
    pub simulated: u64,
    /// `actual` over the replayed entries' real assignments (0 when none).
    pub actual_share: f64,
    /// `simulated` over the replay's assignments (0 when none).
    pub simulated_share: f64,
    /// What the replayed configuration's distribution model aims at, as in the stats: its
    /// percentage / 100 for a percentage router, 1 / (pool size) for round robin; `null` for
    /// someone outside its pool.
    pub target_share: Option<f64>,
}

/// An entry whose replay assigned someone else (or nobody, or someone where nobody was).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ReplaySample {
    /// The history entry's id.
    #[schema(value_type = String, format = Uuid)]
    pub entry_id: uuid::Uuid,
    /// The record's id, as the entry holds it.
    pub object_id: String,
    /// When the entry's dispatch ran (the instant it was replayed at).
    pub dispatched_at: Timestamp,
    /// Whom the dispatch assigned; `null` when it assigned nobody.
    #[schema(format = Email)]
    pub actual_user: Option<String>,
    /// Whom the replay assigns; `null` when nobody.
    #[schema(format = Email)]
    pub simulated_user: Option<String>,
    /// The replay's outcome (`Owner assigned` or the message of the step that stopped it).
    pub simulated_message: String,
}

/// The 200 body of `POST /routers/{id}/simulate` (BEHAVIOR 16).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(example = json!({
    "router_id": "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45",
    "revision": "draft",
    "from": "2026-10-23T09:30:00.000Z",
    "to": "2026-11-22T09:30:00.000Z",
    "replayed": 3,
    "truncated": false,
    "changed": 1,
    "outcomes": {"Owner assigned": 3},
    "members": [
        {"user": "ana.lopez@northwind.example", "actual": 2, "simulated": 1, "actual_share": 0.6666666666666666, "simulated_share": 0.3333333333333333, "target_share": 0.3333333333333333},
        {"user": "ben.okafor@northwind.example", "actual": 1, "simulated": 1, "actual_share": 0.3333333333333333, "simulated_share": 0.3333333333333333, "target_share": 0.3333333333333333},
        {"user": "chloe.martin@northwind.example", "actual": 0, "simulated": 1, "actual_share": 0.0, "simulated_share": 0.3333333333333333, "target_share": 0.3333333333333333}
    ],
    "samples": [
        {"entry_id": "01936b2a-7c00-7a00-8000-0000000000e3", "object_id": "01936b2a-7c00-7a00-8000-000000000002", "dispatched_at": "2026-11-20T14:05:00.000Z", "actual_user": "ana.lopez@northwind.example", "simulated_user": "chloe.martin@northwind.example", "simulated_message": "Owner assigned"}
    ]
}))]
pub struct Simulation {
    /// The router.
    pub router_id: RouterId,
    /// The configuration replayed: `"draft"` or its revision number.
    pub revision: RevisionChoice,
    /// Start of the window (included).
    pub from: Timestamp,
    /// End of the window (excluded).
    pub to: Timestamp,
    /// The entries replayed (at most 10,000).
    pub replayed: u64,
    /// Whether the window held more entries to replay than the 10,000 replayed (the oldest).
    pub truncated: bool,
    /// The entries whose replay assigned another member than the dispatch did (`null`
    /// included on either side).
    pub changed: u64,
    /// Each outcome `message` of the replay and how many entries ended with it.
    pub outcomes: BTreeMap<String, u64>,
    /// The replayed configuration's pool in pool order, then anyone else assigned in either
    /// column (by e-mail).
    pub members: Vec<ReplayMember>,
    /// The first 20 changed entries, oldest first.
    pub samples: Vec<ReplaySample>,
}

/// The running tallies of a replay, all it keeps of the entries it replayed: counts by outcome
/// and by member, the changed count and the first [`MAX_SAMPLES`] changed entries.
#[derive(Default)]
pub(super) struct Tally {
    replayed: u64,
    outcomes: BTreeMap<&'static str, u64>,
    /// By e-mail: the replayed entries' real assignments.
    actual: HashMap<String, u64>,
    /// By e-mail: the replay's assignments.
    simulated: HashMap<String, u64>,
    changed: u64,
    samples: Vec<ReplaySample>,
    /// The configuration's pool, in pool order.
    pub(super) pool: Vec<String>,
}

impl Tally {
    /// Counts `entry`, whose replay assigned `user` (or nobody) with `message`.
    pub(super) fn add(
        &mut self, entry: &DispatchEntry, user: Option<String>, message: &'static str,
    ) {
        self.replayed += 1;
        *self.outcomes.entry(message).or_default() += 1;
        let real = entry
            .user
            .as_ref()
            .map(Email::as_str)
            .filter(|_| entry.success);
        if let Some(real) = real {
            *self.actual.entry(real.to_string()).or_default() += 1;
        }
        if let Some(user) = &user {
            *self.simulated.entry(user.clone()).or_default() += 1;
        }
        if real != user.as_deref() {
            self.changed += 1;
            if self.samples.len() < MAX_SAMPLES {
                self.samples.push(ReplaySample {
                    entry_id: entry.id,
                    object_id: entry.object_id.clone(),
                    dispatched_at: Timestamp(entry.dispatched_at),
                    actual_user: real.map(str::to_string),
                    simulated_user: user,
                    simulated_message: message.to_string(),
                });
            }
        }
    }

    /// The answer: counts, shares, changes and samples.
    pub(super) fn answer(
        self, router: &Router, request: SimulateRequest, truncated: bool,
    ) -> Simulation {
        let actual_total: u64 = self.actual.values().sum();
        let simulated_total: u64 = self.simulated.values().sum();
        let pool: HashSet<&str> = self.pool.iter().map(String::as_str).collect();
        let mut others: Vec<&str> = self
            .actual
            .keys()
            .chain(self.simulated.keys())
            .map(String::as_str)
            .filter(|e| !pool.contains(e))
            .collect();
        others.sort_unstable();
        others.dedup();
        let share = |n: u64, total: u64| {
            if total == 0 {
                0.0
            } else {
                n as f64 / total as f64
            }
        };
        let members = self
            .pool
            .iter()
            .map(String::as_str)
            .chain(others)
            .map(|email| {
                let a = self.actual.get(email).copied().unwrap_or(0);
                let s = self.simulated.get(email).copied().unwrap_or(0);
                ReplayMember {
                    user: email.to_string(),
                    actual: a,
                    simulated: s,
                    actual_share: share(a, actual_total),
                    simulated_share: share(s, simulated_total),
                    target_share: target_share(router, &self.pool, email),
                }
            })
            .collect();
        Simulation {
            router_id: router.id,
            revision: request.revision,
            from: Timestamp(request.window.from),
            to: Timestamp(request.window.to),
            replayed: self.replayed,
            truncated,
            changed: self.changed,
            outcomes: self
                .outcomes
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            members,
            samples: self.samples,
        }
    }
}
