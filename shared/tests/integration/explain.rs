//! Dispatch explain (BEHAVIOR 9) through the dispatch engine with a fixed clock, each test on the
//! embedded store and on DynamoDB (a table of its own on the emulator): one test per candidate
//! reason and per stop point, the trigger read condition by condition, explain writing nothing
//! (the store's full contents compared before and after), and a property: over random pools,
//! availability, capacity, weights and rotation states, a dispatch right after an explain
//! assigns the member the explain named, with the same message.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use chrono::{DateTime, Duration, TimeZone, Utc};
use common::snapshot::Held;
use common::Backend;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};
use shared::clock::FixedClock;
use shared::dispatch::{
    AccountContext, DispatchEngine, DispatchRequest, ExplainAnswer, Outcome, Preview,
};
use shared::fields::CatalogueCache;
use shared::model::AssignmentReason;
use shared::store::Store;
use shared::types::AccountId;
use std::sync::Arc;
use uuid::Uuid;

/// A typed id from its text.
fn id<T: From<Uuid>>(text: &str) -> T {
    Uuid::parse_str(text).unwrap().into()
}

const ACCOUNT: &str = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01";
const INACTIVE_ACCOUNT: &str = "aa6b7c89-eafb-4ac6-b1d8-e35e6f7a8b01";
const ROUTER: &str = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";
const INACTIVE_ROUTER: &str = "7e3f4a56-b7c8-4d93-8ea5-b02b3c4d5e78";
const CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000002";
const OWNED_CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000003";
const MATCHING_CONTACT: &str = "01936b2a-7c00-7a00-8000-000000000004";
const DEAL: &str = "01936b2a-7c00-7a00-8000-000000000005";
const COMPANY: &str = "01936b2a-7c00-7a00-8000-0000000000c1";

/// Wednesday 2026-11-18 10:00 UTC.
fn wednesday_10_utc() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 18, 10, 0, 0).unwrap()
}

fn email(n: usize) -> String {
    format!("m{n}@acme.example")
}

fn member(n: usize) -> Value {
    json!({"id": Uuid::from_u128(0x1000 + n as u128), "email": email(n), "time_zone": "UTC"})
}

/// The trigger `country equals US` (CONTACT matches it).
fn us_trigger() -> Value {
    json!({"groups": [{"conditions": [{"field": "country", "operator": "equals", "value": "US"}]}]})
}

/// How `us_trigger` reads on CONTACT.
fn us_trigger_read() -> Value {
    json!({"matched": true, "groups": [{"matched": true, "conditions": [
        {"field": "country", "operator": "equals", "value": "US", "actual": "US", "matched": true}
    ]}]})
}

/// Round robin with `us_trigger`.
fn rr() -> Value {
    json!({"owner_field": "contact_owner", "distribution_model": "round robin", "trigger": us_trigger()})
}

/// Round robin without a trigger.
fn rr_plain() -> Value {
    json!({"owner_field": "contact_owner", "distribution_model": "round robin"})
}

fn percentage() -> Value {
    json!({"owner_field": "contact_owner", "distribution_model": "percentage"})
}

/// A seed: an active account with members m1..m5 (24/7), team T1 = [m3, m4], the router
/// `ROUTER` on contacts with `settings` (users m1, m2, team T1), three contacts (one owned by
/// m2, one of a company owned by m5), a deal; an inactive account with a router.
fn seed(settings: Value, edit: impl FnOnce(&mut Value)) -> Value {
    let mut s = json!({"accounts": [
        {
            "id": ACCOUNT, "name": "Acme", "active": true, "assignment_quota": null,
            "clients": [], "roles": [],
            "users": [member(1), member(2), member(3), member(4), member(5)],
            "teams": [{"id": Uuid::from_u128(0x2001), "name": "T1", "members": [email(3), email(4)]}],
            "fields": {},
            "routers": [{
                "id": ROUTER, "name": "R", "object_type": "contacts", "is_published": true,
                "has_integration": false, "settings": settings,
                "users": [{"email": email(1)}, {"email": email(2)}], "teams": [{"name": "T1"}]
            }],
            "records": {
                "contacts": [
                    {"id": CONTACT, "fields": {"email": "lead@leads.example", "country": "US"}},
                    {"id": OWNED_CONTACT, "fields": {"email": "owned@leads.example", "country": "US", "contact_owner": email(2)}},
                    {"id": MATCHING_CONTACT, "fields": {"email": "buyer@prospect.example", "country": "US"}}
                ],
                "companies": [
                    {"id": COMPANY, "fields": {"company_name": "Prospect", "website_url": "https://www.prospect.example", "company_owner": email(5)}}
                ],
                "deals": [{"id": DEAL, "fields": {"deal_name": "D", "deal_stage": "closed_won", "pipeline": "default"}}]
            }
        },
        {
            "id": INACTIVE_ACCOUNT, "name": "Gone", "active": false,
            "users": [{"id": Uuid::from_u128(0x9001), "email": "x@other.example"}],
            "routers": [{
                "id": INACTIVE_ROUTER, "name": "Other", "object_type": "contacts", "is_published": true,
                "settings": rr_plain(), "users": [{"email": "x@other.example"}], "teams": []
            }]
        }
    ]});
    edit(&mut s);
    s
}

