//! A long-running process or a large batch records thousands of values between two flushes:
//! recording must never block, and the next flush writes every value (a test binary of its own:
//! the recorder is process-wide). Seen failing before the fix: schemathesis' requests hung
//! the local server after 100 requests on one route, when the EMF collector of the time blocked
//! beyond 100 values of a histogram.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::sync::mpsc;
use std::time::Duration;

#[test]
fn recording_thousands_of_values_between_flushes_never_blocks_and_the_flush_writes_them_all() {
    assert!(shared::telemetry::install("test"));
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..5_000 {
            shared::telemetry::request("/contacts", 200, Duration::from_millis(3));
            shared::telemetry::due_work_run("crm_sync", "synced", Duration::from_secs(1));
        }
        done.send(()).unwrap();
    });
    assert!(
        finished.recv_timeout(Duration::from_secs(30)).is_ok(),
        "recording blocked"
    );
    let mut out = Vec::new();
    let written = shared::telemetry::flush_to(&mut out, None, None).unwrap();
    assert_eq!(written, out.len());
    let mut latencies = 0;
    let mut requests = 0;
    for line in String::from_utf8(out).unwrap().lines() {
        let document: serde_json::Value = serde_json::from_str(line).unwrap();
        latencies += document["RequestLatency"].as_array().map_or(0, Vec::len);
        requests += document["Requests"].as_u64().unwrap_or(0);
    }
    assert_eq!((latencies, requests), (5_000, 5_000));
}
