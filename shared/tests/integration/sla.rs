//! SLA reassignment (BEHAVIOR 14) at the engine, on the embedded store and on DynamoDB
//! (emulator): which assignments start a check, the check's verdicts (`met` by a listed value and
//! by a change, `cancelled` by an owner write, an archived record or router, an unpublished
//! router, `expired` when only the owner could take it), the reassignment to the next member in
//! rotation order through the one dispatch engine (history, rotation, counters, event with its
//! `notify` flags), the fifth reassignment in a row as the last, and 50 checks due at once run by
//! two racing workers, each reassigned once.
//!
//! Time is a fixed clock moved by the tests; hand-offs are collected and run when the clock says
//! they are due, so every step is deterministic. SLA minutes are real minutes here (the clock
//! moves); `SLA_MINUTE_SECONDS` scaling is covered by the local server's tests.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;
use chrono::{DateTime, Duration, Utc};
use common::Backend;
use serde_json::{json, Value};
use shared::clock::{Clock, FixedClock};
use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest, Outcome};
use shared::due::{DueMessage, DueSettings, DueWorker, Handoff};
use shared::fields::CatalogueCache;
use shared::model::due::DueKind;
use shared::model::{
    AssignmentReason, DispatchEntry, DispatchSource, MessageDeduplicationId, ObjectType, Record,
    SlaState, SlaStatus,
};
use shared::outbound::OutboundPolicy;
use shared::page::PageRequest;
use shared::records::{Caller, RecordService, RecordWrite};
use shared::secrets::LocalSealer;
use shared::sla::{SlaChecks, SlaMinute};
use shared::store::faulty::FaultyStore;
use shared::store::Store;
use shared::types::{AccountId, Email, RecordId, RouterId};
use shared::webhooks::WebhookService;
use std::sync::{Arc, Mutex};
use uuid::Uuid;

const ACCOUNT: &str = "5a1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f50";
/// Round robin over m1, m2, m3; `overwrite: false`; worked when `lead_status` is one of
/// `["In Progress", "connected"]`; 1 minute.
const LISTED: &str = "5a1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f51";
/// Round robin over m1, m2, m3; `overwrite: true`; worked when `phone` changes; 2 minutes.
const CHANGED: &str = "5a1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f52";
/// m4 alone (out of office), backup m1: m1 gets every record as backup, and nobody else can
/// take it from them.
const LONE: &str = "5a1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f53";
/// m1 and m4 (out of office), backup m3.
const BACKED: &str = "5a1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f54";
/// Account matching with an SLA (a matched assignment starts no check).
const MATCHING: &str = "5a1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f55";
/// No SLA.
const PLAIN: &str = "5a1e0c3b-7d2f-4e61-9a84-0b1c2d3e4f56";

const M1: &str = "m1@acme.example";
const M2: &str = "m2@acme.example";
const M3: &str = "m3@acme.example";

/// The id of contact number `n`.
fn contact(n: usize) -> String {
    format!("01936b2a-7c00-7a00-8000-{:012x}", 0x5000 + n)
}

fn id<T: From<Uuid>>(text: &str) -> T {
    Uuid::parse_str(text).unwrap().into()
}