shared::on_both_stores!(
    reason_office_status_off,
    reason_out_of_office,
    reason_outside_working_hours,
    reason_at_capacity,
    reason_zero_weight,
    several_reasons_come_in_the_documented_order,
    stop_account_not_found_and_not_active,
    stop_router_not_found,
    stop_router_unpublished,
    stop_no_settings,
    stop_object_not_found,
    stop_trigger_did_not_match,
    stop_cannot_overwrite,
    stop_quota_reached,
    stop_everyone_available_at_capacity,
    stop_only_zero_weight_members_eligible,
    stop_no_users_available,
    assignment_to_the_backup_user,
    assignment_by_account_matching,
    an_ineligible_company_owner_leaves_the_match_and_the_pool,
    a_router_without_trigger_explains_a_null_trigger,
    the_trigger_lists_every_condition_with_actual_values,
    explain_writes_nothing,
);

struct Fixture {
    held: Held,
    engine: Arc<DispatchEngine>,
    clock: Arc<FixedClock>,
}

async fn fixture(backend: Backend, seed: Value) -> Fixture {
    let clock = Arc::new(FixedClock::new(wednesday_10_utc()));
    let (store, held) = Held::new(backend).await;
    let plan = shared::seed::load(
        &seed.to_string(),
        wednesday_10_utc() - Duration::days(30),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .unwrap_or_else(|e| panic!("test seed: {e}"));
    store.provision(&plan).await.unwrap();
    let engine = Arc::new(DispatchEngine::new(
        store.clone(),
        clock.clone(),
        Arc::new(CatalogueCache::default()),
    ));
    Fixture {
        held,
        engine,
        clock,
    }
}

fn request(router: &str, object: &str) -> DispatchRequest {
    DispatchRequest {
        router_id: router.into(),
        object_id: object.into(),
        account_id: None,
    }
}

impl Fixture {
    /// The 200 body of `POST /dispatch/router/explain` in `account`.
    async fn explain_in(&self, account: &str, router: &str, object: &str) -> Value {
        let (preview, explanation) = self
            .engine
            .explain(id(account), &request(router, object))
            .await
            .unwrap();
        serde_json::to_value(ExplainAnswer::new(preview, explanation)).unwrap()
    }

    async fn explain(&self, router: &str, object: &str) -> Value {
        self.explain_in(ACCOUNT, router, object).await
    }

    async fn dispatch(&self, router: &str, object: &str) -> Outcome {
        self.engine
            .dispatch(
                AccountContext::Token(id(ACCOUNT)),
                &request(router, object),
                None,
            )
            .await
            .unwrap()
    }

    /// Explains, then dispatches, and checks that the dispatch did what the explain said.
    async fn explain_then_dispatch(&self, router: &str, object: &str) -> Value {
        let body = self.explain(router, object).await;
        let outcome = self.dispatch(router, object).await;
        let answer = serde_json::to_value(outcome.answer()).unwrap();
        assert_eq!(answer["message"], body["message"], "{body}");
        if let Outcome::Assigned(a) = &outcome {
            assert_eq!(body["user"], a.user.as_str(), "{body}");
            assert_eq!(body["reason"], json!(a.reason), "{body}");
        }
        body
    }
}

/// A candidate line.
fn candidate(n: usize, reasons: &[&str]) -> Value {
    json!({"user": email(n), "eligible": reasons.is_empty(), "reasons": reasons})
}

/// The non-assignment body: exactly `{message, dry_run, explanation}` (these routers have no
/// SLA: `sla` is `null`, BEHAVIOR 14).
fn stopped(message: &str, trigger: Value, candidates: Value, account_match: Value) -> Value {
    json!({
        "message": message, "dry_run": true,
        "explanation": {"trigger": trigger, "candidates": candidates, "account_match": account_match, "sla": null}
    })
}

/// The assignment body; `explanation` gets `sla: null` when it names no `sla` (these routers
/// have none).
fn assigning(user: String, reason: &str, mut explanation: Value) -> Value {
    if let Some(parts) = explanation.as_object_mut() {
        parts.entry("sla").or_insert(Value::Null);
    }
    json!({
        "message": "Owner assigned", "success": true, "user": user, "field_name": "Contact owner",
        "reason": reason, "dry_run": true, "explanation": explanation
    })
}

fn everyone_eligible() -> Value {
    json!([
        candidate(1, &[]),
        candidate(2, &[]),
        candidate(3, &[]),
        candidate(4, &[])
    ])
}

async fn reason_office_status_off(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| {
            s["accounts"][0]["users"][0]["office_status"] = json!(false)
        }),
    )
    .await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        body,
        assigning(
            email(2),
            "rotation",
            json!({"trigger": us_trigger_read(), "account_match": null, "candidates": [
                candidate(1, &["office_status_off"]), candidate(2, &[]), candidate(3, &[]), candidate(4, &[])
            ]})
        )
    );
}

