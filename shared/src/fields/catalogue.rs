//! The resolved fields of one record type for one account.

use super::definition::{EnumOption, FieldDefinition, FieldType};
use crate::model::object_type::ObjectType;

/// Names that are always in a record response and accepted by `properties` as no-ops
/// (BEHAVIOR 3); they are not field names.
pub const DEFAULT_SYSTEM_FIELDS: [&str; 4] = ["id", "created_at", "updated_at", "archived"];

/// Where a field comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOrigin {
    /// The standard catalogue.
    Standard,
    /// The account's own definition.
    Custom,
    /// System-managed: readable through `properties`, never writable.
    System,
}

/// One field of a record type, resolved for an account.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDef {
    /// Internal name.
    pub internal_name: String,
    /// Display name (dispatch returns an owner field's as `field_name`).
    pub name: String,
    /// Type.
    pub field_type: FieldType,
    /// Options, for enumerations (standard ones first, then the account's).
    pub options: Vec<EnumOption>,
    /// Standard, custom or system.
    pub origin: FieldOrigin,
}

impl FieldDef {
    /// Whether the field is system-managed (never writable).
    pub fn is_system(&self) -> bool {
        self.origin == FieldOrigin::System
    }

    /// Whether this is an owner field: a `user` field whose name ends in `_owner` (BEHAVIOR 3).
    pub fn is_owner_field(&self) -> bool {
        self.field_type == FieldType::User && self.internal_name.ends_with("_owner")
    }
}

/// The fields of one record type for one account, in catalogue order.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogue {
    object_type: ObjectType,
    fields: Vec<FieldDef>,
}

type Std = (
    &'static str,
    &'static str,
    FieldType,
    &'static [(&'static str, &'static str)],
);

const CONTACTS: &[Std] = &[
    ("first_name", "First name", FieldType::String, &[]),
    ("last_name", "Last name", FieldType::String, &[]),
    ("email", "Email", FieldType::String, &[]),
    ("contact_owner", "Contact owner", FieldType::User, &[]),
    ("phone", "Phone number", FieldType::String, &[]),
    (
        "mobile_phone",
        "Mobile phone number",
        FieldType::String,
        &[],
    ),
    ("job_title", "Job title", FieldType::String, &[]),
    ("company", "Company name", FieldType::String, &[]),
    ("website_url", "Website URL", FieldType::String, &[]),
    ("address", "Street address", FieldType::String, &[]),
    ("city", "City", FieldType::String, &[]),
    ("state", "State/Region", FieldType::String, &[]),
    ("zip", "Postal code", FieldType::String, &[]),
    ("country", "Country", FieldType::String, &[]),
    (
        "lifecycle_stage",
        "Lifecycle stage",
        FieldType::Enumeration,
        &[
            ("subscriber", "Subscriber"),
            ("lead", "Lead"),
            ("marketing_qualified_lead", "Marketing qualified lead"),
            ("sales_qualified_lead", "Sales qualified lead"),
            ("opportunity", "Opportunity"),
            ("customer", "Customer"),
            ("evangelist", "Evangelist"),
            ("other", "Other"),
        ],
    ),
    (
        "lead_status",
        "Lead status",
        FieldType::Enumeration,
        &[
            ("new", "New"),
            ("open", "Open"),
            ("in_progress", "In progress"),
            ("open_deal", "Open deal"),
            ("unqualified", "Unqualified"),
            ("attempted_to_contact", "Attempted to contact"),
            ("connected", "Connected"),
            ("bad_timing", "Bad timing"),
        ],
    ),
];

const COMPANIES: &[Std] = &[
    ("company_name", "Company name", FieldType::String, &[]),
    ("description", "Description", FieldType::String, &[]),
    ("industry", "Industry", FieldType::String, &[]),
    ("company_owner", "Company owner", FieldType::User, &[]),
    ("website_url", "Website URL", FieldType::String, &[]),
    ("phone", "Phone number", FieldType::String, &[]),
    ("city", "City", FieldType::String, &[]),
    ("state", "State/Region", FieldType::String, &[]),
    ("country", "Country", FieldType::String, &[]),
    (
        "number_of_employees",
        "Number of employees",
        FieldType::Number,
        &[],
    ),
    ("annual_revenue", "Annual revenue", FieldType::Number, &[]),
    (
        "type",
        "Type",
        FieldType::Enumeration,
        &[
            ("prospect", "Prospect"),
            ("partner", "Partner"),
            ("reseller", "Reseller"),
            ("vendor", "Vendor"),
            ("other", "Other"),
        ],
    ),
];