fn seed(contacts: usize) -> Value {
    let member = |n: u128, email: &str| json!({"id": Uuid::from_u128(0x5a00 + n), "email": email});
    let sla_router = |id: &str, users: Value, settings: Value| {
        let mut base = json!({
            "owner_field": "contact_owner", "distribution_model": "round robin",
            "ignore_working_hours": true
        });
        base.as_object_mut()
            .unwrap()
            .extend(settings.as_object().unwrap().clone());
        json!({"id": id, "name": id, "object_type": "contacts", "is_published": true,
               "has_integration": false, "settings": base, "users": users, "teams": []})
    };
    let three = json!([{"email": M1}, {"email": M2}, {"email": M3}]);
    let lone = json!([{"email": "m4@acme.example"}]);
    let backed = json!([{"email": M1}, {"email": "m4@acme.example"}]);
    let records: Vec<Value> = (0..contacts)
        .map(|n| json!({"id": contact(n), "fields": {"email": format!("lead{n}@prospect.example"), "phone": "1"}}))
        .collect();
    json!({"accounts": [{
        "id": ACCOUNT, "name": "Acme", "active": true,
        "users": [
            {"id": Uuid::from_u128(0x5a01), "email": M1, "can_receive_notifications": true,
             "notification_preferences": ["assignment", "reassignment"]},
            {"id": Uuid::from_u128(0x5a02), "email": M2, "can_receive_notifications": true,
             "notification_preferences": ["assignment"],
             "capacity": [{"assignment_type": "contacts", "current_capacity": 0, "max_capacity": 100}]},
            member(3, M3),
            {"id": Uuid::from_u128(0x5a04), "email": "m4@acme.example", "office_status": false}
        ],
        "routers": [
            sla_router(LISTED, three.clone(), json!({"sla": {"minutes": 1, "worked_field": "lead_status", "worked_values": ["In Progress", "connected"]}})),
            sla_router(CHANGED, three.clone(), json!({"overwrite": true, "sla": {"minutes": 2, "worked_field": "phone", "worked_values": null}})),
            sla_router(LONE, lone, json!({"default_user": M1, "sla": {"minutes": 1, "worked_field": "job_title", "worked_values": ["Called"]}})),
            sla_router(BACKED, backed, json!({"default_user": M3, "sla": {"minutes": 1, "worked_field": "job_title", "worked_values": ["Called"]}})),
            sla_router(MATCHING, three.clone(), json!({"account_matching": true, "sla": {"minutes": 1, "worked_field": "job_title", "worked_values": ["Called"]}})),
            sla_router(PLAIN, three, json!({}))
        ],
        "records": {
            "contacts": records,
            "companies": [{"id": "01936b2a-7c00-7a00-8000-00000000c001",
                           "fields": {"company_name": "Matched", "website_url": "matched.example", "company_owner": M3}}]
        }
    }]})
}

/// Hand-offs kept until the test runs them.
#[derive(Default)]
struct Collected(Mutex<Vec<DueMessage>>);

#[async_trait::async_trait]
impl Handoff for Collected {
    async fn hand_off(&self, message: &DueMessage) -> Result<(), shared::error::BoxError> {
        self.0.lock().unwrap().push(message.clone());
        Ok(())
    }
    fn grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs(2)
    }
    fn reach(&self) -> Option<std::time::Duration> {
        None
    }
}

impl Collected {
    /// The SLA checks handed on and due at `now`, taken.
    fn take_due(&self, now: DateTime<Utc>) -> Vec<DueMessage> {
        let mut all = self.0.lock().unwrap();
        let (due, later): (Vec<_>, Vec<_>) = all
            .drain(..)
            .partition(|m| m.due_at <= now && m.id.kind() == DueKind::SlaCheck);
        *all = later;
        due
    }
}

/// One process: an engine with its SLA checks registered on a worker whose hand-offs are
/// collected.
struct Process {
    engine: Arc<DispatchEngine>,
    worker: Arc<DueWorker>,
    handed: Arc<Collected>,
}

impl Process {
    fn new(store: Arc<dyn Store>, clock: Arc<FixedClock>) -> Self {
        let handed = Arc::new(Collected::default());
        let worker = DueWorker::new(
            store.clone(),
            clock.clone(),
            DueSettings::default(),
            handed.clone(),
        );
        let engine = Arc::new(
            DispatchEngine::new(store, clock, Arc::new(CatalogueCache::default()))
                .with_due(worker.clone())
                .with_sla_minute(SlaMinute::of(std::time::Duration::from_secs(60)))
                .with_deadline(std::time::Duration::from_secs(60)),
        );
        SlaChecks::register(&engine);
        Self {
            engine,
            worker,
            handed,
        }
    }
}

struct Fixture {
    store: Arc<dyn Store>,
    faulty: Arc<FaultyStore>,
    clock: Arc<FixedClock>,
    process: Process,
    records: RecordService,
}