async fn reason_out_of_office(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| {
            s["accounts"][0]["users"][0]["out_office_dates"] =
                json!([{"start_date": "2026-11-17", "end_date": "2026-11-19"}]);
            // A past range does not count.
            s["accounts"][0]["users"][1]["out_office_dates"] =
                json!([{"start_date": "2026-10-01", "end_date": "2026-10-05"}]);
        }),
    )
    .await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(body["user"], email(2));
    assert_eq!(
        body["explanation"]["candidates"],
        json!([
            candidate(1, &["out_of_office"]),
            candidate(2, &[]),
            candidate(3, &[]),
            candidate(4, &[])
        ])
    );
}

async fn reason_outside_working_hours(backend: Backend) {
    // m2 works 09:00-17:00 in Tokyo (00:00-08:00 UTC): at 10:00 UTC they are off.
    let hours = |s: &mut Value| {
        s["accounts"][0]["users"][1]["time_zone"] = json!("Asia/Tokyo");
        s["accounts"][0]["users"][1]["working_hours"] =
            json!([{"days": "mon-fri", "start_date": "09:00", "end_date": "17:00"}]);
        s["accounts"][0]["users"][0]["office_status"] = json!(false);
    };
    let f = fixture(backend, seed(rr(), hours)).await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(body["user"], email(3));
    assert_eq!(
        body["explanation"]["candidates"],
        json!([
            candidate(1, &["office_status_off"]),
            candidate(2, &["outside_working_hours"]),
            candidate(3, &[]),
            candidate(4, &[])
        ])
    );
    // A router that ignores working hours does not give the reason.
    let ignoring = json!({"owner_field": "contact_owner", "distribution_model": "round robin", "ignore_working_hours": true});
    let f = fixture(backend, seed(ignoring, hours)).await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(body["user"], email(2));
    assert_eq!(body["explanation"]["candidates"][1], candidate(2, &[]));
}

async fn reason_at_capacity(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| {
            s["accounts"][0]["users"][0]["capacity"] =
                json!([{"current_capacity": 4, "max_capacity": 4, "assignment_type": "contacts"}]);
            // A full entry for deals does not apply to a contacts router.
            s["accounts"][0]["users"][1]["capacity"] =
                json!([{"current_capacity": 9, "max_capacity": 9, "assignment_type": "deals"}]);
        }),
    )
    .await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(body["user"], email(2));
    assert_eq!(
        body["explanation"]["candidates"],
        json!([
            candidate(1, &["at_capacity"]),
            candidate(2, &[]),
            candidate(3, &[]),
            candidate(4, &[])
        ])
    );
}

fn weighted(s: &mut Value, weights: [u32; 3]) {
    s["accounts"][0]["routers"][0]["users"] = json!([
        {"email": email(1), "percentage": weights[0]},
        {"email": email(2), "percentage": weights[1]},
        {"email": email(3), "percentage": weights[2]}
    ]);
    s["accounts"][0]["routers"][0]["teams"] = json!([]);
}

async fn reason_zero_weight(backend: Backend) {
    let f = fixture(backend, seed(percentage(), |s| weighted(s, [0, 100, 0]))).await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        body,
        assigning(
            email(2),
            "rotation",
            json!({"trigger": null, "account_match": null, "candidates": [
                candidate(1, &["zero_weight"]), candidate(2, &[]), candidate(3, &["zero_weight"])
            ]})
        )
    );
}

