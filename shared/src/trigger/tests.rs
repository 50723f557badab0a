use super::*;
use crate::fields::{Catalogue, EnumOption, FieldDefinition, FieldType};
use crate::model::{ObjectType, Record};
use chrono::{DateTime, Utc};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use uuid::Uuid;

const ADA_ID: &str = "0192a7c4-5b6e-7000-8000-000000000001";
const RECORD_ID: &str = "0192a7c4-5b6e-7000-8000-0000000000aa";

fn custom(name: &str, field_type: FieldType, options: &[(&str, &str)]) -> FieldDefinition {
    FieldDefinition {
        object_type: ObjectType::Contacts,
        internal_name: name.into(),
        name: name.into(),
        field_type,
        options: options
            .iter()
            .map(|(i, n)| EnumOption {
                internal_name: (*i).into(),
                name: (*n).into(),
            })
            .collect(),
    }
}

/// Contacts, plus custom fields of every type the standard contacts lack.
fn catalogue() -> Catalogue {
    Catalogue::build(
        ObjectType::Contacts,
        &[
            custom("annual_revenue", FieldType::Number, &[]),
            custom("score", FieldType::Number, &[]),
            custom("vip", FieldType::Bool, &[]),
            custom("renewal_date", FieldType::Datetime, &[]),
            custom(
                "region",
                FieldType::Enumeration,
                &[
                    ("emea", "EMEA"),
                    ("amer", "Americas"),
                    ("apac", "Asia Pacific"),
                ],
            ),
        ],
    )
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

fn record(values: &[(&str, &str)]) -> Record {
    Record {
        id: Uuid::parse_str(RECORD_ID).unwrap().into(),
        account_id: Uuid::nil().into(),
        object_type: ObjectType::Contacts,
        values: values
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect::<BTreeMap<_, _>>(),
        created_at: at("2026-01-15T10:00:00Z"),
        updated_at: at("2026-02-20T12:30:00Z"),
        archived_at: None,
        archived_by: None,
        version: 1,
    }
}

fn resolve(id: &str) -> Option<String> {
    (id == ADA_ID).then(|| "ada@example.com".to_string())
}

fn condition(field: &str, operator: Operator, value: Option<Value>) -> Condition {
    Condition {
        field: field.into(),
        operator,
        value,
    }
}

fn holds(field: &str, operator: Operator, value: Option<Value>, values: &[(&str, &str)]) -> bool {
    condition(field, operator, value).holds(&record(values), &catalogue(), &resolve)
}

/// Asserts each `(operator, value, expected)` row of `table` on `field` of the record `values`.
fn assert_table(field: &str, values: &[(&str, &str)], table: &[(Operator, Value, bool)]) {
    for (op, value, expected) in table {
        assert_eq!(
            holds(field, *op, Some(value.clone()), values),
            *expected,
            "{op} {value}"
        );
    }
}

fn trigger(groups: Vec<Vec<Condition>>) -> Trigger {
    Trigger {
        groups: groups
            .into_iter()
            .map(|conditions| ConditionGroup { conditions })
            .collect(),
    }
}

use Operator::*;

// ---- JSON shape ----

#[test]
fn every_operator_reads_and_writes_its_snake_case_name() {
    let names = [
        "equals",
        "not_equals",
        "contains",
        "not_contains",
        "starts_with",
        "ends_with",
        "in",
        "not_in",
        "greater_than",
        "less_than",
        "greater_or_equal",
        "less_or_equal",
        "is_empty",
        "is_not_empty",
    ];
    assert_eq!(Operator::ALL.len(), names.len());
    for (op, name) in Operator::ALL.into_iter().zip(names) {
        assert_eq!(serde_json::to_value(op).unwrap(), json!(name));
        assert_eq!(serde_json::from_value::<Operator>(json!(name)).unwrap(), op);
        assert_eq!(Operator::parse(name), Ok(op));
    }
}

#[test]
fn an_unknown_operator_is_rejected_naming_it() {
    let err = serde_json::from_value::<Condition>(
        json!({"field": "country", "operator": "eq", "value": "US"}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("unknown operator \"eq\""), "{err}");
    for name in ["Equals", "EQUALS", "", "not equals", "greater-than"] {
        let err = serde_json::from_value::<Operator>(json!(name)).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("unknown operator {name:?}")),
            "{err}"
        );
    }
    assert_eq!(
        Operator::parse("eq").unwrap_err().to_string(),
        "unknown operator \"eq\""
    );
}

