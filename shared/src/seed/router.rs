//! A router of the seed: its configuration read by the one router validator
//! ([`crate::routers::config::parse`], which the API's writes use too), revision 1 made by
//! `provisioning`.

use super::file::SeedRouter;
use super::{Loader, SeedError};
use crate::fields::catalogue::Catalogue;
use crate::model::account::Team;
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::router::{Router, FIRST_REVISION};
use crate::routers::config::{self, ConfigBody};
use crate::types::ids::{AccountId, HolidayCalendarId};
use std::collections::HashMap;

/// What a seed router's configuration may name in its account besides members and teams: the
/// field catalogues by type and the holiday calendars (BEHAVIOR 17).
#[derive(Clone, Copy)]
pub(super) struct AccountNames<'a> {
    /// The field catalogue of each object type.
    pub(super) catalogues: &'a HashMap<ObjectType, Catalogue>,
    /// The account's holiday calendar ids.
    pub(super) holiday_calendars: &'a [HolidayCalendarId],
}

impl Loader {
    /// Loads one router at `p`: its configuration must pass the router validator against the
    /// account's members, teams and the type's fields; a problem is reported at `p` + its path.
    pub(super) fn router(
        &mut self, p: &str, account_id: AccountId, r: SeedRouter, members: &[Member],
        teams: &[Team], account: &AccountNames<'_>,
    ) -> Result<Router, SeedError> {
        let AccountNames {
            catalogues,
            holiday_calendars,
        } = *account;
        let body = ConfigBody {
            name: r.name,
            has_integration: r.has_integration,
            settings: r.settings,
            users: r.users,
            teams: r.teams,
        };
        let account = config::Account {
            members,
            teams,
            catalogue: &catalogues[&r.object_type],
            holiday_calendars,
        };
        let config = config::parse(body, account).map_err(|e| SeedError {
            path: if e.path.is_empty() {
                p.to_string()
            } else {
                format!("{p}.{}", e.path)
            },
            message: e.message,
        })?;
        let created_at = self.next_time();
        let archived_by = r
            .archived
            .0
            .map(|_| r.archived_by.unwrap_or_else(|| "provisioning".into()));
        // Provisioning and the API's writes resolve the ids of the e-mails a configuration
        // names alike (members and teams change only through provisioning, insert-if-absent).
        let created = Router::created(
            r.id,
            account_id,
            r.object_type,
            created_at,
            &config,
            FIRST_REVISION,
        );
        Ok(Router {
            is_published: r.is_published,
            archived_at: r.archived.0,
            archived_by,
            ..created
        })
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
