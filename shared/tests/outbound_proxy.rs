//! The outbound guard ignores proxy variables (`docs/decisions.md`, "Outbound requests"): with
//! `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` set, a request still goes straight to the address
//! the guard resolved and checked; the "proxy" never hears of it (it would otherwise reach the
//! target on the guard's behalf, unchecked). A test binary of its own: it sets process-wide
//! variables.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use shared::outbound::{OutboundClient, OutboundPolicy};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A listener (a thread of its own) that answers every connection with a 200 and counts them.
fn listener() -> (String, Arc<AtomicUsize>) {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("127.0.0.1:{}", socket.local_addr().unwrap().port());
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = seen.clone();
    std::thread::spawn(move || {
        for stream in socket.incoming() {
            let Ok(mut stream) = stream else { return };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        }
    });
    (address, seen)
}

#[tokio::test]
async fn a_request_goes_to_the_checked_address_even_when_proxy_variables_are_set() {
    let (proxy, proxied) = listener();
    let (target, received) = listener();
    for variable in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        std::env::set_var(variable, format!("http://{proxy}"));
    }
    for variable in ["NO_PROXY", "no_proxy"] {
        std::env::remove_var(variable);
    }
    let client = OutboundClient::new(OutboundPolicy::LOCAL, Duration::from_secs(5), 1024).unwrap();
    let answer = client
        .send(
            reqwest::Method::POST,
            &format!("http://{target}/hooks"),
            reqwest::header::HeaderMap::new(),
            b"{}".to_vec(),
        )
        .await
        .unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::OK);
    assert_eq!(
        received.load(Ordering::SeqCst),
        1,
        "the target got the request"
    );
    assert_eq!(
        proxied.load(Ordering::SeqCst),
        0,
        "the proxy was never asked"
    );
}