#[test]
fn an_unknown_operator_inside_a_trigger_is_rejected_when_parsing_the_trigger() {
    let text = r#"{"groups":[{"conditions":[{"field":"country","operator":"eq","value":"US"}]}]}"#;
    let err = serde_json::from_str::<Trigger>(text).unwrap_err();
    assert!(err.to_string().contains("unknown operator \"eq\""), "{err}");
}

#[test]
fn an_operator_that_is_not_a_string_is_rejected() {
    let err = serde_json::from_value::<Operator>(json!(3)).unwrap_err();
    assert!(err.to_string().contains("an operator name"), "{err}");
}

#[test]
fn triggers_with_unknown_or_missing_keys_are_rejected() {
    let bad = [
        json!({}),
        json!({"groups": [{}]}),
        json!({"groups": [{"conditions": [{"operator": "is_empty"}]}]}),
        json!({"groups": [{"conditions": [{"field": "country"}]}]}),
        json!({"groups": [], "extra": 1}),
        json!({"groups": [{"conditions": [], "name": "x"}]}),
        json!({"groups": [{"conditions": [{"field": "country", "operator": "equals", "vaule": "US"}]}]}),
        json!({"groups": {}}),
        json!([]),
    ];
    for value in bad {
        assert!(
            serde_json::from_value::<Trigger>(value.clone()).is_err(),
            "{value}"
        );
    }
}

#[test]
fn a_condition_value_is_written_only_when_present_and_null_reads_as_absent() {
    let c = condition("country", IsEmpty, None);
    assert_eq!(
        serde_json::to_value(&c).unwrap(),
        json!({"field": "country", "operator": "is_empty"})
    );
    let read: Condition =
        serde_json::from_value(json!({"field": "country", "operator": "is_empty", "value": null}))
            .unwrap();
    assert_eq!(read, c);
}

#[test]
fn the_documented_trigger_survives_a_json_round_trip() {
    let original = json!({"groups": [
        {"conditions": [
            {"field": "country", "operator": "equals", "value": "US"},
            {"field": "annual_revenue", "operator": "greater_than", "value": 1000000}
        ]},
        {"conditions": [{"field": "lifecycle_stage", "operator": "in", "value": ["lead", "customer"]}]}
    ]});
    let parsed: Trigger = serde_json::from_value(original.clone()).unwrap();
    assert_eq!(parsed.groups.len(), 2);
    assert_eq!(parsed.groups[0].conditions[1].operator, GreaterThan);
    assert_eq!(
        parsed.groups[1].conditions[0].value,
        Some(json!(["lead", "customer"]))
    );
    assert_eq!(serde_json::to_value(&parsed).unwrap(), original);
    let text = serde_json::to_string(&parsed).unwrap();
    assert_eq!(serde_json::from_str::<Trigger>(&text).unwrap(), parsed);
}

// ---- evaluation: one table per operator family, on a string field ----