async fn several_reasons_come_in_the_documented_order(backend: Backend) {
    let f = fixture(
        backend,
        seed(percentage(), |s| {
            weighted(s, [0, 60, 40]);
            let m1 = &mut s["accounts"][0]["users"][0];
            m1["office_status"] = json!(false);
            m1["out_office_dates"] =
                json!([{"start_date": "2026-11-17", "end_date": "2026-11-19"}]);
            m1["time_zone"] = json!("Asia/Tokyo");
            m1["working_hours"] =
                json!([{"days": "mon-fri", "start_date": "09:00", "end_date": "17:00"}]);
            m1["capacity"] = json!([{"current_capacity": 1, "max_capacity": 1}]);
            let m3 = &mut s["accounts"][0]["users"][2];
            m3["office_status"] = json!(false);
            m3["capacity"] = json!([{"current_capacity": 2, "max_capacity": 1}]);
        }),
    )
    .await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(body["user"], email(2));
    assert_eq!(
        body["explanation"]["candidates"],
        json!([
            candidate(
                1,
                &[
                    "office_status_off",
                    "out_of_office",
                    "outside_working_hours",
                    "at_capacity",
                    "zero_weight"
                ]
            ),
            candidate(2, &[]),
            candidate(3, &["office_status_off", "at_capacity"])
        ])
    );
}

async fn stop_account_not_found_and_not_active(backend: Backend) {
    let f = fixture(backend, seed(rr(), |_| {})).await;
    let body = f
        .explain_in("00000000-0000-4000-8000-000000000000", ROUTER, CONTACT)
        .await;
    assert_eq!(
        body,
        stopped("Account not found", Value::Null, Value::Null, Value::Null)
    );
    let body = f
        .explain_in(INACTIVE_ACCOUNT, INACTIVE_ROUTER, CONTACT)
        .await;
    assert_eq!(
        body,
        stopped(
            "Account is not active",
            Value::Null,
            Value::Null,
            Value::Null
        )
    );
}

async fn stop_router_not_found(backend: Backend) {
    let f = fixture(backend, seed(rr(), |_| {})).await;
    for router in [
        "5b1c2d34-e5f6-4a71-8c83-000000000000",
        "not-a-uuid",
        INACTIVE_ROUTER,
    ] {
        let body = f.explain_then_dispatch(router, CONTACT).await;
        assert_eq!(
            body,
            stopped("Router not found", Value::Null, Value::Null, Value::Null)
        );
    }
    let f = fixture(
        backend,
        seed(rr(), |s| {
            s["accounts"][0]["routers"][0]["archived"] = json!("2026-01-01T00:00:00Z")
        }),
    )
    .await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        body,
        stopped("Router not found", Value::Null, Value::Null, Value::Null)
    );
}

async fn stop_router_unpublished(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| {
            s["accounts"][0]["routers"][0]["is_published"] = json!(false)
        }),
    )
    .await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        body,
        stopped(
            "The router is unpublished",
            Value::Null,
            Value::Null,
            Value::Null
        )
    );
}

async fn stop_no_settings(backend: Backend) {
    for settings in [
        Value::Null,
        json!({"distribution_model": "round robin", "trigger": us_trigger()}),
        json!({"owner_field": "contact_owner", "trigger": us_trigger()}),
    ] {
        let f = fixture(backend, seed(settings.clone(), |_| {})).await;
        let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
        assert_eq!(
            body,
            stopped(
                "The router has no settings",
                Value::Null,
                Value::Null,
                Value::Null
            ),
            "{settings}"
        );
    }
}

async fn stop_object_not_found(backend: Backend) {
    let f = fixture(backend, seed(rr(), |_| {})).await;
    for object in [
        Uuid::now_v7().to_string(),
        DEAL.to_string(),
        "not-a-uuid".to_string(),
    ] {
        let body = f.explain_then_dispatch(ROUTER, &object).await;
        assert_eq!(
            body,
            stopped("Object not found", Value::Null, Value::Null, Value::Null),
            "{object}"
        );
    }
}

async fn stop_trigger_did_not_match(backend: Backend) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "trigger": {"groups": [{"conditions": [{"field": "country", "operator": "equals", "value": "DE"}]}]}});
    let f = fixture(backend, seed(settings, |_| {})).await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        body,
        stopped(
            "Trigger did not match",
            json!({"matched": false, "groups": [{"matched": false, "conditions": [
                {"field": "country", "operator": "equals", "value": "DE", "actual": "US", "matched": false}
            ]}]}),
            Value::Null,
            Value::Null
        )
    );
}

async fn stop_cannot_overwrite(backend: Backend) {
    let f = fixture(backend, seed(rr(), |_| {})).await;
    let body = f.explain_then_dispatch(ROUTER, OWNED_CONTACT).await;
    assert_eq!(
        body,
        stopped(
            "The router can not overwrite",
            us_trigger_read(),
            Value::Null,
            Value::Null
        )
    );
}

async fn stop_quota_reached(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| s["accounts"][0]["assignment_quota"] = json!(1)),
    )
    .await;
    let first = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(first["user"], email(1));
    let body = f.explain_then_dispatch(ROUTER, MATCHING_CONTACT).await;
    assert_eq!(
        body,
        stopped(
            "Assignment limit reached",
            us_trigger_read(),
            Value::Null,
            Value::Null
        )
    );
}