async fn fixture_with(backend: Backend, contacts: usize) -> Fixture {
    let at = Utc::now() - Duration::hours(1);
    let clock = Arc::new(FixedClock::new(at));
    let faulty = Arc::new(FaultyStore::new(backend.store().await));
    let store: Arc<dyn Store> = faulty.clone();
    let plan = shared::seed::load(
        &seed(contacts).to_string(),
        at - Duration::days(1),
        OutboundPolicy::LOCAL,
    )
    .unwrap_or_else(|e| panic!("test seed: {e}"));
    shared::seed::provision(store.as_ref(), &LocalSealer::development(), plan)
        .await
        .unwrap();
    Fixture {
        process: Process::new(store.clone(), clock.clone()),
        records: RecordService::new(
            store.clone(),
            clock.clone(),
            Arc::new(CatalogueCache::default()),
        ),
        store,
        faulty,
        clock,
    }
}

async fn fixture(backend: Backend) -> Fixture {
    fixture_with(backend, 6).await
}

fn request(router: &str, record: &str) -> DispatchRequest {
    DispatchRequest {
        router_id: router.into(),
        object_id: record.into(),
        account_id: None,
    }
}

impl Fixture {
    async fn dispatch(&self, router: &str, record: &str) -> Outcome {
        self.process
            .engine
            .dispatch(
                AccountContext::Token(id(ACCOUNT)),
                &request(router, record),
                None,
            )
            .await
            .unwrap()
    }

    async fn assigned(&self, router: &str, record: &str) -> String {
        match self.dispatch(router, record).await {
            Outcome::Assigned(a) => a.user.into_string(),
            other => panic!("not assigned: {other:?}"),
        }
    }

    /// The record's history, newest first.
    async fn history(&self, record: &str) -> Vec<DispatchEntry> {
        self.store
            .list_record_dispatches(
                id::<AccountId>(ACCOUNT),
                ObjectType::Contacts,
                id::<RecordId>(record),
                &PageRequest::first(100, false),
            )
            .await
            .unwrap()
            .items
    }

    async fn record(&self, record: &str) -> Record {
        self.store
            .get_record(id(ACCOUNT), ObjectType::Contacts, id(record))
            .await
            .unwrap()
            .unwrap()
    }

    async fn owner(&self, record: &str) -> Option<String> {
        self.record(record)
            .await
            .value("contact_owner")
            .map(str::to_string)
    }

    /// A `PATCH /contacts/{id}` of `fields`.
    async fn patch(&self, record: &str, fields: Value) {
        let write = RecordWrite {
            fields: fields.as_object().unwrap().clone(),
        };
        self.records
            .update(
                self.caller(),
                ObjectType::Contacts,
                Some(id(record)),
                None,
                Ok(write),
            )
            .await
            .unwrap();
    }

    async fn archive(&self, record: &str) {
        self.records
            .archive(self.caller(), ObjectType::Contacts, Some(id(record)))
            .await
            .unwrap();
    }

    fn caller(&self) -> Caller<'static> {
        Caller {
            account_id: id(ACCOUNT),
            actor: "tests",
        }
    }

    /// Moves the clock `seconds` on.
    fn later(&self, seconds: i64) {
        self.clock
            .set(self.clock.now() + Duration::seconds(seconds));
    }

    /// Runs the SLA checks handed on and due now, and those their runs hand on and are due
    /// now, until none is left.
    async fn run_due(&self) -> usize {
        let mut ran = 0;
        loop {
            let due = self.process.handed.take_due(self.clock.now());
            if due.is_empty() {
                return ran;
            }
            for message in due {
                self.process
                    .worker
                    .run(&message.id, message.attempt)
                    .await
                    .unwrap();
                ran += 1;
            }
        }
    }

    /// The stored SLA check items.
    async fn sla_items(&self) -> usize {
        let far = self.clock.now() + Duration::days(30);
        self.store
            .overdue_due_items(far, 10_000)
            .await
            .unwrap()
            .iter()
            .filter(|i| i.kind() == DueKind::SlaCheck)
            .count()
    }

    /// Shows the router as changed by provisioning (archived, unpublished).
    async fn provisioned_again(
        &self, router: &str, change: impl FnOnce(&mut shared::model::Router),
    ) {
        let mut stored = self
            .store
            .get_router(id(ACCOUNT), id(router))
            .await
            .unwrap()
            .unwrap();
        change(&mut stored);
        self.faulty
            .faults
            .routers_as
            .lock()
            .unwrap()
            .insert(id::<RouterId>(router), stored);
    }
}

