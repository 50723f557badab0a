//! A CRM connection of the seed (`docs/seed-format.md` `crm`, BEHAVIOR 7): HubSpot's two forms
//! (a private app's `access_token`, or an OAuth app's `oauth` with its refresh token) and
//! Salesforce's (`oauth` of an External Client App, its refresh token optional). Each form takes
//! only its own optional keys: HubSpot `id_properties` and `max_requests_per_second`, Salesforce
//! `api_version`, `objects` and `max_api_share`.

use super::file::{SeedCrm, SeedOAuth};
use super::{err, object_type_key, SeedError};
use crate::model::account::{
    CrmCredentials, CrmOptions, CrmProvider, CrmSecret, IdProperties, OAuthApp,
};
use crate::model::provision::PlannedCrm;
use crate::outbound::{OutboundPolicy, OutboundUrl};
use crate::types::limits::check_chars;
use serde_json::Value;

/// The longest secret or client id a connection takes, in characters (HubSpot's tokens are a
/// few hundred, Salesforce's consumer keys and secrets under 100).
const MAX_SECRET_CHARS: usize = 4096;

/// The longest id property name taken.
const MAX_PROPERTY_NAME_CHARS: usize = 100;

/// The most requests per second a HubSpot connection may allow (BEHAVIOR 7).
pub const MAX_REQUESTS_PER_SECOND: u32 = 10;

/// A connection of the seed under the outbound guard's `policy`.
///
/// Errors: the first problem, at its path under `path`.
pub(super) fn connection(
    path: &str, c: SeedCrm, policy: OutboundPolicy,
) -> Result<PlannedCrm, SeedError> {
    let Some(provider) = CrmProvider::parse(&c.provider) else {
        return err(
            format!("{path}.provider"),
            format!(
                "unknown provider \"{}\"; expected \"hubspot\" or \"salesforce\"",
                c.provider
            ),
        );
    };
    if let Err(why) = OutboundUrl::parse(&c.base_url, policy) {
        return err(format!("{path}.base_url"), why);
    }
    let (credentials, options) = match provider {
        CrmProvider::HubSpot => hubspot(path, &c)?,
        CrmProvider::Salesforce => salesforce(path, &c)?,
    };
    Ok(PlannedCrm {
        provider,
        base_url: c.base_url,
        credentials,
        options,
    })
}

/// Refuses the keys of `c` that the other provider's form takes.
fn only_keys_of(path: &str, provider: CrmProvider, keys: &[(&str, bool)]) -> Result<(), SeedError> {
    match keys.iter().find(|(_, given)| *given) {
        Some((key, _)) => err(
            format!("{path}.{key}"),
            format!("not a key of a {provider} connection"),
        ),
        None => Ok(()),
    }
}

fn secret(path: String, value: &str) -> Result<CrmSecret, SeedError> {
    if value.trim().is_empty() {
        return err(path, "must not be empty");
    }
    check_chars(value, MAX_SECRET_CHARS).or_else(|why| err(path, why))?;
    Ok(CrmSecret::new(value))
}

/// An OAuth app's credentials; `refresh_token` required when `needs_refresh_token`.
fn oauth_app(path: &str, o: &SeedOAuth, needs_refresh_token: bool) -> Result<OAuthApp, SeedError> {
    if o.client_id.trim().is_empty() {
        return err(format!("{path}.oauth.client_id"), "must not be empty");
    }
    check_chars(&o.client_id, MAX_SECRET_CHARS)
        .or_else(|why| err(format!("{path}.oauth.client_id"), why))?;
    let refresh_token = match &o.refresh_token {
        Some(token) => Some(secret(format!("{path}.oauth.refresh_token"), token)?),
        None if needs_refresh_token => {
            return err(format!("{path}.oauth.refresh_token"), "is required")
        }
        None => None,
    };
    Ok(OAuthApp {
        client_id: o.client_id.clone(),
        client_secret: secret(format!("{path}.oauth.client_secret"), &o.client_secret)?,
        refresh_token,
    })
}