async fn stop_everyone_available_at_capacity(backend: Backend) {
    let f = fixture(
        backend,
        seed(rr(), |s| {
            for i in 0..4 {
                s["accounts"][0]["users"][i]["capacity"] =
                    json!([{"current_capacity": 3, "max_capacity": 3}]);
            }
            s["accounts"][0]["users"][3]["office_status"] = json!(false);
        }),
    )
    .await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        body,
        stopped(
            "Assignment limit reached",
            us_trigger_read(),
            json!([
                candidate(1, &["at_capacity"]),
                candidate(2, &["at_capacity"]),
                candidate(3, &["at_capacity"]),
                candidate(4, &["office_status_off", "at_capacity"])
            ]),
            Value::Null
        )
    );
}

async fn stop_only_zero_weight_members_eligible(backend: Backend) {
    let f = fixture(
        backend,
        seed(percentage(), |s| {
            weighted(s, [0, 100, 0]);
            s["accounts"][0]["users"][1]["office_status"] = json!(false);
        }),
    )
    .await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        body,
        stopped(
            "Assignment limit reached",
            Value::Null,
            json!([
                candidate(1, &["zero_weight"]),
                candidate(2, &["office_status_off"]),
                candidate(3, &["zero_weight"])
            ]),
            Value::Null
        )
    );
}

fn all_off(s: &mut Value) {
    for i in 0..5 {
        s["accounts"][0]["users"][i]["office_status"] = json!(false);
    }
}

async fn stop_no_users_available(backend: Backend) {
    let off = json!([
        candidate(1, &["office_status_off"]),
        candidate(2, &["office_status_off"]),
        candidate(3, &["office_status_off"]),
        candidate(4, &["office_status_off"])
    ]);
    let disabled = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "trigger": us_trigger(), "default_user": email(5), "disable_default_assignment": true});
    for settings in [rr(), disabled] {
        let f = fixture(backend, seed(settings.clone(), all_off)).await;
        let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
        assert_eq!(
            body,
            stopped(
                "There are no users available and the backup user is disabled",
                us_trigger_read(),
                off.clone(),
                Value::Null
            ),
            "{settings}"
        );
    }
}

async fn assignment_to_the_backup_user(backend: Backend) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "trigger": us_trigger(), "default_user": email(5)});
    let f = fixture(backend, seed(settings, all_off)).await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        body,
        assigning(
            email(5),
            "backup",
            json!({"trigger": us_trigger_read(), "account_match": null, "candidates": [
                candidate(1, &["office_status_off"]), candidate(2, &["office_status_off"]),
                candidate(3, &["office_status_off"]), candidate(4, &["office_status_off"])
            ]})
        )
    );
}

async fn assignment_by_account_matching(backend: Backend) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "account_matching": true});
    let f = fixture(backend, seed(settings, |_| {})).await;
    let body = f.explain_then_dispatch(ROUTER, MATCHING_CONTACT).await;
    assert_eq!(
        body,
        assigning(
            email(5),
            "account_matching",
            json!({"trigger": null, "candidates": null,
                "account_match": {"company_id": COMPANY, "owner": email(5), "eligible": true}})
        )
    );
    // No company for the domain: no account match, the pool decides.
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        body,
        assigning(
            email(1),
            "rotation",
            json!({"trigger": null, "candidates": everyone_eligible(), "account_match": null})
        )
    );
}

async fn an_ineligible_company_owner_leaves_the_match_and_the_pool(backend: Backend) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "account_matching": true});
    let f = fixture(
        backend,
        seed(settings, |s| {
            s["accounts"][0]["users"][4]["capacity"] =
                json!([{"current_capacity": 1, "max_capacity": 1}]);
        }),
    )
    .await;
    let body = f.explain_then_dispatch(ROUTER, MATCHING_CONTACT).await;
    assert_eq!(
        body,
        assigning(
            email(1),
            "rotation",
            json!({"trigger": null, "candidates": everyone_eligible(),
                "account_match": {"company_id": COMPANY, "owner": email(5), "eligible": false}})
        )
    );
}

async fn a_router_without_trigger_explains_a_null_trigger(backend: Backend) {
    let f = fixture(backend, seed(rr_plain(), |_| {})).await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        body,
        assigning(
            email(1),
            "rotation",
            json!({"trigger": null, "candidates": everyone_eligible(), "account_match": null})
        )
    );
    // The rotation moved: the next explain names m2, and the dispatch after it assigns m2.
    let body = f.explain_then_dispatch(ROUTER, MATCHING_CONTACT).await;
    assert_eq!(body["user"], email(2));
}

