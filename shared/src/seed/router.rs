//! A router of the seed: references resolved in its account, trigger checked against its type.

use super::file::SeedRouter;
use super::{err, member_email, Loader, SeedError};
use crate::fields::catalogue::Catalogue;
use crate::fields::definition::FieldType;
use crate::model::account::Team;
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::router::{
    DistributionModel, RosterMember, RotationType, Router, RouterSettings, RouterUser,
};
use crate::sla::parse_setting;
use crate::types::ids::AccountId;
use std::collections::HashMap;

impl Loader {
    /// Loads one router at `p`; users, teams, `default_user` and `owner_field` must exist in
    /// the account, the trigger must follow the grammar, and the distribution model's rules hold.
    pub(super) fn router(
        &mut self, p: &str, account_id: AccountId, r: SeedRouter, members: &[Member],
        teams: &[Team], catalogues: &HashMap<ObjectType, Catalogue>,
    ) -> Result<Router, SeedError> {
        let catalogue = &catalogues[&r.object_type];
        let mut users = Vec::new();
        for (j, u) in r.users.iter().enumerate() {
            let email = member_email(&format!("{p}.users[{j}].email"), &u.email, members)?;
            if let Some(pct) = u.percentage {
                if !(0.0..=100.0).contains(&pct) {
                    return err(
                        format!("{p}.users[{j}].percentage"),
                        "must be from 0 to 100",
                    );
                }
            }
            users.push(RouterUser {
                email,
                percentage: u.percentage,
            });
        }
        let mut team_names = Vec::new();
        for (j, t) in r.teams.iter().enumerate() {
            if !teams.iter().any(|x| x.name == t.name) {
                return err(
                    format!("{p}.teams[{j}].name"),
                    format!("no team \"{}\" in this account", t.name),
                );
            }
            team_names.push(t.name.clone());
        }
        let settings = match r.settings {
            None => None,
            Some(s) => {
                let sp = format!("{p}.settings");
                if let Some(owner) = &s.owner_field {
                    match catalogue.get(owner) {
                        Some(f) if f.field_type == FieldType::User && !f.is_system() => {}
                        _ => {
                            return err(
                                format!("{sp}.owner_field"),
                                format!("\"{owner}\" is not a user field of {}", r.object_type),
                            )
                        }
                    }
                }
                let default_user = match &s.default_user {
                    Some(e) => Some(member_email(&format!("{sp}.default_user"), e, members)?),
                    None => None,
                };
                if let Some(trigger) = &s.trigger {
                    trigger.validate(catalogue).map_err(|e| SeedError {
                        path: format!("{sp}.trigger.{}", e.path),
                        message: e.message,
                    })?;
                }
                let sla = match &s.sla {
                    None => None,
                    Some(sla) => Some(
                        parse_setting(
                            sla.minutes,
                            &sla.worked_field,
                            sla.worked_values.as_deref(),
                            catalogue,
                            members,
                        )
                        .map_err(|e| SeedError {
                            path: format!("{sp}.sla.{}", e.key),
                            message: e.message,
                        })?,
                    ),
                };
                if s.distribution_model == Some(DistributionModel::Percentage) {
                    if !team_names.is_empty() {
                        return err(format!("{p}.teams"), "a percentage router lists no teams");
                    }
                    if let Some(j) = users.iter().position(|u| u.percentage.is_none()) {
                        return err(
                            format!("{p}.users[{j}].percentage"),
                            "every user of a percentage router needs a percentage",
                        );
                    }
                    let total: f64 = users.iter().filter_map(|u| u.percentage).sum();
                    if (total - 100.0).abs() > 1e-6 {
                        return err(
                            format!("{p}.users"),
                            format!("percentages sum to {total}, not 100"),
                        );
                    }
                }
                if s.rotation_type == RotationType::Teams
                    && (team_names.is_empty() || !users.is_empty())
                {
                    return err(
                        format!("{sp}.rotation_type"),
                        "a teams rotation lists teams and no users",
                    );
                }
                Some(RouterSettings {
                    overwrite: s.overwrite,
                    owner_field: s.owner_field,
                    distribution_model: s.distribution_model,
                    default_user,
                    disable_default_assignment: s.disable_default_assignment,
                    ignore_working_hours: s.ignore_working_hours,
                    account_matching: s.account_matching,
                    rotation_type: s.rotation_type,
                    trigger: s.trigger,
                    sla,
                })
            }
        };
        let created_at = self.next_time();
        let archived_by = r
            .archived
            .0
            .map(|_| r.archived_by.unwrap_or_else(|| "provisioning".into()));
        let mut router = Router {
            id: r.id,
            account_id,
            name: r.name,
            object_type: r.object_type,
            has_integration: r.has_integration,
            is_published: r.is_published,
            settings,
            users,
            teams: team_names,
            created_at,
            updated_at: created_at,
            archived_at: r.archived.0,
            archived_by,
            member_ids: Vec::new(),
        };
        // Provisioning is the only change of membership (members, teams and routers are
        // inserted together; the API edits no e-mail or team): the ids resolved now hold.
        let roster = router.roster_emails(teams);
        let member_ids = roster
            .iter()
            .filter_map(|email| {
                members
                    .iter()
                    .find(|m| m.email.as_str() == *email && m.is_active())
                    .map(|m| RosterMember {
                        email: m.email.clone(),
                        id: m.id,
                    })
            })
            .collect();
        router.member_ids = member_ids;
        Ok(router)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_refused;
    use serde_json::json;

    #[test]
    fn router_problems_name_the_routers_key() {
        assert_refused(&[
            (
                |s| {
                    s["accounts"][0]["routers"][0]["settings"]["trigger"]["groups"][0]["conditions"][0]["operator"] =
                        json!("eq")
                },
                "accounts[0].routers[0].settings.trigger.groups[0].conditions[0].operator: unknown operator \"eq\"",
            ),
            (
                |s| s["accounts"][0]["routers"][0]["users"][0]["email"] = json!("ghost@northwind.example"),
                "accounts[0].routers[0].users[0].email",
            ),
            (
                |s| s["accounts"][0]["routers"][0]["teams"][0]["name"] = json!("Nope"),
                "accounts[0].routers[0].teams[0].name",
            ),
            (
                |s| s["accounts"][0]["routers"][0]["settings"]["owner_field"] = json!("first_name"),
                "accounts[0].routers[0].settings.owner_field",
            ),
            (
                |s| s["accounts"][0]["routers"][0]["settings"]["default_user"] = json!("ghost@x.example"),
                "accounts[0].routers[0].settings.default_user",
            ),
            (
                |s| {
                    s["accounts"][0]["routers"][0]["settings"]["trigger"]["groups"][0]["conditions"][0]["field"] =
                        json!("nope")
                },
                "accounts[0].routers[0].settings.trigger.groups[0].conditions[0]",
            ),
            (|s| s["accounts"][0]["routers"][1]["users"][0]["percentage"] = json!(60), "accounts[0].routers[1].users"),
            (
                |s| s["accounts"][0]["routers"][1]["teams"] = json!([{"name": "Inbound"}]),
                "accounts[0].routers[1].teams",
            ),
            (
                |s| s["accounts"][0]["routers"][2]["users"] = json!([{"email": "ana.lopez@northwind.example"}]),
                "accounts[0].routers[2].settings.rotation_type",
            ),
            (
                |s| s["accounts"][0]["routers"][1]["id"] = s["accounts"][0]["routers"][0]["id"].clone(),
                "accounts[0].routers[1].id",
            ),
        ]);
    }

    #[test]
    fn sla_problems_name_the_sla_key() {
        fn sla(s: &mut serde_json::Value, value: serde_json::Value) {
            s["accounts"][0]["routers"][0]["settings"]["sla"] = value;
        }
        assert_refused(&[
            (
                |s| sla(s, json!({"minutes": 0, "worked_field": "lead_status", "worked_values": null})),
                "accounts[0].routers[0].settings.sla.minutes: must be a whole number of minutes from 1 to 10080",
            ),
            (
                |s| sla(s, json!({"minutes": 10081, "worked_field": "lead_status"})),
                "accounts[0].routers[0].settings.sla.minutes: ",
            ),
            (
                |s| sla(s, json!({"minutes": "30", "worked_field": "lead_status"})),
                "accounts[0].routers[0].settings.sla.minutes: invalid type",
            ),
            (|s| sla(s, json!({"minutes": 30})), "accounts[0].routers[0].settings.sla: missing field `worked_field`"),
            (
                |s| sla(s, json!({"minutes": 30, "worked_field": "deal_stage"})),
                "accounts[0].routers[0].settings.sla.worked_field: unknown field \"deal_stage\" for contacts",
            ),
            (
                |s| sla(s, json!({"minutes": 30, "worked_field": "lead_status", "worked_values": []})),
                "accounts[0].routers[0].settings.sla.worked_values: must be null or a non-empty array",
            ),
            (
                |s| sla(s, json!({"minutes": 30, "worked_field": "lead_status", "worked_values": ["open", "nope"]})),
                "accounts[0].routers[0].settings.sla.worked_values[1]: Invalid value for lead_status",
            ),
            (
                |s| sla(s, json!({"minutes": 30, "worked_field": "lead_status", "worked_values": "open"})),
                "accounts[0].routers[0].settings.sla.worked_values: invalid type",
            ),
            (
                |s| sla(s, json!({"minutes": 30, "worked_field": "lead_status", "grace": 5})),
                "accounts[0].routers[0].settings.sla.grace: unknown field `grace`",
            ),
            (|s| sla(s, json!(30)), "accounts[0].routers[0].settings.sla: invalid type"),
        ]);
    }

    #[test]
    fn an_sla_reads_its_values_as_writes_of_its_field_and_null_means_none() {
        let mut seed = super::super::tests::demo();
        seed["accounts"][0]["routers"][0]["settings"]["sla"] = json!({
            "minutes": 45, "worked_field": "lead_status", "worked_values": ["In Progress"]
        });
        seed["accounts"][0]["routers"][2]["settings"]["sla"] = json!(null);
        let base = chrono::Utc::now();
        let plan = crate::seed::load(
            &seed.to_string(),
            base,
            crate::outbound::OutboundPolicy::LOCAL,
        )
        .unwrap();
        let routers = &plan.accounts[0].routers;
        let setting = routers[0].settings.as_ref().unwrap().sla.clone().unwrap();
        assert_eq!(setting.minutes.get(), 45);
        assert_eq!(setting.worked_field, "lead_status");
        let values = setting.worked_values.unwrap();
        assert_eq!(values.given, vec![json!("In Progress")]);
        assert_eq!(values.canonical, vec!["in_progress"]);
        assert_eq!(routers[2].settings.as_ref().unwrap().sla, None);
    }
}