fn status(entry: &DispatchEntry) -> Option<SlaStatus> {
    entry.sla.map(|s| s.status)
}

shared::on_both_stores!(
    rotation_and_backup_assignments_start_a_check_and_nothing_else_does,
    an_unworked_record_goes_to_the_next_member_in_rotation_order,
    a_listed_value_of_the_worked_field_meets_the_check,
    a_changed_value_of_the_worked_field_meets_the_check,
    an_owner_written_since_cancels_the_check,
    an_archived_record_or_router_or_an_unpublished_router_cancels_the_check,
    a_check_whose_owner_alone_could_take_the_record_expires,
    the_backup_user_takes_the_record_when_nobody_else_can,
    the_event_of_a_reassignment_notifies_both_members_by_their_preferences,
    the_fifth_sla_reassignment_in_a_row_is_the_last_and_a_dispatch_starts_the_count_again,
    fifty_checks_due_at_once_are_each_reassigned_once_by_two_racing_workers,
    explain_shows_the_routers_sla_and_starts_no_check,
);

async fn rotation_and_backup_assignments_start_a_check_and_nothing_else_does(backend: Backend) {
    let fx = fixture(backend).await;
    let started = fx.clock.now();
    assert_eq!(fx.assigned(LISTED, &contact(0)).await, M1);
    let entry = &fx.history(&contact(0)).await[0];
    assert_eq!(entry.reason, Some(AssignmentReason::Rotation));
    assert_eq!(
        entry.sla,
        Some(SlaState::pending(started + Duration::minutes(1))),
        "due one (unscaled) minute after dispatched_at"
    );
    assert_eq!(fx.sla_items().await, 1);

    // Backup (nobody available but the backup user) starts one too.
    fx.assigned(LONE, &contact(1)).await;
    let entry = &fx.history(&contact(1)).await[0];
    assert_eq!(entry.reason, Some(AssignmentReason::Backup));
    assert_eq!(status(entry), Some(SlaStatus::Pending));
    assert_eq!(fx.sla_items().await, 2);

    // Account matching starts none; a router without an SLA starts none.
    fx.patch(&contact(2), json!({"email": "someone@matched.example"}))
        .await;
    assert_eq!(fx.assigned(MATCHING, &contact(2)).await, M3);
    let entry = &fx.history(&contact(2)).await[0];
    assert_eq!(entry.reason, Some(AssignmentReason::AccountMatching));
    assert_eq!(entry.sla, None);
    fx.assigned(PLAIN, &contact(3)).await;
    assert_eq!(fx.history(&contact(3)).await[0].sla, None);

    // A redelivered queue message commits nothing, so starts nothing; nor does explain.
    let queued = request(LISTED, &contact(4));
    for _ in 0..2 {
        fx.process
            .engine
            .dispatch(
                AccountContext::RouterOwner,
                &queued,
                Some(&MessageDeduplicationId::new("message-1")),
            )
            .await
            .unwrap();
    }
    assert_eq!(fx.history(&contact(4)).await.len(), 1);
    assert_eq!(
        fx.history(&contact(4)).await[0].source,
        DispatchSource::Queue
    );
    fx.process
        .engine
        .explain(id(ACCOUNT), &request(LISTED, &contact(5)))
        .await
        .unwrap();
    assert_eq!(fx.sla_items().await, 3, "contacts 0, 1 and 4");
}