#[test]
fn each_operator_on_a_string_field_compares_case_insensitively() {
    let us = [("country", "United States")];
    let table: &[(Operator, Option<Value>, bool)] = &[
        (Equals, Some(json!("united states")), true),
        (Equals, Some(json!("United")), false),
        (NotEquals, Some(json!("UNITED STATES")), false),
        (NotEquals, Some(json!("Canada")), true),
        (Contains, Some(json!("TED st")), true),
        (Contains, Some(json!("kingdom")), false),
        (NotContains, Some(json!("ted")), false),
        (NotContains, Some(json!("kingdom")), true),
        (StartsWith, Some(json!("uNiTeD")), true),
        (StartsWith, Some(json!("states")), false),
        (EndsWith, Some(json!("STATES")), true),
        (EndsWith, Some(json!("united")), false),
        (In, Some(json!(["Canada", "united states"])), true),
        (In, Some(json!(["Canada", "Mexico"])), false),
        (NotIn, Some(json!(["Canada", "UNITED STATES"])), false),
        (NotIn, Some(json!(["Canada", "Mexico"])), true),
        (IsEmpty, None, false),
        (IsNotEmpty, None, true),
        // Ordering operators do not apply to string fields (validation rejects them).
        (GreaterThan, Some(json!("A")), false),
        (LessThan, Some(json!("Z")), false),
        (GreaterOrEqual, Some(json!("United States")), false),
        (LessOrEqual, Some(json!("United States")), false),
    ];
    for (op, value, expected) in table {
        assert_eq!(
            holds("country", *op, value.clone(), &us),
            *expected,
            "{op} {value:?}"
        );
    }
}

#[test]
fn each_ordering_operator_compares_numbers_numerically() {
    let revenue = [("annual_revenue", "1000000")];
    let table: &[(Operator, Value, bool)] = &[
        (GreaterThan, json!(999999.5), true),
        (GreaterThan, json!(1000000), false),
        (GreaterThan, json!("2e6"), false),
        (LessThan, json!(1000001), true),
        (LessThan, json!(1000000), false),
        (LessThan, json!("900000"), false),
        (GreaterOrEqual, json!(1000000), true),
        (GreaterOrEqual, json!("1000000.0"), true),
        (GreaterOrEqual, json!(1000000.01), false),
        (LessOrEqual, json!(1e6), true),
        (LessOrEqual, json!(999999), false),
        (Equals, json!(1e6), true),
        (Equals, json!("1000000.00"), true),
        (Equals, json!(100000), false),
        (Equals, json!("lots"), false),
        (NotEquals, json!("lots"), true),
        (In, json!([1, "1e6"]), true),
        (NotIn, json!([1, 2]), true),
        // A numeric order, not a textual one: "1000000" < "9" as text.
        (GreaterThan, json!(9), true),
    ];
    assert_table("annual_revenue", &revenue, table);
}

#[test]
fn datetimes_compare_as_instants_whatever_their_offset_or_form() {
    let renewal = [("renewal_date", "2026-06-01T00:00:00.000Z")];
    let table: &[(Operator, Value, bool)] = &[
        (Equals, json!("2026-06-01T02:00:00+02:00"), true),
        (Equals, json!("2026-06-01"), true),
        (Equals, json!("2026-06-01T00:00:01Z"), false),
        (GreaterThan, json!("2026-05-31"), true),
        (GreaterThan, json!("2026-05-31T20:00:00-04:00"), false),
        (LessThan, json!("2026-06-01T00:00:00.001Z"), true),
        (GreaterOrEqual, json!("2026-06-01"), true),
        (LessOrEqual, json!("2026-05-31T23:59:59Z"), false),
        (In, json!(["2025-01-01", "2026-06-01"]), true),
        (Equals, json!("not a date"), false),
        (GreaterThan, json!("not a date"), false),
    ];
    assert_table("renewal_date", &renewal, table);
}

#[test]
fn booleans_match_json_booleans_and_their_text() {
    let vip = [("vip", "true")];
    let table: &[(Operator, Value, bool)] = &[
        (Equals, json!(true), true),
        (Equals, json!("TRUE"), true),
        (Equals, json!(false), false),
        (Equals, json!("false"), false),
        (Equals, json!("yes"), false),
        (NotEquals, json!(false), true),
        (In, json!([false, true]), true),
        (NotIn, json!([false]), true),
    ];
    assert_table("vip", &vip, table);
}

/// Stored field values of a test record.
type Values = [(&'static str, &'static str)];