const DEALS: &[Std] = &[
    ("deal_name", "Deal name", FieldType::String, &[]),
    (
        "pipeline",
        "Pipeline",
        FieldType::Enumeration,
        &[("default", "Sales Pipeline")],
    ),
    (
        "deal_stage",
        "Deal stage",
        FieldType::Enumeration,
        &[
            ("appointment_scheduled", "Appointment scheduled"),
            ("qualified_to_buy", "Qualified to buy"),
            ("presentation_scheduled", "Presentation scheduled"),
            ("decision_maker_bought_in", "Decision maker bought-in"),
            ("contract_sent", "Contract sent"),
            ("closed_won", "Closed won"),
            ("closed_lost", "Closed lost"),
        ],
    ),
    ("deal_owner", "Deal owner", FieldType::User, &[]),
    ("amount", "Amount", FieldType::Number, &[]),
    ("close_date", "Close date", FieldType::Datetime, &[]),
    (
        "deal_type",
        "Deal type",
        FieldType::Enumeration,
        &[
            ("new_business", "New business"),
            ("existing_business", "Existing business"),
        ],
    ),
    ("description", "Description", FieldType::String, &[]),
];

const TICKETS: &[Std] = &[
    ("ticket_name", "Ticket name", FieldType::String, &[]),
    (
        "pipeline",
        "Pipeline",
        FieldType::Enumeration,
        &[("support", "Support Pipeline")],
    ),
    (
        "ticket_stage",
        "Ticket status",
        FieldType::Enumeration,
        &[
            ("new", "New"),
            ("waiting_on_contact", "Waiting on contact"),
            ("waiting_on_us", "Waiting on us"),
            ("closed", "Closed"),
        ],
    ),
    ("ticket_owner", "Ticket owner", FieldType::User, &[]),
    (
        "priority",
        "Priority",
        FieldType::Enumeration,
        &[
            ("low", "Low"),
            ("medium", "Medium"),
            ("high", "High"),
            ("urgent", "Urgent"),
        ],
    ),
    (
        "source",
        "Source",
        FieldType::Enumeration,
        &[
            ("email", "Email"),
            ("chat", "Chat"),
            ("form", "Form"),
            ("phone", "Phone"),
        ],
    ),
    ("description", "Description", FieldType::String, &[]),
];

fn standard(object_type: ObjectType) -> &'static [Std] {
    match object_type {
        ObjectType::Contacts => CONTACTS,
        ObjectType::Companies => COMPANIES,
        ObjectType::Deals => DEALS,
        ObjectType::Tickets => TICKETS,
    }
}

fn def(name: &str, display: &str, field_type: FieldType, origin: FieldOrigin) -> FieldDef {
    FieldDef {
        internal_name: name.to_string(),
        name: display.to_string(),
        field_type,
        options: Vec::new(),
        origin,
    }
}

impl Catalogue {
    /// The standard catalogue of `object_type` extended by the account's `definitions` (those of
    /// other types are ignored). A definition with a standard enumeration's name adds its options
    /// (duplicates by `internal_name` skipped); one that names another standard field is ignored
    /// here (the provisioning loader rejects it). System fields come last: `record_id`,
    /// `create_date`, `last_modified_date` and one `<owner>_assigned_date` per owner field.
    pub fn build(object_type: ObjectType, definitions: &[FieldDefinition]) -> Self {
        let mut fields: Vec<FieldDef> = standard(object_type)
            .iter()
            .map(|(name, display, ty, options)| FieldDef {
                options: options
                    .iter()
                    .map(|(i, n)| EnumOption {
                        internal_name: i.to_string(),
                        name: n.to_string(),
                    })
                    .collect(),
                ..def(name, display, *ty, FieldOrigin::Standard)
            })
            .collect();
        fields.push(def(
            "external_id",
            "External ID",
            FieldType::String,
            FieldOrigin::Standard,
        ));
        for d in definitions.iter().filter(|d| d.object_type == object_type) {
            if let Some(existing) = fields
                .iter_mut()
                .find(|f| f.internal_name == d.internal_name)
            {
                if existing.field_type == FieldType::Enumeration
                    && d.field_type == FieldType::Enumeration
                {
                    for option in &d.options {
                        if !existing
                            .options
                            .iter()
                            .any(|o| o.internal_name == option.internal_name)
                        {
                            existing.options.push(option.clone());
                        }
                    }
                }
                continue;
            }
            fields.push(FieldDef {
                options: d.options.clone(),
                ..def(&d.internal_name, &d.name, d.field_type, FieldOrigin::Custom)
            });
        }
        let owners: Vec<String> = fields
            .iter()
            .filter(|f| f.is_owner_field())
            .map(|f| format!("{}_assigned_date", f.internal_name))
            .collect();
        fields.push(def(
            "record_id",
            "Record ID",
            FieldType::String,
            FieldOrigin::System,
        ));
        fields.push(def(
            "create_date",
            "Create date",
            FieldType::Datetime,
            FieldOrigin::System,
        ));
        fields.push(def(
            "last_modified_date",
            "Last modified date",
            FieldType::Datetime,
            FieldOrigin::System,
        ));
        for name in owners {
            if !fields.iter().any(|f| f.internal_name == name) {
                fields.push(def(
                    &name,
                    "Owner assigned date",
                    FieldType::Datetime,
                    FieldOrigin::System,
                ));
            }
        }
        Self {
            object_type,
            fields,
        }
    }

