//! The router setting `sla` (BEHAVIOR 14), parsed once at provisioning against the router's
//! field catalogue and its account's members.

use crate::fields::catalogue::Catalogue;
use crate::fields::validate::{validate_value, FieldInput};
use crate::model::member::{MemberRef, Membership};
use crate::model::sla::{SlaMinutes, SlaSetting, WorkedValues};
use serde_json::Value;

/// Why an `sla` setting is refused: the key (relative to the `sla` object: `minutes`,
/// `worked_field`, `worked_values` or `worked_values[i]`) and what is wrong. Displays as
/// `<key>: <message>`; the provisioning loader prefixes the router's path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct SlaSettingError {
    /// The offending key, relative to the `sla` object.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

fn refused<T>(key: impl Into<String>, message: impl Into<String>) -> Result<T, SlaSettingError> {
    Err(SlaSettingError {
        key: key.into(),
        message: message.into(),
    })
}

/// Parses the `sla` setting of a router (BEHAVIOR 14) whose object type's fields are
/// `catalogue`, in the account of `members`:
///
/// - `minutes`: a whole number from 1 to 10,080 ([`SlaMinutes`]);
/// - `worked_field`: an internal name of the catalogue (system-managed fields included);
/// - `worked_values`: `None` (JSON `null` or absent), or a non-empty array of values of that
///   field, each read as a write of that field reads it (an enumeration option by internal or
///   display name, a number or date in any accepted form, a member by id or e-mail ...) and kept
///   both as given and in stored form.
///
/// Errors: the first problem, naming its key.
pub fn parse_setting<M: Membership>(
    minutes: i64, worked_field: &str, worked_values: Option<&[Value]>, catalogue: &Catalogue,
    members: &[M],
) -> Result<SlaSetting, SlaSettingError> {
    let minutes = SlaMinutes::parse(minutes).or_else(|e| refused("minutes", e))?;
    let Some(field) = catalogue.get(worked_field) else {
        return refused(
            "worked_field",
            format!(
                "unknown field {worked_field:?} for {}",
                catalogue.object_type().as_str()
            ),
        );
    };
    let worked_values = match worked_values {
        None => None,
        Some([]) => {
            return refused(
                "worked_values",
                "must be null or a non-empty array of values of the worked field",
            )
        }
        Some(given) => {
            let mut canonical = Vec::with_capacity(given.len());
            for (i, value) in given.iter().enumerate() {
                let key = format!("worked_values[{i}]");
                let stored = match validate_value(field, value) {
                    Ok(FieldInput::Set(text)) => text,
                    Ok(FieldInput::Clear) => {
                        return refused(key, "must be a value, not null or blank")
                    }
                    Ok(FieldInput::Member(given)) => match active_member(members, &given) {
                        Some(email) => email,
                        None => {
                            return refused(
                                key,
                                format!("no active member with id or e-mail {given:?}"),
                            )
                        }
                    },
                    Err(e) => return refused(key, e.to_string()),
                };
                canonical.push(stored);
            }
            Some(WorkedValues {
                given: given.to_vec(),
                canonical,
            })
        }
    };
    Ok(SlaSetting {
        minutes,
        worked_field: field.internal_name.clone(),
        worked_values,
    })
}

/// The e-mail of the active member named by `given` (an id or an e-mail).
fn active_member<M: Membership>(members: &[M], given: &str) -> Option<String> {
    MemberRef::parse(given)
        .find_active(members)
        .map(|m| m.member_email().as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::object_type::ObjectType;
    use serde_json::json;

    fn parse(minutes: i64, field: &str, values: Option<Value>) -> Result<SlaSetting, String> {
        let values = values.map(|v| v.as_array().cloned().unwrap_or_default());
        parse_setting::<crate::model::member::Member>(
            minutes,
            field,
            values.as_deref(),
            &Catalogue::standard(ObjectType::Contacts),
            &[],
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn values_are_read_as_writes_of_the_field_read_them() {
        let s = parse(30, "lead_status", Some(json!(["In Progress", "connected"]))).unwrap();
        let values = s.worked_values.unwrap();
        assert_eq!(values.given, vec![json!("In Progress"), json!("connected")]);
        assert_eq!(values.canonical, vec!["in_progress", "connected"]);
        let any_change = parse(10_080, "last_modified_date", None).unwrap();
        assert_eq!(any_change.worked_values, None);
        assert_eq!(any_change.minutes.get(), 10_080);
    }

    #[test]
    fn every_refusal_names_its_key() {
        let cases = [
            (parse(0, "lead_status", None), "minutes: "),
            (parse(10_081, "lead_status", None), "minutes: "),
            (
                parse(5, "nope", None),
                "worked_field: unknown field \"nope\"",
            ),
            (parse(5, "lead_status", Some(json!([]))), "worked_values: "),
            (
                parse(5, "lead_status", Some(json!(["new", "bogus"]))),
                "worked_values[1]: ",
            ),
            (
                parse(5, "city", Some(json!(["Paris", null]))),
                "worked_values[1]: ",
            ),
            (
                parse(5, "contact_owner", Some(json!(["ghost@x.example"]))),
                "worked_values[0]: no active member",
            ),
        ];
        for (result, expected) in cases {
            let message = result.unwrap_err();
            assert!(message.starts_with(expected), "{message} vs {expected}");
        }
    }
}