#[test]
fn enumerations_match_by_internal_or_display_name_of_the_same_option() {
    let region = [("region", "amer")];
    let stage = [("lifecycle_stage", "marketing_qualified_lead")];
    let table: &[(&str, &Values, Operator, Value, bool)] = &[
        ("region", &region, Equals, json!("amer"), true),
        ("region", &region, Equals, json!("AMER"), true),
        ("region", &region, Equals, json!("Americas"), true),
        ("region", &region, Equals, json!("americas"), true),
        ("region", &region, Equals, json!("EMEA"), false),
        ("region", &region, NotEquals, json!("Americas"), false),
        ("region", &region, In, json!(["EMEA", "Americas"]), true),
        (
            "region",
            &region,
            NotIn,
            json!(["emea", "Asia Pacific"]),
            true,
        ),
        ("region", &region, Contains, json!("ERIC"), true),
        ("region", &region, StartsWith, json!("am"), true),
        ("region", &region, EndsWith, json!("cas"), true),
        ("region", &region, Contains, json!("emea"), false),
        (
            "lifecycle_stage",
            &stage,
            Equals,
            json!("Marketing qualified lead"),
            true,
        ),
        ("lifecycle_stage", &stage, Equals, json!("lead"), false),
        (
            "lifecycle_stage",
            &stage,
            In,
            json!(["Lead", "Customer"]),
            false,
        ),
        (
            "lifecycle_stage",
            &stage,
            Contains,
            json!("qualified"),
            true,
        ),
    ];
    for (field, values, op, value, expected) in table {
        assert_eq!(
            holds(field, *op, Some(value.clone()), values),
            *expected,
            "{field} {op} {value}"
        );
    }
}

#[test]
fn users_match_by_email_or_by_member_id() {
    let owned = [("contact_owner", "ada@example.com")];
    let table: &[(Operator, Value, bool)] = &[
        (Equals, json!("ada@example.com"), true),
        (Equals, json!("ADA@Example.com"), true),
        (Equals, json!(ADA_ID), true),
        (Equals, json!(ADA_ID.to_uppercase()), true),
        (Equals, json!("bob@example.com"), false),
        (Equals, json!("0192a7c4-5b6e-7000-8000-000000000002"), false),
        (NotEquals, json!(ADA_ID), false),
        (In, json!(["bob@example.com", ADA_ID]), true),
        (NotIn, json!(["bob@example.com"]), true),
        (EndsWith, json!("@EXAMPLE.COM"), true),
        (StartsWith, json!(ADA_ID), true),
    ];
    assert_table("contact_owner", &owned, table);
}

#[test]
fn a_member_id_is_resolved_only_for_user_fields() {
    let calls = std::cell::Cell::new(0);
    let counting = |id: &str| {
        calls.set(calls.get() + 1);
        resolve(id)
    };
    let c = condition("country", Equals, Some(json!(ADA_ID)));
    assert!(!c.holds(
        &record(&[("country", "ada@example.com")]),
        &catalogue(),
        &counting
    ));
    assert_eq!(calls.get(), 0);
    let c = condition("contact_owner", Equals, Some(json!(ADA_ID)));
    assert!(c.holds(
        &record(&[("contact_owner", "ada@example.com")]),
        &catalogue(),
        &counting
    ));
    assert!(calls.get() > 0);
}

#[test]
fn a_field_with_no_value_satisfies_only_is_empty_and_the_negative_operators() {
    let value_for = |op: Operator| match op {
        In | NotIn => Some(json!([1, "x"])),
        IsEmpty | IsNotEmpty => None,
        _ => Some(json!(1)),
    };
    let expected = |op: Operator| matches!(op, NotEquals | NotContains | NotIn | IsEmpty);
    for field in [
        "country",
        "score",
        "vip",
        "renewal_date",
        "region",
        "contact_owner",
    ] {
        for values in [&[][..], &[(field, "")][..], &[(field, "   ")][..]] {
            for op in Operator::ALL {
                assert_eq!(
                    holds(field, op, value_for(op), values),
                    expected(op),
                    "{field} {op} {values:?}"
                );
            }
        }
    }
}