/// HubSpot's forms: exactly one of `access_token` and `oauth` (with its refresh token),
/// `id_properties` keyed by object type, each a property name, and `max_requests_per_second`
/// from 1 to 10.
fn hubspot(path: &str, c: &SeedCrm) -> Result<(CrmCredentials, CrmOptions), SeedError> {
    only_keys_of(
        path,
        CrmProvider::HubSpot,
        &[
            ("api_version", c.api_version.is_some()),
            ("objects", c.objects.is_some()),
            ("max_api_share", c.max_api_share.is_some()),
        ],
    )?;
    let credentials = match (&c.access_token, &c.oauth) {
        (Some(token), None) => {
            CrmCredentials::PrivateApp(secret(format!("{path}.access_token"), token)?)
        }
        (None, Some(o)) => CrmCredentials::OAuth(oauth_app(path, o, true)?),
        (Some(_), Some(_)) => {
            return err(
                path.to_string(),
                "give either access_token (a private app) or oauth (an OAuth app), not both",
            )
        }
        (None, None) => {
            return err(
                path.to_string(),
                "needs access_token (a private app) or oauth (an OAuth app)",
            )
        }
    };
    let mut id_properties = Vec::new();
    for (type_name, property) in c.id_properties.iter().flatten() {
        let p = format!("{path}.id_properties.{type_name}");
        let object_type = object_type_key(&p, type_name)?;
        if !is_property_name(property) {
            return err(
                p,
                format!(
                    "\"{property}\" is not a HubSpot property name (letters, digits and _, at most {MAX_PROPERTY_NAME_CHARS} characters)"
                ),
            );
        }
        id_properties.push((object_type, property.clone()));
    }
    let max_requests_per_second = match &c.max_requests_per_second {
        None => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| (1..=MAX_REQUESTS_PER_SECOND).contains(n))
                .ok_or_else(|| {
                    SeedError::at(
                        format!("{path}.max_requests_per_second"),
                        format!("must be an integer from 1 to {MAX_REQUESTS_PER_SECOND}"),
                    )
                })?,
        ),
    };
    let options = CrmOptions {
        id_properties: IdProperties::new(id_properties),
        max_requests_per_second,
        ..CrmOptions::default()
    };
    Ok((credentials, options))
}

/// Salesforce's form: `oauth` (client id and secret, the refresh token optional), `api_version`
/// `NN.N`, `objects.contacts` `Contact` or `Lead`, `max_api_share` from 0 to 1.
fn salesforce(path: &str, c: &SeedCrm) -> Result<(CrmCredentials, CrmOptions), SeedError> {
    only_keys_of(
        path,
        CrmProvider::Salesforce,
        &[
            ("access_token", c.access_token.is_some()),
            ("id_properties", c.id_properties.is_some()),
            (
                "max_requests_per_second",
                c.max_requests_per_second.is_some(),
            ),
        ],
    )?;
    let Some(o) = &c.oauth else {
        return err(
            path.to_string(),
            "needs oauth (the External Client App's client_id and client_secret, and a refresh_token when it does not use the client-credentials flow)",
        );
    };
    let credentials = CrmCredentials::OAuth(oauth_app(path, o, false)?);
    let api_version = match &c.api_version {
        None => None,
        Some(Value::String(v)) if is_api_version(v) => Some(v.clone()),
        Some(_) => {
            return err(
                format!("{path}.api_version"),
                "must be a Salesforce API version \"NN.N\" (e.g. \"66.0\")",
            )
        }
    };
    let mut contacts_object = None;
    for (type_name, object) in c.objects.iter().flatten() {
        let p = format!("{path}.objects.{type_name}");
        if type_name != "contacts" {
            return err(p, "only contacts can name their sObject (Contact or Lead)");
        }
        match object.as_str() {
            Some(name @ ("Contact" | "Lead")) => contacts_object = Some(name.to_string()),
            _ => return err(p, "must be \"Contact\" or \"Lead\""),
        }
    }
    let max_api_share = match &c.max_api_share {
        None => None,
        Some(value) => Some(
            value
                .as_f64()
                .filter(|share| (0.0..=1.0).contains(share))
                .ok_or_else(|| {
                    SeedError::at(
                        format!("{path}.max_api_share"),
                        "must be a number from 0 to 1",
                    )
                })?,
        ),
    };
    let options = CrmOptions {
        api_version,
        contacts_object,
        max_api_share,
        ..CrmOptions::default()
    };
    Ok((credentials, options))
}

