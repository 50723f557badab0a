//! What a management request brings besides its path: the body of a create or a draft,
//! parsed into the configuration to check ([`parse_body`]), a revision number from the path,
//! and the body check of the operations that take none. The configuration's own rules are
//! [`super::super::config`]'s.

use crate::error::DomainError;
use crate::model::object_type::ObjectType;
use crate::model::router::FIRST_REVISION;
use crate::routers::config::{ConfigBody, ConfigError, SettingsBody, TeamBody, UserBody};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The configuration keys of a create or a draft body (BEHAVIOR 15).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RouterBody {
    name: String,
    #[serde(default)]
    object_type: Option<ObjectType>,
    #[serde(default)]
    has_integration: Option<bool>,
    settings: Option<SettingsBody>,
    users: Vec<UserBody>,
    teams: Vec<TeamBody>,
}

/// Parses a `{n}` path segment: a positive integer, else `None` (404 `Revision not found`).
pub fn parse_revision_number(n: &str) -> Option<u64> {
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse::<u64>().ok().filter(|n| *n >= FIRST_REVISION)
}

/// The body check of an operation that takes no body, answered once: after the checks that
/// come before a body's 400 (BEHAVIOR 2).
pub(super) fn take_body(body: &mut Option<Result<(), DomainError>>) -> Result<(), DomainError> {
    body.take().unwrap_or(Ok(()))
}

/// A configuration problem as a 400 naming its path in `field`.
pub(super) fn invalid(e: ConfigError) -> DomainError {
    match e.path.is_empty() {
        true => DomainError::bad_request(e.message),
        // BEHAVIOR 17: the same message as a member's (`Invalid holiday_calendar_id`).
        false if e.path == "settings.holiday_calendar_id" => {
            DomainError::bad_field(e.path, e.message)
        }
        false => DomainError::bad_field(e.path.clone(), e.to_string()),
    }
}

/// The configuration of a create (`fixed` `None`: `object_type` required) or a draft (`fixed`
/// the router's type: `object_type` may be sent, and must be it).
///
/// Errors: 400 naming the missing key or the JSON path of the first problem.
pub(super) fn parse_body(
    body: &Map<String, Value>, fixed: Option<ObjectType>,
) -> Result<(ObjectType, ConfigBody), DomainError> {
    let required: &[&str] = match fixed {
        None => &["name", "object_type", "settings", "users", "teams"],
        Some(_) => &["name", "settings", "users", "teams"],
    };
    if let Some(missing) = required.iter().find(|k| !body.contains_key(**k)) {
        return Err(DomainError::bad_field(
            *missing,
            format!("{missing}: required"),
        ));
    }
    let value = Value::Object(body.clone());
    let parsed: RouterBody = serde_path_to_error::deserialize(&value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        match path.as_str() {
            "." => DomainError::bad_request(message),
            _ => DomainError::bad_field(path.clone(), format!("{path}: {message}")),
        }
    })?;
    let object_type = match (fixed, parsed.object_type) {
        (Some(fixed), Some(sent)) if sent != fixed => {
            return Err(DomainError::bad_field(
                "object_type",
                "object_type: fixed when the router is created",
            ))
        }
        (Some(fixed), _) => fixed,
        (None, Some(sent)) => sent,
        (None, None) => {
            return Err(DomainError::bad_field(
                "object_type",
                "object_type: required",
            ))
        }
    };
    Ok((
        object_type,
        ConfigBody {
            name: parsed.name,
            has_integration: parsed.has_integration.unwrap_or(false),
            settings: parsed.settings,
            users: parsed.users,
            teams: parsed.teams,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_number_is_a_positive_integer() {
        assert_eq!(parse_revision_number("1"), Some(1));
        assert_eq!(parse_revision_number("0042"), Some(42));
        for bad in ["0", "-1", "+1", "1.0", "x", "", "99999999999999999999999"] {
            assert_eq!(parse_revision_number(bad), None, "{bad}");
        }
    }

    /// The field and message of a 400.
    fn refused(body: serde_json::Value, fixed: Option<ObjectType>) -> (Option<String>, String) {
        match parse_body(body.as_object().unwrap(), fixed) {
            Err(DomainError::Invalid { field, message }) => (field, message),
            other => panic!("not a 400: {other:?}"),
        }
    }

    #[test]
    fn a_create_needs_its_type_and_a_draft_keeps_the_routers() {
        let create = serde_json::json!({
            "name": "R", "object_type": "deals", "settings": null, "users": [], "teams": []
        });
        let (object_type, body) = parse_body(create.as_object().unwrap(), None).unwrap();
        assert_eq!((object_type, body.name.as_str()), (ObjectType::Deals, "R"));
        assert!(!body.has_integration, "false unless sent");
        let mut draft = create.clone();
        draft.as_object_mut().unwrap().remove("object_type");
        let (object_type, _) =
            parse_body(draft.as_object().unwrap(), Some(ObjectType::Contacts)).unwrap();
        assert_eq!(object_type, ObjectType::Contacts);
        assert_eq!(
            refused(draft, None),
            (Some("object_type".into()), "object_type: required".into())
        );
        assert_eq!(
            refused(create, Some(ObjectType::Contacts)).0.as_deref(),
            Some("object_type"),
            "the type is fixed when the router is created"
        );
    }

    #[test]
    fn a_body_problem_names_the_missing_key_or_the_json_path() {
        let missing = serde_json::json!({"name": "R", "settings": null, "users": []});
        assert_eq!(
            refused(missing, Some(ObjectType::Contacts)),
            (Some("teams".into()), "teams: required".into())
        );
        let wrong = serde_json::json!({
            "name": "R", "settings": null, "users": [{"email": 5}], "teams": []
        });
        let (field, message) = refused(wrong, Some(ObjectType::Contacts));
        assert_eq!(field.as_deref(), Some("users[0].email"));
        assert!(message.starts_with("users[0].email: "), "{message}");
        let unknown = serde_json::json!({
            "name": "R", "settings": null, "users": [], "teams": [], "colour": "red"
        });
        let (field, message) = refused(unknown, Some(ObjectType::Contacts));
        assert_eq!(field.as_deref(), Some("colour"));
        assert!(message.contains("unknown field `colour`"), "{message}");
    }
}
