//! The outbound guard at request time (`docs/decisions.md`, "Outbound requests"): names resolved to
//! forbidden addresses are refused before any connection, at every request (DNS rebinding),
//! redirects are answers and never followed, answers are read at most up to the cap, and the CRM
//! client reports a refusal as a final `crm_error`.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use reqwest::dns::{Addrs, Resolving};
use reqwest::header::HeaderMap;
use shared::crm::{CrmClient, HttpCrm, Owner, OwnerUpdate};
use shared::model::account::{CrmCredentials, CrmSecret};
use shared::model::ObjectType;
use shared::outbound::{Lookup, OutboundClient, OutboundError, OutboundPolicy};
use shared::secrets::OpenCrmConnection;
use shared::store::memory::MemoryStore;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A resolver with fixed answers the test can change.
#[derive(Default)]
struct FixedLookup(Mutex<Vec<IpAddr>>);

impl FixedLookup {
    fn answer(&self, ips: &[&str]) {
        *self.0.lock().unwrap() = ips.iter().map(|ip| ip.parse().unwrap()).collect();
    }
}

impl Lookup for FixedLookup {
    fn lookup(&self, _host: String) -> Resolving {
        let addrs: Vec<SocketAddr> = self
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|ip| SocketAddr::new(*ip, 0))
            .collect();
        Box::pin(async move { Ok(Box::new(addrs.into_iter()) as Addrs) })
    }
}