/// Whether `name` can be a HubSpot property's internal name: ASCII letters, digits and `_`.
fn is_property_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_PROPERTY_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `version` is a Salesforce REST API version as the seed names it: `NN.N` (two or
/// three digits, a dot, one digit).
fn is_api_version(version: &str) -> bool {
    match version.split_once('.') {
        Some((major, minor)) => {
            (2..=3).contains(&major.len())
                && major.bytes().all(|b| b.is_ascii_digit())
                && minor.len() == 1
                && minor.bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::model::account::{CrmCredentials, CrmProvider};
    use serde_json::json;

    fn load(crm: serde_json::Value) -> Result<crate::model::provision::PlannedCrm, String> {
        let mut seed = super::super::tests::demo();
        seed["accounts"][0]["crm"] = crm;
        crate::seed::load(
            &seed.to_string(),
            chrono::Utc::now(),
            crate::outbound::OutboundPolicy::LOCAL,
        )
        .map(|mut plan| plan.accounts.remove(0).crm.unwrap())
        .map_err(|e| e.to_string())
    }

    /// The `salesforce` form of `crm` (seed format; BEHAVIOR 7 "Salesforce as it is").
    #[test]
    fn a_salesforce_connection_takes_its_oauth_app_and_its_options() {
        let base = "http://127.0.0.1:4011";
        let plan = load(json!({"provider": "salesforce", "base_url": base,
            "oauth": {"client_id": "3MVG9", "client_secret": "sf-secret"}}))
        .unwrap();
        assert_eq!(plan.provider, CrmProvider::Salesforce);
        let CrmCredentials::OAuth(app) = &plan.credentials else {
            panic!("an OAuth app")
        };
        assert_eq!(app.refresh_token, None, "the client-credentials flow");
        assert_eq!(plan.options.api_version, None);
        let plan = load(json!({"provider": "salesforce", "base_url": base,
            "oauth": {"client_id": "3MVG9", "client_secret": "sf-secret", "refresh_token": "5Aep"},
            "api_version": "61.0", "objects": {"contacts": "Lead"}, "max_api_share": 0.5}))
        .unwrap();
        assert_eq!(plan.options.api_version.as_deref(), Some("61.0"));
        assert_eq!(plan.options.contacts_object.as_deref(), Some("Lead"));
        assert_eq!(plan.options.max_api_share, Some(0.5));
        let hubspot = load(
            json!({"provider": "hubspot", "base_url": base, "access_token": "t",
            "max_requests_per_second": 4}),
        )
        .unwrap();
        assert_eq!(hubspot.options.max_requests_per_second, Some(4));
    }

    #[test]
    fn salesforce_and_hubspot_problems_name_their_path() {
        let base = "http://127.0.0.1:4011";
        let app = || json!({"client_id": "3MVG9", "client_secret": "sf-secret"});
        let cases = [
            (
                json!({"provider": "salesforce", "base_url": base}),
                "accounts[0].crm: needs oauth",
            ),
            (
                json!({"provider": "salesforce", "base_url": base, "access_token": "t", "oauth": app()}),
                "accounts[0].crm.access_token: not a key of a salesforce connection",
            ),
            (
                json!({"provider": "salesforce", "base_url": base, "oauth": app(), "api_version": "v66"}),
                "accounts[0].crm.api_version: must be a Salesforce API version",
            ),
            (
                json!({"provider": "salesforce", "base_url": base, "oauth": app(), "api_version": 66}),
                "accounts[0].crm.api_version",
            ),
            (
                json!({"provider": "salesforce", "base_url": base, "oauth": app(), "objects": {"contacts": "Account"}}),
                "accounts[0].crm.objects.contacts: must be \"Contact\" or \"Lead\"",
            ),
            (
                json!({"provider": "salesforce", "base_url": base, "oauth": app(), "objects": {"deals": "Lead"}}),
                "accounts[0].crm.objects.deals",
            ),
            (
                json!({"provider": "salesforce", "base_url": base, "oauth": app(), "max_api_share": 1.5}),
                "accounts[0].crm.max_api_share: must be a number from 0 to 1",
            ),
            (
                json!({"provider": "salesforce", "base_url": base, "oauth": {"client_id": "3MVG9", "client_secret": " "}}),
                "accounts[0].crm.oauth.client_secret: must not be empty",
            ),
            (
                json!({"provider": "salesforce", "base_url": "http://10.1.2.3", "oauth": app()}),
                "accounts[0].crm.base_url: must not point to a private address",
            ),
            (
                json!({"provider": "hubspot", "base_url": base, "access_token": "t", "max_api_share": 0.5}),
                "accounts[0].crm.max_api_share: not a key of a hubspot connection",
            ),
            (
                json!({"provider": "hubspot", "base_url": base, "access_token": "t", "max_requests_per_second": 11}),
                "accounts[0].crm.max_requests_per_second: must be an integer from 1 to 10",
            ),
            (
                json!({"provider": "hubspot", "base_url": base, "access_token": "t", "max_requests_per_second": 0}),
                "accounts[0].crm.max_requests_per_second",
            ),
            (
                json!({"provider": "hubspot", "base_url": base, "oauth": app()}),
                "accounts[0].crm.oauth.refresh_token: is required",
            ),
        ];
        for (crm, expected) in cases {
            let message = load(crm.clone()).unwrap_err();
            assert!(
                message.starts_with(expected),
                "{crm}: expected {expected:?}, got {message:?}"
            );
        }
    }
}
