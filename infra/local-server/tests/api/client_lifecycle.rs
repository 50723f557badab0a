//! A leaked client can be re-keyed and shut out (BEHAVIOR 1, the seed
//! format's `clients[].disabled`): provisioning again with a changed `client_secret` replaces
//! the stored hash, `disabled: true` makes the client authenticate no more (401
//! `invalid_client`, as an unknown client), and the tokens issued before either change are
//! refused (401) within 60 s on an instance that has seen them, at once on a fresh one.
//! Provisioning the same file again changes nothing. On both stores.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;

use axum::http::{Method, StatusCode};
use common::{TestApp, ALL_SCOPES, NORTHWIND, NORTHWIND_READONLY};
use local_server::{build_app_with, with_local_keys, AppConfig, DEMO_SEED};
use shared::clock::{Clock, FixedClock};
use shared::deps::Deps;
use shared::secrets::LocalSealer;
use shared::store::Store;
use std::sync::Arc;

shared::on_both_stores!(
    store:
    a_rekeyed_or_disabled_client_and_its_earlier_tokens_are_refused,
);

/// The secret Northwind's client gets when it is re-keyed.
const REKEYED: &str = "northwind-rotated-secret-2026";

/// An instance of the API over `store` provisioning the demo seed, its clock fixed at now.
async fn instance(store: Arc<dyn Store>) -> (TestApp, Arc<FixedClock>) {
    instance_with_seed(store, DEMO_SEED).await
}

/// The demo seed with Northwind's client re-keyed and its read-only client disabled.
fn changed_seed() -> String {
    let mut seed: serde_json::Value = serde_json::from_str(DEMO_SEED).unwrap();
    let clients = seed["accounts"][0]["clients"].as_array_mut().unwrap();
    for client in clients {
        match client["client_id"].as_str().unwrap() {
            "northwind-integration" => client["client_secret"] = REKEYED.into(),
            "northwind-readonly" => client["disabled"] = true.into(),
            _ => {}
        }
    }
    seed.to_string()
}

async fn provision(store: &Arc<dyn Store>, seed: &str) -> shared::store::ProvisionReport {
    let plan = shared::seed::load(
        seed,
        chrono::Utc::now(),
        shared::outbound::OutboundPolicy::LOCAL,
    )
    .unwrap();
    shared::seed::provision(store.as_ref(), &LocalSealer::development(), plan)
        .await
        .unwrap()
}

async fn status(app: &TestApp, token: &str) -> StatusCode {
    app.call(Method::GET, "/contacts", token, None).await.status
}

/// The token endpoint's status and `error` for `client`.
async fn token_status(app: &TestApp, client: (&str, &str)) -> (StatusCode, serde_json::Value) {
    let form = format!(
        "grant_type=client_credentials&client_id={}&client_secret={}&scope=service-api%2Fread",
        client.0, client.1
    );
    let answer = app
        .raw(
            Method::POST,
            "/oauth2/token",
            &[("content-type", "application/x-www-form-urlencoded")],
            form.into_bytes(),
        )
        .await;
    (answer.status, answer.body["error"].clone())
}

async fn a_rekeyed_or_disabled_client_and_its_earlier_tokens_are_refused(store: Arc<dyn Store>) {
    let (app, clock) = instance(store.clone()).await;
    let before = app.token(NORTHWIND, ALL_SCOPES).await;
    let readonly_before = app.token(NORTHWIND_READONLY, "service-api/read").await;
    assert_eq!(status(&app, &before).await, StatusCode::OK);
    assert_eq!(status(&app, &readonly_before).await, StatusCode::OK);

    let report = provision(&store, &changed_seed()).await;
    assert_eq!(report.inserted, 0, "{report:?}");

    // The old secret no longer authenticates, the new one does; the disabled client is unknown.
    assert_eq!(
        token_status(&app, NORTHWIND).await,
        (StatusCode::UNAUTHORIZED, "invalid_client".into())
    );
    let after = app.token((NORTHWIND.0, REKEYED), ALL_SCOPES).await;
    assert_eq!(
        token_status(&app, NORTHWIND_READONLY).await,
        (StatusCode::UNAUTHORIZED, "invalid_client".into())
    );

    // Within 60 s the instance that saw the earlier tokens refuses them.
    clock.set(clock.now() + chrono::Duration::seconds(60));
    assert_eq!(status(&app, &before).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        status(&app, &readonly_before).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(status(&app, &after).await, StatusCode::OK);

    // A fresh instance (provisioning the changed file at its start: the file is what the
    // clients are kept current with) refuses them at once.
    let (fresh, _) = instance_with_seed(store.clone(), &changed_seed()).await;
    assert_eq!(status(&fresh, &before).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        status(&fresh, &readonly_before).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(status(&fresh, &after).await, StatusCode::OK);

    // The same file again changes nothing: the token issued after the change stays good.
    let again = provision(&store, &changed_seed()).await;
    assert_eq!(again.inserted, 0, "{again:?}");
    clock.set(clock.now() + chrono::Duration::seconds(60));
    assert_eq!(status(&app, &after).await, StatusCode::OK);
    assert_eq!(status(&fresh, &after).await, StatusCode::OK);
}

/// [`instance`] provisioning `seed` instead of the demo seed.
async fn instance_with_seed(store: Arc<dyn Store>, seed: &str) -> (TestApp, Arc<FixedClock>) {
    common::cheap_secret_hashing();
    let clock = Arc::new(FixedClock::new(chrono::Utc::now()));
    let deps = with_local_keys(Deps::new(store), None)
        .unwrap()
        .with_outbound(shared::outbound::OutboundPolicy::LOCAL)
        .with_clock(clock.clone());
    let built = build_app_with(
        AppConfig {
            seed: seed.to_string(),
            signing_key_pem: None,
        },
        deps,
    )
    .await
    .unwrap();
    (
        TestApp {
            router: built.router,
        },
        clock,
    )
}