async fn the_trigger_lists_every_condition_with_actual_values(backend: Backend) {
    let groups = json!([
        {"conditions": [
            {"field": "country", "operator": "equals", "value": "DE"},
            {"field": "email", "operator": "is_not_empty"},
            {"field": "city", "operator": "is_empty"}
        ]},
        {"conditions": [
            {"field": "country", "operator": "equals", "value": "US"},
            {"field": "city", "operator": "equals", "value": "Paris"}
        ]}
    ]);
    let read = json!([
        {"matched": false, "conditions": [
            {"field": "country", "operator": "equals", "value": "DE", "actual": "US", "matched": false},
            {"field": "email", "operator": "is_not_empty", "value": null, "actual": "lead@leads.example", "matched": true},
            {"field": "city", "operator": "is_empty", "value": null, "actual": null, "matched": true}
        ]},
        {"matched": false, "conditions": [
            {"field": "country", "operator": "equals", "value": "US", "actual": "US", "matched": true},
            {"field": "city", "operator": "equals", "value": "Paris", "actual": null, "matched": false}
        ]}
    ]);
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "trigger": {"groups": groups.clone()}});
    let f = fixture(backend, seed(settings, |_| {})).await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    assert_eq!(
        body,
        stopped(
            "Trigger did not match",
            json!({"matched": false, "groups": read.clone()}),
            Value::Null,
            Value::Null
        )
    );
    // A third group that holds: the trigger matches, and the first two are still read in full.
    let mut more = groups.as_array().unwrap().clone();
    more.push(json!({"conditions": [
        {"field": "country", "operator": "in", "value": ["CA", "US"]},
        {"field": "email", "operator": "ends_with", "value": "@leads.example"}
    ]}));
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "trigger": {"groups": more}});
    let f = fixture(backend, seed(settings, |_| {})).await;
    let body = f.explain_then_dispatch(ROUTER, CONTACT).await;
    let mut groups_read = read.as_array().unwrap().clone();
    groups_read.push(json!({"matched": true, "conditions": [
        {"field": "country", "operator": "in", "value": ["CA", "US"], "actual": "US", "matched": true},
        {"field": "email", "operator": "ends_with", "value": "@leads.example", "actual": "lead@leads.example", "matched": true}
    ]}));
    assert_eq!(
        body,
        assigning(
            email(1),
            "rotation",
            json!({"trigger": {"matched": true, "groups": groups_read}, "candidates": everyone_eligible(), "account_match": null})
        )
    );
}

async fn explain_writes_nothing(backend: Backend) {
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "account_matching": true, "default_user": email(5), "trigger": us_trigger()});
    let f = fixture(
        backend,
        seed(settings, |s| {
            s["accounts"][0]["assignment_quota"] = json!(10);
            s["accounts"][0]["users"][0]["capacity"] =
                json!([{"current_capacity": 0, "max_capacity": 5}]);
            s["accounts"][0]["users"][4]["capacity"] =
                json!([{"current_capacity": 0, "max_capacity": 5}]);
        }),
    )
    .await;
    // A dispatch first, so the rotation state, counters and history exist.
    assert!(matches!(
        f.dispatch(ROUTER, OWNED_CONTACT).await,
        Outcome::Skipped(_)
    ));
    let before = f.held.snapshot().await;
    let cases = [
        (ROUTER, CONTACT, "Owner assigned"),          // rotation
        (ROUTER, MATCHING_CONTACT, "Owner assigned"), // account matching
        (ROUTER, OWNED_CONTACT, "The router can not overwrite"),
        (ROUTER, "nope", "Object not found"),
        (
            "5b1c2d34-e5f6-4a71-8c83-000000000000",
            CONTACT,
            "Router not found",
        ),
    ];
    for (router, object, message) in cases {
        let body = f.explain(router, object).await;
        assert_eq!(body["message"], message);
    }
    // Queue-like context is not explain's; an explain at another instant writes nothing either.
    f.clock.set(wednesday_10_utc() + Duration::hours(12));
    let body = f.explain(ROUTER, CONTACT).await;
    assert_eq!(body["reason"], "rotation");
    assert_eq!(
        f.held.snapshot().await,
        before,
        "explain wrote to the store"
    );
    // The snapshot sees a write: a real dispatch changes it.
    f.clock.set(wednesday_10_utc());
    assert!(matches!(
        f.dispatch(ROUTER, CONTACT).await,
        Outcome::Assigned(_)
    ));
    assert_ne!(f.held.snapshot().await, before);

    // The backup path writes nothing either.
    let settings = json!({"owner_field": "contact_owner", "distribution_model": "round robin",
        "default_user": email(5)});
    let f = fixture(backend, seed(settings, all_off)).await;
    let before = f.held.snapshot().await;
    assert_eq!(f.explain(ROUTER, CONTACT).await["reason"], "backup");
    assert_eq!(
        f.held.snapshot().await,
        before,
        "explain wrote to the store"
    );
}