async fn an_unworked_record_goes_to_the_next_member_in_rotation_order(backend: Backend) {
    let fx = fixture(backend).await;
    assert_eq!(fx.assigned(LISTED, &contact(0)).await, M1);
    fx.later(10);
    assert_eq!(fx.assigned(LISTED, &contact(1)).await, M2);
    // Contact 0 is worked; contact 1 (m2's, the last rotation turn) is not.
    fx.patch(&contact(0), json!({"lead_status": "connected"}))
        .await;
    let first = fx.history(&contact(1)).await[0].clone();
    fx.later(50);
    assert_eq!(fx.run_due().await, 1, "contact 0's check only");
    let history = fx.history(&contact(0)).await;
    assert_eq!(history.len(), 1);
    assert_eq!(status(&history[0]), Some(SlaStatus::Met));
    assert_eq!(fx.owner(&contact(1)).await.as_deref(), Some(M2));
    fx.later(10);
    assert_eq!(fx.run_due().await, 1, "contact 1's check");
    assert_eq!(fx.owner(&contact(1)).await.as_deref(), Some(M3));
    let history = fx.history(&contact(1)).await;
    assert_eq!(history.len(), 2, "{history:?}");
    let (reassigned, started) = (&history[0], &history[1]);
    assert_eq!(started.id, first.id);
    assert_eq!(status(started), Some(SlaStatus::Reassigned));
    assert_eq!(started.sla.unwrap().due_at, first.sla.unwrap().due_at);
    // m3, the member after m2 in rotation order (the first of the pool would be m1), although
    // the router may not overwrite.
    assert_eq!(reassigned.user.as_ref().map(Email::as_str), Some(M3));
    assert_eq!(reassigned.reason, Some(AssignmentReason::SlaReassignment));
    assert_eq!(reassigned.source, DispatchSource::Sla);
    assert_eq!(reassigned.previous_owner.as_deref(), Some(M2));
    assert_eq!(reassigned.message, "Owner assigned");
    assert_eq!(
        reassigned.sla,
        Some(SlaState::pending(fx.clock.now() + Duration::minutes(1))),
        "the reassignment starts a check of its own"
    );
    let record = fx.record(&contact(1)).await;
    assert_eq!(
        record.value("contact_owner_assigned_date"),
        Some(shared::timefmt::rfc3339_millis(fx.clock.now()).as_str())
    );
    // The rotation moved on: the next dispatch goes to m1.
    assert_eq!(fx.assigned(LISTED, &contact(2)).await, M1);
}

async fn a_listed_value_of_the_worked_field_meets_the_check(backend: Backend) {
    let fx = fixture(backend).await;
    for n in 0..3 {
        fx.assigned(LISTED, &contact(n)).await;
    }
    // Provisioned as a display name: stored as the option's internal name.
    fx.patch(&contact(0), json!({"lead_status": "In Progress"}))
        .await;
    fx.patch(&contact(1), json!({"lead_status": "CONNECTED"}))
        .await;
    // Another value is not worked.
    fx.patch(&contact(2), json!({"lead_status": "open"})).await;
    fx.later(60);
    assert_eq!(fx.run_due().await, 3);
    for (n, expected) in [
        (0, SlaStatus::Met),
        (1, SlaStatus::Met),
        (2, SlaStatus::Reassigned),
    ] {
        let history = fx.history(&contact(n)).await;
        let first = history.last().unwrap();
        assert_eq!(status(first), Some(expected), "contact {n}: {history:?}");
        assert_eq!(history.len(), if n == 2 { 2 } else { 1 });
    }
    assert_eq!(fx.sla_items().await, 1, "only the reassignment's new check");
}

async fn a_changed_value_of_the_worked_field_meets_the_check(backend: Backend) {
    let fx = fixture(backend).await;
    for n in 0..4 {
        fx.assigned(CHANGED, &contact(n)).await;
    }
    fx.patch(&contact(0), json!({"phone": "+1 555 0100"})).await; // changed: worked
    fx.patch(&contact(1), json!({"phone": "1"})).await; // written, same value: not worked
    fx.patch(&contact(2), json!({"phone": null})).await; // cleared: not worked
    fx.later(119);
    assert_eq!(fx.run_due().await, 0, "due after 2 minutes");
    fx.later(1);
    assert_eq!(fx.run_due().await, 4);
    let statuses: Vec<Option<SlaStatus>> = first_statuses(&fx, 4).await;
    assert_eq!(
        statuses,
        [
            Some(SlaStatus::Met),
            Some(SlaStatus::Reassigned),
            Some(SlaStatus::Reassigned),
            Some(SlaStatus::Reassigned)
        ]
    );
}

