//! The provisioning (seed) loader for `docs/seed-format.md`.
//!
//! [`load`] parses and validates a whole file before anything is written and returns a
//! [`ProvisionPlan`]; [`crate::store::ProvisionStore::provision`] then writes it insert-if-absent
//! by id, all-or-nothing. The first problem is reported with its JSON path, e.g.
//! `accounts[0].routers[1].settings.trigger.groups[0].conditions[0].operator: unknown operator "eq"`.
//! Every value is read by the same parser the API's write paths use ([`crate::types`],
//! [`crate::schedule`], [`crate::fields::validate`]); client secrets are hashed with argon2id and
//! never kept as sent.
//!
//! - [`file`](mod@file): the file's shape (serde);
//! - [`account`]: an account, its clients, roles and teams, in file order;
//! - [`member`], [`router`], [`record`], [`field`]: one item of each kind.

pub mod account;
mod crm;
pub mod field;
pub mod file;
pub mod member;
pub mod record;
pub mod router;

use crate::model::account::CrmConnection;
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::provision::{ProvisionPlan, ProvisionReport};
use crate::outbound::OutboundPolicy;
use crate::secrets::Sealer;
use crate::store::Store;
use crate::types::email::Email;
use chrono::{DateTime, Duration, Utc};
use file::SeedFile;
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// The first problem of a seed file: where (JSON path) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SeedError {
    /// JSON path, e.g. `accounts[0].users[2].time_zone`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl SeedError {
    /// A problem at `path`.
    pub fn at(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

fn err<T>(path: impl Into<String>, message: impl Into<String>) -> Result<T, SeedError> {
    Err(SeedError::at(path, message))
}

/// Parses and validates a seed file. Items get consecutive creation times 1 ms apart, in file
/// order, the last one 1 ms before `base` (the moment of loading): lists of seeded items follow
/// the file, and whatever is created from `base` on lists after them (seeded times counted on
/// from `base` put a large seed's items seconds into the future, so records created through the
/// API at once listed before them). A CRM connection's
/// `base_url` must pass the outbound guard under `outbound` ([`crate::outbound::OutboundUrl`]).
///
/// Errors: the first problem with its JSON path; nothing is returned to write then.
pub fn load(
    text: &str, base: DateTime<Utc>, outbound: OutboundPolicy,
) -> Result<ProvisionPlan, SeedError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let file: SeedFile = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let mut message = e.into_inner().to_string();
        // serde_json appends the position; the JSON path says more.
        if let Some(at) = message.rfind(" at line ") {
            message.truncate(at);
        }
        SeedError {
            path: if path == "." { "$".into() } else { path },
            message,
        }
    })?;
    let mut loader = Loader::new(base, creation_times(&file), outbound);
    let accounts = file
        .accounts
        .into_iter()
        .enumerate()
        .map(|(i, a)| loader.account(&format!("accounts[{i}]"), a))
        .collect::<Result<_, _>>()?;
    Ok(ProvisionPlan { accounts })
}

/// How many creation times loading `file` takes: one per account, holiday calendar, user, team,
/// router and record (each [`Loader::next_time`] call).
fn creation_times(file: &SeedFile) -> i64 {
    let items: usize = file
        .accounts
        .iter()
        .map(|a| {
            1 + a.holiday_calendars.len()
                + a.users.len()
                + a.teams.len()
                + a.routers.len()
                + a.records.values().map(Vec::len).sum::<usize>()
        })
        .sum();
    i64::try_from(items).unwrap_or(i64::MAX)
}

/// The state of one load: the creation clock and the ids seen so far.
struct Loader {
    /// The moment of loading: every creation time is before it.
    base: DateTime<Utc>,
    /// How many creation times the file takes ([`creation_times`]).
    times: i64,
    /// What provisioned URLs may point to (a CRM's `base_url`).
    outbound: OutboundPolicy,
    tick: i64,
    /// Every UUID of the file -> its path (ids are unique across the store).
    ids: HashMap<Uuid, String>,
    client_ids: HashSet<String>,
}

impl Loader {
    fn new(base: DateTime<Utc>, times: i64, outbound: OutboundPolicy) -> Self {
        Self {
            base,
            times,
            outbound,
            tick: 0,
            ids: HashMap::new(),
            client_ids: HashSet::new(),
        }
    }

    /// The next creation time: 1 ms after the previous one; the last of the file's
    /// [`Self::times`] is 1 ms before [`Self::base`].
    fn next_time(&mut self) -> DateTime<Utc> {
        self.tick += 1;
        debug_assert!(self.tick <= self.times, "creation_times missed an item");
        self.base - Duration::milliseconds(self.times - self.tick + 1)
    }

