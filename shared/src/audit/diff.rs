//! The one diff of BEHAVIOR 18: an event's `changes` are computed from the JSON shape of the
//! resource before and after the write (the shape the API shows it in), over the paths the
//! resource's [`Shape`] names. No write computes its changes by hand.

use crate::model::audit::AuditChange;
use serde_json::{Map, Value};

/// One reported path of a resource's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// A top-level key, compared whole (`name`, `users`, `holidays`, ...).
    Key(&'static str),
    /// A top-level object reported key by key as `<name>.<key>` (a router's `settings`); the
    /// object itself when it changes to or from `null` (or is absent on one side).
    EachKeyOf(&'static str),
}

/// The paths a resource's events report, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape(pub &'static [Path]);

/// A router (BEHAVIOR 15's configuration keys, `settings.<key>` each, then the publication and
/// the archive).
pub const ROUTER: Shape = Shape(&[
    Path::Key("name"),
    Path::Key("has_integration"),
    Path::EachKeyOf("settings"),
    Path::Key("users"),
    Path::Key("teams"),
    Path::Key("is_published"),
    Path::Key("archived"),
]);

/// A member: its writable keys (BEHAVIOR 4) as the member shape shows them (`role`, the role's
/// display name, for `role_id`).
pub const MEMBER: Shape = Shape(&[
    Path::Key("full_name"),
    Path::Key("first_name"),
    Path::Key("last_name"),
    Path::Key("role"),
    Path::Key("external_id"),
    Path::Key("phone"),
    Path::Key("office_status"),
    Path::Key("working_hours"),
    Path::Key("out_office_dates"),
    Path::Key("time_zone"),
    Path::Key("holiday_calendar_id"),
    Path::Key("capacity"),
    Path::Key("can_receive_notifications"),
    Path::Key("notification_preferences"),
]);

/// A holiday calendar (BEHAVIOR 17).
pub const HOLIDAY_CALENDAR: Shape = Shape(&[
    Path::Key("name"),
    Path::Key("time_zone"),
    Path::Key("holidays"),
]);

/// A webhook subscription (BEHAVIOR 13): never its secrets, which its shape does not hold.
pub const WEBHOOK: Shape = Shape(&[
    Path::Key("url"),
    Path::Key("events"),
    Path::Key("description"),
    Path::Key("enabled"),
]);

impl Shape {
    /// The changes from `before` to `after` (each the resource's JSON object; `None` for a
    /// resource that does not exist on that side: created or deleted). Every path present on
    /// the existing side is reported for a create or a delete (its other side `null`);
    /// otherwise only the paths whose values differ (a key absent on both sides is no change).
    pub fn changes(&self, before: Option<&Value>, after: Option<&Value>) -> Vec<AuditChange> {
        let empty = Map::new();
        let (b, a) = (object(before, &empty), object(after, &empty));
        let whole = before.is_none() || after.is_none();
        let mut out = Vec::new();
        for path in self.0 {
            match *path {
                Path::Key(key) => push(&mut out, key, b.get(key), a.get(key), whole),
                Path::EachKeyOf(key) => match (b.get(key), a.get(key)) {
                    (Some(Value::Object(bo)), Some(Value::Object(ao))) if !whole => {
                        let keys = ao.keys().chain(bo.keys().filter(|k| !ao.contains_key(*k)));
                        for sub in keys {
                            let path = format!("{key}.{sub}");
                            push(&mut out, &path, bo.get(sub), ao.get(sub), false);
                        }
                    }
                    (bv, av) => push(&mut out, key, bv, av, whole),
                },
            }
        }
        out
    }
}

/// The object `value` holds (`empty` for anything else).
fn object<'a>(value: Option<&'a Value>, empty: &'a Map<String, Value>) -> &'a Map<String, Value> {
    value.and_then(Value::as_object).unwrap_or(empty)
}

/// Adds the change of `path` from `before` to `after` (absent: `null`) when they differ, or
/// when `whole` and either side is present.
fn push(
    out: &mut Vec<AuditChange>, path: &str, before: Option<&Value>, after: Option<&Value>,
    whole: bool,
) {
    let differs = match (before, after) {
        (None, None) => false,
        _ if whole => true,
        (b, a) => b != a,
    };
    if differs {
        out.push(AuditChange {
            path: path.to_string(),
            before: before.cloned().unwrap_or(Value::Null),
            after: after.cloned().unwrap_or(Value::Null),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths(changes: &[AuditChange]) -> Vec<&str> {
        changes.iter().map(|c| c.path.as_str()).collect()
    }

    #[test]
    fn settings_are_reported_key_by_key_and_whole_to_or_from_null() {
        let before = json!({"name": "A", "settings": {"overwrite": false, "trigger": {"groups": []}, "sla": null}, "users": [], "teams": []});
        let after = json!({"name": "B", "settings": {"overwrite": true, "trigger": {"groups": []}, "sla": {"minutes": 5}}, "users": [], "teams": []});
        let changes = ROUTER.changes(Some(&before), Some(&after));
        assert_eq!(
            paths(&changes),
            ["name", "settings.overwrite", "settings.sla"]
        );
        assert_eq!(changes[2].before, json!(null));
        assert_eq!(changes[2].after, json!({"minutes": 5}));
        let none = json!({"name": "B", "settings": null, "users": [], "teams": []});
        let changes = ROUTER.changes(Some(&after), Some(&none));
        assert_eq!(paths(&changes), ["settings"]);
        assert_eq!(changes[0].after, json!(null));
        assert!(ROUTER.changes(Some(&after), Some(&after)).is_empty());
    }

    #[test]
    fn a_create_reports_every_present_key_with_before_null_and_a_delete_after_null() {
        let calendar =
            json!({"id": "x", "name": "US", "time_zone": "UTC", "holidays": [], "created_at": "t"});
        let created = HOLIDAY_CALENDAR.changes(None, Some(&calendar));
        assert_eq!(paths(&created), ["name", "time_zone", "holidays"]);
        assert!(created.iter().all(|c| c.before.is_null()));
        let deleted = HOLIDAY_CALENDAR.changes(Some(&calendar), None);
        assert_eq!(paths(&deleted), ["name", "time_zone", "holidays"]);
        assert!(deleted.iter().all(|c| c.after.is_null()));
        let router = json!({"name": "R", "has_integration": false, "settings": null, "users": [], "teams": []});
        assert_eq!(
            paths(&ROUTER.changes(None, Some(&router))),
            ["name", "has_integration", "settings", "users", "teams"],
            "every configuration key, settings whole"
        );
    }

    #[test]
    fn keys_outside_the_shape_are_never_reported() {
        let before =
            json!({"url": "https://a", "secret": "whsec_1", "updated_at": "1", "enabled": true});
        let after =
            json!({"url": "https://b", "secret": "whsec_2", "updated_at": "2", "enabled": true});
        let changes = WEBHOOK.changes(Some(&before), Some(&after));
        assert_eq!(paths(&changes), ["url"]);
    }
}