// ---------------------------------------------------------------------------------------------
// The property: explain, then dispatch, name the same member with the same message.

/// One member of a random pool.
#[derive(Debug, Clone)]
struct MemberCase {
    office_status: bool,
    /// 0: none; 1: a range around today; 2: a past range.
    out_of_office: u8,
    /// 0: 24/7; 1: 09:00-17:00 UTC (in); 2: 09:00-17:00 in Tokyo (out at 10:00 UTC).
    hours: u8,
    /// 0: none; 1: 0 of 2; 2: 1 of 2; 3: 2 of 2 (full); 4: a full entry for deals only.
    capacity: u8,
    /// A percentage router's weight.
    weight: u32,
}

#[derive(Debug, Clone)]
struct Case {
    members: Vec<MemberCase>,
    percentage: bool,
    ignore_working_hours: bool,
    /// Round robin: members from this index on come through a team (when below the count).
    team_from: usize,
    /// 0: none; 1: the last member as backup; 2: the same, disabled.
    backup: u8,
    /// Dispatches before the explain.
    prior: usize,
}

fn member_case() -> impl Strategy<Value = MemberCase> {
    (
        prop::bool::weighted(0.75),
        prop_oneof![4 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
        prop_oneof![3 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
        prop_oneof![3 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8), 1 => Just(3u8), 1 => Just(4u8)],
        prop::sample::select(vec![0u32, 10, 20, 25, 30, 50]),
    )
        .prop_map(
            |(office_status, out_of_office, hours, capacity, weight)| MemberCase {
                office_status,
                out_of_office,
                hours,
                capacity,
                weight,
            },
        )
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(member_case(), 2..=6),
        any::<bool>(),
        prop::bool::weighted(0.25),
        1usize..7,
        0u8..3,
        0usize..5,
    )
        .prop_map(
            |(members, percentage, ignore_working_hours, team_from, backup, prior)| Case {
                members,
                percentage,
                ignore_working_hours,
                team_from,
                backup,
                prior,
            },
        )
}

/// The seed of one case: a fresh account (its own ids and e-mails, so every case can share one
/// store), the router and `prior + 1` contacts.
fn case_seed(case: &Case, account: Uuid, router: Uuid, contacts: &[Uuid]) -> Value {
    let tag = account.simple().to_string();
    let mail = |i: usize| format!("p{i}-{tag}@acme.example");
    let users: Vec<Value> = case
        .members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut u = json!({"id": Uuid::new_v4(), "email": mail(i), "time_zone": "UTC",
                "office_status": m.office_status});
            match m.out_of_office {
                1 => u["out_office_dates"] = json!([{"start_date": "2026-11-17", "end_date": "2026-11-19"}]),
                2 => u["out_office_dates"] = json!([{"start_date": "2026-10-01", "end_date": "2026-10-03"}]),
                _ => {}
            }
            match m.hours {
                1 => u["working_hours"] = json!([{"days": "mon-fri", "start_date": "09:00", "end_date": "17:00"}]),
                2 => {
                    u["time_zone"] = json!("Asia/Tokyo");
                    u["working_hours"] = json!([{"days": "mon-fri", "start_date": "09:00", "end_date": "17:00"}]);
                }
                _ => {}
            }
            match m.capacity {
                1 => u["capacity"] = json!([{"current_capacity": 0, "max_capacity": 2}]),
                2 => u["capacity"] = json!([{"current_capacity": 1, "max_capacity": 2, "assignment_type": "contacts"}]),
                3 => u["capacity"] = json!([{"current_capacity": 2, "max_capacity": 2}]),
                4 => u["capacity"] = json!([{"current_capacity": 2, "max_capacity": 2, "assignment_type": "deals"}]),
                _ => {}
            }
            u
        })
        .collect();
    let n = case.members.len();
    // Percentages sum to 100: the raw weights scaled, the rest to the last weighted member
    // (everyone at 0 gives the last member everything); 0 stays 0.
    let mut raw: Vec<u32> = case.members.iter().map(|m| m.weight).collect();
    if raw.iter().all(|w| *w == 0) {
        raw[n - 1] = 1;
    }
    let sum: u32 = raw.iter().sum();
    let mut weights: Vec<u32> = raw.iter().map(|w| w * 100 / sum).collect();
    let last = raw.iter().rposition(|w| *w > 0).unwrap();
    weights[last] += 100 - weights.iter().sum::<u32>();
    let (router_users, teams, router_teams): (Vec<Value>, Vec<Value>, Vec<Value>) =
        if case.percentage {
            (
                (0..n)
                    .map(|i| json!({"email": mail(i), "percentage": weights[i]}))
                    .collect(),
                vec![],
                vec![],
            )
        } else {
            let split = case.team_from.min(n);
            let team: Vec<String> = (split..n).map(mail).chain([mail(0)]).collect();
            (
                (0..split).map(|i| json!({"email": mail(i)})).collect(),
                vec![json!({"id": Uuid::new_v4(), "name": format!("T-{tag}"), "members": team})],
                if split < n {
                    vec![json!({"name": format!("T-{tag}")})]
                } else {
                    vec![]
                },
            )
        };
    let mut settings = json!({
        "owner_field": "contact_owner",
        "distribution_model": if case.percentage { "percentage" } else { "round robin" },
        "ignore_working_hours": case.ignore_working_hours
    });
    if case.backup > 0 {
        settings["default_user"] = json!(mail(n - 1));
        settings["disable_default_assignment"] = json!(case.backup == 2);
    }
    let records: Vec<Value> = contacts
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"id": c, "fields": {"email": format!("c{i}-{tag}@leads.example")}}))
        .collect();
    json!({"accounts": [{
        "id": account, "name": format!("Case {tag}"), "active": true,
        "users": users, "teams": teams, "fields": {},
        "routers": [{
            "id": router, "name": "P", "object_type": "contacts", "is_published": true,
            "settings": settings, "users": router_users, "teams": router_teams
        }],
        "records": {"contacts": records}
    }]})
}