/// A local server counting its requests: `/ok` (200 and a 10 KiB body), `/redirect` (302 to
/// `/ok`), `/slow` (answers after 2 s).
async fn server() -> (u16, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = |hits: Arc<AtomicUsize>| {
        move || {
            hits.fetch_add(1, Ordering::SeqCst);
            async {}
        }
    };
    let (a, b, c) = (
        counted(hits.clone()),
        counted(hits.clone()),
        counted(hits.clone()),
    );
    let app = axum::Router::new()
        .route(
            "/ok",
            get(move || {
                let seen = a();
                async move {
                    seen.await;
                    "x".repeat(10 * 1024)
                }
            }),
        )
        .route(
            "/redirect",
            get(move || {
                let seen = b();
                async move {
                    seen.await;
                    (StatusCode::FOUND, [(header::LOCATION, "/ok")]).into_response()
                }
            }),
        )
        .route(
            "/slow",
            get(move || {
                let seen = c();
                async move {
                    seen.await;
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    "late"
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, hits)
}

fn client(policy: OutboundPolicy, lookup: Arc<FixedLookup>) -> OutboundClient {
    OutboundClient::with_lookup(policy, Duration::from_secs(1), 1024, lookup).unwrap()
}

async fn get_url(client: &OutboundClient, url: &str) -> Result<(u16, usize), OutboundError> {
    let answer = client
        .send(reqwest::Method::GET, url, HeaderMap::new(), Vec::new())
        .await?;
    let status = answer.status().as_u16();
    Ok((status, answer.body().await?.len()))
}

#[tokio::test]
async fn a_name_resolving_to_a_private_or_metadata_address_is_refused_before_any_connection() {
    let lookup = Arc::new(FixedLookup::default());
    let strict = client(OutboundPolicy::STRICT, lookup.clone());
    for (ip, why) in [
        ("10.0.0.5", "private"),
        ("169.254.169.254", "link-local"),
        ("127.0.0.1", "loopback"),
        ("::ffff:192.168.0.1", "private"),
    ] {
        lookup.answer(&[ip]);
        let refused = get_url(&strict, "https://internal.example/").await;
        assert!(
            matches!(&refused, Err(OutboundError::Refused(m)) if m.contains(why)),
            "{ip}: {refused:?}"
        );
    }
    // One forbidden address among public ones is enough to refuse the name.
    lookup.answer(&["93.184.216.34", "10.1.1.1"]);
    let refused = get_url(&strict, "https://mixed.example/").await;
    assert!(
        matches!(refused, Err(OutboundError::Refused(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn every_request_resolves_again_so_a_name_rebound_to_a_private_address_is_refused() {
    let (port, hits) = server().await;
    let lookup = Arc::new(FixedLookup::default());
    let local = client(OutboundPolicy::LOCAL, lookup.clone());
    let url = format!("http://receiver.example:{port}/ok");
    lookup.answer(&["127.0.0.1"]);
    assert_eq!(get_url(&local, &url).await.unwrap().0, 200);
    // The name now points inside the network: refused, nothing sent.
    lookup.answer(&["10.0.0.7"]);
    let rebound = get_url(&local, &url).await;
    assert!(
        matches!(rebound, Err(OutboundError::Refused(_))),
        "{rebound:?}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn redirects_are_answers_answers_are_capped_and_slow_ones_time_out() {
    let (port, hits) = server().await;
    let local = client(OutboundPolicy::LOCAL, Arc::new(FixedLookup::default()));
    let redirect = get_url(&local, &format!("http://127.0.0.1:{port}/redirect"))
        .await
        .unwrap();
    assert_eq!(redirect.0, 302);
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "the redirect was not followed"
    );
    let capped = get_url(&local, &format!("http://127.0.0.1:{port}/ok"))
        .await
        .unwrap();
    assert_eq!(capped, (200, 1024), "at most max_body bytes are read");
    let slow = get_url(&local, &format!("http://127.0.0.1:{port}/slow")).await;
    assert!(matches!(slow, Err(OutboundError::TimedOut)), "{slow:?}");
    // The strict policy refuses the same server: plain http, loopback.
    let strict = client(OutboundPolicy::STRICT, Arc::new(FixedLookup::default()));
    let refused = get_url(&strict, &format!("http://127.0.0.1:{port}/ok")).await;
    assert!(
        matches!(refused, Err(OutboundError::Refused(_))),
        "{refused:?}"
    );
}

/// A deadline far enough for any attempt here.
fn later() -> std::time::Instant {
    std::time::Instant::now() + Duration::from_secs(30)
}

/// An owner update of contact 1 to owner 2 through a private app's `token`.
fn update(base_url: &str, token: &str) -> OwnerUpdate {
    OwnerUpdate {
        connection: OpenCrmConnection {
            account_id: uuid::Uuid::nil().into(),
            provider: shared::model::account::CrmProvider::HubSpot,
            base_url: base_url.into(),
            credentials: CrmCredentials::PrivateApp(CrmSecret::new(token)),
            options: Default::default(),
        },
        object_type: ObjectType::Contacts,
        record_external_id: "1".into(),
        owner: Owner::Id("2".into()),
    }
}

#[tokio::test]
async fn the_crm_client_reports_a_refused_base_url_as_a_final_error_without_a_request() {
    let (port, hits) = server().await;
    let crm = HttpCrm::new(OutboundPolicy::STRICT, Arc::new(MemoryStore::new())).unwrap();
    let update = update(&format!("https://127.0.0.1:{port}"), "secret-token");
    let failure = crm.set_owner(&update, later()).await.unwrap_err();
    assert_eq!(
        failure.error,
        "CRM request failed: base_url must not point to a loopback address"
    );
    assert!(failure.is_final(), "a refusal does not pass by itself");
    assert_eq!(failure.updates, 0, "nothing was sent");
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

/// A 2xx answer is a success whatever its body; the body is never read (a
/// receiver that sends its headers and then never finishes its body does not time the sync out).
#[tokio::test]
async fn a_2xx_answer_is_success_without_reading_its_body() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = [0u8; 4096];
        let _ = socket.read(&mut request).await;
        // Headers promise 100,000 bytes; 3 come, the rest never does.
        let head = "HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\nabc";
        socket.write_all(head.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    let crm = HttpCrm::with_timeout(
        OutboundPolicy::LOCAL,
        Duration::from_millis(800),
        Arc::new(MemoryStore::new()),
    )
    .unwrap();
    let update = update(&format!("http://127.0.0.1:{port}"), "t");
    assert!(crm.set_owner(&update, later()).await.is_ok());
}

/// A hand-off that keeps the messages for the test to deliver.
#[derive(Default)]
struct Kept(Mutex<Vec<shared::due::DueMessage>>);

#[async_trait::async_trait]
impl shared::due::Handoff for Kept {
    async fn hand_off(
        &self, message: &shared::due::DueMessage,
    ) -> Result<(), shared::error::BoxError> {
        self.0.lock().unwrap().push(message.clone());
        Ok(())
    }
    fn grace(&self) -> Duration {
        Duration::from_secs(60)
    }
    fn reach(&self) -> Option<Duration> {
        None
    }
}

/// BEHAVIOR 13: every webhook delivery goes through the guard. A subscription whose host was
/// public when it was created and now resolves to the instance metadata address is refused at
/// delivery time, before any connection: the delivery records the refusal and is retried later.
#[tokio::test]
async fn a_webhook_delivery_to_a_host_now_resolving_to_metadata_is_refused() {
    use serde_json::json;
    use shared::clock::SystemClock;
    use shared::dispatch::{AccountContext, DispatchEngine, DispatchRequest};
    use shared::due::{DueSettings, DueWorker};
    use shared::secrets::LocalSealer;
    use shared::store::memory::MemoryStore;
    use shared::store::Store;
    use shared::webhooks::{RetrySchedule, WebhookSender, WebhookService};

    const ACCOUNT: &str = "7d1e2f30-4a5b-4c6d-8e7f-901a2b3c4d50";
    const ROUTER: &str = "7d1e2f30-4a5b-4c6d-8e7f-901a2b3c4d51";
    const CONTACT: &str = "01936b2a-7c00-7a00-8000-00000000b001";
    let seed = json!({"accounts": [{
        "id": ACCOUNT, "name": "Guarded", "active": true,
        "users": [{"id": "7d1e2f30-4a5b-4c6d-8e7f-901a2b3c4d60", "email": "a@guarded.example"}],
        "routers": [{
            "id": ROUTER, "name": "Every lead", "object_type": "contacts", "is_published": true,
            "settings": {"owner_field": "contact_owner", "distribution_model": "round robin", "overwrite": true},
            "users": [{"email": "a@guarded.example"}], "teams": []
        }],
        "records": {"contacts": [{"id": CONTACT, "fields": {"email": "lead@prospect.example"}}]}
    }]});
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let plan = shared::seed::load(
        &seed.to_string(),
        chrono::Utc::now(),
        OutboundPolicy::STRICT,
    )
    .unwrap();
    shared::seed::provision(store.as_ref(), &LocalSealer::development(), plan)
        .await
        .unwrap();
    let clock = Arc::new(SystemClock);
    let kept = Arc::new(Kept::default());
    let due = DueWorker::new(
        store.clone(),
        clock.clone(),
        DueSettings::default(),
        kept.clone(),
    );
    let lookup = Arc::new(FixedLookup::default());
    lookup.answer(&["93.184.216.34"]);
    let sealer = Arc::new(LocalSealer::development());
    due.register(WebhookSender::new(
        store.clone(),
        clock.clone(),
        client(OutboundPolicy::STRICT, lookup.clone()),
        sealer.clone(),
        RetrySchedule::parse("60").unwrap(),
    ));
    let account: shared::types::AccountId = ACCOUNT.parse::<uuid::Uuid>().unwrap().into();
    let service = WebhookService::new(
        store.clone(),
        clock.clone(),
        sealer,
        OutboundPolicy::STRICT,
        due.clone(),
    );
    let body =
        json!({"url": "https://hooks.rebinding.example/routing", "events": ["assignment.created"]});
    let subscription = service
        .create(
            shared::audit::Actor {
                account_id: account,
                sub: "test",
            },
            body.as_object().unwrap(),
        )
        .await
        .unwrap();
    // Now the name points at the instance metadata endpoint.
    lookup.answer(&["169.254.169.254"]);
    let engine = DispatchEngine::new(
        store.clone(),
        clock,
        Arc::new(shared::fields::CatalogueCache::default()),
    )
    .with_due(due.clone());
    let request = DispatchRequest {
        router_id: ROUTER.into(),
        object_id: CONTACT.into(),
        account_id: None,
    };
    engine
        .dispatch(AccountContext::Token(account), &request, None)
        .await
        .unwrap();
    let handed: Vec<_> = std::mem::take(&mut *kept.0.lock().unwrap());
    assert_eq!(handed.len(), 1, "one delivery: {handed:?}");
    due.receive(&handed[0]).await.unwrap();
    let page = shared::page::cursor::ListRequest::default();
    let log = service
        .deliveries(
            account,
            Some(subscription.id),
            &page,
            &shared::page::cursor::CursorKey::random(),
        )
        .await
        .unwrap();
    let delivery = serde_json::to_value(&log.data[0]).unwrap();
    assert_eq!(delivery["status"], "retrying", "{delivery}");
    assert_eq!(delivery["last_status_code"], serde_json::Value::Null);
    let error = delivery["last_error"].as_str().unwrap();
    assert!(
        error.contains("refused") && error.contains("link-local"),
        "{error}"
    );
}
