//! An account with its clients, roles, members, teams, field definitions, routers and records.

use super::field::field_definition;
use super::file::SeedAccount;
use super::{err, member_email, object_type_key, Loader, SeedError};
use crate::auth::secret::hash_secret;
use crate::calendars::CalendarBody;
use crate::fields::catalogue::Catalogue;
use crate::model::account::{Account, ApiClient, Role, Team};
use crate::model::holiday_calendar::{HolidayCalendar, MAX_HOLIDAY_CALENDARS};
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::provision::{AccountPlan, PresentedSecret};
use crate::model::record::UniqueKey;
use crate::types::limits::{check_chars, json_size, MAX_ITEM_JSON_BYTES, MAX_KEY_TEXT_CHARS};
use std::collections::HashMap;

/// The shortest client secret provisioning accepts, in characters (BEHAVIOR 1).
pub const MIN_CLIENT_SECRET_CHARS: usize = 16;

impl Loader {
    /// Loads one account with everything it owns, in the format's order.
    pub(super) fn account(&mut self, path: &str, a: SeedAccount) -> Result<AccountPlan, SeedError> {
        self.claim_id(a.id, path.to_string())?;
        let created_at = self.next_time();
        let crm = match a.crm {
            None => None,
            Some(c) => Some(super::crm::connection(
                &format!("{path}.crm"),
                c,
                self.outbound,
            )?),
        };
        let account = Account {
            id: a.id,
            name: a.name,
            active: a.active,
            assignment_quota: a.assignment_quota,
            crm: None,
            created_at,
        };

        let mut clients = Vec::new();
        let mut client_secrets = Vec::new();
        for (i, c) in a.clients.into_iter().enumerate() {
            let p = format!("{path}.clients[{i}]");
            if c.client_id.trim().is_empty() {
                return err(format!("{p}.client_id"), "must not be empty");
            }
            check_chars(&c.client_id, MAX_KEY_TEXT_CHARS)
                .or_else(|why| err(format!("{p}.client_id"), why))?;
            if !self.client_ids.insert(c.client_id.clone()) {
                return err(
                    format!("{p}.client_id"),
                    format!("client_id \"{}\" is used twice", c.client_id),
                );
            }
            // BEHAVIOR 1: a guessable secret is refused (the limit on failed attempts slows
            // guessing; it cannot make a short secret safe).
            if c.client_secret.chars().count() < MIN_CLIENT_SECRET_CHARS {
                return err(
                    format!("{p}.client_secret"),
                    format!("must be at least {MIN_CLIENT_SECRET_CHARS} characters"),
                );
            }
            let secret_hash = hash_secret(&c.client_secret).map_err(|e| SeedError {
                path: format!("{p}.client_secret"),
                message: e.to_string(),
            })?;
            clients.push(ApiClient {
                client_id: c.client_id,
                account_id: a.id,
                secret_hash,
                scopes: c.scopes,
                disabled: c.disabled,
                generation: 0,
            });
            client_secrets.push(PresentedSecret::new(c.client_secret));
        }

        let mut roles = Vec::new();
        for (i, r) in a.roles.into_iter().enumerate() {
            self.claim_id(r.id, format!("{path}.roles[{i}]"))?;
            roles.push(Role {
                id: r.id,
                account_id: a.id,
                name: r.name,
            });
        }

        let mut holiday_calendars: Vec<HolidayCalendar> = Vec::new();
        for (i, c) in a.holiday_calendars.into_iter().enumerate() {
            let p = format!("{path}.holiday_calendars[{i}]");
            self.claim_id(c.id, p.clone())?;
            let body = CalendarBody {
                name: c.name,
                time_zone: c.time_zone,
                holidays: c.holidays,
            };
            let parsed = body.parse().map_err(|e| SeedError {
                path: format!("{p}.{}", e.path),
                message: e.message,
            })?;
            let created_at = self.next_time();
            let calendar = parsed.into_calendar(c.id, a.id, created_at);
            crate::calendars::check_stored_size(&calendar).or_else(|why| err(p.clone(), why))?;
            holiday_calendars.push(calendar);
        }
        if holiday_calendars.len() as u64 > MAX_HOLIDAY_CALENDARS {
            return err(
                format!("{path}.holiday_calendars"),
                format!("at most {MAX_HOLIDAY_CALENDARS} holiday calendars per account"),
            );
        }

        let mut members: Vec<Member> = Vec::new();
        for (i, u) in a.users.into_iter().enumerate() {
            let p = format!("{path}.users[{i}]");
            members.push(self.member(&p, a.id, u, &roles, &members, &holiday_calendars)?);
        }

        let mut teams: Vec<Team> = Vec::new();
        for (i, t) in a.teams.into_iter().enumerate() {
            let p = format!("{path}.teams[{i}]");
            self.claim_id(t.id, p.clone())?;
            if teams.iter().any(|x| x.name == t.name) {
                return err(
                    format!("{p}.name"),
                    format!("team name \"{}\" is used twice in this account", t.name),
                );
            }
            let mut emails = Vec::new();
            for (j, e) in t.members.iter().enumerate() {
                emails.push(member_email(&format!("{p}.members[{j}]"), e, &members)?);
            }
            teams.push(Team {
                id: t.id,
                account_id: a.id,
                name: t.name,
                members: emails,
                created_at: self.next_time(),
            });
        }

        let mut field_definitions = Vec::new();
        for (type_name, defs) in a.fields {
            let object_type = object_type_key(&format!("{path}.fields.{type_name}"), &type_name)?;
            for (i, d) in defs.into_iter().enumerate() {
                let p = format!("{path}.fields.{object_type}[{i}]");
                field_definitions.push(field_definition(&p, object_type, d, &field_definitions)?);
            }
        }
        let catalogues: HashMap<ObjectType, Catalogue> = ObjectType::ALL
            .iter()
            .map(|t| (*t, Catalogue::build(*t, &field_definitions)))
            .collect();

        let mut routers = Vec::new();
        for (i, r) in a.routers.into_iter().enumerate() {
            let p = format!("{path}.routers[{i}]");
            self.claim_id(r.id, p.clone())?;
            let calendar_ids: Vec<_> = holiday_calendars.iter().map(|c| c.id).collect();
            let names = super::router::AccountNames {
                catalogues: &catalogues,
                holiday_calendars: &calendar_ids,
            };
            routers.push(self.router(&p, a.id, r, &members, &teams, &names)?);
        }

        let mut records = Vec::new();
        let mut keys_seen: HashMap<(ObjectType, UniqueKey), String> = HashMap::new();
        for (type_name, list) in a.records {
            let object_type = object_type_key(&format!("{path}.records.{type_name}"), &type_name)?;
            for (i, r) in list.into_iter().enumerate() {
                let p = format!("{path}.records.{object_type}[{i}]");
                self.claim_id(r.id, p.clone())?;
                let planned = self.record(
                    &p,
                    a.id,
                    object_type,
                    r,
                    &catalogues[&object_type],
                    &members,
                )?;
                for key in &planned.unique_keys {
                    if let Some(first) = keys_seen.insert((object_type, key.clone()), p.clone()) {
                        return err(
                            format!("{p}.fields.{}", key.field),
                            format!("{} \"{}\" is already used by {first}", key.field, key.value),
                        );
                    }
                }
                records.push(planned);
            }
        }
        let plan = AccountPlan {
            account,
            crm,
            clients,
            client_secrets,
            roles,
            holiday_calendars,
            members,
            teams,
            field_definitions,
            routers,
            records,
        };
        check_sizes(path, &plan)?;
        Ok(plan)
    }
}

