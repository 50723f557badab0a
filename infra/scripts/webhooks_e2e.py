"""End-to-end check of signed webhooks (docs/behavior.md section 13) with a receiver no one here
wrote: every delivery is verified by the `standardwebhooks` package from PyPI (the reference
verifier of the Standard Webhooks specification), not by the project's own code.

Starts the local server (embedded store, its own seed, WEBHOOK_RETRY_DELAYS=1,1,1) and a receiver
on loopback, then checks: event types and payloads (the history entry, account_id, notify flags),
retries after a 500 with the same webhook-id, a longer Retry-After honoured, a 410 disabling the
subscription, nothing delivered to a disabled subscription, the delivery log, and a manual retry.

    python3 infra/scripts/webhooks_e2e.py target/debug/local-server

Exits non-zero with a message on the first unexpected answer.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

ACCOUNT = "6a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c20"
ROUTER = "6a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c21"
KEEP_ROUTER = "6a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c22"
NOTIFIED = "ines.silva@tailspin.example"
QUIET = "kai.berg@tailspin.example"
CONTACTS = [f"01936b2a-7c00-7a00-8000-0000000e000{n}" for n in range(1, 4)]
CLIENT = ("tailspin-integration", "tailspin-local-secret")
SCOPES = "service-api/read service-api/create service-api/update service-api/delete"

SEED = {
    "accounts": [
        {
            "id": ACCOUNT,
            "name": "Tailspin Toys",
            "active": True,
            "clients": [
                {"client_id": CLIENT[0], "client_secret": CLIENT[1], "scopes": SCOPES.split()}
            ],
            "users": [
                {
                    "id": "6a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c30",
                    "email": NOTIFIED,
                    "can_receive_notifications": True,
                    "notification_preferences": ["assignment"],
                },
                {
                    "id": "6a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c31",
                    "email": QUIET,
                    "can_receive_notifications": False,
                    "notification_preferences": ["assignment"],
                },
            ],
            "routers": [
                {
                    "id": ROUTER,
                    "name": "Every lead",
                    "object_type": "contacts",
                    "is_published": True,
                    "settings": {
                        "owner_field": "contact_owner",
                        "distribution_model": "round robin",
                        "overwrite": True,
                    },
                    "users": [{"email": NOTIFIED}, {"email": QUIET}],
                    "teams": [],
                },
                {
                    "id": KEEP_ROUTER,
                    "name": "Keeps owners",
                    "object_type": "contacts",
                    "is_published": True,
                    "settings": {
                        "owner_field": "contact_owner",
                        "distribution_model": "round robin",
                        "overwrite": False,
                    },
                    "users": [{"email": NOTIFIED}],
                    "teams": [],
                },
            ],
            "records": {
                "contacts": [
                    {"id": c, "fields": {"email": f"lead{i}@prospect.example"}}
                    for i, c in enumerate(CONTACTS)
                ]
            },
        }
    ]
}


def fail(message):
    print(f"webhooks e2e: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


class Receiver:
    """Loopback HTTP receiver: per path, a script of answers (then 204) and every request."""

    def __init__(self):
        self.lock = threading.Lock()
        self.script = {}
        self.requests = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length).decode()
                with receiver.lock:
                    receiver.requests.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body,
                            "at": time.monotonic(),
                        }
                    )
                    answers = receiver.script.get(self.path, [])
                    status, extra = answers.pop(0) if answers else (204, {})
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def at(self, path):
        with self.lock:
            return [r for r in self.requests if r["path"] == path]

    def wait(self, path, n, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.at(path)
            if len(got) >= n:
                return got
            time.sleep(0.05)
        fail(f"{path}: expected {n} deliveries, got {len(self.at(path))}")


class Api:
    def __init__(self, base):
        self.base = base
        self.token = None

    def call(self, method, path, body=None, form=None):
        headers = {}
        data = None
        if form is not None:
            data = form.encode()
            headers["content-type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                text = answer.read().decode()
                return answer.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            text = error.read().decode()
            return error.code, json.loads(text) if text else None

    def expect(self, status, method, path, body=None):
        got, answer = self.call(method, path, body)
        check(got == status, f"{method} {path}: {got} {answer}, want {status}")
        return answer


def verified(request, secret):
    """The payload, verified by the standardwebhooks library; fails the run otherwise."""
    try:
        return Webhook(secret).verify(request["body"], request["headers"])
    except WebhookVerificationError as error:
        fail(f"{request['path']}: the standardwebhooks verifier refused a delivery: {error}")


def start_server(binary, seed_path):
    env = dict(os.environ, WEBHOOK_RETRY_DELAYS="1,1,1", SWEEP_INTERVAL_SECONDS="1")
    env.setdefault("RUST_LOG", "warn")
    process = subprocess.Popen(
        [binary, "--seed", seed_path, "--addr", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    for line in process.stdout:
        match = re.match(r"account routing API listening on (\S+)", line)
        if match:
            threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
            return process, match.group(1)
    fail("the local server did not start")


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/debug/local-server"
    receiver = Receiver()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as seed:
        json.dump(SEED, seed)
    process, base = start_server(binary, seed.name)
    try:
        run(Api(base), receiver)
    finally:
        process.terminate()
        process.wait(timeout=10)
        os.unlink(seed.name)
    print("webhooks e2e: every delivery verified by standardwebhooks; all checks passed")


def subscribe(api, receiver, path, events):
    answer = api.expect(201, "POST", "/webhooks", {"url": receiver.base + path, "events": events})
    check(answer["secret"].startswith("whsec_"), f"secret shape: {answer}")
    return answer


def run(api, receiver):
    status, token = api.call(
        "POST",
        "/oauth2/token",
        form=f"grant_type=client_credentials&client_id={CLIENT[0]}&client_secret={CLIENT[1]}"
        f"&scope={SCOPES.replace(' ', '+')}",
    )
    check(status == 200, f"token: {status} {token}")
    api.token = token["access_token"]

    a = subscribe(api, receiver, "/a", ["assignment.created", "dispatch.unassigned"])
    b = subscribe(api, receiver, "/b", ["assignment.created"])
    c = subscribe(api, receiver, "/c", ["assignment.created"])
    receiver.script["/b"] = [(500, {}), (503, {"Retry-After": "3"})]
    receiver.script["/c"] = [(410, {})]

    # 1. An assignment: one event per subscription.
    first = api.expect(200, "POST", "/dispatch/router", {"router_id": ROUTER, "object_id": CONTACTS[0]})
    check(first.get("success") is True, f"dispatch: {first}")
    (delivery,) = receiver.wait("/a", 1)
    event = verified(delivery, a["secret"])
    check(event["type"] == "assignment.created", f"type: {event}")
    check(event["timestamp"].endswith("Z"), f"timestamp: {event}")
    data = event["data"]
    check(data["account_id"] == ACCOUNT, f"account_id: {data}")
    check(data["router_id"] == ROUTER and data["object_id"] == CONTACTS[0], f"ids: {data}")
    check(data["user"] == first["user"] and data["success"] is True, f"entry: {data}")
    check(data["source"] == "api" and data["reason"] == "rotation", f"entry: {data}")
    check(
        data["notify"] == {"user": first["user"] == NOTIFIED, "previous_owner": False},
        f"notify for {first['user']}: {data['notify']}",
    )
    check(delivery["headers"]["content-type"] == "application/json", "content type")
    check(delivery["headers"]["webhook-id"].startswith("msg_"), "webhook-id shape")
    try:
        Webhook("whsec_" + "A" * 43 + "=").verify(delivery["body"], delivery["headers"])
        fail("a delivery verified with another secret")
    except WebhookVerificationError:
        pass

    # 2. Retries after a 500, then a 503 whose Retry-After (3 s) is longer than the delay (1 s);
    #    the same webhook-id on every attempt, each verified.
    attempts = receiver.wait("/b", 3)
    ids = {r["headers"]["webhook-id"] for r in attempts}
    check(len(ids) == 1, f"one webhook-id across attempts: {ids}")
    for r in attempts:
        check(verified(r, b["secret"])["type"] == "assignment.created", "b's type")
    check(attempts[1]["at"] - attempts[0]["at"] >= 0.8, "the first retry waits its delay")
    gap = attempts[2]["at"] - attempts[1]["at"]
    check(gap >= 2.8, f"Retry-After: 3 honoured, the third attempt came after {gap:.2f} s")
    log = api.expect(200, "GET", f"/webhooks/{b['id']}/deliveries")["data"]
    deadline = time.monotonic() + 10
    while log[0]["status"] != "delivered" and time.monotonic() < deadline:
        time.sleep(0.1)
        log = api.expect(200, "GET", f"/webhooks/{b['id']}/deliveries")["data"]
    check(log[0]["status"] == "delivered" and log[0]["attempts"] == 3, f"b's log: {log}")
    check(log[0]["id"] == attempts[0]["headers"]["webhook-id"], "the log's id is the webhook-id")

    # 3. A 410 disables the subscription at once.
    receiver.wait("/c", 1)
    verified(receiver.at("/c")[0], c["secret"])
    deadline = time.monotonic() + 10
    while True:
        state = api.expect(200, "GET", f"/webhooks/{c['id']}")
        if not state["enabled"] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    check(state["enabled"] is False and state["disabled_reason"] == "gone", f"after 410: {state}")
    c_log = api.expect(200, "GET", f"/webhooks/{c['id']}/deliveries")["data"]
    check(c_log[0]["status"] == "failed" and c_log[0]["last_status_code"] == 410, f"c's log: {c_log}")

    # 4. A dispatch that keeps the owner: dispatch.unassigned, to the subscription that wants it.
    kept = api.expect(200, "POST", "/dispatch/router", {"router_id": KEEP_ROUTER, "object_id": CONTACTS[0]})
    check(kept == {"message": "The router can not overwrite"}, f"kept: {kept}")
    unassigned = verified(receiver.wait("/a", 2)[1], a["secret"])
    check(unassigned["type"] == "dispatch.unassigned", f"type: {unassigned}")
    check("notify" not in unassigned["data"], f"no notify without an assignment: {unassigned}")

    # 5. Another assignment: nothing for the disabled subscription.
    api.expect(200, "POST", "/dispatch/router", {"router_id": ROUTER, "object_id": CONTACTS[1]})
    receiver.wait("/a", 3)
    receiver.wait("/b", 4)
    time.sleep(1.5)
    check(len(receiver.at("/c")) == 1, "a disabled subscription gets nothing new")

    # 6. A manual retry: one more attempt now, same webhook-id.
    a_log = api.expect(200, "GET", f"/webhooks/{a['id']}/deliveries")["data"]
    oldest = a_log[-1]
    answer = api.expect(202, "POST", f"/webhooks/{a['id']}/deliveries/{oldest['id']}/retry")
    check(answer["id"] == oldest["id"], f"retry answer: {answer}")
    again = receiver.wait("/a", 4)[3]
    check(again["headers"]["webhook-id"] == oldest["id"], "the retry keeps the webhook-id")
    check(verified(again, a["secret"])["type"] == oldest["event_type"], "the retry's type")

    # Every request the receiver got verifies.
    for path, subscription in (("/a", a), ("/b", b), ("/c", c)):
        for request in receiver.at(path):
            verified(request, subscription["secret"])


if __name__ == "__main__":
    main()