#[test]
fn system_fields_read_the_records_id_and_timestamps() {
    let r = &[][..];
    assert!(holds(
        "record_id",
        Equals,
        Some(json!(RECORD_ID.to_uppercase())),
        r
    ));
    assert!(holds(
        "create_date",
        Equals,
        Some(json!("2026-01-15T10:00:00Z")),
        r
    ));
    assert!(holds("create_date", LessThan, Some(json!("2026-01-16")), r));
    assert!(holds(
        "last_modified_date",
        GreaterThan,
        Some(json!("2026-02-20T12:29:59Z")),
        r
    ));
    assert!(!holds(
        "last_modified_date",
        GreaterThan,
        Some(json!("2026-02-21")),
        r
    ));
    assert!(holds("create_date", IsNotEmpty, None, r));
    assert!(holds("contact_owner_assigned_date", IsEmpty, None, r));
    let assigned = [("contact_owner_assigned_date", "2026-03-01T09:00:00.000Z")];
    assert!(holds(
        "contact_owner_assigned_date",
        GreaterOrEqual,
        Some(json!("2026-03-01")),
        &assigned
    ));
}

#[test]
fn a_field_missing_from_the_catalogue_compares_as_text_without_panicking() {
    let values = [("legacy", "Gold")];
    assert!(holds("legacy", Equals, Some(json!("gold")), &values));
    assert!(!holds("legacy", GreaterThan, Some(json!(1)), &values));
    assert!(holds(
        "legacy",
        NotIn,
        Some(json!({"not": "an array"})),
        &values
    ));
    assert!(!holds(
        "country",
        Equals,
        Some(json!({"an": "object"})),
        &[("country", "US")]
    ));
    assert!(holds("country", NotEquals, None, &[("country", "US")]));
}

// ---- structure ----

#[test]
fn a_trigger_matches_when_any_group_has_all_its_conditions() {
    let us_big = vec![
        condition("country", Equals, Some(json!("US"))),
        condition("annual_revenue", GreaterThan, Some(json!(1000000))),
    ];
    let leads = vec![condition(
        "lifecycle_stage",
        In,
        Some(json!(["lead", "customer"])),
    )];
    let t = trigger(vec![us_big, leads]);
    let table: &[(&[(&str, &str)], bool)] = &[
        (&[("country", "us"), ("annual_revenue", "2000000")], true),
        (&[("country", "us"), ("annual_revenue", "10")], false),
        (&[("country", "fr"), ("annual_revenue", "2000000")], false),
        (&[("country", "fr"), ("lifecycle_stage", "lead")], true),
        (&[("country", "us"), ("lifecycle_stage", "customer")], true),
        (&[("lifecycle_stage", "opportunity")], false),
        (&[], false),
    ];
    for (values, expected) in table {
        assert_eq!(
            t.matches(&record(values), &catalogue(), &resolve),
            *expected,
            "{values:?}"
        );
    }
}

#[test]
fn no_groups_or_an_empty_group_matches_every_record() {
    let c = catalogue();
    let r = record(&[]);
    assert!(Trigger::default().matches(&r, &c, &resolve));
    assert!(trigger(vec![vec![]]).matches(&r, &c, &resolve));
    let never = vec![condition("country", IsNotEmpty, None)];
    assert!(!trigger(vec![never.clone()]).matches(&r, &c, &resolve));
    assert!(trigger(vec![never, vec![]]).matches(&r, &c, &resolve));
}

// ---- validation ----

#[test]
fn a_well_formed_trigger_validates() {
    let t: Trigger = serde_json::from_value(json!({"groups": [
        {"conditions": [
            {"field": "country", "operator": "equals", "value": "US"},
            {"field": "annual_revenue", "operator": "greater_than", "value": 1000000},
            {"field": "score", "operator": "less_or_equal", "value": "12.5"},
            {"field": "renewal_date", "operator": "less_than", "value": "2026-12-31"},
            {"field": "create_date", "operator": "greater_or_equal", "value": "2026-01-01T00:00:00+01:00"},
            {"field": "vip", "operator": "equals", "value": true},
            {"field": "contact_owner", "operator": "not_in", "value": [ADA_ID, "bob@example.com"]},
            {"field": "email", "operator": "is_not_empty"},
            {"field": "phone", "operator": "is_empty", "value": null}
        ]},
        {"conditions": [{"field": "lifecycle_stage", "operator": "in", "value": ["lead", "Customer", 3, false]}]},
        {"conditions": []}
    ]}))
    .unwrap();
    assert_eq!(t.validate(&catalogue()), Ok(()));
    assert_eq!(Trigger::default().validate(&catalogue()), Ok(()));
}

