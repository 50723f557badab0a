//! Tables written by earlier releases work under the current code
//! (`infra/compat/README.md`; `docs/dynamodb.md`, "Tables written by earlier releases"): every
//! `infra/compat/release-*.json` is loaded unchanged into a fresh table on the emulator, and the
//! current application runs on it with no provisioning of its own (an empty seed), its clock an
//! hour after the release's last write (the lists of the last 30 days are relative to it). What
//! each fixture holds is read from the file, so each check applies to any release's table:
//!
//! - every router lists revision 1 holding its live configuration (a router stored before
//!   revisions existed has no revision item: it is stored when first wanted, by the revision
//!   list or by the first publish of a draft); a draft publishes as revision 2; revision 1
//!   restores and publishes as revision 3 with revision 1's configuration;
//! - records, members, routing history, stats and webhook subscriptions (with their
//!   deliveries) read as stored: every item of the file is in the answers;
//! - a dispatch on a router of the release assigns and joins the router's history.
//!
//! DynamoDB only: the fixtures are DynamoDB tables.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use chrono::{DateTime, Duration, Utc};
use common::*;
use serde_json::{json, Map, Value};
use shared::clock::FixedClock;
use shared::deps::Deps;
use shared::store::dynamodb::test_table::TestTable;
use shared::store::Store;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A seed that provisions nothing: what the table holds is only what the release wrote.
const EMPTY_SEED: &str = r#"{"accounts": []}"#;

/// The fixtures' API clients and their secrets (the demo seed's, kept by the releases).
const CLIENTS: [(&str, &str); 3] = [NORTHWIND, GLOBEX, INITECH];

/// One fixture file: its items in DynamoDB JSON.
struct Fixture {
    name: String,
    items: Vec<Value>,
}

impl Fixture {
    fn all() -> Vec<Fixture> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../compat");
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.starts_with("release-") && name.ends_with(".json")
            })
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no fixture in {dir}");
        files
            .into_iter()
            .map(|path| {
                let file: Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                let items = file["Items"].as_array().unwrap().clone();
                assert_eq!(file["Count"], items.len(), "{path:?}");
                Fixture {
                    name: path.file_name().unwrap().to_string_lossy().into_owned(),
                    items,
                }
            })
            .collect()
    }

    /// The items whose `SK` starts with `prefix` (`"ROUTER"` is the router item itself).
    fn kind<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.items.iter().filter(move |i| {
            let sk = s(i, "SK");
            sk == prefix || sk.starts_with(&format!("{prefix}#"))
        })
    }

    /// The latest instant the release wrote (`created_at`, `updated_at`, `dispatched_at`).
    fn last_write(&self) -> DateTime<Utc> {
        self.items
            .iter()
            .flat_map(|i| ["created_at", "updated_at", "dispatched_at"].map(|a| attr(i, a)))
            .flatten()
            .filter_map(|t| t.parse::<DateTime<Utc>>().ok())
            .max()
            .unwrap()
    }
}

/// The string attribute `name` of a DynamoDB JSON item, when present.
fn attr<'a>(item: &'a Value, name: &str) -> Option<&'a str> {
    item[name]["S"].as_str()
}

