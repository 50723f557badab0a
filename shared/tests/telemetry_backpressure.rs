//! The EMF collector keeps at most 100 values per histogram between flushes and blocks the
//! recording thread beyond that. A long-running process (the local server flushes once a minute)
//! records thousands of latencies in between: recording must never block (a test binary of its
//! own: the recorder is process-wide). Seen failing before the fix: schemathesis' requests hung
//! the local server after 100 requests on one route.

use std::sync::mpsc;
use std::time::Duration;

#[test]
fn recording_thousands_of_values_between_flushes_never_blocks() {
    shared::telemetry::install("test").expect("installs");
    shared::telemetry::auto_flush_to_stderr();
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
}