#[test]
fn invalid_conditions_are_reported_with_their_relative_path() {
    let table: &[(Condition, &str, &str)] = &[
        (condition("colour", Equals, Some(json!("red"))), "field", "unknown field \"colour\" for contacts"),
        (condition("country", Equals, None), "value", "equals needs a string, number or boolean value"),
        (
            condition("country", Contains, Some(json!(["US"]))),
            "value",
            "contains needs a string, number or boolean value",
        ),
        (
            condition("country", NotEquals, Some(json!({"a": 1}))),
            "value",
            "not_equals needs a string, number or boolean value",
        ),
        (
            condition("country", In, Some(json!("US"))),
            "value",
            "in needs a non-empty array of strings, numbers or booleans",
        ),
        (
            condition("country", NotIn, Some(json!([]))),
            "value",
            "not_in needs a non-empty array of strings, numbers or booleans",
        ),
        (condition("country", In, None), "value", "in needs a non-empty array of strings, numbers or booleans"),
        (condition("country", In, Some(json!(["US", null]))), "value[1]", "expected a string, number or boolean"),
        (
            condition("country", NotIn, Some(json!(["US", "FR", ["DE"]]))),
            "value[2]",
            "expected a string, number or boolean",
        ),
        (condition("country", Equals, Some(json!(1e200))), "value", "equals needs a string, number or boolean value"),
        (condition("country", In, Some(json!(["US", 1e-131]))), "value[1]", "expected a string, number or boolean"),
        (
            condition("annual_revenue", GreaterThan, Some(json!(1e126))),
            "value",
            "greater_than needs a number for number field \"annual_revenue\"",
        ),
        (
            condition("country", GreaterThan, Some(json!("A"))),
            "operator",
            "greater_than applies to number and datetime fields; \"country\" is a string field",
        ),
        (
            condition("lifecycle_stage", LessThan, Some(json!("lead"))),
            "operator",
            "less_than applies to number and datetime fields; \"lifecycle_stage\" is an enumeration field",
        ),
        (
            condition("annual_revenue", GreaterOrEqual, Some(json!("lots"))),
            "value",
            "greater_or_equal needs a number for number field \"annual_revenue\"",
        ),
        (
            condition("annual_revenue", LessOrEqual, Some(json!(true))),
            "value",
            "less_or_equal needs a number for number field \"annual_revenue\"",
        ),
        (
            condition("annual_revenue", GreaterThan, None),
            "value",
            "greater_than needs a number for number field \"annual_revenue\"",
        ),
        (
            condition("renewal_date", GreaterThan, Some(json!("next week"))),
            "value",
            "greater_than needs an RFC 3339 timestamp or a date (YYYY-MM-DD) for datetime field \"renewal_date\"",
        ),
        (
            condition("renewal_date", LessThan, Some(json!(1767225600))),
            "value",
            "less_than needs an RFC 3339 timestamp or a date (YYYY-MM-DD) for datetime field \"renewal_date\"",
        ),
        (condition("country", IsEmpty, Some(json!("x"))), "value", "is_empty takes no value"),
        (condition("country", IsNotEmpty, Some(json!(false))), "value", "is_not_empty takes no value"),
    ];
    for (bad, path, message) in table {
        let ok = condition("country", IsNotEmpty, None);
        let t = trigger(vec![vec![ok.clone()], vec![ok, bad.clone()]]);
        let err = t.validate(&catalogue()).expect_err(message);
        assert_eq!(
            err.path,
            format!("groups[1].conditions[1].{path}"),
            "{bad:?}"
        );
        assert_eq!(err.message, *message, "{bad:?}");
        assert_eq!(
            err.to_string(),
            format!("groups[1].conditions[1].{path}: {message}")
        );
    }
}