    /// The standard catalogue alone.
    pub fn standard(object_type: ObjectType) -> Self {
        Self::build(object_type, &[])
    }

    /// The record type.
    pub fn object_type(&self) -> ObjectType {
        self.object_type
    }

    /// A field by internal name.
    pub fn get(&self, internal_name: &str) -> Option<&FieldDef> {
        self.fields
            .iter()
            .find(|f| f.internal_name == internal_name)
    }

    /// All fields, catalogue order.
    pub fn fields(&self) -> &[FieldDef] {
        &self.fields
    }

    /// Whether `name` is a standard field of `object_type` (custom definitions may not
    /// redefine its type).
    pub fn is_standard_name(object_type: ObjectType, name: &str) -> bool {
        name == "external_id" || standard(object_type).iter().any(|(n, ..)| *n == name)
    }

    /// The spec's default response fields between `id` and `external_id`
    /// (spec "Default response fields per record type").
    pub fn default_fields(&self) -> &'static [&'static str] {
        match self.object_type {
            ObjectType::Contacts => &["first_name", "last_name", "email", "contact_owner"],
            ObjectType::Companies => &["company_name", "description", "industry", "company_owner"],
            ObjectType::Deals => &["deal_name", "pipeline", "deal_stage", "deal_owner"],
            ObjectType::Tickets => &["ticket_name", "pipeline", "ticket_owner"],
        }
    }

    /// The unique keys of the type, in the spec's order (spec "Duplicate keys").
    pub fn unique_keys(&self) -> &'static [&'static str] {
        match self.object_type {
            ObjectType::Contacts => &["email", "external_id"],
            ObjectType::Companies => &["website_url", "external_id"],
            ObjectType::Deals | ObjectType::Tickets => &["external_id"],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_contacts_have_owner_assigned_date_as_a_system_field() {
        let c = Catalogue::standard(ObjectType::Contacts);
        let f = c
            .get("contact_owner_assigned_date")
            .expect("companion field");
        assert!(f.is_system());
        assert_eq!(f.field_type, FieldType::Datetime);
        assert!(c.get("record_id").unwrap().is_system());
        assert!(!c.get("email").unwrap().is_system());
    }

    #[test]
    fn account_definitions_add_custom_fields_and_enumeration_options() {
        let defs = vec![
            FieldDefinition {
                object_type: ObjectType::Contacts,
                internal_name: "region".into(),
                name: "Region".into(),
                field_type: FieldType::Enumeration,
                options: vec![EnumOption {
                    internal_name: "emea".into(),
                    name: "EMEA".into(),
                }],
            },
            FieldDefinition {
                object_type: ObjectType::Contacts,
                internal_name: "lead_status".into(),
                name: "Lead status".into(),
                field_type: FieldType::Enumeration,
                options: vec![EnumOption {
                    internal_name: "nurture".into(),
                    name: "Nurture".into(),
                }],
            },
            FieldDefinition {
                object_type: ObjectType::Deals,
                internal_name: "deal_only".into(),
                name: "Deal only".into(),
                field_type: FieldType::String,
                options: vec![],
            },
        ];
        let c = Catalogue::build(ObjectType::Contacts, &defs);
        assert_eq!(c.get("region").unwrap().origin, FieldOrigin::Custom);
        let status = c.get("lead_status").unwrap();
        assert_eq!(status.options.first().unwrap().internal_name, "new");
        assert_eq!(status.options.last().unwrap().internal_name, "nurture");
        assert!(c.get("deal_only").is_none());
    }

    #[test]
    fn a_custom_user_field_ending_in_owner_gets_its_own_assigned_date() {
        let defs = vec![FieldDefinition {
            object_type: ObjectType::Deals,
            internal_name: "sdr_owner".into(),
            name: "SDR owner".into(),
            field_type: FieldType::User,
            options: vec![],
        }];
        let c = Catalogue::build(ObjectType::Deals, &defs);
        assert!(c.get("sdr_owner_assigned_date").unwrap().is_system());
        assert!(c.get("deal_owner_assigned_date").unwrap().is_system());
    }

    #[test]
    fn tickets_require_stage_field_in_catalogue_with_display_name_ticket_status() {
        let c = Catalogue::standard(ObjectType::Tickets);
        assert_eq!(c.get("ticket_stage").unwrap().name, "Ticket status");
        assert_eq!(
            c.default_fields(),
            &["ticket_name", "pipeline", "ticket_owner"]
        );
    }
}