/// The status of the first entry of contacts `0..n`.
async fn first_statuses(fx: &Fixture, n: usize) -> Vec<Option<SlaStatus>> {
    let mut out = Vec::new();
    for i in 0..n {
        out.push(status(fx.history(&contact(i)).await.last().unwrap()));
    }
    out
}

async fn an_owner_written_since_cancels_the_check(backend: Backend) {
    let fx = fixture(backend).await;
    for n in 0..3 {
        fx.assigned(LISTED, &contact(n)).await;
    }
    // Another owner; the same owner written again (a manual assignment all the same).
    fx.patch(&contact(0), json!({"contact_owner": M3})).await;
    fx.later(1);
    fx.patch(&contact(1), json!({"contact_owner": M2})).await;
    // Another dispatch (a router that may overwrite) supersedes it too.
    fx.later(1);
    fx.assigned(CHANGED, &contact(2)).await;
    fx.later(60);
    fx.run_due().await;
    let statuses = first_statuses(&fx, 3).await;
    assert_eq!(statuses, [Some(SlaStatus::Cancelled); 3]);
    assert_eq!(fx.owner(&contact(0)).await.as_deref(), Some(M3));
    assert_eq!(fx.owner(&contact(1)).await.as_deref(), Some(M2));
    assert_eq!(fx.history(&contact(0)).await.len(), 1, "nothing appended");
    // The newer dispatch's own check stands.
    assert_eq!(
        status(&fx.history(&contact(2)).await[0]),
        Some(SlaStatus::Pending)
    );
}

async fn an_archived_record_or_router_or_an_unpublished_router_cancels_the_check(backend: Backend) {
    let fx = fixture(backend).await;
    for n in 0..3 {
        fx.assigned(LISTED, &contact(n)).await;
    }
    fx.archive(&contact(0)).await;
    // Archived but worked: `met` is tested first.
    fx.patch(&contact(1), json!({"lead_status": "connected"}))
        .await;
    fx.archive(&contact(1)).await;
    // The router archived (by provisioning) since.
    fx.provisioned_again(LISTED, |r| r.archived_at = Some(Utc::now()))
        .await;
    fx.later(60);
    assert_eq!(fx.run_due().await, 3);
    assert_eq!(
        first_statuses(&fx, 3).await,
        [
            Some(SlaStatus::Cancelled),
            Some(SlaStatus::Met),
            Some(SlaStatus::Cancelled)
        ]
    );
    assert_eq!(fx.owner(&contact(2)).await.as_deref(), Some(M3));
    assert_eq!(fx.history(&contact(2)).await.len(), 1);

    let fx2 = fixture(backend).await;
    fx2.assigned(LISTED, &contact(0)).await;
    fx2.provisioned_again(LISTED, |r| r.is_published = false)
        .await;
    fx2.later(60);
    fx2.run_due().await;
    assert_eq!(
        status(&fx2.history(&contact(0)).await[0]),
        Some(SlaStatus::Cancelled)
    );
    assert_eq!(fx2.sla_items().await, 0);
}

async fn a_check_whose_owner_alone_could_take_the_record_expires(backend: Backend) {
    let fx = fixture(backend).await;
    // m4 is out of office: the backup user m1 takes it.
    assert_eq!(fx.assigned(LONE, &contact(0)).await, M1);
    fx.later(60);
    assert_eq!(fx.run_due().await, 1);
    let history = fx.history(&contact(0)).await;
    assert_eq!(history.len(), 1, "nothing appended: {history:?}");
    assert_eq!(status(&history[0]), Some(SlaStatus::Expired));
    assert_eq!(fx.owner(&contact(0)).await.as_deref(), Some(M1));
    assert_eq!(fx.sla_items().await, 0);
}

