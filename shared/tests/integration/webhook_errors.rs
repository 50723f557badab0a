//! What a failed webhook delivery tells the account (BEHAVIOR 13): its
//! `last_error` is a coarse class (`connection refused`, `timed out`, `TLS error`, `DNS error`,
//! `HTTP <status>`), never the connection, TLS or DNS details nor the receiver's body, which
//! would let an account probe hosts and ports through the service. On both adapters, every
//! attempt run by hand against local targets reached through a fixed resolver.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use crate::common;
use chrono::{DateTime, TimeZone, Utc};
use common::Backend;
use reqwest::dns::{Addrs, Resolving};
use serde_json::json;
use shared::clock::{Clock, FixedClock};
use shared::due::{DueMessage, DueSettings, DueWorker, Handoff};
use shared::error::BoxError;
use shared::model::due::{DueChanges, DueId, DueKind};
use shared::model::webhook::EventType;
use shared::outbound::{Lookup, OutboundClient, OutboundPolicy};
use shared::secrets::LocalSealer;
use shared::store::Store;
use shared::types::{AccountId, RouterId};
use shared::webhooks::{add_deliveries, RetrySchedule, WebhookSender, WebhookService};
use std::net::SocketAddr;
use std::sync::Arc;

shared::on_both_stores!(a_failed_delivery_names_a_coarse_class_only,);

/// Hand-offs dropped: every item is run by the test.
struct Dropped;

#[async_trait::async_trait]
impl Handoff for Dropped {
    async fn hand_off(&self, _message: &DueMessage) -> Result<(), BoxError> {
        Ok(())
    }
    fn grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs(2)
    }
    fn reach(&self) -> Option<std::time::Duration> {
        None
    }
}

/// Every name is 127.0.0.1 but `nowhere.test`, which does not resolve.
struct LocalNames;

impl Lookup for LocalNames {
    fn lookup(&self, host: String) -> Resolving {
        Box::pin(async move {
            if host == "nowhere.test" {
                return Err(Box::new(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "failed to lookup address information: Name or service not known \
                     (resolver 10.0.0.2 said so)",
                )) as BoxError);
            }
            let addrs = vec![SocketAddr::from(([127, 0, 0, 1], 0))];
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// A plain HTTP server on loopback answering every request with `status` and a body that
/// would tell things about the receiver, after `delay`; its port.
async fn receiver(status: u16, delay: std::time::Duration) -> u16 {
    let app = axum::Router::new().fallback(move || async move {
        tokio::time::sleep(delay).await;
        (
            axum::http::StatusCode::from_u16(status).unwrap(),
            "internal detail: db-7.corp.example:5432 is down",
        )
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    port
}

/// A loopback port nothing listens on.
async fn closed_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 26, 9, 0, 0).unwrap()
}

async fn a_failed_delivery_names_a_coarse_class_only(backend: Backend) {
    let store: Arc<dyn Store> = backend.store().await;
    let clock = Arc::new(FixedClock::new(base()));
    let worker = DueWorker::new(
        store.clone(),
        clock.clone(),
        DueSettings::default(),
        Arc::new(Dropped),
    );
    let sealer = Arc::new(LocalSealer::development());
    let http = OutboundClient::with_lookup(
        OutboundPolicy::LOCAL,
        std::time::Duration::from_millis(700),
        1024,
        Arc::new(LocalNames),
    )
    .unwrap();
    worker.register(WebhookSender::new(
        store.clone(),
        clock.clone(),
        http,
        sealer.clone(),
        RetrySchedule::parse("60").unwrap(),
    ));
    let service = WebhookService::new(
        store.clone(),
        clock.clone(),
        sealer,
        OutboundPolicy::LOCAL,
        worker.clone(),
    );
    let account = AccountId::from(uuid::Uuid::new_v4());
    let actor = shared::audit::Actor {
        account_id: account,
        sub: "test",
    };

    let failing = receiver(500, std::time::Duration::ZERO).await;
    let unavailable = receiver(503, std::time::Duration::ZERO).await;
    let slow = receiver(200, std::time::Duration::from_secs(5)).await;
    let plain = receiver(200, std::time::Duration::ZERO).await;
    let closed = closed_port().await;
    let cases = [
        (
            format!("http://refused.test:{closed}/hooks"),
            "connection refused",
        ),
        (format!("http://slow.test:{slow}/hooks"), "timed out"),
        // TLS spoken to a plain HTTP server.
        (format!("https://plain.test:{plain}/hooks"), "TLS error"),
        (format!("http://nowhere.test:{plain}/hooks"), "DNS error"),
        (format!("http://failing.test:{failing}/hooks"), "HTTP 500"),
        (
            format!("http://unavailable.test:{unavailable}/hooks"),
            "HTTP 503",
        ),
    ];
    for (url, class) in cases {
        let body = json!({"url": url, "events": ["dispatch.unassigned"]});
        let created = service
            .create(actor, body.as_object().unwrap())
            .await
            .unwrap();
        let subscription = store
            .get_webhook(account, created.id)
            .await
            .unwrap()
            .unwrap();
        let entry = shared::model::DispatchEntry::unassigned(
            account,
            RouterId::from(uuid::Uuid::new_v4()),
            shared::model::ObjectType::Contacts,
            "gone".into(),
            "Trigger did not match".into(),
            shared::model::DispatchSource::Api,
            clock.now(),
        );
        let mut changes = DueChanges::default();
        let schedule = |id, subject, at| worker.schedule(id, subject, at);
        add_deliveries(
            &mut changes,
            &[subscription],
            EventType::DispatchUnassigned,
            &entry,
            None,
            clock.now(),
            &schedule,
        )
        .unwrap();
        let delivery_id = changes.deliveries[0].id.clone();
        store
            .record_dispatch(&entry, None, None, None, &changes)
            .await
            .unwrap();
        worker
            .run(&DueId::new(DueKind::WebhookDelivery, &delivery_id), 0)
            .await
            .unwrap();
        let delivery = store
            .get_delivery(created.id, &delivery_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            delivery.last_error.as_deref(),
            Some(class),
            "{url}: {delivery:?}"
        );
    }
}
