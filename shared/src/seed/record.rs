//! A starting record of the seed, validated exactly as a POST body is.

use super::file::SeedRecord;
use super::{Loader, SeedError};
use crate::error::DomainError;
use crate::fields::catalogue::Catalogue;
use crate::fields::validate::{resolve_inputs, validate_fields};
use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use crate::model::provision::PlannedRecord;
use crate::model::record::Record;
use crate::records::write::{apply, check_required, check_size, unique_keys};
use crate::types::ids::AccountId;
use std::collections::BTreeMap;

impl Loader {
    /// Loads one record at `p`, validated exactly as a POST body is; system-managed fields are
    /// set here.
    pub(super) fn record(
        &mut self, p: &str, account_id: AccountId, object_type: ObjectType, r: SeedRecord,
        catalogue: &Catalogue, members: &[Member],
    ) -> Result<PlannedRecord, SeedError> {
        let fields_path = format!("{p}.fields");
        let as_seed_error = |e: DomainError| {
            let field = e.field().map(|f| format!(".{f}")).unwrap_or_default();
            SeedError {
                path: format!("{fields_path}{field}"),
                message: e.to_string(),
            }
        };
        let inputs = validate_fields(catalogue, &r.fields).map_err(as_seed_error)?;
        let created_at = self.next_time();
        let resolved =
            resolve_inputs(inputs, |wanted| wanted.find_active(members)).map_err(as_seed_error)?;
        let mut values = BTreeMap::new();
        apply(&mut values, catalogue, &resolved, created_at);
        check_required(object_type, &values).map_err(as_seed_error)?;
        check_size(&BTreeMap::new(), &values).map_err(as_seed_error)?;
        let record = Record {
            id: r.id,
            account_id,
            object_type,
            values,
            created_at,
            updated_at: created_at,
            archived_at: None,
            archived_by: None,
            version: 1,
        };
        let unique_keys = unique_keys(catalogue, &record);
        Ok(PlannedRecord {
            record,
            unique_keys,
            path: p.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_refused;
    use serde_json::{json, Value};

    #[test]
    fn record_problems_name_the_field() {
        assert_refused(&[
            (
                |s| s["accounts"][0]["records"]["contacts"][0]["fields"]["email"] = json!("broken"),
                "accounts[0].records.contacts[0].fields.email",
            ),
            (
                |s| s["accounts"][0]["records"]["contacts"][0]["fields"]["record_id"] = json!("x"),
                "accounts[0].records.contacts[0].fields.record_id",
            ),
            (
                |s| s["accounts"][0]["records"]["deals"][0]["fields"]["deal_stage"] = Value::Null,
                "accounts[0].records.deals[0].fields.deal_stage",
            ),
            (
                |s| {
                    s["accounts"][0]["records"]["contacts"][1]["fields"]["email"] =
                        json!("dana@contoso.example")
                },
                "accounts[0].records.contacts[1].fields.email",
            ),
            (
                |s| {
                    s["accounts"][0]["records"]["deals"][0]["fields"]["deal_owner"] =
                        json!("eli.former@northwind.example")
                },
                "accounts[0].records.deals[0].fields.deal_owner",
            ),
            (
                |s| {
                    s["accounts"][0]["records"]["contacts"][0]["fields"]["city"] =
                        json!("x".repeat(65_537))
                },
                "accounts[0].records.contacts[0].fields.city: Invalid value for city: at most",
            ),
            (
                |s| {
                    let fields = &mut s["accounts"][0]["records"]["contacts"][0]["fields"];
                    for name in ["city", "address", "job_title", "company", "country"] {
                        fields[name] = json!("x".repeat(65_536));
                    }
                },
                "accounts[0].records.contacts[0].fields: Record too large",
            ),
        ]);
    }
}