async fn the_backup_user_takes_the_record_when_nobody_else_can(backend: Backend) {
    let fx = fixture(backend).await;
    // BACKED's pool is m1 and m4 (out of office), its backup m3: m1 gets it by rotation.
    assert_eq!(fx.assigned(BACKED, &contact(0)).await, M1);
    fx.later(60);
    assert_eq!(fx.run_due().await, 1);
    // The owner left out, nobody is available: the backup takes it, an SLA reassignment all
    // the same.
    let history = fx.history(&contact(0)).await;
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[0].user.as_ref().map(Email::as_str), Some(M3));
    assert_eq!(history[0].reason, Some(AssignmentReason::SlaReassignment));
    assert_eq!(status(&history[0]), Some(SlaStatus::Pending));
    assert_eq!(status(&history[1]), Some(SlaStatus::Reassigned));
}

async fn the_event_of_a_reassignment_notifies_both_members_by_their_preferences(backend: Backend) {
    let fx = fixture(backend).await;
    let webhooks = WebhookService::new(
        fx.store.clone(),
        fx.clock.clone(),
        Arc::new(LocalSealer::development()),
        OutboundPolicy::LOCAL,
        fx.process.worker.clone(),
    );
    let created = webhooks
        .create(
            shared::audit::Actor {
                account_id: id(ACCOUNT),
                sub: "test",
            },
            json!({"url": "https://hooks.example.com/routing", "events": ["assignment.created"]})
                .as_object()
                .unwrap(),
        )
        .await
        .unwrap();
    let subscription = serde_json::to_value(&created).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(fx.assigned(LISTED, &contact(0)).await, M1);
    fx.later(60);
    fx.run_due().await;
    let deliveries = fx
        .store
        .list_deliveries(id(&subscription), &PageRequest::first(10, false))
        .await
        .unwrap()
        .items;
    assert_eq!(deliveries.len(), 2, "the dispatch's and the reassignment's");
    let newest: Value = serde_json::from_str(&deliveries[0].payload).unwrap();
    let data = &newest["data"];
    assert_eq!(newest["type"], "assignment.created");
    assert_eq!(data["reason"], "sla_reassignment");
    assert_eq!(data["source"], "sla");
    assert_eq!(data["user"], M2);
    assert_eq!(data["previous_owner"], M1);
    assert_eq!(data["sla"]["status"], "pending");
    // m2 wants assignments; m1 wants to hear of reassignments.
    assert_eq!(
        data["notify"],
        json!({"user": true, "previous_owner": true})
    );
    let first: Value = serde_json::from_str(&deliveries[1].payload).unwrap();
    assert_eq!(
        first["data"]["notify"],
        json!({"user": true, "previous_owner": false})
    );
    // m2's capacity counter counted the reassignment.
    let m2 = fx
        .store
        .find_member_by_email(id(ACCOUNT), M2)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::to_value(&m2.capacity).unwrap()[0]["current_capacity"],
        1
    );
}

async fn the_fifth_sla_reassignment_in_a_row_is_the_last_and_a_dispatch_starts_the_count_again(
    backend: Backend,
) {
    let fx = fixture(backend).await;
    fx.assigned(CHANGED, &contact(0)).await;
    for _ in 0..6 {
        fx.later(120);
        fx.run_due().await;
    }
    let history = fx.history(&contact(0)).await;
    assert_eq!(history.len(), 6, "a dispatch and 5 SLA reassignments");
    let statuses: Vec<Option<SlaStatus>> = history.iter().rev().map(status).collect();
    assert_eq!(
        statuses,
        [
            Some(SlaStatus::Reassigned),
            Some(SlaStatus::Reassigned),
            Some(SlaStatus::Reassigned),
            Some(SlaStatus::Reassigned),
            Some(SlaStatus::Reassigned),
            None
        ]
    );
    assert!(history[..5]
        .iter()
        .all(|e| e.reason == Some(AssignmentReason::SlaReassignment)));
    let owners: Vec<&str> = history
        .iter()
        .rev()
        .filter_map(|e| e.user.as_ref().map(Email::as_str))
        .collect();
    assert_eq!(owners, [M1, M2, M3, M1, M2, M3], "rotation order each time");
    assert_eq!(fx.sla_items().await, 0);

    // A dispatch starts the count again.
    fx.assigned(CHANGED, &contact(0)).await;
    fx.later(120);
    fx.run_due().await;
    let history = fx.history(&contact(0)).await;
    assert_eq!(history.len(), 8);
    assert_eq!(history[0].source, DispatchSource::Sla);
    assert_eq!(status(&history[0]), Some(SlaStatus::Pending));
}