/// Runs one case on `store` and checks the promise.
async fn explain_then_dispatch_agree(store: Arc<dyn Store>, case: Case) {
    let account = Uuid::new_v4();
    let router = Uuid::new_v4();
    let contacts: Vec<Uuid> = (0..=case.prior).map(|_| Uuid::now_v7()).collect();
    let seed = case_seed(&case, account, router, &contacts);
    let plan = shared::seed::load(
        &seed.to_string(),
        wednesday_10_utc() - Duration::days(30),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .unwrap_or_else(|e| panic!("case seed: {e}\n{seed}"));
    store.provision(&plan).await.unwrap();
    let clock = Arc::new(FixedClock::new(wednesday_10_utc()));
    let engine = DispatchEngine::new(store, clock, Arc::new(CatalogueCache::default()));
    let account_id: AccountId = account.into();
    let context = AccountContext::Token(account_id);
    for c in &contacts[..case.prior] {
        engine
            .dispatch(context, &request(&router.to_string(), &c.to_string()), None)
            .await
            .unwrap();
    }
    let target = request(&router.to_string(), &contacts[case.prior].to_string());
    let (preview, explanation) = engine.explain(account_id, &target).await.unwrap();
    let outcome = engine.dispatch(context, &target, None).await.unwrap();
    let body =
        serde_json::to_value(ExplainAnswer::new(preview.clone(), explanation.clone())).unwrap();
    let answer = serde_json::to_value(outcome.answer()).unwrap();
    assert_eq!(body["message"], answer["message"], "{case:?}\n{body}");
    match (&preview, &outcome) {
        (Preview::Assign { user, reason, .. }, Outcome::Assigned(a)) => {
            assert_eq!((user, reason), (&a.user, &a.reason), "{case:?}\n{body}");
            let candidates = explanation.candidates.as_ref().unwrap();
            let line = candidates.iter().find(|c| &c.user == user);
            match reason {
                AssignmentReason::Rotation => {
                    assert!(line.is_some_and(|c| c.eligible), "{case:?}\n{body}")
                }
                AssignmentReason::Backup => {
                    assert!(
                        candidates.iter().all(|c| !c.available()),
                        "{case:?}\n{body}"
                    )
                }
                AssignmentReason::AccountMatching => panic!("no matching in these cases"),
                AssignmentReason::SlaReassignment => panic!("a dispatch is never one"),
            }
        }
        (Preview::Stop(message), Outcome::Skipped(skip)) => {
            assert_eq!(*message, skip.message(), "{case:?}\n{body}")
        }
        (p, o) => panic!("explain said {p:?}, dispatch did {o:?}\n{case:?}\n{body}"),
    }
}

/// The property on one store: 24 cases (the emulator is slow), each in a fresh account.
fn property_on(backend: Backend) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (store, _held) = runtime.block_on(Held::new(backend));
    let mut runner = TestRunner::new(Config {
        cases: 24,
        max_shrink_iters: 64,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&case(), |case| {
            runtime.block_on(explain_then_dispatch_agree(store.clone(), case));
            Ok(())
        })
        .unwrap();
}

#[test]
fn memory_an_explain_then_a_dispatch_name_the_same_member_over_random_pools() {
    property_on(Backend::Memory);
}

#[test]
fn dynamodb_an_explain_then_a_dispatch_name_the_same_member_over_random_pools() {
    property_on(Backend::Dynamo);
}