/// BEHAVIOR 12 for the items only a seed writes: each at most [`MAX_ITEM_JSON_BYTES`] of JSON
/// (members and records have their own limits, checked as they are read), so both stores take
/// the same plans. Field definitions are checked as they are read, routers by the size rule of
/// their stored items ([`crate::routers::config::check_stored_size`]) as they are read.
fn check_sizes(path: &str, plan: &AccountPlan) -> Result<(), SeedError> {
    fn at_most<T: serde::Serialize>(p: String, what: &str, item: &T) -> Result<(), SeedError> {
        if json_size(item) > MAX_ITEM_JSON_BYTES {
            return err(
                p,
                format!("{what} too large: at most {MAX_ITEM_JSON_BYTES} bytes of JSON"),
            );
        }
        Ok(())
    }
    at_most(path.to_string(), "account", &plan.account)?;
    for (i, c) in plan.clients.iter().enumerate() {
        at_most(format!("{path}.clients[{i}]"), "client", c)?;
    }
    for (i, r) in plan.roles.iter().enumerate() {
        at_most(format!("{path}.roles[{i}]"), "role", r)?;
    }
    for (i, t) in plan.teams.iter().enumerate() {
        at_most(format!("{path}.teams[{i}]"), "team", t)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_refused;
    use crate::model::account::CrmCredentials;
    use crate::model::object_type::ObjectType;
    use serde_json::json;

    #[test]
    fn account_level_problems_name_their_path() {
        assert_refused(&[
            (
                |s| s["accounts"][1]["clients"][0]["client_id"] = json!("northwind-integration"),
                "accounts[1].clients[0].client_id",
            ),
            (
                |s| s["accounts"][0]["clients"][0]["client_id"] = json!("c".repeat(257)),
                "accounts[0].clients[0].client_id: at most 256 characters",
            ),
            (
                |s| {
                    if let Some(teams) = s["accounts"][0]["teams"].as_array_mut() {
                        teams.push(json!({
                            "id": "0b1c2d3e-4f50-4a61-8b72-9c0d1e2f3a4b",
                            "name": "t".repeat(400_000),
                            "members": [],
                        }));
                    }
                },
                "accounts[0].teams[2]: team too large",
            ),
            (
                |s| {
                    s["accounts"][0]["routers"][0]["settings"]["trigger"] = json!({"groups": [{"conditions": [
                        {"field": "first_name", "operator": "equals", "value": "r".repeat(410_000)}
                    ]}]})
                },
                "accounts[0].routers[0]: Router too large",
            ),
            (
                |s| s["accounts"][0]["clients"][0]["scopes"] = json!(["admin"]),
                "accounts[0].clients[0].scopes[0]",
            ),
            (
                |s| s["accounts"][0]["teams"][0]["members"][0] = json!("ghost@northwind.example"),
                "accounts[0].teams[0].members[0]",
            ),
            (
                |s| {
                    s["accounts"][0]["crm"] = json!({"provider": "pipedrive", "base_url": "http://x", "access_token": "t"})
                },
                "accounts[0].crm.provider",
            ),
            (
                |s| {
                    s["accounts"][0]["crm"] =
                        json!({"provider": "hubspot", "base_url": "ftp://x", "access_token": "t"})
                },
                "accounts[0].crm.base_url",
            ),
            (
                |s| s["accounts"][0]["crm"] = json!({"provider": "hubspot", "base_url": "http://169.254.169.254/latest", "access_token": "t"}),
                "accounts[0].crm.base_url: must not point to a link-local address",
            ),
            (
                |s| s["accounts"][0]["crm"] = json!({"provider": "hubspot", "base_url": "https://10.0.0.8", "access_token": "t"}),
                "accounts[0].crm.base_url: must not point to a private address",
            ),
        ]);
    }

    /// The second form of `crm` (BEHAVIOR 7 "OAuth apps", "Object ids"): exactly one of
    /// `access_token` and `oauth`, no empty secret, `id_properties` keyed by object type.
    #[test]
    fn crm_connection_problems_name_their_path() {
        let oauth = || json!({"client_id": "app", "client_secret": "s", "refresh_token": "r"});
        let base = "http://127.0.0.1:4010";
        let cases: Vec<(serde_json::Value, &str)> = vec![
            (
                json!({"provider": "hubspot", "base_url": base}),
                "accounts[0].crm: needs access_token (a private app) or oauth (an OAuth app)",
            ),
            (
                json!({"provider": "hubspot", "base_url": base, "access_token": "t", "oauth": oauth()}),
                "accounts[0].crm: give either access_token (a private app) or oauth (an OAuth app), not both",
            ),
            (
                json!({"provider": "hubspot", "base_url": base, "access_token": " "}),
                "accounts[0].crm.access_token: must not be empty",
            ),
            (
                json!({"provider": "hubspot", "base_url": base, "oauth": {"client_id": "app", "client_secret": "", "refresh_token": "r"}}),
                "accounts[0].crm.oauth.client_secret: must not be empty",
            ),
            (
                json!({"provider": "hubspot", "base_url": base, "oauth": {"client_id": "app", "client_secret": "s"}}),
                "accounts[0].crm",
            ),
            (
                json!({"provider": "hubspot", "base_url": base, "oauth": oauth(), "id_properties": {"leads": "email"}}),
                "accounts[0].crm.id_properties.leads: unknown record type",
            ),
            (
                json!({"provider": "hubspot", "base_url": base, "oauth": oauth(), "id_properties": {"contacts": "e-mail"}}),
                "accounts[0].crm.id_properties.contacts: \"e-mail\" is not a HubSpot property name",
            ),
        ];
        for (crm, expected) in cases {
            let mut seed = super::super::tests::demo();
            seed["accounts"][0]["crm"] = crm;
            let message = super::super::tests::error_of(&seed);
            assert!(
                message.starts_with(expected),
                "expected {expected:?}, got {message:?}"
            );
        }
        let mut seed = super::super::tests::demo();
        seed["accounts"][0]["crm"] = json!({"provider": "hubspot", "base_url": base,
            "oauth": oauth(), "id_properties": {"contacts": "email", "deals": "deal_key"}});
        let at = chrono::Utc::now();
        let plan = crate::seed::load(
            &seed.to_string(),
            at,
            crate::outbound::OutboundPolicy::LOCAL,
        )
        .unwrap();
        let crm = plan.accounts[0].crm.as_ref().unwrap();
        assert!(matches!(crm.credentials, CrmCredentials::OAuth(_)));
        let id_properties = &crm.options.id_properties;
        assert_eq!(id_properties.get(ObjectType::Contacts), Some("email"));
        assert_eq!(id_properties.get(ObjectType::Deals), Some("deal_key"));
        assert_eq!(id_properties.get(ObjectType::Tickets), None);
    }

    /// BEHAVIOR 17 in the provisioning file: a calendar is checked as `POST /holiday-calendars`
    /// checks it, with its path; members and routers name only calendars of their account.
    #[test]
    fn holiday_calendar_problems_name_their_path() {
        assert_refused(&[
            (
                |s| s["accounts"][0]["holiday_calendars"][0]["holidays"][3]["end"] = json!("11:00"),
                "accounts[0].holiday_calendars[0].holidays[3].end",
            ),
            (
                |s| {
                    s["accounts"][0]["holiday_calendars"][0]["holidays"][0]["start"] =
                        json!("09:00")
                },
                "accounts[0].holiday_calendars[0].holidays[0].end",
            ),
            (
                |s| {
                    s["accounts"][0]["holiday_calendars"][0]["holidays"][1]["date"] =
                        json!("2026-02-30")
                },
                "accounts[0].holiday_calendars[0].holidays[1].date",
            ),
            (
                |s| s["accounts"][0]["holiday_calendars"][0]["time_zone"] = json!("Berlin"),
                "accounts[0].holiday_calendars[0].time_zone",
            ),
            (
                |s| s["accounts"][0]["holiday_calendars"][0]["name"] = json!(""),
                "accounts[0].holiday_calendars[0].name",
            ),
            (
                |s| {
                    let calendar = s["accounts"][0]["holiday_calendars"][0].clone();
                    let calendars: Vec<serde_json::Value> = (0..21)
                        .map(|i| {
                            let mut c = calendar.clone();
                            c["id"] = json!(format!("7d3e4f50-a1b2-4c3d-9e4f-{i:012}"));
                            c
                        })
                        .collect();
                    s["accounts"][0]["holiday_calendars"] = json!(calendars);
                },
                "accounts[0].holiday_calendars",
            ),
            (
                // Globex's members cannot name Northwind's calendar.
                |s| {
                    s["accounts"][1]["users"][0]["holiday_calendar_id"] =
                        json!("7d3e4f50-a1b2-4c3d-9e4f-0a1b2c3d4e5f")
                },
                "accounts[1].users[0].holiday_calendar_id",
            ),
            (
                |s| {
                    s["accounts"][0]["routers"][0]["settings"]["holiday_calendar_id"] =
                        json!("0b1c2d3e-4f50-4a61-8b72-9c0d1e2f3a4b")
                },
                "accounts[0].routers[0].settings.holiday_calendar_id",
            ),
        ]);
    }

    /// The demo's calendar loads as written, and its member and a router naming it keep it.
    #[test]
    fn seeded_calendars_load_and_are_named_by_members_and_routers() {
        let base = chrono::Utc::now();
        let mut demo = crate::seed::tests::demo();
        let calendar = "7d3e4f50-a1b2-4c3d-9e4f-0a1b2c3d4e5f";
        demo["accounts"][0]["routers"][0]["settings"]["holiday_calendar_id"] = json!(calendar);
        let plan = crate::seed::load(
            &demo.to_string(),
            base,
            crate::outbound::OutboundPolicy::LOCAL,
        )
        .unwrap();
        let northwind = &plan.accounts[0];
        assert_eq!(northwind.holiday_calendars.len(), 1);
        let loaded = &northwind.holiday_calendars[0];
        assert_eq!(loaded.id.to_string(), calendar);
        assert_eq!(loaded.time_zone.name(), "Europe/Berlin");
        assert_eq!(loaded.holidays.len(), 7);
        let named: Vec<_> = northwind
            .members
            .iter()
            .filter(|m| m.holiday_calendar_id == Some(loaded.id))
            .map(|m| m.email.as_str())
            .collect();
        assert_eq!(named, vec!["dora.maier@northwind.example"]);
        assert_eq!(northwind.routers[0].holiday_calendar_id(), Some(loaded.id));
    }

    #[test]
    fn production_provisioning_refuses_http_and_loopback_crm_urls() {
        let base = chrono::Utc::now();
        let demo = crate::seed::tests::demo();
        // The demo's fake CRM on http://127.0.0.1:4010 is for local runs only.
        let refused = crate::seed::load(
            &demo.to_string(),
            base,
            crate::outbound::OutboundPolicy::STRICT,
        )
        .expect_err("strict provisioning refuses it")
        .to_string();
        assert!(
            refused.ends_with(".crm.base_url: must be an https URL"),
            "{refused}"
        );
        let mut https_loopback = demo;
        for account in https_loopback["accounts"].as_array_mut().unwrap() {
            if !account["crm"].is_null() {
                account["crm"]["base_url"] = json!("https://127.0.0.1:4010");
            }
        }
        let refused = crate::seed::load(
            &https_loopback.to_string(),
            base,
            crate::outbound::OutboundPolicy::STRICT,
        )
        .expect_err("strict provisioning refuses loopback")
        .to_string();
        assert!(
            refused.ends_with("must not point to a loopback address"),
            "{refused}"
        );
    }

    /// BEHAVIOR 1: a client secret shorter than 16 characters is refused;
    /// 16 characters (counted as characters, not bytes) are enough.
    #[test]
    fn a_client_secret_shorter_than_16_characters_is_refused() {
        assert_refused(&[
            (
                |s| s["accounts"][0]["clients"][0]["client_secret"] = json!("s"),
                "accounts[0].clients[0].client_secret: must be at least 16 characters",
            ),
            (
                |s| s["accounts"][0]["clients"][1]["client_secret"] = json!("fifteen-chars!!"),
                "accounts[0].clients[1].client_secret: must be at least 16 characters",
            ),
            (
                |s| s["accounts"][0]["clients"][0]["client_secret"] = json!("ééééééééééééééé"),
                "accounts[0].clients[0].client_secret: must be at least 16 characters",
            ),
        ]);
        let mut seed = super::super::tests::demo();
        seed["accounts"][0]["clients"][0]["client_secret"] = json!("sixteen-chars!!!");
        let base = chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 11, 22, 9, 0, 0).unwrap();
        assert!(
            crate::seed::load(
                &seed.to_string(),
                base,
                crate::outbound::OutboundPolicy::LOCAL
            )
            .is_ok(),
            "16 characters are enough"
        );
    }
}