fn s<'a>(item: &'a Value, name: &str) -> &'a str {
    attr(item, name).unwrap_or_else(|| panic!("{name} of {item}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_release_fixture_reads_and_works_on_the_current_code() {
    for fixture in Fixture::all() {
        eprintln!("== {}", fixture.name);
        let table = TestTable::create().await.unwrap();
        table.load(&fixture.items).await.unwrap();
        let store: Arc<dyn Store> = Arc::new(table.store.clone());
        let clock = Arc::new(FixedClock::new(fixture.last_write() + Duration::hours(1)));
        let deps = local_server::with_local_keys(Deps::new(store), None)
            .unwrap()
            .with_outbound(shared::outbound::OutboundPolicy::LOCAL)
            .with_clock(clock);
        crate::common::cheap_secret_hashing();
        let built = local_server::build_app_with(
            local_server::AppConfig {
                seed: EMPTY_SEED.into(),
                signing_key_pem: None,
            },
            deps,
        )
        .await
        .unwrap();
        let app = TestApp {
            router: built.router,
        };
        let tokens = tokens(&TestApp::spawn().await, &fixture).await;
        reads_as_stored(&app, &fixture, &tokens).await;
        explain_of_revision_one(&app, &fixture, &tokens).await;
        routers_keep_revision_one(&app, &fixture, &tokens).await;
        dispatch_works(&app, &fixture, &tokens).await;
        table.delete().await;
    }
}

/// A token of every account of the fixture with a known client, issued now by an application
/// on the demo seed (same clients and accounts, the same development signing key): requests
/// are authenticated at the real time, whatever the application's clock says.
async fn tokens(app: &TestApp, fixture: &Fixture) -> BTreeMap<String, String> {
    let mut tokens = BTreeMap::new();
    for client in fixture.kind("CLIENT") {
        let Some(known) = CLIENTS.iter().find(|c| c.0 == s(client, "client_id")) else {
            continue;
        };
        let token = app.token(*known, ALL_SCOPES).await;
        tokens.insert(s(client, "account_id").to_string(), token);
    }
    assert!(tokens.len() >= 2, "{tokens:?}");
    tokens
}

/// Every page of a list (`limit=100`, following `next_after`).
async fn list_all(app: &TestApp, token: &str, uri: &str) -> Vec<Value> {
    let mut data = Vec::new();
    let sep = if uri.contains('?') { '&' } else { '?' };
    let mut next = format!("{uri}{sep}limit=100");
    loop {
        let a = app.call(Method::GET, &next, token, None).await;
        assert_eq!(a.status, StatusCode::OK, "{next}: {}", a.body);
        data.extend(a.body["data"].as_array().unwrap().iter().cloned());
        match a.body["pagination"]["next_after"].as_str() {
            Some(after) => next = format!("{uri}{sep}limit=100&after={after}"),
            None => return data,
        }
    }
}

fn ids_of(list: &[Value]) -> BTreeSet<String> {
    list.iter()
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect()
}

/// Records, members, history, stats and subscriptions: every stored item is in the answers.
async fn reads_as_stored(app: &TestApp, f: &Fixture, tokens: &BTreeMap<String, String>) {
    for (account, token) in tokens {
        let mine = |i: &&Value| attr(i, "account_id") == Some(account.as_str());
        // Records, by type; archived ones only with `archived=true`.
        for object_type in ["contacts", "companies", "deals", "tickets"] {
            let stored: Vec<&Value> = f
                .kind("RECORD")
                .filter(mine)
                .filter(|r| s(r, "object_type") == object_type)
                .collect();
            let active: BTreeSet<String> = stored
                .iter()
                .filter(|r| r.get("archived_at").is_none())
                .map(|r| s(r, "id").to_string())
                .collect();
            let all: BTreeSet<String> = stored.iter().map(|r| s(r, "id").to_string()).collect();
            let listed = list_all(app, token, &format!("/{object_type}")).await;
            assert_eq!(ids_of(&listed), active, "{object_type} of {account}");
            let archived_too = list_all(app, token, &format!("/{object_type}?archived=true")).await;
            assert_eq!(ids_of(&archived_too), all, "{object_type} of {account}");
            for id in &active {
                let a = app
                    .call(Method::GET, &format!("/{object_type}/{id}"), token, None)
                    .await;
                assert_eq!(a.status, StatusCode::OK, "{object_type}/{id}: {}", a.body);
            }
        }
        // Members, with their e-mails.
        let members: BTreeMap<String, String> = f
            .kind("MEMBER")
            .filter(mine)
            .map(|m| (s(m, "id").to_string(), s(m, "email").to_string()))
            .collect();
        let listed = list_all(app, token, "/users?archived=true").await;
        let read: BTreeMap<String, String> = listed
            .iter()
            .map(|m| {
                (
                    m["id"].as_str().unwrap().to_string(),
                    m["email"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(read, members, "members of {account}");
        // Subscriptions and their deliveries.
        let subscriptions: Vec<&Value> = f.kind("WEBHOOK").filter(mine).collect();
        let listed = list_all(app, token, "/webhooks").await;
        assert_eq!(
            ids_of(&listed),
            subscriptions
                .iter()
                .map(|w| s(w, "id").to_string())
                .collect(),
            "subscriptions of {account}"
        );
        for w in &subscriptions {
            let id = s(w, "id");
            let deliveries: BTreeSet<String> = f
                .kind("DELIVERY")
                .filter(|d| s(d, "subscription_id") == id)
                .map(|d| s(d, "id").to_string())
                .collect();
            let listed = list_all(app, token, &format!("/webhooks/{id}/deliveries")).await;
            assert_eq!(ids_of(&listed), deliveries, "deliveries of {id}");
        }
        // Each router's history, and its stats over the release's month.
        let month = f.last_write().format("%Y-%m-01T00:00:00Z").to_string();
        for router in f.kind("ROUTER").filter(mine) {
            let id = s(router, "id");
            let entries: Vec<&Value> = f
                .kind("DISPATCH")
                .filter(|d| attr(d, "router_id") == Some(id))
                .collect();
            let listed = list_all(app, token, &format!("/routers/{id}/dispatches")).await;
            assert_eq!(
                ids_of(&listed),
                entries.iter().map(|e| s(e, "id").to_string()).collect(),
                "history of router {id}"
            );
            let stats = app
                .call(
                    Method::GET,
                    &format!("/routers/{id}/stats?from={month}"),
                    token,
                    None,
                )
                .await;
            assert_eq!(
                stats.status,
                StatusCode::OK,
                "stats of {id}: {}",
                stats.body
            );
            // Every assignment of the release is counted once in its day's tallies.
            let counted: u64 = f
                .kind("TALLY")
                .filter(|t| attr(t, "router_id").is_none_or(|r| r == id))
                .filter(|t| s(t, "PK").ends_with(id) && s(t, "bucket").starts_with("D#"))
                .flat_map(|t| {
                    t.as_object()
                        .unwrap()
                        .iter()
                        .filter(|(k, _)| !matches!(k.as_str(), "expires_at"))
                        .filter_map(|(_, v)| v["N"].as_str()?.parse::<u64>().ok())
                })
                .sum();
            assert_eq!(
                stats.body["total"], counted,
                "stats of {id}: {}",
                stats.body
            );
        }
    }
}

/// An explain of revision 1 of each router with a record of its type, before anything stored
/// the router's revision-1 item: it evaluates the live configuration (no 404).
async fn explain_of_revision_one(app: &TestApp, f: &Fixture, tokens: &BTreeMap<String, String>) {
    let mut explained = 0;
    for router in f.kind("ROUTER").filter(|r| r.get("archived_at").is_none()) {
        let Some(token) = tokens.get(s(router, "account_id")) else {
            continue;
        };
        let Some(record) = f.kind("RECORD").find(|r| {
            attr(r, "account_id") == attr(router, "account_id")
                && attr(r, "object_type") == attr(router, "object_type")
                && r.get("archived_at").is_none()
        }) else {
            continue;
        };
        let a = app
            .call(
                Method::POST,
                "/dispatch/router/explain",
                token,
                Some(
                    json!({"router_id": s(router, "id"), "object_id": s(record, "id"),
                            "revision": 1}),
                ),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}: {}", s(router, "id"), a.body);
        explained += 1;
    }
    assert!(explained > 0);
}

/// The body of a draft `PUT` from a router view and its stored item: the view's configuration
/// keys (settings without their unset, `null`, keys), the users with their weights as stored
/// (a router view shows none).
fn draft_body(view: &Value, item: &Value, name: &str) -> Value {
    let users: Vec<Value> = item["users"]["L"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            let email = u["M"]["email"]["S"].clone();
            match u["M"]["percentage"]["N"].as_str() {
                Some(n) => json!({"email": email, "percentage": n.parse::<f64>().unwrap()}),
                None => json!({"email": email}),
            }
        })
        .collect();
    let settings = match &view["settings"] {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Map<_, _>>(),
        ),
        other => other.clone(),
    };
    json!({
        "name": name,
        "has_integration": view["has_integration"],
        "settings": settings,
        "users": users,
        "teams": view["teams"],
    })
}

/// The configuration a router or revision view shows: users by e-mail (a revision shows each
/// user's `percentage` too, a router view none).
fn configuration(view: &Value) -> Value {
    let users: Vec<Value> = view["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            let mut u = u.as_object().unwrap().clone();
            u.remove("percentage");
            Value::Object(u)
        })
        .collect();
    json!([
        view["name"],
        view["has_integration"],
        view["settings"],
        users,
        view["teams"]
    ])
}

fn etag(a: &Answer) -> String {
    a.headers
        .get("etag")
        .expect("an ETag header")
        .to_str()
        .unwrap()
        .to_string()
}

/// Publishes the draft answered by `put` (200 asserted); the router as answered.
async fn publish(app: &TestApp, token: &str, id: &str, put: &Answer) -> Value {
    assert_eq!(put.status, StatusCode::OK, "draft of {id}: {}", put.body);
    let published = app
        .with_headers(
            Method::POST,
            &format!("/routers/{id}/publish"),
            token,
            &[("if-match", &etag(put))],
            None,
        )
        .await;
    assert_eq!(published.status, StatusCode::OK, "{}", published.body);
    published.body
}

async fn revision_numbers(app: &TestApp, token: &str, id: &str) -> Vec<u64> {
    list_all(app, token, &format!("/routers/{id}/revisions"))
        .await
        .iter()
        .map(|r| r["revision"].as_u64().unwrap())
        .collect()
}

/// Every router lists revision 1 with its configuration; a draft publishes as revision 2;
/// revision 1 restores. Half the routers are mended by the revision list, half by their first
/// publish (nothing read before it).
async fn routers_keep_revision_one(app: &TestApp, f: &Fixture, tokens: &BTreeMap<String, String>) {
    let mut by_publish = false;
    for router in f.kind("ROUTER") {
        let Some(token) = tokens.get(s(router, "account_id")) else {
            continue;
        };
        let id = s(router, "id");
        let archived = router.get("archived_at").is_some();
        if archived {
            // Read-only now: its revision 1 is listed, with its configuration's name.
            let revisions = list_all(app, token, &format!("/routers/{id}/revisions")).await;
            assert_eq!(revisions.len(), 1, "{id}: {revisions:?}");
            assert_eq!(revisions[0]["revision"], 1);
            assert_eq!(revisions[0]["name"].as_str(), attr(router, "name"));
            continue;
        }
        let live = app
            .call(Method::GET, &format!("/routers/{id}"), token, None)
            .await;
        assert_eq!(live.status, StatusCode::OK, "{id}: {}", live.body);
        let live = live.body;
        assert_eq!(live["revision"], 1, "{live}");
        let name = live["name"].as_str().unwrap().to_string();
        by_publish = !by_publish;
        if !by_publish {
            let one = app
                .call(
                    Method::GET,
                    &format!("/routers/{id}/revisions/1"),
                    token,
                    None,
                )
                .await;
            assert_eq!(one.status, StatusCode::OK, "{id}: {}", one.body);
            assert_eq!(configuration(&one.body), configuration(&live), "{id}");
            assert_eq!(one.body["published_by"], "provisioning");
            assert_eq!(revision_numbers(app, token, id).await, [1], "{id}");
        }
        // A changed draft publishes as revision 2.
        let put = app
            .call(
                Method::PUT,
                &format!("/routers/{id}/draft"),
                token,
                Some(draft_body(&live, router, &format!("{name} (v2)"))),
            )
            .await;
        let two = publish(app, token, id, &put).await;
        assert_eq!(two["revision"], 2, "{two}");
        assert_eq!(two["name"], format!("{name} (v2)"));
        assert_eq!(revision_numbers(app, token, id).await, [2, 1], "{id}");
        let one = app
            .call(
                Method::GET,
                &format!("/routers/{id}/revisions/1"),
                token,
                None,
            )
            .await;
        assert_eq!(one.status, StatusCode::OK, "{id}: {}", one.body);
        assert_eq!(configuration(&one.body), configuration(&live), "{id}");
        // Revision 1 restores, and publishes as revision 3 with its configuration.
        let restored = app
            .call(
                Method::POST,
                &format!("/routers/{id}/revisions/1/restore"),
                token,
                None,
            )
            .await;
        assert_eq!(restored.body["based_on_revision"], 1, "{}", restored.body);
        let three = publish(app, token, id, &restored).await;
        assert_eq!(three["revision"], 3);
        assert_eq!(configuration(&three), configuration(&live), "{id}");
        // A publish publishes (the release's unpublished router too).
        assert_eq!(three["is_published"], true, "{id}");
    }
}

/// A new record dispatched on each published contacts router of the release is assigned, and
/// the entry joins the router's history.
async fn dispatch_works(app: &TestApp, f: &Fixture, tokens: &BTreeMap<String, String>) {
    let mut assigned = 0;
    for router in f.kind("ROUTER") {
        let Some(token) = tokens.get(s(router, "account_id")) else {
            continue;
        };
        let published = router["is_published"]["BOOL"].as_bool() == Some(true);
        if router.get("archived_at").is_some()
            || !published
            || s(router, "object_type") != "contacts"
        {
            continue;
        }
        let id = s(router, "id");
        let before = list_all(app, token, &format!("/routers/{id}/dispatches")).await;
        let created = app
            .call(
                Method::POST,
                "/contacts",
                token,
                Some(json!({"fields": {"first_name": "Upgraded", "last_name": id}})),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        let record = created.body["id"].as_str().unwrap();
        let a = app
            .call(
                Method::POST,
                "/dispatch/router",
                token,
                Some(json!({"router_id": id, "object_id": record})),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "dispatch on {id}: {}", a.body);
        eprintln!("dispatch on {id}: {}", a.body);
        if a.body["success"] == true {
            assigned += 1;
        }
        let after = list_all(app, token, &format!("/routers/{id}/dispatches")).await;
        assert_eq!(after.len(), before.len() + 1, "history of {id}");
    }
    assert!(assigned > 0, "no dispatch assigned");
}