async fn fifty_checks_due_at_once_are_each_reassigned_once_by_two_racing_workers(backend: Backend) {
    const N: usize = 50;
    let fx = fixture_with(backend, N).await;
    let mut first_owner = Vec::new();
    for n in 0..N {
        first_owner.push(fx.assigned(LISTED, &contact(n)).await);
    }
    fx.later(60 + 3);
    // A second process on the same store; both sweep, then both try every check.
    let other = Process::new(fx.store.clone(), fx.clock.clone());
    let (a, b) = tokio::join!(fx.process.worker.sweep(1000), other.worker.sweep(1000));
    let (a, b) = (a.unwrap(), b.unwrap());
    // The sweeps race: an item the other sweep already re-armed is no longer overdue when this
    // one reads its shard, so neither is bound to find all 50, but together they find every one.
    assert!(a.found <= N && b.found <= N, "{a:?} {b:?}");
    assert!(
        a.found + b.found >= N,
        "every overdue item found: {a:?} {b:?}"
    );
    assert_eq!(a.handed_on + b.handed_on, N, "each item re-armed once");
    let mut ids: Vec<DueMessage> = fx.process.handed.take_due(fx.clock.now());
    ids.extend(other.handed.take_due(fx.clock.now()));
    let mut runs = tokio::task::JoinSet::new();
    for message in ids {
        for worker in [fx.process.worker.clone(), other.worker.clone()] {
            let message = message.clone();
            runs.spawn(async move { worker.run(&message.id, message.attempt).await });
        }
    }
    let mut ran = 0;
    while let Some(done) = runs.join_next().await {
        if let shared::due::RunOutcome::Ran(_) = done.unwrap().unwrap() {
            ran += 1;
        }
    }
    assert_eq!(ran, N, "each check ran once");
    for (n, first) in first_owner.iter().enumerate() {
        let history = fx.history(&contact(n)).await;
        assert_eq!(history.len(), 2, "contact {n}: {history:?}");
        assert_eq!(status(&history[1]), Some(SlaStatus::Reassigned));
        assert_eq!(history[0].source, DispatchSource::Sla);
        assert_eq!(history[0].previous_owner.as_ref(), Some(first));
        assert_ne!(
            history[0].user.as_ref().map(Email::as_str),
            Some(first.as_str())
        );
    }
    let router = fx
        .store
        .list_router_dispatches(id(ACCOUNT), id(LISTED), &PageRequest::first(100, false))
        .await
        .unwrap()
        .items;
    assert_eq!(
        router
            .iter()
            .filter(|e| e.reason == Some(AssignmentReason::SlaReassignment))
            .count(),
        N
    );
    assert_eq!(fx.sla_items().await, N, "one new check per reassignment");
}

async fn explain_shows_the_routers_sla_and_starts_no_check(backend: Backend) {
    let fx = fixture(backend).await;
    let (_, explanation) = fx
        .process
        .engine
        .explain(id(ACCOUNT), &request(LISTED, &contact(0)))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&explanation).unwrap()["sla"],
        json!({"minutes": 1, "worked_field": "lead_status", "worked_values": ["In Progress", "connected"]})
    );
    let (_, plain) = fx
        .process
        .engine
        .explain(id(ACCOUNT), &request(PLAIN, &contact(0)))
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(&plain).unwrap()["sla"], Value::Null);
    assert_eq!(fx.sla_items().await, 0);
    assert!(fx.history(&contact(0)).await.is_empty());
}