    /// Records that `id` is used at `path`.
    ///
    /// Errors: `<path>.id: id <id> is already used at <first path>`.
    fn claim_id(&mut self, id: impl Into<Uuid>, path: String) -> Result<(), SeedError> {
        let id = id.into();
        if let Some(first) = self.ids.get(&id) {
            return err(
                format!("{path}.id"),
                format!("id {id} is already used at {first}"),
            );
        }
        self.ids.insert(id, path);
        Ok(())
    }
}

/// A record-type key of `fields` or `records`.
///
/// Errors: `unknown record type "<name>"; ...` at `path`.
fn object_type_key(path: &str, name: &str) -> Result<ObjectType, SeedError> {
    name.parse().map_err(|_| {
        SeedError::at(
            path,
            format!(
                "unknown record type \"{name}\"; expected contacts, companies, deals or tickets"
            ),
        )
    })
}

/// The e-mail of the account's member that `given` names (in any form [`Email::parse`] reads
/// as the same address: case, U-label or A-label domain).
///
/// Errors: `no user with e-mail "<given>" in this account` at `path`.
fn member_email(path: &str, given: &str, members: &[Member]) -> Result<Email, SeedError> {
    crate::routers::config::member_email(given, members).map_err(|m| SeedError::at(path, m))
}

/// The plan with every account's CRM secrets sealed by `sealer` into `account.crm`: a private
/// app's access token under [`crate::secrets::crm_token_context`], an OAuth app's client secret
/// and refresh token under [`crate::secrets::crm_oauth_context`]. What is provisioned never
/// holds a secret in the clear.
///
/// Errors: the sealer's (the key service failed).
pub async fn seal(
    mut plan: ProvisionPlan, sealer: &dyn Sealer,
) -> Result<ProvisionPlan, crate::error::BoxError> {
    use crate::model::account::{CrmCredentials, SealedCrmCredentials, SealedOAuthApp};
    use crate::secrets::{crm_oauth_context, crm_token_context, OAuthSecret};
    for account in &mut plan.accounts {
        if let Some(crm) = account.crm.take() {
            let id = account.account.id;
            let credentials = match &crm.credentials {
                CrmCredentials::PrivateApp(token) => SealedCrmCredentials::PrivateApp {
                    access_token: sealer.seal(token.expose(), &crm_token_context(id)).await?,
                },
                CrmCredentials::OAuth(app) => {
                    let refresh_token = match &app.refresh_token {
                        Some(token) => Some(
                            sealer
                                .seal(
                                    token.expose(),
                                    &crm_oauth_context(id, OAuthSecret::RefreshToken),
                                )
                                .await?,
                        ),
                        None => None,
                    };
                    SealedCrmCredentials::OAuth {
                        oauth: SealedOAuthApp {
                            client_id: app.client_id.clone(),
                            client_secret: sealer
                                .seal(
                                    app.client_secret.expose(),
                                    &crm_oauth_context(id, OAuthSecret::ClientSecret),
                                )
                                .await?,
                            refresh_token,
                        },
                    }
                }
            };
            account.account.crm = Some(CrmConnection {
                provider: crm.provider,
                base_url: crm.base_url,
                credentials,
                options: crm.options,
            });
        }
    }
    Ok(plan)
}

/// Seals the plan's secrets ([`seal`]) and provisions it into `store` (insert-if-absent,
/// all-or-nothing), then keeps the stored API clients current with the file
/// ([`keep_clients_current`]): how every provisioning path writes a loaded seed.
///
/// Errors: the sealer's, then the store's ([`crate::store::ProvisionStore::provision`]), then
/// [`keep_clients_current`]'s.
pub async fn provision(
    store: &dyn Store, sealer: &dyn Sealer, plan: ProvisionPlan,
) -> Result<ProvisionReport, crate::error::BoxError> {
    let plan = seal(plan, sealer).await?;
    let mut report = store.provision(&plan).await?;
    report.updated = keep_clients_current(store, &plan, &report).await?;
    Ok(report)
}