#[test]
fn the_first_invalid_condition_in_order_is_reported() {
    let t = trigger(vec![
        vec![condition("country", IsEmpty, None)],
        vec![
            condition("nope", Equals, Some(json!(1))),
            condition("also_nope", Equals, Some(json!(1))),
        ],
        vec![condition("country", In, Some(json!([])))],
    ]);
    let err = t.validate(&catalogue()).unwrap_err();
    assert_eq!(err.path, "groups[1].conditions[0].field");
}

#[test]
fn fields_are_checked_against_the_routers_object_type() {
    let t = trigger(vec![vec![condition("deal_name", IsEmpty, None)]]);
    assert!(t.validate(&Catalogue::standard(ObjectType::Deals)).is_ok());
    let err = t.validate(&catalogue()).unwrap_err();
    assert_eq!(err.message, "unknown field \"deal_name\" for contacts");
}

// ---- properties ----

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-zA-Z0-9 @._-]{0,12}".prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        // Quarters: short decimals that serde_json reads back bit-exactly (without its
        // `float_roundtrip` feature, long decimals may come back one ulp off).
        any::<i32>().prop_map(|n| Value::from(f64::from(n) / 4.0)),
    ]
}

fn operator() -> impl Strategy<Value = Operator> {
    prop::sample::select(Operator::ALL.to_vec())
}

fn any_condition() -> impl Strategy<Value = Condition> {
    let field = prop::sample::select(vec![
        "country",
        "score",
        "vip",
        "renewal_date",
        "region",
        "contact_owner",
        "unknown_field",
    ]);
    let value = prop_oneof![
        Just(None),
        scalar().prop_map(Some),
        prop::collection::vec(scalar(), 0..4).prop_map(|v| Some(Value::Array(v))),
    ];
    (field, operator(), value).prop_map(|(field, operator, value)| Condition {
        field: field.into(),
        operator,
        value,
    })
}

fn stored_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 @._-]{0,12}",
        any::<i32>().prop_map(|n| n.to_string()),
        Just("true".to_string()),
        Just("2026-06-01T00:00:00.000Z".to_string()),
        Just("emea".to_string()),
        Just("ada@example.com".to_string()),
    ]
}

proptest! {
    #[test]
    fn every_negative_operator_is_the_negation_of_its_positive_form_on_a_present_value(
        c in any_condition(), stored in stored_text()
    ) {
        prop_assume!(!stored.trim().is_empty());
        let Some(positive) = c.operator.negated() else { return Ok(()); };
        let values = [(c.field.as_str(), stored.as_str())];
        let negative_holds = c.holds(&record(&values), &catalogue(), &resolve);
        let positive_holds = Condition { operator: positive, ..c.clone() }
            .holds(&record(&values), &catalogue(), &resolve);
        prop_assert_eq!(negative_holds, !positive_holds);
    }

    #[test]
    fn any_trigger_survives_a_json_round_trip(
        groups in prop::collection::vec(prop::collection::vec(any_condition(), 0..4), 0..4)
    ) {
        let t = trigger(groups);
        let text = serde_json::to_string(&t).unwrap();
        prop_assert_eq!(serde_json::from_str::<Trigger>(&text).unwrap(), t);
    }

    #[test]
    fn a_trigger_matches_exactly_when_some_group_has_all_conditions_holding(
        groups in prop::collection::vec(prop::collection::vec(any_condition(), 0..3), 0..4),
        stored in stored_text(),
    ) {
        let t = trigger(groups);
        let values: Vec<(&str, &str)> = ["country", "score", "vip", "region"]
            .into_iter()
            .map(|f| (f, stored.as_str()))
            .collect();
        let r = record(&values);
        let c = catalogue();
        let each: Vec<Vec<bool>> = t
            .groups
            .iter()
            .map(|g| g.conditions.iter().map(|x| x.holds(&r, &c, &resolve)).collect())
            .collect();
        let expected = each.is_empty() || each.iter().any(|g| g.iter().all(|b| *b));
        prop_assert_eq!(t.matches(&r, &c, &resolve), expected);
    }
}