/// BEHAVIOR 1: every API client of the plan that was already stored (skipped by the insert) is
/// made to match the file. Its secret is compared with the stored hash (argon2id, on the
/// hashing pool); a different secret, `disabled` or scopes replaces the stored client with the
/// file's (the stored hash kept when the secret is the same) at the next key generation, so
/// tokens issued before are refused ([`crate::auth::token::clients`]). A client stored for
/// another account is left as it is. Answers the labels of the clients updated.
///
/// Errors: the store's; a client changed by another provisioning run meanwhile (run again);
/// a verification task that failed.
pub async fn keep_clients_current(
    store: &dyn Store, plan: &ProvisionPlan, report: &ProvisionReport,
) -> Result<Vec<String>, crate::error::BoxError> {
    let mut updated = Vec::new();
    for account in &plan.accounts {
        for (client, secret) in account.clients.iter().zip(&account.client_secrets) {
            let label = format!("client {}", client.client_id);
            if !report.skipped.contains(&label) {
                continue;
            }
            let Some(stored) = store.get_client(&client.client_id).await? else {
                continue;
            };
            if stored.account_id != client.account_id {
                continue;
            }
            let same_secret = crate::auth::secret::HashingLimit::global()
                .verify(secret.expose().to_owned(), stored.secret_hash.clone())
                .await?;
            if same_secret && stored.disabled == client.disabled && stored.scopes == client.scopes {
                continue;
            }
            let current = crate::model::account::ApiClient {
                secret_hash: if same_secret {
                    stored.secret_hash.clone()
                } else {
                    client.secret_hash.clone()
                },
                generation: stored.generation.saturating_add(1),
                ..client.clone()
            };
            if !store.replace_client(&current, stored.generation).await? {
                return Err(format!(
                    "{label} was changed by another provisioning run meanwhile; run the \
                     provisioning again"
                )
                .into());
            }
            tracing::info!(
                client_id = %client.client_id,
                generation = current.generation,
                disabled = current.disabled,
                secret_changed = !same_secret,
                "API client updated by provisioning"
            );
            updated.push(label);
        }
    }
    Ok(updated)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::{json, Value};

    /// The demo seed, as JSON to edit.
    pub(crate) fn demo() -> Value {
        serde_json::from_str(include_str!("../../../infra/seed/demo.json")).unwrap()
    }

    /// The message of loading `seed`, which must be refused.
    pub(crate) fn error_of(seed: &Value) -> String {
        let base = Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap();
        load(&seed.to_string(), base, OutboundPolicy::LOCAL)
            .expect_err("the seed must be refused")
            .to_string()
    }

    /// An edit of the demo seed and the start of the message it must be refused with.
    pub(crate) type Refusal<'a> = (fn(&mut Value), &'a str);

    /// Asserts that every edit of the demo seed is refused with a message starting with its path.
    pub(crate) fn assert_refused(cases: &[Refusal<'_>]) {
        for (edit, expected) in cases {
            let mut seed = demo();
            edit(&mut seed);
            let message = error_of(&seed);
            assert!(
                message.starts_with(expected),
                "expected {expected:?}, got {message:?}"
            );
        }
    }

    #[test]
    fn the_demo_seed_loads() {
        let base = Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap();
        let plan = load(&demo().to_string(), base, OutboundPolicy::LOCAL).unwrap();
        assert!(!plan.accounts.is_empty());
    }

    #[test]
    fn seeded_items_are_created_one_ms_apart_and_before_the_moment_of_loading() {
        let base = Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap();
        let plan = load(&demo().to_string(), base, OutboundPolicy::LOCAL).unwrap();
        let mut times = Vec::new();
        for a in &plan.accounts {
            times.push(a.account.created_at);
            times.extend(a.holiday_calendars.iter().map(|c| c.created_at));
            times.extend(a.members.iter().map(|m| m.created_at));
            times.extend(a.teams.iter().map(|t| t.created_at));
            times.extend(a.routers.iter().map(|r| r.created_at));
            times.extend(a.records.iter().map(|r| r.record.created_at));
        }
        times.sort();
        assert!(times.len() > 10, "{}", times.len());
        // A record created through the API at the moment of loading lists after every seeded one.
        assert_eq!(times.last(), Some(&(base - Duration::milliseconds(1))));
        assert_eq!(
            times.first(),
            Some(&(base - Duration::milliseconds(times.len() as i64)))
        );
        assert!(
            times
                .windows(2)
                .all(|w| w[1] - w[0] == Duration::milliseconds(1)),
            "one creation time per item, 1 ms apart: {times:?}"
        );
    }

    #[test]
    fn a_file_that_is_not_the_format_names_the_first_bad_place() {
        assert_refused(&[
            (|s| s["accounts"][0]["id"] = json!("nope"), "accounts[0].id"),
            (|s| s["accounts"][0]["surprise"] = json!(1), "accounts[0]"),
            (
                |s| s["accounts"][0]["records"]["leads"] = json!([]),
                "accounts[0].records.leads",
            ),
        ]);
    }
}
